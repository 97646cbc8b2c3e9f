"""OTF2 traces of a profiled job: ``cctviz run --trace DIR`` and ``cctviz.profile(trace=DIR)``.

How a trace is made
-------------------
1. While training runs, each rank's :class:`TracingRecorder` (a
   :class:`~cctviz.runtime.recorder.Recorder` that also logs its
   transitions) appends three integers per transition to a flat list,
   ``(time, depth, context)``: "cut the stack to ``depth``, then push the
   path down to ``context``" (``context = -1``: only cut; ``depth = -1``: a
   call seen from another thread, entered and left at once). Contexts are
   the recorder's own interned ids, so the path of a context is known from
   the tree and one event stands for any number of Enters and Leaves. Each
   collective adds one row to a second list (its communicator, root or peer,
   tag and bytes). Every ``BATCH`` events the lists are appended to the
   rank's raw files ``DIR/.cctviz-trace/<host>-<pid>.events`` and
   ``.comms`` (little-endian int64) and emptied: the hot path is a list
   extend, no OTF2 call.
2. When the profiler stops, the rank writes ``<host>-<pid>.json`` (its
   contexts: parent, name, kind; its communicators; rank, world size, host,
   clocks) beside them, atomically: the rank is complete.
3. The rank that completes the set (as many ``.json`` files as the world
   size) takes ``merge.lock`` and writes the archive with the ``otf2``
   package (:func:`write_archive`): one writer, one set of global
   definitions unified over the ranks, one location per rank. ``cctviz run``
   also merges after the job if no rank did (a rank died: what there is is
   written). OTF2's own parallel writing (per-location event files plus
   mapping tables merged by the measurement system, as Score-P does) would
   need collective callbacks across the ranks; one writer after the job is
   simpler and gives the same archive. The raw files are removed after the
   archive is written.

The cap (``timeline_limit``)
----------------------------
A rank's trace keeps its first ``limit`` transitions (default
:data:`DEFAULT_LIMIT`, one million: 24 MB of raw events per rank, about 13 MB
of archive; ``None``: no cap). The first transition past it becomes one
row that leaves every open context at its time, the *cut*; the ones after it
are counted, not kept. So the trace stays well formed (every Enter has its
Leave) and is the prefix of the uncapped trace up to the cut. A cap, not a
ring that keeps the last ``limit``: the raw files are append-only batches
(what is on disk after a crash is a valid prefix) and a row means something
only after the rows before it (a ring's first row would need the stack at
that moment, and the batches rewritten); the profile has the whole run
anyway. The hot path does not check the cap: :meth:`TracingRecorder.flush`,
once per batch, cuts; past the cut the buffer is still filled (the same
list extend) and emptied unwritten, so memory stays bounded by a batch.

What the metadata says: the rank's profile meta (hence ``cctviz.read(run)
.profiles``) and the archive's location properties ``cctviz::timeline_*``
(hence ``cctviz.read_timeline(...).profiles``) carry ``timeline_limit``,
``timeline_events`` (rows kept, the closing one included),
``timeline_dropped`` (transitions past the cut) and ``timeline_cut_ns``
(where the trace stops, on the trace's clock; absent when it has the whole
rank). A timeline read from a capped archive warns and gives the earliest cut
in ``meta["cut_ns"]``: every rank is complete before it.

What stays equal: uncapped, ``read_timeline(run).ensemble()`` equals
``read(run)`` (up to the known gaps below). Capped, a rank's timeline is the
profile of the time from its start to its cut: it equals what the uncapped
trace's ``window(start, cut)`` would give (exclusive time exactly; calls and
bytes of what starts before the cut), so per context its time and calls are
at most the profile's and its times sum to ``cut - start``. The profile
(``read(run)``) is complete whatever the cap.

What the archive holds
----------------------
``DIR/traces.otf2`` (anchor), ``DIR/traces.def``, ``DIR/traces/<rank>.evt``:

- clock: the profile's own clock (``time.perf_counter_ns``, the recorder's
  ``time`` metric), 1e9 ticks per second, global offset the first event;
  timestamps are the recorder's transition times to the nanosecond, so the
  exclusive times of a tree rebuilt from the trace equal the profile's. On
  several hosts (monotonic clocks not comparable), each host's timestamps
  are moved by its wall-minus-monotonic offset, durations unchanged.
- system tree: one node per host; a location group ``rank N`` (a process)
  per rank, each with one location ``rank N`` (a CPU thread); location
  ``N`` is rank ``N``.
- regions: one per distinct (name, kind) of the profile's contexts. The
  region's *name* is the profile node's name (``step``, ``forward``,
  ``GPT``, ``blocks.0.attn``, ``all_reduce``, ``all_reduce (2 ranks)``...),
  its *description* the node's ``kind`` (root, step, phase, module, comm,
  op, region, function), its role FUNCTION, CODE, LOOP, ARTIFICIAL or the
  collective's role. The profile's call path of a node is the nesting of
  Enter/Leave: the root region encloses everything, a step or
  ``(outside steps)`` region is at depth 1, a phase at depth 2.
  ``ProgramBegin``/``ProgramEnd`` bracket each location.
- collectives: inside their region, ``MpiCollectiveBegin`` right after the
  Enter and ``MpiCollectiveEnd`` right before the Leave with the collective
  op, the communicator, the root (rank in the communicator; NONE for
  unrooted ones) and sizes sent/received per rank in MPI's sense (see
  :func:`sent_received`), plus the attribute ``cctviz::comm_bytes`` (UINT64):
  the profile's ``comm_bytes`` of that call, by the nccl-tests rules.
  ``comm_bytes = max(sent, received)`` except for gather/scatter on ranks
  other than the root; the attribute is exact everywhere. Point-to-point
  calls are ``MpiSend``/``MpiRecv`` (peer rank, tag, length) before the
  Leave. Asynchronous collectives are recorded at their issue; ``wait``
  regions carry no record.
- location properties: ``cctviz::timeline_*`` (INT64), the cap's facts above.
- communicators: one per process group (``WORLD (gloo)``, ``group 1
  (gloo)``), a COMM_GROUP of its global ranks within the COMM_LOCATIONS
  group of all ranks. OTF2 has no paradigm for torch.distributed: the
  groups use OTF2's MPI paradigm (the collective records are defined over
  MPI-style communicators; Vampir and Scalasca look for those), named
  ``torch.distributed`` by a PARADIGM definition.

Round trip: per rank, the tree built from Enter/Leave (a context per
region path) has the profile's nodes, its ``calls`` are the Enter counts,
its exclusive times the time between transitions. Not in the trace:
``comm_time`` (the async span to ``wait``), GPU times, memory peaks.
Known gaps: a second optimizer right after the first re-opens the step;
when nothing happened in between, the trace drops the step's end (the few
microseconds between the two optimizer hooks count to the step's last phase, where the
profile gives them to ``(outside steps)``); otherwise Enter counts of the
step and ``(outside steps)`` exceed the profile's calls by one per
re-opening. In detailed mode, a module that backward enters below an enclosing
module whose own output was not reached first (no ``grad_fn``) puts that
enclosing module on the stack without a call in the profile; the trace has
an Enter for it. A collective reported from a thread other than the training
thread while that thread is not in backward is a zero-length Enter/Leave
if it nests, else left out of the trace.

>>> r = TracingRecorder("demo", trace_dir=None, clock=iter(range(0, 10**6, 10)).__next__)
>>> d = r.enter_phase("forward"); m = r.push("GPT", "module"); r.pop(m); r.end_step(); r.finish()
>>> [(r.name[c], op) for op, c in replay(r.parent, r.event_array()) if op in "EL"][:5]
[('demo', 'E'), ('(outside steps)', 'E'), ('(outside steps)', 'L'), ('step', 'E'), ('forward', 'E')]
"""

from __future__ import annotations

import json
import logging
import os
import socket
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..model.collectives import KINDS, OTF2_OP_OF, ROOTED, kind_of_leaf
from ..model.formats import K_COMM, OTF2_NAMESPACE, TIMELINE_FACTS
from .recorder import Recorder
from .sampler import CUMULATIVE_TRACKS

log = logging.getLogger("cctviz.runtime")

#: events per batch written to the raw file
BATCH = 1 << 16
#: transitions a rank logs by default before its trace stops (``timeline_limit``)
DEFAULT_LIMIT = 1_000_000
_FLUSH_AT = 3 * BATCH
RAW_DIR = ".cctviz-trace"
ARCHIVE = "traces"
LOCK = "merge.lock"
#: the attribute with the profile's bytes of a collective call
BYTES_ATTRIBUTE = f"{OTF2_NAMESPACE}comm_bytes"
_KIND_CODE = {k: i for i, k in enumerate(KINDS)}
_COMM_COLS = 7  # event index, kind, comm, root/peer, tag, bytes, group size
#: what a rank's description keeps of its facts (a workflow's process: its
#: component, its rank there and the number of processes of the workflow; the
#: sampler's series, written as metric records)
_DESC_KEYS = (
    "rank",
    "world_size",
    "hostname",
    "backend",
    "component",
    "component_rank",
    "workflow_size",
    "samples",
)
#: the sampler's tracks written as OTF2 metric members, with what each is
#: (cumulative ones, :data:`~cctviz.runtime.sampler.CUMULATIVE_TRACKS`, are
#: ``ACCUMULATED_START``; gauges ``ABSOLUTE_POINT``)
SAMPLE_MEMBERS = {
    "cpu_time": "CPU time of the process",
    "io_read_bytes": "bytes read through files, pipes and sockets",
    "io_write_bytes": "bytes written through files, pipes and sockets",
    "ctx_switches": "voluntary context switches",
    "rss": "resident set size",
    "gpu_util": "GPU utilisation (NVML)",
    "gpu_mem": "GPU memory used (NVML)",
    "gpu_power": "GPU power draw (NVML)",
    "pcie_tx_bytes": "PCIe bytes sent by the GPU (NVML)",
    "pcie_rx_bytes": "PCIe bytes received by the GPU (NVML)",
}


def raw_file(stem: Path, ext: str) -> Path:
    """A rank's raw file: ``stem`` (``<host>-<pid>``) and ``ext``, whatever dots
    the host name holds (``Path.with_suffix`` would cut "node1.cluster" short).

    >>> raw_file(Path("t/node1.cluster-12"), ".events").name
    'node1.cluster-12.events'
    """
    return stem.parent / f"{stem.name}{ext}"


def require_otf2() -> None:
    """Raise ImportError naming the extra when the ``otf2`` package is missing."""
    try:
        import otf2  # noqa: F401
    except ImportError as e:
        raise ImportError("OTF2 traces need the otf2 package: pip install 'cctviz[scorep]'") from e


def check_limit(limit: int | None) -> int | None:
    """The cap on a rank's transitions: a positive integer, or None (no cap).

    >>> check_limit(10), check_limit(None)
    (10, None)
    """
    if limit is None:
        return None
    if isinstance(limit, bool) or not isinstance(limit, (int, np.integer)) or limit < 1:
        raise ValueError(
            f"timeline_limit must be a positive number of transitions or None, not {limit!r}"
        )
    return int(limit)


class TracingRecorder(Recorder):
    """A :class:`Recorder` that also logs every transition for the OTF2 trace.

    ``trace_dir`` is the archive's folder (None: keep the events in memory,
    for tests). See the module's docstring for the event encoding.
    """

    tracing = True

    def __init__(
        self,
        root: str = "main",
        *,
        trace_dir: str | os.PathLike | None,
        limit: int | None = DEFAULT_LIMIT,
        **kw: Any,
    ):
        self.limit = check_limit(limit)
        self._ev: list[int] = []
        self._cm: list[int] = []
        self._seen = 0  # transitions flushed so far, kept or not
        self._kept = 0  # rows in the raw file (the cut's closing row included)
        #: the time of the first transition past the cap (None: not reached), and
        #: the transitions not in the trace; both as of the last :meth:`flush`
        self.cut_ns: int | None = None
        self.dropped = 0
        self._end_mark = -1
        self._suppress = False
        self.comms: list[dict[str, Any]] = []
        self.trace_dir = Path(trace_dir) if trace_dir is not None else None
        self._raw: Path | None = None
        self._mem: list[np.ndarray] = []
        self._mem_cm: list[np.ndarray] = []
        if self.trace_dir is not None:
            raw = self.trace_dir / RAW_DIR
            raw.mkdir(parents=True, exist_ok=True)
            self._raw = raw / f"{socket.gethostname()}-{os.getpid()}"
            for ext in (".events", ".comms", ".json"):
                raw_file(self._raw, ext).unlink(missing_ok=True)
        #: set by a live run's writer thread at each record: the training thread
        #: writes its buffer at the next step's start (a step's end may still be
        #: taken back by a second optimizer before then), so a watch reads the
        #: trace about a record behind (:mod:`cctviz.readers._rawtrace`)
        self.flush_wanted = False
        self.wall0_ns = time.time_ns()
        super().__init__(root, **kw)
        self.mono0_ns = self.started_ns
        self._ev += (self.started_ns, 0, self.outside)

    @property
    def raw_stem(self) -> Path | None:
        """Where this rank's raw files are (``DIR/.cctviz-trace/<host>-<pid>``; None in memory)."""
        return self._raw

    # ------------------------------------------------------------ logging
    def _count(self) -> int:
        return self._seen + len(self._ev) // 3

    def flush(self) -> None:
        """Append the buffered events to the raw files (or the memory list).

        Past the cap nothing more is written: the first transition beyond it
        becomes a row that leaves every open context at its time (the cut),
        the rest are counted in :attr:`dropped`. The hot path never checks the
        cap; only this, once per batch, does.
        """
        ev, cm = self._ev, self._cm
        self._ev, self._cm = [], []
        n = len(ev) // 3
        first = self._seen  # the index of the first buffered transition
        self._seen += n
        if self.cut_ns is not None:  # past the cap: counted, not kept
            self.dropped += n
            return
        room = n if self.limit is None else self.limit - first
        if n > room:
            ev, cm = self._cut(ev, cm, room)
        # little-endian int64 straight from the list: numpy 2 converts Python ints
        # about a third faster than array("q") (the conversion is most of what
        # logging costs: benchmarks/runtime_overhead.py, the hot path)
        a = np.array(ev, dtype="<i8")
        c = np.array(cm, dtype="<i8")
        self._kept += len(a) // 3
        if self._raw is None:
            self._mem.append(a)
            self._mem_cm.append(c)
            return
        with open(raw_file(self._raw, ".events"), "ab") as f:
            a.tofile(f)
        with open(raw_file(self._raw, ".comms"), "ab") as f:
            c.tofile(f)

    def _cut(self, ev: list[int], cm: list[int], room: int) -> tuple[list[int], list[int]]:
        """The buffer up to the cap, then one row that closes the stack at the
        time of the first transition past it; the collectives entered before it."""
        t = ev[3 * room]
        self.cut_ns = t
        self.dropped = len(ev) // 3 - room
        rows = np.asarray(cm, dtype=np.int64).reshape(-1, _COMM_COLS)
        rows = rows[rows[:, 0] < self.limit]  # a call entered before the cut
        return [*ev[: 3 * room], t, 0, -1], rows.ravel().tolist()

    def timeline_facts(self) -> dict[str, int | None]:
        """What the trace holds of this rank: the cap, the rows kept, the
        transitions dropped and where it stops (the recorder's clock, ns)."""
        self.flush()
        facts = (self.limit, self._kept, self.dropped, self.cut_ns)
        return dict(zip(TIMELINE_FACTS, facts, strict=True))

    def event_array(self) -> np.ndarray:
        """All events so far as an ``(n, 3)`` array (in-memory recorders only)."""
        self.flush()
        return np.concatenate(self._mem).astype(np.int64).reshape(-1, 3)

    def comm_array(self) -> np.ndarray:
        self.flush()
        return np.concatenate(self._mem_cm).astype(np.int64).reshape(-1, _COMM_COLS)

    # -------------------------------------------------------- transitions
    def push(self, name: str, kind: str) -> int:
        # Recorder.push and the log in one call: the hot path
        stack = self.stack
        depth = len(stack)
        now = self.tick()
        c = self.child(stack[-1], name, kind)
        self.calls[c] += 1
        stack.append(c)
        ev = self._ev
        ev += (now, depth, c)
        if len(ev) >= _FLUSH_AT:
            self.flush()
        return depth

    def pop(self, depth: int) -> None:
        stack = self.stack
        if depth < len(stack) and depth >= 2:  # as Recorder.pop
            now = self.tick()
            del stack[depth:]
            self._ev += (now, depth, -1)

    def start_step(self) -> None:
        was = self.in_step
        Recorder.start_step(self)
        if not was and not self._suppress:
            self._ev += (self._last, 1, self.stack[1])
            if self.flush_wanted:  # a live run's writer asked: the trace so far to disk
                self.flush_wanted = False
                self.flush()

    def end_step(self, *, by_optimizer: bool = False) -> None:
        was = self.in_step
        Recorder.end_step(self, by_optimizer=by_optimizer)
        if was:
            self._ev += (self._last, 1, self.outside)
            self._end_mark = self._count()

    def _switch_phase(self, name: str, sticky: bool, kind: str = "phase") -> None:
        Recorder._switch_phase(self, name, sticky, kind)
        self._ev += (self._last, 2, self.stack[2])

    def _reopen_step(self) -> None:
        # nothing since the step's end (still buffered): the step goes on in
        # the trace as in the profile's calls
        if self._end_mark == self._count() and len(self._ev) >= 3:
            del self._ev[-3:]
            self._suppress = True
        try:
            Recorder._reopen_step(self)
        finally:
            self._suppress = False

    def enter_path(self, k: int, names: tuple[str, ...], kind: str = "module") -> None:
        old = self.stack[k + 1 :]
        Recorder.enter_path(self, k, names, kind)
        new = self.stack[k + 1 :]
        if not new:
            keep = k  # the phase itself counted again: left and entered
        else:
            keep = 0
            while keep < len(new) - 1 and keep < len(old) and old[keep] == new[keep]:
                keep += 1
            keep += k + 1
        self._ev += (self._last, keep, self.stack[-1])

    def leaf_here(self, name: str, kind: str) -> int:
        c = Recorder.leaf_here(self, name, kind)
        self._ev += (self._last, -1, c)  # at the last transition: never out of order
        return c

    def finish(self) -> None:
        Recorder.finish(self)
        self._ev += (self._last, 0, -1)

    # -------------------------------------------------------- collectives
    def comm_group(self, name: str, key: str, members: Sequence[int]) -> int:
        """Register a communicator (a process group); returns its index here."""
        self.comms.append({"name": name, "key": key, "members": [int(m) for m in members]})
        return len(self.comms) - 1

    def comm_record(
        self, ctx: int, kind: str, nbytes: int, n: int, comm: int, where: int, tag: int = 0
    ) -> None:
        """The collective just entered as ``ctx``: its communicator, root or peer, tag, bytes."""
        self._cm += (self._count() - 1, _KIND_CODE.get(kind, -1), comm, where, tag, nbytes, n)

    # ------------------------------------------------------------ closing
    def close_trace(self, info: dict[str, Any]) -> Path | None:
        """Write the rest of the events and this rank's description (call after :meth:`finish`)."""
        self.flush()
        if self._raw is None:
            return None
        desc = {
            **{k: info[k] for k in _DESC_KEYS if k in info},
            "root": self.name[0],
            "parent": self.parent,
            "name": self.name,
            "kind": self.kind,
            "comms": self.comms,
            "mono0_ns": self.mono0_ns,
            "wall0_ns": self.wall0_ns,
            "events": self._kept,
            **self.timeline_facts(),
            "program": sys.argv[0] if sys.argv else "",
            "arguments": sys.argv[1:],
        }
        p = raw_file(self._raw, ".json")
        tmp = p.with_name(f".{p.name}.tmp")
        tmp.write_text(json.dumps(desc))
        os.replace(tmp, p)
        return p


# --------------------------------------------------------------- replay
def _paths(parent: Sequence[int]) -> list[tuple[int, ...]]:
    out: list[tuple[int, ...]] = []
    for c, p in enumerate(parent):
        out.append((c,) if p < 0 else out[p] + (c,))  # parents come first
    return out


def replay(parent: Sequence[int], events: np.ndarray) -> Iterator[tuple[str, int]]:
    """Enter/Leave of the logged events: ``(op, context)`` with op ``"E"``/``"L"``,
    or ``("t", time)`` before the ones of each event and ``("i", index)`` for its index."""
    paths = _paths(parent)
    stack: list[int] = []
    for i, (t, d, c) in enumerate(events.tolist()):
        yield "t", t
        yield "i", i
        if d < 0:  # entered and left at once, if it nests
            if c >= 0 and stack and parent[c] == stack[-1]:
                yield "E", c
                yield "L", c
            continue
        target = paths[c] if c >= 0 else ()
        keep = min(d, len(stack))
        if c >= 0:
            keep = min(keep, len(target) - 1)
            while keep > 0 and stack[keep - 1] != target[keep - 1]:
                keep -= 1  # never happens when the log is consistent
        while len(stack) > keep:
            yield "L", stack.pop()
        if c >= 0:
            for x in target[keep:]:
                stack.append(x)
                yield "E", x
    while stack:
        yield "L", stack.pop()


def sent_received(kind: str, nbytes: int, n: int, is_root: bool) -> tuple[int, int]:
    """Bytes sent and received by one rank in MPI's sense, from the profile's ``comm_bytes``.

    >>> sent_received("all_gather", 8000, 4, False), sent_received("broadcast", 80, 4, True)
    ((2000, 8000), (80, 0))
    """
    n = max(int(n), 1)
    if kind in ("all_reduce", "all_to_all"):
        return nbytes, nbytes
    if kind == "all_gather":
        return nbytes // n, nbytes
    if kind == "reduce_scatter":
        return nbytes, nbytes // n
    if kind == "broadcast":
        return (nbytes, 0) if is_root else (0, nbytes)
    if kind == "reduce":
        return nbytes, nbytes if is_root else 0
    if kind == "gather":
        return nbytes // n, nbytes if is_root else 0
    if kind == "scatter":
        return (nbytes if is_root else 0), nbytes // n
    return 0, 0


# --------------------------------------------------------------- merging
def raw_descriptions(trace_dir: str | os.PathLike) -> list[tuple[Path, dict[str, Any]]]:
    """The complete ranks' raw files: ``(stem, description)``, by rank."""
    raw = Path(trace_dir) / RAW_DIR
    out = []
    for p in sorted(raw.glob("*.json")):
        try:
            out.append((p.parent / p.name[: -len(".json")], json.loads(p.read_text())))
        except (OSError, ValueError):
            continue
    out.sort(key=lambda x: int(x[1].get("rank", 0)))
    return out


def merge_when_complete(trace_dir: str | os.PathLike, *, force: bool = False) -> Path | None:
    """Write the archive if every rank is done (or ``force``) and no one else does; returns it."""
    trace_dir = Path(trace_dir)
    anchor = trace_dir / f"{ARCHIVE}.otf2"
    raw = trace_dir / RAW_DIR
    if anchor.exists() or not raw.is_dir():
        return None
    ranks = raw_descriptions(trace_dir)
    if not ranks:
        return None
    world = max(processes_expected(d) for _, d in ranks)
    if len(ranks) < world and not force:
        return None
    try:
        fd = os.open(raw / LOCK, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return None
    os.close(fd)
    if len(ranks) < world:
        log.warning("cctviz: %d of %d ranks in the trace %s", len(ranks), world, trace_dir)
    write_archive(trace_dir, ranks)
    for stem, _ in ranks:
        for ext in (".events", ".comms", ".json"):
            raw_file(stem, ext).unlink(missing_ok=True)
    (raw / LOCK).unlink(missing_ok=True)
    try:
        raw.rmdir()
    except OSError:
        pass
    return anchor


def processes_expected(desc: dict[str, Any]) -> int:
    """How many ranks the archive waits for: the workflow's processes for a
    workflow's process, else the job's world size.

    >>> processes_expected({"world_size": 2}), processes_expected({"world_size": 2, "workflow_size": 6})
    (2, 6)
    """
    return int(desc.get("workflow_size") or desc.get("world_size", 1))


def location_name(desc: dict[str, Any]) -> str:
    """The OTF2 location (and process) name of a rank: ``rank N``, or for a
    workflow's process ``<component> rank <its rank in the component>``.

    >>> location_name({"rank": 3}), location_name({"rank": 3, "component": "train", "component_rank": 1})
    ('rank 3', 'train rank 1')
    """
    if desc.get("component"):
        return f"{desc['component']} rank {int(desc.get('component_rank', 0))}"
    return f"rank {int(desc.get('rank', 0))}"


def rank_offset(desc: dict[str, Any]) -> int:
    """What to add to a rank of the process's own torch.distributed world to
    get its rank in the archive (a workflow numbers its processes across
    components; 0 for one job).

    >>> rank_offset({"rank": 5, "component": "train", "component_rank": 1})
    4
    """
    if desc.get("component"):
        return int(desc.get("rank", 0)) - int(desc.get("component_rank", 0))
    return 0


def cap_properties(desc: dict[str, Any], shift: int = 0) -> dict[str, int]:
    """The location properties that say how much of a rank the trace holds
    (``cctviz::timeline_*``; the cut on the archive's clock, moved by ``shift``).

    >>> cap_properties({"timeline_limit": 5, "timeline_events": 6,
    ...                 "timeline_dropped": 9, "timeline_cut_ns": 100}, 7)["cctviz::timeline_cut_ns"]
    107
    """
    out = {}
    for key in TIMELINE_FACTS:
        v = desc.get(key)
        if v is not None:
            out[f"{OTF2_NAMESPACE}{key}"] = int(v) + (shift if key == "timeline_cut_ns" else 0)
    return out


_ROLE = {
    "root": "ARTIFICIAL",
    "step": "LOOP",
    "phase": "CODE",
    "region": "CODE",
    "module": "FUNCTION",
    "function": "FUNCTION",
    "op": "FUNCTION",
    "comm": "FUNCTION",
}
_COMM_ROLE = {
    "all_reduce": "COLL_ALL2ALL",
    "all_gather": "COLL_ALL2ALL",
    "reduce_scatter": "COLL_ALL2ALL",
    "all_to_all": "COLL_ALL2ALL",
    "broadcast": "COLL_ONE2ALL",
    "scatter": "COLL_ONE2ALL",
    "reduce": "COLL_ALL2ONE",
    "gather": "COLL_ALL2ONE",
    "barrier": "BARRIER",
    "send": "POINT2POINT",
    "recv": "POINT2POINT",
}


class _SampleRecords:
    """A rank's sampler series as OTF2 ``Metric`` records on its location, in
    time order among its other events: one metric class per rank of the tracks
    it sampled (:data:`SAMPLE_MEMBERS`: cumulative ones ``ACCUMULATED_START``,
    gauges ``ABSOLUTE_POINT``, units from the series). A sample taken before
    the location's first event or after its last is put at that event."""

    def __init__(
        self,
        defs: Any,
        series: dict[str, Any] | None,
        shift: int,
        writer: Any,
        start: int,
        known: dict[tuple, Any],
    ) -> None:
        from otf2.enums import Base, MetricMode, MetricType, RecorderKind, Type

        self.writer, self.k = writer, 0
        series = series or {}
        ts = np.asarray(series.get("ts", []), dtype=np.int64) + shift
        tracks = {  # a track with a value per sample (one a reader failed on is left out)
            k: v
            for k, v in series.get("tracks", {}).items()
            if k in SAMPLE_MEMBERS and len(v) == ts.size
        }
        self.ts = np.maximum.accumulate(np.maximum(ts, start)) if ts.size else ts
        if not tracks or not self.ts.size:
            self.ts = self.ts[:0]
            return
        units = series.get("units", {})
        members, columns = [], []
        for name, values in tracks.items():
            v = np.asarray(values, dtype=np.float64)[: self.ts.size]
            whole = bool(np.all(v == np.round(v)) and np.all(v >= 0))
            mode = "ACCUMULATED_START" if name in CUMULATIVE_TRACKS else "ABSOLUTE_POINT"
            what = SAMPLE_MEMBERS[name]
            key = (name, whole, str(units.get(name, "")))
            if key not in known:  # one definition for the ranks that share it
                known[key] = defs.metric_member(
                    name,
                    what,
                    metric_type=MetricType.OTHER,
                    metric_mode=getattr(MetricMode, mode),
                    value_type=Type.UINT64 if whole else Type.DOUBLE,
                    base=Base.DECIMAL,
                    exponent=0,
                    unit=key[2],
                )
            members.append(known[key])
            columns.append(v.astype(np.uint64).tolist() if whole else v.tolist())
        self.ts = self.ts[: min(len(c) for c in columns)]
        self.rows = list(zip(*columns, strict=False))
        ckey = tuple(id(m) for m in members)
        if ckey not in known:
            known[ckey] = defs.metric_class(members, recorder_kind=RecorderKind.ABSTRACT)
        self.cls = known[ckey]

    def until(self, t: int) -> None:
        """Write the samples taken up to ``t`` (at ``t`` at the earliest)."""
        while self.k < self.ts.size and self.ts[self.k] <= t:
            self.writer.metric(int(self.ts[self.k]), self.cls, self.rows[self.k])
            self.k += 1

    def rest(self, t: int) -> None:
        """Write the samples left, at ``t`` at the latest (the location's end)."""
        self.until(t)
        while self.k < self.ts.size:
            self.writer.metric(t, self.cls, self.rows[self.k])
            self.k += 1


def write_archive(
    trace_dir: str | os.PathLike, ranks: list[tuple[Path, dict[str, Any]]] | None = None
) -> Path:
    """Write ``trace_dir/traces.otf2`` from the ranks' raw files (see the module's docstring)."""
    require_otf2()
    import _otf2
    import otf2
    from otf2.attribute_list import AttributeList
    from otf2.enums import (
        CollectiveOp,
        GroupType,
        LocationGroupType,
        LocationType,
        Paradigm,
        ParadigmClass,
        RegionRole,
        Type,
    )

    trace_dir = Path(trace_dir)
    ranks = raw_descriptions(trace_dir) if ranks is None else ranks
    hosts = sorted({d.get("hostname", "") for _, d in ranks})
    shift: dict[str, int] = {}
    for _, d in ranks:  # several hosts: each host's monotonic clock moved to wall time
        h = d.get("hostname", "")
        if h not in shift:
            shift[h] = int(d["wall0_ns"]) - int(d["mono0_ns"]) if len(hosts) > 1 else 0
    undefined = 0xFFFFFFFF
    with otf2.writer.open(str(trace_dir), archive_name=ARCHIVE, timer_resolution=10**9) as w:
        defs = w.definitions
        w.creator = "cctviz"
        defs.paradigm(Paradigm.MPI, "torch.distributed", ParadigmClass.PROCESS)
        nodes = {h: defs.system_tree_node(h or "localhost", class_name="node") for h in hosts}
        locs = []
        for _, d in ranks:
            g = defs.location_group(
                location_name(d),
                location_group_type=LocationGroupType.PROCESS,
                system_tree_parent=nodes[d.get("hostname", "")],
            )
            loc = defs.location(location_name(d), type=LocationType.CPU_THREAD, group=g)
            locs.append(loc)
            for name, value in cap_properties(d, shift[d.get("hostname", "")]).items():
                defs.location_property(loc, name, Type.INT64, value)
            # its rank, read back as the profile's (a location's index is not: a rank may be missing)
            defs.location_property(loc, f"{OTF2_NAMESPACE}rank", Type.INT64, int(d.get("rank", 0)))
            if d.get("component"):  # a workflow's process: read back as profile columns
                defs.location_property(
                    loc, f"{OTF2_NAMESPACE}component", Type.STRING, str(d["component"])
                )
                defs.location_property(
                    loc,
                    f"{OTF2_NAMESPACE}component_rank",
                    Type.INT64,
                    int(d.get("component_rank", 0)),
                )
        rank_ids = [int(d.get("rank", 0)) for _, d in ranks]
        defs.group(  # all ranks: the COMM_LOCATIONS group the communicators index
            "torch.distributed ranks",
            group_type=GroupType.COMM_LOCATIONS,
            paradigm=Paradigm.MPI,
            members=tuple(locs),
        )
        index_of_rank = {r: i for i, r in enumerate(rank_ids)}
        comms: dict[tuple[str, tuple[int, ...]], Any] = {}
        bytes_attr = defs.attribute(
            BYTES_ATTRIBUTE,
            description="bytes of the call by the nccl-tests rules (cctviz comm_bytes)",
            type=Type.UINT64,
        )
        regions: dict[tuple[str, str], Any] = {}
        metric_defs: dict[tuple, Any] = {}  # the samples' members and classes

        def region(name: str, kind: str) -> Any:
            key = (name, kind)
            reg = regions.get(key)
            if reg is None:
                ck = kind_of_leaf(name) if kind == K_COMM else None
                role = _COMM_ROLE[ck] if ck else _ROLE.get(kind, "FUNCTION")
                reg = regions[key] = defs.region(
                    name,
                    description=kind,
                    region_role=getattr(RegionRole, role),
                    paradigm=Paradigm.MPI if ck else Paradigm.USER,
                )
            return reg

        first, last, real = None, None, None
        for (stem, d), loc in zip(ranks, locs, strict=True):
            off = shift[d.get("hostname", "")]
            ev = np.fromfile(raw_file(stem, ".events"), dtype="<i8").reshape(-1, 3).copy()
            ev[:, 0] = np.maximum.accumulate(ev[:, 0]) + off  # per location: never backwards
            cm = np.fromfile(raw_file(stem, ".comms"), dtype="<i8").reshape(-1, _COMM_COLS)
            by_event = {int(row[0]): row for row in cm.tolist()}
            local_comms = []
            moved = rank_offset(d)
            for c in d.get("comms", []):
                members = tuple(index_of_rank.get(m + moved, m + moved) for m in c["members"])
                key = (str(d.get("component", "")), str(c.get("key", "")), members)
                if key not in comms:
                    grp = defs.group(
                        c["name"],
                        group_type=GroupType.COMM_GROUP,
                        paradigm=Paradigm.MPI,
                        members=members,
                    )
                    comms[key] = defs.comm(c["name"], group=grp)
                local_comms.append(comms[key])
            # this location's rank in each of its communicators (-1: not a member)
            my_rank = [
                c.group.members.index(loc) if loc in c.group.members else -1 for c in local_comms
            ]
            parent, names, kinds = d["parent"], d["name"], d["kind"]
            refs = [region(nm, k)._ref for nm, k in zip(names, kinds, strict=True)]
            ew = w.event_writer_from_location(loc)
            h = ew.handle
            n_events = 0
            t = int(ev[0, 0]) if len(ev) else off
            program = str(d.get("program", "")) or str(d.get("root", ""))
            ew.program_begin(t, program, [str(a) for a in d.get("arguments", [])])
            samples = _SampleRecords(defs, d.get("samples"), off, ew, t, metric_defs)
            open_comm: dict[int, list[Any]] = {}
            pending = None
            for op, x in replay(parent, ev):
                if op == "t":
                    t = x
                    samples.until(t)
                    continue
                if op == "i":
                    pending = by_event.get(x)
                    continue
                if op == "E":
                    _otf2.EvtWriter_Enter(h, None, t, refs[x])
                    n_events += 1
                    if pending is not None and kinds[x] == K_COMM:
                        open_comm.setdefault(x, []).append(pending)
                        kind = KINDS[pending[1]] if pending[1] >= 0 else ""
                        if kind in OTF2_OP_OF:
                            _otf2.EvtWriter_MpiCollectiveBegin(h, None, t)
                            n_events += 1
                        pending = None
                    continue
                # leave
                recs = open_comm.get(x)
                if recs:
                    _, code, ci, where, tag, nbytes, n = recs.pop()
                    kind = KINDS[code] if code >= 0 else ""
                    comm = local_comms[ci]
                    if kind in OTF2_OP_OF:
                        rooted = kind in ROOTED
                        me = my_rank[ci]
                        sent, recv = sent_received(kind, nbytes, n, rooted and where == me)
                        al = AttributeList(defs, {bytes_attr: int(nbytes)})
                        _otf2.EvtWriter_MpiCollectiveEnd(
                            h,
                            al._handle,
                            t,
                            getattr(CollectiveOp, OTF2_OP_OF[kind]),
                            comm._ref,
                            where if rooted and where >= 0 else undefined,
                            sent,
                            recv,
                        )
                        al.close()
                        n_events += 1
                    elif kind in ("send", "recv"):
                        peer = where if where >= 0 else undefined
                        writer = (
                            _otf2.EvtWriter_MpiSend if kind == "send" else _otf2.EvtWriter_MpiRecv
                        )
                        writer(h, None, t, peer, comm._ref, tag, int(nbytes))
                        n_events += 1
                _otf2.EvtWriter_Leave(h, None, t, refs[x])
                n_events += 1
            samples.rest(t)
            ew.program_end(t, 0)
            loc._number_of_events_written += n_events
            if len(ev):
                lo, hi = int(ev[0, 0]), int(ev[-1, 0])
                if first is None or lo < first:
                    first = lo
                    real = (lo - off + int(d["wall0_ns"]) - int(d["mono0_ns"])) / 1e9
                last = hi if last is None else max(last, hi)
        if first is not None:
            w._update_timestamps(first)
            w._update_timestamps(last)
            w._realtime_timestamp = real
    return trace_dir / f"{ARCHIVE}.otf2"
