"""Benchmark: timelines of 10^5 .. 10^7 events (issue 21).

A synthetic trace per size: R ranks, each a sequence of steps (forward, backward,
optimizer phases; module calls inside; an all-reduce per step whose late rank
rotates), so that events nest as a runtime trace's do. Measured per size:

* ``MB``: the events table in memory (pandas, deep);
* ``ensemble s``: ``Timeline.ensemble()`` (the aggregate);
* ``window s``: ``timeline.window(...).ensemble()`` of a tenth of the run;
* ``instances s``: ``ops.collectives.instances()`` (every collective call
  matched across the ranks);
* ``view s`` / ``KB``: ``TimelineView(timeline)``'s first ``_data`` (Python level
  of detail) and the bytes it sends (JSON + binary buffers); ``zoom s``: setting
  ``view.window`` to a tenth of the run (the round trip's Python side).

With ``--browser``, the same view in headless Chromium (the kernel-less harness
of tests/ui/harness.py, as ``view_scale.py``): ``first paint s`` from
``TimelineView(timeline)`` until the page has drawn it (Python, transfer,
module load on the first size, render; the page's clock at the draw), ``markers s`` until the collective
markers are drawn too (beyond ``MARKS_AFTER`` events they follow the first
view: the page asks for them), ``rects`` drawn, ``render ms`` (one
full re-render of the same data, median of 5), ``zoom rt s`` (``view.window``
set to a tenth of the run until the page has drawn the new window) and
``page KB`` (everything sent to the page for the view, the bundle included).

Peer, in the same run: pandas ``groupby([profile, node]).sum()`` of the same
durations, the plain aggregate any script would write (cctviz's ``ensemble()``
also nests exclusive time and counts calls). Goal (issue 21): a view of 10M events
appears in under 1 s and sends under 2 MB (the browser side is measured by the
browser tests, not here).

Usage::

    python benchmarks/timeline_scale.py [--events 100000 1000000 10000000] [--ranks 8]

Measured 2026-11-27 (tenth session), 8 ranks, this machine (2 cores), headless
Chromium with ``--browser``::

     events    MB  peer groupby s  ensemble s  ensemble / peer  window s  instances s  view s   KB  zoom s
     99,968   3.4           0.013       0.011             0.86     0.011        0.006   0.038 22.5   0.018
    999,944  34.0           0.094       0.054             0.57     0.027        0.030   0.121 10.7   0.029
  9,999,872 340.0           0.907       0.536             0.59     0.208        0.292   0.643  0.6   0.104

     events  first paint s  markers s  markers  rects  render ms  zoom rt s  page KB
     99,968          0.269      0.269       60   3159       83.8      0.182    426.0
    999,944          0.199      0.199      595     32       36.5      0.121    378.9
  9,999,872          0.799      1.186     2000     32       46.2      0.250    380.7

At 10M events the view is drawn 0.80 s after ``TimelineView(timeline)`` (goal
< 1 s; it was 4.3 s in the ninth session: the level of detail's partial-bin sums
by ``np.bincount`` instead of a pandas groupby, in-place passes, no copy of the
events when all are shown), its collective markers follow at 1.19 s (matching
every call across the ranks: beyond ``MARKS_AFTER`` events the page asks for them
once it has drawn), and the page receives 381 KB, nearly all of it the front-end
bundle (the view's data: 0.6 KB, then 10.6 KB with the markers; goal < 2 MB). A
zoom to a tenth of the run is drawn 0.25 s after ``view.window`` is set. (The first
size's figures include loading the bundle into the page.)
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import cctviz  # noqa: E402
from cctviz.model.timeline import Timeline  # noqa: E402
from cctviz.ops.collectives import instances  # noqa: E402
from cctviz.views.timeline import TimelineView  # noqa: E402

#: the per-step call structure: (name, kind, parent index, share of the step)
STEP = [
    ("step", "step", -1, 1.0),
    ("forward", "phase", 0, 0.35),
    ("backward", "phase", 0, 0.55),
    ("optimizer", "phase", 0, 0.08),
    ("all_reduce", "comm", 2, 0.05),
]
MODULES = 8  # module calls inside forward and backward each


def synthetic(n_events: int, ranks: int, seed: int = 0) -> Timeline:
    """A nested trace of about ``n_events`` events over ``ranks`` ranks."""
    rng = np.random.default_rng(seed)
    per_step = len(STEP) + 2 * MODULES
    steps = max(1, n_events // (ranks * per_step))
    names = ["main"] + [s[0] for s in STEP] + [f"block.{k}" for k in range(MODULES)] * 2
    kinds = ["root"] + [s[1] for s in STEP] + ["module"] * (2 * MODULES)
    parent = [-1] + [1 + p if p >= 0 else 0 for *_, p, _ in STEP] + [2] * MODULES + [3] * MODULES
    tree = cctviz.Tree.from_parents(parent, names, kind=kinds)
    ids = np.asarray(  # tree ids of the input nodes (pre-order may move them)
        [
            int(np.flatnonzero(tree.callpaths.to_numpy() == p)[0])
            for p in cctviz.Tree.from_parents(parent, names).callpaths
        ]
    )
    step_ns = 10_000_000
    base = np.arange(steps, dtype=np.int64) * step_ns
    rows = []
    for r in range(ranks):
        jitter = rng.integers(0, 200_000, steps)
        late = (np.arange(steps) % ranks == r) * 2_000_000  # the rotating late rank
        s0 = base + jitter
        starts, ends, nodes = [s0], [s0 + step_ns - 300_000], [np.full(steps, 1)]
        fw0, bw0 = s0, s0 + int(0.35 * step_ns) + late
        starts += [fw0, bw0, s0 + int(0.9 * step_ns)]
        ends += [fw0 + int(0.34 * step_ns), bw0 + int(0.5 * step_ns), s0 + int(0.97 * step_ns)]
        nodes += [np.full(steps, 2), np.full(steps, 3), np.full(steps, 4)]
        starts.append(bw0 + int(0.45 * step_ns))
        ends.append(bw0 + int(0.5 * step_ns))
        nodes.append(np.full(steps, 5))
        for k in range(MODULES):
            w = int(0.34 * step_ns / MODULES)
            starts += [fw0 + k * w, bw0 + k * int(0.45 * step_ns / MODULES)]
            ends += [fw0 + (k + 1) * w - 1000, bw0 + (k + 1) * int(0.45 * step_ns / MODULES) - 1000]
            nodes += [np.full(steps, 6 + k), np.full(steps, 6 + MODULES + k)]
        st, en, nd = np.concatenate(starts), np.concatenate(ends), np.concatenate(nodes)
        rows.append(pd.DataFrame({"profile": r, "node": ids[nd], "start": st, "end": en}))
        rows.append(
            pd.DataFrame(
                {"profile": [r], "node": [ids[0]], "start": [0], "end": [int(base[-1] + step_ns)]}
            )
        )
    ev = pd.concat(rows, ignore_index=True)
    return Timeline(tree, ev, pd.DataFrame({"rank": range(ranks)}))


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def payload_bytes(data: dict) -> int:
    n = 0
    plain = {}
    for k, v in data.items():
        if isinstance(v, (bytes, bytearray, memoryview)):
            n += len(v)
        else:
            plain[k] = v
    return n + len(json.dumps(plain, default=str))


def measure(n_events: int, ranks: int) -> dict:
    tl, make_s = timed(lambda: synthetic(n_events, ranks))
    ev = tl.events
    mb = ev.memory_usage(deep=True).sum() / 1e6
    _, peer_s = timed(
        lambda: ev.assign(d=ev["end"] - ev["start"]).groupby(["profile", "node"])["d"].sum()
    )
    _, ens_s = timed(tl.ensemble)
    t0, t1 = tl.span
    _, win_s = timed(lambda: tl.window(t0, t0 + (t1 - t0) // 10).ensemble())
    _, inst_s = timed(lambda: instances(tl))
    view, view_s = timed(lambda: TimelineView(tl))
    kb = payload_bytes(view._data) / 1e3
    span_s = (t1 - t0) / 1e9
    _, zoom_s = timed(lambda: setattr(view, "window", (0.0, span_s / 10)))
    return {
        "events": len(ev),
        "MB": round(mb, 1),
        "make s": round(make_s, 2),
        "peer groupby s": round(peer_s, 3),
        "ensemble s": round(ens_s, 3),
        "ensemble / peer": round(ens_s / peer_s, 2),
        "window s": round(win_s, 3),
        "instances s": round(inst_s, 3),
        "view s": round(view_s, 3),
        "KB": round(kb, 1),
        "zoom s": round(zoom_s, 3),
    }


#: records when the page draws a view (the view's root ``data-rendered`` changes):
#: the page's clock, as the benchmark's ``time.time()`` (one machine)
RENDER_CLOCK = """() => {
  window.__drawn = [];
  if (window.__drawnObserver) window.__drawnObserver.disconnect();
  window.__drawnObserver = new MutationObserver((list) => {
    for (const m of list) window.__drawn.push([m.target.getAttribute("data-rendered"), Date.now()]);
  });
  window.__drawnObserver.observe(document.body,
    { attributes: true, attributeFilter: ["data-rendered"], subtree: true });
}"""


def measure_browser(page, n_events: int, ranks: int) -> dict:
    """The view of a synthetic timeline in the harness page (module docstring)."""
    import statistics

    tl = synthetic(n_events, ranks)
    page.reset_counters()
    page.eval(RENDER_CLOCK)
    t = time.time()
    view = TimelineView(tl)
    page.show(view, wait_render=False)  # the page renders the state it is handed
    page.wait_rendered(1, view, timeout=60_000)
    page.sync()  # a large timeline's markers follow its first view: asked for, sent
    page.wait_rendered(2 if view._version > 1 else 1, view, timeout=60_000)
    drawn = page.eval("() => window.__drawn")  # [renders, epoch ms] per render
    first = drawn[0][1] / 1e3 - t
    marks = drawn[-1][1] / 1e3 - t
    rects = page.eval(
        "() => document.querySelectorAll('.harness-view:last-of-type rect.cctviz-span').length"
    )
    sent = page.bytes_sent
    renders = [page.rerender_ms(view) for _ in range(5)]
    root = page.view(view).locator("[data-rendered]")
    before = int(root.get_attribute("data-rendered"))
    t0, t1 = tl.span
    t = time.perf_counter()
    view.window = (0.0, (t1 - t0) / 1e9 / 10)
    page.sync()
    page.wait_rendered(before + 1, view, timeout=60_000)
    zoom = time.perf_counter() - t
    page.check()
    return {
        "events": len(tl),
        "first paint s": round(first, 3),
        "markers s": round(marks, 3),
        "markers": int(view._data["m"]),
        "rects": rects,
        "render ms": round(statistics.median(renders), 1),
        "zoom rt s": round(zoom, 3),
        "page KB": round(sent / 1e3, 1),
    }


def in_browser(measure_one, items: list) -> list[dict]:
    """``measure_one(page, item)`` per item, in one headless Chromium page of the harness."""
    from playwright.sync_api import sync_playwright

    from tests.ui.harness import HarnessServer, WidgetPage, launch_browser

    rows = []
    with sync_playwright() as p, HarnessServer() as server:
        browser = launch_browser(p)
        try:
            ctx = browser.new_context(viewport={"width": 1200, "height": 800})
            page = WidgetPage(ctx.new_page(), server.url)
            rows = [measure_one(page, item) for item in items]
            ctx.close()
        finally:
            browser.close()
    return rows


def browser_rows(sizes: list[int], ranks: int) -> list[dict]:
    return in_browser(lambda page, n: measure_browser(page, n, ranks), sizes)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--events", type=int, nargs="+", default=[100_000, 1_000_000, 10_000_000])
    p.add_argument("--ranks", type=int, default=8)
    p.add_argument("--browser", action="store_true", help="also show the view in Chromium")
    a = p.parse_args()
    rows = [measure(n, a.ranks) for n in a.events]
    print(pd.DataFrame(rows).to_string(index=False))
    if a.browser:
        print(pd.DataFrame(browser_rows(a.events, a.ranks)).to_string(index=False))


if __name__ == "__main__":
    main()
