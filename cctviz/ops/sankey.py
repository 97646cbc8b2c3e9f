"""The ensemble Sankey's graph: call sites grouped into super nodes (modules).

The first brick of the ensemble Sankey view (CallFlow's design, made
deterministic; docs/architecture.md): this module builds the graph,
the view (to come) lays it out and draws it.

- Every node of the tree gets a group (:func:`group_labels`): a node attribute
  (``module``, ``file``), a call-path prefix depth, a list of regular
  expressions, a mapping or a callable. A node no rule matches goes to the
  catch-all group :data:`CATCH_ALL`; nothing prompts.
- Along each call path, consecutive nodes of one group form a segment; a super
  node is (group, how many segments of that group came before on the path), so
  a module that reappears later in a path is a new super node, and recursion
  within a module stays inside one. A segment never nests in another of the
  same super node, so an additive metric's super-node value is the sum of its
  segments' first nodes' inclusive values: exact, no double counting.
- Edges go from the super node of a segment's parent to the segment's, sized by
  the segment's inclusive value. Back edges (cycles across paths: A then B on
  one path, B then A on another) are broken deterministically: a depth-first
  search from the sources, children in order of first appearance.
- Columns are longest-path layers; edges spanning several columns pass through
  dummy nodes (:attr:`SankeyGraph.links`).

Everything is vectorised over the tree's nodes; only the super graph (a few
hundred nodes) is walked in Python.

Example:
    >>> import cctviz
    >>> t = cctviz.Tree.from_parents(
    ...     [-1, 0, 1, 1, 0], ["main", "solve", "MPI_Send", "MPI_Recv", "io"],
    ...     {"time": [1.0, 2.0, 3.0, 4.0, 5.0]})
    >>> g = module_graph(t, [("app", r"^(main|solve|io)$"), ("mpi", r"^MPI_")])
    >>> g.nodes[["group", "column", "value"]].to_dict("records")
    [{'group': 'app', 'column': 0, 'value': 15.0}, {'group': 'mpi', 'column': 1, 'value': 7.0}]
    >>> g.edges[["source", "target", "value"]].to_dict("records")
    [{'source': 0, 'target': 1, 'value': 7.0}]
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..model.ensemble import BaseEnsemble, Ensemble
from ..model.stats import node_stats
from ..model.tree import Tree

#: the group of call sites no rule matches
CATCH_ALL = "(other)"
#: ``group_by`` for the runtime's profiles: nn.Module path prefixes
NN_MODULE = "nn.Module"
#: how many module path segments :data:`NN_MODULE` keeps by default
NN_MODULE_DEPTH = 2
#: the group of the runtime's step contexts (warm-up, steps, outside steps)
STEPS = "(steps)"

GroupBy = (
    str  # a node attribute ("module", "file", "name"), or "nn.Module"
    | tuple[str, int]  # ("nn.Module", how many module path segments)
    | int  # the name of the ancestor at this depth (a call-path prefix)
    | Sequence[tuple[str, str]]  # (group, regular expression on the name), first match wins
    | Mapping[str, str]  # name -> group
    | Callable[[tuple[str, ...]], Any]  # call path -> group (None: catch-all)
)


def group_labels(tree: Tree, group_by: GroupBy) -> np.ndarray:
    """The group of every node of ``tree`` (object array of str).

    Example:
        >>> import cctviz
        >>> t = cctviz.Tree.from_parents([-1, 0, 1], ["main", "f", "MPI_Send"], {"time": [1.0, 1.0, 1.0]})
        >>> group_labels(t, {"main": "app", "f": "app"}).tolist()
        ['app', 'app', '(other)']
        >>> group_labels(t, 1).tolist()
        ['main', 'f', 'f']
    """
    n = len(tree)
    # object, not pandas 3's str dtype: Python's re (not RE2) and any name, lone surrogates too
    names = pd.Series(np.asarray(tree.names, dtype=object).astype(str), dtype=object)
    if group_by == NN_MODULE:
        return _module_paths(tree, NN_MODULE_DEPTH)
    if (
        isinstance(group_by, tuple)
        and len(group_by) == 2
        and group_by[0] == NN_MODULE
        and isinstance(group_by[1], (int, np.integer))
    ):
        if group_by[1] < 1:
            raise ValueError(f"group_by={group_by!r}: keep at least 1 module path segment")
        return _module_paths(tree, int(group_by[1]))
    if isinstance(group_by, str):
        if group_by not in tree.nodes.columns:
            cols = ", ".join(map(str, tree.nodes.columns))
            raise KeyError(f"group_by={group_by!r}: no such node attribute (there are: {cols})")
        col = tree.nodes[group_by]
        out = col.astype(object).where(col.notna() & (col.astype(str) != ""), CATCH_ALL)
        return out.astype(str).to_numpy(dtype=object)
    if isinstance(group_by, (int, np.integer)) and not isinstance(group_by, bool):
        d = int(group_by)
        if d < 0:
            raise ValueError(f"group_by={d}: a depth is 0 or more")
        # the ancestor at depth d (a node shallower than d is its own group)
        anc = np.arange(n)
        depth = np.asarray(tree.depth)
        parent = np.asarray(tree.parent)
        for _ in range(int(depth.max(initial=0)) - d):
            deeper = depth[anc] > d
            anc = np.where(deeper, parent[anc], anc)
        return names.to_numpy(dtype=object)[anc]
    if isinstance(group_by, Mapping):
        return names.map(lambda s: str(group_by.get(s, CATCH_ALL))).to_numpy(dtype=object)
    if callable(group_by):
        # call paths as name tuples, built in pre-order (a parent comes first)
        parent = np.asarray(tree.parent).tolist()
        name_list = names.tolist()
        paths: list[tuple[str, ...]] = []
        for i, p in enumerate(parent):
            paths.append((paths[p] if p >= 0 else ()) + (name_list[i],))
        out = [group_by(p) for p in paths]
        return np.array([CATCH_ALL if g is None else str(g) for g in out], dtype=object)
    rules = list(group_by)
    out = np.full(n, CATCH_ALL, dtype=object)
    todo = np.ones(n, dtype=bool)
    for k, rule in enumerate(rules):
        if not (isinstance(rule, tuple) and len(rule) == 2):
            raise TypeError(
                f"group_by rule {k}: expected (group, regular expression), got {rule!r}"
            )
        group, pattern = rule
        try:
            with warnings.catch_warnings():  # match groups in a user's pattern are fine
                warnings.simplefilter("ignore", UserWarning)
                hit = names.str.contains(pattern, regex=True).to_numpy(dtype=bool)
        except re.error as e:
            raise ValueError(
                f"group_by rule {k} ({group!r}): bad regular expression: {e}"
            ) from None
        take = hit & todo
        out[take] = str(group)
        todo &= ~take
    return out


def _module_paths(tree: Tree, keep: int) -> np.ndarray:
    """Groups of a runtime profile (``kind`` column): a module context's group
    is its nn.Module path (``GPT.blocks.0.attn``) cut to ``keep`` segments,
    and every context below it (submodules past the cut, collectives, ops)
    stays in it; above the modules, the root and each phase (``forward``,
    ``backward``...) are groups of their own, all steps one group
    (:data:`STEPS`), and other contexts join their parent's group."""
    if "kind" not in tree.nodes.columns:
        raise KeyError(
            f"group_by={NN_MODULE!r} needs the runtime's context kinds (a 'kind' column"
            " with 'module' contexts, as `cctviz run` writes); this profile has none"
        )
    kind = tree.nodes["kind"].astype(str).to_numpy(dtype=object)
    names = np.asarray(tree.names, dtype=object).astype(str)
    parent = np.asarray(tree.parent)
    is_mod = kind == "module"
    group = np.full(len(tree), CATCH_ALL, dtype=object)
    segs = np.zeros(len(tree), dtype=np.int64)  # module segments in the node's group
    for level in tree.levels:
        lv = np.asarray(level)
        p = parent[lv]
        has_p = p >= 0
        pg = np.where(has_p, group[np.maximum(p, 0)], CATCH_ALL)
        ps = np.where(has_p, segs[np.maximum(p, 0)], 0)
        mod = is_mod[lv]
        extend = mod & (ps > 0) & (ps < keep)
        start = mod & (ps == 0)
        g = pg.copy()
        g[extend] = pg[extend] + "." + names[lv[extend]]
        g[start] = names[lv[start]]
        s = ps + (extend | start)
        # above the modules: the root, the steps and each phase are groups
        top = ~mod & (ps == 0)
        k = kind[lv]
        g[top & (k == "step")] = STEPS
        own = top & (~has_p | (k == "phase"))
        g[own] = names[lv[own]]
        group[lv] = g
        segs[lv] = s
    return group


@dataclass(frozen=True)
class SankeyGraph:
    """A super graph: ``nodes`` (one row per super node: ``group``, ``occurrence``,
    ``column``, ``value`` (the node's height: the mean over the profiles in
    scope with absent = 0, so that flows add up), ``first`` (its first tree
    node), and for an ensemble the model's statistics (:func:`cctviz.model.stats.node_stats`:
    ``mean``, ``std``, ``min``, ``q25``, ``median``, ``q75``, ``max``,
    ``imbalance``, ``cost``, ``argmax`` as a profile id, ``n`` profiles counted)
    under the model's absence rule), ``edges`` (``source``,
    ``target``, ``value``; back edges marked ``back``), ``members`` (tree node
    -> super node, -1 for none), ``links`` (edges cut at every column they
    cross: ``source``, ``target`` as (super node or dummy) ids, with dummies
    numbered after the nodes; ``edge``: which forward edge), ``per_profile``
    (super nodes x live profiles values, NaN where a profile recorded none of
    the super node's call sites; an ensemble only), ``dummy_column`` (the
    column of each dummy)."""

    nodes: pd.DataFrame
    edges: pd.DataFrame
    members: np.ndarray
    links: pd.DataFrame
    per_profile: pd.DataFrame | None
    dummy_column: np.ndarray


def _segments(tree: Tree, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(starts, occurrence): the nodes that start a segment (their group differs
    from their parent's) and, per node, how many segments of its group start
    above it on its path (the k of its super node)."""
    parent = np.asarray(tree.parent)
    end = np.asarray(tree.end)
    n = len(tree)
    codes, uniq = pd.factorize(pd.Series(labels, dtype=object), sort=False)
    has_parent = parent >= 0
    starts = np.ones(n, dtype=bool)
    starts[has_parent] = codes[has_parent] != codes[parent[has_parent]]
    occurrence = np.zeros(n, dtype=np.int64)
    for c in range(len(uniq)):
        s = np.flatnonzero(starts & (codes == c))  # pre-order, so sorted
        if s.size == 0:
            continue
        e = np.sort(end[s])
        nodes = np.flatnonzero(codes == c)
        # segments of group c that contain the node: laminar intervals [s, end)
        inside = np.searchsorted(s, nodes, side="right") - np.searchsorted(e, nodes, side="right")
        # the node's own segment counts for a non-start only; occurrence = earlier ones
        occurrence[nodes] = inside - 1
    return starts, occurrence


def _break_back_edges(n_super: int, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Mask of back edges: a depth-first search from the sources (super nodes
    without incoming edges, in id order), children in id order (ids follow
    first appearance in pre-order)."""
    out: list[list[tuple[int, int]]] = [[] for _ in range(n_super)]
    indeg = np.zeros(n_super, dtype=np.int64)
    for k, (a, b) in enumerate(zip(src.tolist(), dst.tolist())):
        out[a].append((b, k))
        indeg[b] += 1
    for lst in out:
        lst.sort()
    back = np.zeros(src.size, dtype=bool)
    state = np.zeros(n_super, dtype=np.int8)  # 0 new, 1 on the stack, 2 done
    roots = [v for v in range(n_super) if indeg[v] == 0] + list(range(n_super))
    for r in roots:
        if state[r]:
            continue
        stack = [(r, iter(out[r]))]
        state[r] = 1
        while stack:
            v, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                state[v] = 2
                stack.pop()
                continue
            w, k = nxt
            if state[w] == 1:
                back[k] = True
            elif state[w] == 0:
                state[w] = 1
                stack.append((w, iter(out[w])))
    return back


def _columns(n_super: int, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Longest-path layer of each super node in the DAG (sources at 0)."""
    col = np.zeros(n_super, dtype=np.int64)
    indeg = np.bincount(dst, minlength=n_super)
    order = np.argsort(src, kind="stable")
    s_sorted, d_sorted = src[order], dst[order]
    bounds = np.searchsorted(s_sorted, np.arange(n_super + 1))
    ready = [v for v in range(n_super) if indeg[v] == 0]
    while ready:
        v = ready.pop()
        for w in d_sorted[bounds[v] : bounds[v + 1]].tolist():
            col[w] = max(col[w], col[v] + 1)
            indeg[w] -= 1
            if indeg[w] == 0:
                ready.append(w)
    return col


#: the group of call sites that profiles of several groups recorded (``group_by`` a profile column)
SHARED = "(shared)"


def _is_profile_column(ens: Ensemble, group_by: Any) -> bool:
    return (
        isinstance(group_by, str)
        and group_by not in ens.tree.nodes.columns
        and group_by in ens.profiles.columns
    )


def profile_group_labels(ens: Ensemble, column: str) -> np.ndarray:
    """Group call sites by who ran them: the value of the profiles' ``column``
    (a workflow's ``component``, a run's ``host``...) shared by every profile
    that recorded the call site or anything below it; :data:`SHARED` where
    profiles of several values did (the root of a workflow, a library both
    components call), :data:`CATCH_ALL` where no profile with a value did.

    Example:
        >>> import cctviz
        >>> sim = cctviz.Tree.from_parents([-1, 0], ["main", "stencil"], {"time": [1.0, 4.0]})
        >>> train = cctviz.Tree.from_parents([-1, 0], ["main", "forward"], {"time": [1.0, 3.0]})
        >>> ens = cctviz.Ensemble.from_trees([sim, train], profiles={"component": ["sim", "train"]})
        >>> dict(zip(ens.tree.names, profile_group_labels(ens, "component")))
        {'main': '(shared)', 'stencil': 'sim', 'forward': 'train'}
    """
    values = ens.profiles[column]
    codes, uniq = pd.factorize(values, sort=False)  # -1: no value
    if len(uniq) > 62:
        raise ValueError(f"group_by={column!r}: {len(uniq)} values; a Sankey groups at most 62")
    tree = ens.tree
    rows = ens.exclusive_rows
    code = codes[rows["profile"].to_numpy()]
    mask = np.zeros(len(tree), dtype=np.int64)  # bit k: a profile of value k recorded it
    have = code >= 0
    np.bitwise_or.at(mask, rows["node"].to_numpy()[have], np.left_shift(1, code[have]))
    parent = np.asarray(tree.parent)
    for level in reversed(tree.levels[1:]):  # what is recorded below counts for the parent
        lv = np.asarray(level)
        np.bitwise_or.at(mask, parent[lv], mask[lv])
    single = (mask != 0) & ((mask & (mask - 1)) == 0)
    which = np.log2(np.where(single, mask, 1)).astype(np.int64)
    out = np.full(len(tree), SHARED, dtype=object)
    out[single] = np.asarray([str(u) for u in uniq], dtype=object)[which[single]]
    out[mask == 0] = CATCH_ALL
    return out


#: below a profiles column's group, call sites group by name when a tree has at
#: most this many distinct names, else by their ancestor at depth 2
INNER_NAMES = 200


def within_groups(tree: Tree, labels: np.ndarray) -> np.ndarray:
    """Group labels of who ran each call site (:func:`profile_group_labels`) made
    a flow: the top of each group's subtree keeps the group's label (a workflow's
    component, on the left of the Sankey), the call sites below it are grouped
    within it, by name (``"train/forward"``; the node shows ``forward``), so
    each component's contexts flow from it. Shared and unrecorded sites keep
    their labels.

    Example:
        >>> import cctviz
        >>> sim = cctviz.Tree.from_parents([-1, 0, 1], ["sim.py", "step", "stencil"], {"time": [1.0, 1, 4]})
        >>> train = cctviz.Tree.from_parents([-1, 0, 1], ["train.py", "step", "forward"], {"time": [1.0, 1, 3]})
        >>> ens = cctviz.Ensemble.from_trees([sim, train], profiles={"component": ["sim", "train"]})
        >>> within_groups(ens.tree, profile_group_labels(ens, "component")).tolist()
        ['sim', 'sim/step', 'sim/stencil', 'train', 'train/step', 'train/forward']
    """
    labels = np.asarray(labels, dtype=object)
    parent = np.asarray(tree.parent)
    own = ~np.isin(labels, [SHARED, CATCH_ALL])
    parent_label = np.where(parent >= 0, labels[np.maximum(parent, 0)], None)
    below = own & (parent >= 0) & (parent_label == labels)
    if not below.any():
        return labels
    distinct = pd.Series(np.asarray(tree.names, dtype=object)).nunique()
    inner = group_labels(tree, "name" if distinct <= INNER_NAMES else 2)
    out = labels.copy()
    out[below] = labels[below] + "/" + inner[below].astype(str)
    return out


def module_graph(
    data: Tree | Ensemble, group_by: GroupBy = "module", metric: str | None = None
) -> SankeyGraph:
    """The Sankey super graph of a Tree or an Ensemble (see the module docstring).

    Args:
        data: a Tree, or an Ensemble (values per profile; ``value`` is their mean
            over the live profiles).
        group_by: how call sites group (see :func:`group_labels`).
        metric: an additive inclusive metric (default the tree's ``time (inc)``).

    Raises:
        ValueError: the metric does not add up (a max, min or exclusive one:
            a super node's value would not be the sum of its segments).
    """
    ens = data if isinstance(data, BaseEnsemble) else None
    tree = ens.tree if ens is not None else data
    metric = metric or "time (inc)"
    if metric not in tree.metrics:
        raise KeyError(
            f"metric {metric!r}: not a metric of this profile ({', '.join(tree.metrics)})"
        )
    if not tree.is_additive(metric):
        raise ValueError(
            f"metric {metric!r} does not add up under a parent (rule {tree.rule(metric)!r}):"
            " a Sankey needs an additive inclusive metric such as 'time (inc)'"
        )
    if ens is not None and _is_profile_column(ens, group_by):
        labels = within_groups(tree, profile_group_labels(ens, str(group_by)))
    else:
        labels = group_labels(tree, group_by)
    starts, occ = _segments(tree, labels)
    parent = np.asarray(tree.parent)

    # super node of each node: its segment start's (group, occurrence), ids by first appearance
    seg_start = np.where(starts, np.arange(len(tree)), -1)
    # propagate the segment start down (pre-order: a parent comes first)
    for level in tree.levels[1:]:
        lv = np.asarray(level)
        inherit = ~starts[lv]
        seg_start[lv[inherit]] = seg_start[parent[lv[inherit]]]
    key = pd.MultiIndex.from_arrays([labels[seg_start], occ[seg_start]])
    members, uniq = pd.factorize(key, sort=False)
    members = members.astype(np.int64)
    n_super = len(uniq)
    first = np.unique(members, return_index=True)[1]  # codes follow first appearance

    s_nodes = np.flatnonzero(starts)
    inc = np.nan_to_num(tree.metrics[metric].to_numpy(dtype=np.float64)) if ens is None else None
    if ens is not None:
        live = np.asarray(ens.live, dtype=bool)
        seg = np.full(len(tree), -1, dtype=np.int64)
        seg[s_nodes] = members[s_nodes]
        # a profile that recorded none of a super node's call sites has no value
        # there (NaN: the model's absence rule decides whether it counts as 0)
        per_prof = ens.group_sums(metric, seg, n_super)
        per_profile = pd.DataFrame(per_prof[:, live], columns=np.flatnonzero(live))
        seg_value = ens.live_mean(metric)
    else:
        per_profile = None
        seg_value = inc
    value = np.zeros(n_super)
    np.add.at(value, members[s_nodes], seg_value[s_nodes])

    # edges: from the parent's super node to each segment start's
    child = s_nodes[parent[s_nodes] >= 0]
    e = pd.DataFrame(
        {"source": members[parent[child]], "target": members[child], "value": seg_value[child]}
    )
    edges = e.groupby(["source", "target"], sort=True, as_index=False)["value"].sum()
    src = edges["source"].to_numpy(dtype=np.int64)
    dst = edges["target"].to_numpy(dtype=np.int64)
    back = _break_back_edges(n_super, src, dst)
    edges["back"] = back
    column = _columns(n_super, src[~back], dst[~back])

    nodes = pd.DataFrame(
        {
            "group": [str(g) for g in uniq.get_level_values(0)],
            "occurrence": np.asarray(uniq.get_level_values(1), dtype=np.int64),
            "column": column,
            "value": value,
            "first": first,
            "members": np.bincount(members, minlength=n_super),
        }
    )
    if ens is not None:
        nodes = nodes.join(_super_stats(ens, per_profile))

    links, dummy_column = _links(n_super, edges, column)
    return SankeyGraph(
        nodes=nodes,
        edges=edges,
        members=members,
        links=links,
        per_profile=per_profile,
        dummy_column=dummy_column,
    )


def _super_stats(ens: Ensemble, per_profile: pd.DataFrame) -> pd.DataFrame:
    """The model's statistics of each super node over the profiles of ``per_profile``."""
    pids = np.asarray(per_profile.columns, dtype=np.int64)
    v = per_profile.to_numpy(dtype=np.float64)
    node, col = np.nonzero(~np.isnan(v))
    st = node_stats(
        node,
        col,
        v[node, col],
        v.shape[0],
        live=np.ones(pids.size, dtype=bool),
        run=ens.absence_groups[pids],
    )
    arg = st["argmax"].to_numpy()
    st["argmax"] = np.where(arg >= 0, pids[np.maximum(arg, 0)], -1) if pids.size else -1
    return st.drop(columns=["count"])


def _links(
    n_super: int, edges: pd.DataFrame, column: np.ndarray
) -> tuple[pd.DataFrame, np.ndarray]:
    """Forward edges cut at every column they cross (dummy ids from ``n_super``
    on; ``edge``: the forward edge's position among the forward edges), and the
    column of every dummy."""
    fwd = edges[~edges["back"]]
    rows = []
    dummy_column: list[int] = []
    nxt = n_super
    for k, (s, t, v) in enumerate(
        zip(fwd["source"].tolist(), fwd["target"].tolist(), fwd["value"].tolist())
    ):
        span = int(column[t] - column[s])
        chain = [s] + list(range(nxt, nxt + span - 1)) + [t]
        dummy_column += range(int(column[s]) + 1, int(column[s]) + span)
        nxt += max(span - 1, 0)
        for a, b in zip(chain[:-1], chain[1:]):
            rows.append((a, b, v, s, t, k))
    links = pd.DataFrame(
        rows, columns=["source", "target", "value", "edge_source", "edge_target", "edge"]
    )
    return links, np.asarray(dummy_column, dtype=np.int64)
