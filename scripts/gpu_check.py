"""The runtime's GPU paths on a real NVIDIA GPU, checked: ``bash scripts/gpu_check.sh``.

Not part of the test suite (CI has no GPU). Runs, on the GPU of the machine:

1. ``cctviz run`` of the bundled GPT example (``examples/train.py --device
   cuda``): 1 rank DDP on NCCL, 1 rank FSDP2 on NCCL, 2 ranks DDP on gloo with
   CUDA tensors (NCCL cannot put two ranks on one GPU); ``--timeline`` where the
   ``otf2`` package is importable, ``--sample-hz 10`` (NVML tracks).
2. In this process: a torch.profiler trace (CUDA activity) of the same
   training, read back with cctviz; ``cctviz.profile()`` of the same steps
   (``mem_peak`` against ``torch.cuda.max_memory_allocated`` of an unprofiled
   step); the sampler on a busy matmul loop; paired overhead.
3. The plan (issue 37): from a 1-rank DDP run, batch x2 and FSDP2 predicted
   and run: step time within 10%, memory against the measured peak within 3%.

Every check prints one line ``PASS name: figures`` or ``FAIL name: figures``
(``SKIP`` where a precondition is missing, with the reason), and a summary
JSON goes to ``OUT/gpu_check.json``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "examples"))

import cctviz  # noqa: E402

RESULTS: list[dict] = []


def check(name: str, ok: bool | None, figures: str) -> None:
    """Print and keep one check's outcome (None: skipped)."""
    word = "SKIP" if ok is None else "PASS" if ok else "FAIL"
    print(f"{word} {name}: {figures}", flush=True)
    RESULTS.append({"check": name, "result": word, "figures": figures})


# ------------------------------------------------------------ cctviz run
def cctviz_run(
    out: Path,
    nproc: int,
    strategy: str,
    backend: str,
    steps: int,
    trace: bool,
    extra=(),
    script=(),
) -> int:
    cmd = [
        sys.executable,
        "-m",
        "cctviz.cli",
        "run",
        "--standalone",
        "--nproc-per-node",
        str(nproc),
    ]
    cmd += ["--out", str(out), "--warmup", "2", "--sample-hz", "10", *extra]
    cmd += ["--timeline"] if trace else []
    cmd += [str(ROOT / "examples" / "train.py"), "--device", "cuda", "--strategy", strategy]
    cmd += ["--backend", backend, "--steps", str(steps), "--batch-size", "16", "--seq-len", "128"]
    cmd += ["--timings", str(out.parent / f"{out.name}-timings-{{rank}}.json"), *script]
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=ROOT)
    (out.parent / f"{out.name}.log").write_text(p.stdout + "\n" + p.stderr)
    print(f"  {out.name}: rc {p.returncode} in {time.perf_counter() - t0:.1f} s", flush=True)
    if p.returncode:
        print(p.stderr[-3000:], flush=True)
    return p.returncode


def steps_of(tree) -> list[int]:
    return [i for i in range(len(tree)) if tree.path(i)[1:] == ("step",)]


def check_run(name: str, out: Path, nproc: int, traced: bool) -> None:
    ens = cctviz.read(out)
    tree = ens.tree
    check(f"{name}: ranks complete", bool(ens.profiles["ok"].all()), f"{len(ens.profiles)} ranks")
    m = tree.metrics
    if "gpu_time" not in m:
        check(f"{name}: gpu_time", False, "no gpu_time metric")
        return
    step = steps_of(tree)
    gpu = np.nansum(ens.values("gpu_time (inc)")[step], axis=0)
    wall = np.nansum(ens.values("time (inc)")[step], axis=0)
    calls = np.nansum(ens.values("calls")[step], axis=0)
    per_step_wall = wall / np.maximum(calls, 1)
    ok = bool((gpu > 0).all() and (gpu <= wall + per_step_wall).all())
    check(
        f"{name}: gpu_time of the steps positive, at most their wall time + one step of queue",
        ok,
        "per rank gpu/wall = "
        + ", ".join(f"{g / 1e6:.1f}/{w / 1e6:.1f} ms" for g, w in zip(gpu, wall, strict=True)),
    )
    names = np.asarray(tree.names)
    for phase in ("forward", "backward", "optimizer"):
        ids = [i for i in range(len(tree)) if tree.path(i)[1:] == ("step", phase)]
        if ids:
            g = np.nansum(ens.values("gpu_time (inc)")[ids])
            w = np.nansum(ens.values("time (inc)")[ids])
            check(
                f"{name}: {phase} gpu_time > 0",
                bool(g > 0),
                f"{g / 1e6:.2f} ms of {w / 1e6:.2f} ms wall",
            )
    timings = [
        json.loads((out.parent / f"{out.name}-timings-{r}.json").read_text()) for r in range(nproc)
    ]
    grad_bytes = timings[0].get("grad_bytes")
    comm = [
        i for i in range(len(tree)) if names[i] == "all_reduce" and tree.path(i)[1:2] == ("step",)
    ]
    if comm and grad_bytes:
        per_step = np.nansum(ens.values("comm_bytes")[comm], axis=0) / np.maximum(calls, 1)
        ok = bool(np.allclose(per_step, grad_bytes, rtol=0.01))
        check(
            f"{name}: all-reduce bytes per step = gradient bytes",
            ok,
            f"{per_step.tolist()} B vs {grad_bytes} B",
        )
    if "mem_peak (inc)" in m:
        peak = np.nanmax(ens.values("mem_peak (inc)")[step], axis=0)
        try:
            from cctviz.perfmodel.compare import annotate

            pred = annotate(out).memory["bytes"]["total"]
            check(  # within 2x either way (a known gap: docs/known-issues.md)
                f"{name}: perfmodel memory against the measured peak",
                bool(0.5 <= peak.max() / pred <= 2.0),
                f"predicted {pred / 2**20:.1f} MiB (model states + activations), measured "
                f"mem_peak {peak.max() / 2**20:.1f} MiB, ratio {peak.max() / pred:.2f}",
            )
        except Exception as e:  # noqa: BLE001 - report, go on
            check(f"{name}: perfmodel memory", False, f"{type(e).__name__}: {e}")
    gpu_util = "gpu_util (inc)" in m
    check(
        f"{name}: sampler NVML tracks",
        gpu_util,
        f"metrics {sorted(k for k in m if k.startswith(('gpu_', 'pcie')))}",
    )
    if traced:
        tl = cctviz.read_timeline(out)
        same = np.nansum(tl.ensemble().values("time"), axis=0)
        want = np.nansum(ens.values("time"), axis=0)
        check(
            f"{name}: timeline total time = profile's",
            bool(np.allclose(same, want, rtol=1e-6)),
            f"{(same / 1e6).round(2).tolist()} vs {(want / 1e6).round(2).tolist()} ms; counters "
            f"{sorted(set(tl.counters['track']))}",
        )


# ------------------------------------------------------------ in process
def model_and_batches(steps: int):
    from gpt import GPT, GPTConfig

    torch.manual_seed(0)
    model = GPT(GPTConfig(block_size=128)).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    x = torch.randint(0, model.config.vocab_size, (steps, 16, 128), device="cuda")
    return model, opt, x


def train_steps(model, opt, x, n: int) -> list[float]:
    out = []
    for k in range(n):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        _, loss = model(x[k % len(x)], x[k % len(x)])
        loss.backward()
        opt.step()
        torch.cuda.synchronize()
        out.append(time.perf_counter() - t0)
    return out


def kineto_check(out: Path) -> None:
    model, opt, x = model_and_batches(8)
    train_steps(model, opt, x, 3)
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        train_steps(model, opt, x, 4)
    path = out / "kineto.pt.trace.json"
    prof.export_chrome_trace(str(path))
    events = json.loads(path.read_text())["traceEvents"]
    gpu_cats = {"kernel", "gpu_memcpy", "gpu_memset"}
    want = sum(e.get("dur", 0) for e in events if e.get("cat") in gpu_cats and e.get("ph") == "X")
    n_kernels = sum(1 for e in events if e.get("cat") == "kernel")
    tree = cctviz.read(path)
    tree = tree.tree if hasattr(tree, "tree") else tree
    to_us = {"ns": 1e-3, "us": 1.0, "ms": 1e3}[tree.units["gpu_time"]]
    got = np.nansum(tree.metrics["gpu_time"].to_numpy()) * to_us
    check(
        "kineto: sum of GPU activity durations = reader's gpu_time total",
        bool(abs(got - want) <= 1e-6 * max(want, 1) + 1),
        f"{got:.1f} us vs {want:.1f} us in the trace ({n_kernels} kernels)",
    )
    kinds = tree.nodes["kind"].astype(str).to_numpy()
    parent = np.asarray(tree.parent)
    k_ids = np.flatnonzero(kinds == "kernel")
    under = kinds[parent[k_ids]] if k_ids.size else np.array([])
    check(
        "kineto: kernels under the ops that launched them",
        bool(k_ids.size and np.isin(under, ["op", "runtime", "cpu_op", "cuda_runtime"]).all()),
        f"{k_ids.size} kernel nodes; parents' kinds {sorted(set(under.tolist()))}",
    )
    with gzip.open(out / "kineto.pt.trace.json.gz", "wt") as f:
        f.write(path.read_text())
    path.unlink()


def mem_peak_check(out: Path) -> None:
    model, opt, x = model_and_batches(8)
    train_steps(model, opt, x, 3)  # optimizer states exist: steady-state steps
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    train_steps(model, opt, x, 2)  # as profiled below: the 2nd step holds the 1st's logits
    plain_peak = torch.cuda.max_memory_allocated()
    with cctviz.profile(out=out / "mem", warmup=0):
        train_steps(model, opt, x, 2)
    t = cctviz.read(out / "mem")
    t = t.profile(0) if hasattr(t, "profile") else t
    step = steps_of(t)
    peak = float(np.nanmax(t.metrics["mem_peak (inc)"].to_numpy()[step])) if step else float("nan")
    rel = abs(peak - plain_peak) / plain_peak
    check(
        "mem_peak of a step = torch.cuda.max_memory_allocated of an unprofiled step",
        bool(rel < 0.01),
        f"{peak / 2**20:.2f} MiB vs {plain_peak / 2**20:.2f} MiB ({100 * rel:.3f}% apart)",
    )


def plan_check(out: Path, steps: int = 12) -> None:
    """Issue 37 on the GPU: a 1-rank DDP run on NCCL with act_bytes; its plan's
    predictions of batch x2 and of FSDP2, each against that configuration run:
    step time within 10%, predicted memory (``Plan.memory``'s terms: states,
    activations, buffers and the DDP run's unexplained rest) against the
    measured peak of a step (``mem_peak``) within 3%."""
    from cctviz.perfmodel import plan

    model = ("--block-size", "128")
    cases = {
        "plan-ddp": ("ddp", model),
        "plan-ddp-batch32": ("ddp", (*model, "--batch-size", "32")),
        "plan-fsdp2": ("fsdp", model),
    }
    for name, (strategy, script) in cases.items():
        rc = cctviz_run(out / name, 1, strategy, "nccl", steps, False, ("--act-bytes",), script)
        if rc != 0:
            check(f"{name}: cctviz run", False, f"exit {rc} (log in {name}.log)")
            return
    base = plan(out / "plan-ddp")
    asks = {"plan-ddp": {}, "plan-ddp-batch32": {"batch": 32}, "plan-fsdp2": {"strategy": "fsdp"}}
    for name, ask in asks.items():
        predicted = base.predict(interconnect="nvlink4", **ask)
        ens = cctviz.read(out / name)
        measured = plan(ens).measured()
        in_step = [i for i in range(len(ens.tree)) if ens.tree.path(i)[1:2] == ("step",)]
        peaks = ens.values("mem_peak")[in_step] if "mem_peak" in ens.exc_metrics else [np.nan]
        peak = float(np.nanmax(peaks))  # the largest of any context of the measured steps
        t_err = predicted["step_time [s]"] / measured["step_time [s]"] - 1
        m_err = predicted["memory [B]"] / peak - 1
        check(
            f"{name}: predicted step time within 10% of the run's",
            bool(abs(t_err) <= 0.10),
            f"{predicted['step_time [s]'] * 1e3:.2f} ms vs {measured['step_time [s]'] * 1e3:.2f} ms"
            f" ({100 * t_err:+.1f}%)",
        )
        check(
            f"{name}: predicted memory within 3% of the step's measured peak",
            bool(abs(m_err) <= 0.03),
            f"{predicted['memory [B]'] / 2**20:.2f} MiB (params "
            f"{predicted['params [B]'] / 2**20:.2f} + optimizer "
            f"{predicted['optimizer [B]'] / 2**20:.2f} + activations "
            f"{predicted['activations [B]'] / 2**20:.2f} + buffers "
            f"{predicted['buffers [B]'] / 2**20:.2f} + unexplained "
            f"{predicted['unexplained [B]'] / 2**20:.2f}) vs peak {peak / 2**20:.2f} MiB"
            f" ({100 * m_err:+.1f}%)",
        )


def gpu_util_check(out: Path) -> None:
    a = torch.randn(8192, 8192, device="cuda")
    with cctviz.profile(out=out / "util", sample_hz=20):
        with cctviz.region("matmul"):
            t0 = time.perf_counter()
            while time.perf_counter() - t0 < 3.0:
                for _ in range(10):
                    a = (a @ a).clamp_(-1, 1)
                torch.cuda.synchronize()
        with cctviz.region("idle"):
            time.sleep(1.0)
    t = cctviz.read(out / "util")
    t = t.profile(0) if hasattr(t, "profile") else t
    names = list(t.names)
    m = t.metrics
    if "gpu_util" not in m:
        check("sampler: gpu_util of a busy matmul loop > 80%", False, f"no gpu_util in {sorted(m)}")
        return
    busy = float(m["gpu_util"].iat[names.index("matmul")])
    idle = float(m["gpu_util"].iat[names.index("idle")])
    check(
        "sampler: gpu_util of a busy matmul loop > 80%",
        busy > 80,
        f"{busy:.1f}% busy, {idle:.1f}% idle",
    )
    power = {
        k: float(m[k].iat[names.index("matmul")])
        for k in m
        if k in ("gpu_energy", "pcie_tx_bytes", "pcie_rx_bytes")
    }
    check(
        "sampler: power and PCIe counters",
        "gpu_energy" in power and power["gpu_energy"] > 0,
        ", ".join(f"{k} {v:.3g}" for k, v in power.items()) + " (J, B in the matmul region)",
    )


#: profiler settings the overhead is measured for (beside plain steps)
OVERHEAD_CONFIGS = {
    "light, no GPU timer": {"cuda": False},
    "light (GPU time per phase)": {},
    "light, GPU time per context": {"gpu_time": "context"},
    "light + sampler 10 Hz": {"sample_hz": 10},
    "detailed": {"mode": "detailed"},
}


def overhead_check(out: Path, reps: int = 5, steps: int = 15) -> None:
    model, opt, x = model_and_batches(8)
    train_steps(model, opt, x, 5)
    ratios: dict[str, list[float]] = {k: [] for k in OVERHEAD_CONFIGS}
    plain_all = []
    for r in range(reps):
        plain = statistics.median(train_steps(model, opt, x, steps))
        plain_all.append(plain)
        names = list(OVERHEAD_CONFIGS)
        for name in names if r % 2 == 0 else names[::-1]:
            with cctviz.profile(
                out=out / f"ovh-{r}-{len(ratios[name])}", warmup=0, **OVERHEAD_CONFIGS[name]
            ):
                med = statistics.median(train_steps(model, opt, x, steps))
            ratios[name].append(med / plain)
    for name, rs in ratios.items():
        check(
            f"overhead on the GPU: {name} / plain step time",
            True,
            f"median {statistics.median(rs):.3f}x (min {min(rs):.3f}, max {max(rs):.3f}); plain "
            f"{1e3 * statistics.median(plain_all):.2f} ms per step; {reps} reps of {steps} steps",
        )
    t = cctviz.read(out / "ovh-0-0")
    t = t.profile(0) if hasattr(t, "profile") else t
    step = steps_of(t)
    calls = t.metrics["calls"].to_numpy()
    print(
        f"  contexts per step (light): {len(t)} nodes, {calls.sum() / max(calls[step].sum(), 1):.0f} calls per step",
        flush=True,
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="gpu-check-out")
    ap.add_argument("--steps", type=int, default=12)
    a = ap.parse_args()
    out = Path(a.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    if not torch.cuda.is_available():
        check("a CUDA GPU", False, "torch.cuda.is_available() is False")
        return 1
    try:
        import otf2  # noqa: F401

        traced = True
    except ImportError:
        traced = False
    print(
        f"GPU: {torch.cuda.get_device_name(0)}; torch {torch.__version__}; "
        f"CUDA {torch.version.cuda}; otf2 package: {traced}",
        flush=True,
    )
    if not traced:
        check("--timeline runs", None, "no otf2 package on this machine: runs without the trace")
    runs = [  # the 2-rank run times every context (--gpu-time context), the others phases
        ("ddp-nccl-1", 1, "ddp", "nccl", ()),
        ("fsdp2-nccl-1", 1, "fsdp", "nccl", ()),
        ("ddp-gloo-2", 2, "ddp", "gloo", ("--gpu-time", "context")),
    ]
    for name, nproc, strategy, backend, extra in runs:
        rc = cctviz_run(out / name, nproc, strategy, backend, a.steps, traced, extra)
        if rc != 0:
            check(f"{name}: cctviz run", False, f"exit {rc} (log in {name}.log)")
            continue
        try:
            check_run(name, out / name, nproc, traced)
        except Exception as e:  # noqa: BLE001 - one failure must not hide the others
            check(f"{name}: checks", False, f"{type(e).__name__}: {e}")
    for fn in (kineto_check, mem_peak_check, plan_check, gpu_util_check, overhead_check):
        try:
            fn(out)
        except Exception as e:  # noqa: BLE001
            check(fn.__name__, False, f"{type(e).__name__}: {e}")
    (out / "gpu_check.json").write_text(json.dumps(RESULTS, indent=1))
    bad = [r for r in RESULTS if r["result"] == "FAIL"]
    print(f"{len(RESULTS) - len(bad)} of {len(RESULTS)} checks passed or skipped", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
