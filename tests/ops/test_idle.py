"""ops.idle.idle_time: per rank, the part of its span no interval below the
roots covers, threads pooled; against a bitmap on random timelines and on the
real CPU-only Kineto sample."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cctviz
from cctviz.model.timeline import Timeline
from cctviz.model.tree import Tree
from cctviz.ops.idle import idle_time
from tests.conftest import DATA

CPU_ONLY = DATA / "kineto" / "hta_cpu_only_rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"


def bitmap_idle(tree: Tree, ev: pd.DataFrame, rank_of: np.ndarray) -> dict[int, tuple[int, int]]:
    """(span, idle) per rank by marking every ns covered."""
    below = ev[np.asarray(tree.parent)[ev["node"].to_numpy()] >= 0]
    out = {}
    for r in np.unique(rank_of[below["profile"].to_numpy()]):
        mine = below[rank_of[below["profile"].to_numpy()] == r]
        lo, hi = int(mine["start"].min()), int(mine["end"].max())
        covered = np.zeros(hi - lo, dtype=bool)
        for s, e in zip(mine["start"], mine["end"]):
            covered[s - lo : e - lo] = True
        out[int(r)] = (hi - lo, int((~covered).sum()))
    return out


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 3), st.integers(0, 2), st.integers(0, 200), st.integers(1, 60)),
        min_size=1,
        max_size=40,
    )
)
def test_idle_matches_a_bitmap(rows):
    tree = Tree.from_parents([-1, 0, 0], ["main", "a", "b"])
    ev = pd.DataFrame(rows, columns=["profile", "node", "start", "length"])
    ev = ev.assign(end=ev["start"] + ev["length"]).drop(columns="length")
    profiles = pd.DataFrame({"rank": [0, 0, 1, 1]})  # two threads per rank
    got = idle_time(Timeline(tree, ev, profiles))
    want = bitmap_idle(tree, ev, profiles["rank"].to_numpy())
    assert sorted(got["rank"]) == sorted(want)
    for row in got.itertuples():
        assert (row.span, row.idle) == want[row.rank]
        assert row.busy + row.idle == row.span


def test_cpu_only_kineto_rank():
    tl = cctviz.read_timeline(CPU_ONLY)
    t = idle_time(tl)
    assert t["rank"].tolist() == [34] and t.attrs["unit"] == "ns"
    ev = tl.events
    below = ev[np.asarray(tl.tree.parent)[ev["node"].to_numpy()] >= 0]
    assert t["span"].iloc[0] == below["end"].max() - below["start"].min()
    # busy is at least the longest interval and at most the intervals summed
    lengths = below["end"] - below["start"]
    assert lengths.max() <= t["busy"].iloc[0] <= lengths.sum()
    assert 0 < t["idle_share"].iloc[0] < 1
    # windows that tile the run: their busy time sums to the whole's
    a, b = int(below["start"].min()), int(below["end"].max())
    cut = (a + b) // 2
    halves = [idle_time(tl.window(a, cut)), idle_time(tl.window(cut, b))]
    assert sum(h["busy"].iloc[0] for h in halves) == t["busy"].iloc[0]


def test_contexts_that_tile_the_run_leave_no_idle_time():
    """Contexts that tile the run below the root (as the runtime's steps and
    ``(outside steps)`` do) leave none; a Tree is refused by name."""
    tree = Tree.from_parents([-1, 0, 0], ["main", "step", "(outside steps)"])
    ev = pd.DataFrame(
        {
            "profile": [0, 0, 0, 0],
            "node": [0, 2, 1, 2],
            "start": [0, 0, 10, 90],
            "end": [100, 10, 90, 100],
        }
    )
    assert idle_time(Timeline(tree, ev))["idle"].tolist() == [0]
    with pytest.raises(TypeError, match="needs a Timeline"):
        idle_time(tree)
