"""gprof2dot DOT: the call graph unfolded into a tree, checked against Hatchet's reader."""

import re
import warnings

import numpy as np
import pandas as pd
import pytest

import cctviz
from cctviz import ProfileError
from tests.conftest import DATA, HATCHET_JSON
from tests.readers.fuzz import assert_wrong_format_rejected, fuzz_sample

DOT = DATA / "hatchet/gprof2dot-cpi/callgrind.dot.64042.0.1"
from tests.peers import hatchet  # noqa: E402  (imported when a test uses it)


@pytest.fixture(scope="module")
def tree():
    return cctviz.read(DOT)


@pytest.fixture(scope="module")
def gf():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return hatchet.GraphFrame.from_gprof_dot(str(DOT))


def test_content(tree):
    assert cctviz.readers.detect(DOT) == "gprof-dot"
    assert isinstance(tree, cctviz.Tree)
    assert len(tree) == 126 and len(tree.roots) == 7  # 105 functions, 126 call paths
    assert len(set(tree.names)) == 105
    assert tree.units == {"time": "%"} and tree.exc_metrics == ["time", "calls"]
    main = np.flatnonzero(tree.names == "main")
    assert len(main) == 1 and tree.path(main[0]) == ("(below main)", "main")
    assert tree.metrics.loc[main[0], "time"] == pytest.approx(53.77)
    assert tree.metrics.loc[main[0], "calls"] == 1
    assert tree.nodes.loc[main[0], "module"] == "cpi"
    assert tree.metrics["time"].sum() == pytest.approx(99.07)  # every self share, once


def test_matches_hatchet(tree, gf):
    df = gf.dataframe
    # the same functions, roots and modules
    assert set(tree.names) == set(df["name"])
    assert {tree.names[r] for r in tree.roots} == {r.frame["name"] for r in gf.graph.roots}
    mods = dict(zip(df["name"], df["module"]))
    assert all(mods[n] == m for n, m in zip(tree.names, tree.nodes["module"]))
    # self time summed over a function's call paths is Hatchet's per-function time
    ours = tree.metrics.groupby(tree.names)["time"].sum()
    theirs = df.set_index("name")["time"]
    pd.testing.assert_series_equal(
        ours.sort_index(), theirs.sort_index().astype(float), check_names=False
    )
    # every parent -> child link is an edge of Hatchet's graph
    edges = {(p.frame["name"], c.frame["name"]) for p in gf.graph.traverse() for c in p.children}
    par = tree.parent
    links = {(tree.names[par[i]], tree.names[i]) for i in range(len(tree)) if par[i] >= 0}
    assert links <= edges
    # the main root's derived inclusive share is near the label's 97.95% (gprof2dot left
    # out nodes under 0.5%, and labels are rounded to 0.01%)
    inc = df.set_index("name")["time (inc)"]
    r = tree.roots[tree.names[tree.roots] == "(below main)"][0]
    assert inc["(below main)"] == 97.95
    assert tree.metrics.loc[r, "time (inc)"] == pytest.approx(97.95, abs=0.5)


def test_shared_callee_split_by_edge_share(tree):
    # _int_malloc is called from several paths; its self time is split over them
    text = DOT.read_text()
    m = re.search(r'"?_int_malloc"? \[.*?label="[^"]*\\n([\d.]+)%\\n\(([\d.]+)%\)', text)
    self_pct = float(m.group(2))
    ids = np.flatnonzero(tree.names == "_int_malloc")
    assert len(ids) > 1
    assert tree.metrics.loc[ids, "time"].sum() == pytest.approx(self_pct)
    assert (tree.metrics.loc[ids, "time"] > 0).all()


DOT_CYCLE = """// recursion: a -> b -> a, and c only reachable through a cycle with d
digraph callgraph {
  graph [rankdir=TB]; node [shape=box];
  a [label="prog\\na\\n100.00%\\n(10.00%)\\n1\u00d7"];
  b [label="prog\\nb\\n90.00%\\n(50.00%)\\n5\u00d7"];
  "c" [label="prog\\nc\\n30.00%\\n(30.00%)\\n2\u00d7"];
  d [label="d\\n10.00%\\n(10.00%)\\n2\u00d7"];
  a -> b [label="90.00%\\n3\u00d7"];
  b -> a [label="20.00%\\n2\u00d7"];
  /* block comment */ c -> d [label="10.00%\\n2\u00d7"];
  d -> c [label="5.00%\\n1\u00d7"];
}
"""


def test_cycles_are_cut(tmp_path):
    p = tmp_path / "cycle.dot"
    p.write_text(DOT_CYCLE)
    t = cctviz.read(p)
    assert [t.path(i) for i in range(len(t))] == [("a",), ("a", "b"), ("c",), ("c", "d")]
    assert t.metrics["time"].tolist() == [10.0, 50.0, 30.0, 10.0]
    assert t.nodes["module"].tolist() == ["prog", "prog", "prog", None]


def test_errors_name_the_place(tmp_path):
    p = tmp_path / "bad.dot"
    p.write_text(DOT_CYCLE.replace("(50.00%)", "(5x.00%)"))
    with pytest.raises(ProfileError, match="node 'b'"):
        cctviz.read(p, format="gprof-dot")
    p.write_text(DOT_CYCLE[: DOT_CYCLE.rindex("}")])
    with pytest.raises(ProfileError, match="closing"):
        cctviz.read(p, format="gprof-dot")
    p.write_text(DOT_CYCLE.replace("a -> b", "a -> @b"))
    with pytest.raises(ProfileError, match="line 8"):
        cctviz.read(p, format="gprof-dot")
    with pytest.raises(ProfileError, match="more than 10"):
        cctviz.read(DOT, max_nodes=10)


def test_bad_input(tmp_path):
    stats = fuzz_sample(DOT, "gprof-dot", tmp_path, n=50)
    assert stats["truncate:error"] == 10
    assert sum(v for k, v in stats.items() if k.endswith(":error")) > 10


def test_wrong_format_rejected():
    assert_wrong_format_rejected(HATCHET_JSON, "gprof-dot")
    assert_wrong_format_rejected(DATA / "hatchet/timemory/wall.tree.json", "gprof-dot")


def test_units_rules_and_the_functions_inclusive_share():
    t = cctviz.read(DATA / "hatchet/gprof2dot-cpi/callgrind.dot.64042.0.1")
    # shares of the total cost, as the labels state them: percent, which add up
    assert t.units == {"time": "%"} and "units_assumed" not in t.meta
    assert t.aggregation == {"time": "sum", "calls": "sum"}
    main = np.flatnonzero(t.names == "main")
    # the label "cpi\nmain\n97.94%\n(53.77%)\n1x": the function's inclusive share is kept
    assert t.nodes.loc[main, "function_inc_pct"].tolist() == [97.94] * len(main)
    assert float(t.metrics.loc[main, "time"].sum()) == pytest.approx(53.77)
    # the roots' subtrees together hold every function's self share (gprof2dot leaves
    # out the smallest functions, so under 100%)
    text = (DATA / "hatchet/gprof2dot-cpi/callgrind.dot.64042.0.1").read_text()
    self_shares = [float(x) for x in re.findall(r"\\n\(([0-9.]+)%\)\\n", text)]
    total = t.metrics["time (inc)"].to_numpy()[t.roots].sum()
    assert total == pytest.approx(sum(self_shares)) and total <= 100
