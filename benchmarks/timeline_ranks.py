"""Benchmark: a TimelineView of 1,024 .. 16,384 ranks (issue 38, lanes' level of detail).

Generated per-rank streams with the structure of data-parallel training: per
step a data phase, forward and backward (``--modules`` module calls inside each),
an all-reduce that every rank leaves together once the last has arrived (the
others wait in it), then the optimizer. Two behaviours and a few stragglers:
the ranks of every fourth node (8 ranks a node) load data for longer, and
``--stragglers`` ranks spend 40% longer in forward from the second step on.

Per size, the view as it comes (``max_lanes`` 64: ranks grouped by behaviour,
:func:`cctviz.ops.behaviour.rank_groups`) against the same view with one lane
per rank (``max_lanes=0``, what TimelineView drew before), both in this run:

* ``lanes``: lanes drawn (and whether the stragglers are among the lanes of
  their own, ``stragglers apart``);
* ``view s``: ``TimelineView(timeline)`` (Python: level of detail, grouping,
  bands); ``KB``: what ``_data`` holds (JSON + binary buffers);
* with ``--browser``: ``first paint s`` from ``TimelineView(timeline)`` until
  the page has drawn it (headless Chromium, the kernel-less harness of
  tests/ui/harness.py as in ``timeline_scale.py``) and ``page KB`` (everything
  sent to the page for the view; the first size's includes the front-end
  bundle, about 380 KB).

Goal (issue 38): at 16,384 ranks, first paint under 1 s and under 2 MB sent.

Usage::

    python benchmarks/timeline_ranks.py [--ranks 1024 4096 16384] [--steps 5] [--browser]

Measured 2026-12-07 on this machine (2 cores; headless Chromium), 5 steps, 4
modules, 3 stragglers::

     ranks   events  lanes stragglers apart  view s  KB  one lane per rank: view s     KB  ratio s
      1024    72704      5              3/3   0.067 5.1                       0.814  549.2     12.1
      4096   290816      5              3/3   0.102 5.1                       3.454 2195.8     34.0
     16384  1163264      5              3/3   0.305 5.0                      14.167 8786.7     46.5

     ranks  first paint s  bands  page KB
      1024          0.277      2    388.3
      4096          0.159      2    388.4
     16384          0.389      2    388.2

At 16,384 ranks the view is drawn 0.39 s after ``TimelineView(timeline)`` and the
page receives 388 KB, nearly all of it the front-end bundle (the view's data:
5 KB): five lanes, the two behaviours (the slow loaders' nodes and the rest) and
the three stragglers, each on a lane of its own. One lane per rank took 14.2 s in
Python alone and 8.8 MB of data (not drawn here).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import cctviz  # noqa: E402
from cctviz.model.timeline import Timeline  # noqa: E402
from cctviz.views.timeline import TimelineView  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timeline_scale import RENDER_CLOCK, in_browser, payload_bytes, timed  # noqa: E402

#: per step (ms): data, forward, backward, transfer of the all-reduce, optimizer
DATA_MS, FORWARD_MS, BACKWARD_MS, TRANSFER_MS, OPTIMIZER_MS = 4.0, 30.0, 55.0, 6.0, 5.0
#: the slow loaders: every SLOW_EVERY-th node of RANKS_PER_NODE ranks loads data this much longer
RANKS_PER_NODE, SLOW_EVERY, SLOW_DATA_MS = 8, 4, 25.0
#: a straggler's forward takes this much longer, from the second step on
STRAGGLE = 0.4


def synthetic(ranks: int, steps: int, modules: int, stragglers: int, seed: int = 0):
    """(Timeline, the straggler ranks): the module docstring's streams, vectorised."""
    rng = np.random.default_rng(seed)
    names = ["main", "step", "data", "forward", "backward", "all_reduce", "optimizer"]
    kinds = ["root", "step", "phase", "phase", "phase", "comm", "phase"]
    parent = [-1, 0, 1, 1, 1, 1, 1]
    names += [f"block.{k}" for k in range(modules)] * 2
    kinds += ["module"] * (2 * modules)
    parent += [3] * modules + [4] * modules
    tree = cctviz.Tree.from_parents(parent, names, kind=kinds)
    paths = tree.callpaths.to_numpy()
    ids = np.array([int(np.flatnonzero(paths == p)[0])
                    for p in cctviz.Tree.from_parents(parent, names).callpaths])  # fmt: skip
    late = rng.choice(ranks, size=min(stragglers, ranks), replace=False)
    slow_node = (np.arange(ranks) // RANKS_PER_NODE) % SLOW_EVERY == SLOW_EVERY - 1
    ms = 1e6
    t = np.zeros(ranks)
    ev = []

    def add(node, a, b):
        ev.append((np.full(ranks, ids[node]), a.astype(np.int64), b.astype(np.int64)))

    for s in range(steps):
        jit = lambda mean: mean * ms * (1 + 0.02 * rng.standard_normal(ranks))  # noqa: E731
        data = jit(DATA_MS) + slow_node * SLOW_DATA_MS * ms
        fwd = jit(FORWARD_MS) * np.where(np.isin(np.arange(ranks), late) & (s > 0), 1 + STRAGGLE, 1)
        bwd = jit(BACKWARD_MS)
        s0 = t
        d1 = s0 + data
        f1 = d1 + fwd
        b1 = f1 + bwd
        done = np.full(ranks, b1.max() + TRANSFER_MS * ms)  # all leave once the last arrived
        o1 = done + jit(OPTIMIZER_MS)
        add(1, s0, o1)
        add(2, s0, d1)
        add(3, d1, f1)
        add(4, f1, b1)
        add(5, b1, done)
        add(6, done, o1)
        for k in range(modules):
            add(7 + k, d1 + fwd * k / modules, d1 + fwd * (k + 1) / modules)
            add(7 + modules + k, f1 + bwd * k / modules, f1 + bwd * (k + 1) / modules)
        t = np.full(ranks, o1.max())
    add(0, np.zeros(ranks), t)
    node = np.concatenate([n for n, _, _ in ev])
    start = np.concatenate([a for _, a, _ in ev])
    end = np.concatenate([b for _, _, b in ev])
    prof = np.tile(np.arange(ranks), len(ev))
    order = np.lexsort((-end, start, prof))
    events = pd.DataFrame({"profile": prof[order], "node": node[order],
                           "start": start[order], "end": end[order]})  # fmt: skip
    return Timeline(tree, events, pd.DataFrame({"rank": np.arange(ranks)})), np.sort(late)


def measure(ranks: int, steps: int, modules: int, stragglers: int, flat: bool) -> dict:
    tl, late = synthetic(ranks, steps, modules, stragglers)
    view, view_s = timed(lambda: TimelineView(tl))
    alone = {int(m[0]) for m in view.lane_members if m.size == 1}
    row = {
        "ranks": ranks,
        "events": len(tl),
        "lanes": len(view.lanes),
        "stragglers apart": f"{len(alone & set(late.tolist()))}/{late.size}",
        "view s": round(view_s, 3),
        "KB": round(payload_bytes(view._data) / 1e3, 1),
    }
    if flat:
        per_rank, flat_s = timed(lambda: TimelineView(tl, max_lanes=0))
        row.update({"one lane per rank: view s": round(flat_s, 3),
                    "KB ": round(payload_bytes(per_rank._data) / 1e3, 1),
                    "ratio s": round(flat_s / view_s, 1)})  # fmt: skip
    return row


def measure_browser(page, ranks: int, steps: int, modules: int, stragglers: int) -> dict:
    tl, _ = synthetic(ranks, steps, modules, stragglers)
    page.reset_counters()
    page.eval(RENDER_CLOCK)
    t = time.time()
    view = TimelineView(tl)
    page.show(view, wait_render=False)
    page.wait_rendered(1, view, timeout=60_000)
    drawn = page.eval("() => window.__drawn")
    first = drawn[0][1] / 1e3 - t
    spreads = page.eval("() => document.querySelectorAll("
                        "'.harness-view:last-of-type g.cctviz-spread').length")  # fmt: skip
    page.check()
    return {"ranks": ranks, "first paint s": round(first, 3), "bands": spreads,
            "page KB": round(page.bytes_sent / 1e3, 1)}  # fmt: skip


def browser_rows(sizes: list[int], steps: int, modules: int, stragglers: int) -> list[dict]:
    return in_browser(lambda page, n: measure_browser(page, n, steps, modules, stragglers), sizes)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--ranks", type=int, nargs="+", default=[1024, 4096, 16384])
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--modules", type=int, default=4)
    p.add_argument("--stragglers", type=int, default=3)
    p.add_argument("--no-flat", action="store_true", help="skip the one-lane-per-rank view")
    p.add_argument("--browser", action="store_true", help="also show the view in Chromium")
    a = p.parse_args()
    rows = [measure(n, a.steps, a.modules, a.stragglers, not a.no_flat) for n in a.ranks]
    print(pd.DataFrame(rows).to_string(index=False))
    if a.browser:
        print(
            pd.DataFrame(browser_rows(a.ranks, a.steps, a.modules, a.stragglers)).to_string(
                index=False
            )
        )


if __name__ == "__main__":
    main()
