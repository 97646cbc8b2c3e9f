"""Runs of the example training under ``cctviz run`` (2-4 gloo processes on CPU), shared by tests.

Every job runs once per test session (per xdist worker that needs it) in a
temporary folder; ``--standalone`` picks a free port, so jobs of parallel
workers do not collide.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import torch  # noqa: F401  - required (scripts/test.sh installs it): fail, never skip

import cctviz

collect_ignore = ["scripts"]  # job scripts run under torchrun, not modules to import

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "train.py"
SCRIPTS = Path(__file__).resolve().parent / "scripts"
CCTVIZ = [sys.executable, "-m", "cctviz.cli"]
TORCHRUN = [sys.executable, "-m", "torch.distributed.run"]


def run_job(
    cmd: list[str], timeout: float = 240, check: bool = True
) -> subprocess.CompletedProcess:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONWARNINGS": "ignore"}
    # a session of its own: past the timeout the launcher and every rank it started go
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT,
        start_new_session=True,
    )  # fmt: skip
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise
    p = subprocess.CompletedProcess(cmd, proc.returncode, out, err)
    if check and p.returncode != 0:
        raise AssertionError(
            f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stdout[-3000:]}\n{p.stderr[-6000:]}"
        )
    return p


def stop(job: subprocess.Popen) -> None:
    """Kill ``job``'s process group (the launcher and the ranks it started,
    which may outlive it)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(job.pid, signal.SIGKILL)
    job.wait()


def follow(out: Path, job: subprocess.Popen, **watch: Any) -> tuple[Any, list, list[int]]:
    """Watch ``job`` in this process until it ends: the watch, the alerts passed
    to ``on_alert`` as they came, the steps seen at each look while it ran."""
    w = None
    try:
        w = cctviz.watch(out, wait=120, **watch)
        came: list = []
        w.on_alert(came.append)
        w.start(every=0.2)
        seen = []
        while job.poll() is None:
            seen.append(len(w.steps()))
            time.sleep(0.2)
        assert job.wait() == 0
        assert w.wait(timeout=30)
        return w, came, seen
    finally:
        if w is not None:
            w.close()
        stop(job)


def example_run(
    out: Path,
    strategy: str,
    *,
    nproc: int = 2,
    steps: int = 8,
    warmup: int = 2,
    mode: str = "light",
    extra: tuple[str, ...] = (),
    script_args: tuple[str, ...] = (),
) -> tuple[Path, list[dict]]:
    """``cctviz run`` of examples/train.py; returns the run folder and each rank's timings.
    ``extra``: more options of ``cctviz run``; ``script_args``: of train.py."""
    timings = out.parent / f"{out.name}-timings-{{rank}}.json"
    run_job(
        [
            *CCTVIZ,
            "run",
            "--standalone",
            "--nproc-per-node",
            str(nproc),
            "--out",
            str(out),
            "--warmup",
            str(warmup),
            "--mode",
            mode,
            *extra,
            str(EXAMPLE),
            "--strategy",
            strategy,
            "--steps",
            str(steps),
            "--timings",
            str(timings),
            *script_args,
        ]
    )
    recs = [json.loads(Path(str(timings).format(rank=r)).read_text()) for r in range(nproc)]
    return out, recs


@pytest.fixture(scope="session")
def ddp_run(tmp_path_factory):
    return example_run(tmp_path_factory.mktemp("ddp") / "ddp-run", "ddp")


@pytest.fixture(scope="session")
def fsdp_run(tmp_path_factory):
    return example_run(tmp_path_factory.mktemp("fsdp") / "fsdp-run", "fsdp", steps=4, warmup=1)


@pytest.fixture(scope="session")
def fsdp1_run(tmp_path_factory):
    return example_run(tmp_path_factory.mktemp("fsdp1") / "fsdp1-run", "fsdp1", steps=4, warmup=1)


@pytest.fixture(scope="session")
def collectives_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("coll") / "coll-run"
    run_job(
        [
            *TORCHRUN,
            "--standalone",
            "--nproc-per-node",
            "4",
            str(SCRIPTS / "collectives.py"),
            str(out),
            "3",
        ]
    )
    return out


#: examples/train.py's configurations that tests/runtime/test_plan.py predicts
#: from a DDP run (name, train.py's options); one model (positions for 128)
PLAN_BASE = "--strategy ddp --block-size 128"
PLAN_CONFIGS = (
    ("fsdp", "--strategy fsdp --block-size 128"),
    ("batch2", f"{PLAN_BASE} --batch-size 16"),
    ("seq2", f"{PLAN_BASE} --seq-len 128"),
    ("accum2", f"{PLAN_BASE} --grad-accum 2"),
)
PLAN_ROUNDS = 3


@pytest.fixture(scope="session")
def plan_runs(tmp_path_factory):
    """PLAN_CONFIGS, each run PLAN_ROUNDS times right after a DDP run of its
    own (``ddp.NAME-R``) on 2 gloo ranks, in turns (scripts/configs.py: 12
    steps, 2 of warm-up, act_bytes): the folder that holds the runs
    (``NAME-R``)."""
    out = tmp_path_factory.mktemp("plan") / "runs"
    pairs = [(f"ddp.{name}={PLAN_BASE}", f"{name}={options}") for name, options in PLAN_CONFIGS]
    run_job(
        [
            *TORCHRUN, "--standalone", "--nproc-per-node", "2", str(SCRIPTS / "configs.py"),
            str(out), str(PLAN_ROUNDS), "12", *(item for pair in pairs for item in pair),
        ],
        timeout=400,
    )  # fmt: skip
    return out


#: the late-rank job: rank LATE sleeps SLEEP_MS before each all-reduce of region "exchange"
LATE, SLEEP_MS, LATE_STEPS = 2, 150, 3  # long enough that a loaded machine's jitter stays small


#: the traced late-rank job of the grouped timeline: 6 ranks, rank LATE late at every exchange
GROUPED_RANKS = 6


@pytest.fixture(scope="session")
def late_trace(tmp_path_factory):
    """An OTF2 trace of late_rank.py on GROUPED_RANKS gloo ranks, 4 steps,
    rank LATE sleeping 100 ms before each exchange."""
    d = tmp_path_factory.mktemp("late-trace")
    run_job([
        *TORCHRUN, "--standalone", "--nproc-per-node", str(GROUPED_RANKS),
        str(SCRIPTS / "late_rank.py"), str(d / "run"), "4", str(LATE), "100", str(d / "trace"),
    ])  # fmt: skip
    return d / "trace"


@pytest.fixture(scope="session")
def late_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("late") / "late-run"
    run_job(
        [
            *TORCHRUN,
            "--standalone",
            "--nproc-per-node",
            "3",
            str(SCRIPTS / "late_rank.py"),
            str(out),
            str(LATE_STEPS),
            str(LATE),
            str(SLEEP_MS),
        ]
    )
    return out
