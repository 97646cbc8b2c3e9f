"""Benchmark: replay and critical path of 10^5 .. 10^7 events on 64 ranks (issue 36).

The synthetic trace of ``timeline_scale.py`` (R ranks, nested steps, an
all-reduce per step whose last rank to arrive rotates). Measured per size, in
one process, one after the other:

* ``build s``: ``replay(timeline)``: the dependency graph (pieces, chunks,
  collective instances matched across the ranks) and the replay of every step;
* ``path s``: ``critical_path()`` of every step (segments, by context);
* ``what-if s``: one ``what_if(Scale(...))`` (durations changed, replayed again);
* ``total s``: the three.

Peer (``--hta``): HTA's ``critical_path_analysis`` of one step of a real rank-0 GPU
trace (HTA's own test data; HTA's analysis is of one rank and needs ProfilerStep
annotations, which the synthetic trace lacks), beside ``replay`` + ``critical_path``
of the same step; the ratio of the times and both paths' lengths and GPU shares.

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


#: a real single-rank GPU trace HTA's critical path analysis runs on (HTA's own test data)
HTA_TRACE = (
    Path(__file__).resolve().parents[2] / "shared" / "data" / "kineto"
    / "hta_ns_resolution_trace_rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"
)  # fmt: skip


def hta_peer(step: int = 2) -> dict | None:
    """HTA's critical path of one step of a real rank-0 GPU trace beside cctviz's
    (read + replay + path, against HTA's load + critical_path_analysis)."""
    try:
        from hta.trace_analysis import TraceAnalysis
    except ImportError:
        print("HTA is not installed: no peer")
        return None
    import logging
    import shutil

    import cctviz

    logging.disable(logging.WARNING)
    with tempfile.TemporaryDirectory() as d, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        shutil.copy(HTA_TRACE, d)
        t = time.perf_counter()
        tl = cctviz.read_timeline(HTA_TRACE)
        ours_read = time.perf_counter() - t
        t = time.perf_counter()
        cp = replay(tl).critical_path(step)
        ours = time.perf_counter() - t
        t = time.perf_counter()
        analyzer = TraceAnalysis(trace_dir=d)
        load = time.perf_counter() - t
        t = time.perf_counter()
        graph, ok = analyzer.critical_path_analysis(
            rank=0, annotation="ProfilerStep", instance_id=step
        )
        theirs = time.perf_counter() - t
    if not ok:
        print("HTA's critical_path_analysis did not succeed")
        return None
    b = graph.get_critical_path_breakdown()
    seg = cp.segments
    dur = seg["end [s]"] - seg["start [s]"]
    return {
        "events": len(tl), "step": step,
        "cctviz read s": ours_read, "cctviz replay+path s": ours,
        "HTA load s": load, "HTA path s": theirs, "path: cctviz / HTA": ours / theirs,
        "cctviz length ms": cp.length * 1e3, "HTA length ms": b["duration"].sum() / 1e3,
        "cctviz on GPU ms": dur[seg["kind"] == "gpu"].sum() * 1e3,
        "HTA gpu-bound ms": b.loc[b["bound_by"].str.startswith("gpu"), "duration"].sum() / 1e3,
    }  # fmt: skip


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
        got = hta_peer()
        if got:
            print(pd.DataFrame([got]).to_string(index=False))


if __name__ == "__main__":
    main()
