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

Choices: inclusive values are derived (they equal the file's inclusive
``sum``); the ``min``/``max``/``mean``/``stddev``/``sqr`` statistics are left out
because they do not add up over a subtree. Every (rank, thread) pair is one
profile: several give an :class:`~cctviz.Ensemble` with ``rank``, ``thread``
(and ``pid``) columns in ``ens.profiles``, one gives a Tree with those in
``meta``. Units come from ``unit_repr`` (``sec`` -> ``s``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import ProfileError
from ..model.ensemble import Ensemble
from ..model.tree import Tree
from . import register
from ._json import expect, load_json

_SNIFF = re.compile(rb'^\s*\{\s*"timemory"\s*:')
UNIT = {"sec": "s", "msec": "ms", "usec": "us", "nsec": "ns", "s": "s", "ms": "ms", "us": "us"}

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


def _sum_values(path: Path, stats: Any, where: str) -> list[float] | float:
    expect(path, isinstance(stats, dict) and "sum" in stats, where, "expected stats with a 'sum'")
    s = stats["sum"]
    if isinstance(s, list):
        ok = all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in s)
        expect(path, ok, f"{where}.sum", "expected a list of numbers")
        return [float(x) for x in s]
    if isinstance(s, dict):
        vals = list(s.values())
        ok = all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in vals)
        expect(path, ok, f"{where}.sum", "expected numbers")
        return [float(x) for x in vals]
    expect(
        path,
        isinstance(s, (int, float)) and not isinstance(s, bool),
        f"{where}.sum",
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
    metric_order: list[str] = []
    for c_idx, (cname, cdata) in enumerate(comps.items()):
        cw = f"timemory[{cname!r}]"
        expect(path, isinstance(cdata, dict), cw, "expected a component object")
        comp = str(cname).replace("tim::", "").replace("component::", "").lower()
        unit = UNIT.get(str(cdata.get("unit_repr", "")).lower(), cdata.get("unit_repr") or None)
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
                        vals = _sum_values(path, exc.get("stats"), f"{nw}.exclusive.stats")
                        row: dict[str, float] = {}
                        if isinstance(vals, list):
                            for lab, v in zip(_labels(cdata.get("type"), len(vals), comp), vals):
                                row[f"sum.{lab}"] = v
                        else:
                            row[f"sum.{comp}"] = vals
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
                            if unit and m != "count":
                                units[m] = unit
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
    vals = pd.DataFrame.from_records(rec_vals, columns=metric_order).fillna(0.0)
    node = new_id[np.asarray(rec_node, dtype=np.int64)]
    prof = np.asarray(rec_prof, dtype=np.int64)
    meta: dict[str, Any] = {"units": units} if units else {}
    keys = list(prof_of)
    pids = [prof_pid[k].pop() if len(prof_pid[k]) == 1 else None for k in range(len(keys))]
    ranks_known = any(k[0] is not None for k in keys)
    threads_known = any(k[1] is not None for k in keys)
    if len(keys) == 1:
        rank, tid = keys[0]
        for k, v in (("rank", rank), ("thread", tid), ("pid", pids[0])):
            if v is not None:
                meta[k] = v
        n = len(structure)
        tm = pd.DataFrame(
            {
                m: np.bincount(node, weights=vals[m].to_numpy(np.float64), minlength=n)
                for m in metric_order
            }
        )
        return Tree(structure.nodes, tm, meta, _trusted=True)
    profiles = pd.DataFrame(index=range(len(keys)))
    if ranks_known:
        profiles["rank"] = [k[0] for k in keys]
    if threads_known:
        profiles["thread"] = pd.Series([k[1] for k in keys], dtype=object)
    if any(p is not None for p in pids):
        profiles["pid"] = pids
    long = pd.DataFrame({"node": node, "profile": prof})
    for m in metric_order:
        long[m] = vals[m].to_numpy(np.float64)
    return Ensemble(Tree(structure.nodes, None, meta, _trusted=True), long, profiles, meta)
