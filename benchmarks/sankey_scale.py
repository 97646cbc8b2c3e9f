"""Benchmark: the ensemble Sankey at 64 / 256 / 1,024 profiles x 10,000 nodes.

For each size a synthetic ensemble is made (a random recursive tree of 10,000
call sites in 40 load modules, per-profile times lognormal around each call
site's own, 5% slow profiles 1.5x) and these are measured:

* ``python s (cold)``: ``SankeyView(ens, group_by="module")`` on a fresh
  Ensemble (inclusive values per profile computed for the first time), and
  ``(warm)``: a second view of the same ensemble;
* ``bytes``: what the view sends to the browser (``_data``: JSON + binary
  buffers; only aggregates: bins, quartiles, a few outliers per node);
* ``show s``: from handing the widget to a headless Chromium page (the
  kernel-less harness of tests/ui/harness.py) until it has rendered, and
  ``render ms``: one re-render of the same ``_data`` in the page (``change:_data`` fired in the page, until two animation frames later;
  median of 3);
* ``appears s``: cold Python + show, what a user waits for. Goal (issue 13):
  under 2 s at 1,024 x 10,000.

Peer, in the same run: Thicket's box-plot statistics (``thicket.stats.
calc_boxplot_statistics``: quartiles, fences, outliers per node, the numbers the
Sankey draws on each node) against cctviz's (``cctviz.model.stats``: ``Ensemble.stats``
+ ``counted_matrix`` + ``box_plots``, the absence rule included, on the per-node values), on the 1,296 LULESH ranks of lulesh-scaling and on the
18 RAJAPerf runs (Thicket reads the same files).

Usage::

    python benchmarks/sankey_scale.py [--profiles 64 256 1024] [--nodes 10000]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from ipywidgets.widgets.widget import _remove_buffers

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import cctviz  # noqa: E402
from cctviz.model.stats import box_plots, counted_matrix  # noqa: E402
from cctviz.views.sankey import SankeyView  # noqa: E402
from tests.ui.harness import HarnessServer, WidgetPage, launch_browser  # noqa: E402

DATA = ROOT.parent / "shared" / "data"


def synthetic(n_nodes: int, n_prof: int, seed: int = 0, modules: int = 40) -> cctviz.Ensemble:
    """A random ensemble: tree of ``n_nodes`` in ``modules`` load modules, ``n_prof`` profiles."""
    rng = np.random.default_rng(seed)
    parent = np.concatenate(
        ([-1], (rng.random(n_nodes - 1) * np.arange(1, n_nodes)).astype(np.int64))
    )
    names = np.char.add("fn_", (np.arange(n_nodes) % 4999).astype(str))
    t = cctviz.Tree.from_parents(
        parent, names, {"time": np.ones(n_nodes)}, meta={"units": {"time": "us"}}
    )
    # a call site stays in its caller's module, or calls into another one (1 in 5)
    mod = np.zeros(n_nodes, dtype=np.int64)
    switch = rng.random(n_nodes) < 0.2
    other = rng.integers(0, modules, n_nodes)
    tp = np.asarray(t.parent)
    for lv in t.levels:
        lv = np.asarray(lv)
        p = tp[lv]
        mod[lv] = np.where((p < 0) | switch[lv], other[lv], mod[np.maximum(p, 0)])
    t.nodes["module"] = np.char.add(np.char.add("/usr/lib/lib", mod.astype(str)), ".so")
    base = rng.lognormal(0, 1, n_nodes)
    slow = np.where(rng.random(n_prof) < 0.05, 1.5, 1.0)
    vals = base[:, None] * rng.lognormal(0, 0.1, (n_nodes, n_prof)) * slow[None, :]
    rows = pd.DataFrame(
        {
            "node": np.repeat(np.arange(n_nodes), n_prof),
            "profile": np.tile(np.arange(n_prof), n_nodes),
            "time": vals.ravel(),
        }
    )
    return cctviz.Ensemble(t, rows, pd.DataFrame({"rank": np.arange(n_prof)}))


def data_bytes(view) -> int:
    state = {"_data": view._data}
    _, _, buffers = _remove_buffers(state)
    text = json.dumps(state, default=lambda o: None, allow_nan=False)
    return len(text.encode()) + sum(memoryview(b).nbytes for b in buffers)


def scale_rows(sizes: list[int], n_nodes: int) -> list[dict]:
    from playwright.sync_api import sync_playwright

    out = []
    with sync_playwright() as pw, HarnessServer() as server:
        browser = launch_browser(pw)
        try:
            for n_prof in sizes:
                ens = synthetic(n_nodes, n_prof)
                t0 = time.perf_counter()
                view = SankeyView(ens, group_by="module")
                cold = time.perf_counter() - t0
                t0 = time.perf_counter()
                SankeyView(ens, group_by="module")
                warm = time.perf_counter() - t0
                context = browser.new_context(viewport={"width": 1400, "height": 900})
                wp = WidgetPage(context.new_page(), server.url)
                t0 = time.perf_counter()
                wp.show(view)
                show = time.perf_counter() - t0
                renders = [wp.rerender_ms(view) for _ in range(3)]
                d = view._data
                out.append(
                    {
                        "profiles": n_prof,
                        "nodes": n_nodes,
                        "super nodes": d["n"],
                        "dummies": d["n_dummy"],
                        "python s (cold)": round(cold, 3),
                        "python s (warm)": round(warm, 3),
                        "bytes": data_bytes(view),
                        "show s": round(show, 3),
                        "render ms": round(statistics.median(renders), 1),
                        "appears s": round(cold + show, 3),
                    }
                )
                print(out[-1], flush=True)
                context.close()
        finally:
            browser.close()
    return out


def thicket_rows() -> list[dict]:
    """Box-plot statistics per node: cctviz against Thicket on the same files."""
    with contextlib.redirect_stdout(io.StringIO()):
        import thicket
    rows = []
    cases = [
        (
            "lulesh-scaling (1,296 ranks)",
            sorted((DATA / "hatchet-tutorial" / "lulesh-scaling").glob("*.json")),
            "time (inc)",
            "from_caliper",
        ),
        (
            "rajaperf (18 runs)",
            sorted((DATA / "thicket" / "rajaperf").rglob("*.cali")),
            "Total time (inc)",
            "from_caliperreader",
        ),
    ]
    for name, files, metric, reader in cases:
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            if reader == "from_caliperreader":
                tk = thicket.Thicket.from_caliperreader([str(f) for f in files], disable_tqdm=True)
            else:  # Thicket.from_caliper with node_ordering=False (see benchmarks/compose.py)
                from hatchet import GraphFrame

                tk = thicket.Thicket.reader_dispatch(
                    GraphFrame.from_caliper,
                    False,
                    True,
                    True,
                    [str(f) for f in files],
                    None,
                    node_ordering=False,
                )
            col = [
                c
                for c in tk.dataframe.columns
                if str(c).startswith(metric.replace(" (inc)", "")) and "(inc)" in str(c)
            ] or [metric.replace(" (inc)", "")]
            t0 = time.perf_counter()
            thicket.stats.calc_boxplot_statistics(tk, columns=[col[0]])
            theirs = time.perf_counter() - t0
        ens = cctviz.read_ensemble(files)
        t0 = time.perf_counter()
        st = ens.stats(metric)
        present = np.full((len(ens.tree), ens.n_profiles), np.nan)
        present[ens.exclusive_rows["node"].to_numpy(), ens.exclusive_rows["profile"].to_numpy()] = (
            1.0
        )
        v = ens.values(metric) * present  # NaN where a profile has no row
        counted = counted_matrix(v, live=ens.live, run=ens.run_ids)
        q = [st[k].to_numpy() for k in ("q25", "q75", "median")]
        box_plots(counted, *q, per_node=v.shape[1])
        ours = time.perf_counter() - t0
        rows.append(
            {
                "ensemble": name,
                "nodes": len(ens.tree),
                "profiles": ens.n_profiles,
                "thicket s": round(theirs, 4),
                "cctviz s": round(ours, 4),
                "ratio": f"{theirs / ours:.0f}x",
            }
        )
        print(rows[-1], flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--profiles", type=int, nargs="+", default=[64, 256, 1024])
    ap.add_argument("--nodes", type=int, default=10_000)
    a = ap.parse_args()
    print(
        "\n| "
        + " | ".join(
            [
                "profiles",
                "super nodes",
                "dummies",
                "python s cold",
                "warm",
                "bytes",
                "show s",
                "render ms",
                "appears s",
            ]
        )
        + " |"
    )
    rows = scale_rows(a.profiles, a.nodes)
    print("|---" * 9 + "|")
    for r in rows:
        print(
            f"| {r['profiles']:,} x {r['nodes']:,} | {r['super nodes']} | {r['dummies']} | {r['python s (cold)']}"
            f" | {r['python s (warm)']} | {r['bytes']:,} | {r['show s']} | {r['render ms']} | {r['appears s']} |"
        )
    print("\nBox-plot statistics per node (quartiles, fences, outliers), same run:\n")
    print(
        "| ensemble | nodes | profiles | Thicket s | cctviz s | ratio |\n|---|---|---|---|---|---|"
    )
    for r in thicket_rows():
        print(
            f"| {r['ensemble']} | {r['nodes']} | {r['profiles']:,} | {r['thicket s']} | {r['cctviz s']} | {r['ratio']} |"
        )


if __name__ == "__main__":
    main()
