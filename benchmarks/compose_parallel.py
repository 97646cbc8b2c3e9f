"""Composing many profiles on several processes: ``read_ensemble(workers=N, client=)``.

    python benchmarks/compose_parallel.py [--files 2000] [--workers 1 2] [--dask 2]
                                          [--thicket 200] [--seed 12345]

Writes ``--files`` Caliper json-split files into a temporary folder:
perturbed copies of the real LULESH scaling profiles of
``../shared/data/hatchet-tutorial/lulesh-scaling`` (every exclusive value
times its own lognormal factor, inclusive values recomputed: see
``benchmarks/compose.py``), the smaller ones only (``--max-ranks``, default 8:
many small files, as a study of many runs has). Then, in this process, one
after the other:

- the floor: ``json.load`` of every file, nothing else (what any reader pays);
- cctviz serial (``read_ensemble(files)``), on ``--workers`` processes, and on
  a Dask ``LocalCluster`` of ``--dask`` worker processes (127.0.0.1, closed
  after);
- Thicket (``Thicket.from_caliper``) on the first ``--thicket`` files, its
  time scaled to all the files (per file), when thicket is installed.

Prints each time, per file, and the ratios: against the floor per core (the
floor's time divided by the processes used) and Thicket against cctviz. Every
parallel result is checked equal to the serial one (tree, profiles, values).

Measured on this 2-core machine: see the closing notes and NOTES.md.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from compose import write_lulesh_copies  # noqa: E402

import cctviz  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
LULESH = sorted((DATA / "hatchet-tutorial" / "lulesh-scaling").glob("*.json"))


def timed(fn) -> tuple[float, object]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def same(a: cctviz.Ensemble, b: cctviz.Ensemble) -> bool:
    return (
        list(a.tree.names) == list(b.tree.names)
        and a.profiles.equals(b.profiles)
        and all(np.array_equal(a.values(m), b.values(m), equal_nan=True) for m in a.exc_metrics)
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=2000)
    ap.add_argument("--workers", type=int, nargs="*", default=[2])
    ap.add_argument("--dask", type=int, default=2, help="Dask worker processes (0: none)")
    ap.add_argument("--thicket", type=int, default=200, help="files Thicket reads (0: none)")
    ap.add_argument("--max-ranks", type=int, default=8)
    ap.add_argument("--seed", type=int, default=12345)
    a = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        files = write_lulesh_copies(LULESH, a.files, Path(tmp), a.seed, 0.1, a.max_ranks)
        size = sum(f.stat().st_size for f in files)
        print(f"{len(files)} files, {size / 2**20:.1f} MiB")
        rows: list[tuple[str, float, int]] = []

        def floor() -> None:
            for f in files:
                with open(f) as fh:
                    json.load(fh)

        t_floor, _ = timed(floor)
        rows.append(("json.load floor", t_floor, 1))
        t_serial, serial = timed(lambda: cctviz.read_ensemble(files, progress=False))
        rows.append(("cctviz serial", t_serial, 1))
        for n in a.workers:
            t, ens = timed(lambda n=n: cctviz.read_ensemble(files, workers=n, progress=False))
            assert same(serial, ens), f"workers={n} differs from the serial read"
            rows.append((f"cctviz workers={n}", t, n))
        if a.dask:
            from dask.distributed import Client, LocalCluster

            with (
                LocalCluster(
                    n_workers=a.dask,
                    threads_per_worker=1,
                    host="127.0.0.1",
                    dashboard_address=None,
                ) as cluster,
                Client(cluster) as client,
            ):
                client.run(lambda: __import__("cctviz.readers"))  # imports not timed
                t, ens = timed(lambda: cctviz.read_ensemble(files, client=client, progress=False))
                assert same(serial, ens), "the Dask read differs from the serial read"
                rows.append((f"cctviz Dask LocalCluster({a.dask})", t, a.dask))
        thicket_per_file = None
        if a.thicket:
            try:
                from hatchet import GraphFrame
                from thicket import Thicket
            except ImportError:
                print("thicket is not installed: no Thicket figure")
            else:
                sub = [str(f) for f in files[: a.thicket]]
                # == Thicket.from_caliper(sub, disable_tqdm=True) with node_ordering=False
                # (these json-split files have no 'Node order': see benchmarks/compose.py)
                t, _ = timed(
                    lambda: Thicket.reader_dispatch(
                        GraphFrame.from_caliper, False, True, True, sub, None, node_ordering=False
                    )
                )
                thicket_per_file = t / len(sub)
                rows.append(
                    (f"Thicket ({len(sub)} files, scaled)", thicket_per_file * len(files), 1)
                )
        print(f"{'':40s} {'time':>9s} {'per file':>10s} {'/ floor per core':>17s}")
        for name, t, procs in rows:
            print(
                f"{name:40s} {t:8.2f}s {1e3 * t / len(files):8.3f}ms {t / (t_floor / procs):16.2f}x"
            )
        if thicket_per_file is not None:
            print(f"Thicket / cctviz serial: {thicket_per_file * len(files) / t_serial:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
