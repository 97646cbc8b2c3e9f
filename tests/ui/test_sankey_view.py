"""SankeyView in headless Chromium (the kernel-less harness), alone and linked
with a CCTView and a ProfilesView: clicks and brushes arrive in Python and in
the other views, Python's selections show in the DOM, diff mode renders."""

from __future__ import annotations

import numpy as np
import pytest

import cctviz
from cctviz.views.profiles import ProfilesView
from cctviz.views.sankey import SankeyView
from tests.conftest import DATA
from tests.ui.harness import offline_page
from tests.ui.test_view_fixes import shoot

KRIPKE = DATA / "hatchet-tutorial" / "hpctoolkit-kripke-database-2589696"
LULESH64 = DATA / "hatchet-tutorial" / "lulesh-scaling" / "lulesh-annotation-profile-64cores.json"
SNODE = "g.cctviz-snode"


@pytest.fixture(scope="module")
def kripke():
    return cctviz.read(KRIPKE)


@pytest.fixture(scope="module")
def lulesh():
    return cctviz.read(LULESH64)


def selected_nodes(wp, view) -> list[int]:
    els = wp.view(view).locator(f'{SNODE}[aria-selected="true"]')
    return sorted(int(x) for x in els.evaluate_all("els => els.map(e => e.dataset.node)"))


def cct_selected(wp, view) -> list[int]:
    els = wp.view(view).locator('[role="treeitem"][aria-selected="true"]')
    return sorted(int(x) for x in els.evaluate_all("els => els.map(e => e.dataset.id)"))


def tall(wp) -> None:
    """Room for several stacked views: every node can be scrolled clear of the legend band."""
    wp.page.set_viewport_size({"width": 1200, "height": 1600})


def box_of(locator) -> dict:
    locator.scroll_into_view_if_needed()
    return locator.bounding_box()


def click_node(wp, view, k: int, *, double: bool = False) -> None:
    """Click super node k low in its mark (the legend band may cover its top)."""
    mark = wp.view(view).locator(f'{SNODE}[data-node="{k}"] rect').first
    b = box_of(mark)
    x, y = b["x"] + b["width"] / 2, b["y"] + b["height"] - min(3, b["height"] / 2)
    (wp.page.mouse.dblclick if double else wp.page.mouse.click)(x, y)


def rendered(wp, view) -> int:
    return int(wp.view(view).locator("[data-rendered]").first.get_attribute("data-rendered"))


def test_nodes_follow_the_dom_contract(widget_page, kripke, lulesh):
    view, lu = SankeyView(kripke), SankeyView(lulesh)
    wp = widget_page(view, lu)
    nodes = wp.view(view).locator(SNODE)
    d = view._data
    assert nodes.count() == d["n"]
    assert wp.view(view).locator('[role="listbox"]').count() == 1
    for k in (0, d["label"].index("libmpi.so.12.1.1")):
        el = wp.view(view).locator(f'{SNODE}[data-node="{k}"]')
        assert el.get_attribute("role") == "option"
        assert el.get_attribute("aria-label").startswith(d["label"][k])
        assert el.get_attribute("aria-selected") == "false"
    # the imbalance cue marks exactly the nodes whose cost reaches the threshold
    for v, some in ((view, False), (lu, True)):
        cost = np.asarray(v._data["cost"], dtype=np.float64)
        want = int((cost >= v._data["cost_threshold"]).sum())
        assert wp.view(v).locator(f"{SNODE}.imbalanced").count() == want
        assert (want > 0) == some  # Kripke's ranks agree to 1%; LULESH's do not


def test_clicking_a_node_selects_it_in_python_and_in_the_linked_tree(widget_page, kripke):
    sankey, tree = SankeyView(kripke), cctviz.CCTView(kripke, collapsed=[])
    link = cctviz.link(sankey, tree)
    wp = widget_page(sankey, tree)
    tall(wp)
    k = sankey._data["label"].index("kripke")
    click_node(wp, sankey, k)
    wp.sync()
    assert sankey.selected_groups == [k]
    members = np.flatnonzero(sankey.graph.members == k)
    assert sankey.selection.ids.tolist() == members.tolist()
    assert tree.selection.ids.tolist() == members.tolist()
    assert selected_nodes(wp, sankey) == [k]
    shown = set(cct_selected(wp, tree))
    assert shown and shown <= set(members.tolist())  # the tree shows the ones it draws
    # a node picked in the tree selects its super node in the Sankey
    one = int(np.flatnonzero(sankey.graph.members == 0)[0])
    tree.selection = [one]
    wp.sync()
    assert sankey.selected_groups == [0] and selected_nodes(wp, sankey) == [0]
    # the background clears
    b = box_of(wp.view(sankey).locator("svg").first)
    wp.page.mouse.click(b["x"] + 3, b["y"] + b["height"] - 3)
    wp.sync()
    assert sankey.selected_groups == [] and tree.selection.ids.size == 0
    link.unlink()


def test_brushing_a_distribution_selects_profiles_and_rescopes_the_tree(widget_page, lulesh):
    sankey, tree = SankeyView(lulesh), cctviz.CCTView(lulesh)
    cctviz.link(sankey, tree)
    wp = widget_page(sankey, tree)
    tall(wp)
    d = sankey._data
    drawn = wp.view(sankey).locator("g.cctviz-dist")
    nodes = [int(x) for x in drawn.evaluate_all("els => els.map(e => e.dataset.node)")]
    cost = np.asarray(d["cost"], dtype=np.float64)
    k = max(nodes, key=lambda n: cost[n])  # the costliest imbalance with a histogram drawn
    assert cost[k] >= d["cost_threshold"]
    dist = wp.view(sankey).locator(f'g.cctviz-dist[data-node="{k}"]')
    box = box_of(dist)
    before = rendered(wp, tree)
    y = box["y"] + box["height"] / 2
    page = wp.page
    page.mouse.move(box["x"] + box["width"] * 0.5, y)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * 0.75, y, steps=5)
    page.mouse.move(box["x"] + box["width"] + 20, y, steps=5)  # past the end: clamped to max
    page.mouse.up()
    wp.sync()
    b = sankey.brush
    assert b["node"] == k and b["hi"] == pytest.approx(
        float(sankey.per_profile.loc[k].max()), rel=1e-5
    )
    row = sankey.per_profile.loc[k]
    want = sorted(int(p) for p, v in row.items() if b["lo"] <= v <= b["hi"])
    assert sankey.selected_profiles == want and 0 < len(want) < lulesh.n_profiles
    # the linked tree now shows the statistics of just those ranks
    assert tree.selected_profiles == want
    wp.wait_rendered(before + 1, tree)
    assert tree._data["spread"]["profiles"] == len(want)
    # and the Sankey marks them: the selection's histogram and the brushed range
    assert "hist_sel" in sankey._data
    assert wp.view(sankey).locator(".cctviz-brush-range").count() >= 1


def test_outliers_select_their_profile(widget_page, lulesh):
    view = SankeyView(lulesh)
    wp = widget_page(view)
    dots = wp.view(view).locator("circle.cctviz-outlier")
    assert dots.count() > 0
    dot = dots.first
    p = int(dot.get_attribute("data-profile"))
    assert str(p) in view._data["labels"]
    b = box_of(dot)
    wp.page.mouse.click(b["x"] + b["width"] / 2, b["y"] + b["height"] / 2)
    wp.sync()
    assert view.selected_profiles == [p]


def test_python_selections_show_in_the_dom(widget_page, kripke):
    view = SankeyView(kripke)
    wp = widget_page(view)
    view.selected_groups = [1, 3]
    wp.sync()
    assert selected_nodes(wp, view) == [1, 3]
    before = rendered(wp, view)
    view.selected_profiles = [5, 6]
    wp.sync()
    wp.wait_rendered(before + 1, view)
    assert wp.view(view).locator(".cctviz-hist-sel, .cctviz-sel").count() > 0


def test_double_click_expands_into_call_sites_that_select_tree_nodes(widget_page, kripke):
    view = SankeyView(kripke)
    wp = widget_page(view)
    members = np.asarray(view._data["members"])
    value = np.asarray(view._data["value"], dtype=np.float64)
    k = int(np.argmax(np.where((members > 3) & (members <= 200), value, -1)))  # a tall one
    before = rendered(wp, view)
    click_node(wp, view, k, double=True)
    wp.sync()
    assert view.expanded == [k]
    wp.wait_rendered(before + 1, view)
    sites = wp.view(view).locator("g.cctviz-site")
    assert sites.count() == members[k]
    info = view._data["sites"][0]
    sid = int(info["id"][int(np.argmax(info["value"]))])  # the heaviest call site
    b = box_of(wp.view(view).locator(f'g.cctviz-site[data-id="{sid}"] rect').first)
    assert b["height"] > 3
    wp.page.mouse.click(b["x"] + b["width"] / 2, b["y"] + b["height"] / 2)
    wp.sync()
    assert view.selection.ids.tolist() == [sid] and view.selected_groups == [k]


def test_diff_mode_renders_a_diverging_figure(widget_page, lulesh):
    half = lulesh.n_profiles // 2
    view = SankeyView(lulesh, diff=(list(range(half)), list(range(half, lulesh.n_profiles))))
    wp = widget_page(view)
    svg = wp.view(view).locator("svg.cctviz-diff")
    assert svg.count() == 1
    text = svg.text_content()
    assert "A" in text and "B" in text


def test_untrusted_group_names_stay_text(widget_page):
    evil = "<img src=x onerror=alert(1)>"
    t = cctviz.Tree.from_parents([-1, 0], ["main", evil], {"time": [1.0, 2.0]})
    view = SankeyView(t)
    wp = widget_page(view)  # the harness fails the test on any dialog
    assert wp.view(view).locator("img").count() == 0
    assert evil in wp.view(view).locator("svg").first.text_content() or any(
        (a or "").startswith(evil)
        for a in wp.view(view)
        .locator(SNODE)
        .evaluate_all("els => els.map(e => e.getAttribute('aria-label'))")
    )


def test_brushing_the_profiles_view_rescopes_the_sankey_and_tree(widget_page, lulesh):
    sankey, tree, prof = SankeyView(lulesh), cctviz.CCTView(lulesh), ProfilesView(lulesh)
    cctviz.link(sankey, tree, prof)
    wp = widget_page(prof, sankey, tree)
    tall(wp)
    frame = box_of(wp.view(prof).locator("rect.cctviz-plot-frame"))
    page = wp.page
    page.mouse.move(frame["x"] + 2, frame["y"] + 2)
    page.mouse.down()
    page.mouse.move(frame["x"] + frame["width"] / 2, frame["y"] + frame["height"] - 2, steps=8)
    page.mouse.up()
    wp.sync()
    picked = prof.selected_profiles
    assert picked and sankey.selected_profiles == picked == tree.selected_profiles
    assert tree._data["spread"]["profiles"] == len(picked)
    sel = np.asarray(sankey._data["hist_sel"]).reshape(sankey._data["n"], -1)
    assert (sel.sum(axis=1) == len(picked)).all()


def test_lab_linked_trio_end_to_end(lab):
    """A real JupyterLab and kernel: the Sankey, a tree and the profiles view,
    linked; a click on a Sankey node and a brush in the profiles view reach
    Python and the other views, and Python's choice shows in all three."""
    cells = [
        f"import cctviz, ipywidgets as w\nens = cctviz.read({str(LULESH64)!r})",
        "s, t, p = cctviz.SankeyView(ens), cctviz.CCTView(ens), cctviz.ProfilesView(ens)\n"
        "link = cctviz.link(s, t, p)\nw.VBox([s, w.HBox([t, p])])",
    ]
    with lab.open_notebook(cells) as nb:
        nb.run_all()
        page = nb.page
        page.set_viewport_size({"width": 1400, "height": 1800})
        nodes = page.locator(f".cctviz-sankey {SNODE}")
        nodes.first.wait_for()
        k = 1  # lulesh.cycle, a tall node
        mark = page.locator(f'.cctviz-sankey {SNODE}[data-node="{k}"] rect').first
        b = box_of(mark)
        page.mouse.click(b["x"] + b["width"] / 2, b["y"] + b["height"] - 3)
        want = nb.kernel_wait("print(s.selected_groups)", f"[{k}]")
        assert want == f"[{k}]"
        assert (
            nb.kernel_eval("print(t.selection == s.selection and len(t.selection.ids) > 0)").strip()
            == "True"
        )
        page.locator('.cctviz-cct [role="treeitem"][aria-selected="true"]').first.wait_for()
        # brush the profiles view: the ranks arrive in all three views
        frame = box_of(page.locator(".cctviz-profiles rect.cctviz-plot-frame"))
        page.mouse.move(frame["x"] + 2, frame["y"] + 2)
        page.mouse.down()
        page.mouse.move(frame["x"] + frame["width"] - 2, frame["y"] + frame["height"] / 2, steps=8)
        page.mouse.up()
        nb.kernel_wait("print(len(p.selected_profiles) > 0)", "True")
        shoot(page, "lab-sankey-trio")
        assert (
            nb.kernel_eval(
                "print(s.selected_profiles == t.selected_profiles == p.selected_profiles"
                " and t._data['spread']['profiles'] == len(p.selected_profiles))"
            ).strip()
            == "True"
        )
        # Python picks ranks: the profiles view marks them
        nb.kernel_eval("s.selected_profiles = [3, 5]")
        page.locator('.cctviz-profiles circle.cctviz-dot[aria-selected="true"]').nth(1).wait_for()
        assert page.locator('.cctviz-profiles circle.cctviz-dot[aria-selected="true"]').count() == 2


def test_exports_png_and_an_offline_html_page(browser, tmp_path, lulesh):
    """SankeyView.save: a PNG of the asked size, and a standalone page that opens
    from file:// with no network, draws every node and selects locally."""
    from tests.export.checks import png_size

    view = SankeyView(lulesh, selected_groups=[2])
    png = view.save(tmp_path / "sankey.png", width=400, scale=1)
    assert png_size(png.read_bytes())[0] == round(400 * 4 / 3)
    page_file = view.save(tmp_path / "sankey.html", title="LULESH Sankey")
    with offline_page(browser, page_file, {"width": 1300, "height": 1000}) as (
        page,
        requests,
        errors,
    ):
        page.wait_for_selector(".cctviz-sankey[data-rendered]")
        assert page.locator(SNODE).count() == view._data["n"]
        assert page.locator(f'{SNODE}[aria-selected="true"]').get_attribute("data-node") == "2"
        mark = page.locator(f'{SNODE}[data-node="0"] rect').first
        b = box_of(mark)
        page.mouse.click(b["x"] + b["width"] / 2, b["y"] + b["height"] - 3)
        page.locator(f'{SNODE}[data-node="0"][aria-selected="true"]').wait_for()
        assert [u for u in requests if not u.startswith(("file:", "data:", "blob:"))] == []
        assert errors == []


def test_lab_dark_theme_sankey_and_profiles_readable(lab):
    """In JupyterLab's dark theme the Sankey and the profiles view follow the
    theme: dark drawing, light legend text with enough contrast."""
    from tests.ui.test_view_fixes import contrast, luminance

    cells = [
        f"import cctviz, ipywidgets as w\nens = cctviz.read({str(LULESH64)!r})",
        "w.VBox([cctviz.SankeyView(ens), cctviz.ProfilesView(ens)])",
    ]
    with lab.open_notebook(cells) as nb:
        try:
            nb.set_theme("JupyterLab Dark")
            nb.run_all()
            page = nb.page
            page.set_viewport_size({"width": 1400, "height": 1600})
            page.locator(f".cctviz-sankey {SNODE}").first.wait_for()
            page.locator(".cctviz-profiles circle.cctviz-dot").first.wait_for()
            shoot(page, "dark-theme-sankey-profiles")
            colours = page.evaluate(
                """() => {
                  const cs = (e, p) => getComputedStyle(e)[p];
                  const bg = (root) => {
                    for (let e = root.querySelector("svg"); e; e = e.parentElement) {
                      const c = cs(e, "backgroundColor");
                      if (c && c !== "rgba(0, 0, 0, 0)" && c !== "transparent") return c;
                    }
                    return cs(document.body, "backgroundColor");
                  };
                  const s = document.querySelector(".cctviz-sankey");
                  const p = document.querySelector(".cctviz-profiles");
                  return {sbg: bg(s), pbg: bg(p),
                          slegend: cs(s.querySelector(".cctviz-legend-text"), "fill"),
                          plegend: cs(p.querySelector("svg text"), "fill")};
                }"""
            )
            assert luminance(colours["sbg"]) < 0.1 and luminance(colours["pbg"]) < 0.1, colours
            assert contrast(colours["slegend"], colours["sbg"]) >= 4.5, colours
            assert contrast(colours["plegend"], colours["pbg"]) >= 4.5, colours
        finally:
            nb.set_theme("JupyterLab Light")


def test_notebook7_linked_views(lab):
    """Notebook 7 (the classic-looking one-notebook page of the same server): the
    Sankey and a tree render and a click on a module reaches Python and the tree."""
    cells = [
        f"import cctviz, ipywidgets as w\nens = cctviz.read({str(LULESH64)!r})",
        "s, t = cctviz.SankeyView(ens), cctviz.CCTView(ens)\nlink = cctviz.link(s, t)\n"
        "w.VBox([s, t])",
    ]
    with lab.open_notebook(cells, ui="notebook") as nb:
        nb.run_all()
        page = nb.page
        page.set_viewport_size({"width": 1300, "height": 1400})
        page.locator(f".cctviz-sankey {SNODE}").first.wait_for()
        page.locator('.cctviz-cct [role="treeitem"]').first.wait_for()
        shoot(page, "notebook7-sankey-tree")
        mark = page.locator(f'.cctviz-sankey {SNODE}[data-node="1"] rect').first
        b = box_of(mark)
        page.mouse.click(b["x"] + b["width"] / 2, b["y"] + b["height"] - 3)
        assert nb.kernel_wait("print(s.selected_groups)", "[1]") == "[1]"
        assert nb.kernel_eval("print(t.selection == s.selection)").strip() == "True"
        page.locator('.cctviz-cct [role="treeitem"][aria-selected="true"]').first.wait_for()
