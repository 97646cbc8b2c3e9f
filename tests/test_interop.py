"""Hatchet GraphFrames and Thickets built from the real samples, read by duck typing."""

import glob
import json
import warnings

import numpy as np
import pandas as pd
import pytest

import cctviz
from cctviz import Ensemble, Tree, from_hatchet, from_thicket
from tests.conftest import CALIPER_JSON, DATA, HATCHET_JSON
from tests.peers import require

hatchet = require("hatchet")
thicket = require("thicket")  # the whole module compares with the peers


def _quiet(fn, *a, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*a, **kw)


def _by_path(obj, metric):
    """Nonzero values of ``metric`` per (call path, profile key)."""
    if isinstance(obj, Ensemble):
        d = obj.long_table.reset_index()
        key = obj.profiles.columns[0]
        d["key"] = obj.profiles[key].to_numpy()[d["profile"]]
        tree = obj.tree
    else:
        d = obj.metrics.reset_index().assign(key=0)
        tree = obj
    d["callpath"] = tree.callpaths.to_numpy()[d["node"]]
    s = d.groupby(["callpath", "key"])[metric].sum()
    return s[s != 0].sort_index()


@pytest.mark.parametrize("path", CALIPER_JSON, ids=lambda p: p.name)
def test_caliper_graphframe_equals_own_reader(path):
    gf = _quiet(hatchet.GraphFrame.from_caliper, str(path), node_ordering=False)
    a, b = from_hatchet(gf), cctviz.read(path)
    assert type(a) is type(b)
    ta, tb = (x.tree if isinstance(x, Ensemble) else x for x in (a, b))
    assert sorted(ta.callpaths) == sorted(tb.callpaths)
    assert a.exc_metrics == [m for m in gf.exc_metrics if m != "Node order"]
    if isinstance(a, Ensemble):
        assert a.profiles["rank"].tolist() == b.profiles["rank"].tolist()
    for m in b.exc_metrics:
        pd.testing.assert_series_equal(_by_path(a, m), _by_path(b, m))
        pd.testing.assert_series_equal(_by_path(a, m + " (inc)"), _by_path(b, m + " (inc)"))


def test_json_graphframe_and_literal_round_trip():
    t = cctviz.read(HATCHET_JSON)
    gf = _quiet(hatchet.GraphFrame.from_json, HATCHET_JSON.read_text())
    a = from_hatchet(gf)
    assert sorted(a.callpaths) == sorted(t.callpaths)
    pd.testing.assert_series_equal(_by_path(a, "time (inc)"), _by_path(t, "time (inc)"))
    # Tree -> literal -> Hatchet -> Tree gives the tree back
    back = from_hatchet(hatchet.GraphFrame.from_literal(t.to_hatchet_literal()))
    assert back.nodes.equals(t.nodes) and back.metrics.equals(t.metrics)


def test_literal_round_trip_with_node_columns():
    ens = cctviz.read(DATA / "hatchet/caliper-cpi-json/cpi-callpath-profile.json")
    t = ens.profile(0)
    assert {"module", "file", "line"} <= set(t.nodes.columns)
    gf = hatchet.GraphFrame.from_literal(t.to_hatchet_literal())
    assert len(gf.graph) == len(t) == 57  # the call paths rank 0 entered
    back = from_hatchet(gf)
    assert back.names.tolist() == t.names.tolist()
    assert back.parent.tolist() == t.parent.tolist()
    np.testing.assert_allclose(back.metrics.to_numpy(), t.metrics.to_numpy())
    same = t.nodes["module"].fillna("-") == back.nodes["module"].fillna("-")
    assert same.all()


def test_hpctoolkit_ranks_become_profiles():
    gf = _quiet(hatchet.GraphFrame.from_hpctoolkit, str(DATA / "hatchet/hpctoolkit-cpi-database"))
    ens = from_hatchet(gf)
    assert isinstance(ens, Ensemble) and ens.n_profiles == 4
    assert ens.profiles["rank"].tolist() == [0, 1, 2, 3] and len(ens.tree) == len(gf.graph) == 34
    df = gf.dataframe.reset_index()
    total = df.groupby("rank")["time"].sum().to_numpy()
    np.testing.assert_allclose(
        ens.exclusive_rows.groupby("profile")["time"].sum().to_numpy(), total
    )


def test_timemory_graphframe_equals_own_reader():
    path = DATA / "hatchet/timemory/wall.tree.json"
    a = from_hatchet(_quiet(hatchet.GraphFrame.from_timemory, str(path)))
    b = cctviz.read(path)
    # Hatchet indexes by (node, rank, thread): same two profiles
    assert a.profiles[["rank", "thread"]].values.tolist() == [[0, "1,2"], [1, "1,2"]]
    for m in ("sum.wall_clock", "sum.wall_clock (inc)"):  # Hatchet: count is no metric
        pd.testing.assert_series_equal(_by_path(a, m), _by_path(b, m))


def test_gprof_dag_keeps_each_function_once():
    path = DATA / "hatchet/gprof2dot-cpi/callgrind.dot.64042.0.1"
    gf = _quiet(hatchet.GraphFrame.from_gprof_dot, str(path))
    t = from_hatchet(gf)
    assert isinstance(t, Tree) and len(t) == len(gf.graph) == 105
    assert len(t.roots) == 7
    # the DAG is cut, not copied: the self time adds up to the one of the unfolded reader
    assert t.metrics["time"].sum() == pytest.approx(cctviz.read(path).metrics["time"].sum())


def test_thicket_from_json_equals_own_reader():
    path = DATA / "thicket/example-json/user_ensemble.json"
    doc = json.loads(path.read_text())
    doc.setdefault("profile_idx_name", "profile")
    tk = thicket.Thicket.from_json(json.dumps(doc))
    a, b = from_thicket(tk), cctviz.read(path)
    assert a.n_profiles == b.n_profiles == 172
    pa = a.profiles.set_index("profile").sort_index()
    pb = b.profiles.set_index("profile").sort_index()
    assert list(pa.columns) == list(pb.columns)
    pd.testing.assert_frame_equal(pa.astype(str), pb.astype(str))
    for m in b.inc_metrics:
        pd.testing.assert_series_equal(_by_path(a, m), _by_path(b, m))


def test_thicket_from_cali_files():
    files = sorted(glob.glob(str(DATA / "thicket/mpi_scaling_cali/*.cali")))
    tk = _quiet(thicket.Thicket.from_caliperreader, files, disable_tqdm=True)
    ens = from_thicket(tk)
    assert ens.n_profiles == 5 and len(ens.tree) == len(tk.graph) == 45
    assert ens.profiles["profile"].tolist() == list(tk.profile)
    md = tk.metadata.loc[ens.profiles["profile"]]
    assert ens.profiles["mpi.world.size"].tolist() == md["mpi.world.size"].tolist()
    assert sorted(ens.profiles["mpi.world.size"]) == [27, 64, 125, 216, 343]
    assert set(ens.profiles["profile_file"]) == set(files)
    # every (node, profile) value of Thicket is ours
    df = tk.dataframe.reset_index()
    df["callpath"] = df["node"].map(lambda n: "/".join(x.frame["name"] for x in n.path()))
    # Thicket's "Total time" is Caliper's inclusive sum (spot channel): our "Total time (inc)"
    s = df.set_index(["callpath", "profile"])["Total time"]
    pd.testing.assert_series_equal(
        _by_path(ens, "Total time (inc)"), s[s != 0].sort_index().astype(float), check_names=False
    )
    assert ens.aggregation == {
        "Min time/rank": "none",
        "Max time/rank": "max",
        "Avg time/rank": "none",
        "Total time": "sum",
    }
    assert ens.meta["units"] == dict.fromkeys(ens.aggregation, "s")
    assert "spot channel" in ens.meta["units_assumed"]["Total time"]


def test_not_a_graphframe():
    with pytest.raises(TypeError, match="graph.roots"):
        from_hatchet(object())


def test_thicket_of_rajaperf_has_the_rules_of_the_cali_reader():
    """From a Thicket (no units, every metric "exclusive"), RAJAPerf's spot metrics and
    kernel constants get the rules and units the .cali reader gives them."""
    own = cctviz.read(DATA / "thicket/rajaperf")
    files = list(own.profiles["file"])
    tk = _quiet(thicket.Thicket.from_caliperreader, files, disable_tqdm=True)
    ens = from_thicket(tk)
    assert ens.aggregation == own.aggregation
    assert ens.meta["units"] == own.meta["units"]
    assert set(ens.meta["units_assumed"]) == {*ens.meta["units"]}  # Thicket keeps no unit
    assert "BlockSize (inc)" not in ens.long_table and "Max time/rank (inc)" in ens.long_table
    # per (call path, file) the same values as our own reader
    fa = dict(zip(ens.profiles["profile"], ens.profiles["profile_file"]))
    a = ens.long_table.reset_index()
    a["callpath"] = ens.tree.callpaths.to_numpy()[a["node"]]
    a["file"] = [fa[p] for p in ens.profiles["profile"].to_numpy()[a["profile"]]]
    b = own.long_table.reset_index()
    b["callpath"] = own.tree.callpaths.to_numpy()[b["node"]]
    b["file"] = own.profiles["file"].to_numpy()[b["profile"]]
    a, b = (x.set_index(["callpath", "file"]).sort_index() for x in (a, b))
    assert len(a) == len(b) == 1208
    cols = [c for c in b.columns if c not in ("node", "profile")]
    # (own parts of the total are differences: summed in another order, they differ by 1e-14 s)
    np.testing.assert_allclose(a[cols].to_numpy(), b[cols].to_numpy(), rtol=1e-12, atol=1e-12)
