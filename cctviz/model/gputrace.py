"""GPU activities under the CPU calls that launched them: the one GPU-trace builder
of the readers (Kineto, Nsight Systems).

A GPU activity (a kernel, copy or set) carries the correlation id of the runtime
call that launched it; :func:`gpu_trace` finds that call among the CPU intervals
(within a scope: a process, where ids repeat across processes), so that the
activity goes under the call's calling context, and gives the columns a
:class:`~cctviz.model.timeline.Timeline`'s events take for the activities:
``launch_event`` (the event id of the launching call, -1 for none), ``device``
and ``stream`` (where it ran), untimed (beside the CPU's time nesting, not part
of it) with its ``gpu_time``. Activities without a launching call are grouped
(per device, per process: the reader says) under roots the reader names.

Everything is columnar; no loop runs per activity.

>>> g = gpu_trace(np.array([7, -1, 9]), np.array([9, 9, 4]), device=[0, 0, 1], stream=[7, 7, 3],
...               group=np.array([0, 0, 1]))  # unattributed activities: a group per device
>>> g.launch.tolist(), g.group.tolist(), g.groups.tolist()
([2, 2, -1], [-1, -1, 0], [1])
>>> g.parent(cpu_offset=10, group_node=np.array([3])).tolist()
[12, 12, 3]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class GpuTrace:
    """GPU activities attached to their launching CPU intervals (:func:`gpu_trace`)."""

    #: per activity, the index of the CPU interval that launched it (-1: none)
    launch: np.ndarray
    #: per activity, its group among :attr:`groups` where it has no launch (else -1)
    group: np.ndarray
    #: the keys of the groups of activities without a launch, sorted
    groups: np.ndarray
    #: per activity, the device and the stream it ran on (as the reader names them)
    device: np.ndarray
    stream: np.ndarray

    @property
    def unattributed(self) -> np.ndarray:
        """Which activities have no launching CPU interval."""
        return self.launch < 0

    def parent(self, cpu_offset: int, group_node: np.ndarray) -> np.ndarray:
        """Each activity's parent in a reader's event forest: the forest node of its
        launching CPU interval (``cpu_offset`` plus the interval's index: the CPU
        intervals are consecutive there), else the node the reader made for its
        group (``group_node``, one per :attr:`groups`)."""
        group_node = np.asarray(group_node, dtype=np.int64)
        orphan = group_node[np.maximum(self.group, 0)] if group_node.size else self.group
        return np.where(self.launch >= 0, self.launch + cpu_offset, orphan)

    def event_columns(
        self, cpu_parent_event: np.ndarray, gpu_time: np.ndarray
    ) -> dict[str, np.ndarray]:
        """Columns of a Timeline's events for the CPU intervals (event ids 0..n-1, as
        given) followed by the GPU activities: ``timed`` (the CPU's), ``parent_event``
        (``cpu_parent_event``, -1 for the activities), ``gpu_time`` (NaN for the CPU),
        ``launch_event`` (the launching interval's event id), ``device``, ``stream``."""
        n, g = cpu_parent_event.shape[0], self.launch.shape[0]
        none = np.full(n, None, dtype=object)
        return {
            "timed": np.r_[np.ones(n, dtype=bool), np.zeros(g, dtype=bool)],
            "parent_event": np.r_[cpu_parent_event, np.full(g, -1, dtype=np.int64)],
            "gpu_time": np.r_[np.full(n, np.nan), np.asarray(gpu_time, dtype=np.float64)],
            "launch_event": np.r_[np.full(n, -1, dtype=np.int64), self.launch],
            "device": np.r_[none, self.device],
            "stream": np.r_[none, self.stream],
        }


def gpu_trace(
    cpu_corr: np.ndarray,
    gpu_corr: np.ndarray,
    *,
    device: Sequence[Any] | np.ndarray,
    stream: Sequence[Any] | np.ndarray,
    cpu_scope: np.ndarray | None = None,
    gpu_scope: np.ndarray | None = None,
    cpu_rank: np.ndarray | None = None,
    group: np.ndarray | None = None,
) -> GpuTrace:
    """Attach GPU activities to the CPU intervals that launched them, vectorised.

    Args:
        cpu_corr: per CPU interval its correlation id (-1: none).
        gpu_corr: per GPU activity the correlation id of its launch (-1: none).
        device, stream: per GPU activity where it ran (kept as given).
        cpu_scope, gpu_scope: where ids repeat (per process): an activity's launch
            is a CPU interval of its scope (both None: ids are unique).
        cpu_rank: of several CPU intervals with one id in one scope (a runtime call
            and the driver call it makes), the one of the highest rank launches
            (default: the last given).
        group: per GPU activity the key of the group it joins where nothing
            launched it (default: one group, key 0).
    """
    cpu_corr = np.asarray(cpu_corr, dtype=np.int64)
    gpu_corr = np.asarray(gpu_corr, dtype=np.int64)
    n, g = cpu_corr.shape[0], gpu_corr.shape[0]
    cs = np.zeros(n, np.int64) if cpu_scope is None else np.asarray(cpu_scope, dtype=np.int64)
    gs = np.zeros(g, np.int64) if gpu_scope is None else np.asarray(gpu_scope, dtype=np.int64)
    rank = np.arange(n, dtype=np.int64) if cpu_rank is None else np.asarray(cpu_rank, np.int64)
    # CPU intervals then activities per (scope, id), the CPU ones by rank: an
    # activity's launch is the last CPU interval before it with its (scope, id)
    has = np.flatnonzero(cpu_corr >= 0)
    m = has.shape[0]
    scope = np.r_[cs[has], gs]
    corr = np.r_[cpu_corr[has], gpu_corr]
    tag = np.r_[np.zeros(m, np.int8), np.ones(g, np.int8)]
    sub = np.r_[rank[has], np.zeros(g, np.int64)]
    order = np.lexsort((sub, tag, corr, scope))
    is_cpu = order < m
    last = np.maximum.accumulate(np.where(is_cpu, np.arange(order.shape[0]), -1))
    at = np.flatnonzero(~is_cpu)
    lp = last[at]
    ok = lp >= 0
    ok[ok] = (scope[order[lp[ok]]] == scope[order[at[ok]]]) & (
        corr[order[lp[ok]]] == corr[order[at[ok]]]
    )
    launch = np.full(g, -1, dtype=np.int64)
    act = order[at] - m
    launch[act[ok]] = has[order[lp[ok]]]
    launch[gpu_corr < 0] = -1
    key = np.zeros(g, np.int64) if group is None else np.asarray(group)
    orphan = launch < 0
    groups, inv = np.unique(key[orphan], return_inverse=True)
    grp = np.full(g, -1, dtype=np.int64)
    grp[orphan] = inv.reshape(-1)
    dev = np.empty(g, dtype=object)
    dev[:] = list(device) if not isinstance(device, np.ndarray) else device
    st = np.empty(g, dtype=object)
    st[:] = list(stream) if not isinstance(stream, np.ndarray) else stream
    return GpuTrace(launch=launch, group=grp, groups=groups, device=dev, stream=st)


__all__ = ["GpuTrace", "gpu_trace"]
