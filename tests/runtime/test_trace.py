"""OTF2 traces from the runtime (``cctviz run --trace``, ``cctviz.profile(trace=...)``).

The archives are read back with the ``otf2`` package's own reader and with
Debian's ``otf2-print``, and compared with the profiles the same ranks wrote:
the tree rebuilt from Enter/Leave has the profile's paths, calls and exclusive
times; the collective records have the profile's calls and bytes.
"""

from __future__ import annotations

import re
import subprocess
import sys
import warnings
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import otf2
import pytest

import cctviz
from cctviz.runtime.launch import split_command
from cctviz.runtime.recorder import Recorder
from cctviz.runtime.trace import BYTES_ATTRIBUTE, TracingRecorder, replay

from .conftest import SCRIPTS, TORCHRUN, example_run, run_job
from .recorder_drive import _drive

OTF2_PRINT = "/usr/bin/otf2-print"


# ------------------------------------------------------------------ jobs
@pytest.fixture(scope="session")
def traced_ddp(tmp_path_factory):
    d = tmp_path_factory.mktemp("ddp-trace")
    out, _ = example_run(d / "run", "ddp", extra=("--trace", str(d / "trace")))
    return out, d / "trace"


@pytest.fixture(scope="session")
def traced_collectives(tmp_path_factory):
    d = tmp_path_factory.mktemp("coll-trace")
    run_job(
        [
            *TORCHRUN,
            "--standalone",
            "--nproc-per-node",
            "4",
            str(SCRIPTS / "collectives.py"),
            str(d / "run"),
            "2",
            str(d / "trace"),
        ]
    )
    return d / "run", d / "trace"


# ------------------------------------------------------------ trace -> tree
def rebuild(archive: Path) -> dict[str, dict]:
    """Per location name: the tree of region-name paths from Enter/Leave, with the
    collective records of each path (an independent reading with ``otf2``)."""
    out: dict[str, dict] = {}
    stacks: dict[str, list] = defaultdict(list)
    last: dict[str, int] = {}
    with otf2.reader.open(str(archive)) as tr:
        for loc, ev in tr.events:
            name = loc.name
            node = out.setdefault(name, {"paths": defaultdict(lambda: defaultdict(int))})
            paths = node["paths"]
            st = stacks[name]
            if st and name in last:  # exclusive time: to the region on top
                paths[tuple(st)]["time"] += ev.time - last[name]
            last[name] = ev.time
            if isinstance(ev, otf2.events.Enter):
                st.append(ev.region.name)
                paths[tuple(st)]["calls"] += 1
                paths[tuple(st)]["kind:" + ev.region.description] = 1
            elif isinstance(ev, otf2.events.Leave):
                assert st and st[-1] == ev.region.name, "Leave of a region that is not on top"
                st.pop()
            elif isinstance(ev, otf2.events.MpiCollectiveEnd):
                p = paths[tuple(st)]
                p["records"] += 1
                p["bytes"] += ev.attributes[next(iter(ev.attributes))]
                p["max_sent_recv"] += max(ev.size_sent, ev.size_received)
                node.setdefault("ops", Counter())[(tuple(st), str(ev.collective_op))] += 1
                node.setdefault("comms", set()).add(
                    (ev.communicator.name, len(ev.communicator.group.members))
                )
            elif isinstance(ev, (otf2.events.MpiSend, otf2.events.MpiRecv)):
                p = paths[tuple(st)]
                p["records"] += 1
                p["bytes"] += ev.msg_length
                peer = ev.receiver if isinstance(ev, otf2.events.MpiSend) else ev.sender
                node.setdefault("peers", set()).add((type(ev).__name__, peer))
        for name in stacks:
            assert not stacks[name], f"{name}: regions left open"
        out["_clock"] = tr.definitions.clock_properties.timer_resolution
        out["_locations"] = [(loc.name, loc.group.name) for loc in tr.definitions.locations]
    return out


def profile_paths(tree) -> dict[tuple[str, ...], dict]:
    f = tree.frame
    return {
        tuple(tree.path(i)): {
            "calls": int(f.loc[i, "calls"]),
            "time": int(f.loc[i, "time"]),
            "comm_bytes": int(np.nan_to_num(f.loc[i, "comm_bytes"])) if "comm_bytes" in f else 0,
            "kind": f.loc[i, "kind"],
        }
        for i in f.index
    }


def assert_tree_equal(trace_paths: dict, prof: dict, who: str) -> None:
    assert set(trace_paths) == set(prof), f"{who}: different paths"
    for path, m in prof.items():
        t = trace_paths[path]
        assert t["calls"] == m["calls"], f"{who} {path}: calls"
        assert t["kind:" + m["kind"]] == 1, f"{who} {path}: kind"
        # the trace's timestamps are the recorder's transition times (1 ns ticks)
        assert t["time"] == m["time"], f"{who} {path}: exclusive time"


# ------------------------------------------------------------- DDP example
def test_ddp_trace_has_a_location_per_rank(traced_ddp):
    out, trace = traced_ddp
    assert (trace / "traces.otf2").is_file()
    assert not (trace / ".cctviz-trace").exists(), "raw files are removed after the merge"
    t = rebuild(trace / "traces.otf2")
    assert t["_locations"] == [("rank 0", "rank 0"), ("rank 1", "rank 1")]
    assert t["_clock"] == 10**9
    assert cctviz.read(out).profiles["rank"].tolist() == [0, 1]


def test_ddp_trace_rebuilds_the_profile_tree(traced_ddp):
    out, trace = traced_ddp
    t = rebuild(trace / "traces.otf2")
    ens = cctviz.read(out)
    for r in (0, 1):
        prof = profile_paths(ens.profile(r))
        assert_tree_equal(t[f"rank {r}"]["paths"], prof, f"rank {r}")


def test_ddp_collective_records_equal_comm_contexts(traced_ddp):
    out, trace = traced_ddp
    t = rebuild(trace / "traces.otf2")
    ens = cctviz.read(out)
    for r in (0, 1):
        prof = profile_paths(ens.profile(r))
        paths = t[f"rank {r}"]["paths"]
        comm = {p: m for p, m in prof.items() if m["kind"] == "comm" and p[-1] != "wait"}
        assert any(p[1:3] == ("step", "backward") for p in comm), "the bucket all-reduces"
        for p, m in comm.items():
            assert paths[p]["records"] == m["calls"], f"rank {r} {p}: records"
            assert paths[p]["bytes"] == m["comm_bytes"], f"rank {r} {p}: bytes"
            # all-reduce and broadcast (all DDP does): comm_bytes = max(sent, received)
            assert paths[p]["max_sent_recv"] == m["comm_bytes"]
        # records only where the profile has comm contexts
        assert {p for p, v in paths.items() if v.get("records")} == set(comm)
        assert t[f"rank {r}"]["comms"] == {("WORLD (gloo)", 2)}


def test_otf2_print_lists_the_collectives(traced_ddp):
    out, trace = traced_ddp
    p = subprocess.run(
        [OTF2_PRINT, str(trace / "traces.otf2")], capture_output=True, text=True, check=True
    )
    rows = [ln for ln in p.stdout.splitlines() if ln.startswith("MPI_COLLECTIVE_END")]
    got: Counter = Counter()
    sent: Counter = Counter()
    pat = re.compile(r"MPI_COLLECTIVE_END\s+(\d+)\s+\d+\s+Operation: (\w+), .*Sent: (\d+)")
    for ln in rows:
        m = pat.match(ln)
        assert m, ln
        got[(int(m.group(1)), m.group(2))] += 1
        sent[int(m.group(1))] += int(m.group(3))
    ens = cctviz.read(out)
    ops = {"all_reduce": "ALLREDUCE", "broadcast": "BCAST"}
    for r in (0, 1):
        f = ens.profile(r).frame
        comm = f[(f["kind"] == "comm") & (f["name"] != "wait")]
        want = Counter()
        for name, calls in zip(comm["name"], comm["calls"], strict=True):
            want[(r, ops[name])] += int(calls)
        assert {k: v for k, v in got.items() if k[0] == r} == want
        assert sent[r] > 0
    n_begin = sum(ln.startswith("MPI_COLLECTIVE_BEGIN") for ln in p.stdout.splitlines())
    assert n_begin == len(rows)


# ----------------------------------------------- in-process, every collective
def test_in_process_trace_of_every_collective(traced_collectives):
    out, trace = traced_collectives
    t = rebuild(trace / "traces.otf2")
    ens = cctviz.read(out)
    assert [x[0] for x in t["_locations"]] == [f"rank {r}" for r in range(4)]
    for r in range(4):
        prof = profile_paths(ens.profile(r))
        node = t[f"rank {r}"]
        assert_tree_equal(node["paths"], prof, f"rank {r}")
        for p, m in prof.items():
            if m["kind"] == "comm" and p[-1] != "wait":
                assert node["paths"][p]["records"] == m["calls"], (r, p)
                assert node["paths"][p]["bytes"] == m["comm_bytes"], (r, p)
        ops = {op for (_p, op) in node["ops"]}
        assert {"CollectiveOp.ALLREDUCE", "CollectiveOp.BCAST", "CollectiveOp.BARRIER"} <= ops
        # one communicator per process group: the pair group {0, 1} on ranks 0 and 1
        expect = {("WORLD (gloo)", 4)} | ({("group 1 (gloo)", 2)} if r < 2 else set())
        assert node["comms"] == expect
        # point-to-point: even ranks send to rank + 1, odd ranks receive from rank - 1
        kind = "MpiSend" if r % 2 == 0 else "MpiRecv"
        assert node["peers"] == {(kind, r + 1 if r % 2 == 0 else r - 1)}


def test_broadcast_root_and_sizes(traced_collectives):
    _, trace = traced_collectives
    seen = 0
    with otf2.reader.open(str(trace / "traces.otf2")) as tr:
        for loc, ev in tr.events:
            if isinstance(ev, otf2.events.MpiCollectiveEnd) and ev.communicator.name.startswith(
                "WORLD"
            ):
                if str(ev.collective_op) == "CollectiveOp.BCAST":
                    assert ev.root == 0
                    is_root = loc.name == "rank 0"
                    assert (ev.size_sent, ev.size_received) == ((2400, 0) if is_root else (0, 2400))
                    assert ev.attributes[tr.definitions.attributes[0]] == 2400  # 300 float64
                    seen += 1
                if str(ev.collective_op) == "CollectiveOp.ALLGATHER":
                    assert (ev.size_sent, ev.size_received) == (4000, 16000)
    assert seen == 4 * 2  # 4 ranks x 2 steps
    assert tr.definitions.attributes[0].name == BYTES_ATTRIBUTE


# ------------------------------------------------------------ no processes
def test_replay_rebuilds_the_recorder_tree_exactly():
    clock = iter(range(0, 10**9, 7)).__next__
    rec = TracingRecorder("job", trace_dir=None, clock=clock)
    _drive(rec)
    ref = Recorder("job", clock=iter(range(0, 10**9, 7)).__next__)
    _drive(ref)
    assert ref.calls == rec.calls and ref.time == rec.time  # tracing changes nothing
    calls = [0] * len(rec.parent)
    excl = [0] * len(rec.parent)
    stack: list[int] = []
    t_prev = None
    for op, x in replay(rec.parent, rec.event_array()):
        if op == "t":
            if stack:
                excl[stack[-1]] += x - t_prev
            t_prev = x
        elif op == "E":
            stack.append(x)
            calls[x] += 1
        elif op == "L":
            assert stack.pop() == x
    assert calls == rec.calls
    # the re-opened step: the few ticks between the two optimizer hooks go to the
    # step's last phase in the trace, to "(outside steps)" and the step in the profile;
    # everything else is exact
    diff = {rec.name[c]: excl[c] - rec.time[c] for c in range(len(excl)) if excl[c] != rec.time[c]}
    assert set(diff) <= {"(outside steps)", "step", "other"} and sum(diff.values()) == 0


def test_comm_records_point_at_their_enter():
    rec = TracingRecorder("job", trace_dir=None, clock=iter(range(0, 10**6, 3)).__next__)
    g = rec.comm_group("WORLD (gloo)", "0", [0, 1])
    rec.enter_phase("forward")
    d = rec.enter_leaf("broadcast", "comm")
    rec.comm_record(rec.top, "broadcast", 80, 2, g, 0)
    rec.pop(d)
    ev, cm = rec.event_array(), rec.comm_array()
    assert cm.shape == (1, 7)
    assert rec.name[ev[cm[0, 0], 2]] == "broadcast"
    assert cm[0, 5] == 80 and np.all(ev[1:, 0] >= ev[:-1, 0])


def test_missing_otf2_names_the_extra(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "otf2", None)
    with pytest.raises(ImportError, match=r"cctviz\[scorep\]"):
        cctviz.profile(out=tmp_path / "run", trace=tmp_path / "trace")


def test_trace_option_of_cctviz_run():
    tokens, ours, script, args, _ = split_command(
        ["--nproc-per-node", "2", "--trace", "tr", "train.py", "--trace", "x"]
    )
    assert ours["trace"] == "tr" and script == "train.py" and args == ["--trace", "x"]


def test_batches_on_disk_make_one_archive(monkeypatch, tmp_path):
    """Many small batches appended to the raw file; one rank completes the set and merges."""
    import cctviz.runtime.trace as trace_mod

    monkeypatch.setattr(trace_mod, "_FLUSH_AT", 3 * 5)  # a batch every 5 events
    rec = TracingRecorder("job", trace_dir=tmp_path)
    for _ in range(50):
        rec.enter_phase("forward")
        d = rec.push("GPT", "module")
        rec.pop(d)
        rec.end_step()
    rec.finish()
    rec.close_trace({"rank": 0, "world_size": 1, "hostname": "here"})
    assert trace_mod.merge_when_complete(tmp_path) == tmp_path / "traces.otf2"
    t = rebuild(tmp_path / "traces.otf2")
    paths = t["rank 0"]["paths"]
    assert paths[("job", "step", "forward", "GPT")]["calls"] == 50
    assert paths[("job", "(outside steps)")]["calls"] == rec.calls[rec.outside] == 51
    assert t["_locations"] == [("rank 0", "rank 0")]
    assert trace_mod.merge_when_complete(tmp_path) is None  # written once


@pytest.mark.parametrize("fixture", ["traced_ddp", "traced_collectives"])
def test_round_trip_through_the_otf2_reader(fixture, request):
    """cctviz.read(the trace) gives the profile's tree back: the same call paths,
    and per rank the same calls, bytes and exclusive times (the trace keeps the
    profile's own clock at 1 ns: equal, within the timer's resolution)."""
    import numpy as np
    import pandas as pd

    out, trace = request.getfixturevalue(fixture)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prof = cctviz.read(out)
        tr = cctviz.read(trace, format="otf2")
    assert tr.n_profiles == prof.n_profiles and tr.meta["otf2"]["timer_resolution"] == 1e9
    a = pd.Series(np.arange(len(tr.tree)), index=tr.tree.callpaths.to_numpy())
    b = pd.Series(np.arange(len(prof.tree)), index=prof.tree.callpaths.to_numpy())
    assert set(a.index) == set(b.index)
    ia, ib = a[b.index].to_numpy(), b.to_numpy()
    assert (tr.tree.nodes["kind"].to_numpy()[ia] == prof.tree.nodes["kind"].to_numpy()[ib]).all()
    for metric in ("calls", "comm_bytes"):
        assert np.array_equal(tr.values(metric)[ia], prof.values(metric)[ib]), metric
    assert np.abs(tr.values("time")[ia] - prof.values("time")[ib]).max() <= 1.0  # ns
