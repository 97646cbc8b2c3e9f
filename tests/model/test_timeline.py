"""The Timeline model (cctviz/model/timeline.py) on real traces and small cases.

- `read_timeline(x).ensemble()` equals `read(x)` on the OTF2 samples (time to the
  ns the events are rounded to; calls and communication metrics exactly);
- windows that tile a run sum back to the whole, for every additive metric;
- a window's ensemble is the tree of just that time; steps select by step number;
- bad events are refused with a message that names the problem.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cctviz
from cctviz.model.timeline import Timeline
from tests.conftest import DATA
from tests.hypothesis_profiles import examples

OTF2_SAMPLES = sorted(DATA.glob("pipit/*/traces.otf2"))


@pytest.fixture(scope="module", params=OTF2_SAMPLES, ids=lambda p: p.parent.name)
def sample(request):
    return request.param, cctviz.read_timeline(request.param)


def test_there_are_samples():
    assert len(OTF2_SAMPLES) >= 2


def test_the_timeline_aggregates_to_what_read_gives(sample):
    path, tl = sample
    ref = cctviz.read(path)
    ens = tl.ensemble()
    assert ens.tree.nodes["name"].tolist() == ref.tree.nodes["name"].tolist()
    assert ens.n_profiles == ref.n_profiles == tl.n_profiles
    pd.testing.assert_frame_equal(
        ens.profiles.reset_index(drop=True), ref.profiles.reset_index(drop=True)
    )
    # every metric the timeline knows; PAPI counters are not events (not in it)
    for m in ("calls", "comm_bytes", "bus_bytes"):
        np.testing.assert_array_equal(ens.values(m), ref.values(m), err_msg=m)
    events_per_cell = max(1, len(tl))
    for m in ("time", "comm_time"):
        np.testing.assert_allclose(ens.values(m), ref.values(m), atol=events_per_cell, err_msg=m)
    assert ens.tree.units["time"] == "ns" and ens.tree.units["comm_bytes"] == "B"


@pytest.mark.parametrize("pieces", [2, 7])
def test_windows_that_tile_the_run_sum_to_the_whole(sample, pieces):
    _, tl = sample
    t0, t1 = tl.span
    cuts = t0 + np.arange(pieces + 1, dtype=np.int64) * (t1 + 1 - t0) // pieces
    whole = tl.ensemble()
    parts = [tl.window(a, b).ensemble() for a, b in zip(cuts[:-1], cuts[1:])]
    for m in whole.tree.exc_metrics:
        total = sum(p.values(m) for p in parts)
        np.testing.assert_allclose(total, whole.values(m), atol=1e-6, err_msg=m)


def test_a_window_is_the_tree_of_that_time():
    tree = cctviz.Tree.from_parents([-1, 0, 0], ["main", "solve", "io"])
    ev = pd.DataFrame(
        {"profile": [0, 0, 0], "node": [0, 1, 2], "start": [0, 10, 60], "end": [100, 50, 90]}
    )
    tl = Timeline(tree, ev)
    w = tl.window(40, 70).ensemble()
    # main [40, 70) less solve [40, 50) and io [60, 70)
    assert w.values("time")[:, 0].tolist() == [10.0, 10.0, 10.0]
    assert w.values("calls")[:, 0].tolist() == [0.0, 0.0, 1.0]  # io starts in it
    with pytest.raises(ValueError, match="before t0"):
        tl.window(5, 1)


def test_steps_select_their_time():
    tree = cctviz.Tree.from_parents(
        [-1, 0, 1], ["main", "step", "f"], kind=["root", "step", "function"]
    )
    ev = pd.DataFrame(
        {
            "profile": [0] * 5,
            "node": [0, 1, 2, 1, 2],
            "start": [0, 0, 2, 10, 13],
            "end": [20, 10, 5, 20, 19],
            "step": [-1, 0, 0, 1, 1],
        }
    )
    tl = Timeline(tree, ev)
    one = tl.steps(1).ensemble()
    assert one.values("time (inc)")[:, 0].tolist() == [10.0, 10.0, 6.0]
    assert tl.steps(0, 1).ensemble().values("time (inc)")[0, 0] == 20.0
    with pytest.raises(ValueError, match="no event in steps 5"):
        tl.steps(5)


@pytest.mark.parametrize(
    "bad, message",
    [
        ({"node": [0, 9]}, r"node ids must be in \[0, 2\)"),
        ({"end": [5, 1]}, "event 1 ends before it starts"),
    ],
)
def test_bad_events_are_refused(bad, message):
    tree = cctviz.Tree.from_parents([-1, 0], ["main", "f"])
    ev = pd.DataFrame({"profile": [0, 0], "node": [0, 1], "start": [0, 2], "end": [10, 4]})
    with pytest.raises(ValueError, match=message):
        Timeline(tree, ev.assign(**bad))
    with pytest.raises(ValueError, match="missing column"):
        Timeline(tree, ev.drop(columns="end"))


@st.composite
def nested_events(draw):
    """Random well-nested intervals of 1-3 profiles on a chain main > a > b."""
    rows = []
    for p in range(draw(st.integers(1, 3))):
        t = 0
        for _ in range(draw(st.integers(1, 4))):
            a0 = t + draw(st.integers(0, 5))
            a1 = a0 + draw(st.integers(0, 20))
            rows.append((p, 1, a0, a1))
            if a1 > a0:
                b0 = draw(st.integers(a0, a1))
                rows.append((p, 2, b0, draw(st.integers(b0, a1))))
            t = a1
        rows.append((p, 0, 0, t + 3))
    return pd.DataFrame(rows, columns=["profile", "node", "start", "end"])


@given(nested_events(), st.lists(st.integers(-5, 90), min_size=1, max_size=5))
@settings(max_examples=examples(100), deadline=None)
def test_any_tiling_sums_to_the_whole(ev, cuts):
    tree = cctviz.Tree.from_parents([-1, 0, 1], ["main", "a", "b"])
    tl = Timeline(tree, ev)
    edges = sorted({-10, *cuts, 1000})
    whole = tl.ensemble()
    for m in ("time", "calls"):
        total = sum(tl.window(a, b).ensemble().values(m) for a, b in zip(edges[:-1], edges[1:]))
        np.testing.assert_allclose(total, whole.values(m))
    # exclusive time is never negative when intervals nest
    assert (whole.values("time") >= 0).all()
