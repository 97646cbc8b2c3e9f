"""GPU time and memory per context, without synchronising after each op.

At every transition the recorder reports (see ``Recorder.on_tick``) a CUDA
event is recorded on the current stream, tagged with the context whose
interval just ended. At the end of each step the last event is waited for
once and the elapsed time between consecutive events is charged to the
tagged contexts as ``gpu_time`` (ns): the stream time of the work queued
while that context was on top. Collectives on NCCL's own streams are not in
it (their wall time is ``comm_time``).

``mem_peak`` (bytes) is the caching allocator's peak
(``torch.cuda.max_memory_allocated``) over the interval, read and reset at
phase changes (light mode) or at every transition (detailed mode). Reading
it is a few microseconds, which is why light mode does it per phase only.
Resetting it means ``torch.cuda.max_memory_allocated()`` read by your own
code under the profiler covers only the current phase.

``event_factory`` and ``memory`` are injectable so the attribution logic is
tested without a GPU.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class CudaTimer:
    """CUDA-event timing and allocator peaks for a :class:`~cctviz.runtime.recorder.Recorder`."""

    def __init__(
        self,
        rec: Any,
        *,
        detailed: bool = False,
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
        self._new = event_factory
        self._peak, self._reset = memory
        self._pool: list[Any] = []
        self._marks: list[tuple[Any, int]] = []
        self._reset()

    def tick(self, ctx: int) -> None:
        """Record an event closing ``ctx``'s interval (called at every transition)."""
        ev = self._pool.pop() if self._pool else self._new()
        ev.record()
        self._marks.append((ev, ctx))
        if self.detailed:
            self._memory(ctx)

    def phase(self, ctx: int) -> None:
        """At a phase change: the allocator peak since the last reset belongs to ``ctx``."""
        if not self.detailed:
            self._memory(ctx)

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
