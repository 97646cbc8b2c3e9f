"""The one interval nester (`cctviz.model.build.nest_intervals`) and its overlap
policies, and the one GPU-trace builder (`cctviz.model.gputrace.gpu_trace`).

- each policy on small hand-made intervals: what becomes of an interval that
  outlives the one it starts in, and of ties (a zero-length interval where another
  ends, equal intervals);
- ``"cut"`` (Kineto's) against a plain stack walk (the sweep the Kineto reader had)
  over random intervals, some giving way (Python frames), with and without a
  tolerance on ends; ``"outside"`` (Nsight Systems') against brute force; and the
  properties each promises: a parent holds its child (after clamping or cutting),
  nothing starts inside an interval it is not placed under, the busy time of a
  thread stays what it was;
- on the real traces: every event's ``parent_event`` holds it, and every GPU
  activity sits under the CPU call with its correlation id (from the files: the
  JSON's ``args.correlation``, the export's ``correlationId``).
"""

from __future__ import annotations

import gzip
import json
import sqlite3
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cctviz
from cctviz.model.build import OVERLAP_POLICIES, nest_intervals
from cctviz.model.gputrace import gpu_trace
from tests.conftest import DATA
from tests.hypothesis_profiles import examples

KINETO = sorted((DATA / "kineto").glob("*.json*"))
NSYS = DATA / "nsys" / "saxpy-mpi-cuda_nsys_perlmutter0.sqlite"
CHROME = sorted((DATA / "chrome-trace").glob("*.json*"))


def nest(start, end, policy, group=None, **kw):
    start = np.asarray(start, dtype=float)
    group = np.zeros(len(start), dtype=int) if group is None else np.asarray(group)
    return nest_intervals(group, start, np.asarray(end, dtype=float), overlap=policy, **kw)


# ------------------------------------------------------------------ hand-made
def test_policies_on_one_overlap():
    """A = [0, 10], B = [5, 15] starts in A and outlives it, C = [7, 8] is inside
    both, D = [12, 13] starts after A ends, inside B."""
    s, e = [0, 5, 7, 12], [10, 15, 8, 13]
    c = nest(s, e, "clamp")  # B ends with A; D is after both
    assert c["parent"].tolist() == [-1, 0, 1, -1]
    assert c["end"].tolist() == [10, 10, 8, 13] and c["clamped"].tolist() == [0, 1, 0, 0]
    k = nest(s, e, "cut")  # A ends where B starts; B keeps its length and C, D
    assert k["parent"].tolist() == [-1, -1, 1, 1]
    assert k["end"].tolist() == [5, 15, 8, 13] and k["cut_by"].tolist() == [1, -1, -1, -1]
    assert not k["trimmed"].any()
    y = nest(s, e, "cut", yields=np.array([0, 1, 0, 0], bool))  # B gives way instead
    assert y["parent"].tolist() == [-1, -1, 0, 1]
    assert y["start"].tolist() == [0, 10, 7, 12] and y["end"].tolist() == [10, 15, 8, 13]
    assert y["trimmed"].tolist() == [0, 1, 0, 0] and not y["cut"].any()
    o = nest(s, e, "outside")  # nothing shortened; C under the later of the two
    assert o["parent"].tolist() == [-1, -1, 1, 1]
    assert o["end"].tolist() == e and o["stream"] is None


def test_cut_goes_under_the_innermost_that_holds_it():
    """B outlives A1 and A2 (open inside A0) but fits A0: under A0; A1 and A2 end
    where B starts, cut by it."""
    k = nest([0, 1, 2, 3], [20, 10, 5, 12], "cut")
    assert k["parent"].tolist() == [-1, 0, 1, 0]
    assert k["end"].tolist() == [20, 3, 3, 12] and k["cut_by"].tolist() == [-1, 3, 3, -1]


def test_a_later_interval_goes_under_a_trimmed_one():
    """What torch.profiler writes with with_stack: ProfilerStep#1 (P) opens inside
    the frames step > enter and closes inside the next step2 > exit2. The step
    cuts the frames it outlives; step2 and exit2 give way, start where the step
    ends and hold what starts after; op starts inside both the step and exit2 and
    stays in the step."""
    names = ["work", "step", "enter", "P", "op1", "step2", "exit2", "op"]
    s = [0, 10, 20, 30, 40, 580, 590, 595]
    e = [1000, 100, 80, 620, 50, 700, 650, 598]
    frame = np.array([1, 1, 1, 0, 0, 1, 1, 0], bool)
    k = nest(s, e, "cut", yields=frame)
    par = dict(zip(names, (names[p] if p >= 0 else None for p in k["parent"])))
    assert par == {"work": None, "step": "work", "enter": "step", "P": "work",
                   "op1": "P", "step2": "work", "exit2": "step2", "op": "P"}  # fmt: skip
    assert k["end"].tolist()[1:3] == [30, 30]  # the frames the step outlives end at its start
    assert k["start"].tolist()[5:7] == [620, 620]  # step2 and exit2 start at its end
    assert k["trimmed"].tolist() == [0, 0, 0, 0, 0, 1, 1, 0]


def test_a_non_yielding_interval_in_a_trimmed_head():
    """F gives way to A (starts at A's end, 10); C starts inside A before that and
    outlives A but fits F: as on the walk's stack, C goes under F and A ends at C's
    start; F keeps the start it was given."""
    k = nest([0, 5, 7], [10, 20, 15], "cut", yields=np.array([0, 1, 0], bool))
    assert k["parent"].tolist() == [-1, -1, 1]
    assert k["start"].tolist() == [0, 10, 7] and k["end"].tolist() == [7, 20, 15]
    assert k["cut_by"].tolist() == [2, -1, -1]


@pytest.mark.parametrize("policy", OVERLAP_POLICIES)
def test_ties(policy):
    """Z (zero-length) starts where A ends; E1, E2 are equal; W and V (zero-length)
    are equal too; B starts where A ends."""
    s, e = [0, 10, 20, 20, 30, 30], [10, 10, 25, 25, 30, 30]
    got = nest(s, e, policy)["parent"].tolist()
    want = {
        "clamp": [-1, -1, -1, 2, -1, -1],  # Z follows A; equal: the first outside
        "cut": [-1, 0, -1, 2, -1, -1],  # Z inside A; zero-length W, V side by side
        "outside": [-1, 0, -1, 2, -1, 4],  # containment: Z in A, V in W
    }[policy]
    assert got == want
    # a longer interval B starting where A ends: A is left first, Z goes into B
    assert nest([0, 10, 10], [10, 15, 10], policy)["parent"].tolist() == [-1, -1, 1]


def test_cut_counts_ends_within_tol_as_equal():
    """B ends 0.5 after A: with tol 1 it fits A (no cut), without it cuts A."""
    assert nest([0, 5], [10, 10.5], "cut", tol=1.0)["parent"].tolist() == [-1, 0]
    k = nest([0, 5], [10, 10.5], "cut")
    assert k["parent"].tolist() == [-1, -1] and k["end"].tolist() == [5, 10.5]


def test_groups_are_apart_and_order_is_the_callers():
    k = nest([0, 1, 0, 1], [10, 5, 10, 5], "cut", group=[0, 0, 1, 1])
    assert k["parent"].tolist() == [-1, 0, -1, 2]
    # two equal intervals: the caller's order says which is outside
    o = nest([0, 0], [5, 5], "cut", order=np.array([1, 0]))
    assert o["parent"].tolist() == [1, -1]
    with pytest.raises(ValueError, match="overlap"):
        nest([0], [1], "drop")


# ------------------------------------------------------------------ references
def stack_walk_cut(group, start, end, frame, tol):
    """Reference for ``overlap="cut"``: the Kineto reader's sweep, a stack per
    group over the intervals by (start, longer first, given order). Returns the
    parents, starts, ends, and which were cut or trimmed."""
    n = len(start)
    order = sorted(range(n), key=lambda k: (group[k], start[k], start[k] - end[k], k))
    beg, fin = list(map(float, start)), [max(float(a), float(b)) for a, b in zip(start, end)]
    parent, cut, trimmed = [-1] * n, [False] * n, [False] * n
    st_end: list[float] = []
    st_pos: list[int] = []
    st_zero: list[bool] = []
    prev = None
    for j in order:
        if group[j] != prev:
            st_end, st_pos, st_zero, prev = [], [], [], group[j]
        s, e = beg[j], fin[j]
        while st_end:  # one ending at s holds a zero-length one, but for a zero-length one
            pe = st_end[-1]
            if pe > s or (pe == s and e == s and not st_zero[-1]):
                break
            st_end.pop(), st_pos.pop(), st_zero.pop()
        if st_end and e - st_end[-1] > tol:  # it outlives the innermost open interval
            k = len(st_end) - 2
            while k >= 0 and e - st_end[k] > tol:
                k -= 1
            if k >= 0:
                parent[j] = st_pos[k]
                e = min(e, st_end[k])
            if frame[j]:  # gives way: starts where the last it outlives ends, below them
                beg[j] = st_end[k + 1]
                trimmed[j] = True
                st_end.insert(k + 1, e), st_pos.insert(k + 1, j), st_zero.insert(k + 1, False)
                continue
            for o in st_pos[k + 1 :]:  # what it outlives ends where it starts
                fin[o] = min(fin[o], s)
                cut[o] = True
            del st_end[k + 1 :], st_pos[k + 1 :], st_zero[k + 1 :]
        elif st_end:
            parent[j] = st_pos[-1]
            e = min(e, st_end[-1])
        st_end.append(e), st_pos.append(j), st_zero.append(e == s)
    return parent, beg, fin, cut, trimmed


rows = st.lists(
    st.tuples(st.integers(0, 1), st.integers(0, 40), st.integers(0, 15), st.booleans()),
    min_size=1,
    max_size=40,
)


@settings(max_examples=examples(400), deadline=None)
@given(rows, st.sampled_from([0.0, 1.0]), st.booleans())
def test_cut_is_the_stack_walk(rows, tol, frames):
    group = [g for g, _, _, _ in rows]
    start = [float(s) for _, s, _, _ in rows]
    end = [float(s + d) for _, s, d, _ in rows]
    frame = np.asarray([f and frames for _, _, _, f in rows], dtype=bool)
    k = nest_intervals(np.asarray(group), np.asarray(start), np.asarray(end),
                       overlap="cut", yields=frame, tol=tol)  # fmt: skip
    parent, beg, fin, cut, trimmed = stack_walk_cut(group, start, end, frame, tol)
    assert k["parent"].tolist() == parent
    assert k["start"].tolist() == beg and k["end"].tolist() == fin
    assert k["cut"].tolist() == cut and k["trimmed"].tolist() == trimmed
    cutter = k["cut_by"][k["cut"]]
    assert (np.asarray(start)[cutter] == k["end"][k["cut"]]).all()  # cut where it starts


@settings(max_examples=examples(300), deadline=None)
@given(rows)
def test_cut_without_yielding_nests_and_keeps_the_busy_time(rows):
    """No interval gives way: after the cuts the intervals of a group nest (a
    parent holds its child, siblings do not overlap), each under the innermost
    that holds it, and the union of the intervals (a thread's busy time) is what
    it was: the overlap counts once."""
    group = np.asarray([g for g, _, _, _ in rows])
    start = np.asarray([float(s) for _, s, _, _ in rows])
    end = start + np.asarray([float(d) for _, _, d, _ in rows])
    k = nest_intervals(group, start, end, overlap="cut")
    s, e, par = k["start"], k["end"], k["parent"]
    has = par >= 0
    assert (s[par[has]] <= s[has]).all() and (e[has] <= e[par[has]]).all()
    assert (group[par[has]] == group[has]).all()
    n = len(s)
    rank = np.empty(n, dtype=int)  # the order taken: by start, the longer first, as given
    rank[np.lexsort((np.arange(n), start - end, start, group))] = np.arange(n)
    for i in range(n):  # no sibling overlaps it: it starts in no interval but its ancestors
        anc, a = set(), par[i]
        while a >= 0:
            anc.add(int(a))
            a = par[a]
        earlier = (s < s[i]) | ((s == s[i]) & (rank < rank[i]))
        inside = (group == group[i]) & earlier & (e > s[i]) & (e > s)
        assert set(np.flatnonzero(inside).tolist()) <= anc
    for g in np.unique(group):
        m = group == g
        before = np.zeros(60, bool)
        after = np.zeros(60, bool)
        for a, b in zip(start[m], end[m]):
            before[int(a) : int(b)] = True
        for a, b in zip(s[m], e[m]):
            after[int(a) : int(b)] = True
        assert (before == after).all()


@settings(max_examples=examples(300), deadline=None)
@given(rows)
def test_outside_is_the_innermost_that_contains(rows):
    group = np.asarray([g for g, _, _, _ in rows])
    start = np.asarray([s for _, s, _, _ in rows])
    end = start + np.asarray([d for _, _, d, _ in rows])
    got = nest_intervals(group, start, end, overlap="outside")["parent"].tolist()
    n = len(start)
    order = sorted(range(n), key=lambda i: (group[i], start[i], -end[i], i))
    rank = {i: r for r, i in enumerate(order)}
    want = []
    for i in range(n):  # the latest earlier (in that order) that contains it whole
        c = [j for j in range(n) if j != i and group[j] == group[i] and rank[j] < rank[i]
             and start[j] <= start[i] and end[j] >= end[i]]  # fmt: skip
        want.append(max(c, key=rank.get) if c else -1)
    assert got == want


@settings(max_examples=examples(300), deadline=None)
@given(rows)
def test_clamp_holds_every_child(rows):
    group = np.asarray([g for g, _, _, _ in rows])
    start = np.asarray([float(s) for _, s, _, _ in rows])
    end = start + np.asarray([float(d) for _, _, d, _ in rows])
    c = nest_intervals(group, start, end)  # "clamp", the default
    par, e = c["parent"], c["end"]
    has = par >= 0
    assert (start[par[has]] <= start[has]).all() and (e[has] <= e[par[has]]).all()
    assert (c["clamped"] == (e < end)).all()


@settings(max_examples=examples(300), deadline=None)
@given(rows, st.sampled_from(OVERLAP_POLICIES))
def test_whole_and_fractional_times_nest_alike(rows, policy):
    """Whole-number times take a packed sort, others numpy's lexsort: the same
    intervals at half the scale and a quarter off whole numbers nest alike."""
    group = np.asarray([g for g, _, _, _ in rows])
    start = np.asarray([float(s) for _, s, _, _ in rows])
    end = start + np.asarray([float(d) for _, _, d, _ in rows])
    frame = np.asarray([f for _, _, _, f in rows], dtype=bool)
    kw = {"yields": frame} if policy == "cut" else {}
    a = nest_intervals(group, start, end, overlap=policy, **kw)
    b = nest_intervals(group, start / 2 + 0.25, end / 2 + 0.25, overlap=policy, **kw)
    assert a["parent"].tolist() == b["parent"].tolist()
    assert (a["end"] / 2 + 0.25).tolist() == b["end"].tolist()
    if a.get("stream") is not None:
        assert a["stream"].tolist() == b["stream"].tolist()
    # integers: the clamp's first pass ties by the intervals' own keys, no order sorted
    c = nest_intervals(group, start.astype(np.int64), end.astype(np.int64), overlap=policy, **kw)
    assert c["parent"].tolist() == a["parent"].tolist()
    assert c["end"].tolist() == a["end"].tolist()
    if a.get("stream") is not None:
        assert c["stream"].tolist() == a["stream"].tolist()


def test_integer_times_nest_exactly_past_float_precision():
    """Epoch nanoseconds (past 2**53) given as integers nest and clamp to the ns:
    as floats, these four intervals' times would round to the same 256 ns."""
    t = 1_700_000_000_000_000_000
    start = np.array([t, t + 1, t + 2, t + 3], dtype=np.int64)
    end = np.array([t + 9, t + 4, t + 3, t + 12], dtype=np.int64)
    n = nest_intervals(np.zeros(4, int), start, end)
    assert n["parent"].tolist() == [-1, 0, 1, 1]  # the last starts in the second
    assert n["end"].dtype == np.int64
    assert (n["end"] - t).tolist() == [9, 4, 3, 4]  # and is clamped to its end
    assert n["clamped"].tolist() == [False, False, False, True]


# ------------------------------------------------------------------ the GPU builder
def test_gpu_trace_attaches_by_correlation_within_a_scope():
    cpu_corr = np.array([5, 5, 6, -1, 5])
    cpu_scope = np.array([0, 0, 0, 0, 1])
    gpu_corr = np.array([5, 6, 7, 5, -1])
    gpu_scope = np.array([0, 0, 0, 1, 0])
    g = gpu_trace(cpu_corr, gpu_corr, device=[0, 0, 1, 0, 0], stream=[7, 7, 3, 7, 7],
                  cpu_scope=cpu_scope, gpu_scope=gpu_scope, group=np.array([0, 0, 1, 0, 2]))  # fmt: skip
    assert g.launch.tolist() == [1, 2, -1, 4, -1]  # the last given of several
    assert g.group.tolist() == [-1, -1, 0, -1, 1] and g.groups.tolist() == [1, 2]
    first = gpu_trace(cpu_corr, gpu_corr, device=[0] * 5, stream=[0] * 5,
                      cpu_scope=cpu_scope, gpu_scope=gpu_scope, cpu_rank=-np.arange(5))  # fmt: skip
    assert first.launch.tolist() == [0, 2, -1, 4, -1]
    assert g.parent(cpu_offset=10, group_node=np.array([3, 4])).tolist() == [11, 12, 3, 14, 4]
    cols = g.event_columns(np.array([-1, 0, 1, -1, 3]), np.ones(5))
    assert cols["launch_event"].tolist() == [-1] * 5 + [1, 2, -1, 4, -1]
    assert cols["timed"].tolist() == [True] * 5 + [False] * 5
    assert cols["stream"].tolist() == [None] * 5 + [7, 7, 3, 7, 7]


# ------------------------------------------------------------------ real traces
def _timeline(path, fmt):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cctviz.read_timeline(path, format=fmt)


def _held(tl, tol_ns: float = 0.0):
    """Every timed event's parent_event is a timed event of its profile that holds it
    (its end within ``tol_ns``). Returns how many have a parent."""
    ev = tl.events
    timed = ev[ev["timed"].to_numpy()]
    by_id = ev.set_index("event")
    inner = timed[timed["parent_event"].to_numpy() >= 0]
    par = by_id.loc[inner["parent_event"].to_numpy()]
    assert par["timed"].all()
    assert (par["profile"].to_numpy() == inner["profile"].to_numpy()).all()
    assert (par["start"].to_numpy() <= inner["start"].to_numpy()).all()
    assert (inner["end"].to_numpy() <= par["end"].to_numpy() + tol_ns).all()
    return len(inner)


def _load_json(path: Path):
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:
        return json.load(f)


@pytest.mark.parametrize("path", KINETO, ids=lambda p: p.name[:40])
def test_kineto_events_nest_and_gpu_work_sits_under_its_launch(path):
    tl = _timeline(path, "kineto")
    doc = _load_json(path)
    events = [e for e in doc["traceEvents"] if e.get("ph") == "X" and "args" in e]
    # ends that differ by float rounding count as equal (the reader's tolerance)
    big = max(abs(e["ts"]) for e in events) + max(e["dur"] for e in events)
    _held(tl, tol_ns=4 * float(np.spacing(big)) * 1e3 + 1)
    ev = tl.events
    if "launch_event" not in ev:
        return
    names = tl.tree.nodes["name"].to_numpy()
    gpu = ev[~ev["timed"].to_numpy()]
    launched = gpu[gpu["launch_event"].to_numpy() >= 0]
    by_id = ev.set_index("event")
    launcher = by_id.loc[launched["launch_event"].to_numpy()]
    # in the tree: the GPU node under its launch's node
    assert (tl.tree.parent[launched["node"].to_numpy()] == launcher["node"].to_numpy()).all()
    # from the file: (GPU name, name of the CPU event of its correlation), as pairs
    cpu_cats = {"cpu_op", "Operator", "user_annotation", "python_function", "cuda_runtime",
                "cuda_driver", "Runtime", "xpu_runtime", "mtia_runtime",
                "privateuse1_runtime", "privateuse1_driver"}  # fmt: skip
    gpu_cats = {"kernel", "Kernel", "gpu_memcpy", "Memcpy", "gpu_memset", "Memset"}
    cpu_of: dict = {}
    for e in sorted(events, key=lambda e: (e["ts"], -e["dur"])):  # the first of an id
        c = e["args"].get("correlation")
        if e.get("cat") in cpu_cats and c is not None:
            cpu_of.setdefault(c, e["name"])
    want = Counter(
        (e["name"], cpu_of[e["args"]["correlation"]])
        for e in events
        if e.get("cat") in gpu_cats and e["args"].get("correlation") in cpu_of
    )
    got = Counter(zip(names[launched["node"].to_numpy()], names[launcher["node"].to_numpy()]))
    assert got == want and sum(got.values()) > 0


def test_nsys_events_nest_and_gpu_work_sits_under_its_launch():
    tl = _timeline(NSYS, "nsys")
    assert _held(tl) > 0
    ev = tl.events
    names = tl.tree.nodes["name"].to_numpy()
    gpu = ev[~ev["timed"].to_numpy()]
    assert (gpu["launch_event"].to_numpy() >= 0).all()
    launcher = ev.set_index("event").loc[gpu["launch_event"].to_numpy()]
    assert (tl.tree.parent[gpu["node"].to_numpy()] == launcher["node"].to_numpy()).all()
    assert gpu["device"].notna().all()
    with sqlite3.connect(NSYS) as con:  # the innermost (latest) call of the correlation
        rows = con.execute(
            "SELECT s.value, r.value FROM CUPTI_ACTIVITY_KIND_KERNEL k "
            "JOIN CUPTI_ACTIVITY_KIND_RUNTIME c ON c.correlationId = k.correlationId "
            "JOIN StringIds s ON s.id = k.demangledName JOIN StringIds r ON r.id = c.nameId "
            "WHERE c.start = (SELECT max(start) FROM CUPTI_ACTIVITY_KIND_RUNTIME "
            "WHERE correlationId = k.correlationId)"
        ).fetchall()
    kernels = gpu[(tl.tree.nodes["kind"].to_numpy()[gpu["node"].to_numpy()] == "kernel")]
    got = Counter(
        zip(
            names[kernels["node"].to_numpy()],
            names[ev.set_index("event").loc[kernels["launch_event"].to_numpy(), "node"]],
        )
    )
    assert got == Counter(rows) and len(rows) > 0


@pytest.mark.parametrize("path", CHROME, ids=lambda p: p.name[:40])
def test_chrome_events_nest(path):
    assert _held(_timeline(path, "chrome")) > 0  # the clamped ends: strictly
