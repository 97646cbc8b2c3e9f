"""Overhead of the cctviz runtime on the example training, against torch.profiler.

    python benchmarks/runtime_overhead.py [--reps 5] [--steps 40] [--nproc 2] [--strategy ddp]

Runs examples/train.py on CPU processes (gloo) in six configurations,
alternating them in every repetition so that drifts of the machine hit all
alike:

- unprofiled (torchrun);
- ``cctviz run --mode light`` and ``--mode detailed``;
- ``cctviz run --mode light --trace DIR`` (an OTF2 trace as well; the
  archive is written after the training loop, so it is not in steps/s);
- torch.profiler with its default activities, and with ``with_stack=True``.

Speed is the steps/s of the training loop as the script itself measures it
(median step time over the steps after the first 5, mean over ranks), so
start-up and the profilers' post-processing are left out. Prints the median
over repetitions and each configuration's ratio to unprofiled.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "train.py"
SKIP = 5  # first steps: allocator warm-up, DDP bucket rebuild


def configs(nproc: int) -> dict[str, list[str]]:
    py = sys.executable
    run = [py, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(nproc)]
    cctviz = [py, "-m", "cctviz.cli", "run", "--standalone", "--nproc-per-node", str(nproc)]
    return {
        "unprofiled": [*run, str(EXAMPLE)],
        "cctviz light": [*cctviz, "--mode", "light", "--out", "{out}", str(EXAMPLE)],
        "cctviz detailed": [*cctviz, "--mode", "detailed", "--out", "{out}", str(EXAMPLE)],
        "cctviz light+trace": [
            *cctviz,
            *("--mode", "light", "--out", "{out}", "--trace", "{out}/trace"),
            str(EXAMPLE),
        ],
        "torch.profiler": [*run, str(EXAMPLE), "--torch-profiler", "default"],
        "torch.profiler stack": [*run, str(EXAMPLE), "--torch-profiler", "stack"],
    }


def steps_per_s(cmd: list[str], args: argparse.Namespace, tmp: Path) -> float:
    timings = tmp / "t-{rank}.json"
    out = tempfile.mkdtemp(dir=tmp)
    cmd = [c.replace("{out}", out) for c in cmd]
    cmd += ["--strategy", args.strategy, "--steps", str(args.steps), "--timings", str(timings)]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONWARNINGS": "ignore"}
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{p.stderr[-3000:]}")
    per_rank = []
    for r in range(args.nproc):
        ns = json.loads(Path(str(timings).format(rank=r)).read_text())["step_ns"][SKIP:]
        per_rank.append(statistics.median(ns))
    return 1e9 / statistics.mean(per_rank)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--nproc", type=int, default=2)
    ap.add_argument("--strategy", default="ddp", choices=("ddp", "fsdp", "fsdp1"))
    args = ap.parse_args()
    cfg = configs(args.nproc)
    results: dict[str, list[float]] = {k: [] for k in cfg}
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for rep in range(args.reps):
            names = list(cfg)
            names = names[rep % len(names) :] + names[: rep % len(names)]  # rotate the order
            for name in names:
                results[name].append(steps_per_s(cfg[name], args, tmp))
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
    print(f"{'configuration':<22}{'steps/s (median)':>18}{'min':>8}{'max':>8}{'vs unprofiled':>15}")
    for k, v in results.items():
        med = statistics.median(v)
        print(f"{k:<22}{med:>18.2f}{min(v):>8.2f}{max(v):>8.2f}{med / base:>14.3f}x")
    # per-repetition ratios: each repetition's configurations ran back to back
    light = [a / b for a, b in zip(results["cctviz light"], results["unprofiled"])]
    print(f"\ncctviz light / unprofiled per repetition: {', '.join(f'{x:.3f}' for x in light)}")
    print(f"median overhead of light mode: {(1 - statistics.median(light)) * 100:+.1f}%")
    traced = [a / b for a, b in zip(results["cctviz light+trace"], results["unprofiled"])]
    print(
        f"median overhead of light mode with --trace: {(1 - statistics.median(traced)) * 100:+.1f}%"
    )


if __name__ == "__main__":
    main()
