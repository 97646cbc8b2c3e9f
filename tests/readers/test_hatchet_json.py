"""Hatchet's to_json form and graph literal: read, write, and read back by Hatchet."""

import json
import warnings

import numpy as np
import pytest
from hypothesis import given, settings

import cctviz
from cctviz.writers.hatchet import to_hatchet_json, to_literal
from tests.conftest import HATCHET_JSON
from tests.strategies import trees

hatchet = pytest.importorskip("hatchet")


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


@settings(max_examples=30, deadline=None)
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
    assert np.allclose(back.data["time"].to_numpy(), ens.data["time"].to_numpy())
