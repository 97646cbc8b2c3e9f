"""Numbers the CCT view shows (no browser): aggregation rules, units, the spread
of an ensemble with a dead rank, and the imbalance cue."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

import cctviz
from cctviz.model.formats import RUN_FILE, rank_file
from cctviz.views.cct import CUE_SHARE
from cctviz.views.source import MetricSource
from cctviz.writers.native import write_native

NAN = float("nan")


def col(view, key, src=None, dtype="<f4") -> np.ndarray:
    return np.frombuffer((src or view._data)[key], dtype=dtype).astype(np.float64)


def rows(view) -> np.ndarray:
    return np.frombuffer(view._data["id"], dtype="<i4")


def names(view) -> list[str]:
    d = view._data
    raw = bytes(d["name_bytes"])
    off = np.frombuffer(d["name_offsets"], dtype="<i4")
    return [raw[a:b].decode() for a, b in zip(off[:-1], off[1:])]


# main -> solve -> (k0 .. k5), main -> io
PARENT = [-1, 0, 1, 1, 1, 1, 1, 1, 0]
NAMES = ["main", "solve", "k0", "k1", "k2", "k3", "k4", "k5", "io"]


@pytest.fixture
def mixed():
    """A tree with a time (sum, usec), a peak memory (max, bytes), a low-water
    mark (min) and a per-node constant (none)."""
    return cctviz.Tree.from_parents(
        PARENT,
        NAMES,
        {
            "time": [1.0, 2, 50, 40, 3, 2, 1, 0.5, 30],
            "peak": [1e3, 2e3, 9e6, 1e6, 7e6, 2e6, 8e6, 5e5, 3e6],
            "low": [9.0, 8, 7, 1, 6, 0.5, 5, 4, 3],
            "BlockSize": [0, 0, 256, 128, 64, 32, 16, 8, 0],
        },
        meta={
            "aggregation": {"peak": "max", "low": "min", "BlockSize": "none"},
            "units": {"time": "usec", "peak": "bytes"},
        },
    )


def test_data_names_every_metrics_rule_and_unit(mixed):
    view = cctviz.CCTView(mixed)
    d = view._data
    assert "inclusive" not in d
    assert d["aggregation"] == {
        "time (inc)": "sum",
        "peak (inc)": "max",
        "low (inc)": "min",
        "time": "none",
        "peak": "none",
        "low": "none",
        "BlockSize": "none",
    }
    # canonical units (usec -> us, bytes -> B); none stated, none sent
    assert d["units"] == {"time (inc)": "us", "time": "us", "peak (inc)": "B", "peak": "B"}
    assert json.loads(json.dumps({k: d[k] for k in ("aggregation", "units")}))
    # the icicle's size defaults to an additive metric only
    assert view.size == "time (inc)"
    assert cctviz.CCTView(mixed, color="peak (inc)").size == ""
    assert cctviz.CCTView(mixed, color="BlockSize").size == ""


@pytest.mark.parametrize(
    ("metric", "combine"),
    [
        ("time (inc)", np.sum),
        ("peak (inc)", np.max),
        ("low (inc)", np.min),
        ("BlockSize", None),
        ("time", None),  # exclusive values of whole subtrees do not combine
    ],
)
def test_other_rows_follow_each_metrics_rule(mixed, metric, combine):
    view = cctviz.CCTView(mixed, color=metric, size="time (inc)", max_nodes=6)
    r = rows(view)
    others = np.flatnonzero(r < 0)
    assert others.size
    values = col(view, "color")
    full = mixed.metrics[metric].to_numpy()
    for o in others:
        p = -2 - r[o]
        kids = np.flatnonzero(np.asarray(PARENT) == p)
        hidden = kids[~np.isin(kids, r)]
        assert hidden.size
        if combine is None:
            assert np.isnan(values[o])
        else:
            assert values[o] == pytest.approx(combine(full[hidden]), rel=1e-6)
    if metric == "peak (inc)":  # the largest hidden peak, never the sum of them
        assert np.nanmax(values[others]) <= full.max()


def test_ensemble_spread_columns_are_not_additive(mixed):
    other = cctviz.Tree.from_parents(
        PARENT,
        NAMES,
        {
            "time": [1.0, 2, 60, 30, 3, 2, 1, 0.5, 20],
            "peak": [1e3, 2e3, 8e6, 2e6, 7e6, 2e6, 8e6, 5e5, 3e6],
            "low": [9.0, 8, 7, 1, 6, 0.5, 5, 4, 3],
            "BlockSize": [0, 0, 256, 128, 64, 32, 16, 8, 0],
        },
        meta=mixed.meta,
    )
    ens = cctviz.Ensemble.from_trees([mixed, other], profiles={"rank": [0, 1]})
    src = MetricSource(ens)
    assert "time (inc) [cost]" in src.metrics and "time (inc) [imbalance]" in src.metrics
    view = cctviz.CCTView(ens, color="time (inc) [max]", max_nodes=6)
    agg, units = view._data["aggregation"], view._data["units"]
    assert agg["time (inc)"] == "sum"
    for stat in ("max", "min", "std", "cost", "imbalance"):
        assert agg[f"time (inc) [{stat}]"] == "none"
        assert not src.is_additive(f"time (inc) [{stat}]")
    # a max over profiles of maxima over subtrees is a max over subtrees
    assert agg["peak (inc) [max]"] == "max" and agg["peak (inc) [min]"] == "none"
    assert agg["low (inc) [min]"] == "min"
    assert units["time (inc) [cost]"] == "us" and units["time (inc) [max]"] == "us"
    assert "time (inc) [imbalance]" not in units  # a ratio
    # a spread column neither sizes the icicle nor fills "other" rows by summing
    assert view.size == ""
    values = col(view, "color")
    assert np.isnan(values[rows(view) < 0]).all()
    np.testing.assert_allclose(
        src.column("time (inc) [cost]"), ens.stats("time (inc)")["cost"].to_numpy()
    )


def test_priority_falls_back_without_an_additive_metric():
    # "a" has the big subtree, "b" the biggest value, "c" neither
    parent = [-1, 0, 1, 1, 1, 1, 0, 0]
    nm = ["main", "a", "a1", "a2", "a3", "a4", "b", "c"]
    only_none = cctviz.Tree.from_parents(
        parent,
        nm,
        {"BlockSize": [1.0, 1, 1, 1, 1, 1, 999, 1]},
        meta={"aggregation": {"BlockSize": "none"}},
    )
    view = cctviz.CCTView(only_none, max_nodes=3)
    assert view._priority_metric() is None
    assert names(view) == ["main", "a", "(other)"]  # the subtree size ranks
    # an inclusive max grows towards the root too: it ranks when nothing adds up
    only_max = cctviz.Tree.from_parents(
        parent,
        nm,
        {"peak": [1.0, 1, 1, 1, 1, 1, 999, 1]},
        meta={"aggregation": {"peak": "max"}},
    )
    view = cctviz.CCTView(only_max, max_nodes=3)
    assert view._priority_metric() == "peak (inc)"
    assert names(view) == ["main", "b", "(other)"]
    # an additive metric beats a max one in use
    both = cctviz.Tree.from_parents(
        parent,
        nm,
        {"peak": [1.0, 1, 1, 1, 1, 1, 999, 1], "time": [1.0, 1, 9, 9, 9, 9, 1, 1]},
        meta={"aggregation": {"peak": "max"}},
    )
    view = cctviz.CCTView(both, color="peak (inc)", max_nodes=3)
    assert view._priority_metric() == "time (inc)"
    assert names(view) == ["main", "a", "(other)"]


# ---------------------------------------------------------------- ensembles


def _rank_tree(solve: float, wait: float, tiny: float) -> cctviz.Tree:
    return cctviz.Tree.from_parents(
        [-1, 0, 0, 0],
        ["main", "solve", "wait", "tiny"],
        {"time": [1.0, solve, wait, tiny]},
        meta={"units": {"time": "ms"}, "status": "complete"},
    )


@pytest.fixture
def killed_run(tmp_path):
    """A run folder as the runtime leaves it when rank 2 of 4 is SIGKILLed:
    run.json says 4 ranks, rank 2 never wrote its file."""
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / RUN_FILE).write_text(json.dumps({"world_size": 4, "run": "r"}))
    # solve: 100 ms on every live rank; wait: rank 1 waits 30 ms; tiny: a
    # 0.1 us call that takes 64 us on rank 3 (the largest ratio, x~3, costs nothing)
    ranks = {0: (100.0, 0.5, 1e-4), 1: (100.0, 30.0, 1e-4), 3: (100.0, 0.5, 0.064)}
    for r, v in ranks.items():
        write_native(_rank_tree(*v), rank_file(folder, r))
    with pytest.warns(UserWarning, match="not complete"):
        ens = cctviz.read(folder)
    return ens


def test_a_killed_rank_drags_neither_min_nor_imbalance(killed_run):
    ens = killed_run
    assert ens.n_profiles == 4 and ens.profiles["ok"].tolist() == [True, True, False, True]
    assert (ens.exclusive_rows["profile"] != 2).all()  # the killed rank has no rows
    view = cctviz.CCTView(ens)
    sp = view._data["spread"]
    assert sp["metric"] == "time (inc)"
    assert sp["profiles"] == 3 and sp["failed"] == 1
    r = rows(view)
    solve = int(np.flatnonzero(r == 1)[0])
    assert col(view, "min", sp)[solve] == pytest.approx(100.0)  # not 0
    assert col(view, "mean", sp)[solve] == pytest.approx(100.0)
    assert col(view, "cost", sp)[solve] == pytest.approx(0.0)
    assert view._data["units"]["time (inc)"] == "ms"
    assert "solve" not in view.imbalance_cues().to_frame()["name"].tolist()
    # the same rows with rank 2 taken for a healthy rank that never entered
    # solve: it counts 0 there, drags the minimum to 0 and looks imbalanced
    # (a healthy rank records at least the root: give rank 2 rank 0's root row)
    root_row = ens.exclusive_rows[
        (ens.exclusive_rows["profile"] == 0) & (ens.exclusive_rows["node"] == 0)
    ].assign(profile=2)
    rows2 = pd.concat([ens.exclusive_rows, root_row], ignore_index=True)
    alive = cctviz.Ensemble(ens.tree, rows2, ens.profiles.assign(ok=True))
    as_zero = cctviz.CCTView(alive)
    sp0 = as_zero._data["spread"]
    assert sp0["profiles"] == 4 and sp0["failed"] == 0
    assert col(as_zero, "min", sp0)[solve] == 0
    assert col(as_zero, "cost", sp0)[solve] == pytest.approx(25.0)
    assert 1 in as_zero.imbalance_cues().ids


def test_the_cue_marks_what_imbalance_costs_not_big_ratios(killed_run):
    ens = killed_run
    view = cctviz.CCTView(ens)
    sp = view._data["spread"]
    st = ens.stats("time (inc)")
    total = st.loc[0, "mean"]  # main: the whole run's mean
    assert sp["cost_threshold"] == pytest.approx(CUE_SHARE * total)
    assert sp["cue_share"] == CUE_SHARE and sp["cue_basis"] == "the total"
    # a peak (rule max) is no total: its threshold is a share of the largest mean
    trees = [
        cctviz.Tree.from_parents(
            [-1, 0],
            ["main", "f"],
            {"mem_peak": [5.0, p]},
            meta={"aggregation": {"mem_peak": "max"}},
        )
        for p in (10.0, 30.0)
    ]
    peaks = cctviz.Ensemble.from_trees(trees)
    sp_peak = cctviz.CCTView(peaks, color="mem_peak (inc)")._data["spread"]
    assert sp_peak["cue_basis"] == "the largest mean"
    assert sp_peak["cost_threshold"] == pytest.approx(CUE_SHARE * 20.0)  # f's mean peak
    node = {n: i for i, n in enumerate(ens.tree.names)}
    wait, tiny = node["wait"], node["tiny"]
    cued = set(ens.tree.names[view.imbalance_cues().ids])
    # wait: rank 1 waits ~20 ms more than the mean; tiny's x~3 costs ~0.04 ms
    assert st.loc[tiny, "imbalance"] > st.loc[wait, "imbalance"]
    assert st.loc[wait, "cost"] > 100 * st.loc[tiny, "cost"]
    assert "wait" in cued and "tiny" not in cued and "solve" not in cued
    # colour by [imbalance] makes tiny the brightest, by [cost] wait (or main, above it)
    by_ratio = cctviz.CCTView(ens, color="time (inc) [imbalance]")
    assert rows(by_ratio)[np.nanargmax(col(by_ratio, "color"))] == tiny
    by_cost = cctviz.CCTView(ens, color="time (inc) [cost]")
    assert rows(by_cost)[np.nanargmax(col(by_cost, "color"))] in (node["main"], wait)
    np.testing.assert_allclose(col(view, "cost", sp), st["cost"].to_numpy()[rows(view)], rtol=1e-6)


def test_cue_threshold_is_the_whole_trees_not_the_focus(killed_run):
    view = cctviz.CCTView(killed_run)
    before = view._data["spread"]["cost_threshold"]
    view.focus = 3  # tiny
    assert view._data["spread"]["cost_threshold"] == before
    assert 3 not in view.imbalance_cues().ids


def test_no_cue_for_a_tree_or_an_all_zero_ensemble(mixed):
    assert len(cctviz.CCTView(mixed).imbalance_cues()) == 0
    z = cctviz.Tree.from_parents([-1, 0], ["main", "f"], {"time": [0.0, 0.0]})
    ens = cctviz.Ensemble.from_trees([z, z])
    view = cctviz.CCTView(ens)
    assert view._data["spread"]["cost_threshold"] is None
    assert len(view.imbalance_cues()) == 0


def test_unit_unknown_metrics_travel_without_a_unit():
    t = cctviz.Tree.from_parents([-1, 0], ["main", "f"], {"time": [1.0, 2.0]})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        view = cctviz.CCTView(t)
    assert view._data["units"] == {}
    assert view._data["color_total"] == pytest.approx(3.0)
    np.testing.assert_allclose(col(view, "exclusive"), [1.0, 2.0])
    assert view._data["exclusive_metric"] == "time"
