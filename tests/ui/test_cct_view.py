"""CCTView in headless Chromium: the DOM contract and selection both ways.

The kernel-less harness (tests/ui/harness.py) runs the real bundle against the
real Python widget; one test drives a real JupyterLab.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from playwright.sync_api import expect

import cctviz
from cctviz.model.units import format_value
from tests.conftest import LULESH_SCALING

ITEM = '[role="treeitem"]'
EVIL = "<img src=x onerror=alert(1)>"


@pytest.fixture(scope="module")
def runs():
    return cctviz.read(LULESH_SCALING[-1])  # 64 ranks


@pytest.fixture(scope="module")
def tree(runs):
    return runs.profile(rank=0)


def item(wp, view, node):
    return wp.view(view).locator(f'{ITEM}[data-id="{node}"]')


def selected_ids(wp, view) -> list[int]:
    els = wp.view(view).locator(f'{ITEM}[aria-selected="true"]')
    return sorted(int(x) for x in els.evaluate_all("els => els.map(e => e.dataset.id)"))


def shown_ids(wp, view) -> list[int]:
    els = wp.view(view).locator(ITEM)
    return [int(x) for x in els.evaluate_all("els => els.map(e => e.dataset.id)")]


def on_screen(wp, view) -> list[int]:
    """Ids of the treeitems (mark and label) wholly inside the drawing area."""
    return wp.view(view).evaluate(
        """(root) => {
          const box = root.querySelector("svg").getBoundingClientRect();
          return [...root.querySelectorAll('[role="treeitem"]')].filter((e) => {
            const r = e.getBoundingClientRect();  // mark and label
            return r.left > box.left && r.right < box.right && r.top > box.top
              && r.bottom < box.bottom;
          }).map((e) => +e.dataset.id);
        }"""
    )


def rendered(wp, view) -> int:
    return int(wp.view(view).locator("[data-rendered]").get_attribute("data-rendered"))


def test_renders_one_treeitem_per_row_with_aria(widget_page, tree):
    view = cctviz.CCTView(tree)
    wp = widget_page(view)
    rows = view.visible
    assert shown_ids(wp, view) == rows["id"].tolist()
    for node in rows["id"][:10]:
        el = item(wp, view, node)
        assert el.get_attribute("aria-label").startswith(str(tree.names[node]))
        assert el.get_attribute("aria-selected") == "false"
        has_kids = len(tree.children(node)) > 0
        assert (el.get_attribute("aria-expanded") is not None) == has_kids
    assert wp.view(view).locator('[role="tree"]').count() == 1
    assert wp.view(view).locator('[tabindex="0"]').count() == 1


def test_click_selects_exactly_that_node_in_python(widget_page, tree):
    view = cctviz.CCTView(tree)
    seen = []
    view.observe(lambda ch: seen.append(ch["new"].ids.tolist()), names="selection")
    wp = widget_page(view)
    node = int(view.visible["id"][5])
    item(wp, view, node).locator("circle, rect").first.click()
    wp.sync()
    assert view.selection.ids.tolist() == [node] and seen == [[node]]
    assert selected_ids(wp, view) == [node]
    # clicking the label selects too; shift-click adds
    other = int(view.visible["id"][7])
    item(wp, view, other).locator("text").first.click(modifiers=["Shift"])
    wp.sync()
    assert view.selection.ids.tolist() == sorted([node, other])
    assert selected_ids(wp, view) == sorted([node, other])


def test_python_selection_shows_in_the_view(widget_page, tree):
    top = int(tree.roots[0])
    deep = int(np.argmax(tree.depth))
    view = cctviz.CCTView(tree, collapsed=[top])
    wp = widget_page(view)
    assert len(shown_ids(wp, view)) == 1
    view.selection = tree.query('MATCH (".", a) WHERE a."name" STARTS WITH "MPI_W"') | [deep]
    wp.sync()
    want = sorted(view.selection.ids.tolist())
    assert selected_ids(wp, view) == want  # collapsed ancestors were expanded
    assert top not in view.collapsed
    view.selection = []
    wp.sync()
    assert selected_ids(wp, view) == []


def test_collapse_and_expand_by_double_click_and_keyboard(widget_page, tree):
    view = cctviz.CCTView(tree)
    wp = widget_page(view)
    node = int(tree.children(int(tree.roots[0]))[0])
    n_before = len(shown_ids(wp, view))
    r0 = rendered(wp, view)
    item(wp, view, node).locator("circle").first.dblclick()
    wp.sync()
    wp.wait_rendered(r0 + 1, view)
    assert node in view.collapsed
    el = item(wp, view, node)
    assert el.get_attribute("aria-expanded") == "false"
    kids = set(tree.children(node).tolist())
    assert not kids & set(shown_ids(wp, view))
    assert len(shown_ids(wp, view)) < n_before
    # keyboard: the active item is expanded with ArrowRight
    el.focus()
    el.press("ArrowRight")
    wp.sync()
    assert node not in view.collapsed and node in view.expanded
    assert kids <= set(shown_ids(wp, view))
    assert item(wp, view, node).get_attribute("aria-expanded") == "true"


def test_keyboard_moves_and_selects(widget_page, tree):
    view = cctviz.CCTView(tree)
    wp = widget_page(view)
    first = wp.view(view).locator(f'{ITEM}[tabindex="0"]')
    first.focus()
    first.press("ArrowDown")
    active = wp.view(view).locator(f'{ITEM}[tabindex="0"]')
    node = int(active.get_attribute("data-id"))
    assert node != int(view.visible["id"][0])
    active.press("Enter")
    wp.sync()
    assert view.selection.ids.tolist() == [node]


def test_brush_selects_nodes_in_the_rectangle(widget_page, tree):
    view = cctviz.CCTView(tree)
    wp = widget_page(view)
    marks = wp.view(view).locator(f"{ITEM} circle")
    boxes = {
        int(m.evaluate("e => e.closest('[role=treeitem]').dataset.id")): m.bounding_box()
        for m in marks.all()
    }
    centres = {k: (b["x"] + b["width"] / 2, b["y"] + b["height"] / 2) for k, b in boxes.items()}
    xs = sorted(c[0] for c in centres.values())
    x0, x1 = xs[0] - 5, xs[len(xs) // 3] + 2
    ys = sorted(c[1] for c in centres.values())
    y0, y1 = ys[0] - 5, ys[-1] + 5
    want = sorted(k for k, (x, y) in centres.items() if x0 <= x <= x1 and y0 <= y <= y1 and k >= 0)
    assert 1 < len(want) < len(centres)
    page = wp.page
    page.keyboard.down("Shift")
    page.mouse.move(x0, y0)
    page.mouse.down()
    page.mouse.move((x0 + x1) / 2, (y0 + y1) / 2, steps=4)
    page.mouse.move(x1, y1, steps=4)
    page.mouse.up()
    page.keyboard.up("Shift")
    wp.sync()
    assert view.selection.ids.tolist() == want
    assert selected_ids(wp, view) == want


def test_search_highlights_matches(widget_page, tree):
    top = int(tree.roots[0])
    view = cctviz.CCTView(tree, collapsed=[top])
    wp = widget_page(view)
    box = wp.view(view).locator("input[type=search]")
    box.fill("waitall")
    wp.sync_until(lambda: view.search == "waitall")  # the box debounces
    matches = set(view.matches.ids.tolist())
    assert matches and all("waitall" in str(tree.names[m]).lower() for m in matches)
    assert top not in view.collapsed  # ancestors expanded
    els = wp.view(view).locator(f"{ITEM}.match")
    got = {int(x) for x in els.evaluate_all("els => els.map(e => e.dataset.id)")}
    assert got == matches


def test_untrusted_name_is_text_and_no_dialog(widget_page):
    t = cctviz.Tree.from_parents(
        [-1, 0, 0], ["main", EVIL, "<b>bold</b>"], {"time": [1.0, 2.0, 3.0]}
    )
    view = cctviz.CCTView(t)
    wp = widget_page(view)
    el = item(wp, view, 1)
    assert el.get_attribute("aria-label").startswith(EVIL)
    assert EVIL in el.text_content()
    root = wp.view(view)
    assert root.locator("img").count() == 0 and root.locator("b").count() == 0
    el.hover()
    wp.page.wait_for_timeout(100)
    assert root.locator("img").count() == 0
    wp.check()  # no dialog, no page error


def test_menus_and_layout_write_traits(widget_page, tree):
    view = cctviz.CCTView(tree)
    wp = widget_page(view)
    root = wp.view(view)
    root.locator(".cctviz-chart button[data-chart=icicle]").click()
    wp.sync()
    assert view.chart == "icicle"
    assert root.locator(f"{ITEM} rect").count() == len(view.visible)
    root.locator("select.cctviz-color2").select_option("time")
    wp.sync()
    assert view.color == ("time (inc)", "time")
    root.locator("select.cctviz-size").select_option("")
    wp.sync()
    assert view.size == ""
    view.chart = "tree"
    wp.sync()
    assert root.locator(f"{ITEM} circle").count() == len(view.visible)


def test_other_node_expands_its_parent(widget_page, tree):
    view = cctviz.CCTView(tree, max_nodes=12)
    wp = widget_page(view)
    rows = view.visible
    assert len(shown_ids(wp, view)) == len(rows) <= 12
    other = int(rows["id"][rows["id"] < 0].iloc[0])
    parent = -2 - other
    el = item(wp, view, other)
    assert el.get_attribute("aria-label").startswith("(other)")
    el.locator("circle, rect, path").first.click()
    wp.sync()
    assert parent in view.expanded


def test_focus_and_back(widget_page, tree):
    view = cctviz.CCTView(tree)
    wp = widget_page(view)
    node = int(tree.children(int(tree.roots[0]))[0])
    item(wp, view, node).locator("circle").first.click()
    wp.sync()
    wp.view(view).locator(".cctviz-focus").click()
    wp.sync()
    assert view.focus == node
    ids = [i for i in shown_ids(wp, view) if i >= 0]
    assert ids[0] == node and all(node <= i < tree.end[node] for i in ids)
    wp.view(view).locator(".cctviz-back").click()
    wp.sync()
    assert view.focus == -1


def test_ensemble_tooltip_gives_spread(widget_page, runs):
    view = cctviz.CCTView(runs, color="time (inc) [imbalance]", max_nodes=40)
    wp = widget_page(view)
    st = runs.stats("time (inc)")
    node = int(st.loc[view.visible["id"][view.visible["id"] >= 0]]["imbalance"].idxmax())
    item(wp, view, node).locator("circle").first.hover()
    tip = wp.view(view).locator(".cctviz-tooltip")
    tip.wait_for(state="visible")
    text = tip.text_content()
    for word in ("mean", "min", "max", "std"):
        assert word in text
    rank = runs.profiles.loc[st.loc[node, "argmax"], "rank"]
    assert f"rank {rank}" in text


def test_million_nodes_render_and_click(widget_page):
    rng = np.random.default_rng(1)
    n = 1_000_000
    parent = np.concatenate(([-1], (rng.random(n - 1) * np.arange(1, n)).astype(np.int64)))
    names = np.char.add("f", (np.arange(n) % 997).astype(str))
    t = cctviz.Tree.from_parents(parent, names, {"time": rng.random(n)})
    view = cctviz.CCTView(t)
    wp = widget_page(view)
    shown = shown_ids(wp, view)
    assert 1000 < len(shown) <= 2000
    # binary rows of ~2000 nodes, not a million nodes; the initial state also carries
    # the bundle (_esm) and the stylesheet (_css, with the bundled font inlined)
    assets = sum(len(getattr(view, k).encode()) for k in ("_esm", "_css"))
    assert wp.bytes_sent - assets < 120_000
    node = [i for i in on_screen(wp, view) if i > 0][-1]  # a deep node the user can see
    item(wp, view, node).locator("text").first.click()  # its label: the mark is tiny
    wp.sync()
    assert view.selection.ids.tolist() == [node]


def test_lab_end_to_end(lab):
    """A real JupyterLab and kernel: run the cells, click, read the selection back."""
    path = LULESH_SCALING[-1]
    cells = [
        f"import cctviz\nruns = cctviz.read({str(path)!r})\ntree = runs.profile(rank=0)",
        "view = cctviz.CCTView(tree)\nview",
    ]
    with lab.open_notebook(cells) as nb:
        nb.run_all()
        page = nb.page
        items = page.locator(f".cctviz-cct {ITEM}")
        items.first.wait_for()
        node = int(items.nth(3).get_attribute("data-id"))
        items.nth(3).locator("circle").first.click()
        assert nb.kernel_wait("print(view.selection.ids.tolist())", f"[{node}]") == f"[{node}]"
        # and back: Python selects, the view shows
        nb.kernel_eval("view.selection = [0]")
        page.locator(f'.cctviz-cct {ITEM}[data-id="0"][aria-selected="true"]').wait_for()
        assert page.locator(f'.cctviz-cct {ITEM}[aria-selected="true"]').count() == 1


def test_pan_and_zoom_keep_selection_and_page_scroll(widget_page, tree):
    view = cctviz.CCTView(tree)
    wp = widget_page(view)
    root = wp.view(view)
    vp = root.locator("g.cctviz-viewport")
    view.selection = [0]
    wp.sync()
    before = vp.get_attribute("transform")
    box = root.locator("svg.cctviz-canvas").bounding_box()
    x, y = box["x"] + box["width"] - 40, box["y"] + box["height"] - 40  # empty corner
    # plain wheel is left to the page; Ctrl + wheel zooms
    wp.page.mouse.move(x, y)
    wp.page.mouse.wheel(0, -200)
    wp.page.wait_for_timeout(100)
    assert vp.get_attribute("transform") == before
    wp.page.keyboard.down("Control")
    wp.page.mouse.wheel(0, -200)
    wp.page.keyboard.up("Control")
    expect(vp).not_to_have_attribute("transform", before)  # retries until the zoom lands
    zoomed = vp.get_attribute("transform")
    assert "scale" in zoomed
    # drag on the background pans and leaves the selection alone
    wp.page.mouse.move(x, y)
    wp.page.mouse.down()
    wp.page.mouse.move(x - 80, y - 30, steps=5)
    wp.page.mouse.up()
    wp.sync()
    assert vp.get_attribute("transform") != zoomed
    assert view.selection.ids.tolist() == [0]


def test_tooltip_gives_call_path_and_metrics(widget_page, tree):
    view = cctviz.CCTView(tree)
    wp = widget_page(view)
    deep = max((i for i in on_screen(wp, view) if i >= 0), key=lambda i: tree.depth[i])
    assert tree.depth[deep] >= 2
    item(wp, view, deep).locator("circle").first.hover()
    tip = wp.view(view).locator(".cctviz-tooltip")
    tip.wait_for(state="visible")
    text = tip.text_content()
    pos = [text.find(name) for name in tree.path(deep)]
    assert all(p >= 0 for p in pos) and pos == sorted(pos)  # root first
    assert "time (inc)" in text


def ranks_with_a_killed_one() -> cctviz.Ensemble:
    """Ranks 0, 1, 3 timed in ms; rank 2 killed: a profile with ok=False and no
    rows, as the run-folder reader gives it."""

    def rank(solve: float, wait: float) -> cctviz.Tree:
        return cctviz.Tree.from_parents(
            [-1, 0, 0, 1],
            ["main", "solve", "wait", "kernel"],
            {"time": [1.0, solve, wait, 40.0]},
            meta={"units": {"time": "ms"}},
        )

    live = cctviz.Ensemble.from_trees([rank(1200.0, 0.5), rank(1210.0, 30.0), rank(1190.0, 0.5)])
    rows = live.exclusive_rows.copy()
    rows["profile"] = np.array([0, 1, 3])[rows["profile"].to_numpy()]
    profiles = pd.DataFrame({"rank": [0, 1, 2, 3], "ok": [True, True, False, True]})
    return cctviz.Ensemble(live.tree, rows, profiles)


def test_legends_and_tooltip_name_units(widget_page):
    ens = ranks_with_a_killed_one()
    view = cctviz.CCTView(ens)
    wp = widget_page(view)
    root = wp.view(view)
    legend = root.locator(".cctviz-legends")
    titles = legend.locator(".cctviz-legend-title").all_text_contents()
    # the values carry their units ("10.3 ms", "1.25 s"): the titles name the metric only
    assert "Colour: time (inc)" in titles
    assert "Size (area): time (inc)" in titles
    assert "Spread of time (inc) over 3 profiles (1 failed, left out)" in titles
    texts = legend.locator(".cctviz-legend-text").all_text_contents()
    lo, hi = view._data["color_domain"]
    assert format_value(lo, "ms") == "10.3 ms" and format_value(hi, "ms") == "1.25 s"
    assert "10.3 ms" in texts and "1.25 s" in texts  # ms values past 1000 read in seconds
    thr = view._data["spread"]["cost_threshold"]
    assert (
        f"imbalance costs max \u2212 mean \u2265 {format_value(thr, 'ms')} (1% of the total)"
        in texts
    )

    st = ens.stats("time (inc)")
    node = {n: i for i, n in enumerate(ens.tree.names)}
    wait, solve = node["wait"], node["solve"]
    item(wp, view, wait).locator("circle").first.hover()
    tip = root.locator(".cctviz-tooltip")
    tip.wait_for(state="visible")
    lines = tip.locator("div").all_text_contents()
    text = "\n".join(lines)
    assert f"time (inc): {format_value(st.loc[wait, 'mean'], 'ms')}" in lines
    # a leaf: all of it is exclusive
    exc = format_value(st.loc[wait, "mean"], "ms")
    assert f"time (exclusive): {exc} (100% of inclusive)" in lines
    assert "of parent" in text and "of total" in text
    assert "time (inc) over 3 profiles (1 failed, left out)" in lines
    assert f"min {format_value(st.loc[wait, 'min'], 'ms')}" in text  # 500 us: not 0 from rank 2
    cost = format_value(st.loc[wait, "cost"], "ms")
    assert f"costs {cost} (max \u2212 mean)" in text and "max on rank 1" in text
    assert f"imbalance (max/mean) {st.loc[wait, 'imbalance']:.1f}\u00d7" in text
    # the cue names what the imbalance costs, on wait only
    cue = item(wp, view, wait).locator(".cctviz-imbalance")
    assert cue.text_content() == f"\u25b2 {cost}"
    assert "imbalanced" in item(wp, view, wait).get_attribute("class")
    assert item(wp, view, solve).locator(".cctviz-imbalance").count() == 0
