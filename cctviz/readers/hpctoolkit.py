"""HPCToolkit databases in the hpcprof (``experiment.xml`` + ``*.metric-db``) form.

The database is a folder; :func:`read_hpctoolkit` takes the folder or its
``experiment.xml`` and returns an :class:`~cctviz.Ensemble` with one profile
per metric-db file, i.e. per (MPI rank, thread).

Format facts (hpcprof 2017-2021, the form Hatchet's ``from_hpctoolkit`` reads):

- ``experiment.xml`` holds a ``LoadModuleTable``, ``FileTable`` and
  ``ProcedureTable`` (id -> name), a ``MetricDBTable`` (one ``MetricDB`` per
  metric column of the metric-db files: name, ``t`` inclusive/exclusive,
  ``db-id``, ``db-num-metrics``, ``db-header-sz``) and the calling-context tree
  in ``SecCallPathProfileData``: nested ``PF`` (procedure frame), ``Pr``
  (inlined/alien procedure), ``L`` (loop), ``S`` (statement) and ``C`` (call
  site) elements, each with a node id ``i``. ``M`` children (``n`` a
  ``<Metric>`` of the ``MetricTable``, ``v`` its value) carry hpcprof's summary
  statistics over all threads (``CPUTIME (usec):Sum (I)``...), printed with 6
  significant digits.
- ``<name>-RANK-THREAD-HOST-PID-GEN.metric-db``: a 24-byte tag
  (``HPCPROF-metricdb__`` + 5-char version + ``b`` for big-endian), then
  ``num_nodes`` and ``num_metrics`` as big-endian int32, then
  ``num_nodes x num_metrics`` big-endian float64 values, row ``i - 1`` for the
  XML node with id ``i``.

Where the values come from, first found first:

- the ``*.metric-db`` files (``db-glob`` of the ``MetricDBTable``): an Ensemble;
- hpcviewer's merged file ``experiment-N.mdb`` (or ``experiment.mdb``) that
  replaced them once the database was opened in hpcviewer (2013-2021; layout in
  :mod:`cctviz.readers._hpcmdb`): the same Ensemble, ``meta["merged_file"]``;
- the summary values inline (hpcprof run without metric-db files, e.g. hpcprof
  2018-2021's ``--metric-db=no``; or the files lost, with a warning): a Tree of the
  sums over all threads, ``meta["values"] == "summary"``. ``:Sum`` metrics take
  the bare name (``CPUTIME (usec):Sum`` -> ``time``), other statistics keep theirs
  and their rule (as below); an inclusive column gives the exclusive one as for
  metric-db files. ``meta["summary"]`` holds the experiment's own total (the
  ``<M>`` before the first scope).

Versions: ``<HPCToolkitExperiment version="2.x">`` is read; ``4.0`` (the
"sparse" database of hpcprof 2020-2022, values in ``profile.db``/``cct.db``) and
any other version are refused with a message naming the version found and what
cctviz reads (the 2022+ ``meta.db`` form is :mod:`cctviz.readers.hpctoolkit_db`).

Choices (following Hatchet where it is well defined):

- Call sites (``C``) and unnamed ``Pr`` are not nodes; their children hang
  from the enclosing node. A procedure reached from a call site on line L is
  named ``"L:proc"``; a loop ``"Loop@file.c:L"``; a statement ``"file.c:L"``,
  where ``file.c`` is the file of the enclosing procedure or loop (Hatchet uses
  the file of the last procedure it parsed, which can be another one).
- Node kinds: ``PF``/``Pr`` -> ``function``, ``L`` -> ``loop``, ``S`` ->
  ``statement``. Columns ``file``, ``line``, ``module`` come from the tables,
  ``nid`` is the XML node id (``tag`` the XML element).
- ``CPUTIME (usec)`` / ``CPUTIME (sec)`` become ``time`` (as Hatchet names
  them); other metrics keep the XML name without the `` (I)``/`` (E)``
  suffix (a second column of an already taken name keeps its XML name, or
  gets ``" #2"``, and a warning says so). Units are the ones the names state (hpcprof writes ``(usec)``,
  ``(sec)``, ``(B)``...) in ``meta["units"]``; a name without one (a hardware
  counter such as ``PAPI_TOT_CYC``) has none.
- Aggregation rules (``meta["aggregation"]``): a metric-db column holds one
  thread's sampled values, which HPCToolkit attributes additively (the
  ``(I)`` value of a scope is the sum of its ``(E)`` values below it), so
  every metric is a ``"sum"``. A name ending in a summary statistic over
  threads (``:Max``, ``:Min``, ``:StdDev``, ``:CfVar``; hpcprof-mpi writes
  these into the XML, not usually into metric-db files) is taken as
  inclusive values per node: ``:Max`` is a ``"max"`` (a subtree's maximum
  is its root's), the others ``"none"`` (``meta["aggregation_notes"]``
  says why); ``:Sum`` and ``:Mean`` stay sums.
- Exclusive values are derived from the file's *inclusive* column
  (inclusive minus the inclusive of the child nodes), so ``time (inc)`` equals
  the file's ``(I)`` values on every node. hpcprof's own ``(E)`` column counts
  a procedure's or loop's statements in its exclusive value (Hatchet subtracts
  only the statement children, which leaves nested loops counted twice);
  a metric with only an exclusive column gets Hatchet's treatment.
- Rows that are zero in every metric are left out of the long table.
- Safety: the XML is parsed with ``ElementTree.iterparse`` (expat, which never
  fetches external entities or DTDs); a file that declares any entity
  (``<!ENTITY``, the "billion laughs" vector) is refused before expat sees
  the declaration, so no entity is ever expanded.
"""

from __future__ import annotations

import os
import re
import warnings
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import ProfileError
from ..model.ensemble import Ensemble
from ..model.tree import Tree
from . import progress_bar, register
from ._hpcmdb import SPARSE_MAGIC, find_merged, merged_name, read_merged, refuse_version
from ._hpctoolkit import metric_name

XML = "experiment.xml"
TAG = b"HPCPROF-metricdb__"
TAG_SIZE = 24
SCOPES = ("PF", "Pr", "L", "S", "C")
KIND = {"PF": "function", "Pr": "function", "L": "loop", "S": "statement"}
_DB_NAME = re.compile(r"-(\d+)-(\d+)-([0-9A-Za-z]+)-(\d+)-(\d+)\.metric-db$")


# units hpcprof writes into metric names ("CPUTIME (usec)", "GXCOPY:H2D (B)")
# summary statistics hpcprof can append to a metric name ("CPUTIME (usec):Max"):
# the rule their per-node values follow over a subtree
def _folder(path: Path) -> Path:
    return path.parent if path.is_file() else path


def _sniff(path: Path, h: bytes) -> bool:
    if path.is_dir():
        xml = path / XML
        if not xml.is_file():
            return False
        with open(xml, "rb") as f:
            h = f.read(8192)
    elif re.fullmatch(r"experiment(-\d+)?\.mdb", path.name):  # hpcviewer's merged file
        return (path.parent / XML).is_file()
    elif path.name in ("profile.db", "cct.db"):  # 2020-2022 sparse form: refused by name
        return h.startswith(SPARSE_MAGIC)
    elif path.name != XML:
        return False
    return b"<!DOCTYPE HPCToolkitExperiment" in h[:8192] or b"<HPCToolkitExperiment" in h


class _NoEntities:
    """File wrapper refusing any entity declaration before the parser sees it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.f = open(path, "rb")  # noqa: SIM115 - closed by read_hpctoolkit
        self.tail = b""
        self.offset = 0

    def read(self, n: int = -1) -> bytes:
        chunk = self.f.read(n if n and n > 0 else 1 << 20)
        window = self.tail + chunk
        k = window.find(b"<!ENTITY")
        if k >= 0:
            raise ProfileError(
                self.path,
                "the XML declares an entity; HPCToolkit files never do, and cctviz "
                "does not expand entities",
                where=f"byte {self.offset - len(self.tail) + k}",
            )
        self.offset += len(chunk)
        self.tail = window[-8:]
        return chunk

    def close(self) -> None:
        self.f.close()


def _table(elem: ET.Element, child: str) -> dict[str, str]:
    return {e.get("i", ""): e.get("n", "") for e in elem.iter(child)}


def _int_attr(xml: Path, el: ET.Element, attr: str, default: int | None = None) -> int:
    v = el.get(attr)
    if v is None:
        if default is not None:
            return default
        raise ProfileError(xml, f"missing attribute {attr!r}", where=_where(el))
    m = re.match(r"^\s*(-?\d+)", v)  # line ranges "beg-end" keep the first line
    if not m:
        raise ProfileError(xml, f"attribute {attr}={v!r} is not an integer", where=_where(el))
    return int(m.group(1))


def _where(el: ET.Element) -> str:
    i = el.get("i")
    return f"<{el.tag} i={i!r}>" if i is not None else f"<{el.tag}>"


def _parse_xml(xml: Path) -> dict[str, Any]:
    """The tables and the scope tree of ``experiment.xml`` (one pass, iterparse)."""
    src = _NoEntities(xml)
    tables: dict[str, dict[str, str]] = {}
    metricdbs: list[dict[str, str]] = []
    header: dict[str, str] = {}
    version = None
    # scope records
    nid: list[int] = []
    tag: list[str] = []
    par: list[int] = []
    name_ref: list[str] = []
    file_ref: list[str | None] = []
    lm_ref: list[str | None] = []
    line: list[int] = []
    stack: list[int] = []
    # inline summary values: (scope record or -1 for the experiment, metric id, value)
    m_scope: list[int] = []
    m_id: list[str] = []
    m_val: list[str] = []
    metrics: list[dict[str, str]] = []
    in_data = False
    try:
        for ev, el in ET.iterparse(src, events=("start", "end")):
            t = el.tag
            if ev == "start":
                if t in SCOPES and in_data:
                    k = len(nid)
                    nid.append(_int_attr(xml, el, "i"))
                    tag.append(t)
                    par.append(stack[-1] if stack else -1)
                    name_ref.append(el.get("n", ""))
                    file_ref.append(el.get("f"))
                    lm_ref.append(el.get("lm"))
                    line.append(_int_attr(xml, el, "l", 0))
                    if t in ("PF", "Pr") and el.get("n") is None:
                        raise ProfileError(xml, "a procedure without a name ('n')", _where(el))
                    stack.append(k)
                elif t == "SecCallPathProfileData":
                    in_data = True
                elif t == "HPCToolkitExperiment":
                    version = el.get("version", "")
                    refuse_version(xml, version)
                elif t == "Header":
                    header["program"] = el.get("n", "")
                continue
            # end events
            if t in SCOPES and in_data:
                stack.pop()
                el.clear()
            elif t == "M" and in_data:
                m_scope.append(stack[-1] if stack else -1)
                m_id.append(el.get("n", ""))
                m_val.append(el.get("v", ""))
                el.clear()
            elif t == "SecCallPathProfileData":
                in_data = False
            elif t in ("LoadModuleTable", "FileTable", "ProcedureTable"):
                tables[t] = _table(el, t[: -len("Table")])
                el.clear()
            elif t == "MetricTable":
                metrics = [dict(e.attrib) for e in el.iter("Metric")]
                el.clear()
            elif t == "MetricDBTable":
                metricdbs = [dict(e.attrib) for e in el.iter("MetricDB")]
                el.clear()
    except ET.ParseError as e:
        line_no, col = e.position
        msg = str(e).split(":")[0]
        raise ProfileError(
            xml, f"invalid XML: {msg}", where=f"line {line_no}, column {col}"
        ) from None
    finally:
        src.close()
    if version is None:
        raise ProfileError(xml, "not an HPCToolkit experiment (no <HPCToolkitExperiment>)")
    if "ProcedureTable" not in tables:
        raise ProfileError(xml, "missing <ProcedureTable>", where="SecHeader")
    if not nid:
        raise ProfileError(xml, "no calling-context tree (empty SecCallPathProfileData)")
    return {
        "version": version,
        "header": header,
        "tables": tables,
        "metricdbs": metricdbs,
        "metrics": metrics,
        "inline": (m_scope, m_id, m_val),
        "nid": np.asarray(nid, dtype=np.int64),
        "tag": np.asarray(tag, dtype=object),
        "parent": np.asarray(par, dtype=np.int64),
        "name_ref": name_ref,
        "file_ref": file_ref,
        "lm_ref": lm_ref,
        "line": np.asarray(line, dtype=np.int64),
    }


def _structure(x: dict[str, Any]) -> dict[str, Any]:
    """Kept nodes (no call sites, no unnamed Pr) with names, kinds and columns."""
    procs = x["tables"].get("ProcedureTable", {})
    files = x["tables"].get("FileTable", {})
    mods = x["tables"].get("LoadModuleTable", {})
    tag, parent, line = x["tag"], x["parent"], x["line"]
    n = tag.size
    proc_name = [procs.get(r, r) if tg in ("PF", "Pr") else "" for r, tg in zip(x["name_ref"], tag)]
    keep = np.array(
        [tg in KIND and not (tg == "Pr" and nm == "") for tg, nm in zip(tag, proc_name)], dtype=bool
    )
    names = np.empty(n, dtype=object)
    fcol = np.full(n, None, dtype=object)
    mcol = np.full(n, None, dtype=object)
    kept_parent = np.full(n, -1, dtype=np.int64)
    scope_file: list[str | None] = [None] * n  # file of the nearest procedure/loop
    for k in range(n):  # document order: parents come before children
        p = int(parent[k])
        tg = tag[k]
        fref = x["file_ref"][k]
        own_file = files.get(fref, fref) if fref is not None else None
        if tg in ("PF", "Pr", "L"):
            scope_file[k] = (
                own_file if own_file is not None else (scope_file[p] if p >= 0 else None)
            )
        else:
            scope_file[k] = scope_file[p] if p >= 0 else None
        if p >= 0:
            kept_parent[k] = p if keep[p] else kept_parent[p]
        if not keep[k]:
            continue
        if tg in ("PF", "Pr"):
            nm = proc_name[k]
            if p >= 0 and line[p] != 0:
                nm = f"{line[p]}:{nm}"
            names[k] = nm
            fcol[k] = own_file
            lref = x["lm_ref"][k]
            mcol[k] = mods.get(lref, lref) if lref is not None else None
        elif tg == "L":
            names[k] = f"Loop@{os.path.basename(own_file or '<unknown file>')}:{line[k]}"
            fcol[k] = own_file
        else:  # statement
            f = scope_file[k]
            names[k] = f"{os.path.basename(f or '<unknown file>')}:{line[k]}"
            fcol[k] = f
    idx = np.flatnonzero(keep)
    local = np.full(n, -1, dtype=np.int64)
    local[idx] = np.arange(idx.size)
    kp = kept_parent[idx]
    return {
        "idx": idx,
        "parent": np.where(kp >= 0, local[np.maximum(kp, 0)], -1),
        "names": names[idx],
        "kind": np.array([KIND[t] for t in tag[idx]], dtype=object),
        "columns": {
            "file": fcol[idx],
            "line": line[idx],
            "module": mcol[idx],
            "nid": x["nid"][idx],
            "tag": tag[idx],
        },
    }


def _check_profiles(prof: pd.DataFrame, where: Path, name: Any) -> np.ndarray:
    """The (rank, thread) order of the profiles, after checking that every rank
    0..R-1 has every thread once; ``name(k)`` names the k-th profile's source."""
    dup = prof.duplicated()
    if dup.any():
        k = int(np.flatnonzero(dup.to_numpy())[0])
        raise ProfileError(where, f"{name(k)}: a second metric-db for the same rank and thread")
    # MPI ranks are 0..R-1: a gap (or a rank without one of the threads) is a missing file
    ranks = np.arange(int(prof["rank"].max()) + 1)
    threads = np.unique(prof["thread"])
    if prof["rank"].min() < 0 or len(prof) != ranks.size * threads.size:
        have = set(map(tuple, prof.to_numpy().tolist()))
        miss = next(((r, t) for r in ranks for t in threads if (r, t) not in have), (-1, -1))
        raise ProfileError(
            where,
            f"missing metric-db file for rank {miss[0]} thread {miss[1]} "
            f"({len(prof)} files for {ranks.size} ranks x {threads.size} threads)",
        )
    return np.lexsort((prof["thread"].to_numpy(), prof["rank"].to_numpy()))


def _glob(dbs: list[dict[str, str]]) -> str:
    glob = dbs[0].get("db-glob", "*.metric-db") if dbs else "*.metric-db"
    if not glob or "/" in glob or "\\" in glob or ".." in glob:
        glob = "*.metric-db"  # files beside experiment.xml only
    return glob


def _db_files(folder: Path, glob: str) -> tuple[list[Path], pd.DataFrame]:
    """The metric-db files beside experiment.xml in (rank, thread) order (none: empty)."""
    files = sorted(f for f in folder.glob(glob) if f.is_file())
    if not files:
        return [], pd.DataFrame(columns=["rank", "thread"])
    rows = []
    for f in files:
        m = _DB_NAME.search(f.name)
        if not m:
            raise ProfileError(
                f, "a metric-db file name should end -RANK-THREAD-HOST-PID-N.metric-db"
            )
        rows.append((int(m.group(1)), int(m.group(2))))
    prof = pd.DataFrame(rows, columns=["rank", "thread"])
    order = _check_profiles(prof, folder, lambda k: files[k].name)
    return [files[k] for k in order], prof.iloc[order].reset_index(drop=True)


def _read_db(f: Path, header_size: int, n_metrics: int, n_nodes: int | None) -> np.ndarray:
    """One metric-db file as a (num_nodes, num_metrics) float64 array (a view of the bytes)."""
    try:
        raw = f.read_bytes()
    except OSError as e:
        raise ProfileError(f, f"cannot read the file: {e}") from None
    return _db_values(raw, f, header_size, n_metrics, n_nodes)


def _db_values(
    raw: Any, f: Path, header_size: int, n_metrics: int, n_nodes: int | None, base: int = 0
) -> np.ndarray:
    """The values of one metric-db file's bytes ``raw`` (a file, or a copy at byte
    ``base`` of hpcviewer's merged file ``f``), checked."""
    start = header_size + 8
    if len(raw) < start or bytes(raw[: len(TAG)]) != TAG:
        raise ProfileError(
            f, "not a metric-db file (expected the HPCPROF-metricdb__ tag)", f"byte {base}"
        )
    end = bytes(raw[TAG_SIZE - 1 : TAG_SIZE])
    if end != b"b":
        raise ProfileError(
            f, f"endianness {end!r} not supported (expected b'b')", where=f"byte {base + 23}"
        )
    nn, nm = (int(v) for v in np.frombuffer(raw, dtype=">i4", count=2, offset=header_size))
    if nm != n_metrics:
        raise ProfileError(
            f,
            f"{nm} metrics in the header, experiment.xml names {n_metrics}",
            where=f"byte {base + header_size + 4}",
        )
    if nn <= 0 or (n_nodes is not None and nn != n_nodes):
        raise ProfileError(
            f, f"{nn} nodes in the header, expected {n_nodes}", where=f"byte {base + header_size}"
        )
    want = start + 8 * nn * nm
    if len(raw) != want:
        raise ProfileError(
            f,
            f"{len(raw)} bytes, expected {want} ({nn} nodes x {nm} metrics of 8 bytes "
            f"after a {start}-byte header)",
            where=f"byte {base + min(len(raw), want)}",
        )
    vals = np.frombuffer(raw, dtype=">f8", offset=start).reshape(nn, nm)
    if not np.isfinite(vals).all():
        r, c = (int(v[0]) for v in np.nonzero(~np.isfinite(vals)))
        raise ProfileError(
            f,
            f"value {vals[r, c]} is not finite",
            where=f"byte {base + start + 8 * (r * nm + c)}",
        )
    return vals  # big-endian; converted where the caller copies the rows it keeps


def _merged_profiles(merged: Path, hs: int, nm: int) -> tuple[list[tuple[Any, int]], pd.DataFrame]:
    """The metric-db copies in hpcviewer's merged file, in (rank, thread) order."""
    raw, index, ranges = read_merged(merged)
    if not ranges:
        raise ProfileError(merged, "the merged metric-db file holds no thread's values")
    prof = pd.DataFrame(
        {"rank": index["rank"].astype(np.int64), "thread": index["thread"].astype(np.int64)}
    )
    order = _check_profiles(prof, merged, lambda k: f"merged file {k}")
    parts = [(raw[ranges[k][0] : ranges[k][1]], ranges[k][0]) for k in order]
    return parts, prof.iloc[order].reset_index(drop=True)


def _name_columns(
    xml: Path, entries: list[dict[str, str]], summary: bool = False
) -> tuple[dict[str, dict[str, int]], dict[str, str], dict[str, str]]:
    """Metric columns by name: ``{name: {"inclusive"|"exclusive"|"nil": entry}}``,
    with the aggregation rule and unit of each name. ``summary``: names of
    ``<Metric>`` entries, whose ``:Sum`` over threads is the metric itself."""
    units: dict[str, str] = {}
    rules: dict[str, str] = {}
    by_name: dict[str, dict[str, int]] = {}
    renamed: list[str] = []
    for j, d in enumerate(entries):
        full = d.get("n", "")
        raw = re.sub(r"\s*\((I|E|inc|exc)\)\s*$", "", full).strip()
        base, unit, rule = metric_name(
            raw[: -len(":Sum")] if summary and raw.endswith(":Sum") else raw
        )
        t = d.get("t", "nil")
        if t in by_name.get(base, {}):  # "time" taken, or the same name twice: keep both
            k = 2
            base = raw
            while t in by_name.get(base, {}):
                base, k = f"{raw} #{k}", k + 1
            renamed.append(f"{full!r} -> {base!r}")
        by_name.setdefault(base, {})[t] = j
        rules[base] = rule
        if unit:
            units[base] = unit
    if renamed:
        warnings.warn(
            f"{xml}: metric columns with a name already taken were renamed: " + ", ".join(renamed),
            stacklevel=4,
        )
    return by_name, rules, units


def _meta(x: dict[str, Any], units: dict[str, str], rules: dict[str, str]) -> dict[str, Any]:
    meta: dict[str, Any] = {"hpctoolkit_version": x["version"]}
    if x["header"].get("program"):
        meta["program"] = x["header"]["program"]
    if units:
        meta["units"] = units
    meta["aggregation"] = rules
    notes = {
        m: "a per-node summary statistic (min, standard deviation or coefficient of "
        "variation over threads) of inclusive values: it does not combine over a subtree"
        for m, r in rules.items()
        if r == "none"
    }
    if notes:
        meta["aggregation_notes"] = notes
    return meta


@register(
    "hpctoolkit",
    _sniff,
    "HPCToolkit database (experiment.xml + *.metric-db, merged experiment-N.mdb, "
    "or summary values inline)",
    folder=True,
)
def read_hpctoolkit(path: Path, *, progress: bool | None = None) -> Ensemble | Tree:
    """Read an HPCToolkit (hpcprof) database folder into an Ensemble (or a Tree).

    ``path`` is the database folder or its ``experiment.xml``. One profile per
    metric-db file (``ens.profiles`` columns ``rank``, ``thread``), read from the
    ``*.metric-db`` files or from hpcviewer's merged ``experiment-N.mdb``. A
    database without either (``hpcprof --metric-db=no``, or its files lost) gives
    a Tree of the summary values inline in ``experiment.xml`` (``:Sum`` over all
    threads; see the module docstring). A progress bar over the metric-db files
    appears when reading them takes more than a second (``progress=None``;
    ``True`` always, ``False`` never).

    Example:
        >>> import cctviz
        >>> ens = cctviz.read("../shared/data/hatchet/hpctoolkit-cpi-database")
        >>> len(ens.tree), ens.profiles["rank"].tolist(), ens.tree.units
        (34, [0, 1, 2, 3], {'time': 'us'})
        >>> ens.long_table.loc[(0, 0), "time (inc)"]  # <program root> on rank 0, in usec
        np.float64(999238.0)
    """
    path = Path(path)
    folder = _folder(path)
    xml = folder / XML
    if not xml.is_file():
        newer = " (meta.db is there: the 2022+ form, format='hpctoolkit-db')"
        raise ProfileError(
            folder,
            f"no {XML} in the database folder" + (newer if (folder / "meta.db").is_file() else ""),
        )
    x = _parse_xml(xml)
    s = _structure(x)
    nid = x["nid"]
    if nid.min() < 1 or np.unique(nid).size != nid.size:
        k = int(np.flatnonzero(nid < 1)[0]) if nid.min() < 1 else None
        what = f"node id {nid[k]} < 1" if k is not None else "node ids are not unique"
        raise ProfileError(xml, what, where="SecCallPathProfileData")
    dbs = x["metricdbs"]
    glob = _glob(dbs)
    files, prof = _db_files(folder, glob) if dbs else ([], None)
    merged = find_merged(folder, glob) if dbs and not files else None
    if files or merged is not None:
        return _read_threads(xml, x, s, files, prof, merged, progress)
    if dbs:
        if not x["inline"][0]:
            raise ProfileError(
                folder,
                f"no metric-db file ({glob}) beside {XML}, no merged {merged_name(glob)} "
                f"and no summary values (<M>) in {XML}",
            )
        warnings.warn(
            f"{folder}: {XML} lists per-thread metric-db files ({glob}) but none is "
            f"there: read the summary values inline in {XML} (one tree, summed over "
            "threads)",
            stacklevel=2,
        )
    return _read_inline(xml, x, s)


def _read_threads(
    xml: Path,
    x: dict[str, Any],
    s: dict[str, Any],
    files: list[Path],
    prof: pd.DataFrame | None,
    merged: Path | None,
    progress: bool | None,
) -> Ensemble:
    """The per-thread values (metric-db files, or hpcviewer's merged file) as an Ensemble."""
    dbs = x["metricdbs"]
    try:
        db_id = [int(d.get("db-id", d.get("i", ""))) for d in dbs]
        n_metrics = {int(d.get("db-num-metrics", len(dbs))) for d in dbs}
        header_size = {int(d.get("db-header-sz", TAG_SIZE)) for d in dbs}
    except ValueError:
        raise ProfileError(xml, "MetricDB attributes should be integers", "MetricDBTable") from None
    if len(n_metrics) != 1 or len(header_size) != 1:
        raise ProfileError(
            xml, "MetricDB entries disagree on db-num-metrics/db-header-sz", "MetricDBTable"
        )
    nm, hs = n_metrics.pop(), header_size.pop()
    if sorted(db_id) != list(range(nm)) or hs < TAG_SIZE:
        raise ProfileError(
            xml, f"MetricDB db-id values {sorted(db_id)} do not cover 0..{nm - 1}", "MetricDBTable"
        )
    by_pos, rules, units = _name_columns(xml, dbs)
    by_name = {b: {t: db_id[j] for t, j in cols.items()} for b, cols in by_pos.items()}
    meta = _meta(x, units, rules)
    structure, new_id = Tree.from_parents_with_ids(
        s["parent"], s["names"], None, kind=s["kind"], columns=s["columns"], meta=meta
    )
    nid = x["nid"]
    K = new_id.size
    rows_idx = np.empty(K, dtype=np.int64)  # metric-db row of each node, in tree order
    rows_idx[new_id] = nid[s["idx"]] - 1
    # --- the values of every thread
    if merged is not None:
        parts, prof = _merged_profiles(merged, hs, nm)
        meta["merged_file"] = merged.name
    else:
        parts = [(f, 0) for f in files]
    assert prof is not None
    it = progress_bar(parts, progress, desc="reading metric-db", unit="file")
    P = len(parts)
    n_nodes = None
    vals = np.empty((P, K, nm))  # (profile, node, metric)
    for p, (part, base) in enumerate(it):
        if merged is None:
            src, v = part, _read_db(part, hs, nm, n_nodes)
        else:
            src, v = merged, _db_values(part, merged, hs, nm, n_nodes, base)
        if n_nodes is None:
            n_nodes = v.shape[0]
            if nid.max() > n_nodes:
                raise ProfileError(
                    src,
                    f"{n_nodes} nodes in the header, but experiment.xml has node id {nid.max()}",
                    where=f"byte {base + hs}",
                )
        vals[p] = v[rows_idx]
    # --- exclusive metrics per node and profile
    parent = structure.parent
    stm = (parent >= 0) & (structure.nodes["kind"].to_numpy() == "statement")
    metrics: dict[str, np.ndarray] = {}
    for base_name, cols in by_name.items():
        rule = rules[base_name]
        if rule != "sum":  # a max (or a statistic) of inclusive values: kept as they are
            inc = vals[:, :, cols.get("inclusive", next(iter(cols.values())))]
            metrics[base_name] = structure.exclusive_from_inclusive(inc.T, rule).T
        elif "inclusive" in cols:
            inc = vals[:, :, cols["inclusive"]]
            metrics[base_name] = structure.exclusive_from_inclusive(inc.T).T
        else:  # Hatchet: the exclusive column minus the statement children's
            exc = vals[:, :, cols.get("exclusive", cols.get("nil", next(iter(cols.values()))))]
            sub = np.zeros((K, P))
            np.add.at(sub, parent[stm], exc.T[stm])
            metrics[base_name] = exc - sub.T
    names = list(metrics)
    stacked = np.stack([metrics[m] for m in names], axis=-1).reshape(P * K, len(names))
    nz = np.flatnonzero((stacked != 0).any(axis=1))
    rows = pd.DataFrame(
        {"node": np.tile(np.arange(K), P)[nz], "profile": np.repeat(np.arange(P), K)[nz]}
    )
    for j, m in enumerate(names):
        rows[m] = stacked[nz, j]
    return Ensemble(structure, rows, prof, meta)


def _floats(xml: Path, text: list[str], what: str) -> np.ndarray:
    vals = pd.to_numeric(pd.Series(text, dtype=object), errors="coerce").to_numpy(np.float64)
    bad = ~np.isfinite(vals)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise ProfileError(xml, f"{what} {text[k]!r} is not a finite number", f"<M> number {k + 1}")
    return vals


def _read_inline(xml: Path, x: dict[str, Any], s: dict[str, Any]) -> Tree:
    """The summary values inline in experiment.xml (``<M n=metric v=value>`` in the
    scopes) as a Tree: hpcprof's statistics over all threads."""
    scope, mid, mtext = x["inline"]
    entries = x["metrics"]
    if not scope or not entries:
        raise ProfileError(
            xml,
            "no metric values: neither metric-db files (MetricDBTable) nor summary "
            "values (<Metric> with <M> in the scopes)",
        )
    pos = {d.get("i", ""): j for j, d in enumerate(entries)}
    scope_a = np.asarray(scope, dtype=np.int64)
    col = np.fromiter((pos.get(m, -1) for m in mid), dtype=np.int64, count=len(mid))
    if (col < 0).any():
        k = int(np.flatnonzero(col < 0)[0])
        raise ProfileError(
            xml, f"<M n={mid[k]!r}> names no <Metric> of the MetricTable", f"<M> number {k + 1}"
        )
    vals = _floats(xml, mtext, "<M> value")
    by_name, rules, units = _name_columns(xml, entries, summary=True)
    # values per kept node (call sites and unnamed Pr carry values of their callee)
    n = x["tag"].size
    local = np.full(n, -1, dtype=np.int64)
    local[s["idx"]] = np.arange(s["idx"].size)
    at = np.where(scope_a >= 0, local[np.maximum(scope_a, 0)], -1)
    on_node = at >= 0
    K = s["idx"].size
    table = np.zeros((K, len(entries)))
    np.add.at(table, (at[on_node], col[on_node]), vals[on_node])
    top = np.zeros(len(entries))
    np.add.at(top, col[scope_a < 0], vals[scope_a < 0])
    parent = s["parent"]
    stm = (parent >= 0) & (s["kind"] == "statement")
    exclusive: dict[str, np.ndarray] = {}
    inclusive: dict[str, np.ndarray] = {}
    summary: dict[str, float] = {}
    for name, cols in by_name.items():
        if "inclusive" in cols:
            inclusive[name] = table[:, cols["inclusive"]]
            summary[f"{name} (inc)"] = float(top[cols["inclusive"]])
        elif "exclusive" in cols and rules[name] == "sum":
            exc = table[:, cols["exclusive"]]  # Hatchet: minus the statement children's
            sub = np.zeros(K)
            np.add.at(sub, parent[stm], exc[stm])
            exclusive[name] = exc - sub
        else:  # a derived metric (a formula per node) or a statistic: per-node values
            rules[name] = "none"
            inclusive[name] = table[:, next(iter(cols.values()))]
    meta = _meta(x, units, rules)
    meta["values"] = "summary"
    meta["summary"] = summary
    meta["summary_note"] = (
        f"hpcprof's statistics over all threads, inline in {XML} (no per-thread "
        "metric-db files): ':Sum' metrics carry the bare name"
    )
    return Tree.from_parents(
        parent,
        s["names"],
        exclusive or None,
        kind=s["kind"],
        columns=s["columns"],
        meta=meta,
        inclusive=inclusive or None,
    )
