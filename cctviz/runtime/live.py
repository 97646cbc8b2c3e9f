"""A run that can be read while it runs: each rank appends its increments.

Every ``flush`` seconds a writer thread (never the training thread) reads the
rank's recorder as it stands and appends one record to
``OUT/live/rank-NNNNN.chunks`` (:func:`cctviz.model.formats.live_file`):

- the contexts created since the last record (parent, name, kind);
- each metric's cumulative value in the contexts where it changed;
- the steps ended since (start and end on the recorder's clock, warm-up or
  not, and the time spent in collectives so far: see
  :meth:`~cctviz.runtime.recorder.Recorder.comm_so_far`);
- the wall clock and the recorder's clock at the record, so a reader on
  another machine places the steps in time;
- the rank's metadata in the first record and in the last, which the profiler
  writes when it stops (``final``: the same metadata as the rank file).

The file is only ever appended to, a whole record per ``write``. A rank that is
killed leaves every record up to its last flush; a record cut short by the kill
fails its length or CRC check and the reader stops there and says so
(:mod:`cctviz.readers._live`). The training thread pays nothing but the
recorder's own bookkeeping (running totals of its collectives at each step's
end): the writer copies the recorder's lists (each copy one C call under the
GIL) and compares them with what it sent last. The file is opened once, by the
writer, and its opens are not logged as the job's (``cctviz run --files``).
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from ..model.formats import LIVE_DIR, LIVE_TRACE_WANTED, live_file, live_record

log = logging.getLogger("cctviz.runtime")

#: ``cctviz run --flush``'s default: seconds between two records of a rank
DEFAULT_FLUSH = 1.0


def parse_flush(text: Any) -> float:
    """``--flush S``: seconds between records, > 0; ``0`` or ``off``: no live files.

    >>> parse_flush("0.5"), parse_flush("off"), parse_flush(None)
    (0.5, 0.0, 1.0)
    """
    if text is None:
        return DEFAULT_FLUSH
    if str(text).strip().lower() in ("off", "0", "no"):
        return 0.0
    try:
        s = float(text)
    except (TypeError, ValueError):
        s = -1.0
    if not (0 < s < float("inf")):
        raise ValueError(f"--flush needs seconds > 0 (or 'off'), not {text!r}")
    return s


class LiveWriter:
    """Appends the increments of one profiler's recorder (module docstring)."""

    def __init__(self, prof: Any, every: float = DEFAULT_FLUSH) -> None:
        if not every > 0:
            raise ValueError(f"flush every {every!r} s: give seconds > 0")
        self.prof = prof
        self.every = float(every)
        self.records = 0
        self.path: Path | None = None
        self._sent_contexts = 0
        self._sent_steps = 0
        self._last_step: list | None = None
        self._sent: dict[str, np.ndarray] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._write_lock = threading.Lock()
        self._failed = False
        self._fh: Any = None
        self._wanted = False  # a watch asked for the trace as it grows

    def start(self) -> LiveWriter:
        self._thread = threading.Thread(target=self._run, name="cctviz-live", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        from .files import unlogged

        unlogged()  # this thread's opens are cctviz's own, not the job's
        while not self._stop.wait(self.every):
            self.flush()

    def stop_thread(self) -> None:
        """Stop the thread (it may be writing a record: that record is finished)."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()

    def close(self, meta: dict[str, Any]) -> None:
        """Stop the thread and append the last record, with the rank's final ``meta``."""
        self.stop_thread()
        self.flush(meta=meta, final=True)
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    # ------------------------------------------------------------ records
    def flush(self, *, meta: dict[str, Any] | None = None, final: bool = False) -> None:
        """Append one record: what changed, or nothing but the clocks (a heartbeat:
        a rank in one long context still says it is there)."""
        if self._failed:
            return
        with self._write_lock:
            try:
                payload = self._payload(meta, final)
                data = live_record(json.dumps(payload, separators=(",", ":")).encode())
                fh = self._file(meta)
                fh.write(data)  # one whole record
                fh.flush()
                self.records += 1
            except Exception:  # noqa: BLE001 - never kill the job
                self._failed = True
                log.exception("cctviz: could not write the live record; live output stops")

    def _file(self, meta: dict[str, Any] | None) -> Any:
        """This rank's live file, open for appending: made new at the first record
        (a folder used again starts over), moved if the rank became known later."""
        rank = int((meta or self.prof.rank_info(live=True))["rank"])
        path = live_file(self.prof.out, rank)
        if self._fh is None:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = open(path, "wb")  # noqa: SIM115 - kept open while the rank runs
        elif path != self.path:  # MPI told the rank after the first record
            self._fh.close()
            os.replace(self.path, path)
            self._fh = open(path, "ab")  # noqa: SIM115
        self.path = path
        return self._fh

    def _payload(self, meta: dict[str, Any] | None, final: bool) -> dict[str, Any]:
        rec = self.prof.rec
        wall, clock = time.time_ns(), rec._clock()
        # the training thread appends to these lists: take the length all of them have
        n = min(len(rec.parent), len(rec.name), len(rec.kind), len(rec.time), len(rec.calls))
        n0 = self._sent_contexts
        contexts = [n0, rec.parent[n0:n], rec.name[n0:n], rec.kind[n0:n]]
        metrics = {"time": rec.time[:n], "calls": rec.calls[:n]}
        for m, d in list(rec.extra.items()):
            col = np.zeros(n)
            items = np.array([(c, v) for c, v in dict(d).items() if c < n], dtype=np.float64)
            if len(items):
                col[items[:, 0].astype(np.int64)] = items[:, 1]
            metrics[m] = col
        changed: dict[str, list] = {}
        for m, values in metrics.items():
            now = np.asarray(values, dtype=np.float64)
            before = self._sent.get(m, np.zeros(0))
            prev = np.zeros(n)
            prev[: min(len(before), n)] = before[:n]
            ids = np.flatnonzero(now != prev)
            if len(ids):
                changed[m] = [ids.tolist(), now[ids].tolist()]
            self._sent[m] = now
        steps = self._steps(rec)
        if getattr(rec, "tracing", False) and self._trace_wanted():
            rec.flush_wanted = True  # its trace on disk by the next step's start
        self._sent_contexts = n
        out: dict[str, Any] = {
            "record": self.records,
            "wall_ns": wall,
            "clock_ns": int(clock),
            "contexts": contexts,
            "metrics": changed,
            "order": list(metrics),  # every metric, zero or not, in the recorder's order
            "max_metrics": sorted(rec.max_metrics),
            "steps": steps,
            "final": final,
        }
        if meta is not None or not self.records:
            # before the end: what the rank knows of itself, without touching the
            # training thread's trace buffer or the sampler's series
            out["meta"] = meta if meta is not None else self.prof._meta(live=True)
        return out

    def _trace_wanted(self) -> bool:
        """Whether a watch asked for the trace as it grows (a file it put in
        ``live/``: one stat a record; once seen, always)."""
        if not self._wanted:
            self._wanted = (Path(self.prof.out) / LIVE_DIR / LIVE_TRACE_WANTED).exists()
        return self._wanted

    def _steps(self, rec: Any) -> list[list]:
        """The steps ended since the last record. The last one sent is looked
        at again: a second optimizer may have reopened and re-ended it."""
        ends, comm = rec.steps[:], rec.step_comm[:]
        k = min(len(ends), len(comm))
        first = max(0, min(self._sent_steps, k) - 1)
        rows = [
            [i, int(ends[i][0]), int(ends[i][1]), bool(ends[i][2]), int(comm[i][0]), comm[i][1]]
            for i in range(first, k)
        ]
        if rows and rows[0] == self._last_step:
            rows = rows[1:]
        if rows:
            self._last_step = rows[-1]
        self._sent_steps = k
        return rows


__all__ = ["DEFAULT_FLUSH", "LiveWriter", "parse_flush"]
