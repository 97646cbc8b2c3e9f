"""The sampler's averages: ``cpu_util`` and ``gpu_util`` (in %) from the sums a
sampled profile holds (:mod:`cctviz.runtime.sampler`), computed once when a rank's
tree is made, by the runtime as it writes the rank file and by the reader of a
run's live increments (:mod:`cctviz.readers._live`), so both give the same tree;
and the rule that splits a sampled context's time into blocked, idle and busy
(:func:`blocked_idle`: the workflow summary's and the live watch's).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .formats import K_COMM, K_REGION

#: below this share of a core a context's sampled time counts as waiting
LOW_CPU = 0.10

#: averages stored as ratios of two sums: ratio -> (numerator, denominator)
RATIOS: dict[str, tuple[str, str]] = {
    "cpu_util": ("cpu_time", "sampled_time"),
    "gpu_util": ("gpu_busy_time", "sampled_time"),
}


def add_ratios(tree: Any) -> Any:
    """``tree`` with the averages of :data:`RATIOS` (``cpu_util``, ``gpu_util``, in %)
    per node and per subtree, from the sums it holds (aggregation ``"none"``).

    A node without sampled time gets NaN (no sample fell in it: its average is unknown).

    Example:
        >>> from cctviz import Tree
        >>> t = Tree.from_parents([-1, 0], ["main", "loop"],
        ...     {"cpu_time": [1.0, 9.0], "sampled_time": [4.0, 10.0]})
        >>> t = add_ratios(t)
        >>> t.metrics["cpu_util"].tolist(), t.metrics["cpu_util (inc)"].tolist()
        ([25.0, 90.0], [71.42857142857143, 90.0])
    """
    m = tree.metrics
    for name, (num, den) in RATIOS.items():
        if num not in m or den not in m:
            continue
        for suffix in ("", " (inc)"):
            d = m[den + suffix].to_numpy(dtype=np.float64)
            with np.errstate(divide="ignore", invalid="ignore"):
                r = np.where(d > 0, 100.0 * m[num + suffix].to_numpy(dtype=np.float64) / d, np.nan)
            tree = tree.add_metric(name + suffix, r, aggregation="none", unit="%")
    return tree


def blocked_idle(
    time: np.ndarray,
    cpu_time: np.ndarray,
    sampled_time: np.ndarray,
    kind: np.ndarray,
    low_cpu: float = LOW_CPU,
) -> tuple[np.ndarray, np.ndarray]:
    """The time of each context (rows; columns: profiles, if any) that was
    ``blocked`` and ``idle``; the rest is busy. Blocked: all the time of a
    communication context (``comm``: waiting for peers, already timed), and the
    time of a context of the program's own (``region``) whose sampled CPU was
    below ``low_cpu`` of a core (a wait, whatever its name). Idle: other time
    with that little CPU. ``kind``: each row's kind.

    Example:
        >>> t, cpu, smp = np.array([5.0, 4.0, 3.0]), np.array([5.0, 0.1, 0.0]), np.array([5.0, 4.0, 3.0])
        >>> blocked_idle(t, cpu, smp, np.array(["module", "region", "comm"]))
        (array([0., 4., 3.]), array([0., 0., 0.]))
    """
    low = (sampled_time > 0) & (cpu_time < low_cpu * sampled_time)
    shape = (-1,) + (1,) * (np.ndim(time) - 1)
    waits = (np.asarray(kind) == K_REGION).reshape(shape)
    comm = (np.asarray(kind) == K_COMM).reshape(shape)
    blocked = np.where(comm | (low & waits), time, 0.0)
    idle = np.where(low & ~waits & ~comm, time, 0.0)
    return blocked, idle
