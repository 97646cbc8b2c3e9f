"""Live views name their nodes (issue 20, section 4): in the browser at the
notebook's width (968 px), no two nodes with different names show the same label,
in the Sankey and in the tree (node-link and icicle) of the LULESH runs."""

from __future__ import annotations

from collections import defaultdict

import pytest

import cctviz
from tests.conftest import LULESH_SCALING
from tests.ui.test_view_fixes import BODY_MARGIN

WIDTH = 968

COLLECT = """(root) => {
  const out = [];
  for (const el of root.querySelectorAll("[aria-label][data-node], [aria-label][data-id]")) {
    const key = el.dataset.node ?? el.dataset.id;
    const labels = [...el.querySelectorAll(".cctviz-label")].map((t) => t.textContent);
    out.push({ key, aria: el.getAttribute("aria-label"), labels });
  }
  for (const el of root.querySelectorAll(".cctviz-outside[data-node]")) {
    const labels = [...el.querySelectorAll(".cctviz-label")].map((t) => t.textContent);
    out.push({ key: el.dataset.node, aria: null, labels });
  }
  return out;
}"""


@pytest.fixture(scope="module")
def lulesh():
    return cctviz.read_ensemble(LULESH_SCALING)


def _clashes(items: list[dict], cut: str) -> dict[str, set[str]]:
    full = {
        it["key"]: it["aria"].rsplit(cut, 1)[0] for it in items if it["aria"] and cut in it["aria"]
    }
    shown: dict[str, set[str]] = defaultdict(set)
    for it in items:
        if it["key"] in full:
            for label in it["labels"]:
                if label.strip():
                    shown[label].add(full[it["key"]])
    assert len(shown) >= 3, shown
    return {k: v for k, v in shown.items() if len(v) > 1}


@pytest.mark.parametrize("kind", ["sankey", "tree", "icicle"])
def test_live_labels_tell_nodes_apart(widget_page, lulesh, kind):
    view = cctviz.SankeyView(lulesh) if kind == "sankey" else cctviz.CCTView(lulesh, chart=kind)
    wp = widget_page()
    wp.page.set_viewport_size({"width": WIDTH + BODY_MARGIN, "height": 900})
    wp.show(view)
    items = wp.view(view).evaluate(COLLECT)
    cut = ", mean " if kind == "sankey" else ", time (inc) "
    assert not _clashes(items, cut)


def test_the_icicle_menu_says_what_the_colour_shows(widget_page, lulesh):
    """The icicle colours a metric that is also its height by its exclusive part: the
    colour menu says so (it said "time (inc)" over exclusive colours), the tree's not."""
    icicle = cctviz.CCTView(lulesh, chart="icicle", color="time (inc)", size="time (inc)")
    wp = widget_page()
    wp.page.set_viewport_size({"width": WIDTH + BODY_MARGIN, "height": 900})
    wp.show(icicle)
    menu = wp.view(icicle).locator("select.cctviz-color")
    shown = menu.evaluate("s => s.options[s.selectedIndex].textContent")
    assert shown == "time (inc): colour shows time (exclusive)", shown
    assert menu.evaluate("s => s.value") == "time (inc)"
    icicle.chart = "tree"
    wp.sync()
    assert menu.evaluate("s => s.options[s.selectedIndex].textContent") == "time (inc)"


READABLE = """(root) => {
  const legends = root.querySelector("g.cctviz-legends");
  const band = legends ? legends.getBoundingClientRect().bottom : 0;
  const svg = root.querySelector("svg.cctviz-live").getBoundingClientRect();
  const labels = [...root.querySelectorAll("g.cctviz-viewport .cctviz-label")];
  const sizes = labels.map((t) => t.getBoundingClientRect().height).filter((h) => h > 0);
  const items = [...root.querySelectorAll("g.cctviz-viewport [role=treeitem]")].map((e) => {
    const b = e.getBoundingClientRect();
    return { id: Number(e.dataset.id), top: b.top, bottom: b.bottom };
  });
  const vp = root.querySelector("g.cctviz-viewport").getAttribute("transform") || "";
  return { band, svgTop: svg.top, svgBottom: svg.bottom, minText: Math.min(...sizes), items, vp };
}"""


def test_fitting_never_shrinks_text_below_9px(widget_page):
    """A deep tree far wider than the notebook (30 levels of long names): it opened at
    35% zoom, 4 px text. Fitting stops at 9 px text; the rest is panned to. Fit gives
    the opening view back after a zoom."""
    n = 30
    parent = [-1, *range(n - 1)]
    names = [f"level_{k}_a_long_function_name" for k in range(n)]
    tree = cctviz.Tree.from_parents(parent, names, {"time": [1.0] * n})
    view = cctviz.CCTView(tree)
    wp = widget_page()
    wp.page.set_viewport_size({"width": WIDTH + BODY_MARGIN, "height": 900})
    wp.show(view)
    at_open = wp.view(view).evaluate(READABLE)
    assert at_open["minText"] >= 9 * 0.95, at_open["minText"]  # glyph boxes: about the font size
    root = [it for it in at_open["items"] if it["id"] == 0][0]
    assert root["top"] >= at_open["band"] - 1, (root, at_open["band"])  # not under the legends
    # zoom in with the wheel, then Fit brings the opening view back
    box = wp.view(view).locator("svg.cctviz-live").bounding_box()
    wp.page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] - 40)
    wp.page.keyboard.down("Control")  # Ctrl + wheel zooms (a plain wheel scrolls the page)
    wp.page.mouse.wheel(0, -600)
    wp.page.keyboard.up("Control")
    assert wp.view(view).evaluate(READABLE)["vp"] != at_open["vp"]
    wp.view(view).locator("button.cctviz-fit").click()
    assert wp.view(view).evaluate(READABLE)["vp"] == at_open["vp"]
