"""torch.profiler / Kineto Chrome-trace JSON (``*.pt.trace.json[.gz]``), format ``"kineto"``.

Format facts (PyTorch 1.8 to 2.x, Kineto ``schemaVersion`` 1):

- One JSON object. ``traceEvents`` is a list of Chrome trace events; every
  other top-level key is run metadata: ``distributedInfo`` (``backend``,
  ``rank``, ``world_size``, ``pg_config``...), ``deviceProperties``,
  ``baseTimeNanoseconds``, ``schemaVersion``, ``traceName``, job labels.
- Phase ``X`` events (``name``, ``cat``, ``pid``, ``tid``, ``ts``, ``dur``,
  ``args``) in microseconds (fractional: a "ns resolution" trace still counts
  in us, only ``displayTimeUnit`` says ``"ns"``). CPU side, one (pid, tid)
  per thread: ``cpu_op``, ``user_annotation`` (``ProfilerStep#N``,
  ``nccl:all_reduce``, ``## forward ##``), ``python_function`` (with
  ``with_stack``: ``Python id``, ``Python parent id``), ``cuda_runtime`` and
  ``cuda_driver`` (``cudaLaunchKernel``; ROCm traces keep the category for
  ``hipLaunchKernel``...). GPU side, pid = device, tid = stream: ``kernel``,
  ``gpu_memcpy``, ``gpu_memset``, ``gpu_user_annotation``. The 2021 schema
  names them ``Operator``, ``Runtime``, ``Kernel``, ``Memcpy``, ``Memset``
  (tids are strings there, ``"external id"`` is lower case).
- A GPU event and the runtime call that launched it share
  ``args.correlation`` (both schemas). The ``s``/``f`` flow events
  (``ac2g``, ``async``, ``async_cpu_to_gpu``) carry the same number as their
  ``id``, so they add nothing and are not read.
- ``M`` events name processes and threads (``process_name``,
  ``process_labels``, ``thread_name``); ``i`` events: ``[memory]`` (``args``:
  ``Device Type`` (c10's code: 0 CPU, 1 CUDA...), ``Device Id`` (-1 for the
  host), ``Bytes`` (+ allocated, - freed), and since about PyTorch 1.10 ``Total
  Allocated``/``Total Reserved``, ``Addr``) are read by the timeline reader as
  counter tracks; the ``Trace`` span and other instants are not read. No sample
  here and no CPU trace of torch 2.13 has ``C`` (counter) events.
- Collectives: ``record_param_comms`` (cpu_op) with ``Collective name``,
  ``In msg nelems``, ``Out msg nelems``, ``dtype``, ``Group size``,
  ``Process Group Name``/``Ranks`` (PyTorch >= 2.1; older ones have only
  ``Input Dims``); ``nccl:<op>``/``gloo:<op>`` annotations with ``Input
  Dims``/``Input type``; the dispatcher op ``c10d::<op>_`` around them.
  They nest: ``c10d::allreduce_ > record_param_comms > nccl:all_reduce``.

How the tree is built (the choices):

- One root per CPU process (kind ``"process"``), a child per thread (kind
  ``"thread"``), named without ids: ``process`` (``process 1``... if the
  trace has several), ``main thread`` (tid = pid) and ``thread 1``,
  ``thread 2``... numbered by first event, so that the ranks of one job unify
  by call path in an Ensemble. The pid/tid is in the node column ``id``,
  the ``M`` names in ``label``; ``thread_ids=True`` names the nodes
  ``process <pid>`` / ``thread <tid>`` instead.
- CPU ``X`` events of the categories above (``xpu_runtime``,
  ``privateuse1_runtime``/``_driver`` and ``mtia_runtime`` count as runtime)
  are sorted by (ts, -dur) per thread and nested by the model's one interval
  nester (:func:`cctviz.model.build.nest_intervals`, ``overlap="cut"``, the
  Python frames giving way), as a stack walk would: each goes under the
  innermost event that contains it whole. A zero-length event that starts
  where another ends goes inside it (in whole-us traces an op "ends" where its
  last sub-op starts), as HTA's call stacks do; a zero-length event holds
  nothing. Ends that differ by float rounding only count as equal.
- No ``cpu_op``, annotation or runtime call is shortened but where a later
  one overlaps it without nesting (the last rule below): each keeps its
  ``dur`` as the inclusive time of its node. Events that overlap without
  nesting come from ``with_stack=True``: torch opens ``ProfilerStep#N`` (and
  any ``record_function``) inside the Python frames of ``profiler.step() >
  __enter__ > _record_function_enter_new`` and closes it inside the next
  ``step() > __exit__``. The rules, which keep everything that ran inside a
  step (same thread) in the step's subtree:

  - an event that outlives events it started in (they end inside it) goes
    under the innermost event that contains it whole (counted in
    ``meta["kineto"]["reattached"]``);
  - where a Python frame and a cpu_op/annotation/runtime overlap, the overlap
    belongs to the latter: events that start in it nest under the
    cpu_op/annotation, and the frame's node covers only its part outside it.
    A frame that starts before a step and ends inside it (``step() >
    __enter__``) keeps the time up to the step's start; one that starts inside
    and ends after (the next ``step() > __exit__``) the time from the step's
    end; one that does both keeps the part between. Such frames are counted in
    ``meta["kineto"]["frames_trimmed"]``; their ``time`` is then exclusive time
    within that part, and a thread's inclusive time is the time it was busy
    (the union of its events), nothing counted twice;
  - of two frames that overlap without nesting, the later one starts where
    the other ends; of two cpu_op/annotation/runtime events that overlap
    without nesting (``record_function`` ranges entered and left out of order;
    the later one counted in ``meta["kineto"]["overlapped"]``), the later one
    keeps its whole duration and what starts in the overlap, and the earlier
    one ends where the later one starts, in the tree and in the timeline's
    events alike: the overlap counts once, and a thread's (and any parent's)
    inclusive time is the union of the intervals below it, none of it lost.

  ``meta["kineto"]["clamped"]`` stays 0 (older versions clamped such events
  to their parent's end).
- ``python_function`` frames are nested by time like the rest; frames with
  equal start and duration are ordered by their ``Python parent id`` link. A
  frame whose time parent is not the frame named by its ``Python parent id``
  moves under that frame when it is an ancestor with only Python frames
  between (which then keep their own exclusive time); never out of a
  cpu_op or annotation (a Python callback inside ``aten::mm`` stays under it,
  where its time is). Links not followed are counted in
  ``meta["kineto"]["python_links_ignored"]``.
- GPU events become children of the CPU event with the same correlation (the
  first in CPU order; the model's :func:`cctviz.model.gputrace.gpu_trace`; kinds
  ``"kernel"``, ``"memcpy"``, ``"memset"``; metric ``gpu_time``).
  Those without one go under ``(unattributed GPU)`` below a root
  ``device <pid>`` (kind ``"device"``), counted in
  ``meta["kineto"]["unattributed_gpu"]``.
- Not read: ``gpu_user_annotation`` (GPU-side copies of CPU annotations that
  overlap the kernels they contain: their time would be counted twice),
  ``cuda_sync`` (waits, not work), ``overhead``, ``Trace``, and any unknown
  category (counts in ``meta["kineto"]["skipped"]``).
- Merged by default into a calling-context tree: events with the same call
  path, the path of names from the root, are one node (the kind is an
  attribute, not part of the identity); metrics add up (``meta["aggregation"]``
  says ``"sum"`` for each), ``calls`` counts the events. A node's kind and
  collective columns are its first event's; where merged events differ in
  them (an annotation and an op of one name, a collective on two process
  groups), one warning names what was dropped. ``merge=False`` keeps one node
  per event. ``ProfilerStep#N`` differs per step, so each step stays its own
  node.

Metrics (``meta["units"]``: ``us`` for the times, Kineto's microseconds
kept, ``B`` for the bytes; ``calls`` is a count): ``time`` exclusive CPU time
(dur minus the CPU children's durations), ``gpu_time`` (GPU dur),
``calls``, and on the outermost event of each collective (``c10d::`` op,
else ``record_param_comms``, else the ``nccl:``/``gloo:`` annotation; the
events inside it are kind ``"comm"`` too but carry no comm metric, so bytes
count once): ``comm_time`` (its CPU dur), ``comm_bytes`` and ``bus_bytes``.
Bytes follow nccl-tests as :mod:`cctviz.model.collectives` says: the whole output
of all_gather/gather, the whole input otherwise; from ``In/Out msg nelems`` x
``dtype`` where given, else from the annotation's ``Input Dims`` x ``Input
type`` (an all_gather's output from the ``c10d::`` op's first tensor, or the
input x group size). ``bus_bytes`` = bytes x the nccl-tests bus factor of the
group size. The group size is the recorded ``Group size``; where there is
none (gloo's traces record only the ``gloo:`` annotation's input), the length
of ``Process Group Ranks``, else the process group's ``pg_size`` in
``distributedInfo.pg_config`` (its only entry, for a collective that names no
group), else the whole world (``distributedInfo.world_size``; counted in
``meta["kineto"]["group_size_assumed"]``); ``comm_bytes`` and ``bus_bytes``
use the same size, and ``bus_bytes`` is 0 where no size is known at all.
Node columns of the collective: ``collective``, ``group_size``,
``process_group``, ``process_group_ranks``.

Parsing is the Chrome reader's too (:func:`cctviz.readers._chrometrace.parse_trace`):
it streams the (gzipped) text with
:class:`~cctviz.readers._jsonstream.JsonStream` (4 MiB pieces, about 64 KiB of
events per ``json.loads`` call), with the garbage collector paused, and keeps
only columns (interned names, ts, dur, thread, correlation) in :mod:`array`
buffers, never a list of all events; they are split into CPU and GPU events
afterwards, vectorised. A 1 GB synthetic trace in one file (4.4M
events, ``benchmarks/kineto_synth.py``) reads in 31 s of CPU time with a peak
RSS of 0.8 GB (2026-11-27, a loaded 2-CPU machine); 1 GB as 4 rank files reads
8-10x faster than Holistic Trace Analysis (7.4-9.2x in CPU time) with a 16x
smaller peak (``benchmarks/kineto_parse.py``). About 70% of the time is the
standard library's JSON decoding.

>>> import cctviz
>>> t = cctviz.read("../shared/data/kineto/hta_call_stack_backward_thread.json")
>>> t.nodes["name"].tolist()[:5]
['process', 'main thread', 'ProfilerStep#552', '## backward ##', 'thread 1']
>>> t.meta["rank"], t.units["time"]
(0, 'us')
"""

from __future__ import annotations

import json
import re
import warnings
from array import array
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import ProfileError
from ..model._algo import merge_by_path
from ..model.build import nest_intervals
from ..model.collectives import NAME_PREFIX as _PREFIX
from ..model.collectives import bus_factor, collective_kind, dtype_size, nccl_tests_elements
from ..model.gputrace import GpuTrace, gpu_trace
from ..model.timeline import Timeline
from ..model.tree import Tree
from . import register, register_timeline
from ._chrometrace import TraceEvents, described, floats, parse_trace
from ._json import first_byte
from ._jsonstream import CHUNK
from ._threads import id_key as _key

# ----------------------------------------------------------------- categories
OP, ANNOT, PYF, RUNTIME = 0, 1, 2, 3  # CPU event classes
KERNEL, MEMCPY, MEMSET = -1, -2, -3  # GPU event classes
CATEGORIES: dict[str, int] = {
    "cpu_op": OP,
    "Operator": OP,
    "user_annotation": ANNOT,
    "python_function": PYF,
    "cuda_runtime": RUNTIME,
    "cuda_driver": RUNTIME,
    "Runtime": RUNTIME,
    "xpu_runtime": RUNTIME,
    "mtia_runtime": RUNTIME,
    "privateuse1_runtime": RUNTIME,
    "privateuse1_driver": RUNTIME,
    "kernel": KERNEL,
    "Kernel": KERNEL,
    "gpu_memcpy": MEMCPY,
    "Memcpy": MEMCPY,
    "gpu_memset": MEMSET,
    "Memset": MEMSET,
}
#: node kinds; the index is the kind code used while building
KIND_NAMES = (
    "op",
    "region",
    "function",
    "runtime",
    "kernel",
    "memcpy",
    "memset",
    "comm",
    "process",
    "thread",
    "device",
)
_K = {k: i for i, k in enumerate(KIND_NAMES)}
_CLASS_KIND = {OP: _K["op"], ANNOT: _K["region"], PYF: _K["function"], RUNTIME: _K["runtime"]}
_GPU_KIND = {KERNEL: _K["kernel"], MEMCPY: _K["memcpy"], MEMSET: _K["memset"]}

UNITS = {"time": "us", "gpu_time": "us", "comm_time": "us", "comm_bytes": "B", "bus_bytes": "B"}
METRICS = ("time", "gpu_time", "calls", "comm_time", "comm_bytes", "bus_bytes")
#: how merged events combine, per metric (``meta["aggregation"]``): all add up
AGGREGATION = dict.fromkeys(METRICS, "sum")
COMM_COLUMNS = ("collective", "group_size", "process_group", "process_group_ranks")
UNATTRIBUTED = "(unattributed GPU)"
_RESERVED_META = {"units", "aggregation", "format", "source", "kineto", "traceEvents"}

# ------------------------------------------------------------- collectives
_COMM_NAME = re.compile(r"^record_param_comms$|" + _PREFIX.pattern)


def _tensor_bytes(dims: Any, types: Any, first_only: bool = False) -> int | None:
    """Bytes of the tensors in ``Input Dims``/``Input type`` (entries of known
    dtype only); None if there is none."""
    if not isinstance(dims, list) or not isinstance(types, list):
        return None
    total, found = 0, False
    for d, ty in zip(dims, types):
        size = dtype_size(ty)
        if size is None or not isinstance(d, list):
            if first_only:
                return None
            continue
        n = 1
        for x in d:
            if not isinstance(x, int) or x < 0:
                return None
            n *= x
        total += n * size
        found = True
        if first_only:
            break
    return total if found else None


def _int(v: Any) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v if v >= 0 else None
    if isinstance(v, float) and v.is_integer() and v >= 0:
        return int(v)
    if isinstance(v, str) and v.isdigit():
        return int(v)
    return None


def _collective(members: list[tuple[str, dict]]) -> dict[str, Any]:
    """Kind, bytes, group size and process group of one collective from the
    (name, args) of the comm events that nest into it, outermost first."""
    kind: str | None = None
    group: int | None = None
    pg: Any = None
    ranks: Any = None
    seq: int | None = None
    nbytes: int | None = None
    outer_first: int | None = None  # a c10d:: op's first tensor (an all_gather's output)
    annot: int | None = None  # bytes of an nccl:/gloo: annotation's tensors
    rpc_in: int | None = None  # record_param_comms' first tensor from Input Dims
    per_rank = False  # bytes are one rank's input of an all_gather/gather (x group size)
    for name, args in members:
        if name == "record_param_comms":
            cn = args.get("Collective name")
            if isinstance(cn, str):
                kind = collective_kind(cn) or kind
                if kind is None:
                    kind = ""  # known not to be a collective ("wait")
            g = _int(args.get("Group size"))
            group = g if g else group
            pg = args.get("Process Group Name", args.get("Process Group ID", pg))
            ranks = args.get("Process Group Ranks", ranks)
            seq = _int(args.get("Seq", seq))  # per process group (PyTorch >= 2.4, NCCL)
            size = dtype_size(args.get("dtype"))
            n_in, n_out = _int(args.get("In msg nelems")), _int(args.get("Out msg nelems"))
            if size is not None and (n_in is not None or n_out is not None) and nbytes is None:
                nbytes = nccl_tests_elements(kind, n_in or 0, n_out or 0, group) * size
            if rpc_in is None:
                rpc_in = _tensor_bytes(args.get("Input Dims"), args.get("Input type"), True)
        elif name.startswith("c10d::"):
            kind = kind or collective_kind(name)
            if outer_first is None:
                outer_first = _tensor_bytes(args.get("Input Dims"), args.get("Input type"), True)
        else:
            if not kind:
                kind = collective_kind(name) or kind
            if annot is None:
                annot = _tensor_bytes(args.get("Input Dims"), args.get("Input type"))
    if nbytes is None and kind:
        base = annot if annot is not None else rpc_in
        if base is not None:
            if kind in ("all_gather", "gather"):
                if outer_first is not None and outer_first >= base:
                    if group is None and base > 0 and outer_first % base == 0:
                        group = outer_first // base
                    nbytes = outer_first
                elif group is not None:
                    nbytes = base * group
                else:  # only the input known: x the group size, once the trace says it
                    nbytes, per_rank = base, True
            else:
                nbytes = base
    return {
        "collective": kind or None,
        "bytes": float(nbytes or 0),
        "per_rank": per_rank,
        "group_size": group,
        "process_group": None if pg is None else str(pg),
        "process_group_ranks": None if ranks is None else str(ranks),
        "seq": seq,
    }


# -------------------------------------------------------------------- sniff
_EVENTS_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')
_KINETO_HEAD = re.compile(
    rb'^\s*\{\s*"schemaVersion"\s*:\s*\d+\s*,\s*"(?:deviceProperties|distributedInfo|record_shapes)"'
)


#: what only torch.profiler writes: its top-level keys, its event categories
_KINETO_MARK = re.compile(
    rb'"(?:schemaVersion|deviceProperties|distributedInfo|baseTimeNanoseconds)"\s*:|'
    rb'"cat"\s*:\s*"(?:' + b"|".join(re.escape(c.encode()) for c in CATEGORIES) + rb')"'
)


def is_kineto_head(h: bytes) -> bool:
    """Whether the first bytes of a Chrome trace are torch.profiler's: a Kineto
    top-level key (``schemaVersion``...) or a Kineto event category (``cpu_op``,
    ``kernel``...). Other Chrome traces (JAX, VizTracer, py-spy) go to the
    ``chrome`` reader."""
    return bool(_KINETO_MARK.search(h))


def _sniff(path: Path, h: bytes) -> bool:
    if first_byte(h) != b"{" or not is_kineto_head(h):
        return False
    # long metadata (a big pg_config) can push traceEvents past the head
    return bool(_EVENTS_KEY.search(h)) or bool(_KINETO_HEAD.match(h))


# --------------------------------------------------------------- the reader
class _Columns(TraceEvents):
    """What the parse keeps of the events (the shared Chrome-trace columns,
    :func:`~cctviz.readers._chrometrace.parse_trace`), its ``X`` events split by
    :func:`_split` into CPU and GPU events: flat typed arrays, interned strings."""

    def __init__(self) -> None:
        super().__init__()
        self.comm_codes: set[int] = set()
        self.py: list[tuple[int, Any, Any]] = []  # (X index, Python id, Python parent id)
        self.py_at = np.empty(0, dtype=np.int64)  # each frame's cpu index
        self.comm: dict[int, dict] = {}  # X index, then cpu index -> args of a comm event
        # [memory] instant events: ts, device type and id, Bytes, Total Allocated/Reserved
        self.m_ts = array("d")
        self.m_dev = array("q")
        self.m_bytes = array("d")
        self.m_alloc = array("d")
        self.m_res = array("d")
        # by _split: CPU events (threads: the CPU threads only), GPU events
        self.c_th = self.c_name = self.c_cls = self.c_ts = self.c_dur = self.c_corr = _NONE
        self.g_name = self.g_cls = self.g_ts = self.g_dur = self.g_corr = _NONE
        self.g_dev = self.g_stream = _NONE  # the GPU event's pid and tid: device, stream


_NONE = np.empty(0)


def _parse(
    path: Path, python_functions: bool, chunk: int = CHUNK
) -> tuple[_Columns, dict[str, Any]]:
    """The trace's events as columns: the shared Chrome-trace parse (of the
    categories above, with ``args.correlation``, Python ids, comm args and
    ``[memory]`` events), then split into CPU and GPU events."""
    col = _Columns()
    py, comm, comm_codes = col.py, col.comm, col.comm_codes

    def on_name(nm: str, nc: int) -> None:
        if _COMM_NAME.match(nm):
            comm_codes.add(nc)

    def on_x(kx: int, cat: Any, nc: int, args: dict) -> None:
        cls = CATEGORIES[cat]
        if cls == PYF:
            py.append((kx, args.get("Python id"), args.get("Python parent id")))
        if nc in comm_codes and cls >= 0:
            comm[kx] = args

    def on_instant(ev: dict) -> None:
        if ev.get("name") == "[memory]":
            _memory_event(ev, col)

    cats = CATEGORIES if python_functions else {c: k for c, k in CATEGORIES.items() if k != PYF}
    top = parse_trace(
        path,
        what="a Kineto trace",
        problem=_problem,
        categories=cats,
        drop=() if python_functions else {c for c, k in CATEGORIES.items() if k == PYF},
        correlation=True,
        other_phases=False,
        unnamed=None,
        on_x=on_x,
        on_name=on_name,
        on_instant=on_instant,
        chunk=chunk,
        into=col,
    )[1]
    _split(col)
    return col, top


def _problem(e: BaseException, ev: Any) -> str:
    """An event the parse cannot read, in this reader's words."""
    if isinstance(e, AttributeError):
        what = "the event" if isinstance(ev, dict) else described(ev)
        return f"expected an object with object 'args', got {what}"
    if isinstance(e, KeyError):
        return f"a complete ('X') event without {e.args[0]!r}"
    return (
        f"an 'X' event needs numeric ts and dur, a hashable pid/tid/name/cat and an "
        f"integer args.correlation ({type(e).__name__}: {e})"
    )


def _split(col: _Columns) -> None:
    """The ``X`` events as CPU events (their threads renumbered in the order of
    their first event, ``col.threads`` only theirs) and GPU events (their pid and
    tid: device and stream), vectorised; the parse's columns freed."""
    nx = len(col.x_ts)
    kinds = np.asarray([CATEGORIES[c] for c in col.cats], dtype=np.int8)
    cls = kinds[np.frombuffer(col.x_cat, dtype=np.int32)] if nx else np.empty(0, np.int8)
    cpu = cls >= 0
    ci, gi = np.flatnonzero(cpu), np.flatnonzero(~cpu)
    th = np.frombuffer(col.x_th, dtype=np.int32) if nx else np.empty(0, np.int32)
    name = np.frombuffer(col.x_name, dtype=np.int32) if nx else np.empty(0, np.int32)
    ts, dur = floats(col.x_ts), floats(col.x_dur)
    corr = np.frombuffer(col.x_corr, dtype=np.int64) if nx else np.empty(0, np.int64)
    keys = list(col.threads)
    cth = th[ci]
    used, first = np.unique(cth, return_index=True)
    used = used[np.argsort(first)]  # by first CPU event
    renum = np.zeros(max(len(keys), 1), dtype=np.int32)
    renum[used] = np.arange(used.shape[0], dtype=np.int32)
    col.threads = {keys[t]: k for k, t in enumerate(used.tolist())}
    col.c_th, col.c_name, col.c_cls = renum[cth], name[ci], cls[ci]
    col.c_ts, col.c_dur, col.c_corr = ts[ci], dur[ci], corr[ci]
    col.g_name, col.g_cls = name[gi], cls[gi]
    col.g_ts, col.g_dur, col.g_corr = ts[gi], dur[gi], corr[gi]
    pid, tid = np.empty(len(keys), dtype=object), np.empty(len(keys), dtype=object)
    pid[:], tid[:] = [k[0] for k in keys], [k[1] for k in keys]
    col.g_dev, col.g_stream = pid[th[gi]], tid[th[gi]]
    at = np.cumsum(cpu) - 1  # X index -> cpu index
    col.py_at = at[np.fromiter((k for k, _, _ in col.py), dtype=np.int64, count=len(col.py))]
    col.comm = {int(at[k]): a for k, a in col.comm.items()}
    for b in ("x_th", "x_name", "x_cat", "x_ts", "x_dur", "x_corr"):
        setattr(col, b, array(getattr(col, b).typecode))


def _memory_event(ev: dict, col: _Columns) -> None:
    """Keep one ``[memory]`` instant event (``args``: ``Device Type``, ``Device Id``,
    ``Bytes``, and since about PyTorch 1.10 ``Total Allocated``/``Total Reserved``)."""
    args = ev.get("args") or {}
    dtype, dev = _number(args.get("Device Type")), _number(args.get("Device Id"))
    ts, nbytes = _number(ev.get("ts")), _number(args.get("Bytes"))
    if ts is None or nbytes is None or dtype is None:
        col.skipped["[memory] without ts, Bytes or Device Type"] = (
            col.skipped.get("[memory] without ts, Bytes or Device Type", 0) + 1
        )
        return
    col.m_ts.append(ts)
    col.m_dev.append(int(dtype) * _DEVICE_STRIDE + int(dev if dev is not None else -1) + 1)
    col.m_bytes.append(nbytes)
    alloc, res = _number(args.get("Total Allocated")), _number(args.get("Total Reserved"))
    col.m_alloc.append(np.nan if alloc is None else alloc)
    col.m_res.append(np.nan if res is None else res)


def _number(v: Any) -> float | None:
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    return None


#: c10::DeviceType codes of the devices whose allocators torch.profiler reports
DEVICE_TYPES = {
    0: "cpu",
    1: "cuda",
    6: "hip",
    12: "xpu",
    13: "mps",
    19: "mtia",
    20: "privateuseone",
}
_DEVICE_STRIDE = 1 << 20  # device code = type * stride + id + 1


def _device_name(code: int) -> str:
    """``cpu``, ``cuda:0``... from a device code (type and id)."""
    dtype, dev = divmod(code, _DEVICE_STRIDE)
    name = DEVICE_TYPES.get(dtype, f"device type {dtype}")
    return name if dev == 0 else f"{name}:{dev - 1}"


def _py_links(col: _Columns, th: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The python_function frames (cpu indices), the frame named by each one's
    ``Python parent id`` on the same thread (an index into the frames, -1:
    none) and each frame's depth along these links (to order frames with
    equal start and duration)."""
    frames = col.py_at
    link = _int_links(col.py, th[frames])
    if link is None:
        link = _any_links(col.py, th[frames].tolist())
    # depth by pointer doubling: depth[k] links from k up to up[k] (-1: the top)
    depth = (link >= 0).astype(np.int64)
    up = link.copy()
    for _ in range(32):  # 2**32 links deep; frames on a cycle of links stop here
        m = np.flatnonzero(up >= 0)
        if not m.size:
            break
        u = up[m]
        depth[m] += depth[u]
        up[m] = up[u]
    return frames, link, depth


def _any_links(py: list[tuple[int, Any, Any]], ths: list[int]) -> np.ndarray:
    """Each frame's link (:func:`_py_links`) for ids of any type: the last frame
    of the thread with that ``Python id`` (unhashable ids link nothing)."""
    at: dict[tuple[int, Any], int] = {}
    for k, (t, (_, pid_, _)) in enumerate(zip(ths, py)):
        try:
            at[(t, pid_)] = k
        except TypeError:  # an unhashable id: no link
            pass
    link = np.full(len(py), -1, dtype=np.int64)
    for k, (t, (_, _, ppid)) in enumerate(zip(ths, py)):
        try:
            link[k] = at.get((t, ppid), -1)
        except TypeError:
            pass
    return link


def _int_links(py: list[tuple[int, Any, Any]], th: np.ndarray) -> np.ndarray | None:
    """:func:`_any_links` in numpy where every ``Python id`` is an int and every
    ``Python parent id`` an int or null (what torch writes); None otherwise.

    A (thread, id) key is the thread times the number of distinct ids plus the
    id's rank among them; a stable sort of the keys puts the frames with one
    key in file order, and a parent id finds the last of them (the dict's
    "last one wins")."""
    ids = [p[1] for p in py]
    pids = [p[2] for p in py]
    if {type(v) for v in ids} - {int} or {type(v) for v in pids} - {int, type(None)}:
        return None
    has = np.fromiter((v is not None for v in pids), dtype=bool, count=len(pids))
    try:
        a = np.asarray(ids, dtype=np.int64)
        b = np.asarray([v for v in pids if v is not None], dtype=np.int64)
    except OverflowError:
        return None
    vals, rank = np.unique(np.r_[a, b], return_inverse=True)
    t = th.astype(np.int64)
    key = t * vals.size + rank[: a.size]
    want = t[has] * vals.size + rank[a.size :]
    order = np.argsort(key, kind="stable")
    sk = key[order]
    at = np.searchsorted(sk, want, side="right") - 1
    ok = at >= 0
    ok[ok] = sk[at[ok]] == want[ok]
    found = np.full(want.size, -1, dtype=np.int64)
    found[ok] = order[at[ok]]
    link = np.full(a.size, -1, dtype=np.int64)
    link[has] = found
    return link


def _thread_names(col: _Columns, first_ts: np.ndarray, thread_ids: bool) -> tuple[list, list]:
    """Process and thread nodes: [(pid, name, label)], [(thread code, pid, name, label)]."""
    keys = list(col.threads)
    order = sorted(range(len(keys)), key=lambda t: (first_ts[t], _key(keys[t][1])))
    pids: list[Any] = []
    for t in order:
        if keys[t][0] not in pids:
            pids.append(keys[t][0])
    procs = []
    for k, pid in enumerate(pids):
        name = f"process {pid}" if thread_ids else ("process" if len(pids) == 1 else f"process {k}")
        procs.append((pid, name, col.process_names.get(pid)))
    threads = []
    count: dict[Any, int] = {}
    for t in order:
        pid, tid = keys[t]
        if thread_ids:
            name = f"thread {tid}"
        elif str(tid) == str(pid):
            name = "main thread"
        else:
            count[pid] = count.get(pid, 0) + 1
            name = f"thread {count[pid]}"
        threads.append((t, pid, name, col.thread_names.get((pid, tid))))
    return procs, threads


class _Cpu:
    """The CPU events nested, in (thread, ts, -dur) order."""

    ts: np.ndarray  # start
    dur: np.ndarray  # duration (trimmed python frames: the part inside their parent)
    tparent: np.ndarray  # the enclosing event in time (the nester's; -1: none)
    th: np.ndarray  # thread code
    time: np.ndarray  # exclusive CPU time
    sparent: np.ndarray  # parent position (-1: the thread's top level)
    name: np.ndarray  # name code
    kind: np.ndarray  # kind code
    corr: np.ndarray  # correlation (-1: none)
    comm: dict[int, dict[str, Any]]  # head position -> collective
    reattached: int  # events placed above an event they started in: they outlive it
    overlapped: int  # cpu_op/annotation/runtime events that cut another short
    frames_trimmed: int
    ignored: int  # Python parent ids not followed


def _nest_cpu(path: Path, col: _Columns, th_rank: np.ndarray) -> _Cpu:
    """Sort the CPU events per thread and nest them (the model's
    :func:`~cctviz.model.build.nest_intervals`, ``overlap="cut"``), link the Python
    frames, find the collectives."""
    out = _Cpu()
    n = len(col.c_ts)
    ts0 = np.frombuffer(col.c_ts, dtype=np.float64) if n else np.empty(0)
    dur0 = np.frombuffer(col.c_dur, dtype=np.float64) if n else np.empty(0)
    th0 = np.frombuffer(col.c_th, dtype=np.int32) if n else np.empty(0, np.int32)
    tie = np.zeros(n, dtype=np.int64)
    if col.py:
        frames, link, depth = _py_links(col, th0)
        tie[:] = 1 << 40
        tie[frames] = depth
    order = np.lexsort((tie, -dur0, ts0, th_rank[th0])) if n else np.empty(0, np.int64)
    del tie
    out.ts = ts = ts0[order]
    dur = dur0[order]
    out.th = th = th0[order]
    cls = np.frombuffer(col.c_cls, dtype=np.int8)[order] if n else np.empty(0, np.int8)
    frame = cls == PYF
    # ends within float rounding count as equal; Python frames give way (module docstring)
    tol = 4 * float(np.spacing(np.abs(ts).max() + dur.max())) if n else 0.0
    nest = nest_intervals(
        th_rank[th], ts, ts + dur, overlap="cut", yields=frame, tol=tol, order=np.arange(n)
    )
    tparent = nest["parent"]
    cut, trimmed = nest["cut"], nest["trimmed"]
    changed = cut | trimmed
    out.frames_trimmed = int(np.count_nonzero(changed & frame))
    out.reattached = int(np.count_nonzero(trimmed) + np.unique(nest["cut_by"][cut]).size)
    out.overlapped = int(np.unique(nest["cut_by"][cut & ~frame]).size)
    cdur = dur  # as given (ts + dur - ts loses digits at 1e15 us), but where cut or trimmed
    if changed.any():
        cdur[changed] = np.maximum(nest["end"][changed] - nest["start"][changed], 0)
    del nest, cut, trimmed, changed
    out.dur, out.tparent = cdur, tparent
    has = tparent >= 0
    time = cdur - np.bincount(tparent[has], weights=cdur[has], minlength=n)
    del has
    out.time = np.maximum(time, 0, out=time)  # float rounding
    inv = np.empty(n, dtype=np.int64)
    inv[order] = np.arange(n)
    out.name = np.frombuffer(col.c_name, dtype=np.int32)[order] if n else np.empty(0, np.int32)
    out.corr = np.frombuffer(col.c_corr, dtype=np.int64)[order] if n else np.empty(0, np.int64)
    out.kind = np.asarray([_CLASS_KIND[c] for c in range(4)], dtype=np.int8)[cls]
    del order, cls

    # python_function frames: under the frame named by Python parent id where
    # that frame is an ancestor with only frames between (a frame never leaves
    # a cpu_op or annotation that holds it in time)
    out.sparent = tparent
    out.ignored = 0
    if col.py:
        has = link >= 0
        f = inv[frames[has]]
        p = inv[frames[link[has]]]
        del has
        moved = tparent[f] != p
        f, p = f[moved], p[moved]
        found = np.zeros(f.size, dtype=bool)
        pending = np.arange(f.size)
        cur = tparent[f]
        while pending.size:
            c = cur[pending]
            hit = c == p[pending]
            found[pending[hit]] = True
            go = ~hit & (c >= 0)
            go[go] = frame[c[go]]  # a frame between: look further up
            pending = pending[go]
            cur[pending] = tparent[cur[pending]]
        if found.any():
            out.sparent = tparent.copy()
            out.sparent[f[found]] = p[found]
        out.ignored = int(found.size - np.count_nonzero(found))

    # collectives: the outermost comm event of each nest gets the metrics
    out.comm = {}
    if col.comm:
        args_at = {int(inv[i]): a for i, a in col.comm.items()}
        name_list = list(col.names)
        head: dict[int, int] = {}
        nests: dict[int, list[int]] = {}
        for p in sorted(args_at):
            a = int(tparent[p])
            while a != -1 and a not in args_at:
                a = int(tparent[a])
            h = p if a == -1 else head[a]
            head[p] = h
            nests.setdefault(h, []).append(p)
        comm_kind = _K["comm"]
        queued = _queued_calls(col, out.th, nests, [name_list[k] for k in out.name])
        for h, members in nests.items():
            out.kind[members] = comm_kind
            if h in queued:  # its work on another thread is the collective
                continue
            c = _collective(
                [
                    (name_list[out.name[p]], a if isinstance(a := args_at[p], dict) else {})
                    for p in members
                ]
            )
            if c["collective"] is not None:
                c["time"] = float(cdur[h])
                out.comm[h] = c
    return out


def _queued_calls(
    col: _Columns, th: np.ndarray, nests: dict[int, list[int]], names: list[str]
) -> set[int]:
    """The ``c10d::<op>_`` calls that only queue their collective: nothing of it
    nests in them (no ``record_param_comms``, no backend annotation), and in
    the same process a ``gloo:<op>``/``nccl:<op>`` annotation of that kind heads
    a nest of its own on another thread (gloo runs each collective on a worker
    thread, the call returns at once). That annotation, with the tensors and the
    time the transfer and its wait took, is the collective; the call stays a
    communication context without the collective's metrics, so each call
    counts once."""
    pid = [key[0] for key in col.threads]
    work: dict[tuple[Any, str], set[int]] = {}  # (process, kind) -> threads with work
    calls: list[tuple[int, Any, str, int]] = []
    for h, members in nests.items():
        name = names[h]
        kind = collective_kind(name)
        if kind is None:
            continue
        t = int(th[h])
        if name.startswith("c10d::"):
            if len(members) == 1:
                calls.append((h, pid[t], kind, t))
        elif name != "record_param_comms":
            work.setdefault((pid[t], kind), set()).add(t)
    return {h for h, p, kind, t in calls if work.get((p, kind), set()) - {t}}


def _check_numbers(path: Path, col: _Columns) -> int:
    """Finite ts and dur everywhere; negative durations set to 0, said in one
    warning naming the first such event (returns their count)."""
    neg, first = 0, None
    names = list(col.names)
    for ts, dur, name, where in (
        (col.c_ts, col.c_dur, col.c_name, "CPU"),
        (col.g_ts, col.g_dur, col.g_name, "GPU"),
    ):
        if not len(ts):
            continue
        for v, what in ((ts, "ts"), (dur, "dur")):
            a = np.frombuffer(v, dtype=np.float64)
            ok = np.isfinite(a)
            if not ok.all():
                bad = a[~ok][0]
                raise ProfileError(path, f"an event has a non-finite {what} ({bad})", "traceEvents")
        d = np.frombuffer(dur, dtype=np.float64)
        below = np.flatnonzero(d < 0)
        if below.size:
            i = int(below[0])
            code = int(np.frombuffer(name, dtype=np.int32)[i])
            first = first or (
                f"{names[code]!r} ({where} event, ts {np.frombuffer(ts, dtype=np.float64)[i]:.3f} "
                f"us, dur {d[i]:g} us)"
            )
            d[below] = 0
            neg += below.size
    if neg:
        warnings.warn(
            f"{path}: {neg} event(s) with a negative duration, read as 0 (the first: {first}); "
            "meta['kineto']['negative_dur'] counts them",
            stacklevel=4,
        )
    return neg


def _pg_sizes(top: dict[str, Any]) -> dict[str, int]:
    """Size of each process group the trace's ``distributedInfo.pg_config`` lists
    (by ``pg_name``: ``pg_size``, else the length of ``ranks``)."""
    di = top.get("distributedInfo")
    cfg = di.get("pg_config") if isinstance(di, dict) else None
    out: dict[str, int] = {}
    for pg in cfg if isinstance(cfg, list) else []:
        if not isinstance(pg, dict):
            continue
        size = _int(pg.get("pg_size"))
        if size is None and isinstance(pg.get("ranks"), list):
            size = len(pg["ranks"])
        if size:
            out[str(pg.get("pg_name"))] = size
    return out


def _ranks_size(ranks: Any) -> int | None:
    """Number of ranks in a ``Process Group Ranks`` argument (``"[0, 1]"`` or a list)."""
    if isinstance(ranks, str):
        try:
            ranks = json.loads(ranks)
        except ValueError:
            return None
    return len(ranks) if isinstance(ranks, list) and ranks else None


def _resolve_groups(coll: list[dict[str, Any]], top: dict[str, Any], world: int | None) -> int:
    """Give each collective without a recorded ``Group size`` the size of its
    group from the trace's own metadata: its ``Process Group Ranks``, else its
    process group's entry in ``distributedInfo.pg_config`` (the only entry, where
    the collective names none), else the world size; then scale the bytes of an
    all_gather/gather known only by its input by that size (nccl-tests count
    the whole output), so ``comm_bytes`` and ``bus_bytes`` use one group size.
    Returns how many collectives took the world size."""
    sizes = _pg_sizes(top)
    only = next(iter(sizes.values())) if len(sizes) == 1 else None
    assumed = 0
    for c in coll:
        if not c["group_size"]:
            pg = c["process_group"]
            g = _ranks_size(c["process_group_ranks"]) or (sizes.get(pg) if pg is not None else only)
            if g is None and world and c["bytes"]:
                g, assumed = world, assumed + 1
            c["group_size"] = g
        if c.pop("per_rank", False) and c["group_size"]:
            c["bytes"] *= c["group_size"]
    return assumed


def _meta(top: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Scalar top-level keys (and distributedInfo's rank, world_size, backend)
    for ``tree.meta``; the nested ones for ``meta["kineto"]``."""
    meta: dict[str, Any] = {}
    kmeta: dict[str, Any] = {}
    for key, val in top.items():
        if isinstance(val, (str, int, float, bool)) and key not in _RESERVED_META:
            meta[key] = val
        else:
            kmeta[key] = val
    di = top.get("distributedInfo")
    if isinstance(di, dict):
        for k in ("rank", "world_size", "backend"):
            if isinstance(di.get(k), (str, int, float)):
                meta[k] = di[k]
    return meta, kmeta


def _build(
    path: Path,
    col: _Columns,
    top: dict[str, Any],
    merge: bool,
    thread_ids: bool,
    with_events: bool = False,
) -> Tree | tuple[Tree, pd.DataFrame]:
    n = len(col.c_ts)
    ng = len(col.g_ts)
    if n + ng == 0:
        seen = ", ".join(sorted(map(str, col.skipped))[:5])
        raise ProfileError(
            path,
            "no event of torch.profiler's categories (cpu_op, kernel, ...): not a Kineto "
            f"trace{f' (categories: {seen})' if seen else ''}; a Chrome trace of another "
            "tool reads with format='chrome'",
            "traceEvents",
        )
    names: dict[Any, int] = col.names

    def code(s: str) -> int:
        c = names.get(s)
        if c is None:
            c = names[s] = len(names)
        return c

    neg = _check_numbers(path, col)
    nth = len(col.threads)
    first_ts = np.full(nth, np.inf)
    if n:
        np.minimum.at(
            first_ts,
            np.frombuffer(col.c_th, dtype=np.int32),
            np.frombuffer(col.c_ts, dtype=np.float64),
        )
    procs, thr = _thread_names(col, first_ts, thread_ids)
    th_rank = np.zeros(max(nth, 1), dtype=np.int64)
    th_rank[[t for t, *_ in thr]] = np.arange(nth)
    cpu = _nest_cpu(path, col, th_rank)
    # GPU events under the CPU event of their correlation (the first, in CPU order);
    # those without one: per device (the trace's pid, by its name)
    dev_code, dev_vals = pd.factorize(pd.Series(col.g_dev, dtype=object), use_na_sentinel=False)
    dev_names = [str(d) for d in dev_vals]
    dev_sorted = sorted(set(dev_names), key=_key)
    dev_rank = {d: k for k, d in enumerate(dev_sorted)}
    gt = gpu_trace(
        cpu.corr,
        np.frombuffer(col.g_corr, dtype=np.int64) if ng else np.empty(0, np.int64),
        device=col.g_dev,
        stream=col.g_stream,
        cpu_rank=-np.arange(n, dtype=np.int64),
        group=np.asarray([dev_rank[d] for d in dev_names], dtype=np.int64)[dev_code],
    )
    del cpu.corr, dev_code, dev_vals, dev_names
    gts = np.frombuffer(col.g_ts, dtype=np.float64) if ng else np.empty(0)
    gdur = np.frombuffer(col.g_dur, dtype=np.float64) if ng else np.empty(0)
    gname = np.frombuffer(col.g_name, dtype=np.int32) if ng else np.empty(0, np.int32)
    gcls = np.frombuffer(col.g_cls, dtype=np.int8) if ng else np.empty(0, np.int8)
    unattributed = int(np.count_nonzero(gt.unattributed))

    # ---- synthetic roots: processes > threads; devices > (unattributed GPU)
    s_parent: list[int] = []
    s_name: list[int] = []
    s_kind: list[int] = []
    s_label: list[Any] = []
    s_id: list[Any] = []

    def synthetic(parent: int, name: str, kind: str, label: Any, ident: Any = None) -> int:
        s_parent.append(parent)
        s_name.append(code(name))
        s_kind.append(_K[kind])
        s_label.append(label)
        s_id.append(None if ident is None else str(ident))
        return len(s_parent) - 1

    proc_node = {pid: synthetic(-1, nm, "process", label, pid) for pid, nm, label in procs}
    thread_node = np.zeros(max(nth, 1), dtype=np.int64)
    keys = list(col.threads)
    for t, pid, nm, label in thr:
        thread_node[t] = synthetic(proc_node[pid], nm, "thread", label, keys[t][1])
    under: list[int] = []  # per group of unattributed GPU events: its node
    for k, d in enumerate(dev_sorted[int(i)] for i in gt.groups):
        label = col.process_labels.get(int(d) if d.lstrip("-").isdigit() else d)
        nm = f"device {d}" if thread_ids else ("device" if len(gt.groups) == 1 else f"device {k}")
        dev = synthetic(-1, nm, "device", label, d)
        under.append(synthetic(dev, UNATTRIBUTED, "region", None))
    S = len(s_parent)

    # ---- all nodes: synthetic, CPU (sorted), GPU
    total = S + n + ng
    parent = np.empty(total, dtype=np.int64)
    parent[:S] = s_parent
    parent[S : S + n] = np.where(cpu.sparent >= 0, cpu.sparent + S, thread_node[cpu.th])
    del cpu.sparent, cpu.th
    parent[S + n :] = gt.parent(S, np.asarray(under, dtype=np.int64))
    kind = np.empty(total, dtype=np.int64)
    kind[:S] = s_kind
    kind[S : S + n] = cpu.kind
    kind[S + n :] = np.asarray([0, _GPU_KIND[-1], _GPU_KIND[-2], _GPU_KIND[-3]])[-gcls]
    name_code = np.empty(total, dtype=np.int64)
    name_code[:S] = s_name
    name_code[S : S + n] = cpu.name
    name_code[S + n :] = gname
    del cpu.name, cpu.kind
    tkey = np.empty(total, dtype=np.float64)
    tkey[:S] = -np.inf
    tkey[S : S + n] = cpu.ts
    tkey[S + n :] = gts
    cpu_ts = cpu.ts
    del cpu.ts
    meta, kmeta = _meta(top)
    world = _int(meta.get("world_size")) or None
    heads = np.fromiter(cpu.comm.keys(), dtype=np.int64, count=len(cpu.comm)) + S
    coll = list(cpu.comm.values())
    assumed = _resolve_groups(coll, top, world)
    comm_vals = {
        "comm_time": np.asarray([c["time"] for c in coll], dtype=np.float64),
        "comm_bytes": np.asarray([c["bytes"] for c in coll], dtype=np.float64),
        "bus_bytes": np.asarray(
            [c["bytes"] * bus_factor(c["collective"], c["group_size"] or 0) for c in coll],
            dtype=np.float64,
        ),
    }
    sparse: dict[str, dict[int, Any]] = {
        "label": dict(enumerate(s_label)),
        "id": dict(enumerate(s_id)),
    }
    if coll:
        for k in COMM_COLUMNS:
            sparse[k] = {int(h): c[k] for h, c in zip(heads, coll)}
    name_arr = np.asarray(list(names), dtype=object)

    kmeta.update(
        cpu_events=n,
        gpu_events=ng,
        threads=nth,
        clamped=0,  # no event is shortened any more; kept for readers of older meta
        reattached=cpu.reattached,
        frames_trimmed=cpu.frames_trimmed,
        overlapped=cpu.overlapped,
        unattributed_gpu=unattributed,
        skipped={str(k): v for k, v in col.skipped.items()},
        python_links_ignored=cpu.ignored,
        negative_dur=neg,
        collectives=len(coll),
        # collectives without a recorded group size: bus bytes assume the whole world
        group_size_assumed=assumed,
        bus_bytes_unknown_group=sum(1 for c in coll if c["bytes"] and not c["group_size"]),
    )
    meta["kineto"] = kmeta
    meta["units"] = dict(UNITS)
    meta["aggregation"] = dict(AGGREGATION)

    if not merge:
        metrics = {k: np.zeros(total) for k in METRICS}
        metrics["time"][S : S + n] = cpu.time
        metrics["gpu_time"][S + n :] = gdur
        metrics["calls"][S:] = 1
        for k, v in comm_vals.items():
            metrics[k][heads] = v
        return Tree.from_parents(
            parent,
            name_arr[name_code],
            metrics,
            kind=np.asarray(KIND_NAMES, dtype=object)[kind],
            columns={k: _dense(v, total) for k, v in sparse.items()},
            meta=meta,
            sibling_key=tkey,
        )

    # ---- merge by call path (names only), level by level; siblings by first appearance
    uid, tb = merge_by_path(parent, name_code, tkey)
    del parent, tkey
    m = tb.size
    mmetrics = {
        "time": np.bincount(uid[S : S + n], weights=cpu.time, minlength=m),
        "gpu_time": np.bincount(uid[S + n :], weights=gdur, minlength=m),
        "calls": np.bincount(uid[S:], minlength=m).astype(np.float64),
    }
    for k, v in comm_vals.items():
        mmetrics[k] = np.bincount(uid[heads], weights=v, minlength=m)
    # attributes: the first event's (in node order), saying what differed
    dropped: dict[str, tuple[set[int], int, Any, Any]] = {}  # column -> nodes, an example
    first_node = np.full(m, total, dtype=np.int64)
    np.minimum.at(first_node, uid, np.arange(total))
    mkind = kind[first_node]
    other = np.flatnonzero(kind != mkind[uid])
    if other.size:
        u = int(uid[other[0]])
        kept, lost = KIND_NAMES[mkind[u]], KIND_NAMES[kind[other[0]]]
        dropped["kind"] = (set(uid[other].tolist()), u, kept, lost)
    cols = {}
    for k, v in sparse.items():
        first: dict[int, Any] = {}
        for node, val in sorted(v.items()):
            u = int(uid[node])
            if u not in first:
                first[u] = val
            elif val != first[u]:
                dropped.setdefault(k, (set(), u, first[u], val))[0].add(u)
        cols[k] = _dense(first, m)
    mparent, mcode = tb.parent, tb.code
    uid_events = uid
    del tb, uid, kind, name_code
    if dropped:
        _warn_dropped(dropped, name_arr[mcode])
    tree, new_id = Tree.from_parents_with_ids(
        mparent,
        name_arr[mcode],
        {k: mmetrics[k] for k in METRICS},
        kind=np.asarray(KIND_NAMES, dtype=object)[mkind],
        columns=cols,
        meta=meta,
    )
    if not with_events:
        return tree
    cpu_part = (cpu_ts, cpu.dur, cpu.tparent)
    calls = {
        "group": np.asarray([c["process_group"] for c in coll], dtype=object),
        "seq": np.asarray([np.nan if c["seq"] is None else c["seq"] for c in coll], dtype=float),
    }
    ev = _events(new_id[uid_events][S:], cpu_part, gt, gts, gdur, heads - S, comm_vals)
    for k, v in calls.items():  # what identifies a call across ranks, where recorded
        if pd.notna(v).any():
            col_ = np.full(len(ev), None if k == "group" else np.nan, dtype=v.dtype)
            col_[heads - S] = v
            ev[k] = col_
    return tree, ev


def _events(
    node: np.ndarray,
    cpu: tuple[np.ndarray, np.ndarray, np.ndarray],
    gt: GpuTrace,
    gts: np.ndarray,
    gdur: np.ndarray,
    heads: np.ndarray,
    comm_vals: dict[str, np.ndarray],
) -> pd.DataFrame:
    """The trace's intervals in the tree's ids (us -> whole ns): CPU events nested
    as the nester nested them (``parent_event``: the same exclusive time as the
    tree's), GPU kernels, copies and sets beside them (untimed, with their
    ``gpu_time``, ``device``, ``stream`` and ``launch_event``: the model's
    :func:`~cctviz.model.gputrace.gpu_trace`), collectives with their bytes and time."""
    cpu_ts, cpu_dur, tparent = cpu
    n, ng = cpu_ts.shape[0], gts.shape[0]
    start = np.r_[cpu_ts, gts]
    dur = np.r_[cpu_dur, gdur]
    begin = _whole_ns(start)  # and each end from its given duration (ts + dur - ts loses digits)
    g = gt.event_columns(tparent, gdur * 1e3)
    cols: dict[str, Any] = {
        "node": node,
        "start": begin,
        "end": begin + np.rint(dur * 1e3).astype(np.int64),
        "timed": g["timed"],
        "event": np.arange(n + ng, dtype=np.int64),
        "parent_event": g["parent_event"],
        "gpu_time": g["gpu_time"],
    }
    for k, v in comm_vals.items():
        c = np.full(n + ng, np.nan)
        c[heads] = v * (1e3 if k == "comm_time" else 1.0)
        cols[k] = c
    if ng:  # where each GPU event ran and which CPU event launched it
        cols.update((k, g[k]) for k in ("device", "stream", "launch_event"))
    return pd.DataFrame(cols)


def _whole_ns(us: np.ndarray) -> np.ndarray:
    """Trace microseconds as whole int64 ns. Epoch microseconds (~1.7e15) times 1e3
    pass float64's 2**53: whole ns from a base (the first whole us), exactly."""
    base = float(np.floor(us.min())) if us.size else 0.0
    return int(base) * 1000 + np.rint((us - base) * 1e3).astype(np.int64)


def _memory_counters(
    col: _Columns, offset: int
) -> tuple[pd.DataFrame | None, dict[str, str], list[str]]:
    """The ``[memory]`` events as counter tracks per device (``memory allocated
    (cuda:0)``, ``memory reserved (cuda:0)``; ``cpu`` for the host), in bytes, at
    each event's time (whole ns, plus ``offset``: the trace's base time).

    The allocated track is the allocator's ``Total Allocated`` after each event
    where every event of the device records it; older traces (``Bytes`` only) get
    the running sum of ``Bytes`` in time order, which counts from 0 at the start of
    profiling (memory allocated before it is not in the track). Reserved memory is
    kept where recorded (left out for the host, whose allocator reserves nothing:
    all 0). Also returns the tracks summed from ``Bytes``."""
    if not len(col.m_ts):
        return None, {}, []
    ts = np.frombuffer(col.m_ts, dtype=np.float64)
    order = np.argsort(ts, kind="stable")  # same-time events keep the file's order
    ns = _whole_ns(ts[order]) + offset
    dev = np.frombuffer(col.m_dev, dtype=np.int64)[order]
    nbytes = np.frombuffer(col.m_bytes, dtype=np.float64)[order]
    alloc = np.frombuffer(col.m_alloc, dtype=np.float64)[order]
    res = np.frombuffer(col.m_res, dtype=np.float64)[order]
    parts: list[pd.DataFrame] = []
    summed: list[str] = []
    for code in np.unique(dev).tolist():  # a loop per device, not per event
        sel = dev == code
        name = _device_name(code)
        a = alloc[sel]
        value = a if np.isfinite(a).all() else np.cumsum(nbytes[sel])
        if value is not a:
            summed.append(f"memory allocated ({name})")
        parts.append(
            pd.DataFrame({"track": f"memory allocated ({name})", "ts": ns[sel], "value": value})
        )
        r = res[sel]
        if np.isfinite(r).all() and (not name.startswith("cpu") or (r != 0).any()):
            parts.append(
                pd.DataFrame({"track": f"memory reserved ({name})", "ts": ns[sel], "value": r})
            )
    counters = pd.concat(parts, ignore_index=True)
    counters.insert(0, "profile", 0)
    return counters, dict.fromkeys(counters["track"].unique().tolist(), "B"), summed


@register_timeline("kineto")
def read_kineto_timeline(path: Path, *, python_functions: bool = True) -> Timeline:
    """A torch.profiler (Kineto) trace as a :class:`~cctviz.model.timeline.Timeline`:
    its CPU events on their calling contexts (the tree :func:`read_kineto` gives),
    GPU kernels, copies and sets beside them, collectives with their bytes. One
    profile (the trace's rank); times in ns on the epoch (the trace's microseconds,
    from its ``baseTimeNanoseconds`` where it has one, rounded to whole ns), so that
    the ranks of a job line up (``read_timeline([rank0, rank1])``) and
    ``.ensemble()`` gives :func:`read_kineto`'s metrics in ns. ``[memory]`` events
    become counter tracks (``timeline.counters``; bytes): ``memory allocated
    (<device>)`` (the allocator's ``Total Allocated``, or in traces that record
    only ``Bytes`` their running sum from 0 at the start of profiling, named in
    ``meta["memory_from_bytes"]``) and ``memory reserved (<device>)``. A
    collective's process group and sequence number, where ``record_param_comms``
    records them (``Process Group Name``, ``Seq``), are the events' ``group`` and
    ``seq`` columns, by which :func:`~cctviz.ops.collectives.instances` matches
    calls across ranks. GPU events keep their ``device`` and ``stream`` (the
    trace's pid and tid) and ``launch_event`` (the event id of the runtime call
    of the same correlation, -1 for none), so that a written trace
    (:func:`cctviz.writers.chrome_trace.write_chrome_trace`) keeps them.

    Example:
        >>> import cctviz
        >>> tl = cctviz.read_timeline("../shared/data/kineto/hta_trace_filter_sampled_rank-0.json.gz")
        >>> tl.n_profiles, int(tl.profiles["rank"][0])
        (1, 0)
    """
    col, top = _parse(Path(path), python_functions)
    tree, events = _build(Path(path), col, top, True, False, with_events=True)
    events["profile"] = 0
    base = _int(top.get("baseTimeNanoseconds")) or 0
    if base:  # newer traces count microseconds from a base: on the epoch, as the others
        events["start"] += base
        events["end"] += base
    counters, counter_units, summed = _memory_counters(col, base)
    rank = tree.meta.get("rank")
    profiles = pd.DataFrame({"rank": [rank if rank is not None else 0], "file": [str(path)]})
    units = {"gpu_time": "ns", "comm_time": "ns", "comm_bytes": "B", "bus_bytes": "B"}
    present = {m: u for m, u in units.items() if np.isfinite(events[m]).any()}
    meta = {k: v for k, v in tree.meta.items() if k not in ("units", "aggregation")}
    meta.update(event_metrics=present, path=str(path), format="kineto")
    if summed:  # Bytes only: allocated since profiling began
        meta["memory_from_bytes"] = summed
    return Timeline(tree, events, profiles, counters=counters, units=counter_units, meta=meta)


def _warn_dropped(dropped: dict[str, tuple[set[int], int, Any, Any]], names: np.ndarray) -> None:
    """One warning for the attribute values that merging by call path dropped."""
    parts = []
    for col, (nodes, u, kept, lost) in dropped.items():
        parts.append(
            f"{col!r} on {len(nodes)} node(s), e.g. {names[u]!r} kept {kept!r}, dropped {lost!r}"
        )
    warnings.warn(
        "kineto: events merged by call path had different attributes; each node keeps "
        f"its first event's: {'; '.join(parts)} (merge=False keeps every event's)",
        stacklevel=4,
    )


def _dense(values: dict[int, Any], size: int) -> np.ndarray:
    out = np.full(size, None, dtype=object)
    if values:
        out[np.fromiter(values.keys(), dtype=np.int64, count=len(values))] = list(values.values())
    return out


@register("kineto", _sniff, "torch.profiler / Kineto Chrome trace JSON (traceEvents)")
def read_kineto(
    path: Path,
    *,
    python_functions: bool = True,
    merge: bool = True,
    thread_ids: bool = False,
) -> Tree:
    """Read a torch.profiler (Kineto) trace, plain or gzipped, into a calling-context tree.

    Args:
        path: the ``.json`` / ``.json.gz`` trace.
        python_functions: keep ``python_function`` frames (``with_stack``
            traces); False drops them while parsing.
        merge: merge events with the same call path into one node (a CCT);
            False keeps one node per event (a call tree).
        thread_ids: name process and thread nodes by pid/tid. The default
            gives id-free names (``process``, ``main thread``, ``thread 1``...),
            so that the ranks of a job unify by call path in an Ensemble; the
            pid/tid is then in the node column ``id``.

    Example:
        >>> import cctviz
        >>> t = cctviz.read("../shared/data/kineto/hta_trace_filter_sampled_rank-0.json.gz")
        >>> t.meta["rank"], t.meta["world_size"], t.meta["backend"]
        (0, 128, 'nccl')
        >>> int(t.metrics["calls"][t.nodes["kind"] == "kernel"].sum())
        1154
    """
    col, top = _parse(Path(path), python_functions)
    return _build(Path(path), col, top, merge, thread_ids)
