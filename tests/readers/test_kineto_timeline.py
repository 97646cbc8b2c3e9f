"""Kineto traces as timelines (issue 21): `read_timeline(x).ensemble()` equals
`read(x)` on every Kineto sample in ../shared/data (the timeline in ns, the tree in
the trace's us), and windows that tile a trace sum back to it."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import cctviz
from tests.conftest import DATA

SAMPLES = sorted((DATA / "kineto").glob("*.json*"))
#: metric -> factor from read()'s unit (us for times) to the timeline's (ns)
METRICS = {
    "time": 1e3,
    "gpu_time": 1e3,
    "comm_time": 1e3,
    "calls": 1,
    "comm_bytes": 1,
    "bus_bytes": 1,
}


@pytest.fixture(scope="module", params=SAMPLES, ids=lambda p: p.name[:40])
def pair(request):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the readers' notes on odd events, said elsewhere
        return cctviz.read_timeline(request.param), cctviz.read(request.param)


def test_there_are_samples():
    assert len(SAMPLES) >= 5


def test_the_timeline_aggregates_to_the_tree(pair):
    tl, tree = pair
    ens = tl.ensemble()
    assert ens.tree.nodes["name"].tolist() == tree.nodes["name"].tolist()
    assert ens.tree.units["time"] == "ns" and tree.units["time"] == "us"
    for m, k in METRICS.items():
        want = tree.metrics[m].to_numpy() * k
        got = ens.values(m)[:, 0] if m in ens.tree.exc_metrics else np.zeros(len(tree))
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-6, err_msg=m)


def test_tiles_sum_to_the_trace(pair):
    tl, _ = pair
    t0, t1 = tl.span
    cuts = t0 + np.arange(5, dtype=np.int64) * (t1 + 1 - t0) // 4  # ints: epoch ns pass 2**53
    whole = tl.ensemble()
    parts = [tl.window(a, b).ensemble() for a, b in zip(cuts[:-1], cuts[1:])]
    for m in ("calls", "gpu_time"):
        if m in whole.tree.exc_metrics:
            np.testing.assert_allclose(sum(p.values(m) for p in parts), whole.values(m), err_msg=m)
    # exclusive time: the same, where no event overlaps a sibling (the own time of an
    # event is clamped at 0 per window, as the reader clamps it per event)
    total = sum(p.values("time") for p in parts)
    assert np.all(total >= whole.values("time") - 1e-6)


RANKS = sorted((DATA / "kineto").glob("hta_trace_filter_sampled_rank-*.json.gz"))


def test_the_ranks_of_a_job_make_one_timeline_and_their_calls_pair_up():
    """The two sampled ranks of one NCCL job: one timeline (a glob or a list), on one
    clock (epoch ns), and `instances()` pairs their collective calls: an all-reduce
    moves as many bytes on both ranks, and one of the two waits for the other."""
    from cctviz.ops.collectives import instances

    assert len(RANKS) == 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tl = cctviz.read_timeline(str(DATA / "kineto" / "hta_trace_filter_sampled_rank-*.json.gz"))
        again = cctviz.read_timeline(RANKS)
    assert tl.n_profiles == 2 and tl.profiles["rank"].tolist() == [0, 1]
    assert len(tl) == len(again) and tl.span == again.span
    t0 = [tl.events.loc[tl.events["profile"] == p, "start"].min() for p in (0, 1)]
    assert abs(t0[0] - t0[1]) < 10**9  # the same second of the epoch: one clock
    inst = instances(tl)
    pairs = inst[inst["ranks"] == 2]
    # 7 calls of a context fall in both sampled windows, but the all-reduces were
    # sampled (4 per rank, 2 of them the same calls): by order alone 2 were paired
    # with a call 98 and 209 ms away (docs/known-issues.md); aligned, those stay unpaired
    assert pairs["instance"].nunique() == 5
    assert set(inst.loc[inst["collective"] == "c10d::allreduce_", "matched"]) == {"aligned"}
    assert "seq" not in tl.events.columns  # these traces record no sequence number
    per = pairs.groupby("instance").agg(
        kinds=("collective", "nunique"),
        sizes=("bytes", "nunique"),
        gap=("end", lambda a: a.max() - a.min()),
    )
    assert (per["kinds"] == 1).all()
    same_size = pairs.groupby("instance")["collective"].first() != "c10d::alltoall_base_"
    assert (per.loc[same_size, "sizes"] == 1).all() and same_size.sum() == 4
    assert (per["gap"] < 20 * 10**6).all()
    # what the ranks' times say: each paired call's partner is, among the other rank's
    # calls of its context that move as many bytes, the one closest in time
    for _, pair in pairs[pairs["instance"].isin(per.index[same_size])].groupby("instance"):
        for _, call in pair.iterrows():
            other = inst[
                (inst["node"] == call["node"])
                & (inst["profile"] != call["profile"])
                & (inst["bytes"] == call["bytes"])
            ]
            nearest = other.loc[(other["end"] - call["end"]).abs().idxmin()]
            assert nearest["instance"] == call["instance"]
    waits = pairs.groupby("instance")["wait"].agg(["min", "max"])
    assert (waits["min"] == 0).all() and (waits["max"] >= 0).all()


def _memory_events(path) -> list[dict]:
    import gzip
    import json

    with gzip.open(path, "rt") as f:
        doc = json.load(f)
    return [e for e in doc["traceEvents"] if e.get("name") == "[memory]"]


def test_memory_events_are_counter_tracks_per_device():
    """The only sample with [memory] events (2021: Bytes only, no totals): one
    allocated track per device, the running sum of Bytes in time order, in B, at
    the events' times on the timeline's clock."""
    path = DATA / "kineto" / "kineto_tb_resnet50_2021.json.gz"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tl = cctviz.read_timeline(path)
    mem = _memory_events(path)
    c = tl.counters
    assert set(c["track"]) == {"memory allocated (cpu)", "memory allocated (cuda:0)"}
    assert all(tl.units[t] == "B" for t in set(c["track"]))
    assert sorted(tl.meta["memory_from_bytes"]) == sorted(set(c["track"]))
    for track, dtype in (("memory allocated (cpu)", 0), ("memory allocated (cuda:0)", 1)):
        mine = sorted((e for e in mem if e["args"]["Device Type"] == dtype), key=lambda e: e["ts"])
        got = c[c["track"] == track]
        assert len(got) == len(mine) > 1000
        np.testing.assert_array_equal(got["value"], np.cumsum([e["args"]["Bytes"] for e in mine]))
        assert got["value"].iloc[-1] == sum(e["args"]["Bytes"] for e in mine)
        np.testing.assert_array_equal(got["ts"], [round(e["ts"] * 1000) for e in mine])
    t0, t1 = tl.span
    assert t0 <= c["ts"].min() and c["ts"].max() <= t1
    # a window keeps the samples inside it
    w = tl.window(t0, (t0 + t1) // 2)
    assert 0 < len(w.counters) < len(c) and (w.counters["ts"] < (t0 + t1) // 2).all()


def test_a_base_time_puts_the_trace_on_the_epoch():
    path = DATA / "kineto" / "hta_nccl_parser_config_nccl_data.json.gz"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tl = cctviz.read_timeline(path)
    assert tl.span[0] > 1_700_000_000 * 10**9  # 2023 or later, in ns
