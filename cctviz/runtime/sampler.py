"""The sampler: resource use of a profiled process, per calling context.

``cctviz.profile(sample_hz=10)`` (``cctviz run --sample-hz 10``) starts a
:class:`Sampler` beside the recorder: a daemon thread that wakes
``sample_hz`` times a second and reads, with psutil, the process's

- CPU time (all its threads; ``time.process_time_ns``, the kernel's
  per-process CPU clock to the nanosecond: psutil's ``cpu_times`` counts in
  clock ticks of 10 ms, too coarse for a 100 ms interval),
- resident set size (``memory_info().rss``),
- bytes read and written through files and pipes (``io_counters()``
  ``read_chars``/``write_chars``: what the process asked for in read/write
  calls, page cache or not),
- voluntary context switches (``num_ctx_switches().voluntary``: how often it
  blocked),

and on an NVIDIA GPU, when ``nvidia-ml-py`` is importable and NVML finds a
device, its utilisation and memory used (:class:`_Nvml`; absent otherwise,
nothing is faked).

Attribution
-----------
A sample closes the interval since the previous one and charges that
interval's differences to the context on top of the recorder's stack (the
profiled main thread's current context) at the moment of the sample:

===================  ======  =====================================================
metric               rule    what a context holds
===================  ======  =====================================================
``sampled_time``     sum     wall time (ns) of the intervals charged to it
``cpu_time``         sum     CPU time (ns) the process used in those intervals
``io_read_bytes``    sum     ``read_chars`` read in those intervals (B)
``io_write_bytes``   sum     ``write_chars`` written in those intervals (B)
``ctx_switches``     sum     voluntary context switches in those intervals
``rss_peak``         max     the largest RSS seen at its samples (B)
``gpu_busy_time``    sum     NVML utilisation x interval (ns; GPU only)
``gpu_mem_peak``     max     the largest GPU memory used at its samples (B; GPU only)
``gpu_energy``       sum     NVML power x interval (J; GPU only, where it reports power)
``pcie_tx_bytes``    sum     PCIe bytes the GPU sent in those intervals (B; NVML counters)
``pcie_rx_bytes``    sum     PCIe bytes the GPU received in those intervals (B)
===================  ======  =====================================================

``cpu_util = cpu_time / sampled_time`` (and ``gpu_util`` likewise) is an
average over the context's sampled time, not a sum: the profiler stores it as
a ratio of the two sums, per node (``cpu_util``, own intervals) and per
subtree (``cpu_util (inc)``), with the aggregation rule ``"none"`` (the
model's rule for averages: a ratio is not summed up the tree). It is
computed once, when the profile is written (:func:`cctviz.model.sampled.add_ratios`); a tree
whose sums change later (a filter, an ensemble's mean) keeps the sums, from
which the ratio can be recomputed. 100% is one core busy.

So the attribution is statistical, as any sampler's: an interval is charged
to the context on top at its end, whatever ran before within it. Two things
make it exact where it matters most. User regions (``cctviz.region``,
``prof.region``) take a sample when they are entered and left (about 0.1 ms
each with psutil: meant for coarse regions, not a function called a million
times), so a region's own and inclusive sums cover exactly its time. And
:meth:`Sampler.stop` takes a last sample, so the sums of the whole run add up
to the process's totals between start and stop.

The race: the sampler thread reads ``rec.stack[-1]`` while the main thread
changes the stack. Under the GIL (and in free-threaded builds, whose lists
lock themselves) the read is atomic and gives a context that was on top at
some instant of the read, never a torn value; between the two list operations
of a phase switch (``del stack[k:]`` then ``append``) it may be the parent for
that instant. Charging a whole interval to that context is then a sampling
error of the kind above, no worse. Contexts are recorder ids, which are only
ever appended, so an id read from the stack stays valid.

The series
----------
Every sample is also kept, up to :data:`SERIES_LIMIT` samples (later ones are
counted in ``dropped``, the metrics stay complete): the profile's metadata
``samples`` holds ``ts`` (ns on the profile's clock, ``time.perf_counter_ns``,
the clock of the recorder and of its OTF2 trace), ``context`` (the recorder's
id of the context charged) and one list per track of cumulative or current
values (``cpu_time`` ns, ``rss`` B, ``io_read_bytes`` B, ``io_write_bytes`` B,
``ctx_switches``; ``gpu_util`` %, ``gpu_mem`` B, ``gpu_power`` W and the
cumulative ``pcie_tx_bytes``/``pcie_rx_bytes`` on a GPU), with ``units`` and
``hz``. ``cctviz.read_timeline(run)`` turns them into counter tracks
(:func:`cctviz.readers.cctviz_run.sample_counters`).
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
from collections.abc import Callable
from typing import Any

#: samples kept in the series of a rank (about 3 h at 10 Hz); later ones are counted
SERIES_LIMIT = 100_000

#: per-context metrics -> (unit, aggregation rule)
METRICS: dict[str, tuple[str, str]] = {
    "sampled_time": ("ns", "sum"),
    "cpu_time": ("ns", "sum"),
    "io_read_bytes": ("B", "sum"),
    "io_write_bytes": ("B", "sum"),
    "ctx_switches": ("count", "sum"),
    "rss_peak": ("B", "max"),
    "gpu_busy_time": ("ns", "sum"),
    "gpu_mem_peak": ("B", "max"),
    "gpu_energy": ("J", "sum"),
    "pcie_tx_bytes": ("B", "sum"),
    "pcie_rx_bytes": ("B", "sum"),
}
#: units of the series' tracks
TRACK_UNITS = {
    "cpu_time": "ns",
    "rss": "B",
    "io_read_bytes": "B",
    "io_write_bytes": "B",
    "ctx_switches": "count",
    "gpu_util": "%",
    "gpu_mem": "B",
    "gpu_power": "W",
    "pcie_tx_bytes": "B",
    "pcie_rx_bytes": "B",
}
_CUMULATIVE = ("cpu_time", "io_read_bytes", "io_write_bytes", "ctx_switches")
#: the tracks that count up (the others are gauges: a value at the sample)
CUMULATIVE_TRACKS = (*_CUMULATIVE, "pcie_tx_bytes", "pcie_rx_bytes")
#: the tracks NVML gives (a process without a GPU has none of them)
_GPU_TRACKS = ("gpu_util", "gpu_mem", "gpu_power", "pcie_tx_bytes", "pcie_rx_bytes")


class _Nvml:
    """GPU utilisation and memory through NVML, or None when there is no GPU or no nvidia-ml-py."""

    def __init__(self, handle: Any, nvml: Any) -> None:
        self._h, self._nvml = handle, nvml
        #: NVML field ids of the PCIe byte counters this nvidia-ml-py knows
        self._fields = {
            k: getattr(nvml, v)
            for k, v in (
                ("pcie_tx_bytes", "NVML_FI_DEV_PCIE_COUNT_TX_BYTES"),
                ("pcie_rx_bytes", "NVML_FI_DEV_PCIE_COUNT_RX_BYTES"),
            )
            if hasattr(nvml, v)
        }

    @classmethod
    def open(cls, index: int) -> _Nvml | None:
        try:
            import pynvml as nvml
        except ImportError:
            return None
        try:
            nvml.nvmlInit()
            if nvml.nvmlDeviceGetCount() == 0:
                return None
            n = nvml.nvmlDeviceGetCount()
            return cls(nvml.nvmlDeviceGetHandleByIndex(index % n), nvml)
        except Exception:  # noqa: BLE001 - NVML without a driver or a device: no GPU tracks
            return None

    def read(self) -> dict[str, float]:
        """Utilisation (%) over the driver's last sample period, memory used
        (B), power drawn (W) and the PCIe bytes sent and received since the
        driver started counting (NaN where the device or driver does not tell;
        NVML's cumulative counters, not its 20 ms throughput probe, which would
        hold each sample for 20 ms)."""
        nvml, h = self._nvml, self._h
        vals = {
            "gpu_util": float(nvml.nvmlDeviceGetUtilizationRates(h).gpu),
            "gpu_mem": float(nvml.nvmlDeviceGetMemoryInfo(h).used),
            "gpu_power": math.nan,
            "pcie_tx_bytes": math.nan,
            "pcie_rx_bytes": math.nan,
        }
        try:
            vals["gpu_power"] = nvml.nvmlDeviceGetPowerUsage(h) / 1000.0  # mW
        except Exception:  # noqa: BLE001 - not every device reports power
            pass
        if self._fields:
            try:
                got = nvml.nvmlDeviceGetFieldValues(h, list(self._fields.values()))
                for name, fv in zip(self._fields, got, strict=True):
                    if fv.nvmlReturn == 0:
                        vals[name] = float(fv.value.ullVal)
            except Exception:  # noqa: BLE001 - an older driver: no PCIe counters
                pass
        return vals


class Sampler:
    """Samples this process ``hz`` times a second into ``rec``'s per-context metrics.

    Args:
        rec: the recorder (a :class:`~cctviz.runtime.recorder.Recorder`) whose
            current context each sample is charged to.
        hz: samples per second (> 0).
        gpu_index: the NVML device to read (None: no GPU tracks).
        clock: the recorder's clock (ns).

    Example:
        >>> from cctviz.runtime.recorder import Recorder
        >>> rec = Recorder("demo")
        >>> s = Sampler(rec, hz=50).start()
        >>> s.stop()
        >>> rec.extra["sampled_time"][rec.top] > 0, s.series()["units"]["rss"]
        (True, 'B')
    """

    def __init__(
        self,
        rec: Any,
        hz: float,
        *,
        gpu_index: int | None = None,
        clock: Callable[[], int] = time.perf_counter_ns,
    ) -> None:
        if not hz > 0:
            raise ValueError(f"sample_hz must be > 0, not {hz!r}")
        import psutil

        self.rec = rec
        self.hz = float(hz)
        self._clock = clock
        self._proc = psutil.Process()
        self._gpu = _Nvml.open(gpu_index) if gpu_index is not None else None
        self._lock = threading.RLock()  # a SIGTERM handler may stop() inside sample()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._prev: dict[str, float] = {}
        self._prev_ts = 0
        self.tracks: dict[str, list[float]] = {
            k: [] for k in TRACK_UNITS if self._gpu is not None or k not in _GPU_TRACKS
        }
        self.ts: list[int] = []
        self.context: list[int] = []
        self.dropped = 0
        self.count = 0

    # ------------------------------------------------------------ reading
    def _read(self) -> dict[str, float]:
        p = self._proc
        with p.oneshot():
            io = p.io_counters()
            vals = {
                "cpu_time": float(time.process_time_ns()),
                "rss": float(p.memory_info().rss),
                "io_read_bytes": float(io.read_chars),
                "io_write_bytes": float(io.write_chars),
                "ctx_switches": float(p.num_ctx_switches().voluntary),
            }
        if self._gpu is not None:
            vals.update(self._gpu.read())
        return vals

    def sample(self) -> None:
        """Take one sample now and charge the interval since the last one
        (called by the thread, by user regions at their boundaries, and by :meth:`stop`)."""
        with self._lock:
            ctx = self.rec.stack[-1]  # atomic read; see the module docstring
            now = self._clock()
            vals = self._read()
            dt = now - self._prev_ts
            rec, prev = self.rec, self._prev
            rec.add(ctx, "sampled_time", dt)
            for k in _CUMULATIVE:
                rec.add(ctx, k, vals[k] - prev[k])
            rec.set_max(ctx, "rss_peak", vals["rss"])
            if self._gpu is not None:
                rec.add(ctx, "gpu_busy_time", dt * vals["gpu_util"] / 100.0)
                rec.set_max(ctx, "gpu_mem_peak", vals["gpu_mem"])
                if math.isfinite(vals["gpu_power"]):  # J: the interval at the power read now
                    rec.add(ctx, "gpu_energy", dt * 1e-9 * vals["gpu_power"])
                for k in ("pcie_tx_bytes", "pcie_rx_bytes"):
                    if math.isfinite(vals[k]) and math.isfinite(prev[k]):
                        rec.add(ctx, k, vals[k] - prev[k])
            self._prev, self._prev_ts = vals, now
            self._keep(now, ctx, vals)

    def _keep(self, now: int, ctx: int, vals: dict[str, float]) -> None:
        self.count += 1
        if len(self.ts) >= SERIES_LIMIT:
            self.dropped += 1
            return
        self.ts.append(int(now))
        self.context.append(int(ctx))
        for k, col in self.tracks.items():
            col.append(vals[k])

    # ------------------------------------------------------------ control
    def start(self) -> Sampler:
        """Take the first reading and start the thread."""
        with self._lock:
            self._prev_ts = self._clock()
            self._prev = self._read()
        self._thread = threading.Thread(target=self._run, name="cctviz-sampler", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        period = 1.0 / self.hz
        while not self._stop.wait(period):
            with contextlib.suppress(Exception):  # a failed read skips a sample, never the job
                self.sample()

    def stop(self) -> None:
        """Stop the thread and take a last sample (the sums cover start to stop)."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()
        with contextlib.suppress(Exception):
            self.sample()

    def series(self) -> dict[str, Any]:
        """The samples taken (module docstring), for the profile's metadata."""
        return {
            "hz": self.hz,
            "ts": list(self.ts),
            "context": list(self.context),
            "tracks": {k: list(v) for k, v in self.tracks.items()},
            "units": {k: TRACK_UNITS[k] for k in self.tracks},
            "samples": self.count,
            "dropped": self.dropped,
        }
