"""Benchmark: replay and critical path of 10^5 .. 10^7 events on 64 ranks (issue 36).

The synthetic trace of ``timeline_scale.py`` (R ranks, nested steps, an
all-reduce per step whose last rank to arrive rotates). Measured per size, in
one process, one after the other:

* ``build s``: ``replay(timeline)``: the dependency graph (pieces, chunks,
  collective instances matched across the ranks) and the replay of every step;
* ``path s``: ``critical_path()`` of every step (segments, by context);
* ``what-if s``: one ``what_if(Scale(...))`` (durations changed, replayed again);
* ``total s``: the three.

Peer, where it runs: HTA's ``critical_path_analysis`` on one rank of the same trace
written as a Kineto file (HTA's analysis is of one rank), beside ``replay`` +
``critical_path`` of that rank's timeline; the ratio is printed (cctviz / HTA).

Usage::

    python benchmarks/critical_path.py [--events 100000 1000000 10000000] [--ranks 64] [--hta]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from timeline_scale import synthetic, timed  # noqa: E402

from cctviz.perfmodel import ReplayWarning, Scale, replay  # noqa: E402


def measure(n_events: int, ranks: int) -> dict:
    tl = synthetic(n_events, ranks)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ReplayWarning)
        rp, build_s = timed(lambda: replay(tl))
        cp, path_s = timed(rp.critical_path)
        _, whatif_s = timed(lambda: rp.what_if(Scale("forward", 0.5)))
    return {
        "events": len(tl),
        "ranks": ranks,
        "steps": len(rp.steps),
        "chunks": rp.graph.n_chunks,
        "build s": build_s,
        "path s": path_s,
        "what-if s": whatif_s,
        "total s": build_s + path_s + whatif_s,
        "path segments": len(cp.segments),
    }


def hta_peer(n_events: int) -> dict | None:
    """HTA's critical path of one rank, beside cctviz's, on the same Kineto file."""
    try:
        from hta.trace_analysis import TraceAnalysis
    except ImportError:
        print("HTA is not installed: no peer")
        return None
    import cctviz

    tl = synthetic(n_events, 1)
    with tempfile.TemporaryDirectory() as d:
        cctviz.write(tl, Path(d) / "rank-0.json", format="chrome-trace")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ours_tl = cctviz.read_timeline(Path(d) / "rank-0.json")
            t = time.perf_counter()
            rp = replay(ours_tl)
            rp.critical_path()
            ours = time.perf_counter() - t
            try:
                t = time.perf_counter()
                analyzer = TraceAnalysis(trace_dir=d)
                load = time.perf_counter() - t
                t = time.perf_counter()
                analyzer.critical_path_analysis(rank=0, annotation="ProfilerStep", instance_id=0)
                theirs = time.perf_counter() - t
            except Exception as e:  # noqa: BLE001 - report what HTA says
                print(f"HTA's critical_path_analysis failed: {type(e).__name__}: {e}")
                return None
    return {"events": len(tl), "cctviz s": ours, "HTA load s": load, "HTA path s": theirs,
            "cctviz / HTA path": ours / theirs}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, nargs="+", default=[100_000, 1_000_000, 10_000_000])
    ap.add_argument("--ranks", type=int, default=64)
    ap.add_argument("--hta", action="store_true", help="also HTA's critical path of one rank")
    a = ap.parse_args()
    import pandas as pd

    rows = [measure(n, a.ranks) for n in a.events]
    with pd.option_context("display.width", 200, "display.float_format", "{:.3f}".format):
        print(pd.DataFrame(rows).to_string(index=False))
    if a.hta:
        got = hta_peer(min(a.events))
        if got:
            print(pd.DataFrame([got]).to_string(index=False))


if __name__ == "__main__":
    main()
