"""ProfilesView in headless Chromium (the kernel-less harness): one dot per
live profile of a real ensemble, brushing and clicking select profiles in
Python, Python's selection shows in the DOM, menus re-render."""

from __future__ import annotations

import pytest

import cctviz
from cctviz.views.profiles import ProfilesView
from tests.conftest import LULESH_SCALING

DOT = "circle.cctviz-dot"
EVIL = "<img src=x onerror=alert(1)>"


@pytest.fixture(scope="module")
def runs():
    return cctviz.read_ensemble(LULESH_SCALING[:4])  # 1 + 8 + ... ranks: 4 runs


def dot_centres(wp, view) -> dict[int, tuple[float, float]]:
    out = {}
    for el in wp.view(view).locator(DOT).all():
        b = el.bounding_box()
        out[int(el.get_attribute("data-profile"))] = (
            b["x"] + b["width"] / 2,
            b["y"] + b["height"] / 2,
        )
    return out


# a dot that no other dot covers at its centre (clicks there reach it)
TOPMOST = """() => [...document.querySelectorAll("circle.cctviz-dot")].map((e) => {
  const b = e.getBoundingClientRect();
  const hit = document.elementFromPoint(b.x + b.width / 2, b.y + b.height / 2);
  return hit === e ? +e.dataset.profile : -1;
}).find((p) => p > 3)"""


def cut(values: list[float]) -> float:
    """A coordinate past the middle of sorted ``values`` with no dot within 1.5 px
    (mouse coordinates and rounding must not decide which dots are in)."""
    for k in range(len(values) // 2, len(values) - 1):
        if values[k + 1] - values[k] > 3:
            return (values[k] + values[k + 1]) / 2
    raise AssertionError("no gap between the dots")


def selected_dom(wp, view) -> list[int]:
    els = wp.view(view).locator(f'{DOT}[aria-selected="true"]')
    return sorted(int(x) for x in els.evaluate_all("els => els.map(e => e.dataset.profile)"))


def rendered(wp, view) -> int:
    return int(wp.view(view).locator("[data-rendered]").get_attribute("data-rendered"))


def test_one_dot_per_live_profile_with_aria(widget_page, runs):
    view = ProfilesView(runs)
    wp = widget_page(view)
    dots = wp.view(view).locator(DOT)
    assert dots.count() == int(runs.live.sum())
    assert wp.view(view).locator(".cctviz.cctviz-profiles").count() == 1
    labels = view._data["label"]
    first = dots.first
    assert first.get_attribute("aria-label").startswith(labels[0])
    assert first.get_attribute("aria-selected") == "false"
    assert wp.view(view).locator('[role="listbox"]').count() == 1
    assert wp.view(view).locator(f'{DOT}[tabindex="0"]').count() == 1
    # axes carry ticks and units
    text = wp.view(view).locator("svg").text_content()
    assert "PC1 of time (inc) [" in text and "of variance" in text


def test_brush_selects_exactly_the_dots_inside(widget_page, runs):
    view = ProfilesView(runs)
    wp = widget_page(view)
    centres = dot_centres(wp, view)
    frame = wp.view(view).locator("rect.cctviz-plot-frame").bounding_box()
    xs = sorted(c[0] for c in centres.values())
    ys = sorted(c[1] for c in centres.values())
    # from the plot's top left corner (padding: no dot there) to the middle of the dots
    x0, y0 = frame["x"] + 2, frame["y"] + 2
    x1, y1 = cut(xs), cut(ys)
    hit = f"() => document.elementFromPoint({x0}, {y0}).getAttribute('class')"
    assert "cctviz-dot" not in (wp.page.evaluate(hit) or "")
    want = sorted(k for k, (x, y) in centres.items() if x0 <= x <= x1 and y0 <= y <= y1)
    assert 1 < len(want) < len(centres)
    page = wp.page
    page.mouse.move(x0, y0)
    page.mouse.down()
    page.mouse.move((x0 + x1) / 2, (y0 + y1) / 2, steps=4)
    page.mouse.move(x1, y1, steps=4)
    page.mouse.up()
    wp.sync()
    assert view.selected_profiles == want
    assert selected_dom(wp, view) == want
    assert view.selected.index.tolist() == want
    # shift + brush adds to the selection
    extra = min(centres, key=lambda k: centres[k][0])
    ex, ey = centres[extra]
    page.keyboard.down("Shift")
    page.mouse.move(ex - 4, ey - 4)
    page.mouse.down()
    page.mouse.move(ex + 4, ey + 4, steps=3)
    page.mouse.up()
    page.keyboard.up("Shift")
    wp.sync()
    assert extra in view.selected_profiles and set(want) <= set(view.selected_profiles)


def test_click_selects_a_dot_shift_toggles_background_clears(widget_page, runs):
    view = ProfilesView(runs)
    wp = widget_page(view)
    ids = sorted(dot_centres(wp, view))
    a, b = ids[0], ids[-1]
    dot = wp.view(view).locator(f'{DOT}[data-profile="{a}"]')
    dot.click(force=True)
    wp.sync()
    assert view.selected_profiles == [a] and selected_dom(wp, view) == [a]
    wp.view(view).locator(f'{DOT}[data-profile="{b}"]').click(modifiers=["Shift"], force=True)
    wp.sync()
    assert view.selected_profiles == sorted([a, b])
    wp.view(view).locator(f'{DOT}[data-profile="{a}"]').click(modifiers=["Shift"], force=True)
    wp.sync()
    assert view.selected_profiles == [b]
    frame = wp.view(view).locator("rect.cctviz-plot-frame").bounding_box()
    wp.page.mouse.click(frame["x"] + 3, frame["y"] + frame["height"] - 3)  # a corner: no dot
    wp.sync()
    assert view.selected_profiles == [] and selected_dom(wp, view) == []


def test_python_selection_updates_aria_selected(widget_page, runs):
    view = ProfilesView(runs)
    wp = widget_page(view)
    r0 = rendered(wp, view)
    view.selected_profiles = [3, 1, 2]
    wp.sync()
    assert selected_dom(wp, view) == [1, 2, 3]
    assert rendered(wp, view) == r0  # no re-render for a selection
    dimmed = wp.view(view).locator(f"{DOT}.dim").count()
    assert dimmed == int(runs.live.sum()) - 3
    view.selected_profiles = []
    wp.sync()
    assert selected_dom(wp, view) == [] and wp.view(view).locator(f"{DOT}.dim").count() == 0


def test_menus_re_render(widget_page, runs):
    view = ProfilesView(runs)
    wp = widget_page(view)
    r0 = rendered(wp, view)
    before = dot_centres(wp, view)
    view.color_by = "cluster"
    wp.sync()
    wp.wait_rendered(r0 + 1, view)
    assert "k-means" in wp.view(view).locator(".cctviz-legend").text_content()
    view.projection = "mds"
    wp.sync()
    wp.wait_rendered(r0 + 2, view)
    assert "MDS 1 of time (inc)" in wp.view(view).locator("svg").text_content()
    # from the front end: the colour menu and the x menu write the traits
    wp.view(view).locator("select.cctviz-color").select_option("rank")
    wp.sync()
    assert view.color_by == "rank"
    wp.view(view).locator("select.cctviz-x").select_option("rank")
    wp.sync()
    assert view.x == "rank" and view._data["x_label"] == "rank"
    assert dot_centres(wp, view) != before
    wp.view(view).locator('button[data-projection="pca"]').click()
    wp.sync()
    assert view.projection == "pca"


def test_untrusted_labels_stay_text(widget_page):
    trees = [
        cctviz.Tree.from_parents([-1, 0], ["main", "f"], {"time": [1.0, r]}) for r in (1.0, 2.0)
    ]
    ens = cctviz.Ensemble.from_trees(trees, profiles={"host": [EVIL, "b"], "run": [0, 1]})
    view = ProfilesView(ens, color_by="host")
    wp = widget_page(view)
    assert wp.view(view).locator("img").count() == 0
    assert EVIL in wp.view(view).locator(".cctviz-legend").text_content()
    dot = wp.view(view).locator(DOT).first
    dot.hover(force=True)
    assert wp.view(view).locator(".cctviz-tooltip img").count() == 0


def test_standalone_page_selects_and_shows_tooltips(browser, tmp_path, runs):
    view = ProfilesView(runs, selected_profiles=[2])
    page_file = view.save(tmp_path / "profiles.html", title="LULESH ranks")
    context = browser.new_context(viewport={"width": 1000, "height": 700}, offline=True)
    errors: list[str] = []
    try:
        page = context.new_page()
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(page_file.as_uri())
        page.wait_for_selector(".cctviz-profiles[data-rendered]")
        assert page.locator(DOT).count() == int(runs.live.sum())
        assert page.locator(f'{DOT}[aria-selected="true"]').count() == 1
        top = page.evaluate(TOPMOST)
        dot = page.locator(f'{DOT}[data-profile="{top}"]')
        dot.click()
        assert dot.get_attribute("aria-selected") == "true"
        assert page.locator(f'{DOT}[aria-selected="true"]').count() == 1
        dot.hover(force=True)
        tip = page.locator(".cctviz-tooltip")
        tip.wait_for(state="visible")
        assert view._data["label"][top] in tip.text_content()
        assert page.locator("select.cctviz-x").is_hidden()  # axes need Python
        assert errors == []
    finally:
        context.close()
