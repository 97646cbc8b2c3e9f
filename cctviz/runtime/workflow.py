"""``cctviz run --workflow workflow.toml``: a coupled workflow, every process profiled.

A workflow file lists components; each runs a Python command on some processes::

    [component.sim]
    command = ["python", "sim.py", "--steps", "40"]
    processes = 2
    [component.train]
    command = ["python", "train.py"]
    processes = 2
    torch = true

Keys of a component: ``command`` (a list: ``python`` (or ``python3``) then a
script and its arguments, or ``-m module``), ``processes`` (default 1),
``torch`` (a torch.distributed job, launched as ``cctviz run`` launches one:
torchrun, one rendezvous per component; default false: plain processes, each
told its place by ``RANK``, ``WORLD_SIZE`` and ``LOCAL_RANK``), ``mpi`` (an
MPI job: the processes are started by one ``mpirun -n N``, Open MPI's or
MPICH's, found on ``PATH``; each learns its place from the MPI launcher's
variables; as root Open MPI is given ``--allow-run-as-root``, and always
``--oversubscribe``, since the components share the machine; mpi4py's calls
are recorded, :mod:`cctviz.runtime.mpi`), ``env`` (extra environment
variables) and ``cwd`` (relative to the workflow file's folder, where
commands run by default). ``{out}`` in a command's arguments is the run
folder (a staging folder inside it, say: ``"{out}/stage"``).

Every process records the files it opens (:mod:`cctviz.runtime.files`), so
that data moved between components through files can be matched by path, and
is sampled ``sample_hz`` times a second (default 10: CPU, memory, I/O per
context, :mod:`cctviz.runtime.sampler`).

All components start together and are profiled into one run folder: one
profile per process, numbered across the workflow in the file's order (the
profile's ``rank``), with ``component`` and ``component_rank`` (its rank within
the component) among the profiles' columns (``cctviz.read(run).profiles``).
When a component fails (a process exits non-zero), it is flagged in
``run.json`` (``components``) and, after ``grace`` seconds, the others are
stopped (SIGTERM: each process writes its profile as it stops), so that what
they measured is kept, as for a crashed rank of one job.

``--timeline`` (or ``--trace DIR``) traces every process into one OTF2
archive (``OUT/timeline``, :mod:`cctviz.runtime.trace`): a location per
process named ``<component> rank <k>`` with the properties
``cctviz::component`` and ``cctviz::component_rank`` (columns of the
profiles read back), each component's torch.distributed communicators of its
own, and the samples as OTF2 metric records. The last process to finish
writes it, or the launcher after a failure; ``cctviz.read_timeline(OUT)``
reads it with the sampled counter tracks, lanes grouped by component.

Not yet: MPI message records in the archive, MPI components on several nodes
(``mpirun`` starts them on this one).
"""

from __future__ import annotations

import datetime as _dt
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..model.formats import ENV_COMPONENT, ENV_RANK_OFFSET, ENV_WORKFLOW_SIZE, TIMELINE_DIR
from .launch import LaunchError
from .live import DEFAULT_FLUSH, parse_flush

#: samples a second of each process (CPU, memory, I/O: :mod:`cctviz.runtime.sampler`)
SAMPLE_HZ = 10.0
#: seconds the others keep running after a component failed
GRACE_S = 10.0
_PYTHONS = ("python", "python3", "python3.10", "python3.11", "python3.12", "python3.13")
_KEYS = {"command", "processes", "torch", "mpi", "env", "cwd"}
#: the variables that tell plain processes their place: not given to an MPI job,
#: whose processes read their launcher's own
_PLACE = ("RANK", "LOCAL_RANK", "WORLD_SIZE")


@dataclass
class Component:
    """One component of a workflow (module docstring)."""

    name: str
    command: list[str]
    processes: int = 1
    torch: bool = False
    env: dict[str, str] = field(default_factory=dict)
    cwd: Path = Path(".")
    mpi: bool = False

    @property
    def target(self) -> tuple[bool, str, list[str]]:
        """``(is_module, script or module, arguments)`` of the Python command."""
        rest = self.command[1:]
        if rest[0] == "-m":
            return True, rest[1], rest[2:]
        return False, rest[0], rest[1:]


def load_workflow(path: str | os.PathLike) -> list[Component]:
    """The components of a workflow file, checked (errors name the file and the
    component).

    Example:
        >>> import tempfile, pathlib
        >>> d = pathlib.Path(tempfile.mkdtemp())
        >>> _ = (d / "sim.py").write_text("print('simulating')")
        >>> _ = (d / "wf.toml").write_text(
        ...     '[component.sim]\\ncommand = ["python", "sim.py"]\\nprocesses = 2\\n')
        >>> [(c.name, c.processes, c.torch) for c in load_workflow(d / "wf.toml")]
        [('sim', 2, False)]
    """
    path = Path(path)
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        try:
            import tomli as tomllib  # type: ignore[no-redef]
        except ModuleNotFoundError:
            raise LaunchError("--workflow: needs Python 3.11 or the tomli package") from None
    try:
        doc = tomllib.loads(path.read_text())
    except OSError as e:
        raise LaunchError(f"{path}: cannot read the workflow file ({e.strerror})") from None
    except tomllib.TOMLDecodeError as e:
        raise LaunchError(f"{path}: not TOML ({e})") from None
    table = doc.get("component")
    if not isinstance(table, Mapping) or not table:
        raise LaunchError(f"{path}: no [component.NAME] table")
    return [_component(path, name, spec) for name, spec in table.items()]


def _component(path: Path, name: str, spec: Any) -> Component:
    where = f"{path}: component {name!r}"
    if not isinstance(spec, Mapping):
        raise LaunchError(f"{where}: expected a table of keys")
    unknown = set(spec) - _KEYS
    if unknown:
        raise LaunchError(f"{where}: unknown key(s) {sorted(unknown)}; known: {sorted(_KEYS)}")
    cmd = spec.get("command")
    if not (isinstance(cmd, list) and len(cmd) >= 2 and all(isinstance(x, str) for x in cmd)):
        raise LaunchError(f"{where}: command must be a list of strings, e.g. ['python', 'x.py']")
    if Path(cmd[0]).name not in _PYTHONS and cmd[0] != sys.executable:
        raise LaunchError(f"{where}: only Python commands are profiled, not {cmd[0]!r}")
    if cmd[1] == "-m" and len(cmd) < 3:
        raise LaunchError(f"{where}: '-m' needs a module name")
    n = spec.get("processes", 1)
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise LaunchError(f"{where}: processes must be a positive integer, not {n!r}")
    use_torch = spec.get("torch", False)
    if not isinstance(use_torch, bool):
        raise LaunchError(f"{where}: torch must be true or false")
    use_mpi = spec.get("mpi", False)
    if not isinstance(use_mpi, bool):
        raise LaunchError(f"{where}: mpi must be true or false")
    if use_mpi and use_torch:
        raise LaunchError(f"{where}: a component is launched by torchrun or by mpirun, not both")
    env = spec.get("env", {})
    if not isinstance(env, Mapping):
        raise LaunchError(f"{where}: env must be a table of strings")
    cwd = (path.parent / str(spec.get("cwd", "."))).resolve()
    if not cwd.is_dir():
        raise LaunchError(f"{where}: cwd {cwd} is not a folder")
    env = {str(k): str(v) for k, v in env.items()}
    c = Component(name, list(cmd), n, use_torch, env, cwd, use_mpi)
    is_module, script, _ = c.target
    if not is_module and not (cwd / script).is_file():
        raise LaunchError(f"{where}: no script {script} in {cwd}")
    return c


def _worker(c: Component, out: Path, mode: str, extra: list[str]) -> list[str]:
    """The profiled command line of one process (after the launcher's part)."""
    is_module, script, args = c.target
    args = [x.replace("{out}", str(out.resolve())) for x in args]
    w = ["-m", "cctviz.runtime.worker", "--out", str(out), "--mode", mode, "--files", *extra]
    w += ["--module"] if is_module else []
    return [*w, script, *args]


def _commands(
    components: Sequence[Component], out: Path, mode: str, extra: list[str]
) -> list[tuple[Component, int, list[str], dict[str, str]]]:
    """(component, local rank or -1 for a launcher (torchrun, mpirun), argv, env) of every
    process; ``extra``: the worker's options (sampler, trace); a LaunchError
    before anything starts when an MPI component has no mpirun."""
    procs = []
    offset = 0
    total = str(sum(c.processes for c in components))
    for c in components:
        env = {**os.environ, **c.env, ENV_COMPONENT: c.name, ENV_RANK_OFFSET: str(offset)}
        env[ENV_WORKFLOW_SIZE] = total
        worker = _worker(c, out, mode, extra)
        if c.torch:
            argv = [sys.executable, "-m", "torch.distributed.run", "--standalone"]
            argv += ["--nproc-per-node", str(c.processes), *worker]
            procs.append((c, -1, argv, env))
        elif c.mpi:
            env = {k: v for k, v in env.items() if k not in _PLACE}
            argv = [*mpirun(c, env), "-n", str(c.processes), sys.executable, *worker]
            procs.append((c, -1, argv, env))
        else:
            for r in range(c.processes):
                e = {**env, "RANK": str(r), "LOCAL_RANK": str(r), "WORLD_SIZE": str(c.processes)}
                procs.append((c, r, [sys.executable, *worker], e))
        offset += c.processes
    return procs


def mpirun(c: Component, env: Mapping[str, str]) -> list[str]:
    """The ``mpirun`` command (before ``-n N``) of MPI component ``c``, found on the
    ``PATH`` of ``env``: Open MPI's gets ``--oversubscribe`` (the components share
    the machine), ``--allow-run-as-root`` as root, and ``-x`` for the variables cctviz
    and the component set (so they reach processes on other nodes too).

    Example:
        >>> c = Component("sim", ["python", "sim.py"], 2, mpi=True)
        >>> try:
        ...     mpirun(c, {"PATH": "/nowhere"})
        ... except LaunchError as e:
        ...     print(str(e)[:50])
        component 'sim': mpi = true needs mpirun (Open MPI
    """
    path = env.get("PATH", "")
    exe = shutil.which("mpirun", path=path) or shutil.which("mpiexec", path=path)
    if exe is None:
        raise LaunchError(
            f"component {c.name!r}: mpi = true needs mpirun (Open MPI or MPICH) on PATH, "
            f"and there is none (PATH={path})"
        )
    if not _is_open_mpi(exe):
        return [exe]  # MPICH's hydra passes the whole environment by default
    argv = [exe, "--oversubscribe"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        argv.append("--allow-run-as-root")
    for k in (ENV_COMPONENT, ENV_RANK_OFFSET, *c.env):
        argv += ["-x", k]
    return argv


def _is_open_mpi(exe: str) -> bool:
    """Whether ``exe`` is Open MPI's launcher (it says so in ``--version``)."""
    try:
        p = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "Open MPI" in p.stdout + p.stderr


def run_workflow(
    path: str | os.PathLike,
    out: str | os.PathLike,
    *,
    mode: str = "light",
    sample_hz: float = SAMPLE_HZ,
    grace: float = GRACE_S,
    trace: str | os.PathLike | None = None,
    timeline_limit: int | None = None,
    flush: float | None = None,
) -> int:
    """Run the workflow of ``path`` with every process profiled into ``out``;
    returns 0 when every component succeeded, else 1 (module docstring).
    ``trace``: the folder of the workflow's OTF2 archive (None: no trace),
    each process capped at ``timeline_limit`` transitions (None: the runtime's
    default cap, :data:`cctviz.runtime.trace.DEFAULT_LIMIT`). ``flush``: seconds
    between two live records of each process (:mod:`cctviz.runtime.live`;
    default 1, 0: none)."""
    components = load_workflow(path)
    out = Path(out).resolve()  # the processes run in their components' folders
    extra = ["--sample-hz", str(sample_hz)] if sample_hz > 0 else []
    extra += ["--flush", str(DEFAULT_FLUSH if flush is None else flush)]
    if trace is not None:
        from .launch import finish_trace, parse_limit, prepare_trace

        trace = Path(trace).resolve()
        prepare_trace(trace, clean=True)
        limit = timeline_limit if timeline_limit is not None else parse_limit(None)
        extra += ["--trace", str(trace), "--timeline-limit", str(limit)]
    out.mkdir(parents=True, exist_ok=True)
    commands = _commands(components, out, mode, extra)  # a LaunchError before anything runs
    from .runfolder import update_run_file

    total = sum(c.processes for c in components)
    update_run_file(
        out,
        {
            "run": out.name,
            "workflow": str(Path(path).resolve()),
            "command": " ".join(["cctviz", "run", "--workflow", str(path)]),
            "expected_world_size": total,
            "mode": mode,
            "launched": _dt.datetime.now(_dt.timezone.utc).isoformat(),
            "components": _facts(components),
            **({"trace": str(trace), "timeline_limit": limit} if trace is not None else {}),
        },
    )
    print(f"cctviz: workflow {path} ({total} processes) into {out}/", file=sys.stderr, flush=True)
    running = [
        (c, subprocess.Popen(argv, env=env, cwd=c.cwd, start_new_session=True))
        for c, _, argv, env in commands
    ]
    status = _wait(running, grace)
    if trace is not None:
        finish_trace(trace)
    facts = {n: {**f, **status[n]} for n, f in _facts(components).items()}
    failed = [n for n, s in status.items() if s["status"] != "complete"]
    # "ended": every process is gone (a watch takes a rank without its last record as cut)
    ended = _dt.datetime.now(_dt.timezone.utc).isoformat()
    update_run_file(out, {"components": facts, "ended": ended, "exit_code": 1 if failed else 0})
    for n in failed:
        print(f"cctviz: component {n}: {status[n]['status']}", file=sys.stderr)
    return 1 if failed else 0


def _facts(components: Sequence[Component]) -> dict[str, dict[str, Any]]:
    """run.json's ``components``: per component its processes, the rank (in
    the workflow's numbering) of its first and its launcher."""
    out, first = {}, 0
    for c in components:
        launcher = "torchrun" if c.torch else "mpirun" if c.mpi else "cctviz"
        out[c.name] = {"processes": c.processes, "first_rank": first, "launcher": launcher}
        first += c.processes
    return out


def _wait(running: list[tuple[Component, subprocess.Popen]], grace: float) -> dict[str, dict]:
    """Wait for every process; once one fails, stop the others after ``grace``
    seconds. Per component: ``status`` (complete, failed (exit N), stopped) and
    the exit codes."""
    codes: dict[int, int] = {}
    failed_at: float | None = None
    stopped: set[int] = set()
    while len(codes) < len(running):
        for k, (_, p) in enumerate(running):
            if k not in codes and p.poll() is not None:
                codes[k] = p.returncode
                if p.returncode != 0 and k not in stopped and failed_at is None:
                    failed_at = time.monotonic()
        if failed_at is not None and time.monotonic() - failed_at >= grace:
            for k, (_, p) in enumerate(running):
                if k not in codes and k not in stopped:
                    stopped.add(k)
                    _terminate(p)
        time.sleep(0.05)
    out: dict[str, dict] = {}
    for k, (c, _) in enumerate(running):
        s = out.setdefault(c.name, {"status": "complete", "exit": []})
        s["exit"].append(codes[k])
        if k in stopped and s["status"] == "complete":
            s["status"] = "stopped (another component failed)"
        elif codes[k] != 0 and k not in stopped:
            s["status"] = _failure(codes[k])
    return out


def _failure(code: int) -> str:
    """How a process ended that did not succeed (a negative code: the signal).

    >>> _failure(3), _failure(-9)
    ('failed (exit 3)', 'killed (SIGKILL)')
    """
    if code < 0:
        try:
            return f"killed ({signal.Signals(-code).name})"
        except ValueError:
            return f"killed (signal {-code})"
    return f"failed (exit {code})"


def _terminate(p: subprocess.Popen) -> None:
    """SIGTERM to the process's group (a torchrun launcher and its workers)."""
    try:
        os.killpg(p.pid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        pass


def workflow_main(argv: Sequence[str]) -> int:
    """``cctviz run --workflow FILE [--out DIR] [--mode M] [--sample-hz HZ] [--grace S]
    [--timeline | --trace DIR] [--timeline-limit N] [--flush S]``."""
    import argparse

    p = argparse.ArgumentParser(prog="cctviz run --workflow", add_help=False)
    p.add_argument("--workflow", required=True)
    p.add_argument("--out", default=None)
    p.add_argument("--mode", default="light", choices=("light", "detailed"))
    p.add_argument("--grace", type=float, default=GRACE_S)
    p.add_argument("--sample-hz", type=float, default=SAMPLE_HZ)
    p.add_argument("--trace", default=None)
    p.add_argument("--timeline", action="store_true")
    p.add_argument("--timeline-limit", default=None)
    p.add_argument("--flush", default=None)
    try:
        a, extra = p.parse_known_args(list(argv))
    except SystemExit:
        raise LaunchError(
            "--workflow FILE [--out DIR] [--mode light|detailed] [--grace S] [--sample-hz HZ]"
            " [--timeline | --trace DIR] [--timeline-limit N] [--flush S]"
        ) from None
    if extra:
        raise LaunchError(f"--workflow: options not known with a workflow: {extra}")
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    out = a.out or f"cctviz-run-{Path(a.workflow).stem}-{stamp}"
    if a.sample_hz < 0:
        raise LaunchError(f"--sample-hz must be >= 0 (0: no sampler), not {a.sample_hz}")
    from .launch import parse_limit

    try:
        flush = parse_flush(a.flush)
    except ValueError as e:
        raise LaunchError(str(e)) from None
    trace = a.trace or (str(Path(out) / TIMELINE_DIR) if a.timeline else None)
    if a.timeline_limit is not None and trace is None:
        raise LaunchError("--timeline-limit: give --timeline (or --trace DIR) as well")
    return run_workflow(
        a.workflow,
        out,
        mode=a.mode,
        sample_hz=a.sample_hz,
        grace=a.grace,
        trace=trace,
        timeline_limit=parse_limit(a.timeline_limit),
        flush=flush,
    )


__all__ = [
    "Component",
    "ENV_COMPONENT",
    "ENV_RANK_OFFSET",
    "ENV_WORKFLOW_SIZE",
    "load_workflow",
    "run_workflow",
    "workflow_main",
]
