"""Caliper's native ``.cali`` format (read with the ``caliper-reader`` package).

Format facts: a ``.cali`` file is UTF-8 text, one record per line, each a
comma-separated list of ``key=value[=value...]`` entries starting with
``__rec=<kind>`` (``\\`` escapes ``,``, ``=``, ``\\`` and ``n``). ``node``
records (``id``, ``attr``, ``data``, ``parent``) build Caliper's context
tree, in which attributes are themselves nodes; ``ctx`` records are the
snapshots (``ref``: context nodes, ``attr``/``data``: immediate values, such
as ``sum#time.duration`` or ``mpi.rank``); one ``globals`` record holds the
run metadata (``cluster``, ``jobsize``, ``launchdate`` and the Adiak values).
``caliper-reader`` expands a snapshot into a dict whose ``path`` is the list
of its nested annotations (``function``, ``loop``, ``annotation``,
``mpi.function``, ...).

Choices (as Hatchet's ``from_caliperreader`` where it has one):

- records without a ``path`` (totals outside any region) are left out, and so
  are those of a ``spot.channel`` other than ``regionprofile`` (time series);
- a CUDA activity record (``cupti.activity.kind``) gets a child of its host
  call path: the kernel name (kind ``kernel``) or ``memcpy`` (kind
  ``memcpy``);
- each node's kind comes from the nested attribute that made it:
  ``function`` and ``cupti.runtimeAPI`` -> ``function``, ``loop`` ->
  ``loop``, ``mpi.function`` -> ``comm``, others (``annotation``) ->
  ``region``;
- metric names, aggregation rules, units, ``mpi.rank`` (several ranks give
  an Ensemble), node attributes and run metadata follow the json-split
  reader (:func:`cctviz.readers.caliper_json.metric_specs` and
  ``build_profile``), so the same run exported both ways reads the same:

  - **rules** from Caliper's operators: ``sum#``/``count`` add up,
    ``max#`` -> ``"max"``, ``min#`` -> ``"min"``, ``avg#`` and ``any#``
    (RAJAPerf's per-kernel constants ``BlockSize``, ``Reps``,
    ``ProblemSize``, ``Bytes/Rep``, ``Flops/Rep``...) -> ``"none"``.
    What Caliper aggregated as inclusive (the spot controller's
    ``Total time``, ``Max/Min/Avg time/rank``: ``sum/max/min/avg#inclusive#
    sum#time.duration``) goes to the model as inclusive values:
    ``Total time (inc)`` and ``Max time/rank (inc)`` are the recorded
    values (``Total time`` the own part: minus the children's;
    ``Max time/rank`` the recorded value, which no child exceeds), while
    ``Min time/rank`` and ``Avg time/rank`` stay per node as recorded
    (``"none"``, no ``(inc)`` column: a minimum or an average of inclusive
    values is no minimum or average over a subtree). Hatchet and Thicket
    call all of them exclusive. ``meta["aggregation_notes"]`` says why;
  - **units** as the file states them (``attribute.unit``, ``time.unit``);
    where it states none, Caliper's timer convention (``time.duration`` in
    whole microseconds with ``CALI_TIMER_UNIT=usec``, in seconds with
    ``sec``: the values tell which; ``*.ns`` in nanoseconds) or RAJAPerf's
    ``Bytes/Rep`` in bytes, recorded in ``meta["units_assumed"]``; else no
    unit (views say "unit unknown");
  - a value attribute of a text type is a label (a node column); a
    label that differs between records of one node keeps the first, with a
    warning; values of a repeated label are joined with ``/``.
- A file Caliper wrote ends with a complete line and holds a ``globals``
  record (written last). A file that does not end with a newline or lacks
  the ``globals`` record is taken for a truncated one and refused: a prefix
  of a ``.cali`` file is never read as if it were the whole profile.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import ProfileError
from ..model.ensemble import Ensemble
from ..model.tree import Tree
from . import register
from ._caliper import CaliColumn, build_profile
from ._json import file_bytes

_FIRST = re.compile(rb"__rec=(node|ctx|globals),[A-Za-z_.]+=")
KIND_OF_ATTRIBUTE = {
    "function": "function",
    "cupti.runtimeAPI": "function",
    "loop": "loop",
    "mpi.function": "comm",
}
_TEXT_TYPES = ("string", "usr")  # Caliper data types that hold text or bytes, not numbers
# attributes turned into the call path (or dropped as filters), not node columns
_CONSUMED = {"path", "spot.channel", "cupti.activity.kind", "cupti.kernel.name"}
INSTALL = (
    "reading .cali files needs caliper-reader: pip install caliper-reader (or cctviz[caliper])"
)


def _sniff(path: Path, head: bytes) -> bool:
    """A ``.cali`` file: its first line is a ``__rec=node|ctx|globals,`` record."""
    return bool(_FIRST.match(head))


@register("cali", _sniff, "Caliper native .cali (__rec=node/ctx/globals records)")
def read_cali(path: Path) -> Tree | Ensemble:
    """Read a Caliper ``.cali`` file; several ``mpi.rank`` values give an Ensemble.

    The globals (run metadata) are scalar entries of ``meta``, so a folder of
    runs read with :func:`cctviz.read` has them as columns of ``ens.profiles``.

    >>> import cctviz
    >>> t = cctviz.read("../shared/data/hatchet/caliper-lulesh-cali/lulesh-annotation-profile.cali")
    >>> len(t), t.names[0], t.meta["cali.caliper.version"]
    (19, 'main', '2.2.0-dev')
    >>> float(t.metrics["time (inc)"].iloc[0]), int(t.metrics["count"].iloc[0])
    (0.492491, 2)
    >>> t.aggregation["max#time.duration"], t.aggregation["avg#time.duration"], t.units["time"]
    ('max', 'none', 's')
    """
    try:
        from caliperreader import CaliperStreamReader
    except ImportError:
        raise ProfileError(path, INSTALL) from None
    lines = _lines(path)
    reader = CaliperStreamReader()
    records: list[tuple[int, dict[str, Any]]] = []  # (line, snapshot)
    line = 0

    def numbered() -> Iterator[str]:
        nonlocal line
        for line, text in enumerate(lines, 1):  # noqa: B007 - read by the handlers
            yield text

    try:
        reader.read(numbered(), lambda rec: records.append((line, rec)))
    except Exception as e:  # noqa: BLE001 - caliper-reader raises anything on bad input
        raise ProfileError(
            path, f"not a valid Caliper record ({_explain(e)})", where=f"line {line}"
        ) from None
    if not any(ln.startswith("__rec=globals") for ln in lines):
        raise ProfileError(
            path,
            "no __rec=globals record: a file Caliper wrote ends with one (truncated file?)",
            where=f"line {len(lines)}",
        )
    return _profile(path, reader, records)


def _explain(e: Exception) -> str:
    """caliper-reader's exception as a reason."""
    if isinstance(e, KeyError) and e.args:
        key = e.args[0]
        if isinstance(key, int):
            return f"refers to id {key}, which no earlier node record defines"
        return f"no {key!r} entry"
    return getattr(e, "message", None) or f"{type(e).__name__}: {e}"


def _lines(path: Path) -> list[str]:
    """The lines of the file (gunzipped), refusing a file cut inside a line."""
    raw = file_bytes(path)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw.count(b"\n", 0, e.start) + 1
        raise ProfileError(path, f"not UTF-8 text ({e.reason})", where=f"line {line}") from None
    if not text.endswith("\n"):
        raise ProfileError(
            path,
            "the last line is incomplete (no newline at the end): truncated file?",
            where=f"line {text.count(chr(10)) + 1}",
        )
    return text.splitlines()


def _kinds_of(path_names: list[str], rec: dict[str, Any], nested: list[str]) -> list[str]:
    """Kind of each element of a record's path: the nested attribute whose value
    list it continues (the path interleaves those lists in order)."""
    pos = {a: 0 for a in nested}
    vals = {a: (rec[a] if isinstance(rec[a], list) else [rec[a]]) for a in nested}
    out = []
    for name in path_names:
        for a in nested:
            if pos[a] < len(vals[a]) and vals[a][pos[a]] == name:
                pos[a] += 1
                out.append(KIND_OF_ATTRIBUTE.get(a, "region"))
                break
        else:
            out.append("region")
    return out


def _profile(path: Path, reader: Any, records: list[tuple[int, dict[str, Any]]]) -> Tree | Ensemble:
    """Call-path nodes and one row per record, then the shared Caliper builder."""
    attr_info: dict[str, Any] = {}

    def attribute(name: str) -> Any:
        if name not in attr_info:
            try:
                attr_info[name] = reader.attribute(name)
            except KeyError:
                raise ProfileError(path, f"record attribute {name!r} is not defined") from None
        return attr_info[name]

    ids: dict[tuple[str, ...], int] = {}
    parent: list[int] = []
    names: list[str] = []
    kinds: list[str] = []
    rnode: list[int] = []
    rows: list[dict[str, Any]] = []
    row_line: list[int] = []

    def node_of(cp: tuple[str, ...], kind_list: list[str]) -> int:
        """Node of a call path, creating it and its missing ancestors."""
        i = ids.get(cp)
        if i is not None:
            return i
        d = len(cp) - 1
        while d > 0 and cp[:d] not in ids:
            d -= 1
        i = ids[cp[:d]] if d > 0 else -1
        for j in range(d, len(cp)):
            parent.append(i)
            i = ids[cp[: j + 1]] = len(names)
            names.append(cp[j])
            kinds.append(kind_list[j])
        return i

    for at, rec in records:
        if "path" not in rec or rec.get("spot.channel", "regionprofile") != "regionprofile":
            continue
        p = rec["path"]
        cp = [str(x) for x in (p if isinstance(p, list) else [p])]
        if not cp:
            continue
        nested = [a for a in rec if a != "path" and attribute(a).is_nested()]
        kl = _kinds_of(cp, rec, nested)
        act = rec.get("cupti.activity.kind")
        if act == "kernel" and "cupti.kernel.name" in rec:
            cp.append(str(rec["cupti.kernel.name"]))
            kl.append("kernel")
        elif act == "memcpy":
            cp.append("memcpy")
            kl.append("memcpy")
        rnode.append(node_of(tuple(cp), kl))
        rows.append(rec)
        row_line.append(at)

    if not rows:
        raise ProfileError(path, "no record with a call path ('path' attribute): nothing to show")
    df = pd.DataFrame(rows)
    columns: list[CaliColumn] = []
    for c in df.columns:
        if c in _CONSUMED:
            continue
        a = attribute(c)
        if a.is_global() or a.is_nested():
            continue
        # a value attribute of a text type (Caliper's ASVALUE strings) is a label too
        is_value = a.is_value() and a.attribute_type() not in _TEXT_TYPES
        several = np.flatnonzero(df[c].map(lambda v: isinstance(v, list)).to_numpy())
        if is_value and several.size:
            k = int(several[0])
            raise ProfileError(path, f"{c} holds several values", where=f"line {row_line[k]}")
        if not is_value:  # labels: the values of a repeated attribute, outermost first
            df[c] = ["/".join(map(str, v)) if isinstance(v, list) else v for v in df[c]]
        else:
            num = pd.to_numeric(df[c], errors="coerce")
            bad = np.flatnonzero((num.isna() & df[c].notna()).to_numpy())
            if bad.size:
                k = int(bad[0])
                raise ProfileError(
                    path, f"{c} holds {df[c].iloc[k]!r}, not a number", where=f"line {row_line[k]}"
                )
            df[c] = num  # build_profile needs no second conversion
        columns.append(
            CaliColumn(
                c,
                is_value,
                a.get("attribute.alias"),
                a.get("attribute.unit") or a.get("time.unit"),
            )
        )
    return build_profile(
        path,
        df,
        columns,
        np.asarray(parent, dtype=np.int64),
        np.asarray(names, dtype=object),
        np.asarray(kinds, dtype=object),
        np.asarray(rnode, dtype=np.int64),
        dict(reader.globals),
        row_where="record {k} with a path",  # not reached: values checked above
    )
