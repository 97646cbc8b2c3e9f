"""TimelineView beyond ``max_lanes`` ranks (issue 38's lanes' level of detail),
on a real traced gloo job of 6 ranks whose rank LATE is late at every exchange:
the others make one group lane, the late rank keeps its own; the group's band
holds the least, median and greatest share of each bin its ranks spend in
communication, computed here again from the trace's calls; in Chromium a click
on the group's label expands it and "Regroup" folds it again."""

from __future__ import annotations

import numpy as np
import pytest

import cctviz
from cctviz.views.timeline import TimelineView
from tests.runtime.conftest import GROUPED_RANKS, LATE, late_trace  # noqa: F401


@pytest.fixture(scope="module")
def timeline(late_trace):  # noqa: F811
    return cctviz.read_timeline(late_trace)


def ranks_of(tl, profiles) -> list[int]:
    return [int(tl.profiles["rank"].iloc[p]) for p in profiles]


def test_alike_ranks_share_a_lane_the_late_one_keeps_its_own(timeline):
    """The late rank alone; every other rank in a group lane (one, or two where
    the loaded machine split them into two behaviours a fifth of their time
    apart, or one normal rank alone beside the late one: CI saw each)."""
    view = TimelineView(timeline, max_lanes=3)
    members = view.lane_members
    assert sorted(np.concatenate(members).tolist()) == list(range(GROUPED_RANKS))
    alone = [ranks_of(timeline, m)[0] for m in members if m.size == 1]
    # the late rank alone; at most one normal rank beside it that the load set
    # apart (CI saw one), never the group lanes broken up
    assert LATE in alone and len(alone) <= 2, view._data["lanes"]
    assert 2 <= len(members) <= 3, view._data["lanes"]
    for k, m in enumerate(members):
        if m.size == 1:
            assert not view.lane_keys[k]
            continue
        drawn = ranks_of(timeline, [view.lanes[k]])[0]
        assert view.lanes[k] in m and view.lane_keys[k]
        assert view._data["lanes"][k] == f"{m.size} ranks like rank {drawn}"
        # the group lane draws its representative's own rectangles
        assert set(view.rects.loc[view.rects["lane"] == k, "profile"]) == {view.lanes[k]}
    # every rank in a lane: with max_lanes 0 (or enough) one lane each
    assert len(TimelineView(timeline, max_lanes=0).lanes) == GROUPED_RANKS
    assert len(TimelineView(timeline).lanes) == GROUPED_RANKS


def test_the_band_is_the_groups_spread_of_communication_share(timeline):
    view = TimelineView(timeline, max_lanes=3)
    d = view._data
    nb, stride = d["band_bins"], d["band_stride"]
    edges = view.bin_edges
    coarse = np.r_[edges[::stride], edges[-1]] if (edges.size - 1) % stride else edges[::stride]
    assert coarse.size == nb + 1
    band_lanes = np.frombuffer(d["band_lane"], dtype=np.int32)
    assert band_lanes.tolist() == [k for k, m in enumerate(view.lane_members) if m.size > 1]
    # again, from the trace's communication calls: each member's overlap with each bin
    t00 = timeline.span[0]
    ev = timeline.events
    comm = timeline.tree.nodes["kind"].to_numpy()[ev["node"].to_numpy()] == "comm"
    for b, k in enumerate(band_lanes):
        shares = []
        for p in view.lane_members[k]:
            mine = ev[comm & (ev["profile"].to_numpy() == p)]
            s = (mine["start"].to_numpy() - t00)[:, None] / 1e9
            e = (mine["end"].to_numpy() - t00)[:, None] / 1e9
            cover = np.clip(np.minimum(e, coarse[1:]) - np.maximum(s, coarse[:-1]), 0, None)
            shares.append(np.minimum(cover.sum(axis=0) / np.diff(coarse), 1.0))
        shares = np.array(shares)
        assert shares.max() > 0.5  # the group waits for the late rank: it is there to see
        for name, want in (("band_lo", shares.min(0)), ("band_mid", np.median(shares, 0)),
                           ("band_hi", shares.max(0))):  # fmt: skip
            got = np.frombuffer(d[name], dtype=np.float32)[b * nb : (b + 1) * nb]
            np.testing.assert_allclose(got, want, atol=1e-5, err_msg=name)


def test_expanding_a_group_shows_its_ranks(timeline):
    view = TimelineView(timeline, max_lanes=3)
    while keys := [k for k in view.lane_keys if k]:  # expand each group in turn
        before = dict(zip(view.lane_keys, view.lane_members))
        view.expanded = [*view.expanded, keys[0]]
        shown = {k: m for k, m in zip(view.lane_keys, view.lane_members)}
        assert keys[0] not in shown
        expanded = before[keys[0]]
        if expanded.size <= 3:  # its ranks on lanes of their own
            alone = {int(m[0]) for m in view.lane_members if m.size == 1}
            assert set(expanded.tolist()) <= alone
        else:  # past max_lanes: the 2 farthest from its centre apart, the rest one lane
            assert shown[f"{keys[0]}+"].size == expanded.size - 2
    assert [m.size for m in view.lane_members] == [1] * GROUPED_RANKS
    assert ranks_of(timeline, view.lanes) == list(range(GROUPED_RANKS))


def test_a_click_on_the_groups_label_expands_it_regroup_folds(widget_page, timeline):
    view = TimelineView(timeline, max_lanes=3)
    wp = widget_page(view)
    root = wp.view(view)
    groups = [m.size for m in view.lane_members if m.size > 1]
    group = root.locator("text.cctviz-lane-group").first
    assert root.locator("text.cctviz-lane-group").count() == len(groups) >= 1
    assert group.text_content() == f"{groups[0]} ranks"
    under = root.locator("text.cctviz-lane-sublabel").all_text_contents()
    assert under[0].startswith("like rank ") and under[1] == "in comm."
    assert root.locator("g.cctviz-spread").count() == len(groups)
    assert root.locator("path.cctviz-spread-median").count() == len(groups)
    # the band's tooltip says what it is
    band = root.locator("g.cctviz-spread rect.cctviz-spread-bg").first.bounding_box()
    wp.page.mouse.move(band["x"] + band["width"] * 0.5, band["y"] + band["height"] / 2)
    tip = wp.page.locator(".cctviz-tooltip")
    tip.wait_for(state="visible")
    assert "in communication: least" in tip.text_content()
    r0 = int(root.locator("[data-rendered]").get_attribute("data-rendered"))
    lanes_before = len(view.lanes)
    key = group.get_attribute("data-key")
    assert key in view.lane_keys
    group.click()
    wp.sync()
    assert view.expanded == [key]
    wp.wait_rendered(r0 + 1, view)
    assert root.locator("text.cctviz-lane-label").count() == len(view.lanes) > lanes_before
    root.locator("button.cctviz-regroup").click()
    wp.sync()
    assert view.expanded == []
    wp.wait_rendered(r0 + 2, view)
    assert root.locator("text.cctviz-lane-label").count() == lanes_before
