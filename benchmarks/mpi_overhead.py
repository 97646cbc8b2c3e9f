"""Cost of recording mpi4py's calls: a call profiled against the same call plain.

    python benchmarks/mpi_overhead.py [--calls 20000] [--reps 5] [--nproc 2]

Starts ``mpirun -n NPROC`` of this file in worker mode; every rank times, in the
same process, ``--calls`` calls of each operation on the plain ``COMM_WORLD``
(kept before the profiler starts) and on the profiled one
(:mod:`cctviz.runtime.mpi`), alternating plain and profiled blocks ``--reps``
times. Operations: ``Allreduce`` of one float64, ``Sendrecv`` of 8 float64 with
the neighbour, ``allreduce`` of a Python int. Prints, per operation, the median
us per call of each and their ratio, and the added us per call (rank 0).

Measured (2026-11-27, this 2-core machine shared with other jobs, load average
10-12, where even ``time.perf_counter_ns()`` took 0.5-1.5 us), Open MPI 4.1.4,
mpi4py 4.1.2, ``--calls 5000 --reps 3``:

- ``--nproc 1``: Allreduce 8 B 4.2 -> 30 us (x7.3), Sendrecv 64 B 7.3 -> 42 us
  (x5.8), allreduce (int) 22 -> 61 us (x2.7): about 26-38 us added per call, the
  recorder's enter/leave of a leaf (16 us of it in process, measured apart) on
  this loaded machine;
- ``--nproc 2`` (oversubscribed: the ranks poll and yield): 40 -> 214 us,
  88 -> 264 us, 297 -> 657 us.

The cost is per call, not per byte: the same leaf path as the torch.distributed
wrappers; a halo exchange of kilobyte rows or more sees it shrink accordingly.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def _worker(calls: int, reps: int) -> None:
    from mpi4py import MPI

    plain = MPI.COMM_WORLD
    import numpy as np

    import cctviz

    out = tempfile.mkdtemp()
    prof = cctviz.profile(out=out).start()  # wraps the MPI module imported above
    profiled = MPI.COMM_WORLD
    assert type(profiled).__name__ == "ProfiledIntracomm"
    rank, size = plain.Get_rank(), plain.Get_size()
    one, res = np.ones(1), np.empty(1)
    row, got = np.ones(8), np.empty(8)
    ops = {
        "Allreduce 8 B": lambda c: c.Allreduce(one, res),
        "Sendrecv 64 B": lambda c: c.Sendrecv(
            row, dest=(rank + 1) % size, recvbuf=got, source=(rank - 1) % size
        ),
        "allreduce (int)": lambda c: c.allreduce(rank),
    }
    times: dict[tuple[str, str], list[float]] = {}
    for _ in range(reps):
        for name, op in ops.items():
            for label, comm in (("plain", plain), ("profiled", profiled)):
                plain.Barrier()
                t0 = time.perf_counter()
                for _ in range(calls):
                    op(comm)
                times.setdefault((name, label), []).append((time.perf_counter() - t0) / calls)
    prof.stop()
    shutil.rmtree(out, ignore_errors=True)
    if rank == 0:
        print(f"{'operation':18} {'plain us':>9} {'profiled us':>12} {'ratio':>6} {'added us':>9}")
        for name in ops:
            a = statistics.median(times[(name, "plain")]) * 1e6
            b = statistics.median(times[(name, "profiled")]) * 1e6
            print(f"{name:18} {a:9.2f} {b:12.2f} {b / a:6.2f} {b - a:9.2f}")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--calls", type=int, default=20000)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--nproc", type=int, default=2)
    p.add_argument("--worker", action="store_true")
    a = p.parse_args()
    if a.worker:
        _worker(a.calls, a.reps)
        return
    mpirun = shutil.which("mpirun")
    if mpirun is None:
        sys.exit("mpi_overhead: no mpirun on PATH (Debian: apt-get install openmpi-bin)")
    flags = ["--oversubscribe"] + (["--allow-run-as-root"] if os.geteuid() == 0 else [])
    cmd = [mpirun, *flags, "-n", str(a.nproc), sys.executable, __file__, "--worker"]
    subprocess.run([*cmd, "--calls", str(a.calls), "--reps", str(a.reps)], check=True)


if __name__ == "__main__":
    main()
