"""A real timeline with a memory counter, made in the test: torch.profiler with
``profile_memory=True`` records a ``[memory]`` event per allocation and free
(with the total allocated after it); ``cctviz.read_timeline`` reads the trace
with its memory as the counter track ``memory allocated (cpu)`` (bytes), and
:func:`memory_samples` reads the same events straight from the JSON (the
oracle: ``ts`` in whole ns on the epoch from ``baseTimeNanoseconds``, the
``Total Allocated`` after each event)."""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pandas as pd

import cctviz

#: the size of the tensor allocated (and freed) at every step: float32 1024 x 1024
BIG_BYTES = 1024 * 1024 * 4
TRACK = "memory allocated (cpu)"


def record(path: pathlib.Path, steps: int = 6) -> pathlib.Path:
    """Profile a loop whose steps hold a 4 MiB tensor for a while, free it and
    then work without it (so memory rises and falls); the trace's path."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        x = torch.randn(128, 128)
        for _ in range(steps):
            big = torch.randn(1024, 1024)
            x = (x @ x).tanh() + big[:128, :128]
            del big
            for _ in range(20):
                x = (x @ x).tanh()
    prof.export_chrome_trace(str(path))
    return path


def memory_samples(path: pathlib.Path) -> pd.DataFrame:
    """The trace's ``[memory]`` events: ``ts`` (ns, as the reader puts events on
    the epoch) and ``Total Allocated`` (bytes)."""
    top = json.loads(path.read_text())
    mem = [e for e in top["traceEvents"] if e.get("name") == "[memory]"]
    ts = np.array([e["ts"] for e in mem], dtype=np.float64)  # us
    base = float(np.floor(ts.min()))
    ns = int(base) * 1000 + np.rint((ts - base) * 1e3).astype(np.int64)
    ns += int(top.get("baseTimeNanoseconds") or 0)
    value = np.array([e["args"]["Total Allocated"] for e in mem], dtype=np.float64)
    return pd.DataFrame({"ts": ns, "value": value})


def memory_timeline(path: pathlib.Path) -> tuple[cctviz.Timeline, pd.DataFrame]:
    """The trace at ``path`` as the reader gives it (with its memory counter),
    and the samples read from the JSON."""
    tl = cctviz.read_timeline(path)
    assert TRACK in set(tl.counters["track"]), sorted(set(tl.counters["track"]))
    return tl, memory_samples(path)
