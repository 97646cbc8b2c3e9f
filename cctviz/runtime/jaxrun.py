"""``cctviz run`` for JAX programs: each process traced by ``jax.profiler``.

``cctviz run [--nproc-per-node N] [--out DIR] [--jax] prog.py [args]`` starts ``N``
processes of ``prog.py`` on this machine (no torch needed) and profiles each with
``jax.profiler``: process ``k`` writes ``DIR/xplane/rank-k.xplane.pb`` (an XPlane
file, :mod:`cctviz.readers.xplane`) and ``DIR/run.json`` says the job
(``framework: "jax"``). ``cctviz.read(DIR)`` gives an Ensemble of the processes'
devices and host threads (device > jitted function > HLO module > HLO op, the
collectives with their bytes), ``cctviz.read_timeline(DIR)`` their timeline, each
collective matched across the processes (:func:`cctviz.ops.collectives.instances`).

A script is taken for a JAX program where it imports jax and not torch (or with
``--jax``). What a process is told, as torchrun tells its workers: ``RANK``,
``LOCAL_RANK``, ``WORLD_SIZE``; and ``jax.distributed.initialize()`` called
without arguments gets the coordinator (``127.0.0.1``, a free port, bound to
127.0.0.1 only), the number of processes and this one's id, so the program runs
unchanged under ``cctviz run`` and under a cluster's launcher. The trace starts
when JAX starts its backends (the program's first computation: its own
``XLA_FLAGS`` and ``jax.config`` settings made before hold) or when the process
joins the job (``jax.distributed.initialize``: a trace started before would
start the backends first, which initialize refuses).
A program that runs ``jax.profiler`` itself keeps its trace: that process is not
traced (said). Steps are the program's ``jax.profiler.StepTraceAnnotation``; a
trace without them is said to have none.

Only one machine (``--nnodes`` other than 1 is refused: start each machine's
processes with their cluster's launcher and ``jax.profiler`` there).

>>> looks_like_jax("import jax\\nimport jax.numpy as jnp\\n")
True
>>> looks_like_jax("import jax\\nimport torch\\n")
False
"""

from __future__ import annotations

import argparse
import datetime as _dt
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..model.formats import XPLANE_DIR, xplane_file, xplane_files

_IMPORTS_JAX = re.compile(r"^\s*(?:import jax\b|from jax\b)", re.M)
_IMPORTS_TORCH = re.compile(r"^\s*(?:import torch\b|from torch\b)", re.M)


class JaxRunError(ValueError):
    """A ``cctviz run`` of a JAX program that cannot start (said, exit code 2)."""


def looks_like_jax(source: str) -> bool:
    """Whether a script's text imports jax and not torch."""
    return bool(_IMPORTS_JAX.search(source)) and not _IMPORTS_TORCH.search(source)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# ------------------------------------------------------------------ launcher
def run_jax(
    script: str, script_args: Sequence[str], nproc: int, out: Path, argv: Sequence[str]
) -> int:
    """Start ``nproc`` profiled processes of ``script`` and wait for them; the
    exit code is the job's (the first failing process's, else 0)."""
    from .runfolder import update_run_file

    if not Path(script).is_file():
        raise JaxRunError(f"{script}: no such script")
    out.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(out / XPLANE_DIR, ignore_errors=True)
    coordinator = f"127.0.0.1:{_free_port()}"
    update_run_file(out, {
        "run": out.name, "command": " ".join(["cctviz", "run", *argv]), "framework": "jax",
        "nnodes": "1", "nproc_per_node": str(nproc), "expected_world_size": nproc,
        "launched": _dt.datetime.now(_dt.timezone.utc).isoformat(),
    })  # fmt: skip
    print(
        f"cctviz: profiling {script} (JAX, {nproc} process(es)) into {out}/",
        file=sys.stderr,
        flush=True,
    )
    procs = []
    for rank in range(nproc):
        env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(nproc))
        cmd = [sys.executable, "-m", "cctviz.runtime.jaxrun", "--out", str(out),
               "--rank", str(rank), "--world", str(nproc), "--coordinator", coordinator,
               script, *script_args]  # fmt: skip
        procs.append(subprocess.Popen(cmd, env=env))
    codes = [p.wait() for p in procs]
    code = next((c for c in codes if c != 0), 0)
    update_run_file(
        out, {"ended": _dt.datetime.now(_dt.timezone.utc).isoformat(), "exit_code": code}
    )
    got = xplane_files(out)
    if code:
        print(f"cctviz: the job failed (exit codes {codes})", file=sys.stderr)
    if got and not any(b"step_num" in p.read_bytes() for p in got.values()):  # the stat's name
        print(
            "cctviz: the program marks no steps (jax.profiler.StepTraceAnnotation): "
            "the run has none",
            file=sys.stderr,
        )
    print(
        f"cctviz: {len(got)} XPlane file(s) in {out / XPLANE_DIR}/; look at them with "
        f"`cctviz tree {out}`",
        file=sys.stderr,
    )
    return code


# -------------------------------------------------------------------- worker
class _Trace:
    """This process's jax.profiler trace: started once, written to the run folder."""

    def __init__(self, out: Path, rank: int) -> None:
        self.out, self.rank = out, rank
        self.tmp: Path | None = None
        self.started = self.starting = False
        self.said = ""

    def start(self) -> None:
        import jax

        if self.started or self.starting or self.said:
            return
        self.starting = True  # start_trace initializes the backends: no second start
        self.tmp = Path(tempfile.mkdtemp(prefix="cctviz-jax-"))
        try:
            jax.profiler.start_trace(str(self.tmp))
        except RuntimeError as e:  # the program's own trace runs: it keeps it
            self.said = f"jax.profiler already runs in the program ({e}); not traced"
            return
        finally:
            self.starting = False
        self.started = True

    def stop(self) -> None:
        import jax

        if not self.started:
            return
        self.started = False
        jax.profiler.stop_trace()
        found = sorted(self.tmp.glob("plugins/profile/*/*.xplane.pb")) if self.tmp else []
        if found:
            dest = xplane_file(self.out, self.rank)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(str(found[-1]), dest)
        shutil.rmtree(self.tmp or "", ignore_errors=True)


def _patch_initialize(trace: _Trace, coordinator: str, world: int, rank: int) -> None:
    """``jax.distributed.initialize()`` without arguments joins this job (its
    coordinator on 127.0.0.1), then starts the trace."""
    import jax

    original = jax.distributed.initialize

    def initialize(
        coordinator_address: str | None = None,
        num_processes: int | None = None,
        process_id: int | None = None,
        *args: Any,
        **kw: Any,
    ) -> None:
        given = coordinator_address is not None
        if not given:
            kw.setdefault("coordinator_bind_address", coordinator)
        original(
            coordinator_address if given else coordinator,
            world if num_processes is None else num_processes,
            rank if process_id is None else process_id,
            *args,
            **kw,
        )
        trace.start()

    jax.distributed.initialize = initialize


def _start_with_the_backends(trace: _Trace) -> bool:
    """Start the trace once JAX's backends are up (the program's own settings,
    ``XLA_FLAGS`` or ``jax_platforms``, made before its first computation, hold);
    False where this jax has no ``xla_bridge.backends`` to follow."""
    try:
        from jax._src import xla_bridge
    except ImportError:
        return False
    original = getattr(xla_bridge, "backends", None)
    if original is None:
        return False

    def backends() -> Any:
        made = original()
        trace.start()
        return made

    xla_bridge.backends = backends
    return True


def worker_main(argv: Sequence[str] | None = None) -> None:
    """One process of a JAX run: the script, traced (module docstring)."""
    import runpy

    p = argparse.ArgumentParser(prog="cctviz.runtime.jaxrun")
    p.add_argument("--out", required=True)
    p.add_argument("--rank", type=int, required=True)
    p.add_argument("--world", type=int, required=True)
    p.add_argument("--coordinator", required=True)
    p.add_argument("script")
    p.add_argument("args", nargs=argparse.REMAINDER)
    a = p.parse_args(argv)
    trace = _Trace(Path(a.out), a.rank)
    _patch_initialize(trace, a.coordinator, a.world, a.rank)
    if not _start_with_the_backends(trace) and a.world == 1:
        trace.start()
    sys.argv = [a.script, *a.args]
    sys.path[0] = os.path.dirname(os.path.abspath(a.script))
    try:
        runpy.run_path(a.script, run_name="__main__")
    finally:
        if trace.said:
            print(f"cctviz: process {a.rank}: {trace.said}", file=sys.stderr)
        trace.stop()


if __name__ == "__main__":
    worker_main()
