import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings

import cctviz
from cctviz import Ensemble
from tests.conftest import DATA, LULESH_SCALING
from tests.hypothesis_profiles import examples
from tests.strategies import trees


@settings(max_examples=examples(30), deadline=None)
@given(trees())
def test_tree_round_trip_is_exact(t):
    import tempfile
    from pathlib import Path

    t = t.add_metric("bytes", np.arange(len(t)) * 3.0, unit="bytes")
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "t.cctviz"
        cctviz.write(t, p)
        back = cctviz.read(p)
        assert back == t
        assert back.metrics.equals(t.metrics)
        assert back.units == {"bytes": "bytes"}


def test_real_ensemble_round_trip_is_exact(tmp_path):
    cpi = cctviz.read(DATA / "hatchet/caliper-cpi-json/cpi-callpath-profile.json")
    ens = cctviz.read_ensemble([str(p) for p in LULESH_SCALING[:3]] + [], progress=False)
    for obj, name in ((cpi, "cpi"), (ens, "lulesh")):
        p = tmp_path / f"{name}.cctviz"
        obj.save(p)
        back = cctviz.read(p)
        assert isinstance(back, Ensemble)
        assert back == obj
        pd.testing.assert_frame_equal(back.long_table, obj.long_table)
        pd.testing.assert_frame_equal(back.profiles, obj.profiles)
        pd.testing.assert_frame_equal(back.tree.nodes, obj.tree.nodes)
        assert cctviz.readers.detect(p) == "cctviz"


def _rules_tree(shift=0.0):
    """main -> (f, g): a sum, a max, a min metric and a per-node "none" metric named '... (inc)'."""
    return cctviz.Tree.from_parents(
        [-1, 0, 0, 1],
        ["main", "f", "g", "h"],
        {
            "time": [1.0, 2.0, 3.0, 4.0 + shift],
            "mem_peak": [5.0, 9.0 + shift, 4.0, 7.0],
            "free_min": [8.0, 6.0, 7.0 + shift, 2.0],
            "BlockSize (inc)": [256.0, 128.0, 64.0, 32.0],
        },
        meta={
            "aggregation": {"mem_peak": "max", "free_min": "min", "BlockSize (inc)": "none"},
            "units": {"time": "ms", "mem_peak": "B", "free_min": "B"},
            "units_assumed": {"time": "a reason"},
        },
    )


def test_rules_and_units_round_trip_for_a_tree(tmp_path):
    t = _rules_tree()
    assert t.aggregation == {
        "time": "sum",
        "mem_peak": "max",
        "free_min": "min",
        "BlockSize (inc)": "none",
    }
    p = tmp_path / "t.cctviz"
    cctviz.write(t, p)
    back = cctviz.read(p)
    assert back == t
    assert back.aggregation == t.aggregation
    assert back.units == {"time": "ms", "mem_peak": "B", "free_min": "B"}
    assert back.meta["units_assumed"] == {"time": "a reason"}
    # the inclusive columns follow the rules, and the "none" metric has none
    assert list(back.metrics.columns) == [
        "time",
        "time (inc)",
        "mem_peak",
        "mem_peak (inc)",
        "free_min",
        "free_min (inc)",
        "BlockSize (inc)",
    ]
    at = {n: int(np.flatnonzero(back.names == n)[0]) for n in ("main", "f", "g", "h")}
    inc = back.metrics.iloc[[at["main"], at["f"], at["g"], at["h"]]]
    assert inc["mem_peak (inc)"].tolist() == [9.0, 9.0, 4.0, 7.0]
    assert inc["free_min (inc)"].tolist() == [2.0, 2.0, 7.0, 2.0]
    assert inc["BlockSize (inc)"].tolist() == [256.0, 128.0, 64.0, 32.0]
    pd.testing.assert_frame_equal(back.metrics, t.metrics)


def test_rules_units_runs_and_failed_profiles_round_trip_for_an_ensemble(tmp_path):
    """Two runs of two ranks; rank 1 of run 1 was killed before writing (no rows, ok False)
    and rank 1 of run 0 failed after writing (rows, ok False)."""
    part = Ensemble.from_trees([_rules_tree(k) for k in range(3)])
    profiles = pd.DataFrame(
        {
            "rank": [0, 1, 0, 1],
            "run": [0, 0, 1, 1],
            "ok": [True, False, True, False],
            "status": ["complete", "exception", "complete", "missing"],
        }
    )
    structure = cctviz.Tree(part.tree.nodes.copy(), None, {"tree_only": "kept"}, _trusted=True)
    meta = {"units": part.tree.units, "aggregation": part.aggregation, "format": "test"}
    ens = Ensemble(structure, part.exclusive_rows, profiles, meta)
    assert ens.aggregation["mem_peak"] == "max" and ens.aggregation["BlockSize (inc)"] == "none"
    assert ens.live.tolist() == [True, True, True, False]
    p = tmp_path / "e.cctviz"
    ens.save(p)
    back = cctviz.read(p)
    assert back == ens
    assert back.aggregation == ens.aggregation
    assert back.tree.units == ens.tree.units == {"time": "ms", "mem_peak": "B", "free_min": "B"}
    assert back.tree.meta == ens.tree.meta and back.tree.meta["tree_only"] == "kept"
    pd.testing.assert_frame_equal(back.profiles, ens.profiles)
    assert back.run_ids.tolist() == [0, 0, 1, 1]
    assert back.live.tolist() == [True, True, True, False]
    pd.testing.assert_frame_equal(back.long_table, ens.long_table)
    for m in ("time (inc)", "mem_peak (inc)", "free_min (inc)", "BlockSize (inc)"):
        pd.testing.assert_frame_equal(back.stats(m), ens.stats(m))
    h = int(np.flatnonzero(back.tree.names == "h")[0])
    st = back.stats("time")
    assert st["n"].iloc[h] == 3 and st["max"].iloc[h] == 4.0 + 2  # the killed rank left out
    assert back.stats("mem_peak")["max"].iloc[h] == 7.0
    assert back.stats("free_min (inc)")["min"].iloc[0] == 2.0


def test_object_columns_come_back_as_they_were(tmp_path):
    t = cctviz.Tree.from_parents(
        [-1, 0, 0],
        ["main", "f", "g"],
        {"time": [1.0, 2.0, 3.0]},
        columns={
            "line": np.array([None, 12, 30], dtype=object),  # ints with a gap
            "col": np.array([1, 2, 3], dtype=object),  # ints kept as objects
            "tag": np.array([1, "a", None], dtype=object),  # mixed: Parquet cannot type it
        },
    )
    ens = Ensemble.from_trees(
        [t, t], profiles={"thread": pd.Series([3, "1,2"], dtype=object), "rank": [0, 1]}
    )
    for obj, name in ((t, "t"), (ens, "e")):
        p = tmp_path / f"{name}.cctviz"
        cctviz.write(obj, p)
        back = cctviz.read(p)
        assert back == obj
        nodes = back.tree.nodes if isinstance(back, Ensemble) else back.nodes
        assert nodes["line"].tolist() == [None, 12, 30]
        assert nodes["col"].dtype == object and nodes["tag"].tolist() == [1, "a", None]
    assert cctviz.read(tmp_path / "e.cctviz").profiles["thread"].tolist() == [3, "1,2"]


SAMPLES = [
    DATA / "hatchet/tau-cpi-mpi",
    DATA / "hatchet/hpctoolkit-cpi-database",
    DATA / "hatchet/hpctoolkit-allgather-database",
    DATA / "hatchet/timemory/wall.tree.json",
    DATA / "hatchet/pyinstrument-hatchet-json/pyinstrument-hatchet-profile.json",
    DATA / "hatchet/cprofile-hatchet-pstats/cprofile-cycle.pstats",
    DATA / "hatchet/gprof2dot-cpi/callgrind.dot.64042.0.1",
]


@pytest.mark.parametrize("src", SAMPLES, ids=lambda p: p.name)
def test_real_samples_round_trip_with_rules_and_units(tmp_path, src):
    obj = cctviz.read(src)
    p = tmp_path / "x.cctviz"
    cctviz.write(obj, p)
    back = cctviz.read(p)
    assert back == obj
    tree, btree = (obj.tree, back.tree) if isinstance(obj, Ensemble) else (obj, back)
    assert btree.meta == tree.meta
    assert btree.aggregation == tree.aggregation and btree.units == tree.units
    assert tree.units  # every sample has a unit for its time metric
    pd.testing.assert_frame_equal(btree.nodes, tree.nodes)


def test_an_ensemble_without_profile_columns_round_trips(tmp_path):
    """Profiles with no metadata columns (``Ensemble.from_trees`` without
    ``profiles=``): their number is in the header, Parquet keeps none."""
    a = cctviz.Tree.from_parents([-1, 0], ["main", "f"], {"time": [1.0, 2.0]})
    b = cctviz.Tree.from_parents([-1, 0], ["main", "g"], {"time": [3.0, 4.0]})
    ens = cctviz.Ensemble.from_trees([a, b])
    assert len(ens.profiles.columns) == 0
    back = cctviz.read(cctviz.write(ens, tmp_path / "e.cctviz"))
    assert len(back.profiles) == 2
    assert np.array_equal(back.values("time"), ens.values("time"), equal_nan=True)
