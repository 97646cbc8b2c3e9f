"""The replay on real traces and on small hand-made ones whose answer is known
(issue 36): what a trace lacks, bad input, the graph's rules."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import cctviz
from cctviz.cli import main
from cctviz.model.timeline import Timeline
from cctviz.model.tree import Tree
from cctviz.perfmodel import Balance, Bandwidth, Delay, ReplayWarning, Scale, replay

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
PINGPONG = DATA / "pipit" / "ping-pong-otf2" / "traces.otf2"
CPU_ONLY = DATA / "kineto" / "hta_cpu_only_rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"
GPU = DATA / "kineto" / "kineto_tb_resnet50_2021.json.gz"


def two_ranks(work=(50, 10), transfer=10) -> Timeline:
    """Two ranks, one step: ``work`` then an all-reduce that ends ``transfer`` ns
    after the later one arrives."""
    tree = Tree.from_parents(
        [-1, 0, 1, 1], ["main", "step", "work", "all_reduce"], kind=["root", "step", "func", "comm"]
    )
    end = max(work) + transfer
    ev = pd.DataFrame({
        "profile": [0, 0, 0, 0, 1, 1, 1, 1], "node": [0, 1, 2, 3] * 2,
        "start": [0, 0, 0, work[0], 0, 0, 0, work[1]],
        "end": [end, end, work[0], end, end, end, work[1], end],
    })  # fmt: skip
    return Timeline(tree, ev)


def test_the_late_rank_decides_the_collective():
    rp = replay(two_ranks())
    assert rp.steps["replayed [s]"].iloc[0] == pytest.approx(60e-9)
    # the early rank waits: halving its work changes nothing, halving the late one's does
    assert rp.what_if(Scale("work", 0.5, ranks=[1])).steps["replayed [s]"].iloc[0] == pytest.approx(
        60e-9
    )
    assert rp.what_if(Scale("work", 0.5, ranks=[0])).steps["replayed [s]"].iloc[0] == pytest.approx(
        35e-9
    )
    # balanced: rank 0 takes the lower median of (50, 10): the wait is gone
    assert rp.what_if(Balance("work")).steps["replayed [s]"].iloc[0] == pytest.approx(20e-9)
    assert rp.what_if(Bandwidth(2.0)).steps["replayed [s]"].iloc[0] == pytest.approx(55e-9)
    assert rp.what_if(Delay("work", 5e-9, ranks=[1])).steps["replayed [s]"].iloc[
        0
    ] == pytest.approx(60e-9)
    cp = rp.critical_path()
    assert cp.length == pytest.approx(60e-9)
    # the path is the late rank's work, then the transfer: never the other's wait
    seg = cp.segments
    assert seg["kind"].tolist() == ["compute", "comm"]
    assert seg["rank"].iloc[0] == 0 and seg["path"].iloc[0] == "main/step/work"
    assert cp.by_context["share"].sum() == pytest.approx(1.0)


def test_the_measured_order_is_kept_where_nobody_waits():
    rp = replay(two_ranks(work=(30, 30), transfer=5))
    assert rp.steps["measured [s]"].iloc[0] == rp.steps["replayed [s]"].iloc[0]


def test_a_where_that_matches_nothing_is_an_error_naming_it():
    rp = replay(two_ranks())
    with pytest.raises(ValueError, match="'nothing_here' matches no context"):
        rp.what_if(Scale("nothing_here", 2.0))
    with pytest.raises(ValueError, match="no collective call named 'gather'"):
        rp.what_if(Bandwidth(2.0, collective="gather"))
    with pytest.raises(TypeError, match="not a change"):
        rp.what_if("faster")


def test_a_query_selects_as_a_name_does():
    rp = replay(two_ranks())
    by_query = rp.what_if(Scale('MATCH ("*")->(a) WHERE a."name" = "work"', 0.5)).steps
    by_name = rp.what_if(Scale("work", 0.5)).steps
    assert by_query.equals(by_name)
    assert by_name["replayed [s]"].iloc[0] == pytest.approx(35e-9)
    # a name matches whole: "ork" names nothing
    with pytest.raises(ValueError, match="matches no context"):
        rp.what_if(Scale("ork", 0.5))


def test_a_trace_without_steps_is_one_step_and_says_so():
    with pytest.warns(ReplayWarning, match="no step markers"):
        rp = replay(PINGPONG)
    assert len(rp.steps) == 1
    s = rp.steps.iloc[0]
    assert s["replayed [s]"] == pytest.approx(s["measured [s]"], rel=0.02)
    assert rp.critical_path().length == pytest.approx(s["span [s]"], rel=0.01)


def test_one_rank_the_path_is_that_ranks():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ReplayWarning)  # the job's other ranks are missing
        rp = replay(CPU_ONLY)
    cp = rp.critical_path()
    assert set(cp.segments["profile"]) == {0}
    assert cp.length == pytest.approx(rp.steps["span [s]"].sum(), rel=0.01)
    ens = cp.ensemble()
    assert "critical" in ens.tree.metrics.columns
    # what the path holds, per node, is what the segments say
    total = ens.values("critical").sum() / 1e9
    assert total == pytest.approx(cp.length, rel=0.01)


def test_a_missing_rank_is_said():
    with pytest.warns(ReplayWarning, match=r"rank\(s\) \[0, 1, 2"):
        replay(CPU_ONLY)


KINETO = sorted((DATA / "kineto").glob("*.json*"))


@pytest.mark.parametrize("path", KINETO, ids=[p.name[:40] for p in KINETO])
def test_every_kineto_sample_replays_within_2_percent(path):
    """Host threads, GPU streams (kernels after their launch and the work before them
    on their stream; synchronisations after the work they waited for)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ReplayWarning)  # sampled ranks: the others missing
        rp = replay(path)
    err = (rp.steps["replayed [s]"] / rp.steps["measured [s]"] - 1).abs()
    assert err.max() <= 0.002, rp.steps  # every step within 0.2% (2% asked)


def test_a_gpu_step_s_path_names_kernels_and_launches():
    rp = replay(GPU)
    cp = rp.critical_path()
    kinds = set(cp.segments["kind"])
    assert {"gpu", "launch", "compute"} <= kinds, kinds
    gpu = cp.segments[cp.segments["kind"] == "gpu"]
    names = set(rp.timeline.tree.nodes["name"].iloc[gpu["node"]])
    assert any("Memcpy" in n or "kernel" in n.lower() or "cudnn" in n for n in names), names
    # GPU work twice as fast: no step is slower, and the steps whose path holds GPU
    # work are faster
    tree = rp.timeline.tree
    device = tree.select(np.flatnonzero(tree.nodes["kind"].isin(["kernel", "memcpy", "memset"])))
    saved = rp.steps["replayed [s]"] - rp.what_if(Scale(device, 0.5)).steps["replayed [s]"]
    assert (saved >= -1e-9).all() and saved.loc[sorted(set(gpu["step"]))].gt(0).all(), saved


def test_the_cli_prints_measured_replayed_and_predicted(capsys):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ReplayWarning)
        assert main(["whatif", str(PINGPONG), "--scale", "MPI_Recv=0.5", "--top", "3"]) == 0
    out = capsys.readouterr().out
    assert "measured [s]" in out and "predicted [s]" in out and "opportunities" in out
    assert main(["whatif", str(PINGPONG), "--scale", "nothing=0.5"]) == 2
    assert "matches no context" in capsys.readouterr().err


def test_replay_takes_a_timeline_or_a_path_only():
    with pytest.raises(TypeError, match="Timeline or a path"):
        replay(42)
    with pytest.warns(ReplayWarning):
        assert len(replay(cctviz.read_timeline(PINGPONG)).steps) == 1


def test_a_receive_waits_for_its_send():
    """Ping-pong (OTF2, 2 ranks, both 0.19 s in MPI_Init): halving one rank's
    MPI_Init gains nothing, since its first receive waits for the other's send;
    halving both halves the run. The path crosses ranks at the messages."""
    with pytest.warns(ReplayWarning, match="no step markers"):
        rp = replay(PINGPONG)
    one = rp.what_if(Scale("MPI_Init", 0.5, ranks=[0])).steps["replayed [s]"].iloc[0]
    both = rp.what_if(Scale("MPI_Init", 0.5)).steps["replayed [s]"].iloc[0]
    measured = rp.steps["measured [s]"].iloc[0]
    assert one == pytest.approx(measured, rel=1e-3)
    assert both < 0.6 * measured
    seg = rp.critical_path().segments
    assert set(seg["rank"]) == {0, 1}
    recv = seg[seg["path"].str.endswith("MPI_Recv")]
    assert (recv["kind"] == "comm").all() and len(recv)


def test_the_timeline_draws_the_path_across_ranks(tmp_path):
    from cctviz.views.timeline import TimelineView

    tl = cctviz.read_timeline(PINGPONG)
    with pytest.warns(ReplayWarning):
        cp = replay(tl).critical_path()
    view = TimelineView(tl, critical_path=cp)
    data = view._data
    assert data["p"] >= 2 and set(np.asarray(data["path_lane"]).tolist()) == {0, 1}
    # its runs cover the path: their time is the path's within the window
    covered = float(np.sum(np.asarray(data["path_x1"]) - np.asarray(data["path_x0"])))
    shown = cp.segments["end [s]"] - cp.segments["start [s]"]
    assert covered == pytest.approx(float(shown.sum()), rel=0.01)
    svg = view.save(tmp_path / "path.svg", width="7in", font_size=8).read_text()
    assert 'class="cctviz-critical"' in svg and "critical path (across ranks)" in svg
    view.show_critical_path(None)
    assert view._data["p"] == 0
    with pytest.raises(TypeError, match="CriticalPath"):
        view.show_critical_path("the path")


def test_gpu_work_without_a_wait_is_said():
    with pytest.warns(ReplayWarning, match="no host call that waits for it"):
        replay(DATA / "kineto" / "hta_call_stack_backward_thread.json")


US = 1_000  # ns


def async_rank(wait_leaf: bool = False, tail: int = 5) -> Timeline:
    """Two ranks, in us: ``work`` (rank 0: 40, rank 1: 10), then an asynchronous
    all-reduce issued at its end that returns 1 us later and completes at 60 (its
    ``comm_time``: rank 0 arrives last, the transfer takes 20), then the rank waits
    for it (a ``wait`` call, or the end of ``phase``) and works ``tail`` more."""
    names = ["main", "step", "phase", "work", "all_reduce"] + (["wait"] if wait_leaf else [])
    parent = [-1, 0, 1, 2, 2] + ([2] if wait_leaf else [])
    kind = ["root", "step", "phase", "func", "comm"] + (["comm"] if wait_leaf else [])
    tree = Tree.from_parents(parent, names, kind=kind)
    rows = []
    for r, work in enumerate((40, 10)):
        end = (60 + tail) * US
        rows += [(r, 0, 0, end, np.nan), (r, 1, 0, end, np.nan), (r, 2, 0, end, np.nan),
                 (r, 3, 0, work * US, np.nan),
                 (r, 4, work * US, (work + 1) * US, float((60 - work) * US))]  # fmt: skip
        if wait_leaf:
            rows.append((r, 5, (work + 2) * US, 60 * US, np.nan))
    ev = pd.DataFrame(rows, columns=["profile", "node", "start", "end", "comm_time"])
    return Timeline(
        tree, ev, meta={"event_metrics": {"comm_time": "ns"}}, units={"comm_time": "ns"}
    )


@pytest.mark.parametrize("wait_leaf", [False, True], ids=["at-the-end", "wait-call"])
def test_an_asynchronous_call_is_waited_for_where_the_rank_waits(wait_leaf):
    rp = replay(async_rank(wait_leaf=wait_leaf))
    assert (rp.graph.c_type == 2).sum() == 2  # two ISSUE chunks: the calls return early
    s = rp.steps
    assert s["replayed [s]"].iloc[0] == pytest.approx(s["measured [s]"].iloc[0])
    # rank 0's work is what both wait for: halving it moves both by 20 us
    faster = rp.what_if(Scale("work", 0.5, ranks=[0])).steps["replayed [s]"].iloc[0]
    assert faster == pytest.approx(s["replayed [s]"].iloc[0] - 20e-6)
    # rank 1's work is not
    same = rp.what_if(Scale("work", 0.5, ranks=[1])).steps["replayed [s]"].iloc[0]
    assert same == pytest.approx(s["replayed [s]"].iloc[0])
    # the path: rank 0's work, the transfer, the tail; its segments cover its length
    cp = rp.critical_path(0)
    seg = cp.segments
    covered = float((seg["end [s]"] - seg["start [s]"]).sum())
    assert covered == pytest.approx(cp.length, rel=1e-3)
    comm = seg[seg["kind"] == "comm"]
    assert (comm["end [s]"] - comm["start [s]"]).sum() >= 19e-6  # the 20 us transfer
    assert seg.loc[seg["path"].str.endswith("work"), "rank"].eq(0).all()


def test_scale_and_balance_leave_a_measured_wait_out():
    """A sync's own time after its wait is what a change scales, never the wait."""
    rp = replay(async_rank(tail=5))
    base = rp.steps["replayed [s]"].iloc[0]
    # twice phase on rank 1: its work (10 -> 20 us, still early), its all-reduce's
    # transfer (20 -> 40 us after the last arrival at 40) and its own 5 us tail after
    # the wait (-> 10): rank 1 ends at 80 + 10 = 90 us, 25 us later (12.5 us on the
    # mean over the ranks). Counting the 49 us wait as its own time would add 49 more.
    doubled = rp.what_if(Scale("phase", 2.0, ranks=[1])).steps["replayed [s]"].iloc[0]
    assert doubled - base == pytest.approx(12.5e-6, rel=0.01)
    # balancing phase: its computation per rank is work + tail (45 and 15 us; the
    # waits, 19 and 49 us, are not), rank 0 takes 15: work 13.3, tail 1.7 us; the
    # all-reduce completes at 13.3 + 20 = 33.3; rank 0 ends at 35, rank 1 at 38.3
    balanced = rp.what_if(Balance("phase")).steps["replayed [s]"].iloc[0]
    assert balanced == pytest.approx((35 + 38.333333) / 2 * 1e-6, rel=1e-4)


def test_every_step_s_path_starts_where_the_one_before_ended():
    """Ranks drift: one starts a step while another ends the one before. The paths
    of all steps do not overlap, and each covers its stretch."""
    rp = replay(GPU)
    cp = rp.critical_path()
    seg = cp.segments.sort_values("start [s]")
    assert (seg["start [s]"].to_numpy()[1:] >= seg["end [s]"].to_numpy()[:-1] - 1e-9).all()
    total = float((seg["end [s]"] - seg["start [s]"]).sum())
    assert total <= cp.length + 1e-9


def test_balance_works_on_profiler_steps():
    """Kineto's steps are ProfilerStep# intervals: Balance finds them."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ReplayWarning)
        rp = replay(DATA / "kineto" / "hta_trace_filter_sampled_rank-0.json.gz")
    assert (rp.piece_steps() >= 0).any()


def test_a_delay_on_a_call_outside_any_collective_counts():
    tree = Tree.from_parents(
        [-1, 0, 1], ["main", "step", "barrier_wait"], kind=["root", "step", "comm"]
    )
    ev = pd.DataFrame(
        {"profile": [0, 0, 0], "node": [0, 1, 2], "start": [0, 0, 10], "end": [50, 50, 40]}
    )
    rp = replay(Timeline(tree, ev))
    later = rp.what_if(Delay("barrier_wait", 20e-9)).steps["replayed [s]"].iloc[0]
    assert later == pytest.approx(70e-9)


def test_sends_and_receives_without_their_peer_are_not_collectives():
    """Without the peer of each message, a rank's k-th send is not matched with
    another rank's k-th send (that made a cycle: each waited for the other)."""
    tree = Tree.from_parents(
        [-1, 0, 1, 1], ["main", "step", "send", "recv"], kind=["root", "step", "comm", "comm"]
    )
    ev = pd.DataFrame({
        "profile": [0, 0, 0, 0, 1, 1, 1, 1], "node": [0, 1, 2, 3, 0, 1, 3, 2],
        "start": [0, 0, 100, 300, 0, 0, 100, 500], "end": [700, 700, 200, 700, 700, 700, 500, 600],
    })  # fmt: skip
    rp = replay(Timeline(tree, ev))
    assert (rp.graph.c_type == 0).all()  # nothing waits for anything across ranks
    assert rp.steps["replayed [s]"].iloc[0] == pytest.approx(700e-9)


def test_a_what_if_run_beside_the_measured_one():
    """The replayed run as a Timeline on the measured clock; a what-if's lanes beside
    the measured ones, the prediction's steps as long as its table says."""
    from cctviz.views.timeline import TimelineView

    rp = replay(async_rank())
    same = rp.replayed()
    ev = rp.timeline.events
    assert same.events["end"].tolist() == ev["end"].tolist()  # unchanged: as measured
    w = rp.what_if(Scale("work", 0.5, ranks=[0]))
    both = w.beside()
    assert both.n_profiles == 2 * rp.timeline.n_profiles
    runs = both.profiles["run"].tolist()
    assert runs[:2] == ["measured"] * 2 and all(
        r.startswith("what if: scale work") for r in runs[2:]
    )
    # the predicted lanes' step intervals: the table's replayed step
    names = both.tree.nodes["name"].to_numpy()
    step = both.events[
        (names[both.events["node"].to_numpy()] == "step") & (both.events["profile"] >= 2)
    ]
    per_rank = (step["end"] - step["start"]).mean() / 1e9
    assert per_rank == pytest.approx(w.steps["replayed [s]"].iloc[0])
    lanes = TimelineView(both)._data["lanes"]
    assert lanes[0].startswith("measured · ") and lanes[2].startswith("what if: scale work")


@pytest.mark.parametrize(
    "path", [PINGPONG, GPU, DATA / "kineto" / "hta_trace_filter_sampled_rank-0.json.gz"],
    ids=lambda p: p.name,
)  # fmt: skip
def test_blocks_of_lanes_build_the_graph_whole_builds(path, monkeypatch):
    """The build nests and cuts a few lanes at a time, on threads: blocks of one
    or two lanes give the graph and the replay that one block gives (the nester's
    streams and the parents given by ``parent_event`` alike)."""
    import cctviz.perfmodel.graph as graph

    whole = replay(path)
    monkeypatch.setattr(graph, "BLOCK_EVENTS", 5)
    blocks = graph._lane_blocks(whole.graph.ev_lane, np.ones(len(whole.timeline), bool))
    assert len(blocks) > 1
    cut = replay(path)
    for name in ("owner", "start", "end", "lane", "chunk", "c_type", "c_transfer", "ev_last"):
        assert np.array_equal(getattr(cut.graph, name), getattr(whole.graph, name)), name
    pd.testing.assert_frame_equal(cut.steps, whole.steps)


def test_a_replay_lets_go_of_its_graph_without_the_garbage_collector():
    """Nothing of a replay is held in a reference cycle: its graph (arrays of
    every piece) is freed as soon as the replay is, even with the cyclic garbage
    collector off (a long session builds many)."""
    import gc
    import weakref

    tl = cctviz.read_timeline(PINGPONG)
    gc.collect()
    gc.disable()
    try:
        rp = replay(tl)
        rp.critical_path()
        graph = weakref.ref(rp.graph)
        del rp
        assert graph() is None
    finally:
        gc.enable()


def test_given_parents_whose_children_overlap_replay_in_time_order():
    """A source that gives ``parent_event`` may nest siblings that overlap in time
    (Nsight's ranges, Kineto's ops): each lane's pieces are still replayed in
    time order, so two collective calls of rank 0 inside two overlapping ranges
    keep the order they were matched in (no cycle), and work keeps its place."""
    tree = Tree.from_parents(
        [-1, 0, 0, 0], ["main", "A", "B", "all_reduce"], kind=["root", "region", "region", "comm"]
    )
    ev = pd.DataFrame({
        "profile": [0, 0, 0, 0, 0, 1, 1, 1], "node": [0, 1, 2, 3, 3, 0, 3, 3],
        "start": [0, 0, 5, 8, 6, 0, 6, 8], "end": [20, 10, 15, 9, 7, 20, 7, 9],
        "event": list(range(8)), "parent_event": [-1, 0, 0, 1, 2, -1, 5, 5],
    })  # fmt: skip
    rp = replay(Timeline(tree, ev))
    g = rp.graph
    for lane in np.unique(g.lane):
        t = g.start[g.lane == lane]
        assert (np.diff(t) >= 0).all(), lane
    s, _ = rp.event_times(relative=True)
    assert s[4] < s[3]  # rank 0's call in B (6 ns) before its call in A (8 ns)
