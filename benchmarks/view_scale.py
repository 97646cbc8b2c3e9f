"""Benchmark: CCTView on trees of 1e3 .. 1e6 nodes in headless Chromium.

For each size a random recursive tree (node i hangs under a uniformly chosen
earlier node: broad at the top, ~e*ln(n) deep) with one ``time`` metric is
shown with ``cctviz.CCTView(tree)`` and these are measured:

* ``python s``: ``CCTView(tree)`` itself: level of detail over the whole tree
  and the binary payload (first view of the tree, so inclusive sums included);
* ``show s``: from handing the widget state to the page until the view has
  rendered (the kernel-less harness of tests/ui/harness.py: base64 over
  Playwright, module load on the first size, first render);
* ``render ms``: browser time of one full re-render of the same ``_data``
  (``change:_data`` fired in the page, timed with ``performance.now`` until two
  animation frames later, i.e. layout and paint included), median of 5;
* ``bytes``: what the widget sent to the page (JSON state + binary buffers),
  and of that the node data (``_data``); the rest is mostly the front-end
  bundle, which anywidget sends with every widget;
* ``Hatchet JSON``: size of the same tree as Hatchet's graph literal, what a
  view that ships the whole tree (as Hatchet's CCT view did) would send; the
  ratio is Hatchet JSON / bytes;
* ``click ms (harness)``: a click on a node to the Python observer seeing
  the new selection (median of 5; over Playwright's binding, not a kernel);
* ``click ms (lab)``: the same in a real JupyterLab with a real kernel
  (``--lab``): click time in the page (``Date.now``) to ``time.time()`` in the
  kernel's observer, median of 5; the kernel is idle before each click.

Goal (issue 3): every size renders in under 1 s of browser time and
click-to-Python takes under 100 ms.

Usage::

    python benchmarks/view_scale.py [--sizes 1000 10000 100000 1000000] [--lab]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from ipywidgets.widgets.widget import _remove_buffers

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import cctviz  # noqa: E402
from tests.ui.harness import HarnessServer, WidgetPage, launch_browser  # noqa: E402

MAKE_TREE = """
import numpy as np, cctviz
def make_tree(n, seed=0):
    rng = np.random.default_rng(seed)
    parent = np.concatenate(([-1], (rng.random(n - 1) * np.arange(1, n)).astype(np.int64)))
    names = np.char.add("fn_", (np.arange(n) % 4999).astype(str))
    return cctviz.Tree.from_parents(parent, names, {"time": rng.lognormal(0, 1, n)})
"""
exec(MAKE_TREE)  # the same generator runs in the lab kernel

CLICK_JS = """(node) => {
  const el = document.querySelector(`[role="treeitem"][data-id="${node}"]`);
  const t = Date.now() + (performance.now() % 1);
  el.dispatchEvent(new MouseEvent("click", {bubbles: true, cancelable: true}));
  return t;
}"""


def hatchet_bytes(tree: cctviz.Tree) -> int:
    with tempfile.TemporaryDirectory() as d:
        p = cctviz.write(tree, Path(d) / "t.json", format="hatchet-literal")
        return p.stat().st_size


def clickable(view: cctviz.CCTView, k: int = 5) -> list[int]:
    ids = view.visible["id"].to_numpy()
    ids = ids[ids > 0]
    return [int(x) for x in ids[np.linspace(0, ids.size - 1, k).astype(int)]]


def measure_harness(page: WidgetPage, n: int) -> dict:
    tree = make_tree(n)  # noqa: F821 (defined by exec above)
    t0 = time.perf_counter()
    view = cctviz.CCTView(tree)
    t1 = time.perf_counter()
    page.reset_counters()
    page.show(view)
    t2 = time.perf_counter()
    nbytes = page.bytes_sent
    state, _, buffers = _remove_buffers({"_data": view._data})
    data_bytes = len(json.dumps(state)) + sum(memoryview(b).nbytes for b in buffers)
    renders = [page.rerender_ms(view) for _ in range(5)]
    clicks = []
    seen: list[float] = []
    view.observe(lambda ch: seen.append(time.time() * 1e3), names="selection")
    for node in clickable(view):
        seen.clear()
        t_click = page.eval(CLICK_JS, node)
        page.sync()
        assert view.selection.ids.tolist() == [node], (node, view.selection)
        clicks.append(seen[0] - t_click)
    return {
        "n": n,
        "rows": view._data["n"],
        "python_s": t1 - t0,
        "show_s": t2 - t1,
        "render_ms": statistics.median(renders),
        "bytes": nbytes,
        "data_bytes": data_bytes,
        "hatchet_bytes": hatchet_bytes(tree),
        "click_ms": statistics.median(clicks),
    }


def measure_lab(browser, sizes: list[int]) -> dict[int, float]:
    from tests.ui.lab import JupyterLab

    lab = JupyterLab(browser)
    out = {}
    try:
        for n in sizes:
            cells = [
                MAKE_TREE
                + f"tree = make_tree({n})\nview = cctviz.CCTView(tree)\n"
                + "import time\nseen = []\n"
                + "view.observe(lambda ch: seen.append(time.time() * 1e3), names='selection')\n"
                + "view"
            ]
            with lab.open_notebook(cells) as nb:
                nb.run_all()
                nb.page.locator('.cctviz-cct [role="treeitem"]').first.wait_for()
                ids = nb.page.locator('.cctviz-cct [role="treeitem"]').evaluate_all(
                    "els => els.map(e => +e.dataset.id).filter(i => i > 0)"
                )
                lat = []
                for node in [ids[i] for i in np.linspace(0, len(ids) - 1, 5).astype(int)]:
                    nb.kernel_eval("seen.clear()")
                    t_click = nb.page.evaluate(CLICK_JS, node)
                    got = nb.kernel_wait("print(view.selection.ids.tolist())", f"[{node}]")
                    assert got == f"[{node}]"
                    t_py = float(nb.kernel_eval("print(seen[0])"))
                    lat.append(t_py - t_click)
                out[n] = statistics.median(lat)
    finally:
        lab.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000, 100_000, 1_000_000])
    ap.add_argument("--lab", action="store_true", help="also time clicks in a real JupyterLab")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    rows = []
    with sync_playwright() as p, HarnessServer() as server:
        browser = launch_browser(p)
        try:
            for n in args.sizes:
                ctx = browser.new_context(viewport={"width": 1200, "height": 800})
                page = WidgetPage(ctx.new_page(), server.url)
                rows.append(measure_harness(page, n))
                page.check()
                ctx.close()
                print(f"  measured n={n}", file=sys.stderr)
            lab = measure_lab(browser, args.sizes) if args.lab else {}
        finally:
            browser.close()

    head = (
        "| nodes | rows sent | python s | show s | render ms | bytes (data) | Hatchet JSON | ratio "
        "| click ms (harness) | click ms (lab) |"
    )
    print(head)
    print("|---" * 10 + "|")
    for r in rows:
        lab_ms = f"{lab[r['n']]:.1f}" if r["n"] in lab else "-"
        print(
            f"| {r['n']:,} | {r['rows']} | {r['python_s']:.3f} | {r['show_s']:.3f} "
            f"| {r['render_ms']:.1f} | {r['bytes']:,} ({r['data_bytes']:,}) "
            f"| {r['hatchet_bytes']:,} | {r['hatchet_bytes'] / r['data_bytes']:.0f}x | {r['click_ms']:.1f} | {lab_ms} |"
        )


if __name__ == "__main__":
    main()
