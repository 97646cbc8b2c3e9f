"""Benchmark: Kineto trace -> per-rank call trees, cctviz against Holistic Trace Analysis.

    .venv/bin/python benchmarks/kineto_parse.py [--reps 3] [--quick] [--events 1000000]
    # 1 GB of traces: 4 plain rank files of 250 MB, nothing else
    .venv/bin/python benchmarks/kineto_parse.py --no-samples --no-single \
        --events 4400000 --ranks 4 --plain --reps 2

What each side does
-------------------
Both sides parse the same trace file(s) from disk (gzipped or not) and build
the call tree of every CPU thread of every rank, with the GPU activities tied
to the CPU op that launched them. Each runs in a fresh Python process; the
time is that of the work alone (interpreter start and imports excluded and
reported apart).

* cctviz: ``cctviz.read(path, format="kineto", python_functions=True)``, the
  reader's defaults otherwise. It parses the JSON, builds per (pid, tid) the
  nesting of the ``X`` events by a sorted sweep, attaches kernels / memcpys /
  memsets to their launch by ``correlation``, and returns a calling-context
  Tree with exclusive metrics (a folder of per-rank files: one Tree per file,
  unified by call path into an Ensemble by the reader registry).
* HTA (HolisticTraceAnalysis 0.5.0), the steps its own analyses use:
  ``Trace(trace_files=[file], trace_dir=...)`` (a folder:
  ``Trace(trace_dir=folder)``), ``trace.parse_traces(use_multiprocessing=False)``,
  then ``hta.common.call_stack.CallGraph(trace)``. ``parse_traces`` reads each
  file with the default ``ParserConfig`` (backend ``json``: ``json.loads`` of
  the whole file into a DataFrame; python_function events kept, as with
  cctviz's ``python_functions=True``), keeps the default ``args`` columns,
  encodes names in a symbol table, links CPU launches and GPU kernels by
  correlation (``index_correlation``), adds fwd/bwd links and iteration
  numbers. ``CallGraph`` builds one ``CallStackGraph`` per (pid, tid) of every
  rank by sorting start/end events and sweeping with a stack, and writes
  ``depth`` and ``parent`` (a kernel's parent = its launch) into each rank's
  DataFrame. This is the call graph of ``hta.common.call_stack`` that HTA's
  critical path analysis uses. ``--hta-graph trace_call_graph`` uses the newer
  ``hta.common.trace_call_graph.CallGraph`` instead (CUDA kernel analyses: it
  also links the backward thread to the main one and sums kernel time per CPU
  op); it fails on three of the real samples (see below).
  ``TraceAnalysis(trace_dir)`` itself builds no call tree: it is
  ``Trace.load_traces`` (``parse_traces`` + aligning ranks + dropping kernels
  outside complete iterations).
* ``json``: the floor of any reader built on the standard library's decoder
  (HTA's default backend is one ``json.loads`` per file): ``json.loads`` of
  each file's text, the garbage collector paused (as cctviz's parse pauses
  it), nothing built from the result. ``cctviz/json`` and ``HTA/json`` are
  each tool's time over it: ``HTA/json`` bounds the speed-up any such reader
  can reach on that trace.
* HTA parses several ranks in a multiprocessing pool by default; both sides
  run in one process here (``use_multiprocessing=False``), so time and memory
  are those of the same single-core work.
* ``--lean``: also runs the leanest configuration of each: cctviz with
  ``python_functions=False``, HTA with the ``ijson_batch_and_compress``
  backend, which drops python_function events while streaming (HTA's own
  advice for large traces; it needs ijson's yajl2_c backend, installed here).

Measures
--------
* ``s``: median over ``--reps`` of the wall time of the work in the child
  (``time.perf_counter``); the two tools alternate (cctviz first on even
  repetitions, HTA first on odd ones).
* ``cpu x``: the same ratio on the CPU time of the work (``process_time``),
  which other jobs on a shared machine disturb less than the wall time;
* ``events/s``: trace events in the file(s) (every entry of ``traceEvents``,
  metadata and flows included, the same count for both) / time.
* ``MB``: peak resident memory of the work: the child's peak RSS (max over
  repetitions) minus that of a baseline child that only imports the same
  modules (median over repetitions); the total peak (imports included) is
  shown in brackets. The peak is ``VmHWM`` of ``/proc/self/status``, not
  ``getrusage(RUSAGE_SELF).ru_maxrss``: on Linux the latter keeps, across
  ``exec``, the RSS of the parent that forked the child (a 300 MB parent gave
  its children 310 MB against 9 MB of their own), so it would measure this
  script's own footprint; the parent here stays small anyway (it never loads
  the synthetic traces).
* ratios (``speed x``, ``cpu x``, ``mem x``): HTA / cctviz (> 1: cctviz
  better). The summary gives their geometric means over the traces of at
  least 10,000 events (on tiny traces both sides are fixed costs) and over
  all.

Traces
------
* every real sample in ``../shared/data/kineto/`` (all 9 read by HTA's
  ``call_stack.CallGraph``; ``trace_call_graph.CallGraph`` fails on
  ``hta_nccl_parser_config_nccl_data`` and ``hta_ns_resolution_trace``
  (``ValueError: Unexpected case`` in its event comparator: after HTA rounds
  nanosecond time stamps, sub-microsecond events get ``dur`` -1 or 0) and on
  ``kineto_tb_resnet50_2021`` (``TypeError`` on a string ``tid``, the 2021
  schema's ``"PyTorch Profiler"`` span thread), and on the synthetic traces
  (nanosecond time stamps, the same ``ValueError``; ``kineto_synth.py --us``
  traces pass));
* ``2 sampled ranks``: the two ``hta_trace_filter_sampled_rank-*`` files
  (ranks 0 and 1 of a 128-rank job) as one folder;
* ``synthetic``: ``benchmarks/kineto_synth.py`` traces written to a temporary
  folder: one rank of about ``--events`` events (default 1,000,000; 100,000
  with ``--quick``; ``--no-single`` skips it), plain JSON, and a folder of
  ``--ranks`` (4) gzipped ranks (``--plain``: not gzipped) sharing the same
  number of events (``--no-multi`` skips it); its size on disk is in its name.

The children import this checkout's ``cctviz`` (``PYTHONPATH``); before
2026-11-27 they imported the one installed in the virtual environment, which
may be another checkout's.

Measured
--------
2026-11-21, ``--reps 3 --lean``, HolisticTraceAnalysis 0.5.0, 2 CPUs shared
with other jobs (load average 0.05 before, 2.2 after): cctviz was 3.8x to
8.6x faster on every trace (geometric mean 7.0x over the six traces of at
least 10,000 events, 5.3x over all twelve; the same on CPU time) with a lower
peak on every trace (2.7x to 14x less above the imports on the big ones).
The 1M-event synthetic rank: cctviz 3.4 s (299,000 events/s), 162 MB; HTA
27 s (37,000 events/s: parse_traces 18 s + CallGraph 8.5 s), 1,361 MB. Lean
configurations: 3.8x to 9.3x, geometric mean 6.6x; memory 2.0x to 13.5x on the
big ones.
With ``--cctviz-options '{"merge": false}'`` (one node per event, like
HTA's stacks): 3.4x to 8.4x, 3.2 s and 411 MB on the 1M-event rank.

2026-11-27, 1 GB of traces (``--no-samples --no-single --events 4400000
--ranks 4 --plain --reps 2``: 4 plain rank files, 1,010 MB, 4.4M events),
cctviz after the JsonStream fix (batches across pieces, 64 KiB), 2 CPUs with
other sessions' benchmarks running (load average 3.0 before, 3.7 after):
cctviz 25.8 s (172,000 events/s), HTA 265 s (parse_traces 176 s + CallGraph
87 s): **10.3x** (CPU time 9.2x); peak RSS above the imports 193 MB (311 MB in
all) against HTA's 3,049 MB (3,157 MB): 15.8x less. The stdlib decode floor
(``json.loads`` of each file) took 28.0 s: cctviz 0.92x of it (its 64 KiB
batches decode faster than one whole-file call), HTA 9.5x. The same command on
the final code (the parse looping over batches), load average 5-8: ``--reps 1``
5.9x (CPU 7.4x; cctviz 53 s, 2.8x the floor: its run hit the peak load),
``--reps 2`` **8.1x** (CPU 8.6x; cctviz 44.8 s, HTA 362 s, floor 33.3 s);
memory 16x less in both (187-192 MB against 3,053-3,056 MB). On this shared
machine the goal of 10x is met in one run of three; the CPU-time ratio
(7.4-9.2x) is the steadier figure. Smaller inputs give less: ``--quick`` (4
gzipped ranks, 0.1M events) 5.8x, HTA's events/s falling with the total size
(29,800 at 0.1M, 12,000-17,000 at 4.4M) where cctviz's stay flat.

A run is killed after ``--timeout`` seconds and shown as ``> T``. The machine
may be shared: the load average is printed before and after. Nothing is
asserted: this is a benchmark, not a test.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve()
REPO = HERE.parents[1]
DATA = REPO.parent / "shared" / "data" / "kineto"
SAMPLED = ("hta_trace_filter_sampled_rank-0.json.gz", "hta_trace_filter_sampled_rank-1.json.gz")
BIG = 10_000  # traces at least this big count in the first summary line
TOOLS = ("cctviz", "hta", "json")  # json: the stdlib decode floor (see the docstring)


# ---------------------------------------------------------------- child side
def _peak_mb() -> float:
    """Peak resident memory of this process: ``VmHWM``, else ``ru_maxrss``.

    On Linux ``ru_maxrss`` survives ``exec``: a child started by a parent of
    300 MB reports at least 300 MB (measured: 310 MB against a ``VmHWM`` of
    9 MB), while ``VmHWM`` belongs to the child's own address space.
    """
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def _import(tool: str, cfg: dict):
    """Import what the tool needs; returns the function doing the work."""
    if tool == "cctviz":
        import cctviz

        opts = {"python_functions": not cfg["lean"], **cfg["cctviz_options"]}

        def work(path: Path) -> dict:
            obj = cctviz.read(path, format="kineto", **opts)
            trees = list(obj.trees()) if hasattr(obj, "trees") else [obj]
            # nodes: of the tree, or of an Ensemble's union tree over its ranks
            res = {"ranks": len(trees), "nodes": len(obj.tree) if len(trees) > 1 else len(obj)}
            k = [t.meta.get("kineto") for t in trees]
            if all(isinstance(x, dict) for x in k):  # an Ensemble's trees do not keep it
                for c in ("cpu_events", "gpu_events"):
                    res[c] = sum(x.get(c, 0) for x in k)
            return res

        return work

    if tool == "json":
        import gc
        import gzip

        def work(path: Path) -> dict:
            files = sorted(p for p in path.iterdir() if p.is_file()) if path.is_dir() else [path]
            gc.disable()  # as cctviz's parse: collections only cost time here
            n = 0
            for f in files:
                op = gzip.open if f.name.endswith(".gz") else open
                with op(f, "rb") as fh:
                    n += len(json.loads(fh.read())["traceEvents"])
            gc.enable()
            return {"rows": n}

        return work

    import logging
    import warnings

    warnings.filterwarnings("ignore")
    from hta.common.trace import Trace
    from hta.configs.config import logger
    from hta.configs.parser_config import ParserBackend, ParserConfig

    if cfg["hta_graph"] == "trace_call_graph":
        from hta.common.trace_call_graph import CallGraph
    else:
        from hta.common.call_stack import CallGraph

    logger.setLevel(logging.ERROR)  # HTA logs several warnings per file

    def work(path: Path) -> dict:
        pc = ParserConfig.get_default_cfg()
        if cfg["lean"]:
            pc.set_parser_backend(ParserBackend.IJSON_BATCH_AND_COMPRESS)
        t0 = time.perf_counter()
        if path.is_dir():
            trace = Trace(trace_dir=str(path), parser_config=pc)
        else:
            trace = Trace(trace_files=[str(path)], trace_dir=str(path.parent), parser_config=pc)
        trace.parse_traces(use_multiprocessing=False)
        t1 = time.perf_counter()
        cg = CallGraph(trace)
        info = {"parse_s": t1 - t0, "graph_s": time.perf_counter() - t1}
        info["ranks"] = len(trace.get_ranks())
        info["rows"] = int(sum(len(df) for df in trace.traces.values()))
        # events placed in a call stack (sentinel roots left out); the stacks of a
        # rank share one node map in trace_call_graph
        maps = getattr(cg, "rank_to_nodes", {}).values() or [cs.nodes for cs in cg.call_stacks]
        info["nodes"] = int(sum(sum(1 for k in m if k >= 0) for m in maps if m))
        return info

    return work


def child_main(tool: str, trace: str, out: str, cfg: dict) -> None:
    t0 = time.perf_counter()
    work = _import(tool, cfg)
    res: dict = {"import_s": time.perf_counter() - t0, "import_mb": _peak_mb()}
    if trace:
        t1, c1 = time.perf_counter(), time.process_time()
        info = work(Path(trace))
        res["s"] = time.perf_counter() - t1
        res["cpu_s"] = time.process_time() - c1
        res["peak_mb"] = _peak_mb()
        res.update(info)
    Path(out).write_text(json.dumps(res))


# ---------------------------------------------------------------- parent side
def run_child(tool: str, trace: Path | None, cfg: dict, timeout: float) -> dict:
    """One child process; {"timeout": True} if it ran past ``timeout``."""
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        out = f.name
    cmd = [sys.executable, str(HERE), "--child", tool, str(trace or ""), out, json.dumps(cfg)]
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),  # this checkout's cctviz (not the one the venv installed)
        "PYTHONWARNINGS": "ignore",
        "OMP_NUM_THREADS": "1",
    }
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO, timeout=timeout)
    except subprocess.TimeoutExpired:
        Path(out).unlink(missing_ok=True)
        return {"timeout": True, "s": timeout, "wall": time.perf_counter() - t0}
    try:
        if p.returncode != 0:
            tail = (p.stderr or p.stdout).strip().splitlines()[-1:] or ["?"]
            return {"error": tail[0][:200], "wall": time.perf_counter() - t0}
        return json.loads(Path(out).read_text())
    finally:
        Path(out).unlink(missing_ok=True)


def count_events(path: Path) -> int:
    """Entries of ``traceEvents`` in a file or in the files of a folder."""
    import gzip

    files = sorted(p for p in path.iterdir() if p.is_file()) if path.is_dir() else [path]
    n = 0
    for f in files:
        op = gzip.open if f.name.endswith(".gz") else open
        with op(f, "rb") as fh:
            n += len(json.load(fh)["traceEvents"])
    return n


def make_cases(args: argparse.Namespace, tmp: Path) -> list[tuple[str, Path, int]]:
    sys.path.insert(0, str(HERE.parent))
    from kineto_synth import make_trace

    cases: list[tuple[str, Path, int]] = []
    if not args.no_samples:
        for f in sorted(DATA.iterdir()):
            name = f.name.removesuffix(".gz").removesuffix(".json").removesuffix(".pt.trace")
            cases.append((name[:40], f, count_events(f)))
        two = tmp / "sampled_2ranks"
        two.mkdir()
        for s in SAMPLED:
            (two / s).symlink_to(DATA / s)
        cases.append(("2 sampled ranks (folder)", two, count_events(two)))
    n = args.events or (100_000 if args.quick else 1_000_000)
    t0 = time.perf_counter()
    if not args.no_single:
        one = make_trace(tmp / "synthetic_1rank.json", n, seed=args.seed)
        ((p1, n1),) = one.items()
        cases.append((f"synthetic 1 rank ({n1 / 1e6:.2g}M)", p1, n1))
    if not args.no_multi:
        r, gz = args.ranks, not args.plain
        folder = tmp / f"synthetic_{r}ranks"
        multi = make_trace(folder, n, ranks=r, seed=args.seed, gzip=gz)
        mb = sum(f.stat().st_size for f in folder.iterdir()) / 1e6
        cases.append(
            (
                f"synthetic {r} ranks{' .gz' if gz else ''} ({n / 1e6:.2g}M, {mb:,.0f} MB)",
                folder,
                sum(multi.values()),
            )
        )
    print(f"synthetic traces written in {time.perf_counter() - t0:.1f} s", flush=True)
    if args.only:
        cases = [c for c in cases if any(o in c[0] for o in args.only)]
    return cases


def _fmt_s(r: dict | None) -> str:
    if r is None:
        return "-"
    if r.get("timeout"):
        return f"> {r['s']:.0f}"
    if "error" in r:
        return "error"
    return f"{r['s']:.3g}" if r["s"] < 10 else f"{r['s']:.1f}"


def _geomean(xs: list[float]) -> float:
    xs = [x for x in xs if x > 0 and math.isfinite(x)]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


def summarise(r: list[dict]) -> dict | None:
    """Median time, max peak over the repetitions of one (tool, trace)."""
    ok = [x for x in r if "s" in x and not x.get("timeout")]
    if not ok:
        return r[0] if r else None
    out = dict(ok[0])
    out["s"] = statistics.median(x["s"] for x in ok)
    out["peak_mb"] = max(x["peak_mb"] for x in ok)
    for k in ("cpu_s", "parse_s", "graph_s"):
        if k in out:
            out[k] = statistics.median(x[k] for x in ok)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="100k-event synthetic traces")
    ap.add_argument("--events", type=int, default=None, help="synthetic size (default 1e6)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-samples", action="store_true", help="synthetic traces only")
    ap.add_argument("--no-multi", action="store_true", help="no multi-rank synthetic folder")
    ap.add_argument("--no-single", action="store_true", help="no one-rank synthetic trace")
    ap.add_argument("--ranks", type=int, default=4, help="ranks of the multi-rank folder")
    ap.add_argument("--plain", action="store_true", help="multi-rank files not gzipped")
    ap.add_argument("--only", nargs="*", help="run the cases whose name contains one of these")
    ap.add_argument(
        "--lean",
        action="store_true",
        help="also cctviz without Python frames vs HTA's ijson backend",
    )
    ap.add_argument("--hta-graph", default="call_stack", choices=("call_stack", "trace_call_graph"))
    ap.add_argument("--cctviz-options", default="{}", help="JSON dict of extra reader options")
    ap.add_argument("--timeout", type=float, default=1800)
    ap.add_argument(
        "--child", nargs=4, metavar=("TOOL", "TRACE", "OUT", "CFG"), help=argparse.SUPPRESS
    )
    args = ap.parse_args()
    if args.child:
        tool, trace, out, cfg = args.child
        child_main(tool, trace, out, json.loads(cfg))
        return

    modes = [False, True] if args.lean else [False]
    base = {"hta_graph": args.hta_graph, "cctviz_options": json.loads(args.cctviz_options)}
    print(
        f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())} "
        f"({os.cpu_count()} CPUs)",
        flush=True,
    )
    with tempfile.TemporaryDirectory(prefix="kineto_parse_") as d:
        cases = make_cases(args, Path(d))
        # baselines: children that only import
        baseline: dict[tuple[str, bool], float] = {}
        for lean in modes:
            for tool in TOOLS:
                cfg = {**base, "lean": lean}
                mbs = [run_child(tool, None, cfg, 600)["import_mb"] for _ in range(args.reps)]
                baseline[(tool, lean)] = statistics.median(mbs)
        rows = []
        for lean in modes:
            cfg = {**base, "lean": lean}
            for name, path, n in cases:
                runs: dict[str, list[dict]] = {t: [] for t in TOOLS}
                for rep in range(args.reps):
                    order = TOOLS if rep % 2 == 0 else TOOLS[::-1]
                    for tool in order:
                        last = runs[tool][-1] if runs[tool] else {}
                        if last.get("timeout") or "error" in last:
                            continue  # no use repeating a failure
                        runs[tool].append(run_child(tool, path, cfg, args.timeout))
                res = {t: summarise(v) for t, v in runs.items()}
                rows.append((lean, name, n, res))
                c, h = res["cctviz"], res["hta"]
                print(
                    f"  {'lean ' if lean else ''}{name}: cctviz {_fmt_s(c)} s, HTA {_fmt_s(h)} s"
                    + f", json {_fmt_s(res['json'])} s"
                    + "".join(
                        f"  [{t}: {r['error']}]" for t, r in res.items() if r and "error" in r
                    ),
                    flush=True,
                )
        print_table(rows, baseline, args)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


def print_table(rows: list, baseline: dict, args: argparse.Namespace) -> None:
    print(
        f"\nKineto trace -> per-rank call trees; median of {args.reps} runs; "
        f"HTA: parse_traces + {args.hta_graph}.CallGraph; MB: peak RSS minus an import-only "
        "child (total peak in brackets); ratios HTA / cctviz (> 1: cctviz better)"
    )
    print(
        "import-only baselines: "
        + ", ".join(
            f"{t}{' lean' if lean else ''} {mb:.0f} MB" for (t, lean), mb in baseline.items()
        )
    )
    hdr = (
        f"{'trace':<40}{'events':>10}{'cctviz s':>10}{'HTA s':>10}{'cctviz ev/s':>13}"
        f"{'HTA ev/s':>11}{'speed x':>9}{'cpu x':>7}{'cctviz MB':>15}{'HTA MB':>15}{'mem x':>7}"
        f"{'json s':>9}{'cctviz/json':>12}{'HTA/json':>9}"
    )
    ratios: dict[bool, list[tuple[int, float, float, float]]] = {}
    for lean in sorted({r[0] for r in rows}):
        label = (
            "lean: cctviz python_functions=False, HTA ijson_batch_and_compress"
            if lean
            else "default: cctviz python_functions=True, HTA json backend (python events kept)"
        )
        print(f"\n{label}\n{hdr}\n{'-' * len(hdr)}")
        for lean_, name, n, res in rows:
            if lean_ != lean:
                continue
            c, h, j = res["cctviz"] or {}, res["hta"] or {}, res["json"] or {}
            cok, hok = "peak_mb" in c, "peak_mb" in h
            speed = cpu = memx = None
            if cok and (hok or h.get("timeout")):
                speed = h["s"] / c["s"]
            if cok and hok:
                cpu = h["cpu_s"] / c["cpu_s"]
                memx = (h["peak_mb"] - baseline[("hta", lean)]) / max(
                    c["peak_mb"] - baseline[("cctviz", lean)], 1.0
                )
            lb = ">" if h.get("timeout") else ""
            cells = [
                f"{name:<40}{n:>10,}{_fmt_s(c):>10}{_fmt_s(h):>10}",
                f"{n / c['s']:>13,.0f}" if cok else f"{'-':>13}",
                f"{n / h['s']:>11,.0f}" if hok else f"{'-':>11}",
                f"{lb + format(speed, '.1f'):>9}" if speed else f"{'-':>9}",
                f"{cpu:>7.1f}" if cpu else f"{'-':>7}",
            ]
            for t, r in (("cctviz", c), ("hta", h)):
                if "peak_mb" in r:
                    m = r["peak_mb"] - baseline[(t, lean)]
                    cells.append(f"{m:>7.0f} ({r['peak_mb']:>4.0f})")
                else:
                    cells.append(f"{'-':>15}")
            cells.append(f"{memx:>7.1f}" if memx is not None else f"{'-':>7}")
            if "peak_mb" in j:  # the stdlib decode floor: times over it
                cells.append(f"{_fmt_s(j):>9}")
                for r in (c, h):
                    cells.append(
                        f"{r['s'] / j['s']:>{12 if r is c else 9}.2f}" if "s" in r else "-"
                    )
            print("".join(cells))
            if speed and cpu and memx is not None:
                ratios.setdefault(lean, []).append((n, speed, cpu, memx))
        rs = ratios.get(lean, [])
        big = [x for x in rs if x[0] >= BIG]
        for what, sel in ((f">= {BIG:,} events", big), ("all traces", rs)):
            if sel:
                cols = list(zip(*sel))
                print(
                    f"geometric mean over {len(sel)} traces ({what}): "
                    + ", ".join(
                        f"{lab} x {_geomean(list(v)):.1f} (min {min(v):.1f})"
                        for lab, v in zip(("speed", "cpu", "memory"), cols[1:])
                    )
                )
    details = [(lean, name, res) for lean, name, _, res in rows]
    print("\nwhat each built (untimed counts; HTA time split into parse_traces + CallGraph):")
    for lean, name, res in details:
        c, h = res["cctviz"] or {}, res["hta"] or {}
        print(
            f"  {'lean ' if lean else ''}{name}: cctviz {c.get('ranks', '-')} tree(s), "
            f"{c.get('nodes', '-')} nodes from {c.get('cpu_events', '-')} CPU + "
            f"{c.get('gpu_events', '-')} GPU events, import {c.get('import_s', float('nan')):.2f} s; "
            f"HTA {h.get('ranks', '-')} rank(s), {h.get('rows', '-')} rows, "
            f"{h.get('nodes', '-')} events in stacks, parse {h.get('parse_s', float('nan')):.2f}"
            f" + graph {h.get('graph_s', float('nan')):.2f} s, import {h.get('import_s', float('nan')):.2f} s"
        )


if __name__ == "__main__":
    main()
