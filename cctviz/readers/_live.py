"""A rank's live increments (``live/rank-NNNNN.chunks``, written by
:mod:`cctviz.runtime.live`), read incrementally: each :meth:`RankStream.update`
reads only the records appended since the last one.

A record is whole or not at all: the reader stops at the first record whose
header, length or CRC-32 does not check out and keeps what came before. At
the end of a file that is still being written this is the record in flight
(read again at the next update); in a rank that ended without its final record,
it is where the rank was cut (:attr:`RankStream.problem` says where and why).

>>> import json, tempfile, pathlib
>>> from cctviz.model.formats import live_record
>>> p = pathlib.Path(tempfile.mkdtemp()) / "rank-00000.chunks"
>>> one = {"record": 0, "wall_ns": 0, "clock_ns": 0, "contexts": [0, [-1], ["main"], ["root"]],
...        "metrics": {"time": [[0], [5.0]]}, "steps": [], "final": False, "meta": {"rank": 0}}
>>> _ = p.write_bytes(live_record(json.dumps(one).encode()) + b"CCTL\\x10")
>>> s = RankStream(p); s.update(), s.problem
(1, 'an incomplete record at byte 182 (5 bytes): read up to it')
>>> s.tree().metrics["time"].tolist()
[5]
"""

from __future__ import annotations

import json
import os
import time
import zlib
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..model.formats import LIVE_HEADER, LIVE_MAGIC
from ..model.sampled import add_ratios
from ..model.tree import Tree

#: the columns of :meth:`RankStream.steps`
STEP_COLUMNS = ("step", "start_ns", "end_ns", "warmup", "comm_ctx_ns", "comm_time_ns")


class RankStream:
    """One rank's live file, as far as it has been read (module docstring)."""

    def __init__(
        self, path: str | Path, on_record: Callable[[RankStream], Any] | None = None
    ) -> None:
        self.path = Path(path)
        #: called after each record is applied (the watch keeps its history)
        self.on_record = on_record
        self.offset = 0
        self.records = 0
        self.parent: list[int] = []
        self.name: list[str] = []
        self.kind: list[str] = []
        #: metric -> {context: value}; time and calls are the recorder's own
        #: (there from the start, zero until a record changes them)
        self.metrics: dict[str, dict[int, float]] = {"time": {}, "calls": {}}
        self.max_metrics: set[str] = set()
        self.meta: dict[str, Any] = {}
        self.final = False
        #: what stopped the last read short of the file's end ("" if nothing)
        self.problem = ""
        self._steps: dict[int, list] = {}
        self.new_steps: list[list] = []
        #: the wall clock minus the rank's recorder clock (ns), at its last record
        self.wall_offset_ns: int | None = None
        #: the wall clock of the first and the last record (ns since the epoch)
        self.first_wall_ns: int | None = None
        self.last_wall_ns: int | None = None
        #: this process's monotonic clock when a record was last read (s)
        self.last_read: float | None = None
        #: seconds of snapshots kept for :meth:`since` (None: none kept)
        self.keep: float | None = None
        #: (wall clock ns, steps ended, record, metric -> {context: running sum})
        #: at each record, the oldest at least ``keep`` seconds before the newest
        self.snapshots: deque[tuple[int, int, int, dict[str, dict[int, float]]]] = deque()

    def update(self) -> int:
        """Read the records appended since the last call; returns how many. A
        file shorter than what was read is a new run in the same folder: read
        from its start."""
        try:
            with open(self.path, "rb") as f:
                if os.fstat(f.fileno()).st_size < self.offset:
                    self._reset()
                f.seek(self.offset)
                data = f.read()
        except FileNotFoundError:
            return 0
        n, pos, self.problem = 0, 0, ""
        while pos < len(data):
            payload, size, problem = _record(data, pos)
            if payload is None:
                self.problem = f"{problem} at byte {self.offset} ({len(data) - pos} bytes)"
                self.problem += ": read up to it"
                break
            self._apply(payload)
            pos += size
            n += 1
            self.offset += size  # a record at a time: one that fails is not applied again
            self.records += 1
            self.last_read = time.monotonic()
            if self.on_record is not None:
                self.on_record(self)
        return n

    def _reset(self) -> None:
        on_record, path, keep = self.on_record, self.path, self.keep
        self.__init__(path, on_record)  # type: ignore[misc]
        self.keep = keep

    def _apply(self, rec: dict[str, Any]) -> None:
        n0, parents, names, kinds = rec["contexts"]
        if n0 != len(self.parent):
            raise ValueError(f"{self.path}: record {rec.get('record')} starts at context {n0}")
        self.parent += parents
        self.name += names
        self.kind += kinds
        for m in rec.get("order", ()):  # every metric, zero or not, in the recorder's order
            self.metrics.setdefault(m, {})
        for m, (ids, values) in rec["metrics"].items():
            col = self.metrics.setdefault(m, {})
            col.update(zip(ids, values, strict=True))
        self.max_metrics.update(rec.get("max_metrics", ()))
        for row in rec["steps"]:
            self._steps[int(row[0])] = row
        #: the step rows of the last record read (:data:`STEP_COLUMNS`)
        self.new_steps = rec["steps"]
        if "meta" in rec:
            self.meta = rec["meta"]
        self.final = bool(rec.get("final"))
        self.last_wall_ns = int(rec["wall_ns"])
        if self.first_wall_ns is None:
            self.first_wall_ns = self.last_wall_ns
        self.wall_offset_ns = int(rec["wall_ns"]) - int(rec["clock_ns"])
        if self.keep is not None:
            self.snapshot()

    def snapshot(self) -> None:
        """Keep the sums as of this record; drop those no window of ``keep``
        seconds ending at it or later starts from (the newest before it stays)."""
        now = int(self.last_wall_ns or 0)
        sums = {m: dict(v) for m, v in self.metrics.items() if m not in self.max_metrics}
        self.snapshots.append((now, self.steps_done, self.records, sums))
        start = now - int(float(self.keep or 0) * 1e9)
        while len(self.snapshots) > 1 and self.snapshots[1][0] <= start:
            self.snapshots.popleft()

    def since(self, seconds: float) -> tuple[int, int, int, dict[str, dict[int, float]]] | None:
        """The snapshot a window of the last ``seconds`` starts from: the newest
        at least that old; None where the rank's first record is within the
        window (from zero). Kept for less than the window: the oldest kept (a
        shorter window)."""
        start = int(self.last_wall_ns or 0) - int(seconds * 1e9)
        if not self.snapshots or self.first_wall_ns is None or start < self.first_wall_ns:
            return None
        older = [snap for snap in self.snapshots if snap[0] <= start]
        return older[-1] if older else self.snapshots[0]

    # ------------------------------------------------------------ results
    @property
    def steps_done(self) -> int:
        """How many steps the rank has ended so far."""
        return len(self._steps)

    def step_row(self, step: int) -> list | None:
        """Step ``step``'s row (:data:`STEP_COLUMNS`), None if not ended yet."""
        return self._steps.get(step)

    @property
    def rank(self) -> int | None:
        r = self.meta.get("rank")
        return int(r) if r is not None else None

    def steps(self) -> pd.DataFrame:
        """The steps ended so far: :data:`STEP_COLUMNS` (ns on the rank's clock;
        ``comm_*``: cumulative at the step's end, as the recorder keeps them)."""
        rows = [self._steps[k] for k in sorted(self._steps)]
        return pd.DataFrame(rows, columns=list(STEP_COLUMNS))

    def window_columns(self, seconds: float) -> dict[str, np.ndarray]:
        """Each summed metric over the last ``seconds`` of records: its value now
        less its value at :meth:`since`'s snapshot (the records carry running
        sums; :meth:`window_span` says how long that is). A maximum cannot be
        taken apart by time: max metrics are left out. Needs ``keep`` >=
        ``seconds`` from before the window began (else the window is what was
        kept: :meth:`since`)."""
        base = self.since(seconds)
        out = {}
        for m in self.metrics:
            if m in self.max_metrics:
                continue
            col = self.column(m)
            if base is not None and base[3].get(m):
                before = base[3][m]
                ids = np.fromiter(before.keys(), dtype=np.int64, count=len(before))
                col[ids] -= np.fromiter(before.values(), dtype=np.float64, count=len(before))
            out[m] = col
        return out

    def window_span(self, seconds: float) -> float:
        """The seconds the window of :meth:`window_columns` spans: from its
        snapshot's record to the last (``seconds`` where the rank began within it)."""
        base = self.since(seconds)
        return seconds if base is None else (int(self.last_wall_ns or 0) - base[0]) / 1e9

    def column(self, metric: str) -> np.ndarray:
        """The cumulative ``metric`` per context so far, in context order (0
        where none)."""
        values = self.metrics.get(metric, {})
        col = np.zeros(len(self.parent))
        if values:
            ids = np.fromiter(values.keys(), dtype=np.int64, count=len(values))
            col[ids] = np.fromiter(values.values(), dtype=np.float64, count=len(values))
        return col

    def tree(self, last: float | None = None) -> Tree:
        """What the rank has recorded so far, as the runtime's ``to_tree`` makes
        it (the final record: the same tree as the rank file); ``last``: only
        its last ``last`` seconds of records (:meth:`window_columns`)."""
        # time and calls first, as the recorder has them
        if last is None:
            cols = {m: self.column(m) for m in self.metrics}
        else:
            cols = self.window_columns(last)
        for m in ("time", "calls"):  # integer counters in the rank file
            if m in cols:
                cols[m] = cols[m].astype(np.int64)
        meta = dict(self.meta)
        rules = {m: "max" for m in sorted(self.max_metrics) if m in cols}
        if rules:
            meta["aggregation"] = {**meta.get("aggregation", {}), **rules}
        tree = Tree.from_parents(self.parent, self.name, cols, kind=self.kind, meta=meta)
        # a sampled rank's averages, as the runtime adds them to its rank file
        return add_ratios(tree) if meta.get("sample_hz") else tree


def _record(data: bytes, pos: int) -> tuple[dict[str, Any] | None, int, str]:
    """The record at ``pos``: (payload, its size with the header, "") or
    (None, 0, what is wrong)."""
    h = LIVE_HEADER.size
    if len(data) - pos < h:
        return None, 0, "an incomplete record"
    magic, length, crc = LIVE_HEADER.unpack_from(data, pos)
    if magic != LIVE_MAGIC:
        return None, 0, "not a record (bad magic)"
    body = data[pos + h : pos + h + length]
    if len(body) < length:
        return None, 0, "an incomplete record"
    if zlib.crc32(body) != crc:
        return None, 0, "a damaged record (CRC mismatch)"
    try:
        return json.loads(body), h + length, ""
    except ValueError:
        return None, 0, "a damaged record (not JSON)"


__all__ = ["RankStream", "STEP_COLUMNS"]
