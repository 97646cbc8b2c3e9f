"""A dataset's ``stats`` on a Dask cluster against DuckDB, in the same run.

    python benchmarks/dataset_dask.py [--values 1e7] [--rows-per-part 1000000] [--workers 2]

Makes the ensemble of ``benchmarks/dataset_scale.py`` (the real LULESH tree, each
node's time drawn around its measured mean, some nodes missing from some ranks, a few
dead ranks) with about ``--values`` (node, profile) values, writes it as a dataset, and
times ``stats("time (inc)")`` (every missing mode) and the mean tree:

- by DuckDB in this process (``cctviz.open_dataset(folder)``, its default threads);
- on a Dask ``LocalCluster`` of ``--workers`` worker processes of one thread each
  (127.0.0.1, started before the clock and closed after): ``open_dataset(folder,
  client=...)``.

Prints each time, the ratio Dask / DuckDB, and whether the tables are equal. On one
machine Dask pays for its scheduling and for moving values between processes (the
quantiles' shuffle); what it buys is that the rows need not fit one machine's disk
and memory.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's cctviz

from dataset_scale import make_ensemble  # noqa: E402

import cctviz  # noqa: E402

MODES = ("auto", "zero", "skip")
METRIC = "time (inc)"


def timed_stats(ds) -> tuple[float, list]:
    """Seconds for the statistics of every mode and the mean tree; the tables."""
    t0 = time.perf_counter()
    tables = [ds.stats(METRIC, missing=m) for m in MODES]
    tables.append(ds.tree.metrics)
    return time.perf_counter() - t0, tables


def same(a: list, b: list) -> bool:
    def numbers(t):
        return t.drop(columns="name", errors="ignore").to_numpy(float)

    return all(np.allclose(numbers(x), numbers(y), rtol=1e-9, equal_nan=True) for x, y in zip(a, b))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--values", type=float, default=1e7, help="(node, profile) values, about")
    ap.add_argument("--rows-per-part", type=int, default=1_000_000)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    from dask.distributed import Client, LocalCluster

    n_nodes = len(make_ensemble(4).tree)
    n_profiles = max(int(args.values / (0.9 * n_nodes)), 1)  # 90 % of the nodes present
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        ens = make_ensemble(n_profiles)
        folder = ens.to_dataset(Path(tmp) / "ens", rows_per_part=args.rows_per_part)
        n_rows, n_parts = len(ens.exclusive_rows), len(list((folder / "rows").iterdir()))
        del ens
        print(
            f"dataset: {n_profiles:,} profiles x {n_nodes} nodes, {n_rows:,} rows in "
            f"{n_parts} parts; made and written in {time.perf_counter() - t0:.1f} s"
        )
        duck = cctviz.open_dataset(folder)
        t_duck, want = timed_stats(duck)
        duck.close()
        t0 = time.perf_counter()
        with (
            LocalCluster(
                n_workers=args.workers,
                threads_per_worker=1,
                processes=True,
                host="127.0.0.1",
                dashboard_address=None,
            ) as cluster,
            Client(cluster) as client,
        ):
            t_start = time.perf_counter() - t0
            t_dask, got = timed_stats(cctviz.open_dataset(folder, client=client))
    print(f"DuckDB (this process)               {t_duck:7.2f} s")
    print(
        f"Dask LocalCluster({args.workers} x 1 thread)      {t_dask:7.2f} s "
        f"(cluster start {t_start:.1f} s, not counted)"
    )
    print(f"ratio Dask / DuckDB: {t_dask / t_duck:.2f}x; same tables: {same(got, want)}")


if __name__ == "__main__":
    main()
