"""The ensemble Sankey's super graph (cctviz.ops.sankey) against a brute-force
walk of every call path, on random trees and on the 64-rank Kripke profile."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import cctviz
from cctviz.ops.sankey import CATCH_ALL, group_labels, module_graph
from tests.conftest import DATA

KRIPKE = DATA / "hatchet-tutorial" / "hpctoolkit-kripke-database-2589696"


def brute_keys(tree, labels) -> list[tuple[str, int]]:
    """(group, occurrence) of every node, walking its call path from the root."""
    out = []
    for i in range(len(tree)):
        path = []
        a = i
        while a >= 0:
            path.append(a)
            a = int(tree.parent[a])
        path.reverse()
        segs: list[str] = []
        for a in path:
            if (
                not segs
                or labels[a] != segs[-1]
                or (a != path[0] and labels[tree.parent[a]] != labels[a])
            ):
                segs.append(labels[a])
        g = segs[-1]
        out.append((g, segs.count(g) - 1))
    return out


def random_tree(seed: int, n: int = 300, groups: int = 4):
    rng = np.random.default_rng(seed)
    parent = np.concatenate([[-1], rng.integers(0, np.arange(1, n))])
    names = [f"g{rng.integers(groups)}_{i}" for i in range(n)]
    return cctviz.Tree.from_parents(parent, names, {"time": rng.random(n)})


@pytest.mark.parametrize("seed", range(6))
def test_super_nodes_match_a_walk_of_every_path(seed):
    t = random_tree(seed)
    by = [(f"G{k}", rf"^g{k}_") for k in range(3)]  # g3 falls to the catch-all
    labels = group_labels(t, by)
    assert set(labels) <= {"G0", "G1", "G2", CATCH_ALL} and CATCH_ALL in set(labels)
    g = module_graph(t, by)
    keys = brute_keys(t, labels)
    got = list(
        zip(g.nodes["group"].to_numpy()[g.members], g.nodes["occurrence"].to_numpy()[g.members])
    )
    assert got == keys
    # a super node's value: the inclusive values of its segments' first nodes, summed
    inc = t.metrics["time (inc)"].to_numpy()
    starts = np.array([p < 0 or g.members[p] != g.members[i] for i, p in enumerate(t.parent)])
    want = pd.Series(inc[starts]).groupby(g.members[starts]).sum()
    assert np.allclose(g.nodes["value"].to_numpy(), want.sort_index().to_numpy())
    # edges without the back edges form a DAG whose columns grow along every edge
    fwd = g.edges[~g.edges["back"]]
    col = g.nodes["column"].to_numpy()
    assert (col[fwd["target"]] > col[fwd["source"]]).all()
    # the links cross one column each and carry the edge's value through the dummies
    assert len(g.links) == int((col[fwd["target"]] - col[fwd["source"]]).sum())
    # and an edge's value is what flows into the target from that source
    e = g.edges.set_index(["source", "target"])["value"]
    child = np.flatnonzero(starts & (np.asarray(t.parent) >= 0))
    flows = pd.Series(inc[child]).groupby([g.members[t.parent[child]], g.members[child]]).sum()
    assert np.allclose(e.sort_index().to_numpy(), flows.sort_index().to_numpy())


def test_reappearing_module_is_a_new_node_and_recursion_stays_in_one():
    t = cctviz.Tree.from_parents(
        [-1, 0, 1, 2, 3],
        ["main", "mpi_a", "mpi_b", "main_cb", "mpi_c"],
        {"time": [1.0, 1.0, 1.0, 1.0, 1.0]},
    )
    g = module_graph(t, [("app", "^main"), ("mpi", "^mpi")])
    assert g.nodes[["group", "occurrence", "column"]].values.tolist() == [
        ["app", 0, 0],
        ["mpi", 0, 1],
        ["app", 1, 2],
        ["mpi", 1, 3],
    ]
    assert g.members.tolist() == [0, 1, 1, 2, 3]  # mpi_a, mpi_b: one segment


def test_a_cycle_across_paths_is_broken_the_same_way_every_time():
    # A then B on one path, B then A on another: (A,0) -> (B,0) and (B,0) -> (A,0)
    t = cctviz.Tree.from_parents(
        [-1, 0, 1, 0, 3], ["root", "a1", "b1", "b2", "a2"], {"time": [1.0, 2.0, 3.0, 4.0, 5.0]}
    )
    by = {"root": "R", "a1": "A", "a2": "A", "b1": "B", "b2": "B"}
    g1, g2 = module_graph(t, by), module_graph(t, by)
    assert int(g1.edges["back"].sum()) == 1
    pd.testing.assert_frame_equal(g1.nodes, g2.nodes)
    pd.testing.assert_frame_equal(g1.edges, g2.edges)


def test_group_by_depth_mapping_callable_and_attribute():
    t = cctviz.Tree.from_parents(
        [-1, 0, 1, 0], ["main", "f", "g", "h"], {"time": [1.0, 1.0, 1.0, 1.0]}
    )
    assert group_labels(t, 1).tolist() == ["main", "f", "f", "h"]
    assert group_labels(t, 0).tolist() == ["main"] * 4
    assert group_labels(t, lambda p: p[-1] if len(p) < 3 else None).tolist() == [
        "main",
        "f",
        CATCH_ALL,
        "h",
    ]
    assert group_labels(t, "name").tolist() == ["main", "f", "g", "h"]
    with pytest.raises(KeyError, match="no such node attribute"):
        group_labels(t, "modle")
    with pytest.raises(ValueError, match="bad regular expression"):
        group_labels(t, [("x", "(")])
    with pytest.raises(ValueError, match="does not add up"):
        module_graph(t, 1, metric="time")


@pytest.fixture(scope="module")
def kripke():
    return cctviz.read(KRIPKE)


def test_kripke_by_load_module(kripke):
    """64 ranks grouped by HPCToolkit's load module: super nodes match the walk,
    values are the mean over ranks of per-rank sums, and the first column holds
    the whole run."""
    tree = kripke.tree
    g = module_graph(kripke, "module")
    labels = group_labels(tree, "module")
    keys = brute_keys(tree, labels)
    got = list(
        zip(g.nodes["group"].to_numpy()[g.members], g.nodes["occurrence"].to_numpy()[g.members])
    )
    assert got == keys
    assert g.per_profile.shape == (len(g.nodes), 64)
    # the height: the mean with absent = 0 (NaN: a rank recorded none of the node)
    assert np.allclose(g.nodes["value"], g.per_profile.fillna(0).mean(axis=1))
    vals = kripke.values("time (inc)")
    roots = np.flatnonzero(np.asarray(tree.parent) < 0)
    top = g.nodes.index[g.nodes["column"] == 0]
    assert np.allclose(g.per_profile.loc[top].sum(axis=0), vals[roots].sum(axis=0))
    # the rank at the max is one that has the max
    row = g.nodes.loc[g.nodes["value"].idxmax()]
    assert g.per_profile.loc[row.name, row["argmax"]] == row["max"]
    assert {"libmpi.so.12.1.1", "libpsm2.so.2.1"} <= {
        s.rsplit("/", 1)[-1] for s in g.nodes["group"]
    }
