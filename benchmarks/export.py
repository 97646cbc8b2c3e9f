"""Benchmark: exporting a CCT view with no browser against headless Chromium.

For each size a random recursive tree (as in view_scale.py) is shown whole
(``max_nodes`` = its size, so every node is drawn) and written as SVG, PDF and
PNG (a 7 x 9 in page, scale 2) in two ways, each in a fresh Python process:

* ``cctviz``: ``cctviz.export.save`` (the export bundle in mini-racer; PDF by
  typst, PNG by resvg);
* ``chromium``: the same export bundle's ``renderSVG`` run in headless
  Chromium (Playwright on Debian's Chromium, tests/ui's flags), the SVG put in
  the page, then ``page.pdf()`` at the figure's size or a screenshot at device
  scale 2 (the SVG: the string renderSVG returns in the page).

``cold s`` is the first figure of a new process: imports, V8 context or
browser launch, bundle load, drawing, writing (the tree and the view are built
before the clock starts); ``warm s`` the median of three more figures in the
same process. Ratios are Chromium / cctviz.

Usage::

    python benchmarks/export.py [--sizes 1000 10000] [--formats svg pdf png]

While ``cctviz/static/cctviz-export.js`` is not built, the stand-in of
tests/export (``fake_export.js``: one text per node, no layout) is used and
the table says so: its drawing costs little, so the times are those of the
machinery around it.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REAL_BUNDLE = ROOT / "cctviz" / "static" / "cctviz-export.js"
FAKE_BUNDLE = ROOT / "tests" / "export" / "fake_export.js"
CHROMIUM = "/usr/bin/chromium"

CHILD = r"""
import json, statistics, sys, time
from pathlib import Path
import numpy as np
sys.path.insert(0, {root!r})
import cctviz

route, n, fmt, out, bundle = {route!r}, {n}, {fmt!r}, Path({out!r}), {bundle!r}
rng = np.random.default_rng(0)
parent = np.concatenate(([-1], (rng.random(n - 1) * np.arange(1, n)).astype(np.int64)))
names = np.char.add("fn_", (np.arange(n) % 4999).astype(str))
tree = cctviz.Tree.from_parents(parent, names, {{"time": rng.lognormal(0, 1, n)}})
view = cctviz.CCTView(tree, max_nodes=n)
OPTS = dict(width="7in", height="9in", font_size=8)

if route == "cctviz":
    def setup():
        import cctviz.export.engine as eng
        eng.EXPORT_BUNDLE = Path(bundle)
        return None

    def figure(ctx, i):
        from cctviz.export import save
        save(view, out / f"fig{{i}}.{{fmt}}", **OPTS)
else:
    CHROMIUM_ARGS = {chromium_args!r}

    def setup():
        from playwright.sync_api import sync_playwright
        pw = sync_playwright().start()
        browser = pw.chromium.launch(executable_path={chromium!r}, args=CHROMIUM_ARGS, headless=True)
        page = browser.new_page(device_scale_factor=2)
        page.add_script_tag(content=Path(bundle).read_text(encoding="utf-8"))
        return page

    def figure(page, i):
        from cctviz.export import payload, svg_size
        text = json.dumps(payload(view, **OPTS), allow_nan=False)
        svg = page.evaluate(
            "(p) => {{ const s = cctvizExport.renderSVG(p);"
            " document.body.style.margin = '0'; document.body.innerHTML = s; return s; }}",
            text,
        )
        target = out / f"fig{{i}}.{{fmt}}"
        w, h = svg_size(svg)
        if fmt == "svg":
            target.write_text(svg, encoding="utf-8")
        elif fmt == "pdf":
            page.pdf(path=str(target), width=f"{{w / 72}}in", height=f"{{h / 72}}in",
                     print_background=True, margin={{"top": "0", "bottom": "0", "left": "0", "right": "0"}})
        else:
            page.set_viewport_size({{"width": max(1, round(w * 4 / 3)), "height": max(1, round(h * 4 / 3))}})
            page.locator("svg").first.screenshot(path=str(target))

t0 = time.perf_counter()
ctx = setup()
figure(ctx, 0)
cold = time.perf_counter() - t0
warm = []
for i in range(1, 4):
    t = time.perf_counter()
    figure(ctx, i)
    warm.append(time.perf_counter() - t)
print(json.dumps({{"cold": cold, "warm": statistics.median(warm),
                  "bytes": (out / f"fig0.{{fmt}}").stat().st_size}}))
"""


def run_child(route: str, n: int, fmt: str, bundle: Path, out: Path) -> dict:
    sys.path.insert(0, str(ROOT))
    from tests.ui.harness import CHROMIUM_ARGS

    out.mkdir(parents=True, exist_ok=True)
    code = CHILD.format(
        root=str(ROOT),
        route=route,
        n=n,
        fmt=fmt,
        out=str(out),
        bundle=str(bundle),
        chromium=CHROMIUM,
        chromium_args=CHROMIUM_ARGS,
    )
    res = subprocess.run(
        [sys.executable, "-c", code],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if res.returncode != 0:
        raise RuntimeError(f"{route} n={n} {fmt} failed:\n{res.stderr[-3000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def main() -> None:
    import tempfile

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000])
    ap.add_argument("--formats", nargs="+", default=["svg", "pdf", "png"])
    ap.add_argument("--no-chromium", action="store_true", help="time cctviz only")
    args = ap.parse_args()
    bundle = REAL_BUNDLE if REAL_BUNDLE.is_file() else FAKE_BUNDLE
    if bundle is FAKE_BUNDLE:
        print(f"(export bundle not built: timing the stand-in {bundle.relative_to(ROOT)})")
    rows = []
    with tempfile.TemporaryDirectory() as d:
        for n in args.sizes:
            for fmt in args.formats:
                r = {"n": n, "fmt": fmt}
                for route in ("cctviz",) + (() if args.no_chromium else ("chromium",)):
                    r[route] = run_child(route, n, fmt, bundle, Path(d) / f"{route}-{n}-{fmt}")
                rows.append(r)
                print(f"  measured n={n} {fmt}", file=sys.stderr)
    print(
        "| nodes | format | cctviz cold s | cctviz warm s | chromium cold s | chromium warm s "
        "| cold ratio | warm ratio | cctviz bytes | chromium bytes |"
    )
    print("|---" * 10 + "|")
    for r in rows:
        c, b = r["cctviz"], r.get("chromium")
        if b is None:
            print(
                f"| {r['n']:,} | {r['fmt']} | {c['cold']:.3f} | {c['warm']:.3f} | - | - | - | - "
                f"| {c['bytes']:,} | - |"
            )
            continue
        print(
            f"| {r['n']:,} | {r['fmt']} | {c['cold']:.3f} | {c['warm']:.3f} | {b['cold']:.3f} "
            f"| {b['warm']:.3f} | {b['cold'] / c['cold']:.1f}x | {b['warm'] / c['warm']:.1f}x "
            f"| {c['bytes']:,} | {b['bytes']:,} |"
        )


if __name__ == "__main__":
    main()
