"""Composing many small profiles: ``read_ensemble`` (batch path) on 1 and N processes
and a Dask cluster, against the ``json.load`` floor, the one-by-one read and Thicket.

    python benchmarks/compose_parallel.py [--files 20000] [--workers 1 2] [--dask 2]
                                          [--thicket 200] [--old 200] [--out]
                                          [--profile 2000] [--seed 12345] [--reps 3]
                                          [--stages]

Writes ``--files`` Caliper json-split files into a temporary folder with
``benchmarks/caliper_study.py``: copies of the real LULESH runs (1 and 8 ranks;
``json-split`` as ``cali-query`` wrote them, every record's time perturbed, the
inclusive column recomputed) and of the 18 real RAJAPerf runs (read from their
``.cali`` and written as json-split with Caliper's attributes, units and
metadata; times scaled), a LULESH and a RAJAPerf file in turn; one file in ten
lacks a leaf node, one RAJAPerf file in seven lacks two metrics. Then, in this
process, one after the other:

- the floor: ``json.load`` of every file, nothing else (what a reader on the
  standard library's decoder pays), and ``orjson.loads`` of every file's bytes
  (the decoder cctviz uses where orjson is installed: its own floor);
- cctviz ``read_ensemble(files)`` (the batch path) serially, on each
  ``--workers`` count of processes (``workers=1`` is the serial path), and on a
  Dask ``LocalCluster`` of ``--dask`` worker processes (127.0.0.1, closed
  after); each result is checked equal to the serial one;
- with ``--out``: ``read_ensemble(files, out=folder)`` into a dataset (serial);
- the one-by-one read (``batch=False``: a Tree per file, then ``Ensemble.concat``)
  and Thicket (``Thicket.from_caliper``'s reader on ``node_ordering=False``: see
  ``benchmarks/compose.py``) on the first ``--old``/``--thicket`` files, their time
  scaled to all the files (per file);
- with ``--stages``: the serial read's three stages timed one by one (parse to
  arrays, ``chunk_of``, ``compose_chunks``), each against the floor;
- with ``--profile N``: cProfile of the batch read of N files, the top functions.

Prints each time, per file, and the ratios: against the floor per core (the
floor's time divided by the processes used) and Thicket (and the one-by-one read)
against cctviz serial. The floors, the serial read and each ``--workers`` read
alternate ``--reps`` times (medians; each repetition's ratio printed too: this
machine's speed drifts); the Dask read is repeated ``--reps`` times on one
cluster (started outside the timing). Starting the worker processes is part of
every parallel time (a pool per call, as a user sees it); the first call also
starts multiprocessing's fork server (which imports the readers once per Python
process), so its time is printed apart.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from caliper_study import write_study  # noqa: E402

import cctviz  # noqa: E402


def timed(fn) -> tuple[float, object]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=2000)
    ap.add_argument("--workers", type=int, nargs="*", default=[2])
    ap.add_argument("--dask", type=int, default=2, help="Dask worker processes (0: none)")
    ap.add_argument("--thicket", type=int, default=200, help="files Thicket reads (0: none)")
    ap.add_argument("--old", type=int, default=200, help="files read one by one (0: none)")
    ap.add_argument("--out", action="store_true", help="also compose into a dataset folder")
    ap.add_argument("--profile", type=int, default=0, help="cProfile the batch read of N files")
    ap.add_argument("--stages", action="store_true", help="time the serial read's stages")
    ap.add_argument("--seed", type=int, default=12345)
    ap.add_argument("--reps", type=int, default=3, help="floor/read alternations (median)")
    a = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        t_write, files = timed(lambda: write_study(a.files, Path(tmp) / "files", seed=a.seed))
        size = sum(f.stat().st_size for f in files)
        print(f"{len(files)} files, {size / 2**20:.1f} MiB (written in {t_write:.1f} s)")
        rows: list[tuple[str, float, int]] = []

        def floor() -> None:
            for f in files:
                with open(f) as fh:
                    json.load(fh)

        floor()  # the page cache warm for everyone
        reads = {"cctviz serial (batch path)": (1, {})}
        reads.update((f"cctviz workers={n}", (n, {"workers": n})) for n in a.workers if n > 1)
        t_floor, t_orjson, times, first, serial = _alternating(files, floor, reads, a.reps)
        rows.append(("json.load floor", t_floor, 1))
        if t_orjson is not None:
            rows.append(("orjson.loads floor", t_orjson, 1))
        for name, (n, _) in reads.items():
            rows.append((name, times[name], n))
            if n > 1:
                rows.append(("  its first call (the fork server starts)", first[name], n))
        t_serial = times["cctviz serial (batch path)"]
        print(f"  ensemble: {serial!r}"[:300])
        if a.dask:
            rows.append(_dask(files, serial, a.dask, a.reps))
        if a.out:
            folder = Path(tmp) / "dataset"
            t, ds = timed(lambda: cctviz.read_ensemble(files, out=folder, progress=False))
            rows.append(("cctviz out=dataset (serial)", t, 1))
            shutil.rmtree(folder)
        per_file_old = _old(files, a.old, rows)
        per_file_thicket = _thicket(files, a.thicket, rows)
        _table(rows, len(files), t_floor)
        if t_orjson is not None:
            print(f"cctviz serial / orjson.loads floor: {t_serial / t_orjson:.2f}x")
        if per_file_old is not None:
            print(f"one-by-one read / cctviz serial: {per_file_old * len(files) / t_serial:.1f}x")
        if per_file_thicket is not None:
            print(f"Thicket / cctviz serial: {per_file_thicket * len(files) / t_serial:.1f}x")
            best = min(t for name, t, _ in rows if name.startswith("cctviz"))
            print(f"Thicket / cctviz fastest: {per_file_thicket * len(files) / best:.1f}x")
        if a.stages:
            _stages(files, t_floor, serial)
        if a.profile:
            _profile(files[: a.profile])
    return 0


def _alternating(
    files: list[Path], floor, reads: dict[str, tuple[int, dict]], reps: int
) -> tuple[float, float | None, dict[str, float], dict[str, float], Any]:
    """The floors and each read (``reads``: name -> (processes, ``read_ensemble``
    arguments)), one after the other ``reps`` times (this machine's speed drifts:
    a ratio of two runs far apart says little); the medians, each read's first
    time (a parallel read's first call starts multiprocessing's fork server, which
    later calls in the process reuse), and the serial Ensemble. Each
    repetition's ratios are printed; every read is checked equal to the serial one."""
    t_f, t_o = [], []
    t_r: dict[str, list[float]] = {name: [] for name in reads}
    serial = None
    for _ in range(reps):
        t_f.append(timed(floor)[0])
        t_o.append(_orjson_floor(files))
        for name, (_, kw) in reads.items():
            t, ens = timed(lambda kw=kw: cctviz.read_ensemble(files, progress=False, **kw))
            t_r[name].append(t)
            if serial is None:
                serial = ens
            elif len(t_r[name]) == 1:
                assert ens == serial, f"{name} differs from the serial read"
            del ens
    for name, (n, _) in reads.items():
        ratios = ", ".join(f"{s / (f / n):.2f}x" for s, f in zip(t_r[name], t_f))
        print(f"  {name} / json.load floor per core, each repetition: {ratios}")
    orj = None if t_o[0] is None else statistics.median(t_o)
    medians = {name: statistics.median(ts) for name, ts in t_r.items()}
    firsts = {name: ts[0] for name, ts in t_r.items()}
    return statistics.median(t_f), orj, medians, firsts, serial


def _orjson_floor(files: list[Path]) -> float | None:
    """``orjson.loads`` of every file (None without orjson)."""
    try:
        import orjson
    except ImportError:
        return None

    def floor() -> None:
        for f in files:
            orjson.loads(f.read_bytes())

    return timed(floor)[0]


def _dask(files: list[Path], serial: cctviz.Ensemble, n: int, reps: int) -> tuple[str, float, int]:
    from dask.distributed import Client, LocalCluster

    with (
        LocalCluster(
            n_workers=n, threads_per_worker=1, host="127.0.0.1", dashboard_address=None
        ) as cluster,
        Client(cluster) as client,
    ):
        client.run(lambda: __import__("cctviz.readers"))  # imports not timed
        ts = []
        for _ in range(reps):
            t, ens = timed(lambda: cctviz.read_ensemble(files, client=client, progress=False))
            assert ens == serial, "the Dask read differs from the serial read"
            ts.append(t)
            del ens
    print(f"  Dask LocalCluster({n}), each repetition: " + ", ".join(f"{t:.2f} s" for t in ts))
    return (f"cctviz Dask LocalCluster({n})", statistics.median(ts), n)


def _old(files: list[Path], n: int, rows: list) -> float | None:
    """The one-by-one read of the first ``n`` files, per file."""
    if not n:
        return None
    sub = files[:n]
    t, _ = timed(lambda: cctviz.read_ensemble(sub, progress=False, batch=False))
    rows.append((f"cctviz one by one ({len(sub)} files, scaled)", t / len(sub) * len(files), 1))
    return t / len(sub)


def _thicket(files: list[Path], n: int, rows: list) -> float | None:
    """Thicket on the first ``n`` files, per file (None without thicket)."""
    if not n:
        return None
    try:
        from hatchet import GraphFrame
        from thicket import Thicket
    except ImportError:
        print("thicket is not installed: no Thicket figure")
        return None
    sub = [str(f) for f in files[:n]]
    # == Thicket.from_caliper(sub, disable_tqdm=True) with node_ordering=False
    t, _ = timed(
        lambda: Thicket.reader_dispatch(
            GraphFrame.from_caliper, False, True, True, sub, None, node_ordering=False
        )
    )
    rows.append((f"Thicket ({len(sub)} files, scaled)", t / len(sub) * len(files), 1))
    return t / len(sub)


def _table(rows: list[tuple[str, float, int]], n: int, t_floor: float) -> None:
    print(f"{'':44s} {'time':>9s} {'per file':>10s} {'/ floor per core':>17s}")
    for name, t, procs in rows:
        print(f"{name:44s} {t:8.2f}s {1e3 * t / n:8.3f}ms {t / (t_floor / procs):16.2f}x")


def _stages(files: list[Path], t_floor: float, serial: cctviz.Ensemble) -> None:
    """The serial batch read in its three stages, each called as ``read_batch`` calls
    it: the files parsed to arrays (reading, detection, decoding, the group parse,
    ``verify``), composed into one chunk (``chunk_of``: unify, rows), and the chunk
    into the Ensemble (``compose_chunks``: units, the profiles table, the
    constructor; each profile's extra columns: its file only). The result's tree
    and values are checked against the serial read."""
    from cctviz.readers import _batch

    t_arrays, arrays = timed(lambda: _batch.read_chunk_arrays(files, None, {}))
    t_chunk, chunk = timed(lambda: _batch.chunk_of(arrays))
    arrays.clear()  # the files' arrays, freed before the composition
    extras = [{"file": str(f)} for f in files]
    t_compose, ens = timed(lambda: _batch.compose_chunks([chunk], extras, {}))
    assert ens.n_profiles == serial.n_profiles and list(ens.tree.names) == list(serial.tree.names)
    assert ens.exc_metrics == serial.exc_metrics
    for m in ens.exc_metrics:
        assert np.array_equal(ens.values(m), serial.values(m), equal_nan=True), m
    print(f"\nstages of the serial read (json.load floor {t_floor:.2f} s):")
    for name, t in (
        ("parse to arrays (read, detect, decode, group parse, verify)", t_arrays),
        ("chunk_of (unify, rows)", t_chunk),
        ("compose_chunks (units, profiles, the Ensemble)", t_compose),
    ):
        print(f"  {name:62s} {t:6.2f} s {t / t_floor:5.2f}x the floor")


def _profile(files: list[Path]) -> None:
    pr = cProfile.Profile()
    pr.enable()
    cctviz.read_ensemble(files, progress=False)
    pr.disable()
    print(f"\ncProfile of the batch read of {len(files)} files (top 25 by own time):")
    pstats.Stats(pr).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    sys.exit(main())
