"""GPU time and memory per context, without synchronising after each op.

``per_context`` (the default in detailed mode): at every transition the
recorder reports (see ``Recorder.on_tick``) a CUDA event is recorded on the
current stream, tagged with the context whose interval just ended. Otherwise
(light mode) an event is recorded only at phase changes, tagged with the
phase (or region, step) that just ended: recording and reading an event costs
about 8 µs of CPU (measured on an H100), which on a launch-bound model with a
thousand module transitions per step was half the step again; per phase it is
a handful per step. At the end of each step the last event is waited for
once and the elapsed time between consecutive events is charged to the
tagged contexts as ``gpu_time`` (ns): the stream time of the work queued
while that context was on top (idle gaps of the stream included: on a
launch-bound model it is close to the wall time; NVML's ``gpu_util`` of the
sampler is the busy share). Collectives on NCCL's own streams are not in it
(their wall time is ``comm_time``).

``mem_peak`` (bytes) is the caching allocator's peak
(``torch.cuda.max_memory_allocated``) over the interval, read and reset at
phase changes. Each context's own peak comes from the allocator's events in
one step instead (``mem_peak=True``, the default in detailed mode:
:mod:`cctviz.runtime.mempeak`), not from reading and resetting the peak at
every transition (26x the step time on an H100). Resetting it means
``torch.cuda.max_memory_allocated()`` read by your own code under the
profiler covers only the current phase.

``event_factory`` and ``memory`` are injectable so the attribution logic is
tested without a GPU.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..model.formats import K_PHASE, K_REGION, K_ROOT, K_STEP

#: the contexts light mode's GPU time is charged to
_COARSE = (K_PHASE, K_REGION, K_STEP, K_ROOT)


class CudaTimer:
    """CUDA-event timing and allocator peaks for a :class:`~cctviz.runtime.recorder.Recorder`."""

    def __init__(
        self,
        rec: Any,
        *,
        detailed: bool = False,
        per_context: bool | None = None,
        event_factory: Callable[[], Any] | None = None,
        memory: tuple[Callable[[], int], Callable[[], None]] | None = None,
    ) -> None:
        if event_factory is None or memory is None:
            import torch

            if event_factory is None:

                def event_factory() -> Any:
                    return torch.cuda.Event(enable_timing=True)

            if memory is None:
                memory = (torch.cuda.max_memory_allocated, torch.cuda.reset_peak_memory_stats)
        self.rec = rec
        self.detailed = detailed
        self.per_context = detailed if per_context is None else per_context
        self._new = event_factory
        self._peak, self._reset = memory
        self._pool: list[Any] = []
        self._marks: list[tuple[Any, int]] = []
        self._reset()

    def tick(self, ctx: int) -> None:
        """At every transition: with ``per_context``, record an event closing
        ``ctx``'s interval."""
        if self.per_context:
            self._mark(ctx)

    def phase(self, ctx: int) -> None:
        """At a phase change (``ctx`` on top until now): without ``per_context``
        an event closing the phase's interval; the allocator peak since the last
        reset belongs to ``ctx``."""
        if not self.per_context:
            self._mark(self._phase_of(ctx))
        self._memory(ctx)

    def _mark(self, ctx: int) -> None:
        ev = self._pool.pop() if self._pool else self._new()
        ev.record()
        self._marks.append((ev, ctx))

    def _phase_of(self, ctx: int) -> int:
        """The phase, region, step or root that ``ctx`` runs in (itself if one)."""
        kind, parent = self.rec.kind, self.rec.parent
        while ctx > 0 and kind[ctx] not in _COARSE:
            ctx = parent[ctx]
        return ctx

    def _memory(self, ctx: int) -> None:
        self.rec.set_max(ctx, "mem_peak", float(self._peak()))
        self._reset()

    def resolve(self) -> None:
        """Wait for the last event and charge the intervals between events (at step end)."""
        marks = self._marks
        if len(marks) < 2:
            return
        marks[-1][0].synchronize()
        add = self.rec.add
        for (a, _), (b, ctx) in zip(marks, marks[1:]):
            add(ctx, "gpu_time", a.elapsed_time(b) * 1e6)  # ms -> ns
        self._pool.extend(ev for ev, _ in marks[:-1])
        del marks[:-1]
