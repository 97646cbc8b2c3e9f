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
