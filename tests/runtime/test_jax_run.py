"""``cctviz run`` of JAX programs (issue 39): each process traced by jax.profiler,
the run read as the processes' devices and host threads, the collectives
matched across the processes. Real jax.distributed jobs on CPU (gloo)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import cctviz
from cctviz.ops import collectives

pytest.importorskip("jax")
pytestmark = pytest.mark.slow  # jax is in the main test environment, not the core suite's

SCRIPTS = Path(__file__).parent / "scripts"


def _cctviz_run(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "cctviz.cli", "run", *args], cwd=cwd, capture_output=True,
        text=True, timeout=300,
    )  # fmt: skip


def test_a_data_parallel_jax_job(tmp_path):
    """2 processes, each a device; a pmean of the gradient of a 64 x 64 weight
    each step: the data-parallel prediction of the bytes (the parameters' bytes,
    once a step) equals what the trace measured, on every process."""
    done = _cctviz_run("--nproc-per-node", "2", "--out", "run", str(SCRIPTS / "jax_dp.py"), "3",
                       cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    run = tmp_path / "run"
    facts = json.loads((run / "run.json").read_text())
    assert facts["framework"] == "jax" and facts["exit_code"] == 0
    ens = cctviz.read(run)
    assert sorted(ens.profiles["kind"]) == ["device", "device", "host", "host"]
    assert sorted(ens.profiles["process"]) == [0, 0, 1, 1]
    # one tree per process: the jitted step under each device, its all-reduce a collective
    comm = ens.tree.nodes["kind"].to_numpy() == "comm"
    assert set(ens.tree.nodes["collective"][comm]) == {"all_reduce"}
    tl = cctviz.read_timeline(run)
    inst = collectives.instances(tl)
    assert sorted(set(inst["step"])) == [0, 1, 2]
    assert (inst.groupby("instance")["rank"].nunique() == 2).all()
    parameters = 64 * 64 * 4  # the weight the step averages the gradient of
    per_step = inst.groupby(["step", "rank"])["bytes"].sum()
    assert (per_step == parameters).all()
    assert "no steps" not in done.stderr


def test_a_program_without_steps_is_said_to_have_none(tmp_path):
    done = _cctviz_run("--out", "run", str(SCRIPTS / "jax_nosteps.py"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "marks no steps" in done.stderr
    ens = cctviz.read(tmp_path / "run")
    assert ens.meta["xplane"]["no_steps"]
    assert ens.profiles["kind"].tolist() == ["device", "device", "host"]
    per_call = ens.values("comm_bytes") / np.maximum(ens.values("calls"), 1)
    comm = ens.tree.nodes["kind"].to_numpy() == "comm"
    assert np.allclose(per_call[comm][:, :2], 32 * 32 * 4)


def test_torch_only_options_are_refused_for_a_jax_program(tmp_path):
    done = _cctviz_run("--mode", "detailed", str(SCRIPTS / "jax_nosteps.py"), cwd=tmp_path)
    assert done.returncode == 2
    assert "--mode: not for JAX programs" in done.stderr
    done = _cctviz_run("--nnodes", "2", "--jax", str(SCRIPTS / "jax_nosteps.py"), cwd=tmp_path)
    assert done.returncode == 2 and "--nnodes must be 1" in done.stderr
