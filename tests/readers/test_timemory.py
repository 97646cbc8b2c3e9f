"""timemory JSON trees: per-rank trees checked against Hatchet's from_timemory."""

import json
import warnings

import numpy as np
import pandas as pd
import pytest

import cctviz
from cctviz import Ensemble
from tests.conftest import DATA, HATCHET_JSON
from tests.readers.fuzz import assert_wrong_format_rejected, fuzz_sample

TM = DATA / "hatchet/timemory/wall.tree.json"
from tests.peers import hatchet  # noqa: E402  (imported when a test uses it)


@pytest.fixture(scope="module")
def ens():
    return cctviz.read(TM)


def test_content(ens):
    assert cctviz.readers.detect(TM) == "timemory"
    assert isinstance(ens, Ensemble)
    assert ens.n_profiles == 2 and len(ens.tree) == 14 and len(ens.tree.roots) == 2
    assert ens.profiles["rank"].tolist() == [0, 1]
    assert ens.profiles["thread"].tolist() == ["1,2", "1,2"]  # values summed over threads 1, 2
    assert ens.profiles["pid"].tolist() == [41379, 41380]
    assert ens.exc_metrics == ["sum.wall_clock", "count"]
    assert ens.tree.units == {"sum.wall_clock": "s"}
    t = ens.tree
    outer = int(np.flatnonzero(t.names == "generate_history/outer-loop-0")[0])
    assert t.nodes.loc[outer, "file"] == "hatchet_tests.cpp" and t.nodes.loc[outer, "line"] == 114
    d = ens.long_table
    assert d.loc[(outer, 0), "sum.wall_clock"] == pytest.approx(1.501585374999998)
    # derived inclusive = the file's inclusive sum
    assert d.loc[(outer, 0), "sum.wall_clock (inc)"] == pytest.approx(35.638487534999996)
    assert d.loc[(outer, 1), "sum.wall_clock (inc)"] == pytest.approx(33.403509927)
    assert d.loc[(outer, 0), "count"] == 3


def _callpath(node):
    return "/".join(x.frame["name"].replace("/", "\\/") for x in node.path())


def test_matches_hatchet(ens):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gf = hatchet.GraphFrame.from_timemory(str(TM))
    assert len(gf.graph) == len(ens.tree)
    df = gf.dataframe.reset_index()
    df["callpath"] = df["node"].map(_callpath)
    theirs = df.set_index(["callpath", "rank"])[
        ["sum.wall_clock", "sum.wall_clock (inc)", "count"]
    ].astype(float)
    d = ens.long_table.reset_index()
    d["callpath"] = ens.tree.callpaths.to_numpy()[d["node"]]
    d["rank"] = ens.profiles["rank"].to_numpy()[d["profile"]]
    ours = d.set_index(["callpath", "rank"])[theirs.columns]
    pd.testing.assert_frame_equal(ours.sort_index(), theirs.sort_index(), check_dtype=False)


def test_single_rank_and_vector_component(tmp_path):
    doc = json.loads(TM.read_text())
    comp = doc["timemory"]["WALL_CLOCK"]
    comp["graph"] = [comp.pop("mpi")[1]]  # no MPI: one tree, rank unknown
    p = tmp_path / "one.tree.json"
    p.write_text(json.dumps(doc))
    t = cctviz.read(p)
    assert isinstance(t, cctviz.Tree) and len(t) == 14
    assert t.meta["thread"] == "1,2" and t.meta["pid"] == 41380 and "rank" not in t.meta
    assert t.metrics["sum.wall_clock (inc)"].max() == pytest.approx(33.403509927)
    # a vector component (PAPI-like): one metric per label
    papi = json.loads(json.dumps(comp))
    papi["type"] = ["Total cycles", "L2_misses"]
    papi["unit_repr"] = ""
    stack = [n for rank in papi["graph"] for n in rank]
    while stack:
        n = stack.pop()
        stats = n["node"]["exclusive"]["stats"]
        stats["sum"] = [stats["sum"], 2 * stats["sum"]]
        stack += n.get("children", [])
    doc["timemory"]["PAPI_ARRAY"] = papi
    p.write_text(json.dumps(doc))
    t = cctviz.read(p)
    assert t.exc_metrics == ["sum.wall_clock", "count", "sum.Total-cycles", "sum.L2-misses"]
    assert np.allclose(t.metrics["sum.L2-misses"], 2 * t.metrics["sum.wall_clock"])
    assert t.metrics["count"].sum() == 35  # laps counted once, not once per component


def test_bad_input(tmp_path):
    stats = fuzz_sample(TM, "timemory", tmp_path, n=40)
    assert stats["truncate:error"] == 8


def test_wrong_format_rejected():
    assert_wrong_format_rejected(HATCHET_JSON, "timemory")
    assert_wrong_format_rejected(DATA / "hatchet/gprof2dot-cpi/callgrind.dot.64042.0.1", "timemory")


# ---------------------------------------------------------------- rules and units
def test_real_sample_rules_and_units(ens):
    # the unit is the file's: unit_repr "sec" on the WALL_CLOCK component
    assert json.loads(TM.read_text())["timemory"]["WALL_CLOCK"]["unit_repr"] == "sec"
    assert ens.tree.units == {"sum.wall_clock": "s"} and "units_assumed" not in ens.meta
    assert ens.aggregation == {"sum.wall_clock": "sum", "count": "sum"}
    assert ens.meta["aggregation"] == {"sum.wall_clock": "sum", "count": "sum"}
    assert ens.tree.is_additive("sum.wall_clock (inc)")
    # a wall clock adds up: the file's inclusive sums are what the sum rule gives back
    # (the outer loop: 1.50 s of its own plus its children's)
    assert ens.long_table["sum.wall_clock"].min() >= 0


def _component(doc, cid, unit, scale, rename=None):
    """A copy of the sample's WALL_CLOCK component measuring ``cid``: values x ``scale``."""
    comp = json.loads(json.dumps(doc["timemory"]["WALL_CLOCK"]))
    comp["properties"]["id"] = cid
    comp["properties"]["enum"] = cid.upper()
    comp["unit_repr"] = unit
    stack = [n for rank in comp["mpi"] for n in rank]
    while stack:
        n = stack.pop()
        for side in ("inclusive", "exclusive"):
            st = n["node"][side]["stats"]
            for k in ("sum", "min", "max", "mean"):
                st[k] = st[k] * scale
        stack += n.get("children", [])
    doc["timemory"][rename or cid.upper()] = comp


def test_component_rules_units_and_statistics(tmp_path):
    doc = json.loads(TM.read_text())
    _component(doc, "peak_rss", "MB", 10.0)
    _component(doc, "cpu_util", "%", 3.0)
    _component(doc, "gpu_widget", "psec", 1.0)  # a component cctviz does not know
    p = tmp_path / "many.tree.json"
    p.write_text(json.dumps(doc))
    ens = cctviz.read(p)
    assert ens.exc_metrics == [
        "sum.wall_clock",
        "count",
        "max.peak_rss",
        "mean.cpu_util",
        "sum.gpu_widget",
    ]
    assert ens.aggregation == {
        "sum.wall_clock": "sum",
        "count": "sum",
        "max.peak_rss": "max",
        "mean.cpu_util": "none",
        "sum.gpu_widget": "sum",
    }
    assert ens.tree.units == {
        "sum.wall_clock": "s",
        "max.peak_rss": "MB",
        "mean.cpu_util": "%",
        "sum.gpu_widget": "ns",
    }
    assert "not in cctviz's table" in ens.meta["aggregation_notes"]["sum.gpu_widget"]
    assert "mean.cpu_util (inc)" not in ens.long_table.columns
    t = ens.tree
    outer = int(np.flatnonzero(t.names == "generate_history/outer-loop-0")[0])
    d = ens.long_table
    # a peak: the highest inclusive value of a lap, and the subtree's max is the node's
    assert d.loc[(outer, 0), "max.peak_rss"] == pytest.approx(10 * 6.057226581)
    assert d.loc[(outer, 0), "max.peak_rss (inc)"] == pytest.approx(10 * 6.057226581)
    # a ratio: the mean inclusive value of a lap, kept per node
    assert d.loc[(outer, 0), "mean.cpu_util"] == pytest.approx(3 * 5.9397479225)
    # picoseconds become nanoseconds
    assert d.loc[(outer, 0), "sum.gpu_widget"] == pytest.approx(1.501585374999998e-3)
    # one row per (node, profile): the components' records are merged, not left as NaN rows
    assert not d.index.duplicated().any()
    assert d["mean.cpu_util"].notna().all()
    one = ens.profile(rank=0)
    assert one.metrics.loc[outer, "mean.cpu_util"] == pytest.approx(3 * 5.9397479225)
