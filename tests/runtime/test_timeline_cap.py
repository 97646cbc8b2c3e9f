"""The cap on a rank's trace (``cctviz run --timeline --timeline-limit N``,
``cctviz.profile(timeline=True, timeline_limit=N)``).

What the cap promises, tested here:

- the trace keeps the first ``N`` transitions, then leaves every open context at
  the time of the next one (the cut): it is well formed, and it is the *prefix* of
  the uncapped trace: on any window that ends at the cut, the capped and the
  uncapped timelines aggregate to the same tree (same clock, same job);
- the profile (aggregates) does not depend on the cap;
- the rank's metadata (its profile, the archive's location properties, hence
  ``read_timeline(...).profiles`` and ``.meta["cut_ns"]``) says that the cap was
  hit, where, and how many transitions were dropped.

The runs under ``cctviz run`` at the bottom are real jobs of the example training.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import cctviz
from cctviz.ops.collectives import instances
from cctviz.runtime.launch import LaunchError, parse_limit, run, split_command
from cctviz.runtime.recorder import Recorder
from cctviz.runtime.trace import DEFAULT_LIMIT, TracingRecorder, merge_when_complete, replay

from .conftest import EXAMPLE, example_run
from .test_trace import rebuild

STEPS = 30


def _job(rec: Recorder) -> None:
    """A made-up training job: steps of data, forward (nested modules),
    backward with an all-reduce of 800 B, optimizer; an all-reduce outside too."""
    g = rec.comm_group("WORLD (gloo)", "0", [0]) if rec.tracing else 0
    for _ in range(STEPS):
        d = rec.enter_phase("data")
        rec.exit_phase(d)
        m = rec.enter_module("GPT", root=True)
        for b in ("blocks.0", "blocks.1"):
            k = rec.push(b, "module")
            a = rec.push("attn", "module")
            rec.pop(a)
            rec.pop(k)
        rec.pop(m)
        tok = rec.enter_phase("backward")
        c = rec.enter_leaf("all_reduce", "comm")
        if rec.tracing:
            rec.comm_record(rec.top, "all_reduce", 800, 1, g, -1)
        rec.add(rec.top, "comm_bytes", 800)
        rec.pop(c)
        rec.exit_phase(tok)
        o = rec.enter_phase("optimizer")
        rec.exit_phase(o)
        rec.end_step(by_optimizer=True)
    rec.finish()


def _clock():
    return iter(range(0, 10**9, 7)).__next__  # 7 ns per clock read: no two alike


def _traced(tmp, limit):
    rec = TracingRecorder("job", trace_dir=tmp, limit=limit, clock=_clock())
    _job(rec)
    rec.close_trace({"rank": 0, "world_size": 1, "hostname": "here"})
    assert merge_when_complete(tmp) == tmp / "traces.otf2"
    return rec


def test_the_cap_keeps_a_closed_prefix_of_the_transitions():
    """In memory: the first N rows are the uncapped ones, then one row that
    leaves everything at the time of transition N; the replay is well formed."""
    full = TracingRecorder("job", trace_dir=None, limit=None, clock=_clock())
    _job(full)
    ref = full.event_array()
    for limit in (1, 2, 57, 58, len(ref) - 1):
        rec = TracingRecorder("job", trace_dir=None, limit=limit, clock=_clock())
        _job(rec)
        ev = rec.event_array()
        assert len(ev) == limit + 1
        np.testing.assert_array_equal(ev[:limit], ref[:limit])
        assert ev[-1].tolist() == [ref[limit, 0], 0, -1]  # the cut: everything left
        assert rec.cut_ns == ref[limit, 0] and rec.dropped == len(ref) - limit
        facts = rec.timeline_facts()
        assert facts["timeline_events"] == limit + 1 and facts["timeline_dropped"] == rec.dropped
        stack = []
        for op, x in replay(rec.parent, ev):
            if op == "E":
                stack.append(x)
            elif op == "L":
                assert stack.pop() == x
        assert not stack
        # the collectives entered before the cut keep their records, no later one
        cm = rec.comm_array()
        assert (cm[:, 0] < limit).all()
        assert len(cm) == (full.comm_array()[:, 0] < limit).sum()
    # a cap that is not reached changes nothing
    rec = TracingRecorder("job", trace_dir=None, limit=len(ref), clock=_clock())
    _job(rec)
    np.testing.assert_array_equal(rec.event_array(), ref)
    assert rec.cut_ns is None and rec.dropped == 0


def test_the_profile_does_not_depend_on_the_cap():
    ref = Recorder("job", clock=_clock())
    _job(ref)
    rec = TracingRecorder("job", trace_dir=None, limit=10, clock=_clock())
    _job(rec)
    assert rec.timeline_facts()["timeline_dropped"] > 0
    assert rec.calls == ref.calls and rec.time == ref.time and rec.name == ref.name
    assert rec.columns() == ref.columns()


@pytest.mark.parametrize("limit", [5, 200, 401])
def test_capped_archive_is_the_window_before_the_cut(tmp_path, limit):
    """Through the archive: the capped timeline's tree equals the uncapped one's
    window from the start to the cut (time exactly; calls and bytes of what starts
    before the cut), and its metadata names the cut and the dropped transitions."""
    _traced(tmp_path / "full", None)
    rec = _traced(tmp_path / "capped", limit)
    full = cctviz.read_timeline(tmp_path / "full")
    with pytest.warns(UserWarning, match=r"stops early on 1 of 1 profiles.*rank 0: [\d,]+ trans"):
        capped = cctviz.read_timeline(tmp_path / "capped")
    row = capped.profiles.iloc[0]
    assert row["timeline_limit"] == limit and row["timeline_events"] == limit + 1
    assert row["timeline_dropped"] == rec.dropped > 0
    assert row["timeline_cut_ns"] == rec.cut_ns == capped.meta["cut_ns"]
    assert full.meta["cut_ns"] is None and full.profiles.iloc[0]["timeline_dropped"] == 0
    t0, cut = full.span[0], capped.meta["cut_ns"]
    assert capped.span == (t0, cut)
    a = capped.window(t0, cut).ensemble()
    b = full.window(t0, cut).ensemble()
    pa = pd.Series(range(len(a.tree)), index=a.tree.callpaths)
    pb = pd.Series(range(len(b.tree)), index=b.tree.callpaths)
    assert {"time", "calls"} <= set(a.tree.exc_metrics) <= set(b.tree.exc_metrics)
    for m in b.tree.exc_metrics:
        if m not in a.tree.exc_metrics:  # no collective before the cut
            assert (b.values(m) == 0).all(), m
            continue
        va = pd.Series(a.values(m)[pa.to_numpy(), 0], index=pa.index)
        vb = pd.Series(b.values(m)[pb.to_numpy(), 0], index=pb.index).reindex(pa.index)
        np.testing.assert_array_equal(va.to_numpy(), vb.to_numpy(), err_msg=m)
        # what the window leaves out of the uncapped run is not in the capped one
        rest = pd.Series(b.values(m)[pb.to_numpy(), 0], index=pb.index).drop(pa.index)
        assert (rest == 0).all(), m
    # the whole capped trace: the window's time exactly (zero-length calls at the cut aside)
    whole = capped.ensemble()
    assert whole.values("time").sum() == cut - t0 == b.values("time").sum()


def test_limit_options():
    assert parse_limit(None) == DEFAULT_LIMIT and parse_limit("none") is None
    assert parse_limit("12") == 12
    for bad in ("0", "-3", "many"):
        with pytest.raises(LaunchError, match="--timeline-limit"):
            parse_limit(bad)
    _, ours, script, args, _ = split_command(
        ["--timeline", "--timeline-limit", "50", "train.py", "--timeline-limit", "x"]
    )
    assert ours["timeline_limit"] == "50" and args == ["--timeline-limit", "x"]
    with pytest.raises(ValueError, match="timeline_limit must be a positive"):
        cctviz.profile(out="/tmp/unused", timeline=True, timeline_limit=0)
    with pytest.raises(LaunchError, match="give --timeline"):  # a cap of nothing
        run(["--timeline-limit", "5", str(EXAMPLE)])


# ------------------------------------------------------------ real runs
@pytest.fixture(scope="module")
def capped_runs(tmp_path_factory):
    """The DDP example traced with a cap it hits (200 transitions) and one it
    does not (the default), and untraced, 2 ranks, 6 steps each."""
    d = tmp_path_factory.mktemp("capped")
    runs = {}
    for name, extra in {
        "tiny": ("--timeline", "--timeline-limit", "200"),
        "default": ("--timeline",),
        "plain": (),
    }.items():
        runs[name], _ = example_run(d / name, "ddp", steps=6, warmup=1, extra=extra)
    return runs


def _calls_by_path(ens) -> pd.DataFrame:
    return pd.DataFrame(ens.values("calls"), index=ens.tree.callpaths)


def test_a_cap_that_is_hit(capped_runs):
    run = capped_runs["tiny"]
    prof = cctviz.read(run)
    p = prof.profiles.set_index("rank")
    assert (p["timeline_limit"] == 200).all() and (p["timeline_events"] == 201).all()
    assert (p["timeline_dropped"] > 0).all() and p["timeline_cut_ns"].notna().all()
    with pytest.warns(UserWarning, match="stops early on 2 of 2 profiles"):
        tl = cctviz.read_timeline(run)
    # the archive says the same as the rank files (one host: the same clock)
    q = tl.profiles.set_index("rank")
    for k in ("timeline_limit", "timeline_events", "timeline_dropped", "timeline_cut_ns"):
        np.testing.assert_array_equal(q[k].to_numpy(), p.loc[q.index, k].to_numpy(), err_msg=k)
    assert tl.meta["cut_ns"] == p["timeline_cut_ns"].min()
    # collective calls are matched before the earliest cut only (every rank complete)
    inst = instances(tl)
    comm = tl.events[tl.tree.nodes["kind"].to_numpy()[tl.events["node"].to_numpy()] == "comm"]
    assert len(inst) and (inst["arrival"] < tl.meta["cut_ns"]).all()
    assert (comm["start"] >= tl.meta["cut_ns"]).any() or len(inst) == len(comm)
    # well formed: every Enter has its Leave, nothing left open (rebuild asserts it)
    t = rebuild(run / "timeline" / "traces.otf2")
    assert set(t) >= {"rank 0", "rank 1"}
    # each rank's trace spans its start to its cut; a prefix of its profile
    ens = tl.ensemble()
    pa = pd.Series(range(len(prof.tree)), index=prof.tree.callpaths)
    for r in (0, 1):
        ev = tl.events[tl.events["profile"] == r]
        assert ev["end"].max() == q.loc[r, "timeline_cut_ns"]
        assert ens.values("time")[:, r].sum() == ev["end"].max() - ev["start"].min()
        mine = ens.values("calls")[:, r]
        theirs = prof.values("calls")[pa[ens.tree.callpaths].to_numpy(), r]
        assert (mine <= theirs).all() and mine.sum() < theirs.sum()
        t_mine = ens.values("time")[:, r]
        t_theirs = prof.values("time")[pa[ens.tree.callpaths].to_numpy(), r]
        assert (t_mine <= t_theirs).all()


def test_a_cap_that_is_not_hit(capped_runs):
    run = capped_runs["default"]
    p = cctviz.read(run).profiles
    assert (p["timeline_limit"] == DEFAULT_LIMIT).all() and (p["timeline_dropped"] == 0).all()
    assert p["timeline_cut_ns"].isna().all()
    assert (p["timeline_events"] < DEFAULT_LIMIT).all()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning: the trace is whole
        tl = cctviz.read_timeline(run)
    assert tl.meta["cut_ns"] is None and (tl.profiles["timeline_dropped"] == 0).all()
    # the whole run: the timeline aggregates to the profile
    ens, prof = tl.ensemble(), cctviz.read(run)
    a = pd.DataFrame(ens.values("time"), index=ens.tree.callpaths)
    b = pd.DataFrame(prof.values("time"), index=prof.tree.callpaths).reindex(a.index)
    np.testing.assert_allclose(a.to_numpy(), b.to_numpy(), atol=1)


def test_nothing_is_lost_from_the_profile(capped_runs):
    """The same job untraced, traced, and traced past its cap: the same contexts
    and the same calls on every rank (times differ from run to run)."""
    plain = _calls_by_path(cctviz.read(capped_runs["plain"]))
    for name in ("tiny", "default"):
        other = _calls_by_path(cctviz.read(capped_runs[name]))
        assert set(other.index) == set(plain.index), name
        pd.testing.assert_frame_equal(other.loc[plain.index], plain, check_names=False)


def test_a_cut_timeline_replays_with_a_warning(capped_runs):
    """The replay says the trace was cut and replays the recorded part as measured."""
    from cctviz.perfmodel import ReplayWarning, replay

    with pytest.warns(UserWarning, match="stops early"):
        tl = cctviz.read_timeline(capped_runs["tiny"])
    with pytest.warns(ReplayWarning, match="cut by --timeline-limit"):
        rp = replay(tl)
    s, e = rp.event_times()
    ev = tl.events
    done = np.isfinite(e)
    assert done.any()
    # what was recorded replays as measured
    np.testing.assert_allclose(e[done], ev["end"].to_numpy()[done], rtol=0, atol=1_000)
