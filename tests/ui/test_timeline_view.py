"""TimelineView in headless Chromium (the kernel-less harness): lanes drawn,
brushing along the time axis writes ``brush`` to Python (the window stays),
a selection set in Python outlines its intervals without a re-render."""

from __future__ import annotations

import pytest

import cctviz
from cctviz.views.timeline import TimelineView
from tests.conftest import DATA

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
