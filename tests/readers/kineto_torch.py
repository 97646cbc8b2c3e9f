"""Traces recorded with the real ``torch.profiler``, for the Kineto reader's tests.

``record(path, side=..., **options)`` profiles a small training loop in this
process (CPU): 5 iterations of forward, backward and SGD, profiled with
``schedule(wait=1, warmup=1, active=3)`` (so ``ProfilerStep#2`` to ``#4``). With
``side=True``, each iteration also runs a forward and backward on a new thread
inside ``record_function("side")``, recorded by the experimental
``profile_all_threads`` config: on CPU the autograd engine runs backward on the
calling thread, so this is how a CPU-only run gets backward ops on another
thread. (torch 2.13 writes no ``[memory]`` events with that config, so
``profile_memory`` runs go without it.) ``record_ddp(folder)`` runs the same loop as a
2-rank DDP job over gloo on 127.0.0.1 (a subprocess running ``python -m
tests.readers.kineto_torch FOLDER``, which spawns the ranks) and writes
``rank0.json`` and ``rank1.json``. ``record_collectives(folder)`` does the same
for a 2-rank gloo job that calls ``all_gather`` (a list of outputs),
``all_reduce`` and ``all_gather_into_tensor`` on ``COLLECTIVE_NUMEL`` floats,
profiled with ``record_shapes`` (``python -m tests.readers.kineto_torch FOLDER
collectives``).
"""

from __future__ import annotations

import faulthandler
import gc
import os
import signal
import socket
import subprocess
import sys
import threading
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DDP_OPTIONS = {"with_stack": True, "record_shapes": True}
#: seconds after which a rank of ``record_ddp``'s job prints its stacks and exits
#: (the job's own process a tenth later): ``record_ddp`` sets it from its timeout
RANK_TIMEOUT = float(os.environ.get("KINETO_TORCH_RANK_TIMEOUT", 120))


def _model():
    import torch

    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4)
    ), torch.randn(8, 16)


def _loop(model, x, prof, side=None) -> None:
    import torch

    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(5):
        if side is not None:
            th = threading.Thread(target=side)
            th.start()
            th.join()
        opt.zero_grad()
        model(x).square().mean().backward()
        opt.step()
        prof.step()


def record(path: Path, side: bool = False, **options) -> Path:
    """Profile the loop in this process with ``torch.profiler.profile(**options)``."""
    from torch._C._profiler import _ExperimentalConfig
    from torch.profiler import ProfilerActivity, profile, record_function, schedule

    model, x = _model()
    other, y = _model()

    def side_work() -> None:
        with record_function("side"):
            other(y).sum().backward()

    if side:
        options["experimental_config"] = _ExperimentalConfig(profile_all_threads=True)
    with profile(
        activities=[ProfilerActivity.CPU], schedule=schedule(wait=1, warmup=1, active=3), **options
    ) as prof:
        _loop(model, x, prof, side_work if side else None)
    prof.export_chrome_trace(str(path))
    return path


def record_overlap(path: Path) -> Path:
    """Profile two ``record_function`` ranges left out of order ("load" entered,
    then "compute", then "load" left inside "compute"): torch writes them as two
    annotations on one thread that overlap without nesting."""
    import torch
    from torch.profiler import ProfilerActivity, profile, record_function

    x = torch.randn(256, 256)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        load = record_function("load")
        load.__enter__()
        y = x @ x
        with record_function("compute"):
            z = y @ y
            load.__exit__(None, None, None)
            (z @ z).sum()
    prof.export_chrome_trace(str(path))
    return path


def _rank(rank: int, world: int, port: int, folder: str, options: dict) -> None:
    import torch.distributed as dist

    _join(dist, rank, world, port)
    _profile_ddp(f"{folder}/rank{rank}.json", options)
    _leave(dist)


def _join(dist, rank: int, world: int, port: int) -> None:
    """Join the gloo group; a rank still running after ``RANK_TIMEOUT`` s prints
    every thread's stack and exits (the job fails instead of hanging)."""
    faulthandler.dump_traceback_later(RANK_TIMEOUT, exit=True)
    dist.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world
    )


def _profile_ddp(path: str, options: dict) -> None:
    from torch.nn.parallel import DistributedDataParallel
    from torch.profiler import ProfilerActivity, profile, schedule

    model, x = _model()
    ddp = DistributedDataParallel(model)
    with profile(
        activities=[ProfilerActivity.CPU], schedule=schedule(wait=1, warmup=1, active=3), **options
    ) as prof:
        _loop(ddp, x, prof)
    prof.export_chrome_trace(path)


def _leave(dist) -> None:
    """Tear the group down once both ranks are done with it, and with nothing
    (a DDP reducer, a pending work) still holding it."""
    gc.collect()
    dist.barrier()
    dist.destroy_process_group()
    faulthandler.cancel_dump_traceback_later()


#: elements of each rank's input in :func:`record_collectives`
COLLECTIVE_NUMEL = 1000


def _collectives_rank(rank: int, world: int, port: int, folder: str, options: dict) -> None:
    import torch
    import torch.distributed as dist
    from torch.profiler import ProfilerActivity, profile

    _join(dist, rank, world, port)
    x = torch.full((COLLECTIVE_NUMEL,), float(rank + 1))
    dist.barrier()  # the connections are made before the profile starts
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        dist.all_gather([torch.empty_like(x) for _ in range(world)], x)
        dist.all_reduce(x)
        dist.all_gather_into_tensor(torch.empty(world * COLLECTIVE_NUMEL), x)
    prof.export_chrome_trace(f"{folder}/rank{rank}.json")
    del prof
    _leave(dist)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def record_ddp(folder: Path, timeout: float = 300, job: str = "ddp") -> list[Path]:
    """A 2-rank gloo DDP job profiled with ``DDP_OPTIONS``; one trace per rank.

    gloo's set-up and teardown hang now and then (pytorch/pytorch#75097; once in
    CI, 2026-12-06): a job that fails or outlives half of ``timeout`` is killed
    with its ranks and run once more, with a warning that shows why."""
    folder.mkdir(parents=True, exist_ok=True)
    failures = []
    for _ in range(2):
        failure = _run_job(folder, job, timeout / 2)
        if failure is None:
            if failures:
                warnings.warn(
                    f"the {job} job was run again; the first try:\n{failures[0]}", stacklevel=2
                )
            return [folder / f"rank{r}.json" for r in range(2)]
        failures.append(failure)
    raise RuntimeError(f"the {job} job failed twice:\n" + "\n--- again:\n".join(failures))


def _run_job(folder: Path, job: str, timeout: float) -> str | None:
    """Run the job in its own session; None when it exits 0, else its stderr's tail.
    Its process and ranks print their stacks and exit a little before ``timeout``
    (:data:`RANK_TIMEOUT`); whatever is left then, or when this is interrupted, is
    killed."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        "KINETO_TORCH_RANK_TIMEOUT": str(0.8 * timeout),
    }
    with subprocess.Popen(
        [sys.executable, "-m", "tests.readers.kineto_torch", str(folder), job],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    ) as p:
        try:
            _, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_session(p)
            _, err = p.communicate(timeout=30)
            return f"timed out after {timeout:.0f} s:\n{err[-6000:]}"
        except BaseException:  # (interrupted: a session of its own is not)
            _kill_session(p)
            raise
    return f"exit {p.returncode}:\n{err[-6000:]}" if p.returncode else None


def _kill_session(p: subprocess.Popen) -> None:
    """Kill the job's process and its ranks (its session's process group)."""
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def record_collectives(folder: Path, timeout: float = 300) -> list[Path]:
    """A 2-rank gloo job of plain collectives (see the module docstring)."""
    return record_ddp(folder, timeout, job="collectives")


if __name__ == "__main__":
    import torch._dynamo  # noqa: F401  (DDP imports it: once here, not in each rank)
    import torch.multiprocessing as mp

    Path(sys.argv[1]).mkdir(parents=True, exist_ok=True)
    if "lo" in {name for _, name in socket.if_nameindex()}:
        os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")  # stay on 127.0.0.1
    # forked ranks share the imports and skip the interpreter's shutdown
    fn = _collectives_rank if sys.argv[2:] == ["collectives"] else _rank
    ranks = mp.start_processes(
        fn,
        args=(2, _free_port(), sys.argv[1], DDP_OPTIONS),
        nprocs=2,
        start_method="fork",
        join=False,
    )
    # a hang in the join shows its stacks too; armed after the fork, never before:
    # a rank forked with the watchdog's thread running deadlocks re-arming its own
    faulthandler.dump_traceback_later(1.1 * RANK_TIMEOUT, exit=True)
    while not ranks.join():
        pass
