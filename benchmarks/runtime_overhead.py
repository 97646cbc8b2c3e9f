"""Overhead of the cctviz runtime on the example training: plain, profiled, traced.

    python benchmarks/runtime_overhead.py [--reps 5] [--steps 40] [--nproc 2] [--strategy ddp]
        [--configs all | unprofiled,cctviz light,...] [--cap 1000] [--hot-path 200000]

Runs examples/train.py on CPU processes (gloo), the configurations alternating
in every repetition (the order rotated) so that drifts of the machine hit all
alike. By default:

- unprofiled (torchrun);
- ``cctviz run --mode light`` (the profile only);
- ``cctviz run --mode light --timeline`` (every transition logged as well; the
  OTF2 archive is written after the training loop, so it is not in steps/s);
- the same with ``--timeline-limit 1000`` (``--cap``): the cap is hit after
  about 10 steps, so most steps run past it.

``--configs all`` adds ``--mode detailed`` and torch.profiler (default
activities, and ``with_stack=True``).

Speed is the steps/s of the training loop as the script itself measures it
(median step time over the steps after the first 5, mean over ranks), so
start-up and the profilers' post-processing are left out. Prints the median
over repetitions, each configuration's ratio to unprofiled and the median of
the per-repetition ratios; for the traced runs the transitions per step and
the bytes (archive per transition and per OTF2 event, raw per step); and the
recorder's hot path in process (a module's push and pop, ns per transition:
plain, logging, logging past the cap), which resolves what the end-to-end
ratios cannot.

Measured (2026-11-26, this 2-core machine shared with other jobs, numpy 2.4,
torch 2.13 CPU; ``--reps 7 --steps 40``, DDP, 2 ranks):

    configuration                   steps/s (median)   vs unprofiled   per-rep median
    unprofiled                      14.83              1.000x
    cctviz light                    14.55              0.981x          0.975
    cctviz light+timeline           14.35              0.968x          0.995
    cctviz light+timeline capped    13.56              0.914x          0.950

    per repetition the ratios range over +-10% (0.78-1.14 for light): the
    end-to-end figures cannot tell the timeline's cost from noise (the capped
    run, which does less work per step than the uncapped, came out slower).
    timeline: 103 transitions per step per rank; archive 12.9 B per transition
    (11.5 B per OTF2 event, 1.13 OTF2 events per transition); raw files 2,585 B
    per step (24 B per transition + 56 B per collective) while the job runs.
    hot path: recorder 475 ns per transition, with logging 724 ns (+249 ns), past
    the cap 624 ns; 249 ns x 103 transitions = 26 us of a 69 ms step (0.04%).
    The runtime's budget (light mode within 3% of the plain run, issue 4):
    the timeline adds about a tenth of light mode's own cost per transition
    (the recorder's ~0.5 us plus the torch hooks' ~2-3 us per call, DESIGN's
    figure, not measured here), so it stays within the budget wherever light
    mode does. Not in steps/s: the merge after the job, about 7 s per million
    transitions of a rank (one writer, a Python loop per event; 12 MB of archive).

Measured (2026-12-07, same machine, ``--configs "unprofiled,cctviz light,cctviz
light+mem_peak,cctviz light+act_bytes" --reps 5 --steps 30``): light 1.010x,
light+mem_peak 1.010x, light+act_bytes 1.011x the unprofiled steps/s (per
repetition 0.990, 1.007 and 0.982; ranges +-10-19%: noise). ``--mem-peak``
tracks only up to the first measured step, before the steps this benchmark
times (after step 5): in those steps torch's profiler with memory events cost
+13% to +24% of the example GPT's step in process (3 paired runs of 10 steps),
nothing after.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "train.py"
SKIP = 5  # first steps: allocator warm-up, DDP bucket rebuild


def configs(nproc: int, capped: int) -> dict[str, list[str]]:
    py = sys.executable
    run = [py, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(nproc)]
    cctviz = [py, "-m", "cctviz.cli", "run", "--standalone", "--nproc-per-node", str(nproc)]
    light = [*cctviz, "--mode", "light", "--out", "{out}"]
    return {
        "unprofiled": [*run, str(EXAMPLE)],
        "cctviz light": [*light, str(EXAMPLE)],
        "cctviz detailed": [*cctviz, "--mode", "detailed", "--out", "{out}", str(EXAMPLE)],
        "cctviz light+timeline": [*light, "--timeline", str(EXAMPLE)],
        # the allocator's events tracked up to the first measured step (issue 37)
        "cctviz light+mem_peak": [*light, "--mem-peak", str(EXAMPLE)],
        "cctviz light+act_bytes": [*light, "--act-bytes", str(EXAMPLE)],
        # the cap hit after a few steps: what the transitions past it cost
        "cctviz light+timeline capped": [
            *light,
            *("--timeline", "--timeline-limit", str(capped)),
            str(EXAMPLE),
        ],
        "torch.profiler": [*run, str(EXAMPLE), "--torch-profiler", "default"],
        "torch.profiler stack": [*run, str(EXAMPLE), "--torch-profiler", "stack"],
    }


#: what the default run measures (``--configs all`` adds detailed mode and torch.profiler)
DEFAULT_CONFIGS = (
    "unprofiled",
    "cctviz light",
    "cctviz light+timeline",
    "cctviz light+timeline capped",
)


def trace_size(out: Path) -> dict[str, float]:
    """Per rank: transitions kept, transitions dropped, steps, collectives, and the
    archive's bytes and OTF2 events (read back by cctviz), of a ``--timeline`` run."""
    import warnings

    import cctviz

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the capped run's warning: expected
        ens = cctviz.read(out)
        tl = cctviz.read_timeline(out)
    p = ens.profiles
    comm = (ens.tree.nodes["kind"] == "comm").to_numpy()
    archive = sum(f.stat().st_size for f in (out / "timeline").rglob("*") if f.is_file())
    n = len(p)
    return {
        "transitions": float(p["timeline_events"].sum()) / n,
        "dropped": float(p["timeline_dropped"].sum()) / n,
        "steps": float(p["steps"].sum()) / n,
        "collectives": float(ens.values("calls")[comm].sum()) / n,
        "archive_bytes": archive / n,
        "otf2_events": tl.meta["otf2"]["events"] / n,
    }


def steps_per_s(
    cmd: list[str], args: argparse.Namespace, tmp: Path, sizes: dict | None = None
) -> float:
    timings = tmp / "t-{rank}.json"
    out = tempfile.mkdtemp(dir=tmp)
    cmd = [c.replace("{out}", out) for c in cmd]
    cmd += ["--strategy", args.strategy, "--steps", str(args.steps), "--timings", str(timings)]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONWARNINGS": "ignore"}
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{p.stderr[-3000:]}")
    if sizes is not None and (Path(out) / "timeline").is_dir():
        sizes.update(trace_size(Path(out)))
    per_rank = []
    for r in range(args.nproc):
        ns = json.loads(Path(str(timings).format(rank=r)).read_text())["step_ns"][SKIP:]
        per_rank.append(statistics.median(ns))
    return 1e9 / statistics.mean(per_rank)


def hot_path(n: int, tmp: Path, reps: int = 5) -> dict[str, float]:
    """ns per transition of the recorder alone (a module's push and pop are two
    transitions; the fastest of ``reps``, the recorders alternating): plain, logging
    to raw files (no cap), and logging past its cap."""
    from cctviz.runtime.recorder import Recorder
    from cctviz.runtime.trace import TracingRecorder

    def plain() -> Recorder:
        return Recorder("bench")

    def logging() -> Recorder:
        return TracingRecorder("bench", trace_dir=tempfile.mkdtemp(dir=tmp), limit=None)

    def capped() -> Recorder:
        return TracingRecorder("bench", trace_dir=tempfile.mkdtemp(dir=tmp), limit=1000)

    makers = {"recorder": plain, "recorder+timeline": logging, "recorder+timeline capped": capped}
    out: dict[str, list[float]] = {k: [] for k in makers}
    for _ in range(reps):
        for name, make in makers.items():
            rec = make()
            rec.enter_phase("forward")
            push, pop = rec.push, rec.pop
            t0 = time.perf_counter_ns()
            for _ in range(n):
                pop(push("blocks.0", "module"))
            out[name].append((time.perf_counter_ns() - t0) / (2 * n))
            rec.finish()
            if rec.tracing:
                rec.close_trace({"rank": 0, "world_size": 1})
    return {k: min(v) for k, v in out.items()}


def main() -> None:
    sys.path.insert(0, str(ROOT))  # this checkout's cctviz, as the jobs (run from ROOT) get
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--nproc", type=int, default=2)
    ap.add_argument("--strategy", default="ddp", choices=("ddp", "fsdp", "fsdp1"))
    ap.add_argument(
        "--configs",
        default=",".join(DEFAULT_CONFIGS),
        help="comma-separated configurations, or 'all' (default: %(default)s)",
    )
    ap.add_argument(
        "--cap", type=int, default=1000, help="--timeline-limit of the capped configuration"
    )
    ap.add_argument("--hot-path", type=int, default=200_000, help="push/pop pairs timed in process")
    args = ap.parse_args()
    cfg = configs(args.nproc, args.cap)
    if args.configs != "all":
        names = [c.strip() for c in args.configs.split(",")]
        unknown = [c for c in names if c not in cfg]
        if unknown or "unprofiled" not in names:
            raise SystemExit(f"--configs: give 'unprofiled' and some of {list(cfg)}; not {unknown}")
        cfg = {k: cfg[k] for k in names}
    results: dict[str, list[float]] = {k: [] for k in cfg}
    sizes: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        hot = hot_path(args.hot_path, tmp)
        for rep in range(args.reps):
            names = list(cfg)
            names = names[rep % len(names) :] + names[: rep % len(names)]  # rotate the order
            for name in names:
                results[name].append(steps_per_s(cfg[name], args, tmp, sizes.setdefault(name, {})))
            print(
                f"rep {rep + 1}/{args.reps}: "
                + ", ".join(f"{k} {v[-1]:.2f}" for k, v in results.items()),
                flush=True,
            )
    base = statistics.median(results["unprofiled"])
    print(
        f"\nexample GPT, {args.strategy}, {args.nproc} CPU processes (gloo), {args.steps} steps, "
        f"{args.reps} repetitions; steps/s = 1 / median step time after step {SKIP}"
    )
    w = max(len(k) for k in results) + 2
    print(
        f"{'configuration':<{w}}{'steps/s (median)':>18}{'min':>8}{'max':>8}{'vs unprofiled':>15}"
    )
    for k, v in results.items():
        med = statistics.median(v)
        print(f"{k:<{w}}{med:>18.2f}{min(v):>8.2f}{max(v):>8.2f}{med / base:>14.3f}x")
    # per-repetition ratios: each repetition's configurations ran back to back
    print("\nper repetition, against the configuration run beside it (median; range):")
    pairs = [(k, "unprofiled") for k in results if k != "unprofiled"]
    pairs += [(k, "cctviz light") for k in results if "timeline" in k and "cctviz light" in results]
    for a, b in pairs:
        r = [x / y for x, y in zip(results[a], results[b], strict=True)]
        print(
            f"  {a} / {b}: {statistics.median(r):.3f} ({min(r):.3f}-{max(r):.3f}); "
            f"overhead {(1 - statistics.median(r)) * 100:+.1f}%"
        )
    print("\ntimeline size, per rank (archive: the OTF2 files; raw: 24 B per transition + 56 B")
    print("per collective, written while the job runs, removed after the merge):")
    for k, z in sizes.items():
        if not z:
            continue
        raw = 24 * z["transitions"] + 56 * z["collectives"]
        print(
            f"  {k}: {z['steps']:.0f} steps, {z['transitions']:,.0f} transitions kept "
            f"({z['transitions'] / z['steps']:.1f} per step), {z['dropped']:,.0f} dropped; "
            f"archive {z['archive_bytes'] / 1e3:,.1f} kB = "
            f"{z['archive_bytes'] / z['transitions']:.1f} B per transition, "
            f"{z['archive_bytes'] / z['otf2_events']:.1f} B per OTF2 event "
            f"({z['otf2_events'] / z['transitions']:.2f} events per transition); "
            f"raw {raw / z['steps']:,.0f} B per step"
        )
    print(f"\nhot path in process ({args.hot_path:,} module push/pop pairs, fastest of 5):")
    for k, v in hot.items():
        print(f"  {k}: {v:.0f} ns per transition ({v / hot['recorder']:.2f}x the recorder)")
    extra = hot["recorder+timeline"] - hot["recorder"]
    tl = sizes.get("cctviz light+timeline") or {}
    if tl and "cctviz light" in results:
        per_step = tl["transitions"] / tl["steps"]
        step_s = 1 / statistics.median(results["cctviz light"])
        print(
            f"  logging adds {extra:.0f} ns per transition: x {per_step:.0f} transitions per step "
            f"= {extra * per_step / 1e3:.1f} us per step, {extra * per_step / 1e9 / step_s:.4%} "
            f"of a {step_s * 1e3:.0f} ms step"
        )


if __name__ == "__main__":
    main()
