"""What a first-time user hit (issue 12), in a browser: each fix pinned by a test.

- an HBox around the view (the view grew without end), `view.layout.height`,
  no console errors from ipywidgets' layout code (a real JupyterLab);
- the first view fits: LULESH at two widths, a tall 64-rank ensemble, a
  runtime profile and a Kineto trace; the Fit button restores it after a pan;
- search on a million nodes: the exact total, next/previous match in tree order;
- the tooltip's exclusive share and shares of parent and total;
- colour: an all-zero second metric, the icicle's exclusive colour, the heat ramp.

Set CCTVIZ_SHOTS=/some/folder to also save screenshots there (for people to look at).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import pytest

import cctviz
from cctviz.model.units import _digits, format_value
from tests.conftest import DATA, LULESH_SCALING

ITEM = '[role="treeitem"]'
ROOT = Path(__file__).resolve().parents[2]
KRIPKE = DATA / "hatchet-tutorial" / "hpctoolkit-kripke-database-2589696"
KINETO = {
    "kineto-hta": DATA / "kineto" / "hta_trace_filter_sampled_rank-0.json.gz",
    "kineto-resnet50": DATA / "kineto" / "kineto_tb_resnet50_2021.json.gz",
}
#: the harness page's body margin (8 px each side): a view of W px needs a W + 16 px viewport
BODY_MARGIN = 16

# ----------------------------------------------------------------------------- helpers


def shoot(target, name: str) -> None:
    """Save a PNG of a page or locator under $CCTVIZ_SHOTS (nothing without it)."""
    folder = os.environ.get("CCTVIZ_SHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        target.screenshot(path=str(Path(folder) / f"{name}.png"))


def percent(fraction: float) -> str:
    """js/format.js formatPercent: 3 significant digits, trailing zeros dropped.

    (Python has no public twin: `cctviz.ops.text._percent` prints `:g`, six digits.)
    """
    s = _digits(fraction * 100, 3)
    if "." in s:
        s = s.rstrip("0").rstrip(".")
    return f"{s}%"


def luminance(color: str) -> float:
    """WCAG relative luminance of "#rrggbb" or "rgb(r, g, b)"."""
    s = color.strip()
    m = re.fullmatch(r"#([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})", s, re.I)
    if m:
        rgb = [int(h, 16) for h in m.groups()]
    else:
        m = re.match(r"rgba?\(\s*([\d.]+)[,\s]+([\d.]+)[,\s]+([\d.]+)", s)
        assert m, f"unparsable colour {color!r}"
        rgb = [float(x) for x in m.groups()]
    lin = [
        c / 255 / 12.92 if c / 255 <= 0.04045 else ((c / 255 + 0.055) / 1.055) ** 2.4 for c in rgb
    ]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def contrast(a: str, b: str) -> float:
    la, lb = sorted((luminance(a), luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


# Boxes (client px) of the svg and of every treeitem (mark and label together).
BOXES = """(root) => {
  const box = (e) => { const r = e.getBoundingClientRect();
    return {left: r.left, right: r.right, top: r.top, bottom: r.bottom, width: r.width, height: r.height}; };
  return {
    svg: box(root.querySelector("svg.cctviz-canvas")),
    items: [...root.querySelectorAll('[role="treeitem"]')].map((e) => ({
      id: +e.dataset.id, level: +e.getAttribute("aria-level"), ...box(e)})),
  };
}"""


def boxes(locator) -> dict:
    return locator.evaluate(BOXES)


def outside(items: list[dict], svg: dict, vertical: bool = True, tol: float = 1.0) -> list[dict]:
    """The items whose box is not wholly inside the svg's box."""
    bad = []
    for it in items:
        inside = it["left"] >= svg["left"] - tol and it["right"] <= svg["right"] + tol
        if vertical:
            inside = (
                inside and it["top"] >= svg["top"] - tol and it["bottom"] <= svg["bottom"] + tol
            )
        if not inside:
            bad.append(it)
    return bad


def viewport_transform(wp, view) -> str:
    return wp.view(view).locator("g.cctviz-viewport").get_attribute("transform")


def show_at(widget_page, view, view_width: int, height: int = 800):
    """A harness page whose view is `view_width` px wide; returns the page."""
    wp = widget_page()
    wp.page.set_viewport_size({"width": view_width + BODY_MARGIN, "height": height})
    wp.show(view)
    got = wp.view(view).locator(".cctviz-cct").evaluate("e => e.getBoundingClientRect().width")
    assert abs(got - view_width) < 1, got
    return wp


# ----------------------------------------------------------------------------- data


@pytest.fixture(scope="module")
def lulesh():
    return cctviz.read(LULESH_SCALING[-1]).profile(rank=0)


@pytest.fixture(scope="module")
def kripke():
    ens = cctviz.read(KRIPKE)
    assert ens.n_profiles == 64
    return ens


def phase_data(name, request):
    if name == "runtime":
        return request.getfixturevalue("runtime_run")
    return cctviz.read(KINETO[name])


# ------------------------------------------------------------- 1-3: JupyterLab, ipywidgets


def test_view_in_an_hbox_keeps_its_width(lab):
    """HBox([view, Label]): the view takes its share once and stops (it grew 968 -> 5316 px)."""
    cells = [
        f"import cctviz, ipywidgets\ntree = cctviz.read({str(LULESH_SCALING[-1])!r}).profile(rank=0)",
        "view = cctviz.CCTView(tree)\nbox = ipywidgets.HBox([view, ipywidgets.Label('x')])\nbox",
    ]
    with lab.open_notebook(cells) as nb:
        nb.run_all()
        page = nb.page
        page.locator(f".widget-hbox .cctviz-cct {ITEM}").first.wait_for()
        measure = """() => {
          const view = document.querySelector(".widget-hbox .cctviz-cct");
          const box = view.closest(".widget-hbox");
          return {view: view.getBoundingClientRect().width, box: box.getBoundingClientRect().width,
                  svg: view.querySelector("svg.cctviz-canvas").getBoundingClientRect().width};
        }"""
        first = page.evaluate(measure)
        assert first["view"] > 300  # laid out, not squeezed to nothing
        widths = [first]
        for _ in range(5):  # ~5 s: the old loop grew it by ~100 px a second
            page.wait_for_timeout(1000)
            widths.append(page.evaluate(measure))
        shoot(page, "hbox-lab")
        for w in widths:
            assert w["view"] <= first["view"] + 2, widths
            assert w["view"] <= w["box"] + 0.5 and w["svg"] <= w["view"] + 0.5, widths


def test_layout_height_sizes_the_view(lab):
    """`view.layout.height` is ipywidgets' own Layout and the drawing follows it."""
    cells = [
        f"import cctviz\ntree = cctviz.read({str(LULESH_SCALING[-1])!r}).profile(rank=0)",
        "view = cctviz.CCTView(tree)\nview",
    ]
    sizes = """() => {
      const root = document.querySelector(".cctviz-cct");
      const el = root.parentElement;  // the widget's element: ipywidgets puts the layout on it
      const e = el.getBoundingClientRect(), s = root.querySelector("svg.cctviz-canvas").getBoundingClientRect();
      return {outer: e.height, outerBottom: e.bottom, svg: s.height, svgBottom: s.bottom,
              toolbar: root.querySelector(".cctviz-toolbar").getBoundingClientRect().height};
    }"""
    with lab.open_notebook(cells) as nb:
        nb.run_all()
        page = nb.page
        page.locator(f".cctviz-cct {ITEM}").first.wait_for()
        nb.kernel_eval("view.layout.height = '900px'")  # CellError on an AttributeError
        page.wait_for_function(
            "() => { const r = document.querySelector('.cctviz-cct');"
            " return Math.abs(r.parentElement.getBoundingClientRect().height - 900) < 2"
            " && r.querySelector('svg.cctviz-canvas').getBoundingClientRect().height > 700; }"
        )
        tall = page.evaluate(sizes)
        assert abs(tall["outer"] - 900) < 2, tall
        assert tall["svg"] > 700 and tall["svg"] >= 900 - tall["toolbar"] - 40, tall
        # inside the widget, not over the next cell
        assert tall["svgBottom"] <= tall["outerBottom"] + 1, tall
        nb.kernel_eval("view.layout.height = '400px'")
        page.wait_for_function(
            "() => { const r = document.querySelector('.cctviz-cct');"
            " return Math.abs(r.parentElement.getBoundingClientRect().height - 400) < 2"
            " && r.querySelector('svg.cctviz-canvas').getBoundingClientRect().height < 400; }"
        )
        short = page.evaluate(sizes)
        assert abs(short["outer"] - 400) < 2, short
        assert short["svg"] < 400 - short["toolbar"] + 2 and short["svg"] < tall["svg"], short
        assert short["svg"] >= 400 - short["toolbar"] - 40, short  # it fills the height given
        assert short["svgBottom"] <= short["outerBottom"] + 1, short


def test_no_console_errors_from_layout_chart_or_second_display(lab):
    """The old bug: ipywidgets' setLayout logged "Cannot read properties of
    undefined (reading 'then')" for every view."""
    cells = [
        f"import cctviz\ntree = cctviz.read({str(LULESH_SCALING[-1])!r}).profile(rank=0)",
        "view = cctviz.CCTView(tree)\nview",
    ]
    with lab.open_notebook(cells) as nb:
        page = nb.page
        errors: list[str] = []
        page.on(
            "console",
            lambda m: errors.append(f"console.error: {m.text}") if m.type == "error" else None,
        )
        page.on("pageerror", lambda e: errors.append(f"page error: {e}"))
        nb.run_all()
        views = page.locator(".cctviz-cct")
        page.locator(f".cctviz-cct {ITEM}").first.wait_for()
        views.first.locator(".cctviz-chart button[data-chart=icicle]").click()
        assert nb.kernel_wait("print(view.chart)", "icicle") == "icicle"
        page.locator(f".cctviz-cct {ITEM} rect").first.wait_for()
        nb.kernel_eval("view.layout.height = '500px'")
        page.wait_for_function(
            "() => Math.abs(document.querySelector('.cctviz-cct').parentElement"
            ".getBoundingClientRect().height - 500) < 2"
        )
        nb.run_cell("view")  # the same model, displayed a second time
        page.wait_for_function(
            "() => document.querySelectorAll('.cctviz-cct[data-rendered]').length === 2"
        )
        second = views.nth(1)
        shown = int(nb.kernel_eval("print(len(view.visible))"))
        assert second.locator(f"{ITEM} rect").count() == shown > 0  # an icicle, drawn
        # the second view wears the layout too
        h = second.evaluate("e => e.parentElement.getBoundingClientRect().height")
        assert abs(h - 500) < 2
        page.wait_for_timeout(500)  # late errors (timers, observers)
        assert errors == []


# ------------------------------------------------------------------------------ 4: fit


@pytest.mark.parametrize("chart", ["tree", "icicle"])
@pytest.mark.parametrize("width", [968, 1108])
def test_lulesh_fits_the_width_at_first_render(widget_page, lulesh, chart, width):
    view = cctviz.CCTView(lulesh, chart=chart)
    wp = show_at(widget_page, view, width)
    b = boxes(wp.view(view))
    assert len(b["items"]) == len(view.visible) == len(lulesh)
    assert b["svg"]["width"] > width - 20
    bad = outside(b["items"], b["svg"], vertical=False)
    assert bad == [], [(lulesh.names[x["id"]], x["right"], b["svg"]["right"]) for x in bad]
    if width == 968:
        shoot(wp.page, f"lulesh-{chart}-968")


@pytest.mark.parametrize("chart", ["tree", "icicle"])
def test_tall_ensemble_opens_with_its_root_in_sight(widget_page, kripke, chart):
    view = cctviz.CCTView(kripke, chart=chart)
    wp = show_at(widget_page, view, 968)
    b = boxes(wp.view(view))
    root = [x for x in b["items"] if x["id"] == int(kripke.tree.roots[0])]
    assert len(root) == 1 and root[0]["height"] > 0
    assert outside(root, b["svg"]) == [], (root, b["svg"])
    shoot(wp.page, f"kripke-64-ranks-{chart}")


@pytest.mark.parametrize(
    "name, chart",
    [
        ("runtime", "tree"),
        ("runtime", "icicle"),
        ("kineto-hta", "tree"),
        ("kineto-hta", "icicle"),
        ("kineto-resnet50", "tree"),
        ("kineto-resnet50", "icicle"),
    ],
)
def test_phases_are_in_sight_at_first_render(widget_page, request, name, chart):
    """Threads and ProfilerSteps of a trace, warm-up / step / outside-steps of a
    `cctviz run` and their first parts: what a user looks for first."""
    data = phase_data(name, request)
    view = cctviz.CCTView(data, chart=chart)
    wp = show_at(widget_page, view, 968)
    shoot(wp.page, f"phases-{name}-{chart}")
    b = boxes(wp.view(view))
    tree = view.tree
    phases = [x for x in b["items"] if x["level"] in (2, 3) and x["id"] >= 0]
    assert phases and {int(tree.depth[x["id"]]) for x in phases} == {1, 2}
    bad = outside(phases, b["svg"])
    assert bad == [], [
        (
            tree.names[x["id"]],
            round(x["top"]),
            round(x["bottom"]),
            b["svg"]["top"],
            b["svg"]["bottom"],
        )
        for x in bad
    ]


@pytest.mark.parametrize("chart", ["tree", "icicle"])
def test_fit_button_restores_the_first_transform(widget_page, lulesh, chart):
    view = cctviz.CCTView(lulesh, chart=chart)
    wp = show_at(widget_page, view, 968)
    first = viewport_transform(wp, view)
    svg = wp.view(view).locator("svg.cctviz-canvas").bounding_box()
    # drag on an empty spot of the drawing (below the legends, at the right edge)
    x, y = svg["x"] + svg["width"] - 6, svg["y"] + svg["height"] - 6
    page = wp.page
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x - 150, y - 60, steps=6)
    page.mouse.up()
    wp.sync()
    moved = viewport_transform(wp, view)
    assert moved != first
    wp.view(view).locator(".cctviz-fit").click()
    wp.sync()
    assert viewport_transform(wp, view) == first


# --------------------------------------------------------------------- 5: search, 1e6 nodes


NEEDLE = "NeedleX"


@pytest.fixture(scope="module")
def haystack():
    """A random recursive tree of 1,000,000 nodes (benchmarks/view_scale.py's
    generator) whose names contain NEEDLE at 200 places."""
    rng = np.random.default_rng(12)
    n = 1_000_000
    parent = np.concatenate(([-1], (rng.random(n - 1) * np.arange(1, n)).astype(np.int64)))
    names = np.char.add("fn_", (np.arange(n) % 4999).astype(str)).astype(object)
    at = rng.choice(np.arange(1, n), size=200, replace=False)
    names[at] = [f"calc_{NEEDLE}_{k}" for k in range(200)]
    return cctviz.Tree.from_parents(parent, names.astype(str), {"time": rng.lognormal(0, 1, n)})


def needle_matches(tree) -> np.ndarray:
    names = np.char.lower(tree.names.astype(str))
    return np.flatnonzero(np.char.find(names, NEEDLE.lower()) >= 0)


def test_search_a_million_nodes_and_step_through_matches(widget_page, haystack):
    want = needle_matches(haystack)
    assert len(want) == 200
    view = cctviz.CCTView(haystack)
    wp = widget_page(view)
    root = wp.view(view)
    view.search = NEEDLE.lower()  # case-insensitive
    wp.sync()
    assert view.matches.ids.tolist() == want.tolist()
    info = root.locator(".cctviz-info")
    assert re.fullmatch(r"200 matches \(\d+ shown\)", info.text_content()), info.text_content()
    nxt, prev = root.locator(".cctviz-next"), root.locator(".cctviz-prev")

    def step(button, expect: int) -> None:
        button.click()
        wp.sync()
        assert view.selection.ids.tolist() == [expect]

    for k in range(5):  # from the top, in tree order
        step(nxt, int(want[k]))
    for k in (3, 2):
        step(prev, int(want[k]))
    view.selection = [int(want[-2])]
    wp.sync()
    step(nxt, int(want[-1]))
    step(nxt, int(want[0]))  # wraps
    step(prev, int(want[-1]))  # and back
    assert re.fullmatch(r"200 matches \(\d+ shown\) \u00b7 1 selected", info.text_content())


def test_next_match_is_drawn_and_selected(widget_page, haystack):
    want = needle_matches(haystack)
    view = cctviz.CCTView(haystack)
    wp = widget_page(view)
    root = wp.view(view)
    view.search = NEEDLE.lower()
    wp.sync()
    for k in range(3):
        root.locator(".cctviz-next").click()
        wp.sync()
        assert view.selection.ids.tolist() == [int(want[k])]
        item = root.locator(f'{ITEM}[data-id="{int(want[k])}"]')
        assert item.count() == 1 and item.get_attribute("aria-selected") == "true"
        assert "match" in item.get_attribute("class").split()


# ----------------------------------------------------------------------------- 6: tooltip


@pytest.mark.parametrize("name", ["CalcHourglassControlForElems", "LagrangeNodal"])
def test_tooltip_gives_exclusive_share_and_shares_of_parent_and_total(widget_page, lulesh, name):
    tree = lulesh
    node = [i for i in range(len(tree)) if tree.names[i] == name][0]
    assert len(tree.children(node)) > 0  # not a leaf
    m = tree.metrics
    unit = tree.units["time"]
    inc, exc = float(m["time (inc)"][node]), float(m["time"][node])
    parent = int(tree.parent[node])
    total = float(m["time (inc)"][tree.roots].sum())
    view = cctviz.CCTView(tree)
    wp = widget_page(view)
    wp.view(view).locator(f'{ITEM}[data-id="{node}"] circle').first.hover()
    tip = wp.view(view).locator(".cctviz-tooltip")
    tip.wait_for(state="visible")
    lines = tip.locator("div").all_text_contents()
    assert f"time (inc): {format_value(inc, unit)}" in lines, lines
    assert (
        f"time (exclusive): {format_value(exc, unit)} ({percent(exc / inc)} of inclusive)" in lines
    ), lines
    want = f"{percent(inc / float(m['time (inc)'][parent]))} of parent, {percent(inc / total)} of total"
    assert want in lines, lines


# ------------------------------------------------------------------------------ 7: colour


def test_bivariate_legend_names_an_all_zero_metric(widget_page):
    t = cctviz.Tree.from_parents(
        [-1, 0, 0, 1, 1, 2],
        ["main", "solve", "io", "a", "b", "c"],
        {"time": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0], "bytes": [0.0] * 6},
        meta={"units": {"time": "s", "bytes": "B"}},
    )
    view = cctviz.CCTView(t, color=("time (inc)", "bytes (inc)"))
    wp = widget_page(view)
    texts = wp.view(view).locator(".cctviz-legends .cctviz-legend-text").all_text_contents()
    assert "\u2191 all 0 B (no spread)" in texts, texts
    assert not any("0 B | 0 B" in x for x in texts), texts
    # the metric that varies still gives its breaks
    assert any(x.startswith("\u2192 ") and " | " in x for x in texts), texts


def test_icicle_coloured_by_its_size_shows_the_exclusive_part(widget_page, lulesh):
    view = cctviz.CCTView(lulesh, chart="icicle", color="time (inc)", size="time (inc)")
    wp = widget_page(view)
    titles = wp.view(view).locator(".cctviz-legends .cctviz-legend-title").all_text_contents()
    colour = [x for x in titles if x.startswith("Colour:")]
    assert len(colour) == 1 and colour[0].startswith("Colour: time ("), titles
    assert not colour[0].startswith("Colour: time (inc)"), titles
    assert "exclusive part" in colour[0], titles
    # and the fills follow the exclusive values: the largest exclusive is the darkest
    fills = fills_by_id(wp, view)
    exc = lulesh.metrics["time"]
    hot, cool = int(exc.idxmax()), int(exc.idxmin())
    assert luminance(fills[hot]) < luminance(fills[cool])


def fills_by_id(wp, view) -> dict[int, str]:
    return dict(
        wp.view(view)
        .locator(ITEM)
        .evaluate_all(
            "els => els.map(e => [+e.dataset.id, e.querySelector('.cctviz-mark').getAttribute('fill')])"
        )
    )


@pytest.mark.parametrize("chart", ["tree", "icicle"])
def test_hottest_node_is_darker_than_the_coolest(widget_page, lulesh, chart):
    # colour by exclusive time in both charts (the icicle would colour "time (inc)"
    # by its exclusive part when it also sizes the rectangles)
    view = cctviz.CCTView(lulesh, chart=chart, color="time", size="")
    wp = widget_page(view)
    fills = fills_by_id(wp, view)
    v = lulesh.metrics["time"]
    hot, cool = int(v.idxmax()), int(v.idxmin())
    assert fills[hot] != fills[cool]
    assert luminance(fills[hot]) < luminance(fills[cool]), (fills[hot], fills[cool])
    # monotone over all nodes: a larger value is never lighter
    order = np.argsort(v.to_numpy(), kind="stable")
    lum = [luminance(fills[int(i)]) for i in order]
    assert all(a >= b - 1e-9 for a, b in zip(lum, lum[1:]))


# ---------------------------------------------------------------------- 8: theme (and shots)


def test_dark_theme_keeps_labels_readable(lab):
    cells = [
        f"import cctviz\nruns = cctviz.read({str(LULESH_SCALING[-1])!r})",
        "view = cctviz.CCTView(runs.profile(rank=0))\nview",
        "cctviz.CCTView(runs, chart='icicle')",
    ]
    with lab.open_notebook(cells) as nb:
        try:
            nb.set_theme("JupyterLab Dark")
            nb.run_all()
            page = nb.page
            page.locator(f".cctviz-cct {ITEM}").first.wait_for()
            page.wait_for_function(
                "() => document.querySelectorAll('.cctviz-cct[data-rendered]').length === 2"
            )
            shoot(page, "dark-theme-lab")
            shoot(page.locator(".cctviz-cct").nth(1), "dark-theme-icicle-ensemble")
            colours = page.evaluate(
                """() => {
                  const root = document.querySelector(".cctviz-cct");
                  const cs = (e, p) => getComputedStyle(e)[p];
                  const svg = root.querySelector("svg.cctviz-canvas");
                  return {bg: cs(svg, "backgroundColor"),
                          label: cs(root.querySelector(".cctviz-label"), "fill"),
                          legend: cs(root.querySelector(".cctviz-legend-text"), "fill"),
                          toolbar: cs(root.querySelector(".cctviz-status"), "color")};
                }"""
            )
            assert luminance(colours["bg"]) < 0.1, colours  # the drawing follows the theme
            for key in ("label", "legend", "toolbar"):
                assert contrast(colours[key], colours["bg"]) >= 4.5, (key, colours)
        finally:
            nb.set_theme("JupyterLab Light")  # a user setting: later notebooks open light
