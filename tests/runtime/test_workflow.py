"""``cctviz run --workflow``: a coupled workflow of plain and torch.distributed
components, every process profiled into one run folder (issue 22); a failing
component is flagged and the others stopped with their data kept."""

from __future__ import annotations

import json
import re
import textwrap

import numpy as np
import pytest

import cctviz
from cctviz.runtime.launch import LaunchError
from cctviz.runtime.workflow import load_workflow

from .conftest import CCTVIZ, ROOT, run_job

SCRIPTS = ROOT / "tests" / "runtime" / "scripts" / "workflow"


def workflow_file(tmp_path, text: str):
    f = tmp_path / "workflow.toml"
    f.write_text(textwrap.dedent(text).replace("SCRIPTS", str(SCRIPTS)))
    return f


@pytest.fixture(scope="module")
def coupled(tmp_path_factory):
    d = tmp_path_factory.mktemp("workflow")
    stage = d / "stage"
    wf = workflow_file(
        d,
        f"""
        [component.sim]
        command = ["python", "produce.py", "6", "{stage}"]
        processes = 2
        cwd = "SCRIPTS"
        [component.train]
        command = ["python", "train.py", "4", "{stage}"]
        processes = 2
        torch = true
        cwd = "SCRIPTS"
        """,
    )
    p = run_job([*CCTVIZ, "run", "--workflow", str(wf), "--out", str(d / "run")])
    return d / "run", stage, p


def test_every_process_profiled_into_one_run(coupled):
    run, stage, _ = coupled
    ens = cctviz.read(run)
    prof = ens.profiles
    assert prof["rank"].tolist() == [0, 1, 2, 3]
    assert prof["component"].tolist() == ["sim", "sim", "train", "train"]
    assert prof["component_rank"].tolist() == [0, 1, 0, 1]
    assert prof["ok"].all()
    names = set(ens.tree.names)
    assert {"compute", "write"} <= names  # the plain component's regions
    assert {"forward", "backward", "all_reduce"} <= names  # the torch component's contexts
    writes = np.flatnonzero(np.asarray(ens.tree.names) == "write")
    calls = ens.values("calls")
    assert calls[writes].sum(axis=0).tolist() == [6, 6, 0, 0]  # per process, its own
    assert len(list(stage.glob("snap-*.bin"))) == 12
    info = json.loads((run / "run.json").read_text())
    assert info["expected_world_size"] == 4
    assert {k: v["status"] for k, v in info["components"].items()} == {
        "sim": "complete",
        "train": "complete",
    }


def test_files_between_components_match_by_path(coupled):
    """The simulation's snapshots (written, then renamed into place) are the
    files the training reads: the same paths, listed in each process's profile,
    and the bytes read are the bytes written."""
    run, stage, _ = coupled
    metas = [cctviz.read(f).meta for f in sorted(run.glob("rank-*.cctviz"))]
    opens = {m["component"]: [] for m in metas}
    for m in metas:
        opens[m["component"]] += m["files"]
    written = {o[2] for o in opens["sim"] if o[3] == "w"}
    assert written == {str(f) for f in stage.glob("snap-*.bin")}  # renamed into place
    read = [o for o in opens["train"] if o[3] == "r" and o[2].startswith(str(stage))]
    assert read and {o[2] for o in read} <= written
    assert all(o[4] == 4096 for o in read)  # the size written
    assert all(o[1].endswith("/write") for o in opens["sim"] if o[3] == "w")


def test_a_failing_component_is_flagged_and_the_others_stopped(tmp_path):
    wf = workflow_file(
        tmp_path,
        """
        [component.bad]
        command = ["python", "fail.py"]
        cwd = "SCRIPTS"
        [component.slow]
        command = ["python", "wait.py"]
        cwd = "SCRIPTS"
        """,
    )
    out = tmp_path / "run"
    p = run_job(
        [*CCTVIZ, "run", "--workflow", str(wf), "--out", str(out), "--grace", "1"],
        check=False,
        timeout=120,
    )
    assert p.returncode == 1, p.stderr[-2000:]
    info = json.loads((out / "run.json").read_text())["components"]
    assert info["bad"]["status"] == "failed (exit 3)" and info["bad"]["exit"] == [3]
    assert info["slow"]["status"].startswith("stopped")
    with pytest.warns(UserWarning, match="not complete"):
        ens = cctviz.read(out)
    prof = ens.profiles.set_index("component")
    assert not prof["ok"].any()  # both flagged, both readable
    assert "SIGTERM" in prof.loc["slow", "status"]
    wait = np.flatnonzero(np.asarray(ens.tree.names) == "wait")
    # what the stopped one measured is kept: about a second of waiting
    assert ens.values("time")[wait, 1].sum() > 0.5e9


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "no [component.NAME] table"),
        ('[component.a]\ncommand = ["bash", "x.sh"]', "only Python commands"),
        ('[component.a]\ncommand = ["python", "nowhere.py"]', "no script nowhere.py"),
        ('[component.a]\ncommand = ["python", "-m", "x"]\nprocesses = 0', "positive integer"),
        ('[component.a]\ncommand = ["python", "-m", "x"]\nthreads = 2', "unknown key"),
        ("[component.a\n", "not TOML"),
    ],
)
def test_bad_workflow_files_say_what_is_wrong(tmp_path, text, problem):
    f = tmp_path / "wf.toml"
    f.write_text(text)
    with pytest.raises(LaunchError, match=re.escape(problem)) as e:
        load_workflow(f)
    assert str(f) in str(e.value)
