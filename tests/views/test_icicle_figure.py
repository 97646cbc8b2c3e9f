"""The exported icicle at paper widths (issue 20, sections 4 and 5).

- Deep trees keep their text at the figure's font size: the levels whose columns
  fit the width are drawn, deeper ones are marked (a notch, explained in the legend),
  instead of every label shrinking to a few points (Kripke's 7 in icicle had 2.9 pt text).
- A collapsed or cut column is marked by a notch, not by a heavy frame that reads as
  a selection.
- The spread bar's mean tick stays inside its cell (it crossed the cell's border).
- Legend texts are cut to the figure's width (they ran past a 3.5 in figure's edge).
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import cctviz
from tests.conftest import DATA, LULESH_SCALING
from tests.export.checks import SVG_NS, svg_root

KRIPKE = DATA / "hatchet-tutorial" / "hpctoolkit-kripke-database-2589696"
PT_PER_IN = 72


@pytest.fixture(scope="module")
def lulesh():
    return cctviz.read(LULESH_SCALING[-1])


@pytest.fixture(scope="module")
def kripke():
    return cctviz.read(KRIPKE)


def _scale(root) -> float:
    """Figure units per pt: 1 where text is drawn at its font size."""
    w = float(root.get("width").removesuffix("pt"))
    vb = [float(x) for x in root.get("viewBox").split()]
    return w / vb[2]


def _cells(root):
    """(node group, its rect) of every drawn icicle cell."""
    for g in root.iter(f"{SVG_NS}g"):
        if g.get("role") == "treeitem":
            rect = g.find(f"{SVG_NS}rect")
            if rect is not None:
                yield g, rect


def _depth_of(view, g) -> int:
    return int(view.tree.depth[int(g.get("data-id"))])


@pytest.mark.parametrize("width", ["3.5in", "7in"])
@pytest.mark.parametrize("name", ["lulesh", "kripke"])
def test_deep_trees_keep_their_text_size(request, name, width, tmp_path):
    data = request.getfixturevalue(name)
    view = cctviz.CCTView(data, chart="icicle")
    root = svg_root(view.save(tmp_path / "f.svg", width=width).read_text())
    assert _scale(root) == pytest.approx(1.0, abs=1e-3)  # not shrunk
    assert float(root.get("width").removesuffix("pt")) == pytest.approx(
        float(width.removesuffix("in")) * PT_PER_IN, abs=0.5
    )
    cells = list(_cells(root))
    depths = {_depth_of(view, g) for g, _ in cells}
    deepest = int(view.tree.depth.max()) - int(view.tree.depth.min())
    assert len(depths) >= 2
    texts = ["".join(t.itertext()) for t in root.iter(f"{SVG_NS}text")]
    if max(depths) < deepest:  # levels left out: said in the legend, marked on the cells
        hidden = deepest - max(depths)
        assert any(f"{hidden} deeper level" in t for t in texts), texts[:12]
        notches = [g for g, _ in cells if g.find(f"{SVG_NS}path") is not None]
        assert notches and all(_depth_of(view, g) == max(depths) for g in notches)
    # every drawn cell at the last drawn level or above: nothing drawn past the width
    vb_w = float(root.get("viewBox").split()[2])
    for g, rect in cells:
        x = float(re.match(r"translate\(([-\d.]+),", g.get("transform"))[1])
        assert x + float(rect.get("width")) <= vb_w + 0.5


def test_a_collapsed_column_has_a_notch_not_a_heavy_frame(lulesh, tmp_path):
    tree = lulesh.tree
    parent = int(np.flatnonzero(tree.names == "LagrangeNodal")[0])
    view = cctviz.CCTView(lulesh, chart="icicle", collapsed=[parent])
    svg = view.save(tmp_path / "c.svg", width="7in").read_text()
    root = svg_root(svg)
    g = [g for g, _ in _cells(root) if int(g.get("data-id")) == parent][0]
    assert "collapsed" in g.get("class")
    assert g.find(f"{SVG_NS}path") is not None  # the notch
    style = "".join(s.text or "" for s in root.iter(f"{SVG_NS}style"))
    heavy = re.findall(r"\.collapsed (?:rect)?\.cctviz-mark\{[^}]*stroke-width:2", style)
    assert heavy == [], heavy
    assert any("children not drawn" in "".join(t.itertext()) for t in root.iter(f"{SVG_NS}text"))


@pytest.mark.parametrize("width", ["3.5in", "7in"])
def test_spread_ticks_stay_inside_their_cells(lulesh, width, tmp_path):
    view = cctviz.CCTView(lulesh, chart="icicle")
    root = svg_root(view.save(tmp_path / "s.svg", width=width).read_text())
    checked = 0
    for g, rect in _cells(root):
        h = float(rect.get("height"))
        for line in g.iter(f"{SVG_NS}line"):
            if "cctviz-spread-mean" in (line.get("class") or ""):
                y1, y2 = float(line.get("y1")), float(line.get("y2"))
                assert 1 <= min(y1, y2) and max(y1, y2) <= h - 1.5, (g.get("aria-label"), y1, y2, h)
                checked += 1
    assert checked >= 3


def test_legend_texts_end_inside_a_narrow_figure(lulesh, tmp_path):
    # widths by js/measure.js, the bundled font's table (tests/test_font_metrics.py
    # checks it against the fonts themselves)
    from tests.fontmetrics import measure_in_node

    view = cctviz.CCTView(lulesh, chart="icicle")
    root = svg_root(view.save(tmp_path / "n.svg", width="3.5in").read_text())
    vb_w = float(root.get("viewBox").split()[2])
    items = [g for g in root.iter(f"{SVG_NS}g") if (g.get("class") or "") == "cctviz-legend"]
    assert len(items) >= 3
    starts, cases = [], []
    for item in items:
        x0 = float(re.match(r"translate\(([-\d.]+),", item.get("transform"))[1])
        for t in item.iter(f"{SVG_NS}text"):
            if t.get("text-anchor") not in (None, "start"):
                continue
            size = float(t.get("font-size") or root.get("font-size"))
            weight = 700 if "title" in (t.get("class") or "") else 400
            starts.append(x0 + float(t.get("x") or 0))
            cases.append(("".join(t.itertext()), size, weight))
    assert len(cases) >= 5
    for x, w, case in zip(starts, measure_in_node(cases), cases):
        assert x + w <= vb_w + 0.5, (case, x + w, vb_w)
