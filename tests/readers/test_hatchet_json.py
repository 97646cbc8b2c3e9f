"""Hatchet's to_json form and graph literal: read, write, and read back by Hatchet."""

import json
import warnings

import numpy as np
import pytest
from hypothesis import given, settings

import cctviz
from cctviz.writers.hatchet import to_hatchet_json, to_literal
from tests.conftest import HATCHET_JSON
from tests.hypothesis_profiles import examples
from tests.peers import hatchet  # noqa: E402  (imported when a test uses it)
from tests.strategies import trees


def test_to_json_form_content(hatchet_tree):
    t = hatchet_tree
    assert len(t) == 24 and len(t.roots) == 2
    assert t.exc_metrics == ["time"]
    doc = json.loads(HATCHET_JSON.read_text())
    recorded = {r["node"]: r for r in doc["dataframe"]}
    # our pre-order ids are not the file's ids: compare by call path via Hatchet's own reader
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gf = hatchet.GraphFrame.from_json(HATCHET_JSON.read_text())
    theirs = {}
    for node, row in gf.dataframe.iterrows():
        path = "/".join(x.frame["name"] for x in node.path())
        theirs[path] = (row["time"], row["time (inc)"])
    ours = dict(zip(t.callpaths, zip(t.metrics["time"], t.metrics["time (inc)"])))
    assert ours == theirs
    # inclusive values derived by cctviz equal the ones recorded in the file
    assert sorted(r["time (inc)"] for r in recorded.values()) == sorted(t.metrics["time (inc)"])
    # repeated names at different paths stay distinct nodes
    assert (t.names == "garply").sum() == 3


def test_literal_round_trip_through_hatchet(hatchet_tree, tmp_path):
    lit = to_literal(hatchet_tree)
    gf = hatchet.GraphFrame.from_literal(lit)
    assert len(gf.graph) == len(hatchet_tree)
    p = tmp_path / "lit.json"
    cctviz.write(hatchet_tree, p, format="hatchet-literal")
    back = cctviz.read(p)
    assert back.nodes["name"].tolist() == hatchet_tree.nodes["name"].tolist()
    assert np.allclose(back.metrics.to_numpy(), hatchet_tree.metrics.to_numpy())


@settings(max_examples=examples(30), deadline=None)
@given(trees())
def test_to_json_round_trip(t):
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "t.json"
        cctviz.write(t, p, format="hatchet-json")
        back = cctviz.read(p)
        assert back.nodes["name"].tolist() == t.nodes["name"].tolist()
        assert back.parent.tolist() == t.parent.tolist()
        assert np.allclose(back.metrics.to_numpy(), t.metrics.to_numpy())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            gf = hatchet.GraphFrame.from_json(p.read_text())
        assert len(gf.graph) == len(t)
        assert np.isclose(gf.dataframe["time"].sum(), t.metrics["time"].sum())


def test_ensemble_to_json_keeps_profiles(tmp_path):
    a = cctviz.Tree.from_parents([-1, 0], ["main", "f"], {"time": [1.0, 2.0]})
    b = cctviz.Tree.from_parents([-1, 0], ["main", "g"], {"time": [3.0, 4.0]})
    ens = cctviz.Ensemble.from_trees([a, b])
    doc = to_hatchet_json(ens)
    assert doc["dataframe_indices"] == ["node", "profile"]
    p = tmp_path / "e.json"
    p.write_text(json.dumps(doc))
    back = cctviz.read(p)
    assert isinstance(back, cctviz.Ensemble) and back.n_profiles == 2
    assert np.allclose(back.long_table["time"].to_numpy(), ens.long_table["time"].to_numpy())


# ---------------------------------------------------------------- rules, units, nothing lost
def _gf_json(tmp_path, gf, name="gf.json"):
    p = tmp_path / name
    p.write_text(gf.to_json())
    return p


def test_caliper_names_keep_their_rules_and_units(tmp_path):
    from tests.conftest import DATA

    cali = DATA / "hatchet/caliper-lulesh-cali/lulesh-annotation-profile.cali"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gf = hatchet.GraphFrame.from_caliperreader(str(cali))
    t = cctviz.read(_gf_json(tmp_path, gf))
    own = cctviz.read(cali)
    assert (
        t.aggregation
        == own.aggregation
        == {
            "time": "sum",
            "min#time.duration": "min",
            "max#time.duration": "max",
            "avg#time.duration": "none",
            "count": "sum",
        }
    )
    assert t.units == own.units and set(t.units) == {
        "time",
        "min#time.duration",
        "max#time.duration",
        "avg#time.duration",
    }
    assert "Hatchet's name for Caliper's sum#time.duration" in t.meta["units_assumed"]["time"]
    a = t.metrics.set_index(t.callpaths.to_numpy()).sort_index()
    b = own.metrics.set_index(own.callpaths.to_numpy()).sort_index()
    assert list(a.columns) == list(b.columns) and "avg#time.duration (inc)" not in a
    np.testing.assert_allclose(a.to_numpy(), b[a.columns].to_numpy(), rtol=1e-12)


def _doc(rows, indices=("node", "rank"), exc=(), inc=(), **extra):
    graph = [
        {
            "0": {"data": {"name": "main", "type": "function"}, "children": [1]},
            "1": {"data": {"name": "solve", "type": "function"}, "children": []},
        }
    ]
    return {
        "graph": graph,
        "dataframe_indices": list(indices),
        "dataframe": rows,
        "exclusive_metrics": list(exc),
        "inclusive_metrics": list(inc),
        **extra,
    }


def test_per_rank_inclusive_only_metric(tmp_path):
    rows = [
        {"node": n, "rank": r, "name": nm, "time (inc)": v}
        for (n, nm), vals in zip([(0, "main"), (1, "solve")], [(5.0, 7.0), (2.0, 3.0)])
        for r, v in enumerate(vals)
    ]
    p = tmp_path / "r.json"
    p.write_text(json.dumps(_doc(rows, inc=["time (inc)"], units={"time": "ms"})))
    ens = cctviz.read(p)
    assert isinstance(ens, cctviz.Ensemble) and ens.n_profiles == 2
    assert ens.long_table["time (inc)"].tolist() == [5.0, 7.0, 2.0, 3.0]
    assert ens.long_table["time"].tolist() == [3.0, 4.0, 2.0, 3.0]
    assert ens.meta["units"] == {"time": "ms"} and "units_assumed" not in ens.meta


def test_stated_rules_win_and_other_columns_are_kept_or_said(tmp_path):
    rows = [
        {"node": 0, "rank": 0, "name": "main", "peak": 4.0, "host": "a", "file": "m.c"},
        {"node": 0, "rank": 1, "name": "main", "peak": 6.0, "host": "b", "file": "m.c"},
        {"node": 1, "rank": 0, "name": "solve", "peak": 9.0, "host": "a", "file": "s.c"},
        {"node": 1, "rank": 1, "name": "solve", "peak": 2.0, "host": "b", "file": "s.c"},
    ]
    p = tmp_path / "r.json"
    p.write_text(json.dumps(_doc(rows, exc=["peak"], aggregation={"peak": "max"})))
    with pytest.warns(UserWarning, match=r"not kept: 'host' \(differs between rows of 2 node"):
        ens = cctviz.read(p)
    assert ens.aggregation == {"peak": "max"}
    assert ens.long_table["peak (inc)"].tolist() == [9.0, 6.0, 9.0, 2.0]
    assert ens.tree.nodes["file"].tolist() == ["m.c", "s.c"]  # one value per node: kept
    assert "host" not in ens.tree.nodes


def deep_literal(path, levels: int):
    """A Hatchet literal of one call chain ``levels`` deep (a deep recursion), each
    frame 1.0 of time; written as text (the json module's encoder recurses too)."""
    head = "".join(
        f'{{"frame": {{"name": "f{i}", "type": "function"}}, "metrics": {{"time": 1.0}}, '
        '"children": ['
        for i in range(levels)
    )
    leaf = '{"frame": {"name": "leaf", "type": "function"}, "metrics": {"time": 1.0}}'
    path.write_text("[" + head + leaf + "]}" * levels + "]")
    return path


def test_a_literal_nested_5000_deep_is_read(tmp_path):
    t = cctviz.read(deep_literal(tmp_path / "deep.json", 5000))
    assert len(t) == 5001 and t.metrics["time (inc)"].iloc[0] == 5001.0
    assert int(np.asarray(t.depth).max()) == 5000


def test_deeper_than_the_limit_is_refused_naming_the_depth(tmp_path, monkeypatch):
    import cctviz.readers._json as rj

    monkeypatch.setattr(rj, "MAX_DEPTH", 3000)
    with pytest.raises(cctviz.ProfileError, match=r"nests 10,00[0-9] brackets deep.*3,000"):
        cctviz.read(deep_literal(tmp_path / "deeper.json", 5000))
