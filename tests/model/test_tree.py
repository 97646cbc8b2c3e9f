import numpy as np
import pandas as pd
import pytest
from hypothesis import given

from cctviz import Tree
from tests.strategies import assert_consistent, trees


@given(trees())
def test_inclusive_is_exclusive_plus_children_inclusive(t):
    assert_consistent(t)


@given(trees())
def test_nodes_are_preordered_with_contiguous_subtrees(t):
    end = t.end
    for i in range(len(t)):
        inside = np.arange(i + 1, end[i])
        assert np.all(t.depth[inside] > t.depth[i])
        if end[i] < len(t):
            assert t.depth[end[i]] <= t.depth[i]


def test_from_parents_any_order_keeps_identity():
    # node 0 is a child of node 2 here
    t = Tree.from_parents([2, 2, -1, 1], ["a", "b", "main", "c"], {"time": [1.0, 2.0, 3.0, 4.0]})
    assert t.nodes["name"].tolist() == ["main", "a", "b", "c"]
    assert t.parent.tolist() == [-1, 0, 0, 2]
    assert t.metrics["time"].tolist() == [3.0, 1.0, 2.0, 4.0]
    assert t.metrics["time (inc)"].tolist() == [10.0, 1.0, 6.0, 4.0]
    assert t.path(3) == ("main", "b", "c")


def test_from_dict_accepts_hatchet_literal_and_plain_form():
    lit = [
        {
            "frame": {"name": "main", "type": "function"},
            "metrics": {"time": 1.0, "time (inc)": 6.0},
            "children": [
                {
                    "frame": {"name": "f", "type": "loop"},
                    "metrics": {"time": 5.0, "time (inc)": 5.0},
                }
            ],
        }
    ]
    t = Tree.from_dict(lit)
    assert t.nodes["kind"].tolist() == ["function", "loop"]
    assert t.metrics["time (inc)"].tolist() == [6.0, 5.0]
    plain = Tree.from_dict(
        {
            "name": "main",
            "metrics": {"t (inc)": 9},
            "children": [{"name": "x", "metrics": {"t (inc)": 4}}],
        }
    )
    # inclusive-only metrics are turned into exclusive ones that give them back
    assert plain.metrics["t"].tolist() == [5.0, 4.0]
    assert plain.metrics["t (inc)"].tolist() == [9.0, 4.0]


def test_constructor_rejects_non_preorder_and_inclusive_columns():
    nodes = pd.DataFrame({"name": ["a", "b", "c"], "parent": [-1, 2, 0]})
    with pytest.raises(ValueError, match="pre-order"):
        Tree(nodes)
    ok = pd.DataFrame({"name": ["a", "b"], "parent": [-1, 0]})
    with pytest.raises(ValueError, match="exclusive"):
        Tree(ok, pd.DataFrame({"time (inc)": [1, 2]}))


def test_add_metric_and_children(hatchet_tree):
    t = hatchet_tree.add_metric("double", lambda f: f["time"] * 2, unit="ms")
    assert np.allclose(t.metrics["double (inc)"], 2 * t.metrics["time (inc)"])
    assert t.units["double"] == "ms"
    corge = int(np.flatnonzero(t.names == "corge")[0])
    assert sorted(t.names[t.children(corge)]) == ["bar", "garply", "grault"]


def test_callpaths_escape_separators():
    t = Tree.from_parents([-1, 0], ["a/b", "c\\d"])
    assert t.callpaths.tolist() == ["a\\/b", "a\\/b/c\\\\d"]


def test_render_limits_and_header(hatchet_tree):
    text = hatchet_tree.render(depth=2)
    lines = text.splitlines()
    assert lines[0].startswith("# time (inc) [unit unknown]; 24 nodes")
    assert lines[1] == "135  foo"
    assert all("│  " not in ln for ln in lines)  # nothing deeper than depth 1
    short = hatchet_tree.render(max_nodes=3)
    assert "21 nodes over the limit of 3" in short.splitlines()[-2]
    assert str(hatchet_tree) == hatchet_tree.render(max_nodes=25, hint="repr")
