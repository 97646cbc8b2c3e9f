"""The Kineto reader on traces recorded here with the real ``torch.profiler``
(:mod:`tests.readers.kineto_torch`): every option combination that changes the
events, one rank in this process (main thread and a second thread running
backward) and a 2-rank gloo DDP job. The reference figures come from the events.

With ``with_stack=True`` torch writes ``ProfilerStep#N`` (and every
``record_function``) as an annotation that opens inside the Python frames of
``profiler.step()`` and closes inside the next one: it outlives the frames it
starts in, which is what these traces are for.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from filelock import FileLock

import cctviz
from tests.readers.kineto_torch import record, record_ddp

VARIANTS = {  # side: backward on other threads too
    "stack+shapes": {"with_stack": True, "record_shapes": True, "side": True},
    "stack+modules+memory": {"with_stack": True, "with_modules": True, "profile_memory": True},
    "shapes+memory": {"record_shapes": True, "profile_memory": True},
    "plain": {"side": True},
}
DDP = ("ddp rank 0", "ddp rank 1")  # with_stack and record_shapes
NAMES = [*VARIANTS, *DDP]
STACK = {"stack+shapes", "stack+modules+memory", *DDP}
READ = {"cpu_op", "user_annotation", "python_function"}  # the CPU categories of these traces


@pytest.fixture(scope="session")
def traces(tmp_path_factory) -> dict[str, Path]:
    """Recorded once per test session (shared by the xdist workers)."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # this run's folder, common to the workers
    folder = base / "kineto_torch_traces"
    paths = {name: folder / f"{name}.json" for name in VARIANTS}
    paths.update(zip(DDP, (folder / "ddp" / f"rank{r}.json" for r in (0, 1))))
    with FileLock(str(folder) + ".lock"):
        if not (folder / "done").exists():
            folder.mkdir(exist_ok=True)
            for name, options in VARIANTS.items():
                record(paths[name], **options)
            record_ddp(folder / "ddp")
            (folder / "done").write_text("")
    return paths


@cache
def _events(path: Path) -> tuple[dict, list[dict]]:
    doc = json.loads(path.read_text())
    return doc, [e for e in doc["traceEvents"] if e.get("ph") == "X" and e.get("cat") in READ]


def _event_nodes(t: cctviz.Tree) -> np.ndarray:
    return np.flatnonzero(~t.nodes["kind"].isin(["process", "thread", "device"]).to_numpy())


def union_length(spans: list[tuple[float, float]]) -> float:
    """The length of the union of intervals (a plain sweep, not the reader's code)."""
    spans = sorted(spans)
    busy, (lo, hi) = 0.0, spans[0]
    for a, b in spans[1:]:
        if a > hi:
            busy, lo, hi = busy + hi - lo, a, b
        else:
            hi = max(hi, b)
    return busy + hi - lo


def test_the_traces_hold_what_the_options_record(traces):
    for name in NAMES:
        doc, ev = _events(traces[name])
        cats = Counter(e["cat"] for e in ev)
        assert (cats["python_function"] > 0) == (name in STACK), name
        assert cats["cpu_op"] > 100 and cats["user_annotation"] >= 3
        names = {e["name"] for e in ev}
        assert {"ProfilerStep#2", "ProfilerStep#3", "ProfilerStep#4"} <= names
        assert "autograd::engine::evaluate_function: AddmmBackward0" in names
        assert any(n.startswith("nn.Module: ") for n in names) == (name in STACK)
        memory = any(e.get("name") == "[memory]" for e in doc["traceEvents"])
        assert memory == ("memory" in name)
        shapes = any("Input Dims" in e["args"] for e in ev if e["cat"] == "cpu_op")
        assert shapes == ("shapes" in name or name in DDP)
        # (with_stack also records frames of other Python threads of the process,
        # such as pytest-xdist's, with tid 0)
        side = {e["tid"] for e in ev if e["name"] == "side"}
        if name in DDP:
            assert doc["distributedInfo"]["world_size"] == 2
            # gloo runs the bucket all-reduce on its own threads
            assert any(n.startswith("gloo:all_reduce") for n in names)
            assert len({e["tid"] for e in ev if e["cat"] == "user_annotation"}) >= 2
        elif VARIANTS[name].get("side"):  # a "side" thread per active step
            assert len(side) == 3 and sum(e["name"] == "side" for e in ev) == 3
            assert {e["tid"] for e in ev if e["cat"] == "cpu_op"} >= side
        else:
            assert not side


@pytest.mark.parametrize("name", NAMES)
def test_one_node_per_event_and_nothing_clamped(traces, name):
    doc, ev = _events(traces[name])
    t = cctviz.read(traces[name], merge=False)
    nodes = _event_nodes(t)
    assert Counter(t.nodes["name"].to_numpy()[nodes]) == Counter(e["name"] for e in ev)
    kinds = t.nodes["kind"].to_numpy()[nodes]
    cats = Counter(e["cat"] for e in ev)
    assert (kinds == "function").sum() == cats["python_function"]
    assert (
        np.isin(kinds, ["op", "region", "comm"]).sum() == cats["cpu_op"] + cats["user_annotation"]
    )
    k = t.meta["kineto"]
    assert k["cpu_events"] == len(ev) and k["clamped"] == 0 and k["overlapped"] == 0
    if name in STACK:  # the annotations outlive frames: attached higher, frames trimmed
        assert k["reattached"] > 0 and k["frames_trimmed"] > 0
    else:
        assert k["reattached"] == 0 and k["frames_trimmed"] == 0
    assert (t.metrics["time"] >= 0).all()


@pytest.mark.parametrize("name", NAMES)
def test_steps_hold_all_that_ran_inside_them(traces, name):
    """ProfilerStep#N: inclusive time == dur, and its subtree is exactly the events
    that ran inside it on its thread (ops, annotations and Python frames)."""
    _, ev = _events(traces[name])
    for merge in (False, True):
        t = cctviz.read(traces[name], merge=merge)
        names, inc, end = t.nodes["name"].to_numpy(), t.metrics["time (inc)"].to_numpy(), t.end
        steps = [e for e in ev if e["name"].startswith("ProfilerStep#")]
        assert len(steps) == 3
        for s in steps:
            (node,) = np.flatnonzero(names == s["name"])
            assert inc[node] == pytest.approx(s["dur"], rel=1e-12)
            if merge:
                continue
            lo, hi = s["ts"], s["ts"] + s["dur"]
            inside = Counter(
                e["name"]
                for e in ev
                if e["tid"] == s["tid"]
                and e is not s
                and lo <= e["ts"]
                and e["ts"] + e["dur"] <= hi
            )
            assert Counter(names[node + 1 : end[node]]) == inside, s["name"]
            assert sum(n.startswith("aten::") for n in inside.elements()) > 50


@pytest.mark.parametrize("name", NAMES)
def test_no_time_lost_or_counted_twice(traces, name):
    """cpu_ops and annotations keep their dur; each thread's inclusive time is the
    time it was busy (the union of its events' intervals); merging keeps the sums."""
    _, ev = _events(traces[name])
    t = cctviz.read(traces[name], merge=False)
    nodes, m = t.nodes, t.metrics
    inc = m["time (inc)"].to_numpy()
    hard = _event_nodes(t)
    hard = hard[nodes["kind"].to_numpy()[hard] != "function"]
    ours: Counter = Counter()
    for i in hard:
        ours[nodes["name"][i]] += inc[i]
    theirs: Counter = Counter()
    for e in ev:
        if e["cat"] != "python_function":
            theirs[e["name"]] += e["dur"]
    assert ours.keys() == theirs.keys()
    for n in theirs:
        assert ours[n] == pytest.approx(theirs[n], rel=1e-9), n
    for i in np.flatnonzero(nodes["kind"] == "thread"):
        spans = [(e["ts"], e["ts"] + e["dur"]) for e in ev if str(e["tid"]) == nodes["id"][i]]
        # ts + dur at ts ~ 5e12 us rounds to 1e-3 us
        assert inc[i] == pytest.approx(union_length(spans), rel=1e-9, abs=1e-2)
    merged = cctviz.read(traces[name])
    assert merged.metrics["time"].sum() == pytest.approx(m["time"].sum(), rel=1e-12)
    assert merged.metrics["calls"].sum() == len(ev)


def test_second_thread_backward_under_its_annotation(traces):
    t = cctviz.read(traces["stack+shapes"])
    names = t.nodes["name"].to_numpy()
    sides = np.flatnonzero(names == "side")
    assert len(sides) == 3  # one thread per active step, all its work inside "side"
    for side in sides:
        assert t.nodes["kind"][t.parent[side]] == "thread"
        assert names[t.children(t.parent[side])].tolist() == ["side"]
        below = set(names[side + 1 : t.end[side]])
        assert "autograd::engine::evaluate_function: AddmmBackward0" in below


def test_ddp_ranks_unify(traces):
    ens = cctviz.read_ensemble([traces[n] for n in DDP])
    assert ens.profiles["rank"].tolist() == [0, 1]
    assert ens.profiles["backend"].tolist() == ["gloo", "gloo"]
    tree = ens.tree
    steps = np.flatnonzero(tree.nodes["name"].str.startswith("ProfilerStep#").to_numpy())
    data = ens.long_table.reset_index()
    for s in steps:  # each step is one node of the unified tree, measured on both ranks
        assert sorted(data.loc[data["node"] == s, "profile"]) == [0, 1]
    # gloo's all-reduce of the 676 float parameters: 2704 B per call, counted once
    for n in DDP:
        t = cctviz.read(traces[n])
        _, ev = _events(traces[n])
        calls = sum(e["name"] == "gloo:all_reduce" for e in ev)
        assert t.metrics["comm_bytes"].sum() == 2704 * calls
        assert t.metrics["bus_bytes"].sum() == 2704 * calls  # 2(n-1)/n = 1 for 2 ranks


def test_memory_counters_follow_the_allocator(traces):
    """torch.profiler(profile_memory=True): the allocated track is the allocator's
    Total Allocated after each [memory] event, on the timeline's clock; it agrees
    with the Bytes deltas (their running sum from the first total)."""
    doc = json.loads(traces["shapes+memory"].read_text())
    mem = sorted(
        (e for e in doc["traceEvents"] if e.get("name") == "[memory]"), key=lambda e: e["ts"]
    )
    assert len(mem) > 20 and {e["args"]["Device Type"] for e in mem} == {0}
    tl = cctviz.read_timeline(traces["shapes+memory"])
    c = tl.counters
    assert set(c["track"]) == {"memory allocated (cpu)"}  # the host reserves nothing
    assert tl.units["memory allocated (cpu)"] == "B" and "memory_from_bytes" not in tl.meta
    total = np.asarray([e["args"]["Total Allocated"] for e in mem], dtype=float)
    delta = np.asarray([e["args"]["Bytes"] for e in mem], dtype=float)
    np.testing.assert_array_equal(c["value"], total)
    assert c["value"].iloc[-1] == mem[-1]["args"]["Total Allocated"]
    np.testing.assert_array_equal(total, total[0] - delta[0] + np.cumsum(delta))
    base = doc["baseTimeNanoseconds"]
    want = np.asarray([base + round(e["ts"] * 1000) for e in mem], dtype=np.int64)
    assert np.abs(c["ts"].to_numpy() - want).max() <= 1  # whole ns
    t0, t1 = tl.span
    assert t0 <= c["ts"].min() and c["ts"].max() <= t1


def test_a_folder_of_rank_traces_is_one_timeline(traces):
    """The DDP job's folder (rank0.json, rank1.json): one profile per rank, on the
    epoch (baseTimeNanoseconds), and every gloo all-reduce of one rank meets the
    other's. torch 2.13's gloo writes no record_param_comms, so no sequence number
    is recorded: the calls match by their order."""
    from cctviz.ops.collectives import instances

    folder = traces["ddp rank 0"].parent
    tl = cctviz.read_timeline(folder)
    assert tl.profiles["rank"].tolist() == [0, 1] and tl.n_profiles == 2
    assert tl.profiles["file"].tolist() == [str(folder / "rank0.json"), str(folder / "rank1.json")]
    assert tl.span[0] > 1_700_000_000 * 10**9  # epoch ns
    both = cctviz.read_timeline([folder / "rank1.json", folder / "rank0.json"])
    assert both.profiles["rank"].tolist() == [1, 0]  # a list keeps its order
    assert len(both) == len(tl) and both.span == tl.span
    for r in (0, 1):
        doc = json.loads((folder / f"rank{r}.json").read_text())
        assert not any(e.get("name") == "record_param_comms" for e in doc["traceEvents"])
    assert "seq" not in tl.events.columns
    inst = instances(tl)
    gloo = inst[inst["collective"] == "gloo:all_reduce"]
    assert len(gloo) >= 6 and (gloo["ranks"] == 2).all() and set(gloo["matched"]) == {"order"}
    assert gloo.groupby("instance")["bytes"].nunique().eq(1).all()
    # a blocking all-reduce: the two ranks' calls overlap in time (one clock)
    span = gloo.groupby("instance").agg(a=("arrival", "max"), e=("end", "min"))
    assert (span["a"] < span["e"]).all()


def test_a_call_on_another_gloo_thread_still_meets_its_peer(traces):
    """gloo runs each all-reduce on whichever of its worker threads is free, so
    the k-th call of one rank may sit under ``thread 1`` and the other's under
    ``thread 2`` (a CI run of the DDP job did that). The real trace's calls are
    moved to the other thread on rank 1 only: every call still meets its peer
    by order, as in the trace as recorded. (Should gloo ever run every call on one
    thread on both ranks, there is no other thread to move them to: then only the
    trace as recorded is checked; tests/ops has the same by construction.)"""
    from cctviz.model.timeline import Timeline
    from cctviz.ops.collectives import instances

    tl = cctviz.read_timeline(traces["ddp rank 0"].parent)
    names = tl.tree.names
    gloo = np.flatnonzero(names == "gloo:all_reduce")
    kind = tl.tree.nodes["kind"].to_numpy()
    assert len(gloo) in (1, 2) and (kind[tl.tree.parent[gloo]] == "thread").all()
    ev = tl.events.copy()
    node = ev["node"].to_numpy().copy()
    if len(gloo) == 2:
        on_rank1 = ev["profile"].to_numpy() == 1
        a, b = on_rank1 & (node == gloo[0]), on_rank1 & (node == gloo[1])
        assert a.any() or b.any()
        node[a], node[b] = gloo[1], gloo[0]
    ev["node"] = node
    moved = Timeline(tl.tree, ev, tl.profiles, units=tl.units, meta=tl.meta)
    cols = ["instance", "profile", "arrival", "end", "bytes", "ranks", "matched"]
    got, want = (instances(t) for t in (moved, tl))
    got, want = (x[x["collective"] == "gloo:all_reduce"][cols] for x in (got, want))
    assert (got["ranks"] == 2).all() and set(got["matched"]) == {"order"}
    pd.testing.assert_frame_equal(got, want)


@pytest.fixture(scope="module")
def gloo_collectives(tmp_path_factory) -> list[Path]:
    from tests.readers.kineto_torch import record_collectives

    return record_collectives(tmp_path_factory.mktemp("gloo_collectives"))


def test_gloo_all_gather_counts_its_whole_output(gloo_collectives):
    """gloo's trace records an all_gather's input only (no output dims, no group
    size): the group size comes from the trace's process-group metadata, so the
    bytes follow nccl-tests (the whole output) and bus bytes use the same size.
    Each call counts once: the ``c10d::`` call that queues it (nothing nested)
    is no collective of its own beside gloo's work on its worker thread, in the
    tree and in the calls matched across the ranks (as many as the script made)."""
    from cctviz.model.collectives import bus_factor
    from cctviz.ops.collectives import instances
    from tests.readers.kineto_torch import COLLECTIVE_NUMEL

    docs = [json.loads(p.read_text()) for p in gloo_collectives]
    world = docs[0]["distributedInfo"]["world_size"]
    assert world == 2
    args = [e.get("args", {}) for d in docs for e in d["traceEvents"]]
    assert not any("Group size" in a for a in args)  # what made the bytes 1/world short
    floats = 4 * COLLECTIVE_NUMEL  # bytes of one rank's input
    for p in gloo_collectives:
        t = cctviz.read(p)
        f = t.frame
        heads = f[f["comm_bytes"] > 0]
        assert (heads["group_size"] == world).all()
        # two all_gathers (a list of outputs, then into one tensor) share the annotation;
        # gloo runs each on whichever worker thread is free, so they may be two nodes
        per_kind = heads.groupby("collective")[["calls", "comm_bytes", "bus_bytes"]].sum()
        gather, reduce = per_kind.loc["all_gather"], per_kind.loc["all_reduce"]
        assert gather["calls"] == 2 and reduce["calls"] == 1
        assert gather["comm_bytes"] == 2 * world * floats
        assert gather["bus_bytes"] == gather["comm_bytes"] * bus_factor("all_gather", world)
        assert reduce["comm_bytes"] == floats
        assert reduce["bus_bytes"] == floats * bus_factor("all_reduce", world)
        assert t.meta["kineto"]["group_size_assumed"] == 0  # taken from pg_config
        calls = f[f["collective"].notna()].groupby("collective")["calls"].sum()
        assert calls.to_dict() == {"all_gather": 2, "all_reduce": 1}, calls
        queued = f[f["name"].str.startswith("c10d::")]
        assert len(queued) and queued["collective"].isna().all()
        assert (queued["kind"] == "comm").all()  # still where the program communicates
    tl = cctviz.read_timeline(gloo_collectives)
    inst = instances(tl)
    per_rank = inst.groupby(["rank", "collective"]).size().unstack()
    assert (per_rank.sum(axis=1) == 3).all(), per_rank  # 2 all_gathers, 1 all_reduce
    assert (inst["ranks"] == world).all() and set(inst["bytes"]) == {floats, world * floats}
    ev = tl.events[tl.events["comm_bytes"] > 0]
    gathers = ev[tl.tree.nodes["collective"].to_numpy()[ev["node"]] == "all_gather"]
    assert len(gathers) == 2 * world and (gathers["comm_bytes"] == world * floats).all()


def test_ranges_left_out_of_order_count_once(tmp_path):
    """record_function ranges that overlap without nesting (real torch output): the
    thread's time is the union of its events, the overlap counted once; the later
    range keeps its whole duration."""
    from tests.readers.kineto_torch import record_overlap

    p = record_overlap(tmp_path / "overlap.json")
    _, ev = _events(p)
    ann = {e["name"]: e for e in ev if e["name"] in ("load", "compute")}
    load, comp = ann["load"], ann["compute"]
    assert load["ts"] < comp["ts"] < load["ts"] + load["dur"] < comp["ts"] + comp["dur"]
    t = cctviz.read(p)
    assert t.meta["kineto"]["overlapped"] == 1
    inc = t.metrics["time (inc)"].set_axis(t.callpaths)
    (thread,) = [i for i in np.flatnonzero(t.nodes["kind"] == "thread")]
    spans = [(e["ts"], e["ts"] + e["dur"]) for e in ev if str(e["tid"]) == t.nodes["id"][thread]]
    busy = union_length(spans)
    assert t.metrics["time (inc)"][thread] == pytest.approx(busy, rel=1e-9, abs=1e-2)
    assert t.metrics["time"].sum() == pytest.approx(busy, rel=1e-9, abs=1e-2)
    top = t.callpaths[thread]
    assert inc[f"{top}/compute"] == pytest.approx(comp["dur"], rel=1e-9)
    assert inc[f"{top}/load"] == pytest.approx(comp["ts"] - load["ts"], rel=1e-9, abs=1e-2)
    ens = cctviz.read_timeline(p).ensemble()  # the timeline agrees (ns)
    assert ens.values("time").sum() / 1e3 == pytest.approx(busy, rel=1e-9, abs=1e-2)


def test_a_negative_duration_is_said_naming_the_event(gloo_collectives, tmp_path):
    """A real trace with one event's duration made negative (as a clock step can
    leave one): read as 0, with a warning that names the event and where it is."""
    doc = json.loads(gloo_collectives[0].read_text())
    ev = next(e for e in doc["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "cpu_op")
    ev["dur"] = -5
    bad = tmp_path / "negative.json"
    bad.write_text(json.dumps(doc))
    with pytest.warns(UserWarning, match="negative duration") as said:
        t = cctviz.read(bad)
    text = str(said[0].message)
    assert repr(ev["name"]) in text and f"ts {ev['ts']:.3f} us" in text, text
    assert t.meta["kineto"]["negative_dur"] == 1
