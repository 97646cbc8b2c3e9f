"""TimelineView: the level of detail is bounded per lane at 10^6 events, its
rectangles are the dominant context of each pixel (against a brute force), the
window changes the detail, lanes and selections are checked, linking scopes a
CCTView to the brushed window, and the SVG export is deterministic with axis
units. Real data: the ping-pong OTF2 sample."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import traitlets
from hypothesis import given, settings
from hypothesis import strategies as st

import cctviz
from cctviz.views import timeline as timeline_view
from cctviz.views.timeline import TimelineView, lod_rects
from tests.conftest import DATA

PING_PONG = DATA / "pipit" / "ping-pong-otf2" / "traces.otf2"


@pytest.fixture(scope="module")
def ping():
    return cctviz.read_timeline(PING_PONG)


def synthetic(n_prof: int = 8, per: int = 125_000) -> cctviz.Timeline:
    """``n_prof`` ranks of ``per`` events each: a root, steps with two phases
    and an all-reduce whose arrival varies (a late rank per call)."""
    tree = cctviz.Tree.from_parents(
        [-1, 0, 1, 1, 3], ["main", "step", "forward", "backward", "all_reduce"],
        kind=["root", "step", "function", "function", "comm"],
    )  # fmt: skip
    rng = np.random.default_rng(0)
    m = per // 4
    s = np.cumsum(rng.integers(50, 150, m)) * 10
    rows = []
    for p in range(n_prof):
        rows += [
            pd.DataFrame({"profile": p, "node": 1, "start": s, "end": s + 900}),
            pd.DataFrame({"profile": p, "node": 2, "start": s + 10, "end": s + 400}),
            pd.DataFrame({"profile": p, "node": 3, "start": s + 410, "end": s + 800}),
            pd.DataFrame(
                {
                    "profile": p,
                    "node": 4,
                    "start": s + 500 + rng.integers(0, 200, m),
                    "end": s + 790,
                }
            ),
            pd.DataFrame({"profile": [p], "node": [0], "start": [0], "end": [int(s[-1]) + 1000]}),
        ]
    return cctviz.Timeline(tree, pd.concat(rows, ignore_index=True))


@pytest.fixture(scope="module")
def big():
    return synthetic()


def brute(lane, level, node, start, end, t0, t1, bins, n_levels):
    """The dominant node of every (lane, level, bin) by a loop over bins."""
    w = (t1 - t0) / bins
    out = {}
    for r in set(zip(lane.tolist(), level.tolist())):
        mine = (lane == r[0]) & (level == r[1])
        for b in range(bins):
            a, z = t0 + b * w, t0 + (b + 1) * w
            cov = np.clip(np.minimum(end[mine], z) - np.maximum(start[mine], a), 0, None)
            if cov.max(initial=0) <= 0:
                continue
            full = cov >= w * (1 - 1e-9)
            per = pd.Series(cov).groupby(node[mine]).sum()
            out[(r[0], r[1], b)] = (set(node[mine][full]) if full.any() else None, per)
    return out


@pytest.mark.parametrize("sums", ["dense table", "sorted keys"])
@pytest.mark.parametrize("levels", ["a node on one level", "nodes on several levels"])
def test_lod_matches_a_brute_force(monkeypatch, sums, levels):
    if sums == "sorted keys":
        monkeypatch.setattr(timeline_view, "DENSE_CELLS", 0)
    rng = np.random.default_rng(1)
    n = 300
    lane = rng.integers(0, 3, n)
    node = rng.integers(0, 6, n)
    level = node % 2 if levels == "a node on one level" else rng.integers(0, 2, n)
    start = rng.uniform(0, 100, n)
    end = start + rng.exponential(4, n)
    r = lod_rects(lane, level, node, start, end, 10.0, 90.0, 40, 2)
    want = brute(lane, level, node, start, end, 10.0, 90.0, 40, 2)
    got = {}
    for row in r.itertuples():
        assert row.b1 > row.b0
        for b in range(row.b0, row.b1):
            got[(row.lane, row.level, b)] = row.node
    assert got.keys() == want.keys()  # every covered bin drawn, no empty bin drawn
    for key, (full, per) in want.items():
        if full:
            assert got[key] in full
        else:  # the node covering most of the bin (ties: any of them)
            assert per[got[key]] == pytest.approx(per.max())
    # adjacent rectangles of a row never hold the same node (runs are merged)
    for _, g in r.groupby(["lane", "level"]):
        g = g.sort_values("b0")
        touching = g["b0"].to_numpy()[1:] == g["b1"].to_numpy()[:-1]
        assert not (touching & (g["node"].to_numpy()[1:] == g["node"].to_numpy()[:-1])).any()


def test_lod_is_bounded_per_lane_at_a_million_events(big):
    assert len(big) >= 1_000_000
    view = TimelineView(big, bins=500, depth=3)
    r = view.rects
    assert r.groupby(["lane", "level"]).size().max() <= 500
    assert r.groupby("lane").size().max() <= 500 * 4
    assert sorted(r["lane"].unique()) == list(range(8))
    # the whole window: steps fill the step level from first to last bin
    steps = r[r["level"] == 1]
    assert (steps.groupby("lane")["b0"].min() == 0).all()
    # a window of a few steps: one rectangle per interval, at its place
    s = big.events
    e = s[(s["profile"] == 0) & (s["node"] == 2)].iloc[1000]
    t00 = big.span[0]
    t0, t1 = (e["start"] - t00 - 2000) / 1e9, (e["start"] - t00 + 3000) / 1e9
    view.window = (t0, t1)
    z = view.rects
    assert len(z) > len(r[r["lane"] == 0]) / 10  # detail appears
    fwd = z[(z["lane"] == 0) & (z["name"] == "forward")]
    hit = fwd[
        (fwd["t0"] <= (e["start"] - t00) / 1e9 + 1e-8)
        & (fwd["t1"] >= (e["end"] - t00) / 1e9 - 1e-8)
    ]
    assert len(hit) == 1
    assert hit["t1"].iloc[0] - hit["t0"].iloc[0] == pytest.approx(390e-9, abs=2 * 5e-9 + 1e-12)
    # collectives: a marker per all-reduce in the window on the late rank's lane
    d = view._data
    assert d["m"] > 0 and np.frombuffer(d["mark_lane"], "<i4").max() < 8


def test_real_trace_lanes_and_window(ping):
    view = TimelineView(ping)
    assert view._data["lanes"] == ["rank 0", "rank 1"]
    assert view.window == pytest.approx(view.whole_window)
    assert view.window[1] == pytest.approx((ping.span[1] - ping.span[0]) / 1e9)
    whole = view.rects
    assert set(whole["name"]) >= {"int main(int, char**)", "MPI_Init", "MPI_Send", "MPI_Recv"}
    # every event longer than two bins is covered by a rectangle of its node
    w = (view.window[1] - view.window[0]) / view.bins
    t00 = ping.span[0]
    ev = ping.events
    depth = np.asarray(ping.tree.depth)[ev["node"]]
    long = ev[((ev["end"] - ev["start"]) / 1e9 > 3 * w) & (depth <= 3)]
    for e in long.itertuples():
        lane_rects = whole[(whole["profile"] == e.profile) & (whole["node"] == e.node)]
        mid = ((e.start + e.end) / 2 - t00) / 1e9
        assert ((lane_rects["t0"] <= mid) & (lane_rects["t1"] >= mid)).any()
    # a narrower window: other, finer detail; depth cuts levels
    view.window = (0.19, 0.1996)
    assert len(view.rects) != len(whole) and view.rects["t0"].min() >= 0.19 - 1e-12
    view.depth = 1
    assert view.rects["level"].max() <= 1
    view.selected_profiles = [1]
    assert view._data["lanes"] == ["rank 1"] and set(view.rects["profile"]) == {1}


def test_traits_are_checked_with_clear_errors(ping):
    view = TimelineView(ping)
    with pytest.raises(traitlets.TraitError, match=r"profile ids must be in \[0, 2\)"):
        view.selected_profiles = [5]
    with pytest.raises(traitlets.TraitError, match=r"node ids must be in \[0, 10\)"):
        view.selection = [42]
    with pytest.raises(traitlets.TraitError, match="finite t0 < t1"):
        view.window = (0.2, 0.1)
    with pytest.raises(traitlets.TraitError, match="brush"):
        view.brush = [0.1]
    with pytest.raises(traitlets.TraitError, match="depth"):
        view.depth = -1
    with pytest.raises(TypeError, match="read_timeline"):
        TimelineView(ping.ensemble())
    view.selection = 'MATCH (".", a) WHERE a."name" = "MPI_Send"'
    assert view.selection.names.tolist() == ["MPI_Send"]
    view.brush = [0.1, 0.05]
    assert view.brush == [0.05, 0.1] and view.brushed_window == (0.05, 0.1)
    assert view.window == pytest.approx(view.whole_window)  # a brush does not zoom


def test_link_scopes_the_tree_to_the_brush_and_shares_selection(ping):
    tv = TimelineView(ping)
    cv = cctviz.CCTView(ping.ensemble())
    with cctviz.link(tv, cv):
        tv.brush = [0.19, 0.1996]
        t0, t1 = tv.window_ns()
        want = ping.window(t0, t1).ensemble()
        assert np.array_equal(cv.shown.values("time"), want.values("time"))
        assert cv.shown.values("time").sum() == pytest.approx(2 * 0.0096e9, rel=1e-6)
        cv.selection = [6]
        assert tv.selection.ids.tolist() == [6]
        tv.brush = []  # no brush: the visible window (the whole timeline)
        assert cv.shown.values("time").sum() == ping.ensemble().values("time").sum()
    tv.brush = [0.1, 0.11]
    assert cv.shown.values("time").sum() == ping.ensemble().values("time").sum()


def test_ranks_selected_anywhere_show_only_their_lanes(ping):
    """Selecting ranks in a Sankey, a profiles view or a tree of the same run
    shows only those lanes, and the other way round, also once the tree shows a
    brushed window (its own Timeline, the same run's profiles)."""
    tv, cv = TimelineView(ping), cctviz.CCTView(ping)
    sv, pv = cctviz.SankeyView(ping), cctviz.ProfilesView(ping.ensemble())
    with cctviz.link(tv, cv, sv, pv):
        sv.selected_profiles = [1]
        assert tv.selected_profiles == cv.selected_profiles == pv.selected_profiles == [1]
        assert tv.lanes.tolist() == [1] and set(tv.rects["profile"]) == {1}
        tv.brush = [0.19, 0.1996]
        assert cv.timeline is not ping and cv.timeline.whole is ping
        pv.selected_profiles = [0]
        assert tv.selected_profiles == cv.selected_profiles == sv.selected_profiles == [0]
        tv.selected_profiles = []
        assert cv.selected_profiles == sv.selected_profiles == pv.selected_profiles == []
    other = cctviz.ProfilesView(ping.ensemble().select([0, 1]))  # another ensemble
    with cctviz.link(tv, other):
        other.selected_profiles = [1]
        assert tv.selected_profiles == []


def test_lanes_are_grouped_by_what_differs(ping):
    """Lanes group by component, host or run where the profiles differ in it
    (labels name the group), then go by rank; a selection keeps that order."""
    prof = ping.profiles.assign(host=["node-b", "node-a"])
    tl = cctviz.Timeline(ping.tree, ping.events, prof)
    view = TimelineView(tl)
    assert view.lanes.tolist() == [1, 0]
    assert view._data["lanes"] == ["node-a \u00b7 rank 1", "node-b \u00b7 rank 0"]
    assert view._data["lane_profile"].tolist() == [1, 0]
    assert set(view.rects.loc[view.rects["lane"] == 0, "profile"]) == {1}
    view.selected_profiles = [0, 1]
    assert view.lanes.tolist() == [1, 0]
    # one host for all: no group in the labels, rank order
    same = TimelineView(cctviz.Timeline(ping.tree, ping.events, prof.assign(host="n")))
    assert same._data["lanes"] == ["rank 0", "rank 1"]


def test_export_svg_is_deterministic_with_axis_units(ping, tmp_path):
    view = TimelineView(ping, selection=[6], brush=[0.05, 0.1])
    a = view.save(tmp_path / "a.svg", width="7in").read_bytes()
    b = TimelineView(ping, **view.state).save(tmp_path / "b.svg", width="7in").read_bytes()
    assert a == b
    text = a.decode()
    assert "time since start [ms]" in text and "rank 0" in text and "rank 1" in text
    assert 'width="504pt"' in text
    assert text.count('class="cctviz-span selected"') == int((view.rects["node"] == 6).sum()) > 0
    assert "cctviz-brushed" in text
    for ext in ("pdf", "png"):
        assert view.save(tmp_path / f"x.{ext}", width="7in").stat().st_size > 1000


def test_registered_and_in_the_cli(ping, tmp_path):
    from cctviz.cli import main
    from cctviz.views.base import view_kinds

    assert view_kinds()["timeline"] is TimelineView
    assert cctviz.TimelineView is TimelineView
    out = tmp_path / "t.svg"
    assert main(["export", "--view", "timeline", str(PING_PONG), "-o", str(out)]) == 0
    assert "time since start" in out.read_text()


# ---------------------------------------------------------------- counters
def brute_peaks(series, ts, value, t0, t1, bins, n_series):
    """Per (series, bin): the highest value the step function holds in the bin,
    one bin and one sample at a time: the samples in the bin and the value held
    when the bin starts (the last sample of an earlier bin, or before the window)."""

    def bin_of(t):
        return min(int(np.floor((t - t0) * (bins / (t1 - t0)))), bins - 1)

    out = np.full((n_series, bins), np.nan)
    for s in range(n_series):
        order = np.argsort(ts[series == s], kind="stable")
        t, v = ts[series == s][order], value[series == s][order]
        for k in range(bins):
            inside = [v[j] for j in range(t.size) if t0 <= t[j] < t1 and bin_of(t[j]) == k]
            earlier = [v[j] for j in range(t.size) if t[j] < t0 or (t[j] < t1 and bin_of(t[j]) < k)]
            vals = inside + earlier[-1:]
            if vals:
                out[s, k] = max(vals)
    return out


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 2), st.integers(-50, 1050), st.floats(0, 1e9)),
        min_size=1,
        max_size=60,
    ),
    st.integers(1, 40),
    st.integers(0, 400),
    st.integers(1, 700),
)
def test_counter_peaks_match_a_brute_force(samples, bins, t0, span):
    series, ts, value = (np.array(c) for c in zip(*samples))
    ts = ts.astype(np.int64)
    got = timeline_view.counter_peaks(series, ts, value, t0, t0 + span, bins, 3)
    want = brute_peaks(series, ts, value.astype(np.float64), t0, t0 + span, bins, 3)
    np.testing.assert_array_equal(got, want)


@pytest.fixture(scope="module")
def memory(tmp_path_factory):
    from tests.torch_memory import memory_timeline, record

    return memory_timeline(record(tmp_path_factory.mktemp("mem") / "trace.json"))


@pytest.mark.slow  # torch.profiler: not in the torch-free core suite
def test_memory_counter_band_keeps_every_peak(memory):
    """A real torch.profiler memory counter: one band, in bytes; at every zoom each
    sample's value is at most its pixel's peak and each peak is a value held
    there, so the 4 MiB tensors show even when they live less than a pixel."""
    from tests.torch_memory import BIG_BYTES, TRACK

    tl, samples = memory
    view = TimelineView(tl, bins=400)
    d = view._data
    assert (d["k"], d["tracks"], d["track_units"]) == (1, [TRACK], ["B"])
    t = samples["ts"].to_numpy() - tl.span[0]
    v = samples["value"].to_numpy()
    for window in (view.whole_window, (t[1] / 1e9, t[4] / 1e9)):
        view.window = window
        peak = np.asarray(view._data["counter_peak"], dtype=np.float64)
        a, b = window[0] * 1e9, window[1] * 1e9
        inside = (t >= a) & (t < b)
        k = np.minimum(((t[inside] - a) * (400 / (b - a))).astype(int), 399)
        assert (peak[k] >= v[inside]).all()
        held = np.isfinite(peak)
        assert np.isin(peak[held], v).all()
    view.window = view.whole_window
    peak = np.asarray(view._data["counter_peak"], dtype=np.float64)
    assert np.nanmax(peak) == v.max() >= BIG_BYTES  # the 4 MiB tensor is seen
    # memory falls between the steps: some pixels hold less than the tensor
    assert np.nanmin(peak) < BIG_BYTES
    # lanes not shown take their bands with them
    view.selected_profiles = [0]
    assert view._data["k"] == 1


@pytest.mark.slow  # torch.profiler: not in the torch-free core suite
def test_memory_counter_export_has_units_and_readable_text(memory, tmp_path):
    """The exported figure at 7 in: the band's title names its unit, its axis
    ticks are in that unit, no text below 9 pt (js/chrome/size.js READABLE_PX),
    drawn at scale 1, and the same bytes twice."""
    from tests.export.checks import SVG_NS, svg_root

    tl, samples = memory
    view = TimelineView(tl)
    a = view.save(tmp_path / "a.svg", width="7in").read_bytes()
    b = TimelineView(tl, **view.state).save(tmp_path / "b.svg", width="7in").read_bytes()
    assert a == b
    root = svg_root(a.decode())
    assert root.get("width") == "504pt" and root.get("viewBox").split()[2] == "504"
    texts = {"".join(t.itertext()): t for t in root.iter(f"{SVG_NS}text")}
    assert "rank 0 \u00b7 memory allocated (cpu) [MB]" in texts
    assert {"time since start [s]", "time since start [ms]"} & set(texts)
    sizes = [float(t.get("font-size") or root.get("font-size")) for t in texts.values()]
    assert min(sizes) >= 9
    areas = [p for p in root.iter(f"{SVG_NS}path") if p.get("class") == "cctviz-counter-area"]
    assert len(areas) == 1 and areas[0].get("d").startswith("M")
    for ext in ("pdf", "png"):
        assert view.save(tmp_path / f"x.{ext}", width="7in").stat().st_size > 1000


def test_html_page_is_offline_and_deterministic(ping, tmp_path):
    """``save("x.html")`` and ``cctviz view --view timeline``: one page, the same
    bytes each time, nothing to fetch."""
    import re

    from cctviz.cli import main

    view = TimelineView(ping)
    a = view.save(tmp_path / "a.html").read_text()
    assert a == TimelineView(ping).save(tmp_path / "b.html").read_text()
    assert main(["view", "--view", "timeline", str(PING_PONG), "-o", str(tmp_path / "c.html")]) == 0
    c = (tmp_path / "c.html").read_text()
    assert '"kind":"timeline"' in c and "rank 1" in c
    assert not re.search(r"<(script|link|img)[^>]+(src|href)=", c)


# ---------------------------------------------------------------- what ran (issue 35)
MS = 1_000_000  # ns


def runtime_like(
    ranks: int = 2, steps: int = 3, startup_ms: int = 2000, end_ms: int = 10, rank_of=None
):
    """A runtime run's shape: ``train.py`` > ``(outside steps)`` (a start-up of
    ``startup_ms`` with a broadcast, an end of ``end_ms``) and ``step`` > forward
    (GPT > h.0, h.1), backward (an all_reduce at its end: rank ``step % ranks``
    arrives 5 ms late) and optimizer; steps of 100 ms."""
    tree = cctviz.Tree.from_parents(
        [-1, 0, 1, 0, 3, 4, 5, 5, 3, 8, 3],
        ["train.py", "(outside steps)", "broadcast", "step", "forward", "GPT", "h.0", "h.1",
         "backward", "all_reduce", "optimizer"],
        kind=["root", "step", "comm", "step", "phase", "module", "module", "module", "phase",
              "comm", "phase"],
    )  # fmt: skip
    rows = []
    t0 = startup_ms * MS
    end = t0 + steps * 100 * MS
    for p in range(ranks):
        rows += [(p, 0, 0, end + end_ms * MS), (p, 1, 0, t0), (p, 2, t0 - 20 * MS, t0 - 10 * MS)]
        for k in range(steps):
            s = t0 + k * 100 * MS
            late = 5 * MS if k % ranks == p else 0
            rows += [
                (p, 3, s, s + 100 * MS),
                (p, 4, s, s + 30 * MS),
                (p, 5, s + 1 * MS, s + 29 * MS),
                (p, 6, s + 2 * MS, s + 14 * MS),
                (p, 7, s + 15 * MS, s + 28 * MS),
                (p, 8, s + 30 * MS, s + 80 * MS),
                (p, 9, s + 70 * MS + late, s + 80 * MS),
                (p, 10, s + 80 * MS, s + 98 * MS),
            ]
        rows.append((p, 1, end, end + end_ms * MS))
    ev = pd.DataFrame(rows, columns=["profile", "node", "start", "end"])
    ev["step"] = -1
    prof = pd.DataFrame({"rank": rank_of if rank_of is not None else list(range(ranks))})
    return cctviz.Timeline(tree, ev, prof)


def svg_texts(svg: str, cls: str) -> list[str]:
    from tests.export.checks import SVG_NS, svg_root

    root = svg_root(svg)
    return [
        "".join(t.itertext())
        for t in root.iter(f"{SVG_NS}text")
        if cls in (t.get("class") or "").split()
    ]


def test_colour_by_context_forward_and_backward_differ():
    from cctviz.views.timeline import ROLE_COMM, ROLE_FRAME, ROLE_STARTUP, ROLE_STEP, context_colors

    tl = runtime_like()
    role, group, tint, groups, slots = context_colors(tl.tree)
    names = tl.tree.nodes["name"].tolist()
    at = {n: i for i, n in enumerate(names)}
    assert role[at["train.py"]] == ROLE_FRAME and role[at["step"]] == ROLE_STEP
    assert role[at["(outside steps)"]] == ROLE_STARTUP and role[at["all_reduce"]] == ROLE_COMM
    assert groups[:3] == ["forward", "backward", "optimizer"]
    slot = dict(zip(groups, slots))
    assert slot["forward"] != slot["backward"]
    # the modules take their phase's colour, neighbours a different shade
    assert {groups[group[at[n]]] for n in ("GPT", "h.0", "h.1")} == {"forward"}
    assert tint[at["forward"]] == 0 and tint[at["h.0"]] != tint[at["h.1"]]
    view = TimelineView(tl)
    r = view.rects
    assert set(r.loc[r["name"] == "GPT", "group"]) == {"forward"}
    assert set(r.loc[r["name"] == "step", "group"]) == {""}


@pytest.mark.parametrize(("width", "size"), [("3.5in", 7), ("7in", 8)])
def test_runtime_like_export_names_slices_at_the_asked_size(tmp_path, width, size):
    """The phases are named on their slices, the start-up sits apart (its own
    segment after a break), and no text on the page is below the size asked for."""
    from tests.export.checks import page_font_sizes

    view = TimelineView(runtime_like(steps=1, end_ms=300))
    assert len(view._data["segments"]) == 3  # start-up | steps | end
    svg = view.save(tmp_path / "t.svg", width=width, font_size=size).read_text()
    names = set(svg_texts(svg, "cctviz-span-label"))
    want = {"forward", "backward", "optimizer"} if width == "7in" else {"forward", "backward"}
    assert want <= names, names  # at 3.5 in: "optim…"
    sizes = page_font_sizes(svg)
    assert min(s for s, _ in sizes) >= size - 1e-9, sorted(sizes)[:3]
    assert "data-folded" not in svg
    assert "outside steps: start-up, end (time axis compressed)" in svg_texts(
        svg, "cctviz-legend-text"
    )


def test_time_outside_the_steps_is_drawn_apart_and_times_stay_true():
    view = TimelineView(runtime_like(end_ms=500), bins=500)
    segs = view._data["segments"]
    assert segs[0][1] == pytest.approx(2.0) and segs[2][0] == pytest.approx(2.3)
    assert segs[0][2] == segs[2][2] and segs[0][2] / segs[1][2] == pytest.approx(0.15, abs=0.01)
    assert sum(s[2] for s in segs) == 500
    # a short end stays with the steps
    assert len(TimelineView(runtime_like(end_ms=10))._data["segments"]) == 2
    r = view.rects
    fwd = r[(r["name"] == "forward") & (r["lane"] == 0)].sort_values("t0")
    assert fwd["t0"].iloc[0] == pytest.approx(2.0, abs=1e-3)  # seconds, not bins
    assert (fwd["t1"] - fwd["t0"]).to_numpy() == pytest.approx(0.03, abs=2e-3)
    # inside the steps no segment: a window of the steps alone is one
    view.window = (2.0, 2.3)
    assert view._data["segments"] == []


def test_collectives_are_wait_then_transfer_from_the_matched_calls():
    from cctviz.ops.collectives import instances

    tl = runtime_like(steps=4)
    view = TimelineView(tl, bins=2000, window=(1.9, 2.45))
    c = view.collectives
    ar = c[c["name"] == "all_reduce"].sort_values(["lane", "t0"])
    assert len(ar) == 8 and (ar["calls"] == 1).all()
    inst = instances(tl)
    inst = inst[inst["collective"] == "all_reduce"].sort_values(["profile", "arrival"])
    assert ar["waited"].to_numpy() == pytest.approx(inst["wait"].to_numpy(dtype=float) / 1e9)
    assert (ar["waited"] > 0).sum() == 4  # the rank that was not late waited 5 ms
    # the broadcast in the start-up: one call each, no peer late: waited 0, not NaN
    bc = c[c["name"] == "broadcast"]
    assert len(bc) == 2 and (bc["waited"] == 0).all()
    # coarse: calls whose pixels overlap merge, with their sums
    coarse = TimelineView(tl, bins=20).collectives
    assert coarse["calls"].sum() == len(c) and coarse["time"].sum() == pytest.approx(
        c["time"].sum()
    )


def test_marks_say_who_arrived_last_and_none_for_one_rank():
    tl = runtime_like(steps=4)
    view = TimelineView(tl)
    d = view._data
    assert d["m"] == 4
    lanes = np.frombuffer(d["mark_lane"], "<i4").tolist()
    assert lanes == [0, 1, 0, 1]  # rank step % 2 was late
    assert np.frombuffer(d["mark_last_by"], "<f4") == pytest.approx(0.005)
    assert d["mark_of"] == [""] * 4 and np.frombuffer(d["mark_ranks"], "<i4").tolist() == [2] * 4
    # one rank, or two streams of one rank: nobody waits for anybody
    one = TimelineView(runtime_like(ranks=1))
    assert one._data["m"] == 0
    streams = TimelineView(runtime_like(ranks=2, rank_of=[0, 0]))
    assert streams._data["m"] == 0
    assert np.isnan(streams.collectives["waited"]).all()


def test_no_last_to_arrive_marks_on_a_one_rank_nsight_timeline():
    tl = cctviz.read_timeline(DATA / "nsys" / "saxpy-mpi-cuda_nsys_perlmutter0.sqlite")
    assert tl.n_profiles == 1
    view = TimelineView(tl)
    assert view._data["m"] == 0
    c = view.collectives
    assert {"MPI_Init", "MPI_Send", "MPI_Recv"} <= set(c["name"]) and np.isnan(c["waited"]).all()


def test_counter_bands_fold_per_component_by_default():
    tl = runtime_like(ranks=4)
    prof = tl.profiles.assign(component=["sim", "sim", "train", "train"])
    ts = np.arange(0, 2_300, 100) * MS
    counters = pd.concat(
        [
            pd.DataFrame({"profile": p, "track": t, "ts": ts, "value": float(10 * p + k)})
            for p in range(4)
            for k, t in enumerate(("cpu_util", "rss"))
        ],
        ignore_index=True,
    )
    tl = cctviz.Timeline(
        tl.tree, tl.events, prof, counters=counters, units={"cpu_util": "%", "rss": "B"}
    )
    view = TimelineView(tl, bins=100)
    d = view._data
    assert d["k"] == 4  # 2 tracks x 2 components, not 8 bands
    assert d["counter_label"] == ["sim (highest of 2)", "train (highest of 2)"] * 2
    peak = np.frombuffer(d["counter_peak"], "<f4").reshape(4, -1)
    assert np.nanmax(peak, axis=1).tolist() == [10.0, 30.0, 11.0, 31.0]  # the highest lane's
    view.counter_bands = "lane"
    assert view._data["k"] == 8
    view.counter_bands = "none"
    assert view._data["k"] == 0
    with pytest.raises(traitlets.TraitError):
        view.counter_bands = "rank"


def test_selected_is_a_table_of_the_selected_nodes():
    tl = runtime_like()
    view = TimelineView(tl, selection='MATCH (".", a) WHERE a."name" = "forward"')
    sel = view.selected
    assert sel["name"].tolist() == ["forward"] and sel["callpath"].tolist() == [
        "train.py/step/forward"
    ]
    whole = sel["time (inc)"].iloc[0]
    assert whole == pytest.approx(3 * 30 * MS)  # the mean over the ranks
    view.brush = [2.0, 2.1]  # one step
    assert view.selected["time (inc)"].iloc[0] == pytest.approx(30 * MS)
    view.selection = []
    assert view.selected.empty


def test_a_workflow_summary_is_stated_and_its_blocked_contexts_hatched():
    from cctviz.workflow import WorkflowSummary

    tl = runtime_like(ranks=4)
    prof = tl.profiles.assign(component=["sim", "sim", "train", "train"])
    tl = cctviz.Timeline(tl.tree, tl.events, prof)
    blocked = pd.DataFrame(
        {
            "component": ["train", "train"],
            "context": ["train.py/step/optimizer", "train.py/step/backward/all_reduce"],
            "kind": ["phase", "comm"],
            "blocked_mean": [0.05, 0.01],
            "share": [0.1, 0.02],
            "waits_for": ["sim", "train"],
        }
    )
    # process by process: the optimizer counted as blocked on both train ranks
    per_process = pd.DataFrame(
        {
            "rank": [2, 3, 2],
            "component": ["train", "train", "train"],
            "context": ["train.py/step/optimizer"] * 2 + ["train.py/step/backward/all_reduce"],
            "kind": ["phase", "phase", "comm"],
            "blocked": [0.05, 0.05, 0.01],
        }
    )
    s = WorkflowSummary(
        pd.DataFrame(),
        blocked,
        pd.DataFrame(),
        pd.DataFrame(),
        "sim",
        "train waits for sim",
        per_process,
    )
    view = TimelineView(tl, summary=s)
    d = view._data
    assert d["summary"] == "Workflow summary: the bottleneck is sim (train waits for sim)."
    assert d["blocked_label"] == "blocked, as the summary counts it (train for sim)"
    r = view.rects
    hatched = r[r["blocked"]]
    # the train lanes' optimizer only (communication is drawn as wait and transfer)
    assert set(hatched["name"]) == {"optimizer"} and set(hatched["profile"]) == {2, 3}
    # blocked on one process only: hatched on that lane only
    one = WorkflowSummary(
        pd.DataFrame(), blocked, pd.DataFrame(), pd.DataFrame(), "sim", "", per_process.iloc[[0]]
    )
    r1 = TimelineView(tl, summary=one).rects
    assert set(r1.loc[r1["blocked"], "profile"]) == {2}
    assert set(d["mark_of"]) == {""}  # the all-reduce spans both components here
    assert TimelineView(tl)._data["summary"] == ""  # none read: not from a run folder
    assert TimelineView(tl, summary=False).summary is None


def test_too_narrow_an_export_grows_says_so_and_keeps_its_text(tmp_path):
    from cctviz.errors import FigureFitWarning
    from tests.export.checks import page_font_sizes, svg_root

    view = TimelineView(runtime_like())
    with pytest.warns(FigureFitWarning, match="wide, not 60 pt"):
        svg = view.save(tmp_path / "t.svg", width=60, font_size=8).read_text()
    root = svg_root(svg)
    assert float(root.get("width").removesuffix("pt")) > 60
    assert "wide, not 60 pt" in root.get("data-folded")
    assert min(s for s, _ in page_font_sizes(svg)) >= 8
