"""``cctviz run --workflow``: a coupled workflow of plain and torch.distributed
components, every process profiled into one run folder (issue 22); a failing
component is flagged and the others stopped with their data kept; with
``--timeline``, the whole workflow in one OTF2 archive, read back with the
``otf2`` package, Debian's ``otf2-print`` and cctviz."""

from __future__ import annotations

import json
import re
import subprocess
import textwrap
from collections import Counter

import numpy as np
import pytest

import cctviz
from cctviz.runtime.launch import LaunchError
from cctviz.runtime.workflow import load_workflow

from .conftest import CCTVIZ, ROOT, run_job
from .test_trace import OTF2_PRINT, assert_tree_equal, profile_paths, rebuild

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
    p = run_job([*CCTVIZ, "run", "--workflow", str(wf), "--out", str(d / "run"), "--timeline"])
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


def run_beside_a_slow_one(tmp_path, name: str, script: str, *options: str):
    """A workflow of component ``name`` (``script``) beside one that would wait a
    minute (``wait.py``: the launcher stops it); its run folder and the process."""
    wf = workflow_file(
        tmp_path,
        f"""
        [component.{name}]
        command = ["python", "{script}"]
        cwd = "SCRIPTS"
        [component.slow]
        command = ["python", "wait.py"]
        cwd = "SCRIPTS"
        """,
    )
    out = tmp_path / "run"
    p = run_job(
        [*CCTVIZ, "run", "--workflow", str(wf), "--out", str(out), *options],
        check=False,
        timeout=180,
    )
    return out, p


def test_a_failing_component_is_flagged_and_the_others_stopped(tmp_path):
    out, p = run_beside_a_slow_one(tmp_path, "bad", "fail.py", "--grace", "1")
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


# ------------------------------------------------- the workflow's OTF2 archive
def _rank_metas(run):
    return [cctviz.read(f).meta for f in sorted(run.glob("rank-*.cctviz"))]


def test_one_archive_lists_every_components_locations(coupled):
    run, _, _ = coupled
    p = subprocess.run(
        [OTF2_PRINT, "-G", str(run / "timeline" / "traces.otf2")],
        capture_output=True,
        text=True,
        check=True,
    )
    locations = re.findall(r'^LOCATION\s+\d+\s+Name: "([^"]+)"', p.stdout, re.M)
    want = [f"{m['component']} rank {m['component_rank']}" for m in _rank_metas(run)]
    assert locations == want == ["sim rank 0", "sim rank 1", "train rank 0", "train rank 1"]
    props = re.findall(
        r'^LOCATION_PROPERTY\s+Location: "([^"]+)".*Name: "cctviz::component".*Value: "(\w+)"',
        p.stdout,
        re.M,
    )
    assert props == [(n, n.split()[0]) for n in want]
    # the training's communicator holds the training's processes only
    groups = re.findall(r'^GROUP\s+\d+\s+Name: "WORLD \(gloo\)".*Members: (.*)$', p.stdout, re.M)
    assert len(groups) == 1 and re.findall(r'"([^"]+)"', groups[0]) == want[2:]
    assert not (run / "timeline" / ".cctviz-trace").exists(), "raw files removed"


def test_the_archive_reads_back_exactly(coupled):
    """Per process, the tree of Enter/Leave equals its profile (paths, calls,
    exclusive times) and the collective records equal its comm contexts (calls,
    bytes); cctviz's reader gives the component columns and the same bytes."""
    run, _, _ = coupled
    archive = run / "timeline" / "traces.otf2"
    t = rebuild(archive)
    ens = cctviz.read(run)
    for r, m in enumerate(_rank_metas(run)):
        who = f"{m['component']} rank {m['component_rank']}"
        prof = profile_paths(ens.profile(r))
        assert_tree_equal(t[who]["paths"], prof, who)
        comm = {q: v for q, v in prof.items() if v["kind"] == "comm" and q[-1] != "wait"}
        assert bool(comm) == (m["component"] == "train")
        for q, v in comm.items():
            assert t[who]["paths"][q]["records"] == v["calls"], f"{who} {q}"
            assert t[who]["paths"][q]["bytes"] == v["comm_bytes"], f"{who} {q}"
    back = cctviz.read(archive)
    assert back.profiles["component"].tolist() == ens.profiles["component"].tolist()
    assert back.profiles["rank"].tolist() == [0, 1, 2, 3]
    moved = np.nansum(back.values("comm_bytes"), axis=0)
    assert moved.tolist() == np.nansum(ens.values("comm_bytes"), axis=0).tolist()
    assert moved[2:].min() > 0 and moved[:2].max() == 0  # the training's all-reduces


def test_the_samples_are_otf2_metric_records(coupled):
    """Every sample of every process is a Metric record on its location; read
    back, the CPU time (accumulated) totals the last sample and the RSS (a
    gauge, a max) peaks at the largest sample."""
    run, _, _ = coupled
    archive = run / "timeline" / "traces.otf2"
    p = subprocess.run([OTF2_PRINT, str(archive)], capture_output=True, text=True, check=True)
    per_location = Counter(
        int(ln.split()[1]) for ln in p.stdout.splitlines() if ln.startswith("METRIC ")
    )
    metas = _rank_metas(run)
    assert [per_location[k] for k in range(4)] == [len(m["samples"]["ts"]) for m in metas]
    back = cctviz.read(archive)
    assert back.tree.units["cpu_time"] == "ns" and back.aggregation["rss"] == "max"
    for r, m in enumerate(metas):
        tracks = m["samples"]["tracks"]
        assert back.values("cpu_time")[:, r].sum() == pytest.approx(tracks["cpu_time"][-1])
        assert np.nanmax(back.values("rss")[:, r]) == max(tracks["rss"])


def test_the_workflow_timeline_has_components_and_counters(coupled):
    run, _, _ = coupled
    tl = cctviz.read_timeline(run)
    assert tl.profiles["component"].tolist() == ["sim", "sim", "train", "train"]
    tracks = tl.counters.groupby("profile")["track"].unique()
    assert all({"cpu_util", "rss"} <= set(v) for v in tracks)
    # drawn, a process's counters stop where it ends (not carried to the run's end)
    view = cctviz.TimelineView(tl, counter_bands="lane")  # one band per process
    d = view._data
    peak = np.asarray(d["counter_peak"]).reshape(d["k"], -1)
    ends = tl.events.groupby("profile")["end"].max()
    t0, t1 = tl.span
    bin_start = t0 + view.bin_edges[:-1] * 1e9  # the bins are not even: start-up is compressed
    lane_profile = np.asarray(view._lane_order)[np.asarray(d["counter_lane"])]
    checked = 0
    for row, prof in enumerate(lane_profile):
        after = bin_start > max(ends[prof], tl.counters.query("profile == @prof")["ts"].max())
        assert np.isnan(peak[row, after]).all()
        checked += int(after.sum())
    assert checked > 0  # the simulation ends well before the training
    # the trace's time of every process is its profile's
    traced = np.nansum(tl.ensemble().values("time"), axis=0)
    assert traced.tolist() == np.nansum(cctviz.read(run).values("time"), axis=0).tolist()


def test_a_component_killed_mid_run_leaves_the_others_readable(tmp_path):
    """SIGKILL (the OOM killer's way): the killed process writes nothing; it is
    flagged, in run.json and as a missing profile of its component, and what the
    other component measured is in its profile and in the workflow's archive."""
    out, p = run_beside_a_slow_one(tmp_path, "killed", "killed.py", "--grace", "4", "--timeline")
    assert p.returncode == 1, p.stderr[-2000:]
    info = json.loads((out / "run.json").read_text())["components"]
    assert info["killed"]["status"] == "killed (SIGKILL)"
    assert info["slow"]["status"].startswith("stopped")
    with pytest.warns(UserWarning, match="not complete"):
        ens = cctviz.read(out)
    prof = ens.profiles.set_index("component")
    assert prof.loc["killed", "status"] == "missing"
    assert "SIGTERM" in prof.loc["slow", "status"]
    wait = np.flatnonzero(np.asarray(ens.tree.names) == "wait")
    assert ens.values("time")[wait, 1].sum() > 2e9  # about 4 s of waiting kept
    tl = cctviz.read_timeline(out)
    assert tl.profiles["component"].tolist() == ["slow"] and tl.profiles["rank"].tolist() == [1]
    assert np.nansum(tl.ensemble().values("time")) == np.nansum(ens.values("time")[:, 1])


def test_the_sankey_groups_by_component(coupled):
    """``group_by="component"`` (a profiles column): a super node per component
    on the left, its distribution over that component's processes only (the
    others did not run it: missing, not 0), each process's value its own
    inclusive time; its contexts flow from it, grouped by name within it
    ("train/forward"), never into the other component's."""
    run, _, _ = coupled
    ens = cctviz.read(run)
    view = cctviz.SankeyView(ens, group_by="component")
    assert view.group_by == "component"
    groups = view.nodes["group"].astype(str)
    tops = view.nodes[~groups.str.contains("/")]
    assert set(tops["group"]) == {"sim", "train"} and set(tops["column"]) == {0}
    inner = groups[groups.str.contains("/")]
    assert {"train/forward", "train/backward", "sim/compute"} <= set(inner)
    edges = view.graph.edges
    comp_of = groups.str.split("/").str[0].to_numpy()
    assert (comp_of[edges["source"]] == comp_of[edges["target"]]).all()  # no flow across
    nodes = tops.set_index("group")
    per = view.graph.per_profile
    roots = np.flatnonzero(np.asarray(ens.tree.parent) < 0)
    inc = ens.values("time (inc)")[roots]  # each component's program root, per process
    comp = ens.profiles["component"].to_numpy()
    for name, row in zip(nodes.index, nodes.itertuples(), strict=True):
        got = per.loc[int(tops.index[nodes.index.get_loc(name)])].to_numpy()
        mine = comp == name
        assert np.isnan(got[~mine]).all()
        assert got[mine].tolist() == pytest.approx(np.nansum(inc[:, mine], axis=0).tolist())
        assert row.mean == pytest.approx(got[mine].mean())


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
