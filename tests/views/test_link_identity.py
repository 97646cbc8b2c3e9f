"""Linked views map a selection through the model's node identity
(cctviz.model.unify.node_map): the n-th same-named sibling is the n-th in every
tree, and a node the other tree lacks selects nothing there."""

from __future__ import annotations

import cctviz


def _trees():
    # main > f, f, g (with leaves) and main > f, h, f: two f in each, g only in the first
    a = cctviz.Tree.from_parents(
        [-1, 0, 0, 0, 1, 2], ["main", "f", "f", "g", "x", "x"], {"time": [1, 2, 3, 4, 5, 6]}
    )
    b = cctviz.Tree.from_parents(
        [-1, 0, 0, 0, 3], ["main", "f", "h", "f", "x"], {"time": [1, 2, 3, 4, 5]}
    )
    return a, b


def _node(tree, *path):
    """The node id of ``path``, the n-th of same-named siblings given as (name, n)."""
    node = -1
    for step in path:
        name, nth = step if isinstance(step, tuple) else (step, 0)
        kids = [i for i in range(len(tree)) if tree.parent[i] == node and tree.names[i] == name]
        node = kids[nth]
    return node


def test_the_second_f_selects_the_second_f():
    a, b = _trees()
    va, vb = cctviz.CCTView(a), cctviz.CCTView(b)
    link = cctviz.link(va, vb)
    va.selection = [_node(a, "main", ("f", 1))]
    assert vb.selection.ids.tolist() == [_node(b, "main", ("f", 1))]
    # and its child: the x under the second f only
    va.selection = [_node(a, "main", ("f", 1), "x")]
    assert vb.selection.ids.tolist() == [_node(b, "main", ("f", 1), "x")]
    # back the other way: the first f is the first f
    vb.selection = [_node(b, "main", ("f", 0))]
    assert va.selection.ids.tolist() == [_node(a, "main", ("f", 0))]
    link.unlink()


def test_a_node_the_other_tree_lacks_selects_nothing_there():
    a, b = _trees()
    va, vb = cctviz.CCTView(a), cctviz.CCTView(b)
    with cctviz.link(va, vb):
        va.selection = [_node(a, "main", "g")]
        assert len(vb.selection) == 0
        va.selection = [_node(a, "main", "g"), _node(a, "main", ("f", 1))]
        assert vb.selection.ids.tolist() == [_node(b, "main", ("f", 1))]
        vb.selection = [_node(b, "main", "h")]
        assert len(va.selection) == 0


def test_the_sankey_maps_through_the_same_identity():
    a, b = _trees()
    tree_view = cctviz.CCTView(a)
    sankey = cctviz.SankeyView(b, group_by="name")
    with cctviz.link(tree_view, sankey):
        tree_view.selection = [_node(a, "main", ("f", 1), "x")]
        assert sankey.selection.ids.tolist() == [_node(b, "main", ("f", 1), "x")]
