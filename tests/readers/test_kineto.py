"""The Kineto (torch.profiler) trace reader on the real samples and on small
synthetic traces; reference figures are computed here from the events themselves."""

from __future__ import annotations

import gzip
import json
import random
import tracemalloc
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cctviz
from cctviz import ProfileError
from cctviz.model.collectives import dtype_size
from cctviz.readers import _jsonstream, head, kineto
from cctviz.readers.kineto import _sniff
from tests.conftest import CALIPER_JSON, DATA, HATCHET_JSON
from tests.hypothesis_profiles import examples
from tests.readers.fuzz import assert_wrong_format_rejected, fuzz_sample

KINETO = DATA / "kineto"
SAMPLES = sorted(KINETO.iterdir())
NCCL = KINETO / "hta_nccl_parser_config_nccl_data.json.gz"
GLOO = KINETO / "hta_cpu_only_rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"
AMD = KINETO / "hta_amd_trace_mi250_minitoy_train_ROCm6_2_kineto.json.gz"
OLD = KINETO / "kineto_tb_resnet50_2021.json.gz"
BACKWARD = KINETO / "hta_call_stack_backward_thread.json"
NS = KINETO / "hta_ns_resolution_trace_rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"
RANKS = [KINETO / f"hta_trace_filter_sampled_rank-{r}.json.gz" for r in (0, 1)]

CPU_CATS = {"cpu_op", "user_annotation", "cuda_runtime", "Operator", "Runtime"}
GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset", "Kernel", "Memcpy", "Memset"}
KERNEL_CATS = {"kernel", "Kernel"}


def _doc(path: Path) -> dict:
    raw = path.read_bytes()
    return json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)


@pytest.fixture(scope="module")
def docs() -> dict[Path, dict]:
    return {p: _doc(p) for p in SAMPLES}


def _x(doc: dict, cats: set[str]) -> list[dict]:
    return [e for e in doc["traceEvents"] if e.get("ph") == "X" and e.get("cat") in cats]


def test_every_sample_is_found():
    assert len(SAMPLES) == 9
    assert all(cctviz.readers.detect(p) == "kineto" for p in SAMPLES)


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name[:40])
def test_sample_loads_with_its_events(path, docs):
    doc = docs[path]
    t = cctviz.read(path)
    assert isinstance(t, cctviz.Tree)
    assert len(t) == NODES[path]
    k = t.meta["kineto"]
    cpu, gpu = _x(doc, CPU_CATS), _x(doc, GPU_CATS)
    assert k["cpu_events"] == len(cpu) and k["gpu_events"] == len(gpu)
    assert k["clamped"] == 0 and k["unattributed_gpu"] == 0
    nodes, m = t.nodes, t.metrics
    # one thread node per (pid, tid) of the CPU events, under one process node
    assert (nodes["kind"] == "thread").sum() == len({(e["pid"], e["tid"]) for e in cpu})
    procs = nodes[nodes["kind"] == "process"]
    assert set(procs["id"]) == {str(p) for p in {e["pid"] for e in cpu}}
    assert set(procs["name"]) == {"process"}  # no ids in names: ranks unify
    threads = nodes[nodes["kind"] == "thread"]
    assert set(threads["id"]) == {str(e["tid"]) for e in cpu}
    # every CPU event is counted once, GPU time adds up, CPU time adds up per thread
    assert m["calls"].sum() == len(cpu) + len(gpu)
    assert m["gpu_time"].sum() == pytest.approx(sum(e["dur"] for e in gpu), rel=1e-12)
    kernels = [e for e in gpu if e["cat"] in KERNEL_CATS]
    assert m.loc[nodes["kind"] == "kernel", "calls"].sum() == len(kernels)
    # each ProfilerStep#N is one node whose inclusive time is the step's dur
    steps = [e for e in cpu if e["name"].startswith("ProfilerStep#")]
    for e in steps:
        (node,) = np.flatnonzero(nodes["name"].to_numpy() == e["name"])
        assert m.loc[node, "time (inc)"] == pytest.approx(e["dur"], rel=1e-12, abs=1e-9)
    # the top-level metadata
    for key, val in doc.items():
        if key != "traceEvents":
            assert t.meta.get(key, k.get(key)) == val
    assert t.units == {
        "time": "us",
        "gpu_time": "us",
        "comm_time": "us",
        "comm_bytes": "B",
        "bus_bytes": "B",
    }
    # every metric but the count has a unit, every metric adds up when merged
    metrics = [c for c in m.columns if not c.endswith(" (inc)")]
    assert set(metrics) == set(t.units) | {"calls"}
    assert t.meta["aggregation"] == dict.fromkeys(metrics, "sum")


NODES = {  # merged tree sizes, pinned
    AMD: 93,
    BACKWARD: 10,
    GLOO: 8,
    NCCL: 582,
    NS: 923,
    KINETO / "hta_trace_diff_control_control.json.gz": 5876,
    RANKS[0]: 1282,
    RANKS[1]: 1210,
    OLD: 1027,
}


HTA_SAMPLES = [BACKWARD, GLOO, AMD, NCCL, *RANKS]


@pytest.mark.parametrize("path", HTA_SAMPLES, ids=lambda p: p.name[:40])
def test_same_parents_as_hta(path):
    """Holistic Trace Analysis's own call stacks (``hta.common.call_stack.CallGraph``)
    give every CPU event and GPU activity the same parent (compared as the
    multiset of (name, parent name) pairs; HTA also keeps gpu_user_annotation)."""
    import logging
    import warnings

    from hta.common.call_stack import CallGraph
    from hta.common.trace import Trace
    from hta.configs.config import logger

    logger.setLevel(logging.ERROR)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trace = Trace(trace_files=[str(path)], trace_dir=str(path.parent))
        trace.parse_traces(use_multiprocessing=False)
        CallGraph(trace)
    (df,) = trace.traces.values()
    sym = np.asarray(trace.symbol_table.get_sym_table(), dtype=object)
    df = df[sym[df["cat"].to_numpy()] != "gpu_user_annotation"]
    name = dict(zip(df.index, sym[df["name"].to_numpy()]))
    theirs = Counter((name[i], name.get(p)) for i, p in zip(df.index, df["parent"]))
    t = cctviz.read(path, merge=False)
    nm, kind, par = t.nodes["name"].to_numpy(), t.nodes["kind"].to_numpy(), t.parent
    events = np.flatnonzero(~np.isin(kind, ["process", "thread", "device"]))
    ours = Counter(
        (nm[i], None if kind[par[i]] in ("thread", "device") else nm[par[i]]) for i in events
    )
    assert ours == theirs


def test_one_node_per_event_without_merging(docs):
    for path in (NCCL, OLD, AMD):
        t = cctviz.read(path, merge=False)
        cpu, gpu = _x(docs[path], CPU_CATS), _x(docs[path], GPU_CATS)
        kinds = t.nodes["kind"].value_counts()
        assert kinds["kernel"] == sum(e["cat"] in KERNEL_CATS for e in gpu)
        assert (t.metrics["calls"] == 1).sum() == len(cpu) + len(gpu)
        assert t.metrics["gpu_time"].sum() == pytest.approx(sum(e["dur"] for e in gpu))
        merged = cctviz.read(path)
        assert merged.metrics["time"].sum() == pytest.approx(t.metrics["time"].sum())
        assert len(merged) < len(t)


def test_2021_and_amd_kernels_hang_under_their_launch(docs):
    old = cctviz.read(OLD)
    nodes = old.nodes
    kern = np.flatnonzero(nodes["kind"] == "kernel")
    parents = nodes.loc[nodes.loc[kern, "parent"], "name"]
    assert set(parents) == {"cudaLaunchKernel"}
    assert len(kern) == 271 and len(old) == 1027
    assert old.metrics.loc[kern, "calls"].sum() == 8772
    amd = cctviz.read(AMD)
    gpu = amd.nodes["kind"].isin(["kernel", "memcpy"])
    launchers = set(amd.nodes.loc[amd.nodes.loc[gpu, "parent"], "name"])
    assert launchers == {"hipLaunchKernel", "hipMemcpyWithStream", "hipExtModuleLaunchKernel"}
    assert amd.metrics.loc[gpu, "calls"].sum() == 16
    assert amd.nodes["label"][0] == "python3"


def test_known_ops(docs):
    t = cctviz.read(BACKWARD, thread_ids=True)
    assert t.nodes["name"].tolist() == [
        "process 3914",
        "thread 3914",
        "ProfilerStep#552",
        "## backward ##",
        "thread 24922",
        "autograd::engine::evaluate_function: AddmmBackward0",
        "AddmmBackward0",
        "aten::mm",
        "cudaLaunchKernel",
        "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4>",
    ]
    assert t.metrics["time"].tolist() == [0, 0, 413451 - 107988, 107988, 0, 43, 44, 48, 10, 0]
    assert t.metrics["gpu_time (inc)"][5] == 45
    # ResNet-50 (2021): aten::conv2d calls and time, against the events
    old = cctviz.read(OLD)
    ev = [e for e in _x(docs[OLD], {"Operator"}) if e["name"] == "aten::conv2d"]
    conv = old.nodes["name"] == "aten::conv2d"
    assert old.metrics.loc[conv, "calls"].sum() == len(ev) == 318
    assert old.metrics.loc[conv, "time (inc)"].sum() == pytest.approx(sum(e["dur"] for e in ev))
    assert old.nodes.loc[conv, "kind"].unique().tolist() == ["op"]


def test_nccl_collective_bytes(docs):
    t = cctviz.read(NCCL)
    rpc = [
        e["args"]
        for e in _x(docs[NCCL], {"cpu_op"})
        if e["name"] == "record_param_comms" and e["args"]["Collective name"] != "wait"
    ]
    assert Counter(a["Collective name"] for a in rpc) == {"allreduce": 15, "broadcast": 6}
    size = {"Float": 4, "Long": 8}
    assert Counter(a["dtype"] for a in rpc) == {"Float": 18, "Long": 3}
    expected = sum(a["In msg nelems"] * size[a["dtype"]] for a in rpc)
    m, nodes = t.metrics, t.nodes
    assert m["comm_bytes"].sum() == expected == 307323096
    # group size 2: all_reduce's bus factor 2(n-1)/n = 1, broadcast's 1
    assert m["bus_bytes"].sum() == expected
    assert m["comm_time"].sum() == pytest.approx(
        sum(e["dur"] for e in _x(docs[NCCL], {"cpu_op"}) if e["name"].startswith("c10d::"))
    )
    heads = nodes["collective"].notna()
    assert set(nodes.loc[heads, "name"]) == {"c10d::allreduce_", "c10d::broadcast_"}
    assert set(nodes.loc[heads, "group_size"]) == {2}
    assert set(nodes.loc[heads, "process_group"]) == {"0"}
    assert m.loc[heads, "calls"].sum() == 21
    # the annotations inside are comm nodes without comm metrics (bytes count once)
    inner = nodes["name"].isin(["record_param_comms", "nccl:all_reduce", "nccl:broadcast"])
    assert (nodes.loc[inner, "kind"] == "comm").all()
    assert m.loc[inner, "comm_bytes"].sum() == 0


def test_gloo_bytes_from_input_dims(docs):
    t = cctviz.read(GLOO)
    ev = [e for e in _x(docs[GLOO], {"user_annotation"}) if e["name"].startswith("gloo:")]
    expected = sum(np.prod(e["args"]["Input Dims"][0]) * 4 for e in ev)
    assert t.metrics["comm_bytes"].sum() == expected == 48073640
    assert t.metrics["comm_time"].sum() == pytest.approx(sum(e["dur"] for e in ev))
    assert t.meta["backend"] == "gloo" and t.meta["rank"] == 34 and t.meta["world_size"] == 300
    assert t.meta["kineto"]["distributedInfo"]["pg_count"] == 10
    # gloo annotations record no group size: bus bytes assume the world (300 ranks)
    assert t.meta["kineto"]["group_size_assumed"] == len(ev) == 10
    assert t.metrics["bus_bytes"].sum() == pytest.approx(expected * 2 * 299 / 300)
    assert (t.nodes["kind"] == "thread").sum() == 3


def test_all_gather_counts_its_output():
    t = cctviz.read(RANKS[0])
    ag = t.nodes["collective"] == "all_gather"
    # c10d::_allgather_base_ output 1073741824 B from a 16777216 B input: 64 ranks
    assert t.metrics.loc[ag, "comm_bytes"].tolist() == [1073741824.0] * 2
    assert t.nodes.loc[ag, "group_size"].tolist() == [64, 64]
    assert t.metrics.loc[ag, "bus_bytes"].tolist() == [1073741824.0 * 63 / 64] * 2


def test_ranks_as_an_ensemble():
    shared = cctviz.read_ensemble(RANKS)
    assert shared.profiles["rank"].tolist() == [0, 1]
    assert shared.profiles["world_size"].tolist() == [128, 128]
    assert shared.profiles["backend"].tolist() == ["nccl", "nccl"]
    # without ids in the thread names (the default) the two ranks share their call paths
    t0, t1 = (cctviz.read(p) for p in RANKS)
    apart = cctviz.read_ensemble(RANKS, thread_ids=True)
    assert len(apart.tree) == len(t0) + len(t1)
    assert len(shared.tree) < len(t0) + len(t1) - 1000
    assert shared.tree.nodes["name"][:3].tolist() == ["process", "main thread", "ProfilerStep#551"]
    step = shared.long_table.reset_index()
    step = step[step["node"] == 2]
    assert sorted(step["profile"]) == [0, 1]


def test_ns_resolution_trace():
    t = cctviz.read(NS)
    assert t.meta["displayTimeUnit"] == "ns" and t.units["time"] == "us"
    assert t.meta["world_size"] == 1
    # group size 1: the collectives move bytes but no bus traffic
    assert t.metrics["comm_bytes"].sum() == 512205160 and t.metrics["bus_bytes"].sum() == 0


# ------------------------------------------------------------ synthetic traces
def _write(tmp_path: Path, events: list[dict], name: str = "t.json", **top) -> Path:
    p = tmp_path / name
    p.write_text(json.dumps({"schemaVersion": 1, **top, "traceEvents": events}))
    return p


def _ev(name, ts, dur, cat="cpu_op", tid=1, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": dur,
            "args": args}  # fmt: skip


def _py(name, ts, dur, pid_, parent):
    return _ev(name, ts, dur, "python_function", **{"Python id": pid_, "Python parent id": parent})


def _paths(t: cctviz.Tree) -> dict[str, int]:
    return {"/".join(t.path(i)): i for i in range(len(t))}


def test_python_frames_link_by_parent_id(tmp_path):
    p = _write(
        tmp_path,
        [
            _py("c.py(3): g", 10, 50, 3, 2),  # same span as its parent, listed first
            _py("a.py(1): main", 0, 100, 1, 0),
            _py("b.py(2): f", 10, 50, 2, 1),
            _ev("aten::mm", 20, 20),
            _py("d.py(4): hook", 25, 5, 4, 1),  # called back inside aten::mm, parent id -> a
            _py("e.py(5): lost", 30, 2, 5, 99),  # unknown parent: by time
            _py("g.py(6): outer", 65, 25, 6, 1),
            _py("h.py(7): skip", 70, 10, 7, 1),  # inside g by time, parent id -> a
        ],
    )
    t = cctviz.read(p)
    paths = _paths(t)
    main = "process/main thread/a.py(1): main"
    mm = f"{main}/b.py(2): f/c.py(3): g/aten::mm"
    assert set(paths) == {
        "process",
        "process/main thread",
        main,
        f"{main}/b.py(2): f",
        f"{main}/b.py(2): f/c.py(3): g",
        mm,
        f"{mm}/d.py(4): hook",  # a frame never leaves the cpu_op that holds it
        f"{mm}/e.py(5): lost",
        f"{main}/g.py(6): outer",
        f"{main}/h.py(7): skip",  # only frames between: the parent id is followed
    }
    time, inc = t.metrics["time"], t.metrics["time (inc)"]
    assert time[paths[mm]] == 20 - 5 - 2
    assert inc[paths[mm]] == 20
    assert time[paths[main]] == 100 - 50 - 25 and inc[paths[main]] == 100
    # g keeps its own exclusive time; h's time is under main
    assert time[paths[f"{main}/g.py(6): outer"]] == 15
    assert t.nodes["kind"][paths[main]] == "function"
    assert t.meta["kineto"]["python_links_ignored"] == 1  # the hook's
    assert t.meta["kineto"]["reattached"] == 0

    # python_functions=False drops the frames while parsing
    t2 = cctviz.read(p, python_functions=False)
    assert sorted(_paths(t2)) == ["process", "process/main thread", "process/main thread/aten::mm"]
    assert t2.meta["kineto"]["cpu_events"] == 1


def test_equal_python_frames_nest_by_link_in_any_order(tmp_path):
    # three frames with the same span, innermost listed first, outermost last
    p = _write(tmp_path, [_py("c", 10, 50, 3, 2), _py("b", 10, 50, 2, 1), _py("a", 10, 50, 1, 0)])
    t = cctviz.read(p)
    assert "process/main thread/a/b/c" in _paths(t)
    assert t.meta["kineto"]["python_links_ignored"] == 0


_IDS = st.one_of(st.none(), st.integers(-3, 12), st.integers(2**40, 2**40 + 2))


@settings(max_examples=examples(200), deadline=None)
@given(
    frames=st.lists(st.tuples(st.integers(0, 2), _IDS, _IDS), max_size=40),
)
def test_python_links_in_numpy_are_the_dict_lookups(frames):
    """The numpy lookup of ``Python parent id`` (ints and nulls, what torch writes)
    gives the links of the per-frame dict (the last frame of an id on its thread
    wins; null parents link only to a frame whose own id is null), and declines
    where an id is not an int."""
    py = [(k, pid_, parent) for k, (_, pid_, parent) in enumerate(frames)]
    th = np.asarray([t for t, _, _ in frames], dtype=np.int32)
    want = kineto._any_links(py, th.tolist())
    got = kineto._int_links(py, th)
    if any(p is None for _, p, _ in py):  # a null Python id: only the dict handles it
        assert got is None
    else:
        assert got is not None
        assert got.tolist() == want.tolist()


def test_python_links_of_other_types_take_the_dict():
    py = [(0, "a", None), (1, 1.0, "a"), (2, 2, 1), (3, True, 2)]
    th = np.zeros(4, dtype=np.int32)
    assert kineto._int_links(py, th) is None
    # Python's equality: True is the id 1 (and 1.0), the last frame of that id
    assert kineto._any_links(py, th.tolist()).tolist() == [-1, 0, 3, 2]


def test_annotation_outliving_its_python_frames(tmp_path):
    """What torch.profiler writes with with_stack=True: ProfilerStep#N opens inside
    ``step() > __enter__ > _record_function_enter_new`` and closes inside the next
    ``step() > __exit__``. The step goes where it fits whole; the frames it
    overlaps lose that part of their time; nothing inside the step escapes it."""
    ann = "user_annotation"
    p = _write(
        tmp_path,
        [
            _py("work", 0, 1000, 1, None),
            _py("step", 10, 120, 2, 1),
            _py("__enter__", 20, 100, 3, 2),
            _py("enter_new", 30, 80, 4, 3),
            _ev("ProfilerStep#1", 100, 520, ann),
            _py("is_scripting", 115, 3, 5, 3),  # parent id: __enter__, already left
            _ev("aten::mm", 200, 100),
            _py("step", 580, 120, 6, 1),  # starts inside ProfilerStep#1, ends after it
            _py("__exit__", 590, 60, 7, 6),
            _ev("aten::op", 595, 3),  # inside the step and inside __exit__
            _py("exit_new", 600, 40, 8, 7),
            _ev("ProfilerStep#2", 660, 240, ann),  # opens inside the second step()
            _ev("aten::mm", 700, 100),
        ],
    )
    t = cctviz.read(p)
    paths = _paths(t)
    w = "process/main thread/work"
    s1, s2, st = f"{w}/ProfilerStep#1", f"{w}/ProfilerStep#2", f"{w}/step"
    assert set(paths) == {
        "process",
        "process/main thread",
        w,
        st,
        f"{st}/__enter__",
        f"{st}/__enter__/enter_new",
        s1,
        f"{s1}/is_scripting",
        f"{s1}/aten::mm",
        f"{s1}/aten::op",
        f"{st}/__exit__",
        f"{st}/__exit__/exit_new",
        s2,
        f"{s2}/aten::mm",
    }
    time, inc = t.metrics["time"], t.metrics["time (inc)"]
    # the steps keep their whole duration and everything that ran inside them
    assert inc[paths[s1]] == 520 and time[paths[s1]] == 520 - 3 - 100 - 3
    assert inc[paths[s2]] == 240 and time[paths[s2]] == 140
    # frames keep the part outside the steps: step() 10-100 and 620-660 (two calls)
    assert inc[paths[st]] == 90 + 40 and t.metrics["calls"][paths[st]] == 2
    assert inc[paths[f"{st}/__enter__"]] == 80 and inc[paths[f"{st}/__enter__/enter_new"]] == 70
    assert inc[paths[f"{st}/__exit__"]] == 30 and inc[paths[f"{st}/__exit__/exit_new"]] == 20
    # no time counted twice or lost: the thread is busy 0-1000
    assert inc[paths[w]] == 1000 and time[paths[w]] == 1000 - 130 - 520 - 240
    k = t.meta["kineto"]
    assert k["clamped"] == 0 and k["overlapped"] == 0
    # ProfilerStep#1 (3 frames outlived), step, __exit__, exit_new (#1), ProfilerStep#2
    assert k["reattached"] == 5
    assert k["frames_trimmed"] == 6
    assert k["python_links_ignored"] == 1  # is_scripting's

    # one node per event: the same nesting, the step() frames apart
    flat = cctviz.read(p, merge=False)
    names, finc = flat.nodes["name"], flat.metrics["time (inc)"]
    assert finc[names == "step"].tolist() == [90, 40]
    (n1,) = np.flatnonzero(names == "ProfilerStep#1")
    assert names[flat.children(n1)].tolist() == ["is_scripting", "aten::mm", "aten::op"]

    # without the frames the steps are at the top, as before
    bare = _paths(cctviz.read(p, python_functions=False))
    assert "process/main thread/ProfilerStep#1/aten::op" in bare


def test_partial_overlap_of_ops_counts_once(tmp_path):
    """Two cpu_ops that overlap without nesting: the later one keeps its duration
    and what starts in the overlap; the earlier one ends, for the time, where the
    later one starts, so the thread's time is the union of its intervals."""
    p = _write(
        tmp_path,
        [
            _ev("parent", 0, 10),
            _ev("child", 5, 10),  # ends at 15, after "parent"
            _ev("inner", 7, 1),  # inside both
            _ev("next", 12, 2),
        ],
    )
    t = cctviz.read(p)
    k = t.meta["kineto"]
    assert k["clamped"] == 0 and k["overlapped"] == 1 and k["reattached"] == 1
    assert k["frames_trimmed"] == 0
    paths = _paths(t)
    top = "process/main thread"
    assert set(paths) == {
        "process",
        top,
        f"{top}/parent",
        f"{top}/child",
        f"{top}/child/inner",
        f"{top}/child/next",
    }
    m = t.metrics
    assert m["time (inc)"][paths[f"{top}/parent"]] == 5  # up to where "child" starts
    assert m["time (inc)"][paths[f"{top}/child"]] == 10 and m["time"][paths[f"{top}/child"]] == 7
    assert m["time (inc)"][paths[top]] == 15  # busy 0-15, the overlap once
    ens = cctviz.read_timeline(p).ensemble()  # the timeline's events agree (ns)
    got = pd.Series(ens.values("time (inc)").ravel() / 1e3, index=ens.tree.callpaths)
    assert got.sort_index().tolist() == m["time (inc)"].set_axis(t.callpaths).sort_index().tolist()


def _laminar(rng: random.Random, lo: float, hi: float, depth: int, out: list, parent: int):
    """Random nested intervals inside (lo, hi): (start, end, parent index)."""
    k = rng.randint(parent < 0, 3) if depth else 0  # one at least at the top
    cuts = sorted(rng.uniform(lo, hi) for _ in range(2 * k))
    for a, b in zip(cuts[::2], cuts[1::2]):
        out.append((a, b, parent))
        _laminar(rng, a, b, depth - 1, out, len(out) - 1)
    return out


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1))
def test_random_frames_across_ops_and_annotations(seed, tmp_path_factory):
    """cpu_ops and annotations that nest among themselves, Python frames that nest
    among themselves (linked by Python parent id), the two crossing at random:
    each op/annotation keeps its dur and holds exactly the events inside it, the
    thread's time is its busy time, and the ops nest as they do without frames."""
    rng = random.Random(seed)
    hard = _laminar(rng, 0, 1000, 4, [], -1)
    frames = _laminar(rng, 0, 1000, 4, [], -1)
    events = [
        _ev(f"h{i}", a, b - a, rng.choice(["cpu_op", "user_annotation"]))
        for i, (a, b, _) in enumerate(hard)
    ]
    events += [_py(f"f{i}", a, b - a, i + 1, p + 1) for i, (a, b, p) in enumerate(frames)]
    rng.shuffle(events)
    p = _write(tmp_path_factory.mktemp("laminar"), events)
    t = cctviz.read(p, merge=False)
    names, inc, end = t.nodes["name"].to_numpy(), t.metrics["time (inc)"].to_numpy(), t.end
    node = {n: i for i, n in enumerate(names)}
    spans = {e["name"]: (e["ts"], e["ts"] + e["dur"]) for e in events}
    for i, (a, b, _) in enumerate(hard):
        h = node[f"h{i}"]
        assert inc[h] == pytest.approx(b - a, rel=1e-9)
        inside = {n for n, (x, y) in spans.items() if a <= x and y <= b and n != f"h{i}"}
        assert set(names[h + 1 : end[h]]) == inside
    busy, hi = 0.0, -1.0
    for x, y in sorted(spans.values()):
        busy += max(0.0, y - max(x, hi))
        hi = max(hi, y)
    assert inc[1] == pytest.approx(busy, rel=1e-9)  # the thread node
    assert (t.metrics["time"] >= 0).all()
    for i, (a, b, _) in enumerate(frames):  # frames never hold more than their dur
        assert inc[node[f"f{i}"]] <= b - a + 1e-9
    k = t.meta["kineto"]
    assert k["clamped"] == 0 and k["overlapped"] == 0
    # the ops' nesting is the one without frames
    bare = cctviz.read(p, merge=False, python_functions=False)

    def hard_parents(tree: cctviz.Tree) -> dict[str, str | None]:
        nm, par, out = tree.nodes["name"].to_numpy(), tree.parent, {}
        for j, n in enumerate(nm):
            if n.startswith("h"):
                q = par[j]
                while not nm[q].startswith("h") and nm[q] != "main thread":
                    q = par[q]
                out[n] = nm[q]
        return out

    assert hard_parents(t) == hard_parents(bare)


def test_merge_by_names_only_and_say_what_is_dropped(tmp_path):
    """A call path is a path of names: an annotation and an op of the same name, or
    two collectives on different process groups, at one path are one node; the
    attributes that then differ are named in one warning."""
    rpc = "record_param_comms"
    comm = {"In msg nelems": 4, "Out msg nelems": 4, "dtype": "Float"}
    p = _write(
        tmp_path,
        [
            _ev("x", 0, 10, "user_annotation"),
            _ev("x", 20, 10),
            _ev(
                rpc,
                40,
                5,
                **comm,
                **{"Collective name": "allreduce", "Group size": 2, "Process Group Name": "0"},
            ),
            _ev(
                rpc,
                50,
                5,
                **comm,
                **{"Collective name": "broadcast", "Group size": 4, "Process Group Name": "1"},
            ),
        ],  # fmt: skip
        distributedInfo={"world_size": 4, "rank": 0},
    )
    with pytest.warns(UserWarning) as record:
        t = cctviz.read(p)
    (w,) = record
    msg = str(w.message)
    assert "'kind' on 1 node(s), e.g. 'x' kept 'region', dropped 'op'" in msg
    assert "'collective' on 1 node(s), e.g. 'record_param_comms' kept 'all_reduce'" in msg
    assert "'group_size'" in msg and "'process_group'" in msg
    assert "'process_group_ranks'" not in msg and "'label'" not in msg
    paths = _paths(t)
    x, r = paths["process/main thread/x"], paths[f"process/main thread/{rpc}"]
    assert len(t) == 4
    assert t.metrics["calls"][x] == 2 and t.metrics["time"][x] == 20
    assert t.nodes["kind"][x] == "region" and t.nodes["collective"][r] == "all_reduce"
    # the metrics of both collectives are kept: 16 B each, bus factors 2(n-1)/n and 1
    assert t.metrics["comm_bytes"][r] == 32 and t.metrics["bus_bytes"][r] == 16 + 16
    assert t.metrics["calls"][r] == 2

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        flat = cctviz.read(p, merge=False)
    assert flat.nodes["kind"].tolist()[2:] == ["region", "op", "comm", "comm"]
    assert flat.nodes["collective"].tolist()[4:] == ["all_reduce", "broadcast"]
    assert flat.nodes["group_size"].tolist()[4:] == [2, 4]
    assert flat.metrics["bus_bytes"].tolist()[4:] == [16, 16]


def test_merge_and_gpu_attachment(tmp_path):
    events = [_ev("ProfilerStep#1", 0, 100, "user_annotation")]
    for k in range(3):
        events += [
            _ev("aten::add", 10 + 20 * k, 10),
            _ev("cudaLaunchKernel", 12 + 20 * k, 2, "cuda_runtime", correlation=k + 1),
            {
                "ph": "X",
                "cat": "kernel",
                "name": "add_kernel",
                "pid": 0,
                "tid": 7,
                "ts": 15 + 20 * k,
                "dur": 3,
                "args": {"correlation": k + 1},
            },  # fmt: skip
        ]
    events.append(  # launched before the trace started: no launch event
        {
            "ph": "X",
            "cat": "kernel",
            "name": "old_kernel",
            "pid": 0,
            "tid": 7,
            "ts": 1,
            "dur": 4,
            "args": {"correlation": 77},
        }  # fmt: skip
    )
    events.append(
        {"ph": "M", "name": "process_labels", "pid": 0, "tid": 0, "args": {"labels": "GPU 0"}}
    )
    events.append({"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "main"}})
    p = _write(tmp_path, events)
    t = cctviz.read(p)
    paths = _paths(t)
    add = "process/main thread/ProfilerStep#1/aten::add"
    kern = f"{add}/cudaLaunchKernel/add_kernel"
    assert t.metrics["calls"][paths[add]] == 3 and t.metrics["calls"][paths[kern]] == 3
    assert t.metrics["gpu_time"][paths[kern]] == 9
    assert t.metrics["time"][paths[add]] == 24
    un = "device/(unattributed GPU)/old_kernel"
    assert t.metrics["gpu_time"][paths[un]] == 4 and t.meta["kineto"]["unattributed_gpu"] == 1
    assert t.nodes["kind"][paths["device"]] == "device"
    assert t.nodes["label"][paths["device"]] == "GPU 0"
    assert t.nodes["label"][paths["process/main thread"]] == "main"
    assert t.metrics["gpu_time (inc)"][paths["process/main thread/ProfilerStep#1"]] == 9

    flat = cctviz.read(p, merge=False)
    names = flat.nodes["name"]
    assert (names == "aten::add").sum() == 3 and (names == "add_kernel").sum() == 3
    assert (flat.nodes["kind"] == "kernel").sum() == 4
    assert flat.metrics["gpu_time"].sum() == t.metrics["gpu_time"].sum() == 13
    # siblings in time order
    (step,) = np.flatnonzero(names == "ProfilerStep#1")
    kids = flat.children(step)
    assert names[kids].tolist() == ["aten::add"] * 3
    assert flat.metrics["time"][kids].tolist() == [8, 8, 8]


def test_any_text_layout(tmp_path):
    """Compact, indented, odd separators, '},' inside names, small read pieces:
    the same tree (the batched decoding falls back to one event at a time)."""
    events = []
    for k in range(300):
        events.append(_ev("step}, {" if k % 7 == 0 else f"op{k % 5}", 10.0 * k, 9.0))
        events.append(_ev("inner", 10.0 * k + 1, 2.0, **{"x": [{"a": 1}, {"b": 2}]}))
    texts = [
        json.dumps({"traceEvents": events}),
        json.dumps({"traceEvents": events}, indent=2),
        '{"traceEvents": [' + "\n,".join(json.dumps(e) for e in events) + "]}",
        '{"traceEvents":[' + ",".join(json.dumps(e, separators=(",", ":")) for e in events) + "]}",
    ]
    trees = []
    for i, text in enumerate(texts):
        p = tmp_path / f"t{i}.json"
        p.write_text(text)
        trees.append(cctviz.read(p))
    batch = _jsonstream.BATCH
    _jsonstream.BATCH = 3001  # batches end at many places; pieces of 997 characters
    try:
        col, top = kineto._parse(tmp_path / "t1.json", True, chunk=997)
        trees.append(kineto._build(tmp_path / "t1.json", col, top, True, False))
    finally:
        _jsonstream.BATCH = batch
    for t in trees[1:]:
        assert t.nodes.equals(trees[0].nodes) and t.metrics.equals(trees[0].metrics)
    assert trees[0].metrics["calls"].sum() == 600 and len(trees[0]) == 2 + 6 + 6


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name[:30])
def test_batched_decoding_reads_what_one_event_at_a_time_reads(path, monkeypatch):
    """Every real sample gives the same tree, timeline events, counters and meta
    whether its events are decoded in batches (the default) or each alone (a
    batch of one character finds no cut: the stream's element-by-element path)."""

    def read() -> tuple:
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            t = kineto.read_kineto(path, merge=False)
            tl = kineto.read_kineto_timeline(path)
        return t, tl, [str(x.message) for x in w]

    t, tl, warned = read()
    monkeypatch.setattr(_jsonstream, "BATCH", 1)
    t1, tl1, warned1 = read()
    pd.testing.assert_frame_equal(t.nodes, t1.nodes)
    pd.testing.assert_frame_equal(t.metrics, t1.metrics)
    pd.testing.assert_frame_equal(tl.events, tl1.events)
    if tl.counters is None:
        assert tl1.counters is None
    else:
        pd.testing.assert_frame_equal(tl.counters, tl1.counters)
    assert repr(t.meta) == repr(t1.meta) and repr(tl.meta) == repr(tl1.meta)
    assert warned == warned1
    assert (
        t.meta["kineto"]["cpu_events"] + t.meta["kineto"]["gpu_events"]
        == len(t)
        - sum(t.nodes["kind"].isin(["process", "thread", "device"]))
        - (t.nodes["name"] == kineto.UNATTRIBUTED).sum()
    )


def test_dtype_names():
    assert [dtype_size(x) for x in ("Float", "BFloat16", "c10::Half", "long int", "Byte")] == [
        4,
        2,
        2,
        8,
        1,
    ]
    assert dtype_size("TensorList") is None and dtype_size(None) is None


def _big_trace(path: Path, n_steps: int) -> int:
    """A synthetic trace written as text (fast): per step a ProfilerStep, 60 ops
    each with a cudaLaunchKernel and its kernel. Returns the number of events."""
    rng = random.Random(0)
    op = (
        '{{"ph": "X", "cat": "cpu_op", "name": "aten::op{o}", "pid": 1, "tid": 1, "ts": {t}, '
        '"dur": 10.0, "args": {{"Input Dims": [[64, 64]], "Input type": ["float"]}}}}, '
        '{{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, '
        '"ts": {t1}, "dur": 5.0, "args": {{"correlation": {c}}}}}, '
        '{{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": {t8}, '
        '"dur": 4.0, "args": {{"correlation": {c}, "stream": 7}}}}'
    )
    step = (
        '{{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#{s}", "pid": 1, '
        '"tid": 1, "ts": {t}, "dur": 1000.0, "args": {{}}}}'
    )
    parts = []
    corr = 0
    for s in range(n_steps):
        ts = 1.7e12 + 1000.0 * s
        parts.append(step.format(s=s, t=ts))
        for k in range(60):
            corr += 1
            t = ts + 1 + 12 * k
            parts.append(op.format(o=rng.randrange(50), t=t, t1=t + 1, t8=t + 8, c=corr))
    path.write_text('{"schemaVersion": 1, "traceEvents": [' + ", ".join(parts) + "]}")
    return n_steps * (1 + 3 * 60)


def test_memory_stays_below_twice_the_file(tmp_path):
    p = tmp_path / "big.json"
    n = _big_trace(p, 1105)
    size = p.stat().st_size
    tracemalloc.start()
    tree = cctviz.read(p)
    ours = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    tracemalloc.start()
    doc = json.loads(p.read_bytes())
    theirs = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert len(doc["traceEvents"]) == n == 200_005
    del doc
    print(f"\n{n} events, {size / 1e6:.1f} MB: cctviz.read peak {ours / 1e6:.1f} MB, "
          f"json.loads alone {theirs / 1e6:.1f} MB")  # fmt: skip
    k = tree.meta["kineto"]
    assert k["cpu_events"] == 1105 * 121 and k["gpu_events"] == 1105 * 60
    assert tree.metrics["gpu_time"].sum() == 1105 * 60 * 4.0
    assert ours < 2 * size
    assert theirs > 2 * ours


# ------------------------------------------------------------------ bad input
@pytest.mark.parametrize(
    "text, where, problem",
    [
        ('{"traceEvents": {}}', "traceEvents", "expected a list"),
        ('{"traceEvents": [1]}', "traceEvents[0]", "expected an object"),
        (
            '{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "dur": 1}]}',
            "traceEvents[0]",
            "without 'ts'",
        ),  # fmt: skip
        (
            '{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "ts": "0", "dur": 1}]}',
            "traceEvents[0]",
            "numeric ts and dur",
        ),  # fmt: skip
        (
            '{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "a", "ts": 0, "dur": NaN}]}',
            "traceEvents",
            "non-finite dur",
        ),  # fmt: skip
        ('{"traceEvents": [{"ph": "X"}, {"ph": "X"', "traceEvents[1]", "truncated"),
        ('{"traceEvents": [{"ph": "X"} {"ph": "X"}]}', "traceEvents[0]", "expected ','"),
        ('{"traceEvents": [], "x": tru, "y": 1}', "x", "invalid JSON"),
        ('{"traceEvents": [], "x": tru}', "x", "truncated"),
        ('{"schemaVersion": 1}', "top level", "no 'traceEvents'"),
        ('[{"ph": "X"}]', None, "expected a JSON object"),
        ('{"traceEvents": []} x', None, "extra data"),
    ],
)
def test_errors_name_file_and_place(tmp_path, text, where, problem):
    p = tmp_path / "bad.json"
    p.write_text(text)
    with pytest.raises(ProfileError) as e:
        cctviz.read(p, format="kineto")
    assert e.value.path == str(p)
    assert problem in e.value.problem
    if where:
        assert e.value.where.startswith(where)


def test_broken_gzip(tmp_path):
    raw = GLOO.read_bytes()
    p = tmp_path / "cut.json.gz"
    p.write_bytes(raw[: len(raw) // 2])
    with pytest.raises(ProfileError, match="gzip|truncated"):
        cctviz.read(p, format="kineto")


@pytest.mark.parametrize(
    "path, n",
    [
        (p, 25 if p.stat().st_size < 20_000 else 10 if p.stat().st_size < 200_000 else 1)
        for p in SAMPLES
    ],
    ids=lambda x: x.name[:40] if isinstance(x, Path) else str(x),
)
def test_fuzz(path, n, tmp_path):
    stats = fuzz_sample(path, "kineto", tmp_path, n=n)
    assert stats["truncate:error"] >= 1


def test_foreign_json_is_not_claimed(tmp_path):
    others = [HATCHET_JSON, *CALIPER_JSON, DATA / "hatchet/timemory/wall.tree.json"]
    others.append(DATA / "hatchet/pyinstrument-hatchet-json/pyinstrument-hatchet-profile.json")
    others.append(DATA / "thicket/example-json/user_ensemble.json")
    speedscope = tmp_path / "s.speedscope.json"
    speedscope.write_text(json.dumps({"$schema": "https://www.speedscope.app/file-format-schema.json",
                                      "shared": {"frames": []}, "profiles": []}))  # fmt: skip
    for p in [*others, speedscope]:
        assert not _sniff(p, head(p)), p
    assert_wrong_format_rejected(HATCHET_JSON, "kineto")
    assert_wrong_format_rejected(CALIPER_JSON[0], "kineto")
