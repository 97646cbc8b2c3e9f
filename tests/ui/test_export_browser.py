"""Export in a browser: the live view's "SVG" button gives save()'s bytes, and the
standalone page works from file:// with no network and no kernel."""

from __future__ import annotations

from pathlib import Path

import pytest

import cctviz
from tests.conftest import DATA
from tests.ui.harness import offline_page

ITEM = '[role="treeitem"]'


@pytest.fixture(scope="module")
def lulesh():
    return cctviz.read(
        DATA / "hatchet-tutorial" / "lulesh-scaling" / "lulesh-annotation-profile-64cores.json"
    )


@pytest.mark.parametrize("chart", ["tree", "icicle"])
def test_download_svg_equals_save(widget_page, tmp_path, lulesh, chart):
    view = cctviz.CCTView(lulesh, chart=chart, max_nodes=60)
    wp = widget_page(view)
    root = wp.view(view)
    # state changed in the browser: a click selects, a double-click collapses
    items = root.locator(ITEM)
    items.nth(2).click()
    wp.sync()
    items.nth(1).dblclick()
    wp.sync()
    assert view.selection.ids.size == 1 and view.collapsed
    with wp.page.expect_download() as dl:
        root.locator(".cctviz-download").click()
    got = Path(dl.value.path()).read_bytes()
    saved = view.save(tmp_path / "view.svg").read_bytes()
    assert got == saved
    assert b"cctviz-node selected" in got  # the browser's selection is in the file
    # another state, other bytes: the button follows the state
    view.selection = []
    wp.sync()
    with wp.page.expect_download() as dl:
        root.locator(".cctviz-download").click()
    again = Path(dl.value.path()).read_bytes()
    assert again != got and again == view.save(tmp_path / "view2.svg").read_bytes()


def test_standalone_page_offline(browser, tmp_path, lulesh):
    view = cctviz.CCTView(lulesh, max_nodes=80)
    page_file = view.save(tmp_path / "view.html", title="LULESH")
    with offline_page(browser, page_file) as (page, requests, errors):
        page.wait_for_selector(".cctviz-cct[data-rendered]")
        items = page.locator(ITEM)
        assert items.count() == len(view.visible)
        names = set(page.locator(f"{ITEM} .cctviz-label").all_text_contents())
        assert "main" in names and "lulesh.cycle" in names
        # a click selects; a double-click collapses and the page redraws without a kernel
        cycle = page.locator(f'{ITEM}[aria-label^="lulesh.cycle"]')
        cycle.click()
        assert cycle.get_attribute("aria-selected") == "true"
        before = items.count()
        cycle.dblclick()
        page.wait_for_function(f"() => document.querySelectorAll('{ITEM}').length < {before}")
        collapsed = page.locator(f'{ITEM}[aria-label^="lulesh.cycle"]')
        assert collapsed.get_attribute("aria-expanded") == "false"
        # tooltips work too
        collapsed.locator(".cctviz-mark").hover()
        tip = page.locator(".cctviz-tooltip")
        tip.wait_for(state="visible")
        assert "main \u203a lulesh.cycle" in tip.text_content()
        assert [u for u in requests if not u.startswith(("file:", "data:", "blob:"))] == []
        assert errors == []
