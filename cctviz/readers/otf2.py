"""OTF2 trace archives (Score-P, the runtime's ``--trace``): one calling-context
tree per location, an :class:`~cctviz.Ensemble` of locations.

:func:`read_otf2` takes the archive's anchor file (``traces.otf2``, or any
``<name>.otf2`` that Score-P's ``SCOREP_EXPERIMENT_DIRECTORY`` or a writer's
``archive_name`` gave) or the folder holding it (a folder of several archives
and no ``traces.otf2`` is refused: name the anchor). It needs the ``otf2`` package (``pip install
'cctviz[scorep]'``).

Format facts (OTF2 3.x, as the ``otf2`` package exposes them):

- The anchor names the archive; global definitions (``traces.def``) define
  regions, locations (threads) in location groups (processes), communicators
  with their groups, metric classes and members, and the clock
  (``timer_resolution`` ticks per second, ``global_offset``). Each location
  has its events in ``traces/<id>.evt`` (and local definitions, mapping
  tables, in ``traces/<id>.def``).
- Events per location in time order: ``Enter``/``Leave`` (region),
  ``MpiSend``/``MpiRecv`` (peer, communicator, tag, bytes), ``MpiIsend`` +
  ``MpiIsendComplete`` and ``MpiIrecvRequest`` + ``MpiIrecv`` (matched by
  request id), ``MpiCollectiveBegin`` + ``MpiCollectiveEnd`` (operation,
  communicator, root, bytes sent and received), ``Metric`` (a metric class's
  values; Score-P writes PAPI counters right before each Enter and Leave),
  ``ProgramBegin``/``ProgramEnd``.

How the tree is built (the choices):

- One tree per location, under a root (kind ``"root"``) named after the
  program (the first ``ProgramBegin``'s name, base name, for every location,
  threads included; the anchor's stem without one), so that the ranks of one job unify by call path. Regions are nodes
  named by their region name (kind ``"function"`` for functions, ``"region"``
  for other region roles; node columns ``paradigm`` and ``role``), merged by
  call path.
- The root's inclusive time is ``ProgramEnd - ProgramBegin`` on a location
  that has both, else the span from the location's first to its last
  Enter/Leave or MPI record; its exclusive time is what the top-level regions
  leave. A location of MPI records without any Enter/Leave (a communication
  thread) is read: its records are leaves under its root, a blocking one
  without a region around it an instant (``comm_time`` 0). A
  region still open at the end of the events is closed there (counted in
  ``meta["otf2"]["unclosed"]``); a Leave without an Enter is a
  :class:`~cctviz.ProfileError`.
- Communication events become leaves (kind ``"comm"``) under the region that
  issued them, named as the runtime and the Kineto reader name them: the
  kind (``send``, ``recv``, ``all_reduce``, ``broadcast``...; see
  :mod:`cctviz.model.collectives`), with ``" (N ranks)"`` where the
  communicator is smaller than the job. Node columns: ``collective`` (the
  kind), ``group_size``, ``communicator``. Metrics on the leaves:
  ``comm_bytes`` (the message's bytes; a collective's by the nccl-tests rule
  from its bytes sent and received), ``bus_bytes`` (bytes x the nccl-tests bus
  factor of the communicator size), ``comm_time`` (a collective's
  Begin..End; a blocking send or receive: the MPI call around it; an
  ``MpiIsend``/``MpiIrecvRequest`` up to its completion). A non-blocking
  receive is attributed where it was posted (``MpiIrecvRequest``), with the
  bytes its completion reports. Collective operations that are not data
  movement (``scan``, ``exscan``, window handles) keep OTF2's name in lower
  case.
- Metric members (PAPI counters) become metrics named as the member, unit
  from the member (``#`` -> ``count``). Accumulated values
  (``ACCUMULATED_START``/``_POINT``, counted from the start of measurement)
  are differenced: what a counter grew between two samples goes to the
  context that was running in between (the first sample's value to the
  context at that sample, the root before any Enter), so a location's total
  is its last sample. ``*_LAST`` relative or accumulated values go as they are
  to the context before the sample, ``*_NEXT`` ones to the context after it.
  Absolute values (gauges) are ``"max"`` metrics: the largest value seen in a
  context.

Metrics (``meta["units"]``): ``time`` exclusive time in ``ns`` (ticks x
1e9 / timer resolution), ``calls`` (Enter counts: Score-P's visits;
comm events on the leaves), the comm metrics above and the counters.
Profiles (``ens.profiles``): ``rank`` (the location's position in MPI's
location group, else its location group's), ``thread`` (its position in its
location group), ``location`` (the OTF2 id), ``location_name``, ``process``
(the location group's name), ``host``, and one column per location property
(named as the property; cctviz's own without the ``cctviz::`` namespace: a
runtime trace's ``timeline_limit``, ``timeline_events``, ``timeline_dropped``,
``timeline_cut_ns``). A runtime trace that hit its cap (some
``timeline_dropped`` > 0) warns and sets ``meta["cut_ns"]``, the earliest cut
(ns): before it every profile is complete (:mod:`cctviz.runtime.trace`).

Streaming: events are read location by location with the ``otf2`` library's
event reader and small callbacks that append to :mod:`array` columns (region
ids, timestamps, comm sizes); no event objects are kept. The tree is built
from those columns with numpy (nesting by depth, call paths level by level),
and a location's columns are dropped once its tree is built.

>>> import cctviz
>>> ens = cctviz.read("../shared/data/pipit/ping-pong-otf2")
>>> ens.n_profiles, ens.profiles["rank"].tolist()
(2, [0, 1])
>>> t = ens.tree
>>> sorted(set(t.nodes["name"][t.nodes["kind"] == "comm"]))
['recv', 'send']
"""

from __future__ import annotations

import warnings
from array import array
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import ProfileError
from ..model.build import NestingError, nest_enter_leave
from ..model.collectives import OTF2_OPS, bus_factor, leaf_name, nccl_tests_elements
from ..model.ensemble import Ensemble
from ..model.formats import OTF2_NAMESPACE, TIMELINE_FACTS
from ..model.timeline import Timeline, number_steps
from ..model.tree import Tree
from ..model.units import canonical
from . import progress_bar, register, register_timeline

ANCHOR = "traces.otf2"
ROOT = "(program)"  # the roots' name until the program's name is known
#: the context kinds `cctviz run --trace` writes as region descriptions
#: (cctviz/runtime/trace.py): a "comm" region is the collective itself, a
#: "root" region the program's own root
RUNTIME_KINDS = frozenset({"root", "step", "phase", "module", "comm", "op", "region", "function"})
MAGIC = b"OTF2"
BATCH = 1 << 16  # events per ReadEvents call
METRICS_UNITS = {
    "time": "ns",
    "comm_time": "ns",
    "comm_bytes": "B",
    "bus_bytes": "B",
    "calls": "count",
}


#: what to do when the otf2 package is missing
INSTALL = "reading OTF2 traces needs the otf2 package: pip install 'cctviz[scorep]'"


def _import_otf2(path: Path) -> tuple[Any, Any]:
    try:
        import _otf2
        import otf2
    except ImportError:
        raise ProfileError(path, INSTALL) from None
    return otf2, _otf2


def _anchor(path: Path) -> Path:
    """The anchor file of the archive at ``path`` (the file or its folder)."""
    if path.is_dir():
        a = path / ANCHOR
        if a.is_file():
            return a
        found = sorted(path.glob("*.otf2"))
        if not found:
            raise ProfileError(path, "the folder holds no OTF2 anchor file (traces.otf2)")
        if len(found) > 1:
            raise ProfileError(
                path,
                f"the folder holds {len(found)} OTF2 archives ({', '.join(f.name for f in found)}) "
                "and none named traces.otf2: give the anchor file of the one to read",
            )
        return found[0]
    return path


def _is_anchor(h: bytes) -> bool:
    return len(h) >= 6 and h[2:6] == MAGIC


def _sniff(path: Path, h: bytes) -> bool:
    if path.is_dir():
        anchors = [path / ANCHOR] if (path / ANCHOR).is_file() else sorted(path.glob("*.otf2"))
        if len(anchors) != 1:  # none, or several archives side by side: a folder of them
            return False
        with open(anchors[0], "rb") as f:
            h = f.read(16)
        return _is_anchor(h)
    return path.suffix == ".otf2" and _is_anchor(h)


# ---------------------------------------------------------------- reading
class _Location:
    """Columns of one location's events, filled by the event callbacks."""

    def __init__(self) -> None:
        self.el_region = array("q")  # region id of Enter, -1 - region of Leave
        self.el_time = array("q")
        # comm events: position (E/L events before), name code, bytes, bus bytes,
        # start/end ticks of comm_time (-1: the region around it), group size code
        self.c_pos = array("q")
        self.c_name = array("q")
        self.c_bytes = array("d")
        self.c_bus = array("d")
        self.c_t0 = array("q")
        self.c_t1 = array("q")
        self.c_at = array("q")  # the record's own time
        self.c_peer = array("q")  # a message's peer (rank in its communicator), -1
        # metric samples: position, member index, value, timing (0 last/point, 1 next)
        self.m_pos = array("q")
        self.m_member = array("q")
        self.m_value = array("d")
        self.m_time = array("q")
        self.program: list[int | None] = [None, None]
        self.program_name: str | None = None
        self.isend: dict[int, int] = {}  # request -> comm row
        self.irecv: dict[int, tuple[int, int]] = {}  # request -> (position, ticks)
        self.coll_begin: int | None = None
        self.coll_begin_pos = 0
        self.errors: list[str] = []


class _Archive:
    """Definitions of an archive as lookup tables."""

    def __init__(self, defs: Any, otf2: Any) -> None:
        regions = list(defs.regions)
        self.n_regions = (max(r._ref for r in regions) + 1) if regions else 0
        self.region_name = np.full(self.n_regions, "", dtype=object)
        self.region_kind = np.full(self.n_regions, "region", dtype=object)
        self.region_paradigm = np.full(self.n_regions, "", dtype=object)
        self.region_role = np.full(self.n_regions, "", dtype=object)
        fn = otf2.RegionRole.FUNCTION
        for r in regions:
            self.region_name[r._ref] = r.name
            self.region_kind[r._ref] = "function" if r.region_role == fn else "region"
            # a trace `cctviz run --trace` wrote: the description is the context's kind
            if getattr(r, "description", None) in RUNTIME_KINDS:
                self.region_kind[r._ref] = r.description
            self.region_paradigm[r._ref] = _ename(r.paradigm)
            self.region_role[r._ref] = _ename(r.region_role)
        self.comm_size: dict[int, int] = {}
        self.comm_name: dict[int, str] = {}
        #: members declared accumulated whose samples go down: gauges (:func:`_read_as`)
        self.not_counters: set[str] = set()
        for c in defs.comms:
            g = c.group
            n = len(g.members) if g is not None else 0
            if g is not None and _ename(g.group_type) == "COMM_SELF":
                n = 1
            self.comm_size[c._ref] = n
            self.comm_name[c._ref] = c.name
        self.strings = defs.strings
        self.op_names = _op_names()
        # MPI ranks: positions in the MPI COMM_LOCATIONS group
        self.mpi_rank: dict[int, int] = {}
        for g in defs.groups:
            if _ename(g.group_type) == "COMM_LOCATIONS" and _ename(g.paradigm) == "MPI":
                for k, loc in enumerate(g.members):
                    self.mpi_rank.setdefault(loc._ref, k)
        world = [n for r, n in self.comm_size.items() if self.comm_name[r] == "MPI_COMM_WORLD"]
        self.world_size = world[0] if world else (len(self.mpi_rank) or None)
        # metric members: index per (metric ref) -> member indices
        self.members: list[Any] = []
        member_index: dict[int, int] = {}
        self.metric_members: dict[int, list[int]] = {}
        self.metrics = {m._ref: m for m in defs.metrics}
        for m in defs.metrics:
            idx = []
            for mem in m.members:
                if mem._ref not in member_index:
                    member_index[mem._ref] = len(self.members)
                    self.members.append(mem)
                idx.append(member_index[mem._ref])
            self.metric_members[m._ref] = idx


def _ename(x: Any) -> str:
    """The name of an ``otf2`` enum value (``MetricMode.ACCUMULATED_START`` ->
    ``"ACCUMULATED_START"``)."""
    return str(x).rpartition(".")[2]


def _op_names() -> dict[int, str]:
    """OTF2 collective operation codes -> names."""
    from otf2.enums import CollectiveOp

    out = {}
    for n in dir(CollectiveOp):
        v = getattr(CollectiveOp, n)
        if n.isupper() and hasattr(v, "value"):
            out[int(v.value)] = n
    return out


def _mode(member: Any) -> tuple[str, str]:
    """(value, timing) of a metric member's mode: ("ACCUMULATED", "START")..."""
    name = _ename(member.metric_mode)
    value, _, timing = name.partition("_")
    return value, timing


def _unit(member: Any) -> str | None:
    return canonical(member.unit or "")


def _say_misdeclared(anchor: Path, arc: _Archive) -> None:
    """One warning naming the members read as gauges though declared accumulated."""
    names = sorted(arc.not_counters)
    if names:
        warnings.warn(
            f"{anchor}: {len(names)} metric(s) declared accumulated whose samples go down "
            f"are read as gauges (the largest value, unit unknown): "
            f"{', '.join(names[:4])}{' ...' if len(names) > 4 else ''}",
            stacklevel=4,
        )


def _owner(group: Any, otf2: Any) -> Any:
    """The process a location group stands for: an accelerator's (a GPU
    context, ``LocationGroupType.ACCELERATOR``) is the process that created it,
    so its locations are that process's, not ranks of their own."""
    accelerator = getattr(otf2.LocationGroupType, "ACCELERATOR", None)
    if group is not None and accelerator is not None:
        if group.location_group_type == accelerator and group.creating_location_group is not None:
            return group.creating_location_group
    return group


def _read_as(arc: _Archive, member: Any, vals: np.ndarray) -> tuple[str, str, str | None]:
    """(value mode, timing, unit) a member's samples are read by: its own,
    but a member declared accumulated whose samples go down is no counter (a
    counter never does: Score-P's asynchronous rocm_smi and coretemp plugin
    metrics declare power, busy % and frequency ``ACCUMULATED_START``, unit
    ``#``): a gauge, its unit unknown, said in a warning (``arc.not_counters``).
    A member that never goes down is read as declared (a gauge that happens to
    stay put, or to rise, cannot be told from a counter)."""
    value_mode, timing = _mode(member)
    accumulated = value_mode == "ACCUMULATED" and timing in ("START", "POINT")
    if accumulated and vals.size > 1 and (np.diff(vals) < 0).any():
        arc.not_counters.add(str(member.name))
        return "ABSOLUTE", timing, None
    return value_mode, timing, _unit(member)


def _callbacks(
    st: _Location, arc: _Archive, names: dict[tuple[str, str, int], int]
) -> dict[str, Callable]:
    """The event callbacks of one location, appending to ``st``'s columns."""
    el_region, el_time = st.el_region, st.el_time
    c_pos, c_name, c_bytes, c_bus = st.c_pos, st.c_name, st.c_bytes, st.c_bus
    c_t0, c_t1, c_at, c_peer = st.c_t0, st.c_t1, st.c_at, st.c_peer
    add_r, add_t = el_region.append, el_time.append
    comm_size, world = arc.comm_size, arc.world_size
    op_names = arc.op_names

    def leaf_code(kind: str, n: int) -> int:
        nm = leaf_name(kind, n, world)
        key = (nm, kind, n)
        code = names.get(key)
        if code is None:
            code = names[key] = len(names)
        return code

    def comm(
        pos: int, kind: str, comm_ref: int, nbytes: float, t0: int, t1: int, at: int, peer: int = -1
    ) -> int:
        n = comm_size.get(comm_ref, 0)
        c_at.append(at)
        c_peer.append(int(peer))
        c_pos.append(pos)
        c_name.append(leaf_code(kind, n))
        c_bytes.append(nbytes)
        c_bus.append(nbytes * bus_factor(kind, n))
        c_t0.append(t0)
        c_t1.append(t1)
        return len(c_pos) - 1

    def enter(loc, time, pos, ud, attrs, region):
        add_r(region)
        add_t(time)

    def leave(loc, time, pos, ud, attrs, region):
        add_r(-1 - region)
        add_t(time)

    def send(loc, time, pos, ud, attrs, peer, comm_ref, tag, length):
        comm(len(el_time), "send", comm_ref, float(length), -1, -1, time, peer)

    def recv(loc, time, pos, ud, attrs, peer, comm_ref, tag, length):
        comm(len(el_time), "recv", comm_ref, float(length), -1, -1, time, peer)

    def isend(loc, time, pos, ud, attrs, peer, comm_ref, tag, length, request):
        st.isend[request] = comm(
            len(el_time), "send", comm_ref, float(length), time, time, time, peer
        )

    def isend_complete(loc, time, pos, ud, attrs, request):
        row = st.isend.pop(request, None)
        if row is not None:
            c_t1[row] = time

    def irecv_request(loc, time, pos, ud, attrs, request):
        st.irecv[request] = (len(el_time), time)

    def irecv(loc, time, pos, ud, attrs, peer, comm_ref, tag, length, request):
        p, t0 = st.irecv.pop(request, (len(el_time), time))
        comm(p, "recv", comm_ref, float(length), t0, time, time, peer)

    def coll_begin(loc, time, pos, ud, attrs):
        st.coll_begin = time
        st.coll_begin_pos = len(el_time)

    def coll_end(loc, time, pos, ud, attrs, op, comm_ref, root, sent, received):
        code = int(getattr(op, "value", op))
        opname = op_names.get(code, f"collective {code}")
        kind = OTF2_OPS.get(opname, opname.lower())
        n = comm_size.get(comm_ref, 0)
        nbytes = float(nccl_tests_elements(kind, int(sent), int(received), n or None))
        if kind == "barrier":
            nbytes = 0.0
        t0 = st.coll_begin if st.coll_begin is not None else time
        p = st.coll_begin_pos if st.coll_begin is not None else len(el_time)
        st.coll_begin = None
        comm(p, kind, comm_ref, nbytes, t0, time, time)

    strings = arc.strings
    members = arc.metric_members
    metrics = arc.metrics
    m_pos, m_member, m_value, m_time = st.m_pos, st.m_member, st.m_value, st.m_time

    def metric(loc, time, pos, ud, attrs, metric_ref, type_ids, values):
        m = metrics.get(metric_ref)
        if m is None:
            return
        vals = m._convert_unions(values)
        p = len(el_time)
        for k, v in zip(members[metric_ref], vals):
            m_pos.append(p)
            m_member.append(k)
            m_value.append(float(v))
            m_time.append(time)

    def program_begin(loc, time, pos, ud, attrs, name, args):
        st.program[0] = time
        try:
            st.program_name = str(strings[name])
        except Exception:  # noqa: BLE001 - a name is a nicety
            st.program_name = None

    def program_end(loc, time, pos, ud, attrs, status):
        st.program[1] = time

    return {
        "Enter": enter,
        "Leave": leave,
        "MpiSend": send,
        "MpiRecv": recv,
        "MpiIsend": isend,
        "MpiIsendComplete": isend_complete,
        "MpiIrecvRequest": irecv_request,
        "MpiIrecv": irecv,
        "MpiCollectiveBegin": coll_begin,
        "MpiCollectiveEnd": coll_end,
        "Metric": metric,
        "ProgramBegin": program_begin,
        "ProgramEnd": program_end,
    }


def _read_events(_otf2: Any, handle: Any, loc_ref: int, cbs: dict[str, Callable]) -> int:
    """Stream the events of one location through ``cbs``; the number of events read."""
    evt = _otf2.Reader_GetEvtReader(handle, loc_ref)
    callbacks = _otf2.EvtReaderCallbacks_New()
    try:
        for ev, fn in cbs.items():
            getattr(_otf2, f"EvtReaderCallbacks_Set{ev}Callback")(callbacks, fn)
        _otf2.EvtReader_SetCallbacks(evt, callbacks, None)
    finally:
        _otf2.EvtReaderCallbacks_Delete(callbacks)
    total = 0
    try:
        while True:
            n = _otf2.EvtReader_ReadEvents(evt, BATCH)
            total += n
            if n < BATCH:
                break
    finally:
        _otf2.Reader_CloseEvtReader(handle, evt)
    return total


# ---------------------------------------------------------------- building
def _nest(path: Path, where: str, region: np.ndarray, ticks: np.ndarray, end: int) -> dict:
    """:func:`cctviz.model.build.nest_enter_leave` of one location, its errors
    named by file and location."""
    try:
        return nest_enter_leave(region, ticks, end)
    except NestingError as e:
        raise ProfileError(path, str(e), where=f"{where}, Enter/Leave event {e.event}") from None


def _at(after: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """The context running before E/L position ``pos`` (after event pos - 1)."""
    out = np.zeros(pos.shape[0], dtype=np.int64)
    m = pos > 0
    out[m] = after[pos[m] - 1]
    return out


def _location_tree(
    path: Path,
    where: str,
    st: _Location,
    arc: _Archive,
    names: list[tuple[str, str, int]],
    root_name: str,
    ns_per_tick: float,
    with_events: bool = False,
) -> tuple[Tree, dict[str, Any]]:
    region = (
        np.frombuffer(st.el_region, dtype=np.int64) if len(st.el_region) else np.zeros(0, np.int64)
    )
    ticks = np.frombuffer(st.el_time, dtype=np.int64) if len(st.el_time) else np.zeros(0, np.int64)
    if region.size and region.max() >= arc.n_regions:
        k = int(np.argmax(region >= arc.n_regions))
        raise ProfileError(
            path, f"an Enter of undefined region {int(region[k])}", where=f"{where}, event {k}"
        )
    rec = np.frombuffer(st.c_at, dtype=np.int64) if len(st.c_at) else np.zeros(0, np.int64)
    lo = [int(ticks[0])] if ticks.size else []
    hi = [int(ticks[-1])] if ticks.size else []
    if rec.size:  # MPI records count in the span (a location of messages only)
        lo, hi = [*lo, int(rec.min())], [*hi, int(rec.max())]
    first = [t for t in (st.program[0], *lo) if t is not None]
    last = [t for t in (st.program[1], *hi) if t is not None]
    t_begin = min(first) if first else 0
    t_end = max(last) if last else t_begin
    if st.program[0] is not None and st.program[1] is not None:
        t_begin, t_end = st.program[0], st.program[1]
    nest = _nest(path, where, region, ticks, t_end)
    ctx, inc, enters = nest["ctx"], nest["inc"], nest["enters"]
    n_ctx = nest["ctx_parent"].shape[0]
    incl = np.bincount(ctx, weights=inc, minlength=n_ctx).astype(np.float64)
    child = np.bincount(nest["parent_ctx"], weights=inc, minlength=n_ctx)
    top_inc = float(inc[nest["parent_ctx"] == 0].sum()) if enters.size else 0.0
    incl[0] = float(t_end - t_begin)
    # comm leaves
    c_pos = np.frombuffer(st.c_pos, dtype=np.int64) if len(st.c_pos) else np.zeros(0, np.int64)
    n_c = c_pos.shape[0]
    parents = [nest["ctx_parent"]]
    node_name = np.concatenate(
        [[root_name], arc.region_name[np.maximum(nest["ctx_region"][1:], 0)]]
    )
    node_kind = np.concatenate([["root"], arc.region_kind[np.maximum(nest["ctx_region"][1:], 0)]])
    paradigm = np.concatenate([[""], arc.region_paradigm[np.maximum(nest["ctx_region"][1:], 0)]])
    role = np.concatenate([[""], arc.region_role[np.maximum(nest["ctx_region"][1:], 0)]])
    metrics: dict[str, np.ndarray] = {}
    n_leaf = 0
    comm_cols: dict[str, np.ndarray] = {}
    pre: dict[str, np.ndarray] = {}  # comm metrics of the collective regions themselves
    ev_comm: dict[str, np.ndarray] = {}  # per Enter (timeline): its collective's values
    leaf_events: dict[str, np.ndarray] | None = None  # MPI records (timeline)

    def column(buf: Any, dtype: Any) -> np.ndarray:
        return np.frombuffer(buf, dtype=dtype) if len(buf) else np.zeros(0, dtype)

    code, cb, cbus = (
        column(st.c_name, np.int64),
        column(st.c_bytes, np.float64),
        column(st.c_bus, np.float64),
    )
    t0, t1 = column(st.c_t0, np.int64), column(st.c_t1, np.int64)
    c_at = column(st.c_at, np.int64)
    c_peer = column(st.c_peer, np.int64)
    if n_c:
        at_all = _at(nest["after"], c_pos)
        # in a region that is the collective itself (a cctviz trace's "comm" context),
        # the record's bytes and time are that region's: no leaf below it
        absorbed = node_kind[at_all] == "comm"
        if with_events and absorbed.any():
            ev_comm = _absorbed_per_enter(nest, c_pos[absorbed], cb[absorbed], cbus[absorbed])
            ta, tb = t0[absorbed], t1[absorbed]
            ev_comm["comm_time"] = _per_enter(
                nest, c_pos[absorbed], np.where(ta >= 0, (tb - ta) * ns_per_tick, 0.0)
            )
        if absorbed.any():
            a_at = at_all[absorbed]
            pre["comm_bytes"] = np.bincount(a_at, weights=cb[absorbed], minlength=n_ctx)
            pre["bus_bytes"] = np.bincount(a_at, weights=cbus[absorbed], minlength=n_ctx)
            ta, tb = t0[absorbed], t1[absorbed]
            da = np.where(ta >= 0, (tb - ta).astype(np.float64), 0.0)
            pre["comm_time"] = np.bincount(a_at, weights=da, minlength=n_ctx) * ns_per_tick
            keep = ~absorbed
            c_pos, code, cb, cbus, t0, t1, c_at = (
                x[keep] for x in (c_pos, code, cb, cbus, t0, t1, c_at)
            )
            n_c = c_pos.shape[0]
    if n_c:
        at = _at(nest["after"], c_pos)
        key = at * (int(code.max()) + 1) + code
        uniq, first_i, leaf = np.unique(key, return_index=True, return_inverse=True)
        n_leaf = uniq.shape[0]
        leaf_id = n_ctx + leaf
        parents.append(at[first_i])
        ucode = code[first_i]
        leaf_name, leaf_kind, leaf_n = (np.asarray(x, dtype=object) for x in zip(*names))
        node_name = np.concatenate([node_name, leaf_name[ucode]])
        node_kind = np.concatenate([node_kind, np.full(n_leaf, "comm", dtype=object)])
        paradigm = np.concatenate([paradigm, np.full(n_leaf, "MPI", dtype=object)])
        role = np.concatenate([role, np.full(n_leaf, "", dtype=object)])
        total = n_ctx + n_leaf
        # blocking point-to-point: the region around it (its Enter's visit)
        dur = (t1 - t0).astype(np.float64)
        blocking = t0 < 0
        if blocking.any():
            # the innermost open Enter at the event: the Enter whose context runs there
            # (none on a location of messages only: the record's own instant)
            open_enter = _open_enter(nest, c_pos[blocking])
            oe = np.maximum(open_enter, 0)
            some = open_enter >= 0
            d = np.zeros(open_enter.shape[0], dtype=np.float64)
            d[some] = inc[oe[some]]
            dur[blocking] = d
        if with_events:
            # an MPI record beside the frames: its own interval, not part of the nesting
            start_l = np.where(blocking, 0, t0)
            if blocking.any():
                b_start = c_at[blocking].copy()
                b_start[some] = ticks[enters[oe[some]]]
                start_l[blocking] = b_start
            leaf_events = {
                "node": leaf_id,
                "start": start_l,
                "end": start_l + dur,
                "comm_bytes": cb,
                "bus_bytes": cbus,
                "comm_time": dur * ns_per_tick,
                "peer": c_peer,
            }
        metrics["comm_bytes"] = np.bincount(leaf_id, weights=cb, minlength=total)
        metrics["bus_bytes"] = np.bincount(leaf_id, weights=cbus, minlength=total)
        metrics["comm_time"] = np.bincount(leaf_id, weights=dur, minlength=total) * ns_per_tick
        calls_leaf = np.bincount(leaf_id, minlength=total).astype(np.float64)
        comm_cols = {
            "collective": np.concatenate([np.full(n_ctx, None, dtype=object), leaf_kind[ucode]]),
            "group_size": np.concatenate(
                [np.full(n_ctx, np.nan), leaf_n[ucode].astype(np.float64)]
            ),
        }
    total = n_ctx + n_leaf
    for col, v in pre.items():
        if col in metrics:
            metrics[col][:n_ctx] += v
        else:
            metrics[col] = np.concatenate([v, np.zeros(n_leaf)])
    excl = np.zeros(total)
    excl[:n_ctx] = incl - child
    excl[0] = incl[0] - top_inc
    metrics["time"] = excl * ns_per_tick
    calls = np.zeros(total)
    calls[:n_ctx] = np.bincount(ctx, minlength=n_ctx)
    if n_leaf:
        calls += calls_leaf
    metrics["calls"] = calls
    extra_meta: dict[str, Any] = {"units": {}, "aggregation": {}}
    # metric samples
    if len(st.m_pos):
        mp = np.frombuffer(st.m_pos, dtype=np.int64)
        mm = np.frombuffer(st.m_member, dtype=np.int64)
        mv = np.frombuffer(st.m_value, dtype=np.float64)
        for k in np.unique(mm).tolist():
            mem = arc.members[k]
            sel = mm == k
            pos, val = mp[sel], mv[sel]
            value_mode, timing, u = _read_as(arc, mem, val)
            col = np.zeros(total)
            if timing == "NEXT":
                where_ctx = _at_next(nest["after"], pos)
            else:
                where_ctx = _at(nest["after"], pos)
            if value_mode == "ABSOLUTE":
                col[:] = np.nan
                np.fmax.at(col, where_ctx, val)
                extra_meta["aggregation"][mem.name] = "max"
            else:
                if value_mode == "ACCUMULATED" and timing in ("START", "POINT"):
                    val = np.diff(val, prepend=0.0)
                col[:n_ctx] = np.bincount(where_ctx, weights=val, minlength=n_ctx)[:n_ctx]
            metrics[mem.name] = col
            if u:
                extra_meta["units"][mem.name] = u
    columns = {"paradigm": paradigm, "role": role, **comm_cols}
    tree, new_id = Tree.from_parents_with_ids(
        np.concatenate(parents),
        node_name,
        metrics,
        kind=node_kind,
        columns=columns,
        meta={
            "units": {**METRICS_UNITS, **extra_meta["units"]},
            "aggregation": extra_meta["aggregation"],
        },
    )
    info: dict[str, Any] = {"unclosed": nest["unclosed"], "events": int(region.shape[0])}
    if with_events:
        info["timeline"] = _location_events(
            nest, ticks, t_begin, t_end, new_id, ev_comm, leaf_events, ns_per_tick
        )
    return tree, info


def _per_enter(nest: dict, pos: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``values`` of records at E/L positions ``pos`` summed onto the Enter open there."""
    oe = _open_enter(nest, pos)
    ok = oe >= 0
    return np.bincount(oe[ok], weights=values[ok], minlength=nest["enters"].shape[0])


def _absorbed_per_enter(
    nest: dict, pos: np.ndarray, cb: np.ndarray, cbus: np.ndarray
) -> dict[str, np.ndarray]:
    """A cctviz trace's collective records, onto the Enter of their region."""
    return {"comm_bytes": _per_enter(nest, pos, cb), "bus_bytes": _per_enter(nest, pos, cbus)}


def _location_events(
    nest: dict,
    ticks: np.ndarray,
    t_begin: int,
    t_end: int,
    new_id: np.ndarray,
    ev_comm: dict[str, np.ndarray],
    leaf_events: dict[str, np.ndarray] | None,
    ns_per_tick: float,
) -> pd.DataFrame:
    """The location's intervals in its tree's ids: the root (the program's span, its
    calls not counted, as the profile's), every Enter, and MPI records (untimed)."""
    enters = nest["enters"]
    n_e = enters.shape[0]
    start = np.concatenate([[t_begin], ticks[enters]])
    end = np.concatenate([[t_end], ticks[enters] + nest["inc"]])
    cols: dict[str, Any] = {
        "node": new_id[np.concatenate([[0], nest["ctx"]])],
        "start": start,
        "end": end,
        "timed": np.ones(n_e + 1, dtype=bool),
        "counted": np.concatenate([[False], np.ones(n_e, dtype=bool)]),
    }
    for m in ("comm_bytes", "bus_bytes", "comm_time"):
        v = ev_comm.get(m)
        cols[m] = np.concatenate([[np.nan], v if v is not None else np.full(n_e, np.nan)])
    if ev_comm:
        none = ~(cols["comm_bytes"] > 0) & ~(cols["comm_time"] > 0)
        for m in ("comm_bytes", "bus_bytes", "comm_time"):
            cols[m][none] = np.nan
    frame = pd.DataFrame(cols)
    if leaf_events is not None:
        leaves = pd.DataFrame(
            {
                "node": new_id[leaf_events["node"]],
                "start": leaf_events["start"],
                "end": leaf_events["end"],
                "timed": False,
                "counted": True,
                "comm_bytes": leaf_events["comm_bytes"],
                "bus_bytes": leaf_events["bus_bytes"],
                "comm_time": leaf_events["comm_time"],
                "peer": leaf_events["peer"],
            }
        )
        frame = pd.concat([frame, leaves], ignore_index=True)
    for c in ("start", "end"):  # ticks -> ns on the archive's clock
        frame[c] = np.rint(frame[c].to_numpy(dtype=np.float64) * ns_per_tick).astype(np.int64)
    return frame


def _focus_ids(tree: Tree) -> np.ndarray:
    """Where :func:`_own_root`'s focus puts each node of ``tree`` (-1: dropped)."""
    top = int(np.flatnonzero(np.asarray(tree.parent) == 0)[0])
    keep = np.zeros(len(tree), dtype=bool)
    keep[top : int(tree.end[top])] = True  # pre-order: a subtree is a run of ids
    return np.where(keep, np.cumsum(keep) - 1, -1)


def _on_unified(tree: Tree, unified: Tree, events: pd.DataFrame) -> pd.DataFrame:
    """A location's events with node ids of the Ensemble's tree (those of a
    dropped node, the reader's root above a trace's own, are left out)."""
    from ..model.unify import node_map

    ev = events[events["node"].to_numpy() >= 0]
    ids = node_map(tree, unified)[ev["node"].to_numpy()]
    return ev.assign(node=ids)[ids >= 0]


def _own_root(tree: Tree) -> Tree | None:
    """A location whose events sit in one region of kind "root" (a cctviz
    trace: the profile's own root context) gets that region as its root,
    not one more above it; None otherwise."""
    parent = np.asarray(tree.parent)
    top = np.flatnonzero(parent == 0)
    if (
        top.size != 1
        or "kind" not in tree.nodes.columns
        or tree.nodes["kind"].iat[top[0]] != "root"
    ):
        return None
    return tree.focus(int(top[0]))


def _rename_root(tree: Tree, name: str) -> Tree:
    """``tree`` with its root named ``name``."""
    nodes = tree.nodes.copy()
    nodes.loc[0, "name"] = name
    return Tree(nodes, tree.metrics[tree.exc_metrics].copy(), tree.meta, _trusted=True)


def _at_next(after: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """The context running after E/L position ``pos`` (a ``*_NEXT`` sample's interval)."""
    out = np.zeros(pos.shape[0], dtype=np.int64)
    m = pos < after.shape[0]
    out[m] = after[pos[m]]
    out[~m] = after[-1] if after.shape[0] else 0
    return out


def _open_enter(nest: dict, pos: np.ndarray) -> np.ndarray:
    """Index (into the Enters) of the innermost region open before E/L
    position ``pos``; -1 where none is."""
    out = np.full(pos.shape[0], -1, dtype=np.int64)
    m = pos > 0
    out[m] = nest["open_after"][pos[m] - 1]
    return out


@register("otf2", _sniff, "OTF2 trace archive (Score-P; traces.otf2 or its folder)", folder=True)
def read_otf2(path: Path, progress: bool | None = None) -> Ensemble:
    """Read an OTF2 archive into an Ensemble, one profile per location.

    Args:
        path: the anchor file (``traces.otf2``) or the folder holding it.
        progress: a progress bar over the locations (``None``: only if slow).

    Example:
        >>> import cctviz
        >>> ens = cctviz.read("../shared/data/pipit/ping-pong-otf2-papi/traces.otf2")
        >>> ens.tree.units["PAPI_TOT_CYC"], ens.tree.units["time"]
        ('count', 'ns')
    """
    anchor, reader, otf2, _otf2 = _open(Path(path))
    try:
        return _read(anchor, reader, otf2, _otf2, progress)
    finally:
        try:
            reader.close()
        except Exception:  # noqa: BLE001
            pass


@register_timeline("otf2")
def read_otf2_timeline(path: Path, progress: bool | None = None) -> Timeline:
    """Read an OTF2 archive as a :class:`~cctviz.model.timeline.Timeline`: one
    profile per location, every Enter's interval on its calling context, MPI
    records as intervals of their own (with bytes and time), the collectives of a
    cctviz trace on their region's interval. ``.ensemble()`` gives
    :func:`read_otf2`'s time, calls and communication metrics.

    Example:
        >>> import cctviz
        >>> tl = cctviz.read_timeline("../shared/data/pipit/ping-pong-otf2/traces.otf2")
        >>> import numpy as np
        >>> same = tl.ensemble().values("time") - cctviz.read(tl.meta["path"]).values("time")
        >>> bool(np.abs(same).max() < len(tl))  # ns: times are rounded to whole ns
        True
    """
    anchor, reader, otf2, _otf2 = _open(Path(path))
    try:
        ens, located, counters = _read(anchor, reader, otf2, _otf2, progress, with_events=True)
    finally:
        try:
            reader.close()
        except Exception:  # noqa: BLE001
            pass
    events = (
        pd.concat([ev.assign(profile=k) for k, ev in enumerate(located)], ignore_index=True)
        if located
        else pd.DataFrame(columns=["profile", "node", "start", "end"])
    )
    units = {"comm_bytes": "B", "bus_bytes": "B", "comm_time": "ns"}
    present = {
        m: u for m, u in units.items() if m in events.columns and np.isfinite(events[m]).any()
    }
    if (
        len(events)
        and "kind" in ens.tree.nodes.columns
        and (ens.tree.nodes["kind"] == "step").any()
    ):
        events["step"] = number_steps(events, ens.tree)
    meta = {**ens.meta, "event_metrics": present, "path": str(anchor), "format": "otf2"}
    meta.pop("units", None)
    meta.pop("aggregation", None)
    if counters is not None:  # a meter's samples: tracks of its process's profile
        counters = counters[["profile", "track", "ts", "value"]]
    units = {
        m: u
        for m, u in ens.tree.units.items()
        if counters is not None and m in set(counters["track"])
    }
    return Timeline(
        ens.tree, events, ens.profiles, counters=counters, units=units or None, meta=meta
    )


def _open(path: Path) -> tuple[Path, Any, Any, Any]:
    """The anchor and an open OTF2 reader (the caller closes it)."""
    otf2, _otf2 = _import_otf2(path)
    anchor = _anchor(path)
    if not anchor.is_file():
        raise ProfileError(anchor, "no such OTF2 anchor file")
    with open(anchor, "rb") as f:
        if not _is_anchor(f.read(16)):
            raise ProfileError(anchor, "not an OTF2 anchor file (no OTF2 signature)")
    try:
        reader = otf2.reader.Reader(str(anchor))
    except Exception as e:  # noqa: BLE001 - the library's errors are not ours
        raise ProfileError(
            anchor,
            f"the OTF2 library cannot open the archive or its definitions "
            f"({anchor.stem}.def): {type(e).__name__}: {e}",
        ) from e
    return anchor, reader, otf2, _otf2


def _location_properties(defs: Any) -> dict[int, dict[str, Any]]:
    """Per location ref, its properties by name (cctviz's own without their
    ``cctviz::`` namespace: how much of a rank a runtime trace holds)."""
    out: dict[int, dict[str, Any]] = {}
    for p in defs.location_properties:
        name = str(getattr(p.name, "name", p.name)).removeprefix(OTF2_NAMESPACE)
        out.setdefault(p.location._ref, {})[name] = p.value
    return out


def cut_of(profiles: pd.DataFrame, where: Path) -> int | None:
    """The earliest cut of a capped runtime trace (ns; None: every profile is
    whole), with a warning that names the ranks, where they stop and what they
    dropped; completes the ``timeline_*`` columns of ``profiles`` in place."""
    if "timeline_dropped" not in profiles.columns:
        return None
    for k in TIMELINE_FACTS:  # a fact no rank had (no cap, no cut): a column of NaN
        if k not in profiles.columns:
            profiles[k] = np.nan
    dropped = pd.to_numeric(profiles["timeline_dropped"], errors="coerce").fillna(0)
    cut = pd.to_numeric(profiles["timeline_cut_ns"], errors="coerce")
    capped = (dropped > 0) & cut.notna()
    if not capped.any():
        return None
    listing = ", ".join(
        f"rank {r}: {int(d):,} transitions dropped past {int(n):,}"
        for r, d, n in zip(
            profiles.loc[capped, "rank"],
            dropped[capped],
            profiles.loc[capped, "timeline_limit"],
            strict=True,
        )
    )
    first = int(cut[capped].min())
    warnings.warn(
        f"{where}: the trace stops early on {int(capped.sum())} of {len(profiles)} profiles "
        f"(its cap: {listing}); every profile is complete before {first} ns "
        "(meta['cut_ns']: window there to compare ranks call by call); "
        "the run's profile has the whole run",
        stacklevel=5,
    )
    return first


def _read(
    anchor: Path,
    reader: Any,
    otf2: Any,
    _otf2: Any,
    progress: bool | None,
    with_events: bool = False,
) -> Ensemble | tuple[Ensemble, list[pd.DataFrame], pd.DataFrame | None]:
    defs = reader.definitions
    arc = _Archive(defs, otf2)
    clock = defs.clock_properties
    res = int(clock.timer_resolution)
    if res <= 0:
        raise ProfileError(
            anchor, f"timer resolution {res} is not positive", where="ClockProperties"
        )
    ns_per_tick = 1e9 / res
    locations = list(reader._locations)
    if not locations:
        raise ProfileError(anchor, "the archive defines no location")
    handle = reader._handle
    for loc in locations:
        _otf2.Reader_SelectLocation(handle, loc._ref)
    try:
        _otf2.Reader_OpenDefFiles(handle)
        def_files = True
    except Exception:  # noqa: BLE001 - an archive may have no local definitions
        def_files = False
    try:
        _otf2.Reader_OpenEvtFiles(handle)
    except Exception as e:  # noqa: BLE001
        raise ProfileError(anchor, f"cannot open the event files: {e}") from e
    names: dict[tuple[str, str, int], int] = {}  # comm leaves: (name, kind, group size)
    trees: list[Tree] = []
    rows: list[dict[str, Any]] = []
    unclosed = 0
    n_events = 0
    program: str | None = None
    thread_in_group: dict[int, int] = {}
    located: list[pd.DataFrame] = []  # per location, its intervals (timeline)
    group_index = {g._ref: k for k, g in enumerate(defs.location_groups)}
    properties = _location_properties(defs)
    gauges: list[tuple[int, str, list[tuple[str, float, str, str | None, pd.DataFrame]]]] = []
    tree_group: list[int] = []  # the location group of each tree
    try:
        for loc in progress_bar(locations, progress, desc="reading locations", unit="location"):
            evt_file = f"{anchor.stem}/{loc._ref}.evt"
            where = f"location {loc._ref} ({evt_file})"
            if def_files:
                try:
                    dr = _otf2.Reader_GetDefReader(handle, loc._ref)
                    if dr:
                        _otf2.Reader_ReadAllLocalDefinitions(handle, dr)
                        _otf2.Reader_CloseDefReader(handle, dr)
                except Exception as e:  # noqa: BLE001
                    raise ProfileError(
                        anchor,
                        f"cannot read the local definitions ({anchor.stem}/{loc._ref}.def): {e}",
                        where=where,
                    ) from e
            st = _Location()
            cbs = _callbacks(st, arc, names)
            try:
                n_events += _read_events(_otf2, handle, loc._ref, cbs)
            except ProfileError:
                raise
            except Exception as e:  # noqa: BLE001
                raise ProfileError(
                    anchor,
                    f"cannot read the events ({evt_file}): {type(e).__name__}: {e}",
                    where=where,
                ) from e
            if st.program_name and program is None:
                program = Path(st.program_name).name
            g = loc.group
            gref = g._ref if g is not None else -1
            if _metrics_only(loc, st, otf2):  # a meter, not a thread: its process's values
                gauges.append((gref, str(loc.name), _root_values(st, arc, ns_per_tick)))
                del st
                continue
            tree, info = _location_tree(
                anchor, where, st, arc, list(names), ROOT, ns_per_tick, with_events
            )
            del st
            unclosed += info["unclosed"]
            trees.append(tree)
            if with_events:
                located.append(info["timeline"])
            tree_group.append(gref)
            owner = _owner(g, otf2)  # an accelerator's locations are its process's
            oref = owner._ref if owner is not None else -1
            th = thread_in_group.get(oref, 0)
            thread_in_group[oref] = th + 1
            host = getattr(getattr(owner, "system_tree_parent", None), "name", None)
            rows.append(
                {
                    "rank": arc.mpi_rank.get(loc._ref, group_index.get(oref, 0)),
                    "thread": th,
                    "location": int(loc._ref),
                    "location_name": loc.name,
                    "process": owner.name if owner is not None else None,
                    "host": host,
                    "accelerator": g.name if owner is not g else None,
                    **properties.get(loc._ref, {}),
                }
            )
    finally:
        try:
            _otf2.Reader_CloseEvtFiles(handle)
        except Exception:  # noqa: BLE001
            pass
    if not trees:
        raise ProfileError(anchor, "the archive has no location with events other than metrics")
    _say_misdeclared(anchor, arc)
    counters = _fold_gauges(anchor, trees, tree_group, gauges)
    root = program or anchor.stem
    if with_events:  # a cctviz trace's own root drops the reader's: its ids move
        for k, t in enumerate(trees):
            if _own_root(t) is not None:
                located[k]["node"] = _focus_ids(t)[located[k]["node"].to_numpy()]
    trees = [_own_root(t) or _rename_root(t, root) for t in trees]
    meta: dict[str, Any] = {
        "otf2": {"events": n_events, "unclosed": unclosed, "timer_resolution": res},
        "world_size": arc.world_size,
    }
    profiles = pd.DataFrame(rows)
    meta["cut_ns"] = cut_of(profiles, anchor)
    if counters is not None:
        meta["metric_locations"] = sorted(set(counters["location_name"]))
    ens = Ensemble.from_trees(trees, profiles=profiles, meta=meta)
    if with_events:
        located = [_on_unified(t, ens.tree, ev) for t, ev in zip(trees, located)]
        return ens, located, counters
    return ens


def _metrics_only(loc: Any, st: _Location, otf2: Any) -> bool:
    """Whether a location is a meter (OTF2 location type METRIC, or one with metric
    samples and no region, message or program event), not a thread of execution."""
    if _ename(getattr(loc, "type", "")) == "METRIC":
        return True
    return bool(len(st.m_pos)) and not (
        len(st.el_time) or len(st.c_pos) or st.program[0] is not None
    )


def _root_values(
    st: _Location, arc: _Archive, ns_per_tick: float
) -> list[tuple[str, float, str, str | None, pd.DataFrame]]:
    """A meter's samples as one value per member for its process's root, by the
    member's mode (absolute: the largest, rule max; accumulated from the start:
    the last, rule sum; relative or per-interval ones: their sum, rule sum), with
    the member's unit and its series (ts in ns, value) for the timeline."""
    mm = np.frombuffer(st.m_member, dtype=np.int64) if len(st.m_member) else np.zeros(0, np.int64)
    mv = np.frombuffer(st.m_value, dtype=np.float64) if len(st.m_value) else np.zeros(0)
    mt = np.frombuffer(st.m_time, dtype=np.int64) if len(st.m_time) else np.zeros(0, np.int64)
    out = []
    for k in np.unique(mm).tolist():
        mem, sel = arc.members[k], mm == k
        vals = mv[sel]
        value_mode, timing, unit = _read_as(arc, mem, vals)
        if value_mode == "ABSOLUTE":
            v, rule = float(vals.max()), "max"
        elif value_mode == "ACCUMULATED" and timing in ("START", "POINT"):
            v, rule = float(vals[-1]), "sum"
        else:
            v, rule = float(vals.sum()), "sum"
        series = pd.DataFrame(
            {"ts": np.rint(mt[sel] * ns_per_tick).astype(np.int64), "value": vals}
        )
        out.append((str(mem.name), v, rule, unit, series))
    return out


def _fold_gauges(
    anchor: Path,
    trees: list[Tree],
    tree_group: list[int],
    gauges: list[tuple[int, str, list[tuple[str, float, str, str | None, pd.DataFrame]]]],
) -> pd.DataFrame | None:
    """Put each meter's values on the root of the first thread of its process
    (``trees`` changed in place); its series as counter tracks for the timeline
    (profile, track, ts, value). A meter whose process has no thread is refused."""
    parts = []
    for gref, name, members in gauges:
        if gref not in tree_group:
            raise ProfileError(
                anchor, f"metric location {name!r} belongs to no process with a thread"
            )
        k = tree_group.index(gref)
        for member, value, rule, unit, series in members:
            col = np.full(len(trees[k]), 0.0 if rule == "sum" else np.nan)
            col[0] = value
            if member in trees[k].metrics.columns:
                raise ProfileError(
                    anchor, f"metric {member!r} is both a thread's and a meter's ({name!r})"
                )
            trees[k] = trees[k].add_metric(member, col, unit=unit, aggregation=rule)
            parts.append(series.assign(profile=k, track=member, location_name=name))
    return pd.concat(parts, ignore_index=True) if parts else None


__all__ = ["read_otf2", "read_otf2_timeline"]
