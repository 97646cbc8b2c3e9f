"""``cctviz.profile``: the in-process profiler, one per rank.

Example (the README runs a complete one)::

    with cctviz.profile(out="runs/today", warmup=1) as prof:
        for x, y in loader:
            loss = model(x, y); loss.backward(); opt.step(); opt.zero_grad()
    cctviz.read(prof.out).profiles

Steps are found by themselves (each ``optimizer.step()`` ends one) unless
you call :meth:`Profiler.step`, which switches to manual marking. Each rank
writes ``rank-NNNNN.cctviz`` into ``out`` when the profiler stops: at the
end of the ``with`` block, when an exception or SIGINT leaves it, on
SIGTERM, and at interpreter exit. Rank 0 also writes ``run.json``. While it
runs, each rank appends its increments to ``out/live/`` every ``flush``
seconds (:mod:`cctviz.runtime.live`), which ``cctviz.watch(out)`` reads.
"""

from __future__ import annotations

import atexit
import contextlib
import datetime as _dt
import logging
import os
import platform
import signal
import socket
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from ..model.formats import (
    ENV_COMPONENT,
    ENV_RANK_OFFSET,
    ENV_WORKFLOW_SIZE,
    LAUNCHER_KEEPS,
    OPTIMIZER_FACTS,
    STATE_FACTS,
    TIMELINE_DIR,
    rank0_facts,
    rank_file,
)
from .live import DEFAULT_FLUSH, LiveWriter
from .recorder import Recorder
from .runfolder import update_run_file
from .trace import DEFAULT_LIMIT, check_limit

log = logging.getLogger("cctviz.runtime")

UNITS = {
    "time": "ns",
    "calls": "count",
    "comm_bytes": "B",
    "bus_bytes": "B",
    "comm_time": "ns",
    "gpu_time": "ns",
    "mem_peak": "B",
    "act_bytes": "B",
    "act_sq_bytes": "B",
    "data_in_bytes": "B",
    "data_out_bytes": "B",
}
#: the kind of the contexts :func:`moved` records data under
K_DATA = "data"

_active: Profiler | None = None


def _env_int(name: str, default: int | None = None) -> int | None:
    v = os.environ.get(name)
    try:
        return int(v) if v is not None else default
    except ValueError:
        return default


#: where a launcher says a process's place: torchrun and cctviz's workflows
#: (``RANK``...), Open MPI's mpirun (``OMPI_COMM_WORLD_*``), MPICH's hydra (``PMI_*``)
_RANK_ENV = ("RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK")
_LOCAL_RANK_ENV = ("LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID")
_WORLD_SIZE_ENV = ("WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE")


def _launcher_int(names: tuple[str, ...], default: int) -> int:
    """The first of the environment variables ``names`` that holds an integer, else ``default``."""
    for name in names:
        v = _env_int(name)
        if v is not None:
            return v
    return default


class Profiler:
    """Records one rank's calling-context tree while training runs.

    Args:
        out: run folder (created); each rank writes ``rank-NNNNN.cctviz`` there.
        mode: ``"light"`` (module, phase and collective contexts; meant to be
            left on) or ``"detailed"`` (adds every aten op as a leaf and
            module attribution inside backward; several times the cost).
        warmup: the first ``warmup`` steps go to a ``(warm-up)`` node instead
            of ``step``.
        per_step: one node per step (``step 0``, ``step 1``, ...) instead of
            one ``step`` node for all of them.
        python_frames: add the user's Python functions as contexts.
        act_bytes: count the bytes autograd saves for backward per context
            (``act_bytes``), through the training thread's saved-tensor hooks
            (about 1.2 µs per saved tensor). Off by default: ``torch.func``'s
            transforms (grad, vjp, jacrev) refuse to run while such hooks are
            pushed, and none are pushed where the job's own are active.
        mem_peak: the most bytes the allocator held per context
            (``mem_peak``; torch's CPU allocator, or CUDA's once the CUDA timer
            runs), from torch's profiler's memory events from the start to the
            end of the first measured step (never the very first step;
            :mod:`cctviz.runtime.mempeak`). Default: on in detailed mode, off in
            light mode (on CUDA, light mode's ``mem_peak`` is then the
            allocator's peak per phase). While it tracks, the job cannot run a
            torch profiler of its own.
        root: name of the root node (default: the script's file name).
        cuda: time with CUDA events and record allocator peaks (default: once
            the program has initialised CUDA; False: never).
        gpu_time: ``"phase"`` (a CUDA event per phase change: ``gpu_time`` of
            phases, regions and steps; the default in light mode) or
            ``"context"`` (an event per transition: every module's own
            ``gpu_time``, about 8 µs of CPU each; the default in detailed mode).
        trace: also write an OTF2 trace of the job into this folder
            (:mod:`cctviz.runtime.trace`; needs ``cctviz[scorep]``). Every rank
            gives the same folder; the last rank to stop writes the archive.
        timeline: trace into ``out/timeline`` (when ``trace`` is not given), so
            that ``cctviz.read_timeline(out)`` finds it.
        timeline_limit: the most transitions a rank's trace keeps (default
            :data:`~cctviz.runtime.trace.DEFAULT_LIMIT`, one million: 24 MB of raw
            events per rank; ``None``: no cap). Past it the trace stops (every
            open context is left at the cut) and the rank's metadata says where
            and how many transitions were dropped; the profile stays complete.
        files: record the files the process opens (audit hooks,
            :mod:`cctviz.runtime.files`): a context ``files`` with the bytes read
            and written, and the opens in the profile's metadata (``files``); on
            in workflows, where components couple through files.
        sample_hz: sample the process's CPU, memory, file/pipe I/O and context
            switches (and an NVIDIA GPU's utilisation when NVML is there) this
            many times a second, charged to the current context
            (:mod:`cctviz.runtime.sampler`: ``cpu_util``, ``rss_peak``,
            ``io_read_bytes``, ``io_write_bytes``...); 0 (the default): no
            sampler.
        flush: seconds between two records of the rank's increments in
            ``out/live/`` (:mod:`cctviz.runtime.live`), so that
            ``cctviz.watch(out)`` reads the run while it runs; 0: none.
        meta: extra metadata stored with the profile.

    Example:
        >>> prof = Profiler(out="/tmp/cctviz-doc", root="demo", mode="detailed")
        >>> prof.status, prof.root, prof.mode
        ('not started', 'demo', 'detailed')
    """

    def __init__(
        self,
        out: str | os.PathLike = "cctviz-run",
        *,
        mode: str = "light",
        warmup: int = 0,
        per_step: bool = False,
        python_frames: bool = False,
        act_bytes: bool = False,
        mem_peak: bool | None = None,
        root: str | None = None,
        cuda: bool | None = None,
        meta: Mapping[str, Any] | None = None,
        trace: str | os.PathLike | None = None,
        timeline: bool = False,
        timeline_limit: int | None = DEFAULT_LIMIT,
        files: bool = False,
        sample_hz: float = 0,
        gpu_time: str | None = None,
        flush: float = DEFAULT_FLUSH,
    ) -> None:
        if mode not in ("light", "detailed"):
            raise ValueError(f"mode must be 'light' or 'detailed', not {mode!r}")
        if gpu_time not in (None, "phase", "context"):
            raise ValueError(f"gpu_time must be 'phase' or 'context', not {gpu_time!r}")
        self.gpu_time = gpu_time or ("context" if mode == "detailed" else "phase")
        if warmup < 0:
            raise ValueError("warmup must be >= 0")
        self.out = Path(out)
        self.mode = mode
        self.warmup = int(warmup)
        self.per_step = per_step
        self.python_frames = python_frames
        self.act_bytes = act_bytes
        self.mem_peak = mode == "detailed" if mem_peak is None else bool(mem_peak)
        #: the allocator events' tracker (:mod:`cctviz.runtime.mempeak`)
        self.memory: Any = None
        self.root = root or (os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "main")
        self.cuda = cuda
        self.meta = dict(meta or {})
        if trace is None and timeline:
            trace = self.out / TIMELINE_DIR
        self.trace = Path(trace) if trace is not None else None
        self.timeline_limit = check_limit(timeline_limit)
        if not (sample_hz >= 0):
            raise ValueError(f"sample_hz must be >= 0 (0: no sampler), not {sample_hz!r}")
        self.sample_hz = float(sample_hz)
        #: the resource sampler while it runs (:mod:`cctviz.runtime.sampler`)
        self.sampler: Any = None
        #: the OTF2 archive's anchor file, once this rank wrote it
        self.trace_archive: Path | None = None
        if self.trace is not None:
            from .trace import ARCHIVE, require_otf2

            require_otf2()
            if (self.trace / f"{ARCHIVE}.otf2").exists():
                raise ValueError(f"{self.trace} holds an OTF2 archive already: give a new folder")
        self.rec: Recorder | None = None
        self.hooks: Any = None
        self.gpu: Any = None
        self.path: Path | None = None
        self.status = "not started"
        self._manual = False
        self._prev_signals: dict[int, Any] = {}
        self._lock = threading.RLock()
        self._deferred_signal: int | None = None
        self._stopping = False
        self._started_wall = ""
        self.files = files
        self._files: Any = None
        if not flush >= 0:
            raise ValueError(f"flush must be >= 0 seconds (0: no live files), not {flush!r}")
        self.flush = float(flush)
        #: the writer of the live increments while the profiler runs
        self.live: LiveWriter | None = None

    # ------------------------------------------------------------ control
    def start(self) -> Profiler:
        """Install the hooks and start the clock."""
        global _active
        if _active is not None and _active is not self:
            raise RuntimeError("another cctviz profiler is running in this process")
        import torch

        from .hooks import TorchHooks

        self.out.mkdir(parents=True, exist_ok=True)
        use_cuda = self.cuda if self.cuda is not None else torch.cuda.is_initialized()
        if use_cuda and not torch.cuda.is_available():
            raise ValueError("cuda=True but CUDA is not available")
        self._started_wall = _dt.datetime.now(_dt.timezone.utc).isoformat()
        if self.trace is not None:
            from .trace import TracingRecorder

            self.rec = TracingRecorder(
                self.root,
                trace_dir=self.trace,
                limit=self.timeline_limit,
                warmup=self.warmup,
                per_step=self.per_step,
            )
        else:
            self.rec = Recorder(self.root, warmup=self.warmup, per_step=self.per_step)
        on_phase = on_step_end = None
        if use_cuda:
            self._attach_gpu()
        if use_cuda or (self.cuda is None and torch.cuda.is_available()):
            # not initialised yet (``cctviz run`` starts before the script): the
            # timer joins at the first phase change after the script's first CUDA call
            on_phase, on_step_end = self._gpu_phase, self._gpu_step_end
        if self.mem_peak:
            on_step_end = self._track_memory(on_step_end)
        self.hooks = TorchHooks(
            self.rec,
            mode=self.mode,
            python_frames=self.python_frames,
            act_bytes=self.act_bytes,
            on_phase=on_phase,
            on_step_end=on_step_end,
        )
        try:
            self.hooks.install()
            from .mpi import MpiHooks

            MpiHooks(self.hooks).install()  # mpi4py's calls, once it is imported
        except Exception as e:  # noqa: BLE001 - never kill the job
            self.hooks.fail(e)
        if self.files:
            from .files import FileLog

            self._files = FileLog(self.rec, self._lock)
            self._files.start()
        if self.sample_hz > 0:
            from .sampler import Sampler

            self.sampler = Sampler(self.rec, self.sample_hz, gpu_index=self._gpu_index()).start()
        self.status = "running"
        _active = self
        if self.flush > 0:
            self.live = LiveWriter(self, self.flush).start()
        self._install_signals()
        atexit.register(self._atexit)
        return self

    # --------------------------------------------------------------- memory
    def _track_memory(self, then: Callable[[], None] | None) -> Callable[[], None]:
        """Start the memory tracker; the step-end callback that stops it after
        the memory step (and then calls ``then``). It charges CUDA's events
        where the CUDA timer runs by then, else the CPU's."""
        from .mempeak import MemoryTracker

        def device() -> str:
            return "cuda" if self.gpu is not None else "cpu"

        tracker = MemoryTracker(self.rec, memory_step=max(self.warmup, 1), device=device)
        try:
            tracker.start()
        except Exception as e:  # noqa: BLE001 - e.g. the job's own torch profiler runs
            log.warning("cctviz: no mem_peak: torch's profiler did not start: %r", e)
            return then
        self.memory = tracker
        self.rec.listen(tracker.tick)

        def step_end() -> None:
            tracker.step_end()
            if then is not None:
                then()

        return step_end

    def _finish_memory(self) -> None:
        if self.memory is not None:
            try:
                self.memory.finish()
            except Exception:  # noqa: BLE001 - never kill the job
                log.exception("cctviz: could not read the CPU memory events")

    # ------------------------------------------------------------------ GPU
    def _attach_gpu(self) -> None:
        from .gpu import CudaTimer

        self.gpu = CudaTimer(
            self.rec, detailed=self.mode == "detailed", per_context=self.gpu_time == "context"
        )
        self.rec.listen(self.gpu.tick)

    def _gpu_ready(self) -> bool:
        """The CUDA timer, attached once the program has initialised CUDA."""
        if self.gpu is None:
            import torch

            if not torch.cuda.is_initialized():
                return False
            self._attach_gpu()
        return True

    def _gpu_phase(self, ctx: int) -> None:
        if self._gpu_ready():
            self.gpu.phase(ctx)

    def _gpu_step_end(self) -> None:
        if self._gpu_ready():
            self.gpu.resolve()

    def _gpu_index(self) -> int | None:
        """The GPU the sampler reads through NVML: the current CUDA device once
        CUDA is initialised, else this process's local rank's (None: no GPU, or
        ``cuda=False``). NVML numbers devices by PCI bus; a CUDA index is the same
        one with ``CUDA_DEVICE_ORDER=PCI_BUS_ID`` and no ``CUDA_VISIBLE_DEVICES``
        (on one GPU always), else the sampler may read another GPU."""
        import torch

        if self.cuda is False or not torch.cuda.is_available():
            return None
        if torch.cuda.is_initialized():
            return torch.cuda.current_device()
        return _env_int("LOCAL_RANK", 0) % max(torch.cuda.device_count(), 1)

    def step(self) -> None:
        """Mark the end of a step (switches off automatic step detection)."""
        if self.hooks is None or not self.hooks.on:
            return
        if not self._manual:
            self._manual = True
            self.hooks.auto_steps = False
            self.rec.manual = True
            if not self.rec.in_step and self.rec._ended_by_optimizer:
                return  # optimizer.step() just ended this step
        self.hooks.end_step()

    @contextlib.contextmanager
    def region(self, name: str) -> Iterator[None]:
        """A named context of your own (a step activity), e.g. ``with prof.region("eval"):``."""
        self.boundary()
        token = self.hooks.region(str(name)) if self.hooks is not None else None
        try:
            yield
        finally:
            if self.hooks is not None:
                self.boundary()
                self.hooks._exit(token)

    def boundary(self) -> None:
        """A sample now, when sampling (user regions call it as they are entered and left)."""
        s = self.sampler
        if s is not None:
            try:
                s.sample()
            except Exception:  # noqa: BLE001 - never kill the job
                log.debug("cctviz: boundary sample failed", exc_info=True)

    def stop(self, status: str = "complete") -> Path | None:
        """Remove the hooks and write this rank's file; returns its path (None if not running)."""
        global _active
        if self.live is not None and self.status == "running":
            self.live.stop_thread()  # not under the lock: the thread never takes it
        with self._lock:
            if self.rec is None or self.status != "running":
                return self.path
            self._stopping = True
            failed = self.hooks.failed if self.hooks is not None else None
            if self.hooks is not None:
                self.hooks.uninstall()
            atexit.unregister(self._atexit)  # (which would keep this profiler alive)
            if self.sampler is not None:
                self.sampler.stop()  # its last sample closes the last interval
            if _active is self:
                _active = None
            status = status.strip().split("\n", 1)[0][:300]
            self.status = status if failed is None else f"{status}; profiler failed: {failed!r}"
            try:
                try:
                    if self._files is not None:
                        self._files.stop()  # before this rank's own files are written
                    self.rec.finish()
                    self._finish_memory()
                    if self.gpu is not None:
                        self.gpu.resolve()
                    meta = self._meta()
                    self.path = self._write(meta)
                except Exception:  # noqa: BLE001 - never kill the job
                    log.exception("cctviz: could not write the profile")
                    self.path = None
                finally:
                    # the last record after the rank file (and rank 0's run.json):
                    # a watch that sees every last record finds the files written
                    if self.live is not None:
                        self.live.close(meta if self.path is not None else self._unwritten())
                if self.trace is not None:
                    try:
                        self._finish_trace()
                    except Exception:  # noqa: BLE001 - never kill the job
                        log.exception("cctviz: could not write the trace")
            finally:
                # only now: a SIGTERM that arrived while writing waited for the files
                self._restore_signals()
            if self._deferred_signal is not None:
                sig, self._deferred_signal = self._deferred_signal, None
                os.kill(os.getpid(), sig)
            return self.path

    def __enter__(self) -> Profiler:
        return self.start()

    def __exit__(self, et: Any, ev: Any, tb: Any) -> None:
        if et is None:
            self.stop("complete")
        elif issubclass(et, KeyboardInterrupt):
            self.stop("interrupted (SIGINT)")
        elif issubclass(et, SystemExit):
            code = getattr(ev, "code", 0)
            self.stop("complete" if code in (0, None) else f"exit {code}")
        else:
            self.stop(f"exception: {et.__name__}: {ev}")

    def _atexit(self) -> None:
        if self.status == "running":
            self.stop("complete (at exit)")

    # ------------------------------------------------------------ signals
    def _install_signals(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for sig in (signal.SIGTERM,):
            try:
                self._prev_signals[sig] = signal.signal(sig, self._on_signal)
            except (ValueError, OSError):
                pass

    def _restore_signals(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for sig, prev in self._prev_signals.items():
            with contextlib.suppress(ValueError, OSError, TypeError):
                signal.signal(sig, prev)
        self._prev_signals.clear()

    def _on_signal(self, signum: int, frame: Any) -> None:
        if self._stopping:  # writing already: finish, then die of it
            self._deferred_signal = signum
            return
        prev = self._prev_signals.get(signum, signal.SIG_DFL)
        name = signal.Signals(signum).name
        self.stop(f"signal {name}")
        if callable(prev):
            prev(signum, frame)
            return
        if prev == signal.SIG_IGN:
            return
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    # -------------------------------------------------------------- output
    def rank_info(self, *, live: bool = False) -> dict[str, Any]:
        """Rank, world size, backend, device and host of this process (``live``:
        asked from another thread, which has no CUDA device of its own: the
        device is left out)."""
        facts = dict(self.hooks.facts) if self.hooks is not None else {}
        rank = facts.get("rank", _launcher_int(_RANK_ENV, 0))
        info: dict[str, Any] = {
            "rank": rank,
            "local_rank": _launcher_int(_LOCAL_RANK_ENV, 0),
            "world_size": facts.get("world_size", _launcher_int(_WORLD_SIZE_ENV, 1)),
            "backend": facts.get("backend", "mpi" if "mpi" in facts else "none"),
            "hostname": socket.gethostname(),
            "pid": os.getpid(),
            "strategy": facts.get("strategy", "none"),
        }

        component = os.environ.get(ENV_COMPONENT)
        if component:  # a workflow's process: numbered across the workflow
            info["component"] = component
            info["component_rank"] = rank
            info["rank"] = _env_int(ENV_RANK_OFFSET, 0) + int(rank)
            if os.environ.get(ENV_WORKFLOW_SIZE):
                info["workflow_size"] = _env_int(ENV_WORKFLOW_SIZE, 0)
        for k in (
            "params",
            "model",
            "ddp_comm_hook",
            "model_spec",
            "bucket_bytes",
            "mpi",
            *STATE_FACTS,
            *OPTIMIZER_FACTS,
            "module_shapes",
        ):
            if k in facts:
                info[k] = facts[k]
        import torch

        info["torch_version"] = torch.__version__
        if live:
            return info
        if self.gpu is not None:
            dev = torch.cuda.current_device()
            info["device"] = f"cuda:{dev} ({torch.cuda.get_device_name(dev)})"
        else:
            info["device"] = "cpu"
        return info

    def tree(self):
        """The tree recorded so far (a snapshot; the profiler keeps running)."""
        return self._tree(self._meta()) if self.rec is not None else None

    def _tree(self, meta: dict[str, Any]):
        tree = self.rec.to_tree(meta)
        if self.sampler is not None:  # the averages, from the sampled sums
            from ..model.sampled import add_ratios

            tree = add_ratios(tree)
        return tree

    def _meta(self, *, live: bool = False) -> dict[str, Any]:
        """The rank's metadata; ``live``: as far as another thread may read it
        while the rank runs (no device, no trace facts, no sampled series)."""
        rec = self.rec
        steps = [s for s in rec.steps if not s[2]]
        info = self.rank_info(live=live)
        meta: dict[str, Any] = {
            **info,
            "profile": f"{info['component']} rank {info['component_rank']}"
            if "component" in info
            else f"rank {info['rank']}",
            "status": self.status,
            "mode": self.mode,
            "warmup": self.warmup,
            "steps": len(steps),
            "partial_steps": rec.partial_steps,
            "step_ns": [int(b - a) for a, b, _w in steps],
            "warmup_step_ns": [int(b - a) for a, b, w in rec.steps if w],
            "started": self._started_wall,
            "python": platform.python_version(),
            "command": " ".join(sys.argv),
            "units": dict(UNITS),
            "flush": self.flush,
            **self.meta,
        }
        if self._files is not None and not live:  # a workflow matches them by path
            meta.update(self._files.facts())
        if getattr(rec, "tracing", False) and not live:  # how much the trace holds
            meta.update(rec.timeline_facts())
        elif getattr(rec, "raw_stem", None) is not None:  # where a watch reads the trace so far
            meta["trace_raw"] = str(Path(rec.raw_stem).resolve())
        if self.sampler is not None:
            from .sampler import METRICS

            meta["units"].update({m: u for m, (u, _r) in METRICS.items()})
            meta["sample_hz"] = self.sample_hz
            if not live:
                meta["samples"] = self.sampler.series()
        return meta

    def _unwritten(self) -> dict[str, Any]:
        """The last live record's metadata when the rank file could not be written."""
        meta = self._meta(live=True)
        meta["status"] = f"{self.status}; the rank file was not written"
        return meta

    def _write(self, meta: dict[str, Any]) -> Path:
        from ..writers import write

        tree = self._tree(meta)
        path = rank_file(self.out, int(meta["rank"]))
        write(tree, path)  # atomic: temp file + rename
        if int(meta["rank"]) == 0:
            finished = _dt.datetime.now(_dt.timezone.utc).isoformat()
            update_run_file(self.out, rank0_facts(meta, finished), keep=LAUNCHER_KEEPS)
        return path

    def _finish_trace(self) -> None:
        from .trace import merge_when_complete

        info = self.rank_info()
        if self.sampler is not None:  # the samples go in as OTF2 metric records
            info["samples"] = self.sampler.series()
        self.rec.close_trace(info)
        self.trace_archive = merge_when_complete(self.trace)


def profile(out: str | os.PathLike = "cctviz-run", **kw: Any) -> Profiler:
    """A :class:`Profiler` to use as a context manager (see its arguments).

    >>> import cctviz
    >>> p = cctviz.profile(out="/tmp/unused", mode="light", warmup=2)
    >>> (p.mode, p.warmup, p.status)
    ('light', 2, 'not started')
    """
    return Profiler(out, **kw)


def active() -> Profiler | None:
    """The running profiler of this process, if any."""
    return _active


def moved(nbytes: int, channel: str, *, direction: str = "out") -> None:
    """Say that this process moved ``nbytes`` through ``channel``, a way cctviz
    does not see by itself (a queue, a database, a socket of your own): a
    context named ``channel`` (kind ``data``) under the current one counts the
    call and adds the bytes to ``data_out_bytes`` or ``data_in_bytes`` (B,
    summed). Without a running profiler it does nothing.

    Args:
        nbytes: bytes moved (>= 0).
        channel: where they went or came from ("queue:snapshots", "redis").
        direction: ``"out"`` (sent, written) or ``"in"`` (received, read).

    Example:
        >>> import cctviz
        >>> cctviz.moved(4096, "queue:snapshots")  # no profiler: nothing recorded
    """
    if direction not in ("in", "out"):
        raise ValueError(f"moved: direction is 'in' or 'out', not {direction!r}")
    n = int(nbytes)
    if n < 0:
        raise ValueError(f"moved: nbytes must be >= 0, not {nbytes!r}")
    prof = _active
    if prof is None or prof.rec is None or prof.status != "running":
        return
    with prof._lock:
        ctx = prof.rec.leaf_here(str(channel), K_DATA)
        prof.rec.add(ctx, f"data_{direction}_bytes", n)


class region(contextlib.ContextDecorator):  # noqa: N801 (used like a function)
    """A calling context of your own, in any program a profiler runs in: a
    context manager and a decorator. Without a running profiler it does nothing
    (so a workflow's components can keep their regions when not profiled).

    Args:
        name: the context's name (a node of kind ``region`` under the current
            context: a step, a phase, or the root outside steps).

    Example:
        >>> import cctviz, time
        >>> with cctviz.region("load"):  # no profiler: nothing recorded
        ...     time.sleep(0)
        >>> @cctviz.region("solve")
        ... def solve(n):
        ...     return sum(range(n))
        >>> solve(10)
        45
    """

    def __init__(self, name: str) -> None:
        self.name = str(name)
        self._open: list[tuple[Profiler, int | None]] = []  # per entry, nested calls too

    def __enter__(self) -> region:
        prof = _active
        if prof is not None and prof.hooks is not None and prof.status == "running":
            prof.boundary()
            self._open.append((prof, prof.hooks.region(self.name)))
        else:
            self._open.append((None, None))  # type: ignore[arg-type]
        return self

    def __exit__(self, *exc: object) -> bool:
        prof, token = self._open.pop()
        if prof is not None and prof.hooks is not None:
            prof.boundary()
            prof.hooks._exit(token)
        return False
