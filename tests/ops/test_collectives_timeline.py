"""ops.collectives on timelines (issue 21): instances, stragglers, message sizes.

Checked against the model's own aggregate (`read()` of the same file) and on small
timelines whose answers are known by construction.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import cctviz
from cctviz.model.timeline import Timeline
from cctviz.ops.collectives import instances, message_sizes, stragglers
from tests.conftest import DATA

PING_PONG = DATA / "pipit" / "ping-pong-otf2" / "traces.otf2"


def _two_rank_timeline(arrivals: list[tuple[int, int]], ends: list[int]) -> Timeline:
    tree = cctviz.Tree.from_parents([-1, 0], ["main", "all_reduce"], kind=["root", "comm"])
    rows = []
    for k, ((a0, a1), e) in enumerate(zip(arrivals, ends)):
        rows += [(0, 1, a0, e, 100 * (k + 1)), (1, 1, a1, e, 100 * (k + 1))]
    ev = pd.DataFrame(rows, columns=["profile", "node", "start", "end", "comm_bytes"])
    return Timeline(tree, ev, meta={"event_metrics": {"comm_bytes": "B"}})


def test_instances_by_construction():
    tl = _two_rank_timeline([(0, 30), (100, 90), (200, 200)], [50, 120, 230])
    inst = instances(tl)
    calls = inst.drop_duplicates("instance")
    # the third is a tie: nobody arrived last alone
    assert calls["last_to_arrive"].tolist() == [1, 0, -1]
    assert calls["last_by"].tolist() == [30, 10, 0]
    assert (inst[inst["instance"] == 2]["wait"] == 0).all()
    first = inst[inst["instance"] == 0].set_index("rank")
    assert first.loc[0, "wait"] == 30 and first.loc[1, "wait"] == 0
    assert (first["transfer"] == 20).all()
    assert inst["bytes"].tolist() == [100, 100, 200, 200, 300, 300]
    table = stragglers(inst)
    assert table.loc[1, "last_calls"] == 1 and table.loc[1, "caused_wait_total"] == 30
    assert table["share"].tolist() == [1 / 3, 1 / 3]  # of the 3 calls, a tie included


def test_each_call_names_its_event():
    """``event`` is the call's position among the timeline's events: its rank,
    node and arrival are that event's (on a real OTF2 trace too)."""
    for tl in (
        _two_rank_timeline([(0, 30), (100, 90)], [50, 120]),
        cctviz.read_timeline(PING_PONG),
    ):
        inst = instances(tl, include_p2p=True)
        ev = tl.events.iloc[inst["event"].to_numpy()]
        assert len(inst) and ev["node"].tolist() == inst["node"].tolist()
        assert ev["profile"].tolist() == inst["profile"].tolist()
        assert ev["start"].tolist() == inst["arrival"].tolist()


def test_point_to_point_is_left_out_unless_asked():
    tl = cctviz.read_timeline(PING_PONG)
    assert instances(tl).empty  # sends and receives only
    both = instances(tl, include_p2p=True)
    assert set(both["collective"]) == {"send", "recv"}


def test_message_sizes_add_up_to_the_aggregate():
    tl = cctviz.read_timeline(PING_PONG)
    sizes = message_sizes(tl)
    ref = cctviz.read(PING_PONG)
    names = np.asarray(ref.tree.names, dtype=object)
    comm = (ref.tree.nodes["kind"] == "comm").to_numpy()
    for kind in ("send", "recv"):
        mine = sizes[sizes["collective"] == kind]
        nodes = comm & np.asarray([str(n).split(" (")[0] == kind for n in names])
        assert mine["calls"].sum() == ref.values("calls")[nodes].sum()
        assert mine["bytes_total"].sum() == ref.values("comm_bytes")[nodes].sum()
        assert (
            (mine["lo"] <= mine["bytes_total"] / mine["calls"])
            & (mine["bytes_total"] / mine["calls"] < mine["hi"])
        ).all()
    by_context = message_sizes(tl, by="context")
    assert by_context["calls"].sum() == sizes["calls"].sum()
    with pytest.raises(ValueError, match="'collective' or 'context'"):
        message_sizes(tl, by="rank")


def _windows(first_call: dict[int, int], n_calls: int, sizes, seq: bool = False) -> Timeline:
    """A job whose all-reduce ``k`` (bytes ``sizes[k]``) runs from 100k + rank to
    100k + 50 on every rank (ranks leave together), traced on rank ``r`` from its
    call ``first_call[r]`` on; with ``seq``, each call records (group, k)."""
    tree = cctviz.Tree.from_parents([-1, 0], ["main", "all_reduce"], kind=["root", "comm"])
    rows = [
        (r, 1, 100 * k + r, 100 * k + 50, sizes[k], k)
        for r, k0 in first_call.items()
        for k in range(k0, n_calls)
    ]
    ev = pd.DataFrame(rows, columns=["profile", "node", "start", "end", "comm_bytes", "call"])
    if seq:
        ev["group"], ev["seq"] = "0", ev["call"]
    return Timeline(tree, ev, meta={"event_metrics": {"comm_bytes": "B"}})


@pytest.mark.parametrize("sizes", [[100, 200, 300] * 3, [100] * 9], ids=["sizes", "one size"])
def test_windows_that_start_at_different_calls_are_aligned(sizes):
    """Rank 1's trace starts 2 calls later and rank 2's 1 later: by order the k-th
    traced calls would meet (calls 0, 2 and 1); aligned by the shift whose calls agree
    in bytes and end together (when all sizes are equal, the ends decide)."""
    tl = _windows({0: 0, 1: 2, 2: 1}, 9, sizes)
    inst = instances(tl)
    truth = tl.events.set_index(["profile", "start"])["call"]
    inst["call"] = truth.loc[list(zip(inst["profile"], inst["arrival"]))].to_numpy()
    assert (inst.groupby("instance")["call"].nunique() == 1).all()
    ranks = inst.groupby("call")["ranks"].first()
    assert ranks.tolist() == [1, 2, 3, 3, 3, 3, 3, 3, 3]  # who traced each call
    assert set(inst["matched"]) == {"aligned"}
    both = inst[inst["ranks"] == 3]
    assert (both["last_to_arrive"] == 2).all()
    assert (both.groupby("instance")["wait"].max() == 2).all()


def test_recorded_sequence_numbers_match_calls_across_contexts():
    """Where the events carry (group, seq), calls match by them, even when the
    ranks' windows start at different calls and a rank calls from another context."""
    tl = _windows({0: 0, 1: 3}, 6, [100] * 6, seq=True)
    ev = tl.events.copy()
    tree = cctviz.Tree.from_parents(
        [-1, 0, 0], ["main", "all_reduce", "other all_reduce"], kind=["root", "comm", "comm"]
    )
    ev.loc[ev["profile"] == 1, "node"] = 2
    inst = instances(Timeline(tree, ev, meta=tl.meta))
    assert set(inst["matched"]) == {"seq"}
    per = inst.groupby("seq")["ranks"].first()
    assert per.tolist() == [1, 1, 1, 2, 2, 2]
    assert (inst.groupby("instance")["seq"].nunique() == 1).all()
    # without the numbers, the contexts differ: nothing pairs
    plain = instances(Timeline(tree, ev.drop(columns=["seq", "group"]), meta=tl.meta))
    assert (plain["ranks"] == 1).all()


def test_consistent_order_is_kept():
    tl = _windows({0: 0, 1: 0}, 4, [100, 200, 300, 400])
    inst = instances(tl)
    assert set(inst["matched"]) == {"order"} and (inst["ranks"] == 2).all()
    assert inst.groupby("instance")["bytes"].nunique().eq(1).all()


def test_which_thread_ran_a_call_is_no_part_of_its_context():
    """By construction: gloo's worker threads take the calls in turn, differently on
    each rank; the calls still meet by order. Same-named siblings (two all-reduces
    of one step) stay two contexts, and another process's thread is not this one's."""
    tree = cctviz.Tree.from_parents(  # in pre-order: the ids stay
        [-1, 0, 1, 2, 2, 0, 5, 0, 7, -1, 9, 10],
        ["process", "main thread", "step", "all_reduce", "all_reduce", "thread 1",
         "gloo:all_reduce", "thread 2", "gloo:all_reduce", "process 1", "thread 1",
         "gloo:all_reduce"],
        kind=["process", "thread", "function", "comm", "comm", "thread", "comm", "thread",
              "comm", "process", "thread", "comm"],
    )  # fmt: skip
    assert tree.names[6] == tree.names[8] == tree.names[11] == "gloo:all_reduce"
    calls = [  # (rank, node, start, bytes)
        (0, 6, 0, 8), (1, 8, 5, 8), (0, 8, 100, 16), (1, 6, 105, 16),  # threads swapped
        (0, 3, 200, 32), (0, 4, 300, 64), (1, 4, 205, 64), (1, 3, 305, 32),  # siblings
        (0, 11, 50, 8), (1, 11, 150, 8),  # another process's thread
    ]  # fmt: skip
    ev = pd.DataFrame(calls, columns=["profile", "node", "start", "comm_bytes"])
    ev["end"] = ev["start"] + 10
    inst = instances(Timeline(tree, ev, meta={"event_metrics": {"comm_bytes": "B"}}))
    met = {frozenset(zip(g["rank"], g["arrival"])) for _, g in inst.groupby("instance")}
    assert met == {
        frozenset({(0, 0), (1, 5)}),
        frozenset({(0, 100), (1, 105)}),
        frozenset({(0, 200), (1, 305)}),
        frozenset({(0, 300), (1, 205)}),
        frozenset({(0, 50), (1, 150)}),
    }
    assert set(inst["matched"]) == {"order"}
