"""What Caliper's two readers share (json-split, ``caliper_json``, and native
``.cali``, ``cali``): Caliper's metric names, their rules and units, and the
profile built from Caliper's records. A helper, not a reader: readers import it,
never each other.
"""

from __future__ import annotations

import functools
import os
import re
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from ..interop import (
    TIMER_CONFIGURED,
    TIMER_NS,
    MetricSpec,
    build_metrics,
    caliper_rule,
    is_raw_caliper,
    timer_unit,
)
from ..model.ensemble import Ensemble
from ..model.tree import Tree, base_metric, inc_name
from ..model.units import canonical
from ._json import numeric

RENAME = {
    "sum#time.duration": "time",
    "sum#avg#sum#time.duration": "time",
    "inclusive#sum#time.duration": "time",  # given inclusive: its "time (inc)"
    "sum#avg#inclusive#sum#time.duration": "time",
    "module#cali.sampler.pc": "module",
    "mpi.rank": "rank",
}
ORDER_COL = "Node order"
SOURCELOC = "sourceloc#cali.sampler.pc"


def all_text(values: pd.Series) -> bool:
    """A value column of text only (a Caliper ASVALUE string attribute): a label."""
    have = values.dropna()
    return bool(len(have)) and pd.to_numeric(have, errors="coerce").isna().all()


@dataclass(frozen=True)
class CaliColumn:
    """A Caliper attribute of the records: its name, whether it holds values
    (metrics, ``mpi.rank``) or labels, and its ``attribute.alias``/``unit``."""

    name: str
    is_value: bool
    alias: str | None = None
    unit: str | None = None


def metric_name(attr: str, alias: str | None = None) -> str:
    """The name of a Caliper metric attribute in cctviz: Hatchet's renaming
    (``sum#time.duration`` -> ``time``), else the ``attribute.alias``, else the
    attribute.

    Values Caliper aggregated as inclusive keep this name too: where their
    rule combines values (``sum``, ``max``), the inclusive column
    ``"<name> (inc)"`` holds the recorded values (see :func:`metric_specs`).

    >>> metric_name("sum#time.duration"), metric_name("inclusive#sum#time.duration")
    ('time', 'time')
    >>> metric_name("avg#inclusive#sum#time.duration", "Avg time/rank")
    'Avg time/rank'
    """
    return RENAME.get(attr) or alias or attr


def build_profile(
    path: Path,
    df: pd.DataFrame,
    columns: list[CaliColumn],
    tparent: np.ndarray,
    names: np.ndarray,
    kinds: np.ndarray,
    rnode: np.ndarray,
    run_meta: dict[str, Any],
    *,
    row_where: str = "data row {k}",
) -> Tree | Ensemble:
    """The profile of Caliper records, shared by the json-split and ``.cali`` readers.

    ``df`` holds one row per record that has a call path, with one column per
    entry of ``columns`` (values as numbers or strings, label columns as
    labels); ``tparent``/``names``/``kinds`` describe the call-path nodes
    (parent index or -1), ``rnode`` is the node of each row. Metric columns
    are renamed as Hatchet does (:func:`metric_name`) and follow the rules of
    :func:`metric_specs` (aggregation, inclusive values, units); label
    columns become node attributes (``sourceloc#cali.sampler.pc`` splits a
    node into ``statement`` children when it was sampled at several lines; a
    node whose records disagree on a label keeps the first, with a warning),
    ``Node order`` orders siblings, ``mpi.rank`` makes one profile per rank,
    and ``run_meta`` (Caliper globals; numbers in strings become numbers) is
    the metadata. ``row_where`` names a row in errors (a format string of ``k``).

    >>> rows = pd.DataFrame({"sum#time.duration": ["1.5", "2.0"], "mpi.rank": [0, 0]})
    >>> cols = [CaliColumn("sum#time.duration", True, unit="sec"), CaliColumn("mpi.rank", True)]
    >>> t = build_profile(Path("x.cali"), rows, cols, np.array([-1, 0]),
    ...     np.array(["main", "solve"], dtype=object), np.array(["function"] * 2),
    ...     np.array([0, 1]), {"cluster": "quartz", "jobsize": "8"})
    >>> t.metrics["time (inc)"].tolist(), t.meta["jobsize"], t.units
    ([3.5, 2.0], 8, {'time': 's'})
    """
    value_cols = [
        c
        for c in columns
        if c.is_value and c.name != "mpi.rank" and ORDER_COL not in (c.name, c.alias)
    ]
    lost: list[str] = []  # what the profile cannot keep, said once in a warning
    specs = metric_specs(path, df, value_cols, row_where)

    # ---- node attributes from label columns
    attrs: dict[str, np.ndarray] = {}
    ntree = len(names)
    extra_nodes: list[tuple[int, str, str, str]] = []  # (parent local id, name, file, line)
    row_target = rnode.copy()
    for c in columns:
        if c.is_value:
            continue
        lab = pd.Series(df[c.name].to_numpy(dtype=object), dtype=object)
        if c.name == SOURCELOC:
            fl = lab.str.extract(r"^(.*):(\d+)$")
            file_, line_ = fl[0], fl[1]
            key = pd.DataFrame({"n": rnode, "f": file_, "l": line_})
            nuniq = key.dropna().groupby("n")["l"].nunique()
            multi = set(nuniq[nuniq > 1].index.tolist())
            fcol = np.full(ntree, None, dtype=object)
            lcol = np.full(ntree, None, dtype=object)
            single = key.dropna().drop_duplicates("n")
            single = single[~single["n"].isin(multi)]
            fcol[single["n"].to_numpy()] = single["f"].to_numpy()
            lcol[single["n"].to_numpy()] = single["l"].to_numpy()
            attrs["file"], attrs["line"] = fcol, lcol
            if multi:
                split = key[key["n"].isin(multi) & key["l"].notna()]
                groups = split.groupby(["n", "l"], sort=True).indices
                for (nid, line), rows in groups.items():
                    f = split["f"].iloc[rows[0]]
                    extra_nodes.append((int(nid), f"{os.path.basename(f)}:{line}", f, line))
                    row_target[split.index[rows]] = ntree + len(extra_nodes) - 1
        else:
            name = RENAME.get(c.name, c.name)
            pairs = pd.DataFrame({"n": rnode, "v": lab}).dropna()
            first = pairs.drop_duplicates("n")
            col = np.full(ntree, None, dtype=object)
            col[first["n"].to_numpy()] = first["v"].to_numpy()
            attrs[name] = col
            several = _several_labels(pairs)
            if several is not None:
                k, vals = several
                lost.append(
                    f"label {c.name!r} differs between records of {k} node(s) "
                    f"(e.g. {names[int(vals.name)]!r}: {list(vals)}); the node keeps the first"
                )

    all_parent = np.concatenate([tparent, np.array([e[0] for e in extra_nodes], dtype=np.int64)])
    all_names = np.concatenate([names, np.array([e[1] for e in extra_nodes], dtype=object)])
    all_kinds = np.concatenate(
        [np.asarray(kinds, dtype=object), np.full(len(extra_nodes), "statement", dtype=object)]
    )
    node_columns = {
        k: np.concatenate([v, np.full(len(extra_nodes), None, dtype=object)])
        for k, v in attrs.items()
    }
    if extra_nodes:
        for k, j in (("file", 2), ("line", 3)):
            col = node_columns.get(k, np.full(ntree + len(extra_nodes), None, dtype=object))
            col[ntree:] = [e[j] for e in extra_nodes]
            node_columns[k] = col
    sibling_key = None
    order_col = next((c.name for c in columns if ORDER_COL in (c.name, c.alias)), None)
    if order_col is not None:
        order = pd.to_numeric(df[order_col], errors="coerce")
        so = pd.Series(order.to_numpy()).groupby(row_target).min()
        sibling_key = np.full(all_parent.size, np.inf)
        sibling_key[so.index.to_numpy()] = so.to_numpy()
        sibling_key = np.where(
            np.isinf(sibling_key), np.arange(all_parent.size) + 1e12, sibling_key
        )
        node_columns[ORDER_COL] = np.where(sibling_key < 1e12, sibling_key, np.nan)

    meta: dict[str, Any] = {k: _coerce(v) for k, v in run_meta.items()}

    structure, new_id = Tree.from_parents_with_ids(
        all_parent,
        all_names,
        None,
        kind=all_kinds,
        columns=node_columns or None,
        sibling_key=sibling_key,
    )
    node = new_id[row_target]

    has_rank = any(c.name == "mpi.rank" for c in columns)
    ranks = (
        numeric(path, df["mpi.rank"], "mpi.rank", row_where).fillna(0).astype(np.int64).to_numpy()
        if has_rank
        else np.zeros(len(df), dtype=np.int64)
    )
    uniq_ranks = np.unique(ranks)
    prof = np.searchsorted(uniq_ranks, ranks)
    if uniq_ranks.size == 1 and has_rank:
        meta.setdefault("rank", int(uniq_ranks[0]))
    out = build_metrics(structure, node, prof, pd.DataFrame({"rank": uniq_ranks}), specs, meta)
    lost += _check_dropped_inclusive(out, node, prof, specs)
    if lost:
        warnings.warn(f"{path}: " + "; ".join(lost), stacklevel=3)
    return out


_RAJAPERF_BYTES = re.compile(r"^Bytes.*/Rep$")


def metric_specs(
    path: Path, df: pd.DataFrame, value_cols: list[CaliColumn], row_where: str
) -> list[MetricSpec]:
    """The metrics of Caliper value columns: names, rules, inclusive values and units.

    - **Name**: Hatchet's renaming (``sum#time.duration`` -> ``time``,
      ``inclusive#sum#time.duration`` -> ``time`` given inclusive), else the
      ``attribute.alias`` (``Min time/rank``), else the attribute.
    - **Rule** (:func:`cctviz.interop.caliper_rule`): the outermost operator:
      ``sum#`` (and ``Total time``) add up, ``max#`` -> ``"max"``, ``min#`` ->
      ``"min"``, ``avg#``, ``any#`` (RAJAPerf's per-kernel constants
      ``BlockSize``, ``Reps``, ``ProblemSize``, ``Bytes/Rep``...) ->
      ``"none"``. Values Caliper aggregated as inclusive (``inclusive#``: the
      spot controller's ``Min/Max/Avg time/rank`` and ``Total time``) are given
      to the model as inclusive values: a sum's own part is the value minus the
      children's, a maximum's own value is the recorded one (the maximum over a
      subtree gives it back), and a minimum or an average stays per node,
      ``"none"``, under its recorded name (no `` (inc)`` column derived from it).
    - **Unit**: the ``attribute.unit`` the file states; else the Caliper timer's
      convention (:func:`cctviz.interop.timer_unit`: ``time.duration`` in whole
      microseconds or in seconds, told apart by the values; ``*.ns`` in
      nanoseconds) or RAJAPerf's ``Bytes.../Rep`` in bytes, each recorded in
      ``meta["units_assumed"]``; else no unit.

    An inclusive metric whose exclusive counterpart is also recorded
    (``inclusive#sum#time.duration`` beside ``sum#time.duration``) is derived
    from it again and not kept (:attr:`MetricSpec.kept`); a clash of names
    keeps the later column under its attribute name.
    """
    values = [
        numeric(path, df[c.name], f"value column {c.name!r}", row_where).to_numpy(dtype=np.float64)
        for c in value_cols
    ]
    return specs_of(value_cols, values)


def specs_of(value_cols: list[CaliColumn], values: list[np.ndarray]) -> list[MetricSpec]:
    """:func:`metric_specs` of value columns already converted to numbers
    (``values[k]``: one float per record of ``value_cols[k]``, NaN where it has
    none); the batch reader (:mod:`cctviz.readers._batch`) calls it on the arrays
    it parsed, without a table.

    >>> [(m.name, m.rule, m.inclusive, m.kept, m.unit) for m in specs_of(
    ...     [CaliColumn("sum#time.duration", True), CaliColumn("inclusive#sum#time.duration", True)],
    ...     [np.array([2.0, 1.0]), np.array([3.0, 1.0])])]
    [('time', 'sum', False, True, 'us'), ('time', 'sum', True, False, 'us')]
    """
    return specs_from_shape(spec_shape(value_cols), values)


def spec_shape(value_cols: list[CaliColumn]) -> tuple[_SpecShape, ...]:
    """What :func:`specs_of` decides from the columns alone (cached per set of columns)."""
    try:
        return _spec_shape(tuple(value_cols))
    except TypeError:  # an alias or unit that is no text (unhashable): decided here
        return _spec_shape.__wrapped__(tuple(value_cols))


def specs_from_shape(
    shape: tuple[_SpecShape, ...],
    values: list[np.ndarray],
    timer: Mapping[str, tuple[str | None, str | None]] | None = None,
) -> list[MetricSpec]:
    """:func:`specs_of` of columns whose :func:`spec_shape` is known: the specs with
    their values, and the units decided by the values (Caliper's timer; ``timer``:
    the unit and its reason per attribute (:func:`timer_bases`), decided already)."""
    specs = [
        MetricSpec(t.attr, t.name, v, t.rule, t.inclusive, t.unit, note=t.note, kept=t.kept)
        for t, v in zip(shape, values, strict=True)
    ]
    # units the file does not state
    timer = dict(timer or {})
    for m, t in zip(specs, shape):
        if m.unit:
            continue
        if _RAJAPERF_BYTES.match(t.base):
            m.unit = "B"
            m.unit_reason = (
                f"no unit in the file; RAJAPerf's {t.base} is the bytes a kernel moves per "
                "repetition"
            )
            continue
        if t.base not in TIMER_NS + TIMER_CONFIGURED:  # no timer: no unit to tell
            continue
        if t.base not in timer:  # the same for every column of this attribute
            same = [o.values for o, u in zip(specs, shape) if u.base == t.base and u.raw]
            timer[t.base] = timer_unit(t.base, same)
        m.unit, m.unit_reason = timer[t.base]
    return specs


def timer_bases(shape: tuple[_SpecShape, ...]) -> dict[str, list[int]]:
    """The timer attributes whose unit the values decide (:func:`specs_from_shape`),
    each with the columns (indexes into ``shape``) whose values decide it."""
    out: dict[str, list[int]] = {}
    for t in shape:
        if t.unit or _RAJAPERF_BYTES.match(t.base) or t.base not in TIMER_NS + TIMER_CONFIGURED:
            continue
        out.setdefault(t.base, [j for j, u in enumerate(shape) if u.base == t.base and u.raw])
    return out


@functools.lru_cache(maxsize=256)
def _spec_shape(value_cols: tuple[CaliColumn, ...]) -> tuple[_SpecShape, ...]:
    """What :func:`specs_of` decides from the columns alone (names, rules, which
    inclusive twin is dropped, stated units): the same for every file of a study,
    so decided once per set of columns."""
    specs: list[MetricSpec] = []
    for c in value_cols:
        cr = caliper_rule(c.name)
        name, inc_named = base_metric(metric_name(c.name, c.alias))
        specs.append(
            MetricSpec(
                c.name,
                name,
                np.empty(0),
                cr.rule,
                cr.inclusive or inc_named,
                canonical(c.unit),
                note=cr.note,
            )
        )
    # names: an exclusive metric wins over its inclusive twin, other clashes keep the attribute
    by_name: dict[str, MetricSpec] = {}
    for m in sorted(specs, key=lambda m: m.inclusive):
        other = by_name.get(m.name)
        if other is None:
            by_name[m.name] = m
        elif m.inclusive and not other.inclusive and m.rule == other.rule:
            m.kept = False
        else:
            m.name = m.attr
            by_name[m.name] = m
    return tuple(
        _SpecShape(
            m.attr,
            m.name,
            m.rule,
            m.inclusive,
            m.unit,
            m.note,
            m.kept,
            caliper_rule(m.attr).base,
            is_raw_caliper(m.attr),
        )
        for m in specs
    )


class _SpecShape(NamedTuple):
    """A metric column's :class:`MetricSpec` without its values."""

    attr: str
    name: str
    rule: str
    inclusive: bool
    unit: str | None
    note: str | None
    kept: bool
    base: str  #: the measured attribute (``time.duration``)
    raw: bool  #: a raw Caliper attribute (its values tell the timer's unit)


def _several_labels(pairs: pd.DataFrame) -> tuple[int, pd.Series] | None:
    """Nodes whose rows (``n``, label ``v``) disagree: how many, and one node's labels."""
    try:
        nun = pairs.groupby("n")["v"].nunique()
    except TypeError:  # unhashable labels
        return None
    bad = nun[nun > 1]
    if bad.empty:
        return None
    first = int(bad.index[0])
    vals = pd.Series(pd.unique(pairs.loc[pairs["n"] == first, "v"]), name=first)
    return int(bad.size), vals


def _check_dropped_inclusive(
    out: Tree | Ensemble, node: np.ndarray, prof: np.ndarray, specs: list[MetricSpec]
) -> list[str]:
    """Inclusive columns not kept (derived again from their exclusive twin) that the
    derived values do not match: what to say about them."""
    said = []
    for m in specs:
        if m.kept or m.rule != "sum":
            continue
        col = inc_name(m.name)
        if isinstance(out, Ensemble):
            got = out.long_table[col].reindex(pd.MultiIndex.from_arrays([node, prof])).to_numpy()
        else:
            got = out.metrics[col].to_numpy()[node]
        rec = m.values
        if np.isnan(rec).all():
            continue
        ok = np.isnan(rec) | np.isclose(got, rec, rtol=1e-6, atol=1e-9 * np.nanmax(np.abs(rec)))
        if not ok.all():
            said.append(
                f"{m.attr!r} differs from {col!r} derived from the exclusive values in "
                f"{int((~ok).sum())} record(s); the derived values are kept"
            )
    return said


_INT = re.compile(r"^[-+]?\d+$")
_FLOAT = re.compile(r"^[-+]?(\d+\.\d*|\.\d+|\d+)([eE][-+]?\d+)?$")


def _coerce(v: Any) -> Any:
    """Caliper writes run metadata as strings: give numbers back as numbers."""
    if isinstance(v, str):
        return _coerce_text(v)
    return v


@functools.lru_cache(maxsize=4096)
def _coerce_text(v: str) -> Any:
    """:func:`_coerce` of a text (the same values recur in every file of a study)."""
    if _INT.match(v):
        return int(v)
    if _FLOAT.match(v):
        return float(v)
    return v
