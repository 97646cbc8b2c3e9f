"""TimelineView in headless Chromium (the kernel-less harness): lanes drawn,
brushing along the time axis writes ``brush`` to Python (the window stays),
a selection set in Python outlines its intervals without a re-render; keys and
the wheel zoom; the standalone page renders offline with a counter band."""

from __future__ import annotations

import numpy as np
import pytest

import cctviz
from cctviz.views.timeline import TimelineView
from tests.conftest import DATA
from tests.ui.harness import offline_page

PING_PONG = DATA / "pipit" / "ping-pong-otf2" / "traces.otf2"
SPAN = "rect.cctviz-span"


@pytest.fixture(scope="module")
def ping():
    return cctviz.read_timeline(PING_PONG)


def rendered(wp, view) -> int:
    return int(wp.view(view).locator("[data-rendered]").get_attribute("data-rendered"))


def test_lanes_and_rectangles_drawn(widget_page, ping):
    view = TimelineView(ping)
    wp = widget_page(view)
    labels = wp.view(view).locator("text.cctviz-lane-label").all_text_contents()
    assert labels == ["rank 0", "rank 1"]
    assert wp.view(view).locator(SPAN).count() == view._data["n"] > 0
    assert "time since start [ms]" in wp.view(view).locator("svg").text_content()


def test_brush_writes_brush_not_window(widget_page, ping):
    view = TimelineView(ping)
    wp = widget_page(view)
    lane = wp.view(view).locator("rect.cctviz-lane-bg").first.bounding_box()
    x0, x1 = lane["x"] + lane["width"] * 0.25, lane["x"] + lane["width"] * 0.5
    y = lane["y"] + lane["height"] / 2
    page = wp.page
    page.mouse.move(x0, y)
    page.mouse.down()
    page.mouse.move((x0 + x1) / 2, y, steps=4)
    page.mouse.move(x1, y, steps=4)
    page.mouse.up()
    wp.sync()
    w0, w1 = view.whole_window
    assert len(view.brush) == 2
    assert view.brush[0] == pytest.approx(w0 + 0.25 * (w1 - w0), rel=0.02)
    assert view.brush[1] == pytest.approx(w0 + 0.5 * (w1 - w0), rel=0.02)
    assert view.window == pytest.approx(view.whole_window)
    assert wp.view(view).locator("rect.cctviz-brushed").count() == 1
    # an explicit zoom asks Python for the brushed window's detail
    r0 = rendered(wp, view)
    wp.view(view).locator("button.cctviz-zoom-brush").click()
    wp.sync()
    assert view.window[0] == pytest.approx(view.whole_window[1] * 0.25, rel=0.02)
    assert view.brush == []
    wp.wait_rendered(r0 + 1, view)


def test_python_selection_outlines_intervals(widget_page, ping):
    view = TimelineView(ping)
    wp = widget_page(view)
    r0 = rendered(wp, view)
    view.selection = [6]  # MPI_Recv
    wp.sync()
    sel = wp.view(view).locator(f"{SPAN}.selected")
    assert sel.count() == int((view.rects["node"] == 6).sum()) > 0
    assert set(sel.evaluate_all("els => els.map(e => e.dataset.node)")) == {"6"}
    assert rendered(wp, view) == r0
    # clicking a rectangle selects its node in Python
    wp.view(view).locator(f'{SPAN}[data-node="1"]').first.click(force=True)
    wp.sync()
    assert view.selection.ids.tolist() == [1]


def test_the_view_wears_the_theme_colours(widget_page, ping):
    """The timeline's figure rules use the theme's variables (they were defined for
    the other views only: late marks drew black, lanes without their background)."""
    from cctviz.ops.collectives import instances

    tl = cctviz.read_timeline(DATA / "pipit" / "ping-pong-otf2" / "traces.otf2")
    view = TimelineView(tl)
    wp = widget_page(view)
    colours = wp.view(view).evaluate(
        """(root) => {
          const v = root.querySelector(".cctviz-timeline");
          const css = getComputedStyle(v);
          const lane = root.querySelector("rect.cctviz-lane-bg");
          return {alert: css.getPropertyValue("--cctviz-alert").trim(),
                  bg: css.getPropertyValue("--cctviz-bg").trim(),
                  lane: getComputedStyle(lane).fill};
        }"""
    )
    assert colours["alert"] and colours["bg"], colours
    assert colours["lane"] not in ("", "none", "rgb(0, 0, 0)"), colours
    assert instances(tl).empty  # ping-pong: no collective marks to check here


def test_linked_in_jupyterlab_brush_scopes_the_tree_and_a_click_outlines(lab):
    """In a real JupyterLab (kernel, comms): brushing a window on the timeline makes
    the linked tree show that window's totals; clicking a node in the tree outlines
    its intervals on the timeline."""
    path = DATA / "pipit" / "ping-pong-otf2" / "traces.otf2"
    cells = [
        f"import cctviz\ntl = cctviz.read_timeline({str(path)!r})\n"
        "view = cctviz.TimelineView(tl)\ntree = cctviz.CCTView(tl.ensemble())\n"
        "link = cctviz.link(view, tree)\nview",
        "tree",
    ]
    with lab.open_notebook(cells) as nb:
        nb.run_all()
        page = nb.page
        page.locator(".cctviz-timeline rect.cctviz-lane-bg").first.wait_for()
        page.locator(".cctviz-cct [role=treeitem]").first.wait_for()
        lane = page.locator(".cctviz-timeline rect.cctviz-lane-bg").first.bounding_box()
        x0, x1 = lane["x"] + lane["width"] * 0.2, lane["x"] + lane["width"] * 0.6
        y = lane["y"] + lane["height"] / 2
        page.mouse.move(x0, y)
        page.mouse.down()
        page.mouse.move(x1, y, steps=6)
        page.mouse.up()
        nb.kernel_wait("print(len(view.brush))", "2")
        # the tree holds the brushed window's ensemble: its root time is the window's
        got = nb.kernel_eval(
            "import numpy as np\n"
            "w = view.brushed_timeline().ensemble()\n"
            "print(bool(np.allclose(tree.shown.values('time (inc)'), w.values('time (inc)'))),"
            " bool(np.allclose(w.values('time (inc)'), tl.ensemble().values('time (inc)'))))"
        ).split()
        assert got == ["True", "False"], got  # the window's totals, not the whole run's
        # click a tree node: the timeline outlines its intervals
        recv = page.locator('.cctviz-cct [role=treeitem][aria-label^="MPI_Recv"]').first
        recv.locator("circle").first.click(force=True)
        nb.kernel_wait("print(len(view.selection.ids) > 0)", "True")
        page.wait_for_function(
            "() => document.querySelectorAll('.cctviz-timeline rect.cctviz-span.selected').length > 0"
        )


def test_keyboard_pans_zooms_resets_and_clears_the_brush(widget_page, ping):
    """The view takes focus; + and - zoom around the middle, the arrows pan, 0
    shows the whole run, Escape clears the brush; Python gets each window."""
    view = TimelineView(ping)
    wp = widget_page(view)
    holder = wp.view(view).locator(".cctviz-holder")
    assert holder.get_attribute("tabindex") == "0"
    assert "arrow keys pan" in holder.get_attribute("aria-label")
    lanes = wp.view(view).locator("rect.cctviz-lane-bg")
    assert [a.split(":")[0] for a in lanes.evaluate_all("els => els.map(e => e.ariaLabel)")] == [
        "rank 0",
        "rank 1",
    ]
    w0, w1 = view.whole_window
    holder.focus()
    holder.press("+")
    wp.sync()
    assert view.window == pytest.approx((w0 + 0.25 * (w1 - w0), w0 + 0.75 * (w1 - w0)))
    holder.press("ArrowRight")
    wp.sync()
    assert view.window == pytest.approx((w0 + 0.3 * (w1 - w0), w0 + 0.8 * (w1 - w0)))
    holder.press("-")
    wp.sync()
    assert view.window == pytest.approx(view.whole_window)  # kept inside the run
    view.window = (w0 + 0.4 * (w1 - w0), w0 + 0.5 * (w1 - w0))
    view.brush = [w0 + 0.42 * (w1 - w0), w0 + 0.45 * (w1 - w0)]
    wp.sync()
    holder.press("Escape")
    wp.sync()
    assert view.brush == []
    holder.press("0")
    wp.sync()
    assert view.window == pytest.approx(view.whole_window)


def test_wheel_zooms_around_the_pointer(widget_page, ping):
    view = TimelineView(ping)
    wp = widget_page(view)
    lane = wp.view(view).locator("rect.cctviz-lane-bg").first.bounding_box()
    x = lane["x"] + lane["width"] * 0.25
    wp.page.mouse.move(x, lane["y"] + lane["height"] / 2)
    wp.page.mouse.wheel(0, -400)  # one step in: the window scales by exp(-400 * 0.0015)
    wp.sync_until(lambda: view.window != view.whole_window)  # asked once the wheel rests
    w0, w1 = view.whole_window
    f = np.exp(-400 * 0.0015)
    at = w0 + 0.25 * (w1 - w0)  # the time under the pointer stays where it was
    assert view.window[1] - view.window[0] == pytest.approx(f * (w1 - w0), rel=0.02)
    assert view.window[0] == pytest.approx(at - 0.25 * f * (w1 - w0), rel=0.02)
    assert view.brush == []


def test_standalone_page_offline_with_counters_and_keys(browser, tmp_path):
    """``save("x.html")`` of a real torch.profiler trace with its memory counter:
    the page renders lanes, rectangles and the counter band with nothing from the
    network; keys zoom within the exported detail; Escape clears a brush."""
    from tests.torch_memory import memory_timeline, record

    tl, _ = memory_timeline(record(tmp_path / "trace.json"))
    view = TimelineView(tl)
    page_file = view.save(tmp_path / "timeline.html")
    with offline_page(browser, page_file) as (page, requests, errors):
        page.wait_for_selector(".cctviz-timeline[data-rendered]")
        assert page.locator("text.cctviz-lane-label").all_text_contents() == ["rank 0"]
        assert page.locator(SPAN).count() == view._data["n"] > 0
        assert page.locator("path.cctviz-counter-area").count() == 1
        assert (
            "memory allocated (cpu) [MB]"
            in page.locator("text.cctviz-counter-title").text_content()
        )
        assert page.locator("select.cctviz-depth").is_hidden()  # the depth needs Python
        status = page.locator(".cctviz-status")
        before = status.text_content()
        holder = page.locator(".cctviz-holder")
        holder.focus()
        holder.press("+")
        page.wait_for_function(
            "() => document.querySelector('.cctviz-timeline').dataset.rendered === '2'"
        )
        assert status.text_content() != before
        assert "re-binned in this page" in page.locator("text.cctviz-note").text_content()
        holder.press("0")
        page.wait_for_function(
            "() => document.querySelector('.cctviz-timeline').dataset.rendered === '3'"
        )
        assert status.text_content() == before
        lane = page.locator("rect.cctviz-lane-bg").first.bounding_box()
        y = lane["y"] + lane["height"] / 2
        page.mouse.move(lane["x"] + 40, y)
        page.mouse.down()
        page.mouse.move(lane["x"] + 200, y, steps=5)
        page.mouse.up()
        assert page.locator("rect.cctviz-brushed").count() == 1
        holder.press("Escape")
        assert page.locator("rect.cctviz-brushed").count() == 0
        page.screenshot(path=str(tmp_path / "page.png"))
        assert [u for u in requests if not u.startswith(("file:", "data:", "blob:"))] == []
        assert errors == []


def test_markers_of_a_large_timeline_follow_its_first_view(widget_page, monkeypatch, tmp_path):
    """Beyond MARKS_AFTER events the first view goes out without collective
    markers; once drawn, the page asks for them (``_marks_wanted``) and they
    come with the same rectangles (real traces: two sampled NCCL ranks)."""
    from cctviz.views import timeline as timeline_view

    monkeypatch.setattr(timeline_view, "MARKS_AFTER", 0)  # these traces count as large
    tl = cctviz.read_timeline(sorted((DATA / "kineto").glob("hta_trace_filter_sampled_rank-*")))
    view = TimelineView(tl)
    first = dict(view._data)
    assert first["marks_pending"] and first["m"] == 0
    wp = widget_page(view)  # draws, then the page's request arrives and the markers follow
    wp.sync()
    assert view._marks_wanted == first["version"]
    assert not view._data["marks_pending"] and view._data["m"] > 0
    assert view._data["n"] == first["n"]  # the same level of detail
    assert bytes(view._data["b0"]) == bytes(first["b0"])
    wp.wait_rendered(2, view)
    assert wp.view(view).locator("path.cctviz-late").count() == view._data["m"]
    # a figure of a view whose markers never came draws them too
    other = TimelineView(tl)
    assert other._data["marks_pending"]
    svg = other.save(tmp_path / "t.svg").read_text()
    assert svg.count('class="cctviz-late') == other._data["m"] > 0


def test_slices_named_and_communication_explained(widget_page):
    """A runtime run's shape: phases named on their slices (a name from the
    profile set as text: no dialog fires), the all-reduce at least a few pixels
    wide with a tooltip that splits wait and transfer, and a click on it selects
    its node."""
    from tests.views.test_timeline_view import runtime_like

    evil = "<img src=x onerror=alert(1)>"
    tl = runtime_like(steps=1, end_ms=300)
    t = tl.tree
    names = [evil if n == "GPT" else n for n in t.nodes["name"]]
    tree = cctviz.Tree.from_parents(t.parent, names, kind=t.nodes["kind"].tolist())
    view = TimelineView(cctviz.Timeline(tree, tl.events, tl.profiles))
    wp = widget_page(view)
    root = wp.view(view)
    labels = root.locator("text.cctviz-span-label").all_text_contents()
    assert {"forward", "backward", "optimizer"} <= set(labels)
    assert any(x.startswith("<img") for x in labels)  # the name, as text
    assert root.locator("img").count() == 0
    colls = root.locator("g.cctviz-coll")
    assert colls.count() == view._data["c"] > 0
    widths = colls.evaluate_all("gs => gs.map(g => g.getBBox().width)")
    assert min(widths) >= 2.9  # px: at least a few
    ar = int(view.collectives.loc[view.collectives["name"] == "all_reduce", "node"].iloc[0])
    target = root.locator(f'g.cctviz-coll[data-node="{ar}"]').first
    target.hover(force=True)
    tip = root.locator(".cctviz-tooltip")
    tip.wait_for(state="visible")
    text = tip.text_content()
    assert "all_reduce" in text and ("waiting" in text and "transfer" in text)
    target.click(force=True)
    wp.sync()
    assert view.selection.names.tolist() == ["all_reduce"]
    assert root.locator("g.cctviz-coll.selected").count() >= 1
