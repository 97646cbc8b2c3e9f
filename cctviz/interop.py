"""Hatchet GraphFrames and Thicket objects in and out, by duck typing.

cctviz never imports hatchet or thicket: :func:`from_hatchet` and
:func:`from_thicket` read the attributes those objects have
(``gf.graph.roots``, a node's ``.frame`` and ``.children``, ``gf.dataframe``,
``gf.exc_metrics``, ``gf.inc_metrics``; ``tk.graph``, ``tk.dataframe``
indexed by (node, profile), ``tk.metadata``, ``tk.profile``,
``tk.profile_mapping``). The other way, :meth:`Tree.to_hatchet_literal
<cctviz.Tree.to_hatchet_literal>` gives what ``GraphFrame.from_literal`` takes.

Rules:

- **Graph.** Nodes are taken in a depth-first walk from the roots along
  ``children`` (Hatchet's own traversal order). A node of a DAG reached again
  through another parent (gprof call graphs) is not copied: it stays under the
  parent it was first reached from, so every Hatchet node is one cctviz node
  and metric totals are unchanged. A node's name is its frame's ``name``; a
  frame without one (Hatchet's ``statement`` frames) is named
  ``<file basename>:<line>``. The frame's ``type`` is the node kind and its
  other attributes (``file``, ``line``, ``module``...) node columns.
- **Metrics.** Exclusive metrics are kept. An inclusive metric whose exclusive
  counterpart exists (``time`` and ``time (inc)``) is derived again, not stored;
  an inclusive-only one becomes its exclusive counterpart, per profile own minus
  children's value, so the derived inclusive values equal the recorded ones.
  Its name: ``"X (inc)"`` -> ``X``; a Caliper name ``"A#inclusive#B"`` -> ``A#B``
  (so ``"sum#inclusive#sum#time.duration"`` is read back as
  ``"sum#sum#time.duration (inc)"``); other names are kept. Other dataframe
  columns whose value is the same in every row of a node become node columns;
  the others (but Hatchet's ``nid``) are not kept, with a warning.
- **Rules and units.** Hatchet and Thicket keep neither; what the names say is
  kept (:func:`caliper_rule`, :func:`timer_unit`), the rest adds up and has no
  unit. Caliper attribute names follow Caliper's operators (``max#`` a max,
  ``avg#``/``any#`` per node, ``inclusive#`` values given as inclusive: a max
  of them is its own value, a minimum of them stays per node under its own
  name); in a profile of Caliper's ``spot`` channel (``cali.channel``) the
  aliases ``Total time``, ``Max/Min/Avg time/rank`` are those aggregates, in
  seconds; in a RAJAPerf profile its kernel constants (``BlockSize``,
  ``Reps``...) stay per node and ``Bytes/Rep`` is in bytes. Units so inferred
  are recorded in ``meta["units_assumed"]``, rules in ``meta["aggregation"]``.
- **Profiles.** Index levels other than ``node`` (``rank``, ``thread``,
  ``profile``) identify profiles: several give an :class:`~cctviz.Ensemble`
  whose ``profiles`` has those columns, one (or none) a :class:`~cctviz.Tree`.
  A Thicket always gives an Ensemble, one profile per ``tk.profile`` entry in that
  order, with ``tk.metadata`` columns and ``profile_file`` (from
  ``tk.profile_mapping``).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from .errors import ProfileError
from .model._algo import combine_rows
from .model.ensemble import Ensemble
from .model.tree import INC, Tree, check_aggregation, inc_name
from .model.units import canonical, dimension

__all__ = [
    "from_hatchet",
    "from_thicket",
    "inclusive_base",
    "caliper_rule",
    "timer_unit",
    "build_metrics",
]

NOT_METRICS = ("Node order",)

# ------------------------------------------------------------------ Caliper names
#: CalQL operators in a Caliper metric attribute's name (``min#inclusive#sum#time.duration``:
#: outermost first) -> the aggregation rule of the values they give. ``scale`` and the
#: inclusive forms keep the rule of the operator inside them.
CALIPER_OPS = {
    "sum": "sum",
    "count": "sum",
    "max": "max",
    "min": "min",
    "avg": "none",
    "any": "none",
    "ratio": "none",
    "inclusive_ratio": "none",
    "percent_total": "none",
    "inclusive_percent_total": "none",
    "variance": "none",
    "scale": None,
    "inclusive_scale": None,
    "inclusive": None,
}
#: Caliper timer attributes whose values are inclusive durations
INCLUSIVE_TIMERS = ("time.inclusive.duration", "time.inclusive.duration.ns")
#: aliases Caliper's ``spot`` controller gives its cross-rank metrics (``unit sec``)
SPOT_ALIASES = {
    "Min time/rank": "min#inclusive#sum#time.duration",
    "Max time/rank": "max#inclusive#sum#time.duration",
    "Avg time/rank": "avg#inclusive#sum#time.duration",
    "Total time": "sum#inclusive#sum#time.duration",
}


class CaliperRule(NamedTuple):
    """What a Caliper metric attribute's name says about its values."""

    rule: str  #: aggregation rule in cctviz
    inclusive: bool  #: the recorded values are inclusive (a region and what it calls)
    base: str  #: the measured attribute (``time.duration``)
    note: str | None = None  #: why, for ``meta["aggregation_notes"]``


def caliper_rule(attr: str) -> CaliperRule:
    """The aggregation rule of a Caliper metric attribute, from its operators.

    The outermost operator decides: ``sum``/``count`` add up (``"sum"``),
    ``max``/``min`` are peaks (``"max"``/``"min"``), ``avg``, ``any`` (a
    per-node constant or setting, as RAJAPerf's ``any#any#max#BlockSize``),
    ratios and percentages are per-node values (``"none"``); ``scale`` and
    ``inclusive`` keep the rule inside them. ``inclusive#`` anywhere (or the
    timer's ``time.inclusive.duration``) means the recorded values are
    inclusive. A minimum over ranks of inclusive values is no minimum over a
    subtree (a parent's inclusive time is at least its child's): it is kept per
    node, ``"none"``. A name without operators (``time``, ``count``) is a sum.

    >>> [caliper_rule(a)[:2] for a in ("sum#time.duration", "max#inclusive#sum#time.duration",
    ...     "min#inclusive#sum#time.duration", "avg#time.duration", "any#any#max#BlockSize")]
    [('sum', False), ('max', True), ('none', True), ('none', False), ('none', False)]
    """
    *ops, base = attr.split("#")
    inclusive = base in INCLUSIVE_TIMERS or any(o.startswith("inclusive") for o in ops)
    rule = "sum"
    for o in ops:
        if o not in CALIPER_OPS:  # not an operator: a name with '#' in it
            ops, base, rule = [], attr, "sum"
            inclusive = base in INCLUSIVE_TIMERS
            break
        if CALIPER_OPS[o] is not None:
            rule = CALIPER_OPS[o]
            break
    note = None
    if ops and rule == "none":
        op = next(o for o in ops if CALIPER_OPS[o] is not None)
        what = {
            "avg": "an average" + (" of inclusive values" if inclusive else ""),
            "any": "a per-node constant or setting (Caliper's 'any' operator)",
        }.get(op, f"a {op.replace('_', ' ')}")
        note = f"Caliper's {attr!r} is {what}: it does not add up, kept per node"
    if ops and rule == "min" and inclusive:
        rule = "none"
        note = (
            f"Caliper's {attr!r} is a minimum of inclusive values: a parent's inclusive "
            "value is at least its child's, so the minimum over a subtree would be the "
            "smallest descendant's, not this value; kept per node (the values are inclusive)"
        )
    if rule == "none" and inclusive and note and "inclusive" not in note:
        note += " (the values are inclusive)"
    return CaliperRule(rule, inclusive, base, note)


#: the timer attributes whose unit Caliper's configuration decides (``CALI_TIMER_UNIT``)
TIMER_CONFIGURED = ("time.duration", "time.inclusive.duration")
#: the timer attributes in nanoseconds (Caliper 2.10 and later name them so)
TIMER_NS = ("time.duration.ns", "time.inclusive.duration.ns", "time.offset.ns")


def timer_unit(base: str, values: Sequence[Any]) -> tuple[str | None, str | None]:
    """The unit of a Caliper timer attribute a file states no unit for, and why.

    ``*.ns`` attributes are nanoseconds. ``time.duration`` and
    ``time.inclusive.duration`` are in the unit ``CALI_TIMER_UNIT`` chose:
    ``usec`` (the default of older Caliper, whose documentation has them in
    microseconds) writes whole microseconds, ``sec`` (the later default, and
    what the ``runtime-report``, ``spot`` and ``hatchet-region-profile``
    configurations set) writes microseconds times 1e-6. ``values`` (arrays of
    sums, minima or maxima of the attribute; not averages) tell which: whole
    numbers are microseconds, fractions of whole microseconds are seconds;
    anything else (or no non-zero value) leaves the unit unknown: ``(None, None)``.

    >>> timer_unit("time.duration", [[21948.0, 5882425.0]])[0]
    'us'
    >>> timer_unit("time.duration", [[0.000285, 0.024836]])[0]
    's'
    >>> timer_unit("time.duration", [[0.5e-7]]), timer_unit("papi.PAPI_TOT_CYC", [[3.0]])
    ((None, None), (None, None))
    >>> timer_unit("time.duration", [[21948.3, 5882425.1]])  # rounded microseconds: unknown
    (None, None)
    """
    v = np.concatenate([np.asarray(x, dtype=np.float64).ravel() for x in values] or [[]])
    return timer_units(base, v, np.zeros(v.size, dtype=np.int64), 1)[0]


def timer_units(
    base: str, values: np.ndarray, group: np.ndarray, n_groups: int
) -> list[tuple[str | None, str | None]]:
    """:func:`timer_unit` of each of ``n_groups`` groups of values at once
    (``group[i]``: the group of ``values[i]``; ``values`` may be rows x columns,
    ``group`` one per row): the files of a chunk, decided in one pass.

    >>> v = np.array([3.0, 0.000285, 0.024836])
    >>> [unit for unit, _ in timer_units("time.duration", v, np.array([0, 1, 1]), 3)]
    ['us', 's', None]
    """
    if base in TIMER_NS:
        why = f"Caliper's timer writes {base} in nanoseconds (the .ns in its name)"
        return [("ns", why)] * n_groups
    if base not in TIMER_CONFIGURED:
        return [(None, None)] * n_groups
    v = np.abs(np.asarray(values, dtype=np.float64))
    grp = np.broadcast_to(np.asarray(group).reshape(-1, *([1] * (v.ndim - 1))), v.shape)
    seen = np.isfinite(v) & (v != 0)
    v, grp = v[seen], grp[seen]

    def anywhere(flag: np.ndarray) -> np.ndarray:
        return np.bincount(grp[flag], minlength=n_groups) > 0

    why = (
        f"no unit in the file; Caliper's timer writes {base} in whole microseconds "
        "(CALI_TIMER_UNIT=usec, the default of older Caliper) or in seconds "
        "(CALI_TIMER_UNIT=sec: microseconds times 1e-6)"
    )
    us, ms = v * 1e6, v * 1e3
    has = anywhere(np.ones(v.size, dtype=bool))
    fraction = anywhere(v != np.round(v))
    # seconds at microsecond resolution have digits below the millisecond; values that
    # are all whole tenths (21948.3) are microseconds rounded, not 6-hour seconds
    not_whole_us = anywhere(~(np.abs(us - np.round(us)) <= 1e-3 + 1e-9 * us))
    sub_ms = anywhere(np.abs(ms - np.round(ms)) > 1e-6 + 1e-9 * ms)
    out: list[tuple[str | None, str | None]] = []
    for g in range(n_groups):
        if not has[g]:
            out.append((None, None))
        elif not fraction[g]:
            out.append(("us", why + "; these values are whole numbers: microseconds"))
        elif sub_ms[g] and not not_whole_us[g]:
            out.append(("s", why + "; these values are whole microseconds times 1e-6: seconds"))
        else:
            out.append((None, None))
    return out


def inclusive_base(name: str) -> str:
    """The exclusive metric an inclusive metric name belongs to.

    >>> inclusive_base("time (inc)"), inclusive_base("sum#inclusive#sum#time.duration")
    ('time', 'sum#sum#time.duration')
    """
    if name.endswith(INC):
        return name[: -len(INC)]
    if "inclusive#" in name:
        return name.replace("inclusive#", "", 1)
    return name


@dataclass
class MetricSpec:
    """One metric column of a profile's rows (a Caliper attribute, a Hatchet or
    Thicket dataframe column) and how cctviz keeps it (:func:`build_metrics`)."""

    attr: str  #: the column as the source names it (``min#inclusive#sum#time.duration``)
    name: str  #: the metric's name in cctviz, without `` (inc)``
    values: np.ndarray  #: one per row; NaN where the row lacks it
    rule: str = "sum"  #: aggregation rule
    inclusive: bool = False  #: the recorded values are inclusive
    unit: str | None = None
    unit_reason: str | None = None  #: why, when the source states no unit
    note: str | None = None  #: why the rule, for ``meta["aggregation_notes"]``
    kept: bool = True  #: False for an inclusive twin of a kept exclusive metric

    def row_values(self) -> np.ndarray:
        """The values rows combine: a ``"sum"`` row without a value adds 0."""
        return (
            np.where(np.isnan(self.values), 0.0, self.values) if self.rule == "sum" else self.values
        )


def with_metric_meta(meta: Mapping[str, Any], specs: Sequence[MetricSpec]) -> dict[str, Any]:
    """``meta`` with what the specs say of their metrics: units (and why assumed),
    the rules that are not sums (and why)."""
    out = dict(meta)
    for key, val in (
        ("units", {m.name: m.unit for m in specs if m.unit}),
        ("units_assumed", {m.name: m.unit_reason for m in specs if m.unit_reason}),
        ("aggregation", {m.name: m.rule for m in specs if m.rule != "sum"}),
        ("aggregation_notes", {m.name: m.note for m in specs if m.note}),
    ):
        if val:
            out[key] = {**out.get(key, {}), **val}
    return out


def row_matrix(specs: Sequence[MetricSpec], n_rows: int) -> np.ndarray:
    """(rows x metrics) of the specs' :meth:`MetricSpec.row_values`."""
    if not specs:
        return np.zeros((n_rows, 0))
    return np.column_stack([m.row_values() for m in specs])


def build_metrics(
    structure: Tree,
    node: np.ndarray,
    prof: np.ndarray,
    profiles: pd.DataFrame,
    specs: Sequence[MetricSpec],
    meta: Mapping[str, Any],
    *,
    ensemble: bool = False,
) -> Tree | Ensemble:
    """The Tree (one profile, unless ``ensemble``) or Ensemble of rows' metrics.

    ``node`` and ``prof`` give each row's node of ``structure`` and profile
    (a row of ``profiles``). Rows of one (node, profile) are combined by the
    metric's rule (a ``"sum"`` row without a value adds 0; differing ``"none"``
    values give NaN, with a warning). Inclusive values go through the model's
    ``inclusive`` path: a sum's own part is the value minus the children's, a
    ``"max"``/``"none"`` metric's own value is the recorded one, and a
    ``"max"`` or ``"min"`` metric the rule does not give the values back from
    becomes ``"none"`` with a note (:meth:`Tree.from_parents`; the same check
    per profile in an Ensemble). The specs' units, unit assumptions, rules and
    notes go into ``meta`` (``units``, ``units_assumed``, ``aggregation``,
    ``aggregation_notes``). Metrics keep their order, except that times that
    add up come first (what a view shows by default).
    """
    # times that add up first: the default metric of a view (RAJAPerf's "Total time", not
    # BlockSize, its first column)
    kept = sorted(
        (m for m in specs if m.kept),
        key=lambda m: not (m.rule == "sum" and dimension(m.unit) == "time"),
    )
    meta = with_metric_meta(meta, kept)
    n = len(structure)
    n_prof = len(profiles)
    P = max(n_prof, 1)
    key = np.asarray(node, dtype=np.int64) * P + np.asarray(prof, dtype=np.int64)
    uniq, inv = np.unique(key, return_inverse=True)
    vals = row_matrix(kept, key.size)
    combined, conflicts = combine_rows(vals, inv.reshape(-1), uniq.size, [m.rule for m in kept])
    for m, k in zip(kept, conflicts):
        if k:
            warnings.warn(
                f"metric {m.name!r} (aggregation 'none') has different values in rows of "
                f"one call path in {k} places; those are NaN",
                stacklevel=3,
            )
    unode, uprof = uniq // P, uniq % P
    if n_prof <= 1 and not ensemble:
        t = Tree(structure.nodes, None, meta, _trusted=True)
        for j, m in enumerate(kept):
            col = np.zeros(n) if m.rule == "sum" else np.full(n, np.nan)
            col[unode] = combined[:, j]
            t = t.add_metric(m.name, col, inclusive=m.inclusive, aggregation=m.rule)
        return t
    long = pd.DataFrame({"node": unode, "profile": uprof})
    for j, m in enumerate(kept):
        v = combined[:, j]
        if m.inclusive and m.rule == "sum":
            v = own_from_inclusive(structure.parent, unode, uprof, P, v)
        long[m.name] = v
    ens = Ensemble(Tree(structure.nodes, None, meta, _trusted=True), long, profiles, meta)
    demoted = {}
    for j, m in enumerate(kept):
        if m.inclusive and m.rule in ("max", "min"):
            got = ens.long_table[inc_name(m.name)].reindex(
                pd.MultiIndex.from_arrays([unode, uprof])
            )
            ok = np.isclose(got.to_numpy(), combined[:, j], rtol=1e-9, equal_nan=True)
            if not ok.all():
                b = int(np.flatnonzero(~ok)[0])
                demoted[m.name] = (
                    f"given as inclusive values that the rule {m.rule!r} does not give back "
                    f"(node {int(unode[b])} {structure.names[unode[b]]!r} of profile "
                    f"{int(uprof[b])}: {combined[b, j]!r}, {m.rule} of its subtree "
                    f"{got.iloc[b]!r}); kept as per-node values (aggregation 'none')"
                )
    if demoted:
        meta["aggregation"] = {**meta.get("aggregation", {}), **dict.fromkeys(demoted, "none")}
        meta["aggregation_notes"] = {**meta.get("aggregation_notes", {}), **demoted}
        ens = Ensemble(Tree(structure.nodes, None, meta, _trusted=True), long, profiles, meta)
    return ens


def own_from_inclusive(
    parent: np.ndarray, node: np.ndarray, prof: np.ndarray, P: int, inc: np.ndarray
) -> np.ndarray:
    """Per (node, profile) row (unique): the inclusive value minus the inclusive
    values of the node's children in the same profile (``P``: profiles, for keys)."""
    key = node * P + prof
    par = parent[node]
    has = par >= 0
    child = pd.Series(inc[has]).groupby(par[has] * P + prof[has]).sum()
    return inc - child.reindex(key).fillna(0.0).to_numpy()


def _is_missing(v: Any) -> bool:
    try:
        return v is None or bool(pd.isna(v))
    except (TypeError, ValueError):
        return False


def _frame_name(attrs: Mapping[str, Any]) -> str:
    if "name" in attrs and not _is_missing(attrs["name"]):
        return str(attrs["name"])
    if "file" in attrs and "line" in attrs:
        return f"{os.path.basename(str(attrs['file']))}:{attrs['line']}"
    return ", ".join(f"{k}={v}" for k, v in attrs.items()) or "<unnamed>"


def _walk_graph(roots: Sequence[Any]) -> tuple[dict[int, int], list[int], list[dict[str, Any]]]:
    """Depth-first walk of Hatchet nodes from ``roots`` along ``.children``.

    Returns ``{id(hatchet node): index}``, the parent index of each node (-1 for
    roots) and its frame attributes, in walk order; each node once.
    """
    index: dict[int, int] = {}
    parent: list[int] = []
    frames: list[dict[str, Any]] = []
    stack = [(r, -1) for r in reversed(list(roots))]
    while stack:
        node, par = stack.pop()
        if id(node) in index:
            continue
        index[id(node)] = len(parent)
        parent.append(par)
        fr = getattr(node, "frame", None)
        attrs = getattr(fr, "attrs", fr)
        frames.append(dict(attrs) if isinstance(attrs, Mapping) else {"name": str(node)})
        me = index[id(node)]
        for c in reversed(list(getattr(node, "children", []) or [])):
            if id(c) not in index:
                stack.append((c, me))
    return index, parent, frames


def profile_files(mapping: Mapping[Any, Any], order: Sequence[Any]) -> list[Any]:
    """The file of each profile in ``order`` from Thicket's ``profile_mapping``
    (profile id -> file, or a one-element list of it); None where unmapped.

    >>> profile_files({"7": ["a.cali"], 9: "b.cali"}, [9, 7, 3])
    ['b.cali', 'a.cali', None]
    """
    files = {
        str(k): (v[0] if isinstance(v, list) and len(v) == 1 else v) for k, v in mapping.items()
    }
    return [files.get(str(p)) for p in order]


def assemble(
    parent: Sequence[int] | np.ndarray,
    names: Sequence[str],
    kinds: Sequence[str],
    attrs: pd.DataFrame | None,
    rows: pd.DataFrame,
    profile_cols: Sequence[str],
    exc: Sequence[str],
    inc: Sequence[str],
    *,
    profiles: pd.DataFrame | None = None,
    meta: Mapping[str, Any] | None = None,
    ensemble: bool = False,
    where: str = "dataframe",
    units: Mapping[str, Any] | None = None,
    rules: Mapping[str, Any] | None = None,
    sibling_key: Sequence[Any] | np.ndarray | None = None,
) -> Tree | Ensemble:
    """Build a Tree or an Ensemble from a graph and a Hatchet-style dataframe.

    ``rows`` has a column ``_row`` (index into ``parent``/``names``), the
    ``profile_cols`` and the metric columns; other columns become node columns
    where they are constant per node (the others are said in a warning).
    ``profiles`` (with the ``profile_cols`` as columns) fixes the order and
    extra columns of the profiles. Rules and units follow the metrics' names
    (module docstring); ``units`` and ``rules`` (metric -> unit / rule) that
    the source states win. ``sibling_key`` orders siblings. Shared by
    :func:`from_hatchet`, :func:`thicket_ensemble` (:func:`from_thicket`, the
    ``thicket-json`` reader) and the ``hatchet-json`` reader; errors are
    :class:`~cctviz.ProfileError` without a file (the reader names it).

    >>> rows = pd.DataFrame({"_row": [0, 1], "time (inc)": [5.0, 2.0]})
    >>> t = assemble([-1, 0], ["main", "f"], ["function"] * 2, None, rows, [], [], ["time (inc)"])
    >>> t.metrics["time"].tolist()
    [3.0, 2.0]
    """
    exc = [m for m in exc if m in rows.columns]
    inc = [m for m in inc if m in rows.columns]
    only_inc = [m for m in inc if inclusive_base(m) not in exc]
    for m in list(exc) + only_inc:
        if not pd.api.types.is_numeric_dtype(rows[m]):
            conv = pd.to_numeric(rows[m], errors="coerce")
            bad = conv.isna() & rows[m].notna()
            if bad.any():
                k = int(np.flatnonzero(bad.to_numpy())[0])
                raise ProfileError(
                    None, f"metric {m!r} holds {rows[m].iloc[k]!r}, not a number", f"{where}[{k}]"
                )
            rows = rows.assign(**{m: conv})
    meta = dict(meta or {})
    specs = _metric_specs(rows, exc, only_inc, _caliper_context(profiles, meta))
    for spec in specs:  # what the source states wins
        u = (units or {}).get(spec.name) or (units or {}).get(spec.attr)
        if canonical(u):
            spec.unit, spec.unit_reason = canonical(u), None
        r = (rules or {}).get(spec.name)
        if r is None and (rules or {}).get(spec.attr) == "none":
            # a per-node value stated under its own name ("BlockSize (inc)"): kept as it is
            r, spec.name, spec.inclusive = "none", spec.attr, False
        if r is not None:
            stated = check_aggregation({spec.name: r})[spec.name]
            if stated != spec.rule:  # the source's own rule wins, and the guess's note goes
                spec.rule, spec.note = stated, None
    names_out = [m.name for m in specs]
    if len(set(names_out)) != len(names_out):
        raise ProfileError(None, f"inclusive metrics {only_inc} clash with {list(exc)}", where)
    # node columns: frame attributes, then dataframe columns constant per node
    n_in = len(names)
    cols = attrs.copy() if attrs is not None else pd.DataFrame(index=range(n_in))
    skip = {"_row", "node", "name", *profile_cols, *exc, *inc, *HATCHET_IDS}
    rrow = rows["_row"].to_numpy(dtype=np.int64)
    dropped = []
    for c in rows.columns:
        if c in skip or c in cols.columns:
            continue
        try:
            nun = rows.groupby("_row")[c].nunique(dropna=True)
        except TypeError:  # unhashable values (lists): not a node attribute
            dropped.append(f"{c!r} (lists)")
            continue
        if (nun <= 1).all():
            first = rows[["_row", c]].dropna().drop_duplicates("_row").set_index("_row")[c]
            cols[c] = first.reindex(range(n_in)).astype(object).to_numpy()
        else:
            dropped.append(f"{c!r} (differs between rows of {int((nun > 1).sum())} node(s))")
    if dropped:
        warnings.warn(
            "columns that are neither metrics nor one value per node are not kept: "
            + ", ".join(dropped),
            stacklevel=3,
        )
    cols = cols.loc[:, [c for c in cols.columns if c not in ("name", "type", "kind")]]
    structure, new_id = Tree.from_parents_with_ids(
        np.asarray(parent, dtype=np.int64),
        np.asarray(names, dtype=object),
        None,
        kind=list(kinds),
        columns=cols if len(cols.columns) else None,
        sibling_key=sibling_key,
    )
    node = new_id[rrow]
    # profiles
    profile_cols = list(profile_cols)
    if profile_cols:
        keys = rows[profile_cols].reset_index(drop=True)
        if profiles is None:
            profiles = keys.drop_duplicates().reset_index(drop=True)
            try:
                profiles = profiles.sort_values(profile_cols).reset_index(drop=True)
            except TypeError:  # mixed types: first-appearance order
                pass
        lookup = profiles[profile_cols].reset_index(drop=True).reset_index()
        with warnings.catch_warnings():  # int ids against float ones: simply no match
            warnings.simplefilter("ignore", UserWarning)
            prof = keys.merge(lookup, on=profile_cols, how="left")["index"]
        if prof.isna().any():
            k = int(np.flatnonzero(prof.isna().to_numpy())[0])
            raise ProfileError(
                None, f"row of profile {keys.iloc[k].tolist()} not in the profile list", where
            )
        prof_id = prof.to_numpy(dtype=np.int64)
    else:
        prof_id = np.zeros(len(rows), dtype=np.int64)
        if profiles is None:
            profiles = pd.DataFrame(index=range(1))
    if specs:  # rows that only pad a dense frame (every metric NaN) carry nothing
        keep = ~np.all(np.isnan(np.column_stack([m.values for m in specs])), axis=1)
        node, prof_id = node[keep], prof_id[keep]
        for m in specs:
            m.values = m.values[keep]
    if not ensemble and len(profiles) <= 1:
        for c in profile_cols:
            v = profiles[c].iloc[0] if len(profiles) else None
            if not _is_missing(v):
                meta.setdefault(c, v.item() if hasattr(v, "item") else v)
    return build_metrics(structure, node, prof_id, profiles, specs, meta, ensemble=ensemble)


#: Hatchet's own node id column (its reader's numbering, not data)
HATCHET_IDS = ("nid",)
#: RAJAPerf's per-kernel constants (``any#any#max#...`` in its .cali files)
RAJAPERF_CONSTANTS = (
    "BlockSize",
    "Bytes/Rep",
    "Flops/Rep",
    "Iterations/Rep",
    "Kernels/Rep",
    "ProblemSize",
    "Reps",
)


def _caliper_context(profiles: pd.DataFrame | None, meta: Mapping[str, Any]) -> dict[str, bool]:
    """What the run metadata says about Caliper names: every profile from
    Caliper's ``spot`` channel (``cali.channel``), or from RAJAPerf."""

    def values(key: str) -> list[Any]:
        if profiles is not None and key in profiles.columns:
            return list(profiles[key])
        return [meta[key]] if key in meta else []

    channels = values("cali.channel")
    rajaperf = any(values(k) for k in ("perfsuite_version", "raja_version"))
    return {"spot": bool(channels) and all(c == "spot" for c in channels), "rajaperf": rajaperf}


def _metric_specs(
    rows: pd.DataFrame, exc: Sequence[str], only_inc: Sequence[str], ctx: Mapping[str, bool]
) -> list[MetricSpec]:
    """Rules and units of Hatchet/Thicket dataframe metrics, as far as their names say.

    A Caliper attribute name (``max#inclusive#sum#time.duration``) follows
    :func:`caliper_rule`; in a profile of Caliper's ``spot`` channel the
    aliases ``Min time/rank``, ``Max time/rank``, ``Avg time/rank`` (inclusive
    values, a minimum or an average kept per node) and ``Total time`` (an
    inclusive sum) are read so too, in seconds; in a RAJAPerf profile its
    per-kernel constants (``BlockSize``, ``Reps``...) are per node and
    ``Bytes/Rep`` in bytes. Other metrics add up (``"sum"``): exclusive ones
    as they are, inclusive-only ones as inclusive values. An inclusive metric
    is renamed to its exclusive counterpart (:func:`inclusive_base`) unless it
    is kept per node.
    """
    specs = []
    for m in list(exc) + list(only_inc):
        given_inc = m in only_inc
        attr = SPOT_ALIASES.get(m) if ctx.get("spot") else None
        cr = caliper_rule(attr or m)
        caliper = attr is not None or "#" in m and cr.base != m
        spec = MetricSpec(m, m, rows[m].to_numpy(dtype=np.float64), inclusive=given_inc)
        if caliper:
            spec.rule, spec.note = cr.rule, cr.note
            spec.inclusive = cr.inclusive or given_inc
        elif ctx.get("rajaperf") and m in RAJAPERF_CONSTANTS:
            spec.rule = "none"
            spec.note = (
                f"RAJAPerf's {m} is a per-kernel constant: it does not add up, kept per node"
            )
        if spec.inclusive and spec.rule != "none":
            spec.name = inclusive_base(m)
        if attr is not None:
            spec.unit = "s"
            spec.unit_reason = (
                f"no unit in the data; Caliper's spot channel writes {m!r} ({attr}) in seconds"
            )
        elif ctx.get("rajaperf") and m == "Bytes/Rep":
            spec.unit = "B"
            spec.unit_reason = "no unit in the data; RAJAPerf's Bytes/Rep is the bytes a kernel moves per repetition"
        specs.append(spec)
    # Caliper attributes by the name they had: Hatchet renames sum#time.duration to "time";
    # with other time.duration metrics beside it, "time" is that one
    attrs = {o.attr: o.attr for o in specs if "#" in o.attr}
    if any(caliper_rule(a).base == "time.duration" for a in attrs):
        for o in specs:
            if inclusive_base(o.attr) == "time" and "#" not in o.attr:
                attrs[o.attr] = "sum#time.duration"
    for spec in specs:
        if spec.unit or spec.attr not in attrs:
            continue
        base = caliper_rule(attrs[spec.attr]).base
        raw = [
            o.values
            for o in specs
            if o.attr in attrs
            and caliper_rule(attrs[o.attr]).base == base
            and is_raw_caliper(attrs[o.attr])
        ]
        spec.unit, spec.unit_reason = timer_unit(base, raw)
        if spec.unit and attrs[spec.attr] != spec.attr:
            spec.unit_reason = (
                f"{spec.attr!r} is Hatchet's name for Caliper's {attrs[spec.attr]} (other "
                f"time.duration metrics are beside it); {spec.unit_reason}"
            )
    return specs


def is_raw_caliper(attr: str) -> bool:
    """Whether a Caliper metric's values are sums or extremes of what was measured
    (they tell its unit; averages and ratios do not)."""
    ops = attr.split("#")[:-1]
    first = next((o for o in ops if CALIPER_OPS.get(o, "?") is not None), None)
    return first is None or first in ("sum", "min", "max", "count")


def _scalar_meta(d: Any) -> dict[str, Any]:
    if not isinstance(d, Mapping):
        return {}
    return {
        str(k): (v.item() if hasattr(v, "item") else v)
        for k, v in d.items()
        if isinstance(v, (str, int, float, bool, np.generic))
    }


def _graph_and_rows(
    obj: Any, what: str
) -> tuple[list[int], list[str], list[str], pd.DataFrame, pd.DataFrame, list[str]]:
    graph = getattr(obj, "graph", None)
    roots = getattr(graph, "roots", None)
    df = getattr(obj, "dataframe", None)
    if roots is None or not isinstance(df, pd.DataFrame):
        raise TypeError(f"{what}: expected an object with .graph.roots and .dataframe")
    if isinstance(df.columns, pd.MultiIndex):
        raise ValueError(f"{what}: a dataframe with MultiIndex columns is not supported")
    index, parent, frames = _walk_graph(roots)
    names = [_frame_name(f) for f in frames]
    kinds = [str(f.get("type", "function")) for f in frames]
    attrs = pd.DataFrame.from_records(
        [{k: v for k, v in f.items() if k not in ("name", "type")} for f in frames],
        index=range(len(frames)),
    )
    levels = [n for n in df.index.names]
    if "node" not in levels:
        raise ValueError(f"{what}: the dataframe index has no 'node' level ({levels})")
    rows = df.reset_index()
    pos = rows["node"].map(lambda n: index.get(id(n), -1)).to_numpy(dtype=np.int64)
    rows = rows.loc[pos >= 0].assign(_row=pos[pos >= 0]).drop(columns=["node"])
    rows = rows.reset_index(drop=True)
    others = [c for c in levels if c != "node"]
    return parent, names, kinds, attrs, rows, others


def from_hatchet(gf: Any) -> Tree | Ensemble:
    """A Hatchet ``GraphFrame`` as a cctviz Tree (or Ensemble, for a dataframe
    indexed by node and rank/thread).

    Reads ``gf.graph.roots``, the nodes' ``frame``/``children``,
    ``gf.dataframe``, ``gf.exc_metrics``, ``gf.inc_metrics`` (and ``gf.metadata``
    scalars into ``meta``); hatchet itself is not imported. See the module
    docstring for the rules (DAGs, names, inclusive-only metrics).

    >>> import hatchet, cctviz
    >>> gf = hatchet.GraphFrame.from_literal([{"frame": {"name": "main", "type": "function"},
    ...     "metrics": {"time": 1.0, "time (inc)": 3.0},
    ...     "children": [{"frame": {"name": "solve", "type": "function"},
    ...                   "metrics": {"time": 2.0, "time (inc)": 2.0}}]}])
    >>> t = cctviz.from_hatchet(gf)
    >>> t.nodes["name"].tolist(), t.metrics["time (inc)"].tolist()
    (['main', 'solve'], [3.0, 2.0])
    """
    parent, names, kinds, attrs, rows, others = _graph_and_rows(gf, "from_hatchet")
    # Hatchet lists Caliper's "Node order" among the metrics: it is a node attribute
    exc = [m for m in getattr(gf, "exc_metrics", None) or [] if m not in NOT_METRICS]
    inc = list(getattr(gf, "inc_metrics", None) or [])
    meta = _scalar_meta(getattr(gf, "metadata", None))
    return assemble(parent, names, kinds, attrs, rows, others, exc, inc, meta=meta)


def from_thicket(tk: Any) -> Ensemble:
    """A Thicket as a cctviz Ensemble: one profile per Thicket profile.

    Reads ``tk.graph``, ``tk.dataframe`` (indexed by node and profile),
    ``tk.exc_metrics``, ``tk.inc_metrics``, ``tk.metadata`` (one row per
    profile: the columns of ``ens.profiles``), ``tk.profile`` (order) and
    ``tk.profile_mapping`` (``profile_file``); thicket is not imported. Caliper's
    inclusive-only metrics come back as exclusive ones with the same inclusive
    values (module docstring).

    >>> import contextlib, io, json, cctviz
    >>> with contextlib.redirect_stdout(io.StringIO()):  # thicket prints a notice
    ...     import thicket
    >>> doc = json.load(open("../shared/data/thicket/example-json/user_ensemble.json"))
    >>> doc.setdefault("profile_idx_name", "profile")  # written by an older Thicket
    'profile'
    >>> tk = thicket.Thicket.from_json(json.dumps(doc))
    >>> ens = cctviz.from_thicket(tk)
    >>> ens.n_profiles, len(ens.tree), sorted(set(ens.profiles["user"]))[:3]
    (172, 29, ['alice', 'bob', 'carol'])
    """
    parent, names, kinds, attrs, rows, others = _graph_and_rows(tk, "from_thicket")
    pname = getattr(tk, "profile_idx_name", None) or (others[0] if others else "profile")
    if pname not in others:
        raise ValueError(f"from_thicket: the dataframe index has no {pname!r} level")
    order = getattr(tk, "profile", None)
    order = list(order) if order is not None and len(order) else list(pd.unique(rows[pname]))
    md = getattr(tk, "metadata", None)
    if isinstance(md, pd.DataFrame) and len(md.columns):
        md = md.reset_index()
        if pname not in md.columns:
            md = md.rename(columns={md.columns[0]: pname})
    else:
        md = None
    exc = list(getattr(tk, "exc_metrics", None) or [])
    inc = list(getattr(tk, "inc_metrics", None) or [])
    mapping = getattr(tk, "profile_mapping", None)
    return thicket_ensemble(parent, names, kinds, attrs, rows, pname, order, exc, inc, md, mapping)


def thicket_ensemble(
    parent: Sequence[int],
    names: Sequence[str],
    kinds: Sequence[str],
    attrs: pd.DataFrame | None,
    rows: pd.DataFrame,
    pname: str,
    order: Sequence[Any],
    exc: Sequence[str],
    inc: Sequence[str],
    metadata: pd.DataFrame | None = None,
    mapping: Any = None,
) -> Ensemble:
    """:func:`assemble` for a Thicket: one profile per id in ``order`` (column
    ``pname``), with the columns of ``metadata`` (a table with a ``pname``
    column; first row per id) and ``profile_file`` from ``mapping`` (Thicket's
    ``profile_mapping``). Shared by :func:`from_thicket` and the
    ``thicket-json`` reader.
    """
    profiles = pd.DataFrame({pname: list(order)})
    if metadata is not None:
        try:
            with warnings.catch_warnings():  # int ids against float ones: simply no match
                warnings.simplefilter("ignore", UserWarning)
                profiles = profiles.merge(metadata.drop_duplicates(pname), on=pname, how="left")
        except (TypeError, ValueError) as e:
            raise ProfileError(
                None, f"metadata profile ids do not match: {e}", "metadata"
            ) from None
    if isinstance(mapping, Mapping) and mapping:
        profiles["profile_file"] = profile_files(mapping, order)
    out = assemble(
        parent, names, kinds, attrs, rows, [pname], exc, inc, profiles=profiles, ensemble=True
    )
    assert isinstance(out, Ensemble)
    return out
