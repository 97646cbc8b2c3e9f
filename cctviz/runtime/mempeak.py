"""Memory per context: ``mem_peak`` of torch's CPU allocator, or per context
on CUDA without resetting its peak at every transition (issue 37).

Torch keeps no peak for its CPU allocator, but its profiler sees every
allocation and free (``profile_memory=True``: one ``[memory]`` event each,
with the bytes, signed). :class:`MemoryTracker` runs torch's profiler from the
profiler's start to the end of one step, the **memory step** (the first
measured step, and never the very first step, whose optimizer creates its
states), notes the time of every transition the recorder makes, and at the
end charges each context the most bytes held while it was on top:

    held(t) = the bytes of CPU tensors alive when tracking began
              + the sum of the events' bytes up to t

The first term counts the tensors Python could reach when tracking began
and still can when it ends (each storage once; under ``cctviz run`` tracking
begins before the script, so it is about 0). Not in it: a block torch's C++
side allocated before tracking and holds on its own, and a tensor of then
freed while tracking (the profiler does not know its size, so its free
lowers nothing: counting it would keep it held to the end).

``mem_peak`` (bytes, rule max) is then, per context, the peak of ``held``
over the intervals it was on top in the tracked steps; the inclusive value of
a context is the peak over its whole span. Only the steps up to the memory
step are tracked: the profiler costs about 20% of those steps' time on the
example GPT, nothing after. Off by default (``Profiler(mem_peak=True)``,
``cctviz run --mem-peak``): while it tracks, the job cannot start a torch
profiler of its own.

On CUDA (``device="cuda"``) the same events of the caching allocator give
each context's peak in the memory step, the baseline being
``torch.cuda.memory_allocated()`` when tracking begins: detailed mode's
per-context peaks, where the allocator's own peak would have to be read and
reset at every transition (the CUDA timer reads it per phase).

``profiler``, ``live_tensors`` and ``cuda_allocated`` are injectable so that the attribution is
tested without torch's profiler.
"""

from __future__ import annotations

import gc
import logging
import time
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

log = logging.getLogger("cctviz")


class MemoryTracker:
    """``mem_peak`` per context from an allocator's events, for a
    :class:`~cctviz.runtime.recorder.Recorder` (module docstring).

    Args:
        rec: the recorder; its transitions are noted through :meth:`tick`.
        memory_step: the index (from 0, warm-up steps included) of the last
            step tracked.
        device: which allocator's events charge ``mem_peak``, asked when
            tracking ends: ``"cpu"`` or ``"cuda"``, or a callable giving one
            (the profiler's: ``"cuda"`` once its CUDA timer runs).
        profiler: a context manager whose ``events(device)`` after exit give
            ``(unix ns, signed bytes)`` arrays (default: torch's profiler).
        live_tensors: what the CPU held when tracking began, as weak
            references to tensors (default: the CPU tensors Python can reach);
            those still alive when it ends are the CPU's baseline.
        cuda_allocated: the CUDA allocator's bytes now (default:
            ``torch.cuda.memory_allocated``, 0 before CUDA starts): the CUDA
            baseline, read when tracking begins (exact: every CUDA tensor goes
            through it).
        clock: unix nanoseconds, the profiler's clock.
    """

    def __init__(
        self,
        rec: Any,
        memory_step: int,
        *,
        device: str | Callable[[], str] = "cpu",
        profiler: Any = None,
        live_tensors: Callable[[], list[weakref.ref]] | None = None,
        cuda_allocated: Callable[[], int] | None = None,
        clock: Callable[[], int] = time.time_ns,
    ) -> None:
        self.rec = rec
        self.memory_step = int(memory_step)
        self._device = device
        self._profiler = profiler if profiler is not None else TorchMemoryEvents()
        self._live_tensors = live_tensors or live_cpu_tensors
        self._cuda_allocated = cuda_allocated or _cuda_allocated
        self._before: list[weakref.ref] = []
        self._cuda_base = 0
        self._clock = clock
        self._times: list[int] = []
        self._contexts: list[int] = []
        #: the bytes held when tracking began (of the device charged, once it ends)
        self.baseline = 0
        self.tracking = False

    def start(self) -> MemoryTracker:
        """Note what is held and start the profiler."""
        self._before = self._live_tensors()
        self._cuda_base = int(self._cuda_allocated())
        self._profiler.__enter__()
        self._times.append(self._clock())
        self._contexts.append(-1)  # (the interval before the first tick: no context)
        self.tracking = True
        return self

    def tick(self, ctx: int) -> None:
        """At every transition: ``ctx``'s interval ends now."""
        if self.tracking:
            self._times.append(self._clock())
            self._contexts.append(ctx)

    def step_end(self) -> None:
        """After a step boundary: stop once the memory step has ended."""
        if self.tracking and len(self.rec.steps) > self.memory_step:
            self.finish()

    def finish(self) -> None:
        """Stop the profiler and charge the peaks (also when the run ends
        before the memory step)."""
        if not self.tracking:
            return
        self.tracking = False
        self._profiler.__exit__(None, None, None)
        device = self._device() if callable(self._device) else self._device
        stamps, nbytes = self._profiler.events(device)
        if device == "cuda":
            self.baseline = self._cuda_base
        else:
            self.baseline = storage_bytes(self._before)
        self._before = []
        times = np.asarray(self._times, dtype=np.int64)
        contexts = np.asarray(self._contexts, dtype=np.int64)
        for ctx, peak in peaks_by_context(times, contexts, stamps, nbytes, self.baseline):
            self.rec.set_max(ctx, "mem_peak", peak)


def _cuda_allocated() -> int:
    """The CUDA allocator's bytes now; 0 where CUDA has not started (asking
    does not start it)."""
    import torch

    if not torch.cuda.is_available() or not torch.cuda.is_initialized():
        return 0
    return int(torch.cuda.memory_allocated())


def peaks_by_context(
    times: np.ndarray,
    contexts: np.ndarray,
    stamps: np.ndarray,
    nbytes: np.ndarray,
    baseline: float = 0.0,
) -> list[tuple[int, float]]:
    """Each context's peak of held bytes over its intervals.

    ``times[i]`` ends the interval of ``contexts[i]`` that began at
    ``times[i-1]`` (``contexts[0]`` is the start, owning nothing); an event at
    ``stamps[j]`` of ``nbytes[j]`` (signed) falls in the interval that ends
    after it. Held bytes: ``baseline`` plus the events so far.

    >>> peaks_by_context(np.array([0, 10, 20]), np.array([-1, 5, 6]),
    ...                  np.array([2, 4, 12]), np.array([100, -60, 30]))
    [(5, 100.0), (6, 70.0)]
    """
    n = len(times)
    if n < 2:
        return []
    order = np.argsort(stamps, kind="stable")
    stamps = np.asarray(stamps, dtype=np.int64)[order]
    # held[j]: the bytes held after the first j events (held[0]: the baseline)
    held = baseline + np.cumsum(np.r_[0.0, np.asarray(nbytes, dtype=np.float64)[order]])
    # interval k (1..n-1) runs (times[k-1], times[k]] and begins with the bytes
    # held after the events up to times[k-1]
    peak = held[np.searchsorted(stamps, times[:-1], side="right")]
    inside = np.searchsorted(times, stamps, side="left")  # the interval holding each event
    ok = (inside >= 1) & (inside < n)
    np.maximum.at(peak, inside[ok] - 1, held[1:][ok])
    owners = np.asarray(contexts[1:], dtype=np.int64)
    keep = owners >= 0
    uniq, which = np.unique(owners[keep], return_inverse=True)  # (sorted)
    top = np.full(len(uniq), -np.inf)
    np.maximum.at(top, which, peak[keep])
    return list(zip(uniq.tolist(), top.tolist(), strict=True))


class TorchMemoryEvents:
    """Torch's profiler with ``profile_memory=True``: after it exits,
    :meth:`events` gives one device's allocator events (``"cpu"`` or
    ``"cuda"``) as ``(unix ns, signed bytes)`` arrays."""

    def __init__(self) -> None:
        self._prof: Any = None

    def __enter__(self) -> TorchMemoryEvents:
        import torch
        from torch.autograd.profiler import profile

        if torch._C._autograd._profiler_enabled():
            raise RuntimeError("a torch profiler runs already (the job's own)")
        self._prof = profile(profile_memory=True, use_kineto=True, record_shapes=False)
        self._prof.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._prof.__exit__(None, None, None)

    def events(self, device: str = "cpu") -> tuple[np.ndarray, np.ndarray]:
        from torch.autograd import DeviceType

        want = DeviceType.CUDA if device == "cuda" else DeviceType.CPU
        stamps, nbytes = [], []
        for e in self._prof.kineto_results.events():
            if e.name() == "[memory]" and e.device_type() == want:
                stamps.append(e.start_ns())
                nbytes.append(e.nbytes())
        return np.asarray(stamps, dtype=np.int64), np.asarray(nbytes, dtype=np.int64)


def live_cpu_tensors() -> list[weakref.ref]:
    """Weak references to the CPU tensors Python can reach now."""
    import torch

    found = []
    for obj in gc.get_objects():
        # (type(), not isinstance: some module objects warn when their class is asked)
        if issubclass(type(obj), torch.Tensor) and obj.device.type == "cpu":
            try:
                found.append(weakref.ref(obj))
            except TypeError:  # (a subclass without weak references)
                continue
    return found


def storage_bytes(refs: list[weakref.ref]) -> int:
    """The bytes of the storages under the tensors still alive, each once
    (a freed storage, as FSDP2 leaves its unsharded parameters, holds none)."""
    seen: set[int] = set()
    total = 0
    for ref in refs:
        t = ref()
        if t is None:
            continue
        try:
            storage = t.untyped_storage()
            key, nbytes = storage.data_ptr(), int(storage.nbytes())
        except (RuntimeError, NotImplementedError):  # (freed, sparse, meta, wrappers)
            continue
        if key and key not in seen:
            seen.add(key)
            total += nbytes
    return total
