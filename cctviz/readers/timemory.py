"""timemory's JSON call trees (``*.tree.json``).

Format facts: ``{"timemory": {COMPONENT: {...}}}`` with one entry per
component (``WALL_CLOCK``, ``CPU_CLOCK``, PAPI arrays, ...). A component holds
its ``properties``, ``unit_repr`` (``sec``), ``type`` (the label(s) of its
value) and the trees: ``graph`` (no MPI) or ``mpi`` / ``upc`` / ``upcxx``: a
list with one entry per rank, each a list of root nodes (or one node). A node
is ``{"node": {"hash", "prefix", "tid", "pid", "inclusive": {"entry": {"laps"},
"stats": {"sum", "min", ...}}, "exclusive": {...}}, "children": [...]}``;
``hash == 0`` marks a dummy node (the per-rank root) whose children belong to
its parent.

As Hatchet's ``from_timemory`` does: node names come from the prefix
(``func@file:line/tail`` gives ``func/tail`` with ``file`` and ``line`` node
attributes, ``label  [func/file:line]`` gives ``label``, ``[func][file]`` gives
``func``; other prefixes are the name as they are); nodes of one call path
are one node; metric ``sum.<component>`` is the exclusive ``sum`` statistic
(vector components give ``sum.<label>`` per label) and ``count`` the number of
laps; ``upc``/``upcxx`` ranks follow the MPI ranks. A node whose thread id is
a list (values aggregated over threads) gets the thread ``"1,2"``.

Choices: every component has an aggregation rule (:data:`RULES`, in
``meta["aggregation"]``) by what it measures, and the rule picks the
statistic a node keeps:

- ``"sum"`` (clocks, CPU times, counts, bytes, changes in memory): metric
  ``sum.<component>``, the exclusive ``sum`` over laps; inclusive values are
  derived (they equal the file's inclusive ``sum``);
- ``"max"`` (``peak_rss``, ``current_peak_rss``: high-water marks): metric
  ``max.<component>``, the highest inclusive value of a lap; a subtree's
  maximum is then its root's;
- ``"none"`` (``cpu_util`` and the other utilisations: ratios): metric
  ``mean.<component>``, the mean inclusive value of a lap, per node only;
- a component not in the table is taken as a sum (timemory itself derives
  its exclusive values by subtraction), and ``meta["aggregation_notes"]``
  says so.

The other statistics (``min``, ``stddev``, ``sqr``, and for a sum the
inclusive ones, which the tree derives) are not kept. Records of one call
path (one per component, or the same path twice) are merged by each
metric's rule. Every (rank, thread) pair is one profile: several give an
:class:`~cctviz.Ensemble` with ``rank``, ``thread`` (and ``pid``) columns in
``ens.profiles``, one gives a Tree with those in ``meta``. Units are the
file's ``unit_repr`` (``sec`` -> ``s``, ``MB`` (decimal, as timemory's
``units.hpp`` defines it), ``%``...; ``psec`` become ``ns``, ``csec``/``dsec``
``ms``).
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import ProfileError
from ..model.ensemble import Ensemble
from ..model.tree import Tree
from ..model.units import canonical
from . import register
from ._json import expect, load_json

_SNIFF = re.compile(rb'^\s*\{\s*"timemory"\s*:')
#: timemory's ``unit_repr`` -> (cctviz unit, factor to it) where it differs from
#: :func:`cctviz.model.units.canonical` (timemory's KB/MB/GB are decimal, as cctviz's)
UNIT = {"psec": ("ns", 1e-3), "csec": ("ms", 10.0), "dsec": ("ms", 100.0), "UNK": (None, 1.0)}

#: aggregation rule of a component (its ``properties.id``), from what it measures
#: (timemory/components/*/components.hpp). Clocks, rusage times, counts (page
#: faults, context switches, I/O operations), bytes read/written and changes in
#: memory (``page_rss``, ``virtual_memory``: the change over the region) add
#: up over a subtree; ``peak_rss`` and ``current_peak_rss`` are high-water
#: marks (a subtree's peak is its root's); utilisations are ratios.
RULES: dict[str, str] = {
    **dict.fromkeys(
        (
            "wall_clock",
            "system_clock",
            "user_clock",
            "cpu_clock",
            "monotonic_clock",
            "monotonic_raw_clock",
            "thread_cpu_clock",
            "process_cpu_clock",
            "user_mode_time",
            "kernel_mode_time",
            "num_io_in",
            "num_io_out",
            "num_minor_page_faults",
            "num_major_page_faults",
            "voluntary_context_switch",
            "priority_context_switch",
            "read_bytes",
            "written_bytes",
            "read_char",
            "written_char",
            "page_rss",
            "virtual_memory",
            "trip_count",
            "papi_array",
            "papi_vector",
            "cuda_event",
            "cupti_activity",
        ),
        "sum",
    ),
    "peak_rss": "max",
    "current_peak_rss": "max",
    "cpu_util": "none",
    "process_cpu_util": "none",
    "thread_cpu_util": "none",
}
#: the statistic a rule takes from a node (``sum`` of the exclusive values over
#: laps; the highest inclusive value of a lap; the mean inclusive value of a lap)
STAT = {"sum": ("sum", "exclusive"), "max": ("max", "inclusive"), "none": ("mean", "inclusive")}

# prefix conventions, tried in order (see the module docstring)
_BRACKETS = re.compile(r"^\[(?P<func>.*)\]\[(?P<file>.*)\]$")
_LABELLED = re.compile(r"(?P<head>.+)[ \t]+\[(?P<func>\S+)/(?P<file>\S+):(?P<line>[0-9]+)\]$")
_FILE_LINE = re.compile(r"(?P<func>\S+)[@/](?P<file>\S+):(?P<line>[0-9]+)/*(?P<tail>.*)")
_FILE_TAIL = re.compile(r"(?P<func>\S+)[@/](?P<file>\S+)/(?P<tail>.*)")
_LINE_TAIL = re.compile(r"(?P<func>\S+):(?P<line>[0-9]+)/*(?P<tail>.*)")


def looks_like_timemory(h: bytes) -> bool:
    """Whether a file's first bytes open a timemory document (``{"timemory": ...``);
    also used by the ``hatchet-json`` sniffer, since a non-MPI tree has a ``graph`` key."""
    return bool(_SNIFF.match(h))


def _sniff(path: Path, h: bytes) -> bool:
    return looks_like_timemory(h)


def parse_prefix(prefix: str) -> tuple[str, str | None, int | None]:
    """(name, file, line) of a timemory node prefix.

    >>> parse_prefix("generate_history@hatchet_tests.cpp:114/outer-loop-0")
    ('generate_history/outer-loop-0', 'hatchet_tests.cpp', 114)
    >>> parse_prefix("generate_history/do-sleep")
    ('generate_history/do-sleep', None, None)
    """
    if m := _BRACKETS.search(prefix):
        return m["func"], m["file"], None
    if m := _LABELLED.search(prefix):
        return m["head"].rstrip(), m["file"], int(m["line"])
    for pat in (_FILE_LINE, _FILE_TAIL, _LINE_TAIL):
        if m := pat.search(prefix):
            g = m.groupdict()
            name = g["func"] + (f"/{g['tail']}" if g.get("tail") else "")
            return name, g.get("file"), int(g["line"]) if g.get("line") else None
    return prefix, None, None


def _ids(v: Any) -> Any:
    """A tid/pid entry: an int, or ``"1,2"`` for a list of several."""
    if isinstance(v, list):
        if len(v) == 1:
            return int(v[0])
        return ",".join(str(int(x)) for x in v)
    return None if v is None else int(v)


def _labels(kind: Any, size: int, comp: str) -> list[str]:
    if isinstance(kind, dict):
        kind = list(kind)
    if isinstance(kind, (list, tuple)) and len(kind) == size:
        return [str(x).strip().replace(" ", "-").replace("_", "-") for x in kind]
    return [f"{comp}.{i}" for i in range(size)]


def _unit(repr_: Any) -> tuple[str | None, float]:
    """(unit, factor) of a ``unit_repr`` string."""
    if not isinstance(repr_, str) or not repr_.strip():
        return None, 1.0
    r = repr_.strip()
    if r in UNIT:
        return UNIT[r]
    return canonical(r), 1.0


def _component_id(cname: str, cdata: dict) -> str:
    props = cdata.get("properties")
    if isinstance(props, dict) and isinstance(props.get("id"), str) and props["id"]:
        return props["id"].lower()
    return str(cname).replace("tim::", "").replace("component::", "").lower()


def _stat_values(path: Path, stats: Any, stat: str, where: str) -> list[float] | float:
    expect(
        path, isinstance(stats, dict) and stat in stats, where, f"expected stats with a '{stat}'"
    )
    s = stats[stat]
    if isinstance(s, list):
        ok = all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in s)
        expect(path, ok, f"{where}.{stat}", "expected a list of numbers")
        return [float(x) for x in s]
    if isinstance(s, dict):
        vals = list(s.values())
        ok = all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in vals)
        expect(path, ok, f"{where}.{stat}", "expected numbers")
        return [float(x) for x in vals]
    expect(
        path,
        isinstance(s, (int, float)) and not isinstance(s, bool),
        f"{where}.{stat}",
        f"expected a number, got {s!r}",
    )
    return float(s)


@register("timemory", _sniff, "timemory JSON call tree (*.tree.json)")
def read_timemory(path: Path) -> Tree | Ensemble:
    """Read a timemory ``*.tree.json``; several ranks/threads give an Ensemble.

    >>> import cctviz
    >>> ens = cctviz.read("../shared/data/hatchet/timemory/wall.tree.json")
    >>> ens.n_profiles, len(ens.tree), ens.profiles["rank"].tolist()
    (2, 14, [0, 1])
    >>> ens.exc_metrics, ens.tree.units
    (['sum.wall_clock', 'count'], {'sum.wall_clock': 's'})
    """
    doc = load_json(path)
    expect(path, isinstance(doc, dict) and "timemory" in doc, "top level", "expected {'timemory'}")
    comps = doc["timemory"]
    expect(
        path,
        isinstance(comps, dict) and len(comps) > 0,
        "timemory",
        "expected an object of components",
    )
    node_of: dict[tuple[str, ...], int] = {}
    parent: list[int] = []
    names: list[str] = []
    files: list[str | None] = []
    lines: list[float] = []
    prof_of: dict[tuple[Any, Any], int] = {}
    prof_pid: dict[int, set] = {}
    rec_node: list[int] = []
    rec_prof: list[int] = []
    rec_vals: list[dict[str, float]] = []
    units: dict[str, str] = {}
    rules: dict[str, str] = {"count": "sum"}
    notes: dict[str, str] = {}
    metric_order: list[str] = []
    for c_idx, (cname, cdata) in enumerate(comps.items()):
        cw = f"timemory[{cname!r}]"
        expect(path, isinstance(cdata, dict), cw, "expected a component object")
        comp = _component_id(cname, cdata)
        rule = RULES.get(comp, "sum")
        stat, side = STAT[rule]
        reprs = cdata.get("unit_repr")
        mpi_size = cdata.get("mpi_size")
        parts: list[tuple[str, Any, int | None]] = []
        if "graph" in cdata:
            parts.append(("graph", cdata["graph"], None))
        else:
            if "mpi" in cdata:
                parts.append(("mpi", cdata["mpi"], 0))
            offset = int(mpi_size) if isinstance(mpi_size, int) else 0
            for key in ("upc", "upcxx"):
                if key in cdata:
                    parts.append((key, cdata[key], offset))
                    break
        expect(path, bool(parts), cw, "expected a 'graph', 'mpi', 'upc' or 'upcxx' list")
        for key, ranks, base in parts:
            expect(path, isinstance(ranks, list), f"{cw}.{key}", "expected a list per rank")
            for r, rdata in enumerate(ranks):
                rank = None if base is None else base + r
                roots = rdata if isinstance(rdata, list) else [rdata]
                stack: list[tuple[Any, int, tuple[str, ...], str]] = [
                    (d, -1, (), f"{cw}.{key}[{r}][{j}]")
                    for j, d in reversed(list(enumerate(roots)))
                ]
                while stack:
                    d, par, cpath, where = stack.pop()
                    expect(
                        path,
                        isinstance(d, dict) and isinstance(d.get("node"), dict),
                        where,
                        "expected {'node': {...}, 'children': [...]}",
                    )
                    nd = d["node"]
                    kids = d.get("children", [])
                    expect(path, isinstance(kids, list), f"{where}.children", "expected a list")
                    me, mypath = par, cpath
                    if nd.get("hash") != 0:
                        nw = f"{where}.node"
                        expect(
                            path,
                            isinstance(nd.get("prefix"), str),
                            nw,
                            "expected a 'prefix' string",
                        )
                        name, file_, line = parse_prefix(nd["prefix"])
                        mypath = cpath + (name,)
                        me = node_of.get(mypath, -1)
                        if me < 0:
                            me = node_of[mypath] = len(names)
                            parent.append(par)
                            names.append(name)
                            files.append(file_)
                            lines.append(np.nan if line is None else float(line))
                        inc, exc = nd.get("inclusive"), nd.get("exclusive")
                        expect(
                            path,
                            isinstance(inc, dict) and isinstance(exc, dict),
                            nw,
                            "expected 'inclusive' and 'exclusive' objects",
                        )
                        src = exc if side == "exclusive" else inc
                        vals = _stat_values(path, src.get("stats"), stat, f"{nw}.{side}.stats")
                        row: dict[str, float] = {}
                        vec = vals if isinstance(vals, list) else [vals]
                        labs = (
                            _labels(cdata.get("type"), len(vec), comp)
                            if isinstance(vals, list)
                            else [comp]
                        )
                        for k, (lab, v) in enumerate(zip(labs, vec)):
                            m = f"{stat}.{lab}"
                            r_ = reprs[k] if isinstance(reprs, list) and k < len(reprs) else reprs
                            unit, scale = _unit(r_)
                            row[m] = v * scale
                            rules[m] = rule
                            if unit:
                                units[m] = unit
                            if comp not in RULES:
                                notes[m] = (
                                    f"timemory component {comp!r} is not in cctviz's table: "
                                    "taken as a sum, as timemory's own exclusive values "
                                    "(inclusive minus the children's) take it"
                                )
                        if c_idx == 0:  # laps: counted once, not once per component
                            laps = (inc.get("entry") or {}).get("laps", 0)
                            expect(
                                path,
                                isinstance(laps, (int, float)) and not isinstance(laps, bool),
                                f"{nw}.inclusive.entry.laps",
                                f"expected a number, got {laps!r}",
                            )
                            row["count"] = float(laps)
                        for m in row:
                            if m not in metric_order:
                                metric_order.append(m)
                        try:
                            tid, pid = _ids(nd.get("tid")), _ids(nd.get("pid"))
                        except (TypeError, ValueError):
                            raise ProfileError(
                                path, "expected integer 'tid' and 'pid' (or lists)", where=nw
                            ) from None
                        pk = (rank, tid)
                        prof = prof_of.setdefault(pk, len(prof_of))
                        prof_pid.setdefault(prof, set()).add(pid)
                        rec_node.append(me)
                        rec_prof.append(prof)
                        rec_vals.append(row)
                    for j in range(len(kids) - 1, -1, -1):
                        stack.append((kids[j], me, mypath, f"{where}.children[{j}]"))
    if not names:
        raise ProfileError(path, "no (non-dummy) node in any component", where="timemory")
    columns: dict[str, Any] = {}
    if any(f is not None for f in files):
        columns["file"] = np.asarray(files, dtype=object)
    if not np.isnan(lines).all():
        columns["line"] = np.array([None if np.isnan(x) else int(x) for x in lines], dtype=object)
    structure, new_id = Tree.from_parents_with_ids(
        parent, names, None, kind="region", columns=columns or None
    )
    recs = pd.DataFrame.from_records(rec_vals, columns=metric_order)
    recs["node"] = new_id[np.asarray(rec_node, dtype=np.int64)]
    recs["profile"] = np.asarray(rec_prof, dtype=np.int64)
    long = _combine(path, recs, metric_order, rules)
    meta: dict[str, Any] = {"units": units} if units else {}
    meta["aggregation"] = {m: rules[m] for m in metric_order}
    if notes:
        meta["aggregation_notes"] = notes
    keys = list(prof_of)
    several = [keys[k] for k in range(len(keys)) if len(prof_pid[k]) > 1]
    if several:
        warnings.warn(
            f"{path}: several process ids for (rank, thread) {several[:3]}: "
            "their 'pid' is left empty",
            stacklevel=3,
        )
    pids = [next(iter(prof_pid[k])) if len(prof_pid[k]) == 1 else None for k in range(len(keys))]
    ranks_known = any(k[0] is not None for k in keys)
    threads_known = any(k[1] is not None for k in keys)
    if len(keys) == 1:
        rank, tid = keys[0]
        for k, v in (("rank", rank), ("thread", tid), ("pid", pids[0])):
            if v is not None:
                meta[k] = v
        n = len(structure)
        tm = pd.DataFrame(index=range(n))
        for m in metric_order:
            col = np.full(n, 0.0 if rules[m] == "sum" else np.nan)
            col[long["node"].to_numpy()] = long[m].to_numpy(np.float64)
            tm[m] = col
        return Tree(structure.nodes, tm, meta, _trusted=True)
    profiles = pd.DataFrame(index=range(len(keys)))
    if ranks_known:
        profiles["rank"] = [k[0] for k in keys]
    if threads_known:
        profiles["thread"] = pd.Series([k[1] for k in keys], dtype=object)
    if any(p is not None for p in pids):
        profiles["pid"] = pids
    return Ensemble(Tree(structure.nodes, None, meta, _trusted=True), long, profiles, meta)


def _combine(
    path: Path, recs: pd.DataFrame, metrics: list[str], rules: dict[str, str]
) -> pd.DataFrame:
    """One row per (node, profile): the records of one call path (several
    components; the same path twice) combined by each metric's rule."""
    g = recs.groupby(["node", "profile"], sort=True)
    out = g.size().reset_index()[["node", "profile"]]
    for m in metrics:
        rule = rules[m]
        if rule == "sum":
            out[m] = g[m].sum(min_count=0).to_numpy()
        elif rule in ("max", "min"):
            out[m] = g[m].agg(rule).to_numpy()
        else:  # a per-node value: the one given; different ones are no value
            first = g[m].first().to_numpy()
            differ = g[m].nunique().to_numpy() > 1
            if differ.any():
                warnings.warn(
                    f"{path}: {m!r} has different values for one call path in "
                    f"{int(differ.sum())} places; those are left empty",
                    stacklevel=4,
                )
            out[m] = np.where(differ, np.nan, first)
    return out
