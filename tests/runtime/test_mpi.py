"""MPI components of a workflow (issue 22): ``mpi = true`` starts them with
``mpirun``, every process profiled and numbered by its MPI rank, and mpi4py's
calls recorded as torch.distributed's are (calls, bytes, time, under the
caller's context). A real 2-process mpi4py halo exchange beside a plain
component; the program counts what it sent itself."""

from __future__ import annotations

import json
import os
import subprocess

import numpy as np
import pytest

import cctviz
from cctviz.model.collectives import bus_factor
from cctviz.runtime.launch import LaunchError
from cctviz.runtime.workflow import load_workflow

from .conftest import CCTVIZ, ROOT, run_job
from .test_workflow import workflow_file

STEPS = 5


@pytest.fixture(scope="module")
def mpi_run(tmp_path_factory):
    d = tmp_path_factory.mktemp("mpi")
    wf = workflow_file(
        d,
        f"""
        [component.halo]
        command = ["python", "halo.py", "{STEPS}", "{d / "stats"}"]
        processes = 2
        mpi = true
        cwd = "SCRIPTS"
        [component.sim]
        command = ["python", "produce.py", "3", "{d / "stage"}"]
        cwd = "SCRIPTS"
        """,
    )
    run_job([*CCTVIZ, "run", "--workflow", str(wf), "--out", str(d / "run")])
    stats = [json.loads((d / "stats" / f"halo-{r}.json").read_text()) for r in range(2)]
    return d / "run", stats


def comm_leaves(tree) -> dict[str, dict[str, float]]:
    """call path -> metrics of each communication leaf of a profile."""
    is_comm = (tree.nodes["kind"] == "comm").to_numpy()
    m = tree.metrics[is_comm]
    paths = tree.callpaths.to_numpy()[is_comm]
    return {p: m.iloc[k].to_dict() for k, p in enumerate(paths)}


def test_mpi_processes_are_numbered_by_their_mpi_rank(mpi_run):
    run, stats = mpi_run
    prof = cctviz.read(run).profiles
    assert prof["component"].tolist() == ["halo", "halo", "sim"]
    assert prof["rank"].tolist() == [0, 1, 2]
    assert prof["component_rank"].tolist() == [0, 1, 0]
    assert prof["ok"].all()
    halo = prof[prof["component"] == "halo"]
    # the profile of component rank r is the process that MPI calls rank r
    assert halo["pid"].tolist() == [s["pid"] for s in stats]
    assert [s["rank"] for s in stats] == [0, 1] and halo["world_size"].tolist() == [2, 2]
    assert halo["backend"].tolist() == ["mpi", "mpi"]
    info = json.loads((run / "run.json").read_text())["components"]
    assert info["halo"]["launcher"] == "mpirun" and info["halo"]["status"] == "complete"
    assert info["sim"]["launcher"] == "cctviz"


def test_mpi_calls_carry_the_bytes_the_program_sent(mpi_run):
    run, stats = mpi_run
    for r, s in enumerate(stats):
        leaves = comm_leaves(cctviz.read(run / f"rank-{r:05d}.cctviz"))
        by_name = {p.rsplit("/", 1)[1]: (p, v) for p, v in leaves.items()}
        path, sr = by_name["sendrecv"]
        assert path.endswith("/halo/sendrecv")  # under the program's region
        assert sr["calls"] == s["sendrecv_calls"] == 2 * STEPS
        assert sr["comm_bytes"] == s["sendrecv_bytes"]
        path, ar = by_name["all_reduce"]  # Allreduce (buffers) and allreduce (objects)
        assert path.endswith("/residual/all_reduce")
        assert ar["calls"] == s["allreduce_calls"] + s["object_allreduce_calls"]
        assert ar["comm_bytes"] == s["allreduce_bytes"] + s["object_allreduce_bytes"]
        assert ar["bus_bytes"] == pytest.approx(ar["comm_bytes"] * bus_factor("all_reduce", 2))
        path, bc = by_name["broadcast"]
        assert path.endswith("/residual/broadcast")
        assert (bc["calls"], bc["comm_bytes"]) == (s["bcast_calls"], s["bcast_bytes"])
        assert by_name["barrier"][1]["calls"] == 1
        assert all(v["comm_time"] > 0 for v in leaves.values())
    # the plain component made no MPI calls
    assert comm_leaves(cctviz.read(run / "rank-00002.cctviz")) == {}


def test_mpi_communication_by_context(mpi_run):
    """The MPI leaves are what ``by_context`` reports, as for torch.distributed's."""
    from cctviz.ops.comm import by_context

    run, stats = mpi_run
    ens = cctviz.read(run)
    table = by_context(ens).set_index("operation")
    assert table.loc["sendrecv", "context"].endswith("/halo")
    halo = (ens.profiles["component"] == "halo").to_numpy()
    mean_bytes = np.mean([s["sendrecv_bytes"] for s in stats]) * halo.sum() / len(halo)
    assert table.loc["sendrecv", "MB_mean"] == pytest.approx(mean_bytes / 1e6)


def test_an_mpi_component_without_mpirun_says_so(tmp_path):
    wf = workflow_file(
        tmp_path,
        """
        [component.halo]
        command = ["python", "halo.py", "1", "stats"]
        processes = 2
        mpi = true
        cwd = "SCRIPTS"
        """,
    )
    out = tmp_path / "run"
    env = {**os.environ, "PATH": str(tmp_path / "empty")}
    p = subprocess.run(
        [*CCTVIZ, "run", "--workflow", str(wf), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=ROOT,
    )
    assert p.returncode == 2, p.stderr[-2000:]
    assert "component 'halo': mpi = true needs mpirun" in p.stderr
    assert not (out / "run.json").exists()  # nothing was started


def test_mpi_and_torch_together_are_refused(tmp_path):
    f = tmp_path / "wf.toml"
    f.write_text('[component.a]\ncommand = ["python", "-m", "x"]\nmpi = true\ntorch = true\n')
    with pytest.raises(LaunchError, match="torchrun or by mpirun, not both") as e:
        load_workflow(f)
    assert str(f) in str(e.value)
