"""A rank's trace while it runs: its raw event file, read as it grows.

The runtime's tracing recorder (:mod:`cctviz.runtime.trace`) appends its
transitions to ``DIR/.cctviz-trace/<host>-<pid>.events``: little-endian int64
rows ``(time, depth, context)``, "cut the stack to ``depth``, then push the path
down to ``context``" (``context = -1``: only cut; ``depth = -1``: a call entered
and left at once, kept where it nests). Contexts are the recorder's own ids, the
ones its live records declare (parents before children), so a reader that has a
rank's live stream knows every path. In a live run the recorder writes its
buffer at the first step's start after each live record.

:class:`RawTrace` reads the rows appended since its last read and turns them into
intervals ``(context, start, end)``, vectorised: a row's entries are the nodes of
its context's path below the depth it keeps, and an entry at stack position
``k`` ends at the first later row that cuts the stack to ``k`` or less (one pass
of ``np.minimum.accumulate`` per stack depth, not one per row). What is still
open at the last row read stays open until a later read closes it. Rows that
name a context the live stream has not declared yet wait for it.

Example (rows as the recorder logs them: main, then step, then main again)::

    >>> parent = np.array([-1, 0, 1])          # main > step > forward
    >>> rows = np.array([[0, 0, 0], [10, 1, 2], [50, 1, -1], [60, 0, -1]])
    >>> node, start, end, _ = decode(rows, parent, np.empty(0, np.int64), np.empty(0, np.int64))
    >>> sorted(zip(node.tolist(), start.tolist(), end.tolist()))
    [(0, 0, 60), (1, 10, 50), (2, 10, 50)]
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..model._algo import ancestors_by_depth
from ..model.timeline import Timeline
from ..model.tree import Tree

#: the archive the runtime writes once every rank is done (the raw files then go)
ARCHIVE = "traces.otf2"
#: bytes of one row of the raw file (three int64)
ROW_BYTES = 24
_NONE = np.iinfo(np.int64).max


def decode(
    rows: np.ndarray,
    parent: np.ndarray,
    open_nodes: np.ndarray,
    open_starts: np.ndarray,
    tables: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray]]:
    """The intervals of ``rows`` (module docstring) given the stack open before
    them (``open_nodes`` root first, entered at ``open_starts``): ``(node,
    start, end, (open nodes, open starts))``, the last what is open after them.
    ``tables``: :func:`~cctviz.model._algo.ancestors_by_depth` of ``parent``, if known."""
    rows = np.asarray(rows, dtype=np.int64).reshape(-1, 3)
    dep, anc = ancestors_by_depth(parent) if tables is None else tables
    parent = np.asarray(parent, dtype=np.int64)
    open_nodes = np.asarray(open_nodes, dtype=np.int64)
    t, d, c = rows[:, 0], rows[:, 1], rows[:, 2]
    n = t.size
    push = (c >= 0) & (d >= 0)
    inst = d < 0
    cc = np.maximum(c, 0)
    group, length = _stack_lengths(d, push, inst, dep[cc], open_nodes.size)
    before = np.r_[open_nodes.size, length[:-1]]  # the stack's length before each row
    keep = np.minimum(np.where(push, np.minimum(d, dep[cc]), d), before)
    cut_to = np.where(inst, _NONE, keep)  # the stack's length a row cuts to
    # entries: each push row's path below what it keeps; then what was open
    pushed = np.flatnonzero(push)
    count = dep[cc[pushed]] + 1 - keep[pushed]
    e_row = np.repeat(pushed, count)
    e_pos = np.repeat(keep[pushed], count) + (
        np.arange(e_row.size) - np.repeat(np.cumsum(count) - count, count)
    )
    e_node = anc[cc[e_row], e_pos]
    m = int(open_nodes.size)
    e_row = np.r_[np.full(m, -1), e_row]
    e_pos = np.r_[np.arange(m), e_pos]
    e_node = np.r_[open_nodes, e_node]
    e_start = np.r_[np.asarray(open_starts, dtype=np.int64), t[e_row[m:]]]
    # each entry ends at the first later row that cuts the stack to its position or less
    e_end_row = np.full(e_row.size, n)
    for k in np.unique(e_pos):
        first = np.minimum.accumulate(np.where(cut_to <= k, np.arange(n), n)[::-1])[::-1]
        first = np.r_[first, n]
        at = np.flatnonzero(e_pos == k)
        e_end_row[at] = first[e_row[at] + 1]
    closed = e_end_row < n
    still = np.flatnonzero(~closed)
    still = still[np.argsort(e_pos[still], kind="stable")]
    # calls entered and left at once where they nest: their parent tops the stack
    nests = _nesting_instants(t, c, inst, push, group, length, anc, parent, open_nodes)
    node = np.r_[e_node[closed], c[nests]]
    start = np.r_[e_start[closed], t[nests]]
    end = np.r_[t[e_end_row[closed]], t[nests]]
    return node, start, end, (e_node[still], e_start[still])


def _stack_lengths(
    d: np.ndarray, push: np.ndarray, inst: np.ndarray, push_len: np.ndarray, open_len: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per row: its run (the pushes before it and its own; 0: the stack open
    before the rows) and the stack's length after it: a push's path, else the
    least length cut to since the run's push (instant calls cut nothing)."""
    group = np.cumsum(push)
    after_push = np.where(push, push_len + 1, 0)
    length = np.where(push, after_push, np.where(inst, _NONE // 4, d))
    big = (
        int(max(open_len, length[push].max(initial=0) if push.any() else 0))
        + int(d.max(initial=0))
        + 2
    )
    shifted = np.minimum(length, big - 1) - group * big  # later runs lie lower: min restarts
    run_min = np.minimum.accumulate(np.r_[open_len, shifted])[1:] + group * big
    return group, run_min


def _nesting_instants(t, c, inst, push, group, length, anc, parent, open_nodes) -> np.ndarray:
    """The rows of calls logged at depth -1 whose parent tops the stack then."""
    at = np.flatnonzero(inst & (c >= 0))
    if not at.size:
        return at
    top = _tops(group, length, c, push, anc, open_nodes)
    last = np.maximum.accumulate(np.where(~inst, np.arange(t.size), -1))  # the last row no instant
    prev = np.r_[-1, last[:-1]][at]
    top0 = open_nodes[-1] if open_nodes.size else -1
    top_before = np.where(prev >= 0, top[np.maximum(prev, 0)], top0)
    return at[(top_before >= 0) & (parent[c[at]] == top_before)]


def _tops(group, length, c, push, anc, open_nodes) -> np.ndarray:
    """The node on top of the stack after each row (-1: empty): on the path of
    its run's push (or the stack open before) at the stack's length."""
    base = np.r_[open_nodes[-1] if open_nodes.size else -1, c[push]][group]
    ok = (length >= 1) & (base >= 0)
    return np.where(ok, anc[np.maximum(base, 0), np.clip(length - 1, 0, anc.shape[1] - 1)], -1)


class RawTrace:
    """One rank's raw event file, read as it grows (module docstring).

    Args:
        stem: ``DIR/.cctviz-trace/<host>-<pid>`` (the live stream's ``trace_raw``).
    """

    def __init__(self, stem: str | Path) -> None:
        stem = Path(stem)
        self.path = stem.parent / f"{stem.name}.events"
        self.offset = 0
        self.rows = 0
        self._pending = np.empty((0, 3), dtype=np.int64)
        self._open = (np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64))
        self._parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self._tables: tuple[int, tuple[np.ndarray, np.ndarray]] | None = None
        #: the time of the last row decoded (the recorder's clock, ns)
        self.last_ns: int | None = None

    def update(self, parent: list[int] | np.ndarray) -> int:
        """Decode the rows appended since the last call whose contexts are among
        ``parent``'s (the live stream's contexts so far); returns how many."""
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read()
        except FileNotFoundError:  # not written yet, or merged and removed
            data = b""
        whole = len(data) - len(data) % ROW_BYTES
        self.offset += whole
        new = np.frombuffer(data[:whole], dtype="<i8").reshape(-1, 3).astype(np.int64)
        rows = np.concatenate([self._pending, new]) if self._pending.size else new
        known = len(parent)
        late = np.flatnonzero(rows[:, 2] >= known)
        stop = int(late[0]) if late.size else rows.shape[0]
        self._pending = rows[stop:]
        if not stop:
            return 0
        tables = self._ancestry(parent)
        node, start, end, self._open = decode(rows[:stop], parent, *self._open, tables=tables)
        self._parts.append((node, start, end))
        self.rows += stop
        self.last_ns = int(rows[stop - 1, 0])
        return stop

    def _ancestry(self, parent: list[int] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if self._tables is None or self._tables[0] != len(parent):
            self._tables = (len(parent), ancestors_by_depth(np.asarray(parent, dtype=np.int64)))
        return self._tables[1]

    def intervals(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(context, start, end, open)`` of everything decoded: the intervals
        still open end at the last row's time (``open`` True)."""
        if len(self._parts) != 1:  # what was decoded since, as one part from now on
            empty = np.empty(0, dtype=np.int64)
            self._parts = [tuple(np.concatenate([p[i] for p in self._parts] or [empty])
                                 for i in range(3))]  # fmt: skip
        node, start, end = self._parts[0]
        nodes, starts = self._open
        last = self.last_ns if self.last_ns is not None else 0
        is_open = np.r_[np.zeros(node.size, dtype=bool), np.ones(nodes.size, dtype=bool)]
        return (np.r_[node, nodes], np.r_[start, starts],
                np.r_[end, np.full(nodes.size, last, dtype=np.int64)], is_open)  # fmt: skip


class LiveTimeline:
    """The timeline of a live run's traced ranks so far, read incrementally: a
    :class:`RawTrace` per rank, its contexts named by the rank's live stream
    (:class:`~cctviz.readers._live.RankStream`), one tree for all ranks (a
    context is one node where its path is the same)."""

    def __init__(self) -> None:
        self.traces: dict[int, RawTrace] = {}
        self._stems: dict[int, str] = {}
        self._offset: dict[int, int] = {}  # per rank: wall clock minus its recorder's (ns)
        self._local: dict[int, list[int]] = {}  # per rank: its contexts' global ids
        self._key: dict[tuple[int, str, str], int] = {}
        self._parent: list[int] = []
        self._name: list[str] = []
        self._kind: list[str] = []

    def note(self, rank: int, stream: Any) -> None:
        """After each record of ``rank``'s live stream: where its raw trace is
        (``trace_raw`` of its first record's metadata; the last record's, the
        rank file's, no longer says) and its clocks' offset then."""
        if rank not in self._stems and stream.meta.get("trace_raw"):
            self._stems[rank] = str(stream.meta["trace_raw"])
            self._offset[rank] = int(stream.wall_offset_ns or 0)

    def archive(self) -> Path | None:
        """The run's OTF2 archive once written (``DIR/traces.otf2`` beside the
        raw files' folder ``DIR/.cctviz-trace``; they are removed then)."""
        stem = next(iter(self._stems.values()), None)
        path = Path(stem).parent.parent / ARCHIVE if stem is not None else None
        return path if path is not None and path.exists() else None

    def update(self, streams: dict[int, Any]) -> int:
        """Read what each traced rank appended; returns the rows decoded."""
        n = 0
        for r, stem in self._stems.items():
            tr = self.traces.setdefault(r, RawTrace(stem))
            n += tr.update(streams[r].parent)
        return n

    def timeline(self, streams: dict[int, Any]) -> Timeline:
        """Every traced rank's intervals so far (those still open end at the rank's
        last row), on the archive's clock (:meth:`_shifts`); profiles ``rank`` (and ``component`` where
        a workflow's), ``open`` (intervals still open) and ``rows`` read."""
        ranks = sorted(self.traces)
        gids = [self._globals(r, streams[r]) for r in ranks]
        shift = self._shifts(ranks, streams)
        tree, ids = Tree.from_parents_with_ids(self._parent, self._name, kind=self._kind)
        parts, rows = [], []
        for p, (r, g) in enumerate(zip(ranks, gids)):
            node, start, end, is_open = self.traces[r].intervals()
            off = shift[r]
            parts.append(pd.DataFrame({"profile": p, "node": ids[g[node]],
                                       "start": start + off, "end": end + off}))  # fmt: skip
            meta = streams[r].meta
            rows.append({"rank": r, "component": meta.get("component", ""),
                         "open": int(is_open.sum()), "rows": self.traces[r].rows})  # fmt: skip
        events = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(
            {"profile": [], "node": [], "start": [], "end": []}
        )  # fmt: skip
        profiles = pd.DataFrame(rows)
        if not profiles["component"].astype(bool).any():
            profiles = profiles.drop(columns="component")
        return Timeline(tree, events, profiles, meta={"live": True})

    def _shifts(self, ranks: list[int], streams: dict[int, Any]) -> dict[int, int]:
        """Per rank, what moves its recorder's clock onto the timeline's: as the
        archive does (:mod:`cctviz.runtime.trace`), nothing on one host, each
        host's wall-minus-monotonic offset (its first rank's) on several."""
        host = {r: str(streams[r].meta.get("hostname", "")) for r in ranks}
        if len(set(host.values())) < 2:
            return dict.fromkeys(ranks, 0)
        first: dict[str, int] = {}
        for r in ranks:
            first.setdefault(host[r], self._offset[r])
        return {r: first[host[r]] for r in ranks}

    def _globals(self, r: int, stream: Any) -> np.ndarray:
        """Rank ``r``'s contexts' global ids (new contexts added to the shared table)."""
        local = self._local.setdefault(r, [])
        for i in range(len(local), len(stream.parent)):  # contexts, not events: few
            p = stream.parent[i]
            key = (local[p] if p >= 0 else -1, stream.name[i], stream.kind[i])
            if key not in self._key:
                self._key[key] = len(self._parent)
                self._parent.append(key[0])
                self._name.append(key[1])
                self._kind.append(key[2])
            local.append(self._key[key])
        return np.asarray(local, dtype=np.int64)
