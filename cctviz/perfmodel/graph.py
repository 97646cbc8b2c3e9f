"""The dependency graph of a Timeline, for the replay (:mod:`.replay`).

Built once per timeline from arrays, no Python object per event:

- **pieces**: each lane's (a profile's host thread, or its GPU stream) time cut
  into the own time of its intervals, in order: an interval's own time is the
  stretches between its children (the first from its start to its first child,
  the last from its last child to its end; a leaf is one piece), the gaps
  between a lane's top intervals are ``idle`` pieces. A communication call
  (a node of kind ``comm``) is one piece, whatever is recorded inside it. The
  parents come from the events' ``parent_event`` where the source nests by
  time (Kineto), else from the model's interval nester
  (:func:`cctviz.model.build.nest_intervals`, its clamp policy).
- **chunks**: runs of pieces of one lane that nothing outside the lane waits
  for or holds back: a chunk ends where a collective call starts, and every
  collective call and synchronisation is a chunk of its own. The replay walks
  chunks, not events.
- **edges**: program order (a chunk starts where the one before it on its
  lane ends); across ranks, each matched collective instance
  (:func:`cctviz.ops.collectives.instances`): a member's call ends no earlier
  than the last member's arrival plus its transfer; an *asynchronous* call (one
  whose recorded ``comm_time``, issue to completion, outlasts the call: DDP's
  bucket all-reduces, ``async_op=True``) completes no earlier than the last
  arrival plus its transfer, and the rank waits for that completion at the
  end of the interval that issued it (DDP's reducer waits at the end of
  backward) or at the next ``wait`` call on the lane; on a GPU stream, work
  starts after the work before it and after its launch call (launch edges), and
  a host synchronisation ends after the work it waited for (sync edges).

Times are int64 ns on the timeline's clock; durations float64 ns.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd

from ..model._algo import (
    level_order,
    lexsort,
    preorder_permutation,
    sorted_unique,
    stable_order,
    subtree_sizes,
)
from ..model.build import nest_intervals
from ..model.collectives import collective_kind
from ..model.timeline import Timeline, profile_ranks
from ..ops.collectives import instances

#: chunk types
PLAIN, COLL, ISSUE, SYNC, KERNEL = 0, 1, 2, 3, 4
#: piece kinds (the critical path's ``kind``)
KINDS = ("compute", "launch", "gpu", "comm", "wait", "idle")  # "wait": see CriticalPath
K_COMPUTE, K_LAUNCH, K_GPU, K_COMM, K_WAIT, K_IDLE = range(len(KINDS))
#: a call completes asynchronously where its completion is this much after its return
ASYNC_SLACK_NS = 1_000
#: node kinds of GPU work and of launches (Kineto's, nsys')
GPU_KINDS = ("kernel", "gpu_memcpy", "gpu_memset", "gpu", "memcpy", "memset")
LAUNCH_NAMES = ("cudaLaunchKernel", "cuLaunchKernel", "hipLaunchKernel", "hipExtLaunchKernel")
#: host calls that wait for the device's work
GPU_SYNC_NAMES = (
    "cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize", "cudaMemcpy",
    "hipDeviceSynchronize", "hipStreamSynchronize", "hipEventSynchronize", "hipMemcpy",
)  # fmt: skip
#: the runtime's name of a wait on asynchronous work
WAIT_NAME = "wait"


@dataclass
class Graph:
    """Pieces, chunks and edges of a timeline (module docstring)."""

    timeline: Timeline
    # pieces, in lane then time order
    start: np.ndarray  # measured, ns
    end: np.ndarray
    dur: np.ndarray  # float64 ns
    owner: np.ndarray  # event index (of the timeline's events), -1 - lane idle
    # chunks
    c_lane: np.ndarray
    c_type: np.ndarray
    c_first: np.ndarray  # first piece
    c_stop: np.ndarray  # one past the last piece
    c_start: np.ndarray  # measured start
    c_end: np.ndarray  # measured end
    c_inst: np.ndarray  # instance (COLL, ISSUE), -1
    c_transfer: np.ndarray  # ns after the last arrival (COLL, ISSUE)
    c_wait: np.ndarray  # measured wait for the completion (SYNC), ns
    # instances: member chunks (CSR), syncs: the ISSUE chunks each SYNC waits for (CSR)
    inst_ptr: np.ndarray
    inst_chunks: np.ndarray
    sync_ptr: np.ndarray
    sync_chunks: np.ndarray
    # per event: its first and last piece; per lane: its rank
    ev_first: np.ndarray
    ev_last: np.ndarray
    lane_rank: np.ndarray  # per lane
    notes: list[str] = field(default_factory=list)
    c_launch: np.ndarray | None = None  # GPU chunk: the chunk of its launch (-1)
    c_gap: np.ndarray | None = None  # GPU chunk: its scheduling latency, ns
    c_into: np.ndarray | None = None  # GPU chunk: how far into its launch it can start
    lane_prof: np.ndarray | None = None  # per lane: its profile
    ev_lane: np.ndarray | None = None  # per event: its lane
    ev_node: np.ndarray | None = None  # per event: its node
    ev_kind: np.ndarray | None = None  # per event: its pieces' kind (K_*)

    @property
    def n_chunks(self) -> int:
        return int(self.c_lane.shape[0])

    # per piece, made when first asked for (each a full-size array: the build
    # leaves out what the replay does not need)
    @cached_property
    def lane(self) -> np.ndarray:
        """Each piece's lane."""
        return self.lane_of(self.owner)

    def lane_of(self, owners: np.ndarray) -> np.ndarray:
        """The lane of pieces with these ``owners`` (an idle one's: ``-1 - owner``)."""
        return _lane_of(owners, self.ev_lane)

    @cached_property
    def node(self) -> np.ndarray:
        """Each piece's owner's node, -1 idle."""
        return self.node_of(self.owner)

    @cached_property
    def kind(self) -> np.ndarray:
        """Each piece's kind (K_*)."""
        return self.kind_of(self.owner)

    def node_of(self, owners: np.ndarray) -> np.ndarray:
        """The node of pieces with these ``owners`` (-1 idle)."""
        return _of_owner(self.ev_node, -1, self.lane_prof.shape[0])[owners]

    def kind_of(self, owners: np.ndarray) -> np.ndarray:
        """The kind (K_*) of pieces with these ``owners``."""
        return _of_owner(self.ev_kind, K_IDLE, self.lane_prof.shape[0])[owners]

    @cached_property
    def chunk(self) -> np.ndarray:
        """Each piece's chunk."""
        return np.repeat(np.arange(self.n_chunks), self.c_stop - self.c_first)

    def chunk_of(self, pieces: np.ndarray | int) -> np.ndarray:
        """The chunk of each of ``pieces`` (chunks are runs of pieces)."""
        return np.searchsorted(self.c_first, pieces, side="right") - 1


def build(tl: Timeline) -> Graph:
    """The dependency graph of ``tl`` (module docstring)."""
    ev = tl.events
    n = len(ev)
    tree = tl.tree
    node = ev["node"].to_numpy(dtype=np.int64)
    prof = ev["profile"].to_numpy(dtype=np.int64)
    start = ev["start"].to_numpy(dtype=np.int64)
    end = ev["end"].to_numpy(dtype=np.int64)
    timed = ev["timed"].to_numpy(dtype=bool)
    kinds = tree.nodes["kind"].astype(str).to_numpy() if "kind" in tree.nodes else None
    names = tree.nodes["name"].astype(str).to_numpy()
    is_comm_node = kinds == "comm" if kinds is not None else np.zeros(len(tree), dtype=bool)
    gpu = _gpu_events(ev, timed)
    lane, lane_prof = _lanes(tl, node, prof, gpu, ev)
    with ThreadPoolExecutor(1) as side:  # the collectives matched beside the nesting
        matched = side.submit(instances, tl) if is_comm_node.any() else None
        parent, end, stream = _parents(ev, lane, start, end, timed)
        if matched is not None:
            matched.result()  # (memoised on the timeline: _instances takes it from there)
    comm = timed & is_comm_node[node]
    msg_send, msg_recv = _messages(tl, node, names, prof, start, end, timed, parent)
    comm[msg_send] = True  # a blocking send or receive: its region is the call
    comm[msg_recv] = True
    inside = _inside(parent, comm)  # below a comm call: folded into it
    owner, p_start, p_end, new_lane, dur, ev_first, ev_last = _pieces(
        stream, timed & ~inside, gpu & ~inside, lane, parent, start, end
    )

    inst = _instances(tl, comm)
    calls = np.flatnonzero(comm & (inst >= 0))
    comp = np.zeros(n, dtype=np.int64)  # completion of every matched call
    comp[calls] = start[calls] + _comm_time(ev, start, end, calls)
    known = np.zeros(n, dtype=bool)  # completion recorded
    known[calls] = comp[calls] > end[calls] + ASYNC_SLACK_NS
    inferred = _returns_early(inst, node, start, end, len(tree))  # completion not recorded
    # a message: the receive waits for the send (an instance of the two); the send
    # waits for nobody (eager)
    n_coll = int(inst.max()) + 1 if n and inst.max() >= 0 else 0
    inst[msg_send] = inst[msg_recv] = n_coll + np.arange(msg_send.shape[0])
    known[msg_send] = known[msg_recv] = False
    inferred[msg_send] = inferred[msg_recv] = False
    is_async = known | inferred
    blocking = comm & (inst >= 0) & ~is_async
    blocking[msg_send] = False
    async_calls, sync_of = _sync_targets(is_async, parent, lane, start, node, names, comm)
    launched, launch_of = _launch_of(ev, gpu)
    launches = np.zeros(n, dtype=bool)
    launches[launch_of] = True
    gpu_sync = timed & np.isin(names, GPU_SYNC_NAMES)[node]
    gpu_sync |= _blocking_launches(launched, launch_of, end, n)
    # chunk boundaries: every comm, launch, GPU and sync piece is a chunk of its own
    # (as sorted piece indices: a comm call is one piece, what it holds folded in)
    last_piece = ev_last
    comm_pieces = _last_pieces(last_piece, comm)
    waits = np.zeros(n + 1, dtype=bool)
    waits[sync_of[sync_of >= 0]] = True
    waits[:n] |= gpu_sync
    sync_pieces = _last_pieces(last_piece, waits[:n])
    special = sorted_unique(
        np.concatenate([comm_pieces, sync_pieces, _last_pieces(last_piece, launches | gpu)])
    )
    after = special[special + 1 < len(owner)] + 1
    c_first = sorted_unique(np.concatenate([np.flatnonzero(new_lane), special, after]))
    c_stop = np.r_[c_first[1:], len(owner)].astype(np.int64)
    n_chunks = c_first.shape[0]
    c_lane = _lane_of(owner[c_first], lane)
    c_start = p_start[c_first]
    c_end = p_end[c_stop - 1] if n_chunks else np.zeros(0, np.int64)
    c_owner = owner[c_first]
    c_type = np.full(n_chunks, PLAIN, dtype=np.int8)
    at_comm = np.searchsorted(c_first, comm_pieces)
    of_comm = c_owner[at_comm]
    c_type[at_comm[blocking[of_comm]]] = COLL
    c_type[at_comm[is_async[of_comm]]] = ISSUE
    c_type[np.searchsorted(c_first, sync_pieces)] = SYNC
    at_special = np.searchsorted(c_first, special)
    of_special = c_owner[at_special]
    c_type[at_special[(of_special >= 0) & gpu[np.maximum(of_special, 0)]]] = KERNEL
    c_inst = np.full(n_chunks, -1, dtype=inst.dtype)
    c_inst[at_comm] = inst[of_comm]
    # the last arrival of every instance, measured
    member = c_inst >= 0
    n_inst = int(inst.max()) + 1 if n and inst.max() >= 0 else 0
    last_arrival = np.full(n_inst, np.iinfo(np.int64).min, dtype=np.int64)
    np.maximum.at(last_arrival, c_inst[member], c_start[member])
    c_transfer = np.zeros(n_chunks, dtype=np.float64)
    c_transfer[member] = np.maximum(c_end[member] - last_arrival[c_inst[member]], 0)
    inst_ptr, inst_chunks = _csr(c_inst[member], np.flatnonzero(member), n_inst)
    # what each sync waits for: asynchronous collectives, GPU work

    def chunk_of_event(e: np.ndarray) -> np.ndarray:  # -1: no event, or no piece
        p = np.where(e >= 0, last_piece[np.maximum(e, 0)], -1)
        return np.where(p >= 0, np.searchsorted(c_first, p, side="right") - 1, -1)

    issue = np.flatnonzero(c_type == ISSUE)
    target = chunk_of_event(_looked_up(async_calls, sync_of, c_owner[issue]))
    ok = target >= 0
    c_transfer[issue] = _issue_transfer(
        issue, target, c_inst, c_start, c_end, comp[c_owner[issue]], known[c_owner[issue]],
        last_arrival, n_chunks,
    )  # fmt: skip
    done = last_arrival[c_inst[issue[ok]]] + c_transfer[issue[ok]]
    kern = np.flatnonzero(c_type == KERNEL)
    c_launch = np.full(n_chunks, -1, dtype=np.int64)
    c_launch[kern] = chunk_of_event(_looked_up(launched, launch_of, c_owner[kern]))
    c_gap, c_into = _kernel_gaps(kern, c_launch, c_lane, c_start, c_end, n_chunks)
    g_sync, g_dep = _gpu_waits(
        np.flatnonzero((c_type == SYNC) & gpu_sync[np.maximum(c_owner, 0)]), kern, c_launch, c_lane, c_start,
        lane_prof,
    )  # fmt: skip
    # a sync waited only for work the measurement shows done when it returned
    # (cudaStreamSynchronize names one stream, which the trace does not keep)
    fits = c_end[g_dep] <= c_end[g_sync] + ASYNC_SLACK_NS
    g_sync, g_dep = g_sync[fits], g_dep[fits]
    s_key = np.concatenate([target[ok], g_sync])
    sync_ptr, sync_chunks = _csr(s_key, np.concatenate([issue[ok], g_dep]), n_chunks)
    c_wait = np.zeros(n_chunks, dtype=np.float64)
    if s_key.size:
        latest = np.full(n_chunks, -np.inf)
        np.maximum.at(latest, s_key, np.concatenate([done, c_end[g_dep].astype(np.float64)]))
        s_ = np.unique(s_key)
        span = (c_end[s_] - c_start[s_]).astype(np.float64)
        c_wait[s_] = np.clip(latest[s_] - c_start[s_], 0, span)
        # a sync's one piece keeps its own time only: what-if changes scale that,
        # never the measured wait (the replay recomputes the wait)
        dur[c_first[s_]] = np.maximum(dur[c_first[s_]] - c_wait[s_], 0.0)
    notes = []
    if kern.size and not g_sync.size:
        notes.append(
            "the trace has GPU work but no host call that waits for it (no "
            "cudaDeviceSynchronize, cudaStreamSynchronize, cudaEventSynchronize or "
            "blocking copy): the host is taken never to wait for the device"
        )
    if (sync_of < 0).any():
        notes.append("some asynchronous calls have no interval that waits for them")
    lane_rank = profile_ranks(tl.profiles)[lane_prof]
    return Graph(
        tl, p_start, p_end, dur, owner, c_lane, c_type, c_first, c_stop, c_start,
        c_end, c_inst, c_transfer, c_wait, inst_ptr, inst_chunks, sync_ptr, sync_chunks,
        ev_first, ev_last, lane_rank, notes, c_launch, c_gap, c_into, lane_prof, lane, node,
        _event_kinds(node, kinds, names, comm, gpu),
    )  # fmt: skip


def _gpu_events(ev: pd.DataFrame, timed: np.ndarray) -> np.ndarray:
    """Untimed events that ran on a device (Kineto's kernels, copies, sets)."""
    out = np.zeros(len(ev), dtype=bool)
    for col in ("launch_event", "device"):
        if col in ev.columns:
            v = pd.to_numeric(ev[col], errors="coerce").to_numpy(dtype=np.float64)
            out |= np.isfinite(v) & (v >= 0)
    return out & ~timed


def _lanes(
    tl: Timeline, node: np.ndarray, prof: np.ndarray, gpu: np.ndarray, ev: pd.DataFrame
) -> tuple[np.ndarray, np.ndarray]:
    """Each event's lane: (profile, thread) for the host (the thread: the node's
    ancestor of kind ``thread``, where the tree has one), (profile, device, stream)
    for GPU work; and each lane's profile. Lanes of a profile are consecutive."""
    tree = tl.tree
    kinds = tree.nodes["kind"].astype(str).to_numpy() if "kind" in tree.nodes else None
    thread = np.full(len(tree), -1, dtype=np.int64)
    if kinds is not None and (kinds == "thread").any():
        own = np.where(kinds == "thread", np.arange(len(tree)), -1)
        par = np.asarray(tree.parent)
        for lv in tree.levels:
            up = np.where(par[lv] >= 0, thread[np.maximum(par[lv], 0)], -1)
            thread[lv] = np.where(own[lv] >= 0, own[lv], up)
    if not gpu.any() and (thread < 0).all():  # a profile is a lane
        n_prof = max(tl.n_profiles, int(prof.max()) + 1 if prof.size else 0)
        return prof.copy(), np.arange(n_prof, dtype=np.int64)
    where = thread[node].astype(object)
    if gpu.any():
        dev = ev["device"].astype(str).to_numpy() if "device" in ev.columns else ""
        stream = ev["stream"].astype(str).to_numpy() if "stream" in ev.columns else ""
        where = np.where(gpu, np.char.add(np.char.add("gpu ", np.asarray(dev, dtype=str)),
                                          np.char.add(" ", np.asarray(stream, dtype=str))), where)  # fmt: skip
    key = pd.DataFrame({"p": prof, "g": gpu, "w": pd.Series(where).astype(str).to_numpy()})
    lane = key.groupby(["p", "g", "w"], sort=True).ngroup().to_numpy(dtype=np.int64)
    n_lanes = int(lane.max()) + 1 if lane.size else 0
    lane_prof = np.zeros(n_lanes, dtype=np.int64)
    lane_prof[lane] = prof
    return lane, lane_prof


def _looked_up(keys: np.ndarray, values: np.ndarray, query: np.ndarray) -> np.ndarray:
    """The value of each of ``query`` among ``keys`` (ascending), -1 where absent."""
    if not keys.size:
        return np.full(query.shape[0], -1, dtype=np.int64)
    at = np.minimum(np.searchsorted(keys, query), keys.size - 1)
    return np.where(keys[at] == query, values[at], -1)


def _launch_of(ev: pd.DataFrame, gpu: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The GPU events with a known launch (ascending) and the events that
    launched them."""
    n = len(ev)
    none = np.zeros(0, dtype=np.int64)
    if "launch_event" not in ev.columns or not gpu.any():
        return none, none
    le = pd.to_numeric(ev["launch_event"], errors="coerce").to_numpy(dtype=np.float64)
    ids = ev["event"].to_numpy(dtype=np.int64) if "event" in ev.columns else np.arange(n)
    pos = pd.Series(np.arange(n), index=ids)
    pos = pos[~pos.index.duplicated()]
    g = np.flatnonzero(gpu & np.isfinite(le) & (le >= 0))
    at = pos.reindex(le[g].astype(np.int64)).to_numpy(dtype=np.float64)
    ok = np.isfinite(at)
    return g[ok], at[ok].astype(np.int64)


def _blocking_launches(g: np.ndarray, la: np.ndarray, end: np.ndarray, n: int) -> np.ndarray:
    """Host calls that returned only once the work they launched was done (a
    ``cudaMemcpyAsync`` to or from pageable memory): they wait for it."""
    out = np.zeros(n, dtype=bool)
    out[la[end[g] <= end[la] + ASYNC_SLACK_NS]] = True
    return out


def _last_pieces(last_piece: np.ndarray, events: np.ndarray) -> np.ndarray:
    """The last piece of each of ``events`` (a bool per event), sorted."""
    p = last_piece[events]
    return np.sort(p[p >= 0])


def _kernel_gaps(
    kern: np.ndarray,
    c_launch: np.ndarray,
    c_lane: np.ndarray,
    c_start: np.ndarray,
    c_end: np.ndarray,
    n_chunks: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Per GPU chunk: how far into its launch call the device could start it (at
    most the call's length: a kernel often starts before the call returns), and
    its measured start after the later of that and the end of the work before
    it on its stream (the device's latency), ns."""
    gap = np.zeros(n_chunks, dtype=np.float64)
    into = np.zeros(n_chunks, dtype=np.float64)
    if not kern.size:
        return gap, into
    low = np.iinfo(np.int64).min
    prev = kern - 1
    same = (prev >= 0) & (c_lane[np.maximum(prev, 0)] == c_lane[kern])
    ready = np.where(same, c_end[np.maximum(prev, 0)], low)
    la = c_launch[kern]
    has = la >= 0
    l0, l1 = c_start[np.maximum(la, 0)], c_end[np.maximum(la, 0)]
    at = np.minimum(l1, np.maximum(c_start[kern], l0))
    into[kern[has]] = (at - l0)[has]
    ready = np.maximum(ready, np.where(has, at, low))
    known = ready > low
    gap[kern[known]] = np.maximum(c_start[kern[known]] - ready[known], 0)
    return gap, into


def _gpu_waits(
    syncs: np.ndarray,
    kern: np.ndarray,
    c_launch: np.ndarray,
    c_lane: np.ndarray,
    c_start: np.ndarray,
    lane_prof: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """(sync chunk, GPU chunk) pairs: a synchronisation waits, on each stream of
    its profile, for the last work launched before it (streams run in order; the
    caller keeps those that ended before the sync returned)."""
    none = np.zeros(0, dtype=np.int64)
    if not syncs.size or not kern.size:
        return none, none
    la = c_launch[kern]
    issued = np.where(la >= 0, c_start[np.maximum(la, 0)], c_start[kern])
    out_s, out_k = [], []
    for lane in np.unique(c_lane[kern]):  # a loop per stream
        mine = kern[c_lane[kern] == lane]
        t = np.maximum.accumulate(issued[np.searchsorted(kern, mine)])
        ss = syncs[lane_prof[c_lane[syncs]] == lane_prof[lane]]
        k = np.searchsorted(t, c_start[ss], side="left") - 1
        ok = k >= 0
        out_s.append(ss[ok])
        out_k.append(mine[k[ok]])
    return np.concatenate(out_s), np.concatenate(out_k)


def _messages(
    tl: Timeline,
    node: np.ndarray,
    names: np.ndarray,
    prof: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    timed: np.ndarray,
    parent: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Blocking point-to-point messages, as (send, receive) pairs of the timed
    events that hold them (the regions of MPI_Send and MPI_Recv whose span the
    untimed message record has): the k-th send from rank a to rank b meets the
    k-th receive on b from a (MPI's order per pair, tags aside)."""
    none = np.zeros(0, dtype=np.int64)
    ev = tl.events
    if "peer" not in ev.columns:
        return none, none
    peer = pd.to_numeric(ev["peer"], errors="coerce").to_numpy(dtype=np.float64)
    kind = np.asarray([collective_kind(x) or "" for x in names], dtype=object)[node]
    rec = np.flatnonzero(~timed & np.isfinite(peer) & np.isin(kind, ("send", "recv")))
    if not rec.size:
        return none, none
    # the record's region: the deepest timed event with its span on its lane
    t = np.flatnonzero(timed)
    depth = np.zeros(len(node), dtype=np.int64)
    p = parent.copy()
    while (p >= 0).any():
        depth += p >= 0
        p = np.where(p >= 0, parent[np.maximum(p, 0)], -1)
    t = t[np.lexsort((-depth[t], end[t], start[t], prof[t]))]
    key_t = pd.MultiIndex.from_arrays([prof[t], start[t], end[t]])
    first = ~key_t.duplicated()
    region = pd.Series(t[first], index=key_t[first])
    at = region.reindex(pd.MultiIndex.from_arrays([prof[rec], start[rec], end[rec]])).to_numpy()
    ok = np.isfinite(at.astype(np.float64))
    rec, at = rec[ok], at[ok].astype(np.int64)
    ranks = profile_ranks(tl.profiles)
    me, other = ranks[prof[rec]], peer[rec].astype(np.int64)
    is_send = kind[rec] == "send"
    src = np.where(is_send, me, other)
    dst = np.where(is_send, other, me)
    frame = pd.DataFrame({"src": src, "dst": dst, "send": is_send, "t": start[rec], "at": at})
    frame = frame.sort_values(["src", "dst", "send", "t"], kind="stable")
    frame["k"] = frame.groupby(["src", "dst", "send"]).cumcount()
    pairs = frame[frame["send"]].merge(
        frame[~frame["send"]], on=["src", "dst", "k"], suffixes=("_s", "_r")
    )
    return pairs["at_s"].to_numpy(np.int64), pairs["at_r"].to_numpy(np.int64)


def _returns_early(
    inst: np.ndarray, node: np.ndarray, start: np.ndarray, end: np.ndarray, n_nodes: int
) -> np.ndarray:
    """Calls of contexts whose calls return before the last member arrives at
    some instance: they do not block (DDP's bucket all-reduces, issued from a
    comm hook; their completion is not recorded)."""
    out = np.zeros(inst.shape[0], dtype=bool)
    m = np.flatnonzero(inst >= 0)  # the members (few of the events)
    if not m.size:
        return out
    j = inst[m]
    last = np.full(int(j.max()) + 1, np.iinfo(np.int64).min, dtype=np.int64)
    np.maximum.at(last, j, start[m])
    early = m[end[m] + ASYNC_SLACK_NS < last[j]]
    async_node = np.zeros(n_nodes, dtype=bool)
    async_node[node[early]] = True
    out[m] = async_node[node[m]]
    return out


def _issue_transfer(
    issue: np.ndarray,
    target: np.ndarray,
    c_inst: np.ndarray,
    c_start: np.ndarray,
    c_end: np.ndarray,
    comp: np.ndarray,
    known: np.ndarray,
    last_arrival: np.ndarray,
    n_chunks: int,
) -> np.ndarray:
    """Completion of each asynchronous call after its instance's last arrival, ns.

    Recorded completions give it. Where they are not recorded, the calls that one
    interval waits for complete in order (one communication stream), so the
    last of them bounds the wait: it completes when the first member's wait ends
    (the earliest measured end of the members' waiting intervals); the earlier
    ones take their issue time after the last arrival."""
    a = last_arrival[c_inst[issue]].astype(np.float64)
    out = np.where(known, comp - a, (c_end[issue] - c_start[issue]).astype(np.float64))
    ok = (target >= 0) & ~known
    if ok.any():
        latest = np.full(n_chunks, -np.inf)
        np.maximum.at(latest, target[ok], a[ok])
        is_last = ok & (a >= latest[np.maximum(target, 0)])
        n_inst = int(c_inst.max()) + 1
        first_end = np.full(n_inst, np.inf)
        j = c_inst[issue[is_last]]
        np.minimum.at(first_end, j, c_end[target[is_last]].astype(np.float64))
        out = np.where(is_last, first_end[c_inst[issue]] - a, out)
    return np.maximum(out, 0.0)


#: events per block of lanes that the build nests and cuts into pieces at a time:
#: a block's arrays stay well below glibc's mmap threshold (32 MB) and near the
#: L3 cache's size, so their memory is reused rather than fresh pages each time,
#: and the blocks run on the machine's cores (nesting and pieces of 10M events on
#: 2 cores: 6.7 s as one block, 2.4 s in blocks of 1M, 2.0-2.5 s of 256k)
BLOCK_EVENTS = 1 << 18


def _lane_blocks(lane: np.ndarray, which: np.ndarray) -> list[Callable[[], np.ndarray]]:
    """The events ``which`` (a mask) in blocks of whole lanes of about
    :data:`BLOCK_EVENTS` each, in lane order: for each block, a function that
    gives its events (grouped by lane, each lane's ascending). One stable
    sort by lane (radix) for all the blocks."""
    n_lanes = int(lane.max()) + 1 if lane.size else 0
    per_lane = np.bincount(lane, weights=which, minlength=n_lanes).astype(np.int64)
    upto = np.cumsum(per_lane)  # events of the lanes up to each
    total = int(upto[-1]) if n_lanes else 0
    cuts = np.unique(np.searchsorted(upto, np.arange(BLOCK_EVENTS, total, BLOCK_EVENTS)))
    bounds = [0, *(int(c) + 1 for c in cuts if c + 1 < n_lanes), n_lanes]
    if len(bounds) == 2:
        return [lambda: np.flatnonzero(which)]
    idx = np.flatnonzero(which)
    idx = idx[stable_order(lane[idx])]
    at = np.r_[0, upto]

    def block(lo: int, hi: int) -> Callable[[], np.ndarray]:
        return lambda: idx[at[lo] : at[hi]]

    return [block(lo, hi) for lo, hi in zip(bounds[:-1], bounds[1:])]


def _on_blocks(fn: Callable[[Any], Any], blocks: list[Any]) -> list[Any]:
    """``fn`` of each block, on up to as many threads as the machine has cores
    (numpy's sorts, gathers and arithmetic run without the GIL)."""
    workers = min(len(blocks), os.cpu_count() or 1)
    if workers <= 1:
        return [fn(b) for b in blocks]
    with ThreadPoolExecutor(workers) as pool:
        return list(pool.map(fn, blocks))


def _parents(
    ev: pd.DataFrame, lane: np.ndarray, start: np.ndarray, end: np.ndarray, timed: np.ndarray
) -> tuple[np.ndarray, np.ndarray, list[tuple[np.ndarray, np.ndarray]]]:
    """Each event's enclosing timed event (-1 at the top), the ends used (a child
    that outlives its parent clamped to it: the nester's policy) and the timed
    events as Enter/Leave streams, one per block of lanes (:func:`_lane_blocks`),
    in lane order: each the block's events ``idx`` and its stream of them (``k``
    the Enter of event ``idx[k]``, ``-1 - k`` its Leave: the pieces gather from
    the block's arrays, not from every event's)."""
    n = len(ev)
    blocks = _lane_blocks(lane, timed)
    if "parent_event" in ev.columns:
        parent = np.full(n, -1, dtype=np.int64)
        end = end.copy()
        ids = ev["event"].to_numpy(dtype=np.int64)
        pos = np.full(int(ids.max()) + 2 if n else 1, -1, dtype=np.int64)
        pos[ids] = np.arange(n)
        par = ev["parent_event"].to_numpy(dtype=np.int64)
        ok = (par >= 0) & (par < pos.shape[0] - 1)
        parent[ok] = pos[par[ok]]
        parent[~timed] = -1
        parent = np.where((parent >= 0) & timed[np.maximum(parent, 0)], parent, -1)
        has = parent >= 0
        end[has] = np.maximum(np.minimum(end[has], end[parent[has]]), start[has])
        return parent, end, _on_blocks(lambda b: _euler_stream(b(), parent, lane, start), blocks)
    # the untimed here, the timed by their blocks (on the threads: apart)
    parent = np.empty(n, dtype=np.int64)
    parent[~timed] = -1
    clamped = np.empty_like(end)
    clamped[~timed] = end[~timed]

    def nest(block: Callable[[], np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        idx = block()
        if not idx.size:
            return idx, idx
        nested = nest_intervals(lane[idx], start[idx], end[idx])
        p = nested["parent"]
        parent[idx] = np.where(p >= 0, idx[np.maximum(p, 0)], -1)
        clamped[idx] = nested["end"]  # (int64: the times given)
        return idx, nested["stream"]

    return parent, clamped, _on_blocks(nest, blocks)


def _euler_stream(
    idx: np.ndarray, parent: np.ndarray, lane: np.ndarray, start: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The events ``idx`` (sorted) and their Enter/Leave stream (of positions in
    it), where their parents are given (each lane's events in pre-order,
    siblings by start): in pre-order, the Enter of the ``i``-th event comes
    after ``i - depth`` Leaves, its Leave after its subtree's Enters and Leaves.
    A parent outside ``idx`` counts as none."""
    m = idx.size
    idx = np.sort(idx)
    if not m:
        return idx, np.zeros(0, dtype=np.int64)
    up = parent[idx]
    at = np.minimum(np.searchsorted(idx, up), m - 1)
    par = np.where((up >= 0) & (idx[at] == up), at, -1)
    key = lexsort((start[idx], lane[idx]))
    sibling_key = np.empty(m, dtype=np.int64)
    sibling_key[key] = np.arange(m)  # lanes in order, each by start
    perm = preorder_permutation(par, sibling_key)
    depth, levels = level_order(par)
    size = subtree_sizes(par, levels)
    i = np.arange(m)
    enter = 2 * i - depth[perm]
    leave = enter + 2 * size[perm] - 1
    stream = np.empty(2 * m, dtype=np.int64)
    stream[enter] = perm
    stream[leave] = -1 - perm
    return idx, stream


def _pieces(
    streams: list[tuple[np.ndarray, np.ndarray]],
    host: np.ndarray,
    gpu: np.ndarray,
    lane: np.ndarray,
    parent: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
) -> tuple[np.ndarray, ...]:
    """The pieces, in lane then time order: (owner, start, end, whether it is its
    lane's first, duration (float64)) and each event's first and last piece (-1:
    none).

    On the host, one piece per entry of the Enter/Leave stream of the ``host``
    events (the others taken out: what is inside a comm call folds into it),
    until the lane's next entry: a piece of the interval entered (an Enter) or
    of the one left to (a Leave: the parent), an idle piece (owner ``-1 -
    lane``) where that is the top (a lane's last piece, from its last Leave, is
    idle and empty). A ``gpu`` event is one piece. Block by block (``streams``:
    :func:`_parents`)."""
    n = lane.shape[0]
    sizes = [int(host[idx].sum()) * 2 for idx, _ in streams]  # 2 entries an event
    at = np.r_[0, np.cumsum(sizes, dtype=np.int64)]
    index = np.int32 if at[-1] + gpu.sum() < 2**31 else np.int64  # (half the memory)
    first = np.full(n, -1, dtype=index)
    last = np.full(n, -1, dtype=index)
    t, p_end = (np.empty(int(at[-1]), dtype=np.int64) for _ in range(2))
    owner = np.empty(int(at[-1]), dtype=index if n < 2**31 else np.int64)  # (-1 - lane: idle)
    dur = np.empty(int(at[-1]), dtype=np.float64)
    new_lane = np.empty(int(at[-1]), dtype=bool)

    def cut(k: int) -> None:  # block k writes its slice (threads: apart)
        part = slice(at[k], at[k + 1])
        idx, stream = streams[k]
        _host_pieces(
            idx, stream, host, lane, parent, start, end, owner[part], t[part], p_end[part],
            new_lane[part], dur[part], first, last, int(at[k]),
        )  # fmt: skip

    _on_blocks(cut, list(range(len(streams))))
    g = np.flatnonzero(gpu)
    if not g.size:
        return owner, t, p_end, new_lane, dur, first, last
    ln = _lane_of(owner, lane)
    g = g[lexsort((end[g], start[g], lane[g]))]
    first[g] = last[g] = owner.shape[0] + np.arange(g.size)
    order = np.argsort(np.concatenate([ln, lane[g]]), kind="stable")
    where = np.empty_like(order)
    where[order] = np.arange(order.size)
    has = first >= 0
    first[has], last[has] = where[first[has]], where[last[has]]
    owner = np.concatenate([owner, g])[order]
    p_start = np.concatenate([t, start[g]])[order]
    p_end = np.maximum(np.concatenate([p_end, end[g]])[order], p_start)
    dur = (p_end - p_start).astype(np.float64)  # (int64 first: epoch ns)
    ln = np.concatenate([ln, lane[g]])[order]
    new_lane = np.r_[True, ln[1:] != ln[:-1]]
    return owner, p_start, p_end, new_lane, dur, first, last


def _host_pieces(
    idx: np.ndarray,
    stream: np.ndarray,
    host: np.ndarray,
    lane: np.ndarray,
    parent: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    owner: np.ndarray,
    t: np.ndarray,
    p_end: np.ndarray,
    new_lane: np.ndarray,
    dur: np.ndarray,
    first: np.ndarray,
    last: np.ndarray,
    offset: int,
) -> None:
    """:func:`_pieces` of one block's stream, into ``owner``, ``t`` (start),
    ``p_end``, ``new_lane`` (its lane's first), ``dur``: its slices of the
    pieces; and each of its events' first (its Enter's) and last (before its
    Leave) piece, ``offset`` on. The stream is of positions in ``idx``: what
    it needs of the events is gathered once into the block's arrays (small:
    the gathers per entry stay in the cache)."""
    k = stream ^ (stream >> 63)  # Enter k, Leave -1 - k: the event idx[k]
    keep = host[idx][k]
    if not keep.all():
        stream, k = stream[keep], k[keep]
    is_enter = stream >= 0
    ln = lane[idx][k]
    enter_at = np.flatnonzero(is_enter)
    leave_at = np.flatnonzero(~is_enter)
    t[enter_at] = start[idx][k[enter_at]]
    t[leave_at] = end[idx][k[leave_at]]
    up = parent[idx][k]
    ev = idx[k]
    np.copyto(owner, np.where(is_enter, ev, np.where(up >= 0, up, -1 - ln)))
    p_end[:-1] = t[1:]
    lane_end = np.flatnonzero(ln[1:] != ln[:-1])  # a lane's last entry
    p_end[lane_end] = t[lane_end]
    if t.size:
        p_end[-1] = t[-1]
    np.maximum(p_end, t, out=p_end)
    leave_at = leave_at - 1  # the piece before each Leave
    same = ln[1:] == ln[:-1]
    if (same & (t[1:] < t[:-1])).any() or (ln[1:] < ln[:-1]).any():
        # given parents whose children overlap (siblings that overlap in time, an
        # Euler tour goes subtree by subtree): the lane's pieces in time order
        order = lexsort((p_end, t, ln))
        for a in (owner, t, p_end):
            a[:] = a[order]
        ln = ln[order]
        at = np.empty_like(order)
        at[order] = np.arange(order.size)
        enter_at, leave_at = at[enter_at], at[leave_at]
        same = ln[1:] == ln[:-1]
    np.copyto(dur, p_end - t)  # (int64 first: epoch ns)
    new_lane[:1] = True
    new_lane[1:] = ~same
    first[ev[is_enter]] = enter_at + offset
    last[ev[~is_enter]] = leave_at + offset


def _inside(parent: np.ndarray, comm: np.ndarray) -> np.ndarray:
    """Whether an event lies (strictly) inside a comm event."""
    out = np.zeros(parent.shape[0], dtype=bool)
    has = parent >= 0
    if not comm[parent[has]].any():  # no comm event holds another
        return out
    p = parent.copy()
    while (p >= 0).any():
        live = p >= 0
        out[live] |= comm[p[live]]
        p = np.where(live, parent[np.maximum(p, 0)], -1)
    return out


def _lane_of(owners: np.ndarray, ev_lane: np.ndarray) -> np.ndarray:
    """The lane of pieces with these ``owners``: the event's, or ``-1 - owner`` (idle)."""
    return np.where(owners >= 0, ev_lane[np.maximum(owners, 0)], -1 - owners)


def _of_owner(per_event: np.ndarray, idle: object, n_lanes: int) -> np.ndarray:
    """``per_event`` padded with ``idle`` for the idle owners: indexed by a
    piece's owner (``-1 - lane`` from the end), one gather gives every piece's."""
    return np.concatenate([per_event, np.full(n_lanes, idle, dtype=per_event.dtype)])


def _event_kinds(
    node: np.ndarray, kinds: np.ndarray | None, names: np.ndarray, comm: np.ndarray, gpu: np.ndarray
) -> np.ndarray:
    """Each event's kind of piece (the critical path's ``kind``)."""
    of_node = np.full(names.shape[0], K_COMPUTE, dtype=np.int8)
    if kinds is not None:
        of_node[np.isin(kinds, GPU_KINDS)] = K_GPU
    of_node[np.isin(names, LAUNCH_NAMES)] = K_LAUNCH
    kind = of_node[node]
    kind[gpu & (kind != K_LAUNCH)] = K_GPU
    kind[comm] = K_COMM
    return kind


def _comm_time(
    ev: pd.DataFrame, start: np.ndarray, end: np.ndarray, calls: np.ndarray
) -> np.ndarray:
    """Issue to completion of ``calls`` (event indices), ns: the recorded
    ``comm_time`` where it is longer than the call (asynchronous work), else the
    call."""
    dur = end[calls] - start[calls]
    if "comm_time" not in ev.columns:
        return dur
    ct = ev["comm_time"].to_numpy(dtype=np.float64)[calls]
    ok = np.isfinite(ct)
    return np.where(ok, np.maximum(np.where(ok, ct, 0).astype(np.int64), dur), dur)


def _instances(tl: Timeline, comm: np.ndarray) -> np.ndarray:
    """The instance of every comm event among two ranks or more (-1 else)."""
    out = np.full(len(comm), -1, dtype=np.int32 if len(comm) < 2**31 else np.int64)
    if not comm.any():
        return out
    inst = instances(tl)  # collectives; messages are paired by _messages
    inst = inst[inst["ranks"] >= 2]
    if inst.empty:
        return out
    # renumber the instances densely
    _, dense = sorted_unique(inst["instance"].to_numpy(np.int64), return_inverse=True)
    calls = inst["event"].to_numpy(np.int64)
    mine = comm[calls]
    out[calls[mine]] = dense.reshape(-1)[mine]
    return out


def _sync_targets(
    is_async: np.ndarray,
    parent: np.ndarray,
    prof: np.ndarray,
    start: np.ndarray,
    node: np.ndarray,
    names: np.ndarray,
    comm: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """The asynchronous calls (ascending) and the event that waits for each (-1
    none): the first ``wait`` call after it on its lane, within the interval that
    issued it, else that interval (its end)."""
    a = np.flatnonzero(is_async)
    out = parent[a]
    if not a.size:
        return a, out
    waits = np.flatnonzero(comm & (names[node] == WAIT_NAME))
    if waits.size:
        w = waits[np.lexsort((start[waits], prof[waits]))]
        # the first wait after each call on its lane: (lane, start) ranked jointly
        both = np.concatenate([start[w], start[a]])
        _, rank = np.unique(both, return_inverse=True)
        rank = rank.reshape(-1).astype(np.int64)
        width = int(rank.max()) + 2
        key_w = prof[w] * width + rank[: w.size]
        k = np.searchsorted(key_w, prof[a] * width + rank[w.size :], side="right")
        ok = k < w.size
        cand = w[np.minimum(k, w.size - 1)]
        ok &= prof[cand] == prof[a]
        ok &= parent[cand] == parent[a]
        out[ok] = cand[ok]
    return a, out


def _csr(key: np.ndarray, values: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    order = np.argsort(key, kind="stable")
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.add.at(ptr, key + 1, 1)
    return np.cumsum(ptr), values[order].astype(np.int64)


__all__ = ["KINDS", "Graph", "build"]
