"""Readable at the size it is shown (issue 20, sections 4 and 5), in a browser.

- A tall tree (a `cctviz run` opened whole: 104 nodes, like notebook 02's FSDP tree)
  opens fitted in both directions: every row between the legends and the bottom edge,
  text no smaller than 9 px; the view grows rather than shrinking its text; Fit gives
  that back after a zoom.
- Notebook 04's linked trio (Sankey above, tree and profiles view side by side in an
  HBox) in JupyterLab at 1050 px, light and dark: text no smaller than 9 px in every
  view, nothing drawn outside a view's box, no tall empty band under a tree.

Set CCTVIZ_SHOTS=/some/folder to keep the screenshots.
"""

from __future__ import annotations

import pytest

import cctviz
from tests.ui.test_view_fixes import (
    ITEM,
    boxes,
    outside,
    shoot,
    show_at,
    viewport_transform,
)

#: glyph boxes are about the font size; 9 px text measures 9 px give or take a little
NINE_PX = 9 * 0.95

# The smallest label and the legend band's bottom, in client px.
TEXT = """(root) => {
  const svg = root.querySelector("svg.cctviz-canvas").getBoundingClientRect();
  const band = root.querySelector("g.cctviz-legends");
  const labels = [...root.querySelectorAll("svg.cctviz-canvas text")]
    .map((t) => t.getBoundingClientRect())
    .filter((r) => r.height > 0 && r.bottom > svg.top && r.top < svg.bottom && r.right > svg.left && r.left < svg.right);
  return {minText: Math.min(...labels.map((r) => r.height)), n: labels.length,
          band: band ? band.getBoundingClientRect().bottom : svg.top};
}"""


def test_a_tall_tree_opens_whole_and_fit_fits_both_directions(widget_page, runtime_run):
    view = cctviz.CCTView(runtime_run, collapsed=[])  # every node open, as a selection reveals
    assert len(view.visible) == len(runtime_run.tree) > 100
    wp = show_at(widget_page, view, 968, height=900)
    shoot(wp.page, "tall-tree-968")
    at_open = boxes(wp.view(view))
    text = wp.view(view).evaluate(TEXT)
    assert len(at_open["items"]) == len(view.visible)
    assert text["minText"] >= NINE_PX, text
    assert outside(at_open["items"], at_open["svg"]) == []  # nothing cut above or below
    assert min(x["top"] for x in at_open["items"]) >= text["band"] - 1  # none under the legends
    assert at_open["svg"]["height"] > 680  # it grew (was capped at 680 and cut rows)
    # zoom in, then Fit: the same whole view again
    first = viewport_transform(wp, view)
    box = wp.view(view).locator("svg.cctviz-canvas").bounding_box()
    wp.page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    wp.page.keyboard.down("Control")
    wp.page.mouse.wheel(0, -600)
    wp.page.keyboard.up("Control")
    assert viewport_transform(wp, view) != first
    wp.view(view).locator("button.cctviz-fit").click()
    assert viewport_transform(wp, view) == first
    assert outside(boxes(wp.view(view))["items"], at_open["svg"]) == []


def test_a_short_box_pans_rather_than_shrinking_text(widget_page, runtime_run):
    """Given a height (view.layout.height) too short for the tree at 9 px, the view
    keeps 9 px text and the root in sight; the rest is panned to."""
    view = cctviz.CCTView(runtime_run, collapsed=[])
    view.layout.height = "420px"
    wp = show_at(widget_page, view, 968)
    text = wp.view(view).evaluate(TEXT)
    assert text["minText"] >= NINE_PX, text
    b = boxes(wp.view(view))
    root = [x for x in b["items"] if x["id"] == int(runtime_run.tree.roots[0])]
    assert outside(root, b["svg"]) == [], root


# ------------------------------------------------------------------- notebook 04's trio

TRIO = [
    "import pathlib\nimport ipywidgets as widgets\nimport cctviz\n"
    "examples = pathlib.Path(cctviz.__file__).parent / 'examples' / 'lulesh-scaling'\n"
    "ens = cctviz.read(examples / 'lulesh-annotation-profile-64cores.json')",
    "sankey = cctviz.SankeyView(ens)\n"
    "tree = cctviz.CCTView(ens, color='time (inc) [cost]')\n"
    "profiles = cctviz.ProfilesView(ens)\n"
    "link = cctviz.link(sankey, tree, profiles)\n"
    "k = int(sankey.nodes.sort_values('cost', ascending=False).index[0])\n"
    "sankey.selected_groups = [k]\n"
    "widgets.VBox([sankey, widgets.HBox([tree, profiles])])",
]

# Per view: its box, its svg's box, the smallest text drawn in sight, what is drawn
# outside the box (where the svg does not clip), the empty band under a tree's rows.
VIEWS = """() => [...document.querySelectorAll(".cctviz")].map((v) => {
  const b = v.getBoundingClientRect();
  const svgEl = v.querySelector("svg.cctviz-canvas");
  const s = svgEl.getBoundingClientRect();
  const clips = getComputedStyle(svgEl).overflow !== "visible";
  const texts = [...svgEl.querySelectorAll("text")].map((t) => t.getBoundingClientRect())
    .filter((r) => r.height > 0 && r.bottom > s.top && r.top < s.bottom && r.right > s.left && r.left < s.right);
  let drawnOutside = 0;
  if (!clips) for (const e of svgEl.querySelectorAll("*")) {
    const r = e.getBoundingClientRect();
    if ((r.width || r.height) && (r.right > b.right + 1 || r.left < b.left - 1)) drawnOutside++;
  }
  const rows = [...v.querySelectorAll('[role="treeitem"]')].map((e) => e.getBoundingClientRect().bottom);
  // a tree's names cut by the svg's right edge (it clips: what is cut is not seen)
  const cutAtRight = [...v.querySelectorAll('[role="treeitem"] text')]
    .filter((t) => t.getBoundingClientRect().right > s.right + 1).map((t) => t.textContent);
  return {kind: v.classList.contains("cctviz-cct") ? "cct" : v.classList.contains("cctviz-sankey") ? "sankey" : "profiles",
          box: {left: b.left, right: b.right}, svg: {left: s.left, right: s.right, bottom: s.bottom},
          minText: Math.min(...texts.map((r) => r.height)), drawnOutside,
          emptyBelow: rows.length ? s.bottom - Math.max(...rows) : 0, cutAtRight};
})"""


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_the_linked_trio_is_readable_in_an_hbox_at_1050px(lab, theme):
    with lab.open_notebook(TRIO) as nb:
        page = nb.page
        page.set_viewport_size({"width": 1050, "height": 1300})
        page.evaluate(
            "async () => { const app = window.jupyterapp;"
            " if (!app.shell.leftCollapsed) await app.commands.execute('application:toggle-left-area'); }"
        )
        try:
            if theme == "dark":
                nb.set_theme("JupyterLab Dark")
            nb.run_all()
            page.locator(f".widget-hbox .cctviz-cct {ITEM}").first.wait_for()
            page.wait_for_function(
                "() => document.querySelectorAll('.cctviz[data-rendered]').length === 3"
            )
            page.wait_for_timeout(1500)  # the HBox settles; views follow their boxes
            shoot(page, f"trio-1050-{theme}")
            views = page.evaluate(VIEWS)
        finally:
            if theme == "dark":
                nb.set_theme("JupyterLab Light")
    assert sorted(v["kind"] for v in views) == ["cct", "profiles", "sankey"]
    hbox = [v for v in views if v["kind"] != "sankey"]
    assert all(v["box"]["right"] - v["box"]["left"] < 600 for v in hbox), views  # side by side
    for v in views:
        assert v["minText"] >= NINE_PX, v
        assert v["svg"]["left"] >= v["box"]["left"] - 1, v
        assert v["svg"]["right"] <= v["box"]["right"] + 1, v
        assert v["drawnOutside"] == 0, v
        assert v["emptyBelow"] < 120, v  # no tall empty band under the rows
        # the tree fits the width it is given: no name runs past its right edge (the
        # levels that do not fit at readable text are cut, "+N", said in the legend)
        assert v["cutAtRight"] == [], v


# ------------------------------------------------------------------- teardown (js/kit)

TEARDOWN = """(modelId) => {
  const model = window.__harness.models.get(modelId);
  const el = document.querySelector(`.harness-view[data-model-id="${CSS.escape(modelId)}"]`);
  const before = {handlers: model.handlers.length, children: el.children.length};
  for (const cleanup of model.views.splice(0)) cleanup();
  return {before, after: {handlers: model.handlers.length, children: el.children.length}};
}"""


@pytest.mark.parametrize("kind", ["cct", "sankey", "profiles"])
def test_every_view_undoes_what_it_set_up(widget_page, kind):
    """The three views tear down through one list (js/kit/lifetime.js): after the
    notebook's cleanup, no model listener is left and the view's DOM is gone, and a
    change from Python afterwards raises nothing in the page."""
    from tests.conftest import LULESH_SCALING

    ens = cctviz.read(LULESH_SCALING[-1])
    view = {"cct": cctviz.CCTView, "sankey": cctviz.SankeyView, "profiles": cctviz.ProfilesView}[
        kind
    ](ens)
    wp = widget_page(view)
    got = wp.eval(TEARDOWN, view.model_id)
    assert got["before"]["handlers"] >= 5 and got["before"]["children"] == 1, got
    assert got["after"] == {"handlers": 0, "children": 0}, got
    if kind == "profiles":
        view.selected_profiles = [0, 1]
    else:
        view.selection = view.tree.query('MATCH (".", a) WHERE a."name" = "main"')
    wp.sync()  # wp.check() at teardown fails on any page error
