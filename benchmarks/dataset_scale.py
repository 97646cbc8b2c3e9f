"""Ensembles on disk: ``stats`` by DuckDB over a dataset against the in-memory Ensemble.

An ensemble is made from the real LULESH scaling runs (../shared/data): their unified
tree, and per profile each node's time drawn around the node's measured mean (lognormal
spread, some nodes missing from some ranks, a few dead ranks), tiled to ``--profiles``
profiles. It is written once as a dataset (``Ensemble.to_dataset``). Then, each in a fresh
process so that peak memory is its own:

- in memory: the rows read from the dataset's Parquet parts into an ``Ensemble``, then
  ``stats`` of ``time (inc)``;
- on disk: ``cctviz.open_dataset`` and the same ``stats`` computed by DuckDB (with
  ``--memory-limit``).

Printed: wall time and peak RSS of each (psutil / getrusage of the child process), and
the ratios on-disk / in-memory. Run: ``python benchmarks/dataset_scale.py`` (about a
minute on 2 cores with the defaults).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"

#: what every child (this one, ``dataset_outofcore.py``'s) starts with: the imports and
#: ``load_in_memory``, the dataset's parts read by pandas into an in-memory Ensemble (no
#: DuckDB: the memory measured is the Ensemble's)
PRELUDE = r"""
import json, resource, sys, time
import numpy as np, pandas as pd
import cctviz


def load_in_memory(folder):
    ds = cctviz.open_dataset(folder)
    files = sorted((ds.path / "rows").glob("part-*.parquet"))
    rows = pd.concat([pd.read_parquet(f) for f in files], ignore_index=True)
    s = ds._store
    return cctviz.Ensemble(cctviz.Tree(s.structure.nodes, None, s.structure.meta), rows,
                           s.profiles, ds.meta)
"""

CHILD = r"""
folder, how, limit = sys.argv[1], sys.argv[2], sys.argv[3]
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t0 = time.perf_counter()
if how == "memory":
    ens = load_in_memory(folder)
    t1 = time.perf_counter()
    st = ens.stats("time (inc)")
else:
    ds = cctviz.open_dataset(folder, memory_limit=limit)
    t1 = time.perf_counter()
    st = ds.stats("time (inc)")
t2 = time.perf_counter()
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"load_s": t1 - t0, "stats_s": t2 - t1, "peak_kib": peak, "import_kib": base,
                  "mean": st["mean"].tolist(), "n": st["n"].tolist()}))
"""


def make_ensemble(n_profiles: int, seed: int = 0):
    """A large ensemble on the real LULESH tree (module docstring)."""
    import cctviz

    files = sorted((DATA / "hatchet-tutorial" / "lulesh-scaling").glob("*.json"))
    real = cctviz.read_ensemble(files[:1])
    tree = real.tree
    rng = np.random.default_rng(seed)
    n = len(tree)
    mean = np.maximum(tree.metrics["time"].to_numpy(), 1e-6)
    present = rng.random((n, n_profiles)) < 0.9  # some nodes missing from some ranks
    present[:, rng.choice(n_profiles, size=max(n_profiles // 1000, 1), replace=False)] = False
    node, prof = np.nonzero(present)
    time_ = mean[node] * rng.lognormal(0.0, 0.3, size=node.size)
    rows = pd.DataFrame({"node": node, "profile": prof, "time": time_})
    profiles = pd.DataFrame({"rank": np.arange(n_profiles), "run": np.arange(n_profiles) // 4096})
    structure = cctviz.Tree(tree.nodes, None, tree.meta)
    return cctviz.Ensemble(structure, rows, profiles, real.meta)


def run_child(folder: Path, how: str, limit: str, code: str = CHILD) -> dict:
    """Run a child (:data:`PRELUDE`, then ``code``) on the dataset ``folder``; its last
    stdout line, as JSON."""
    out = subprocess.run(
        [sys.executable, "-c", PRELUDE + code, str(folder), how, limit],
        check=True,
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


sys.path.insert(0, str(ROOT))  # this checkout's cctviz, as the children (cwd ROOT) import it


def make_dataset(n_profiles: int, folder: Path) -> None:
    """Child process: make the ensemble and write it (the parent stays small, so the
    measured children, forked from it, do not inherit its peak RSS)."""
    t0 = time.perf_counter()
    ens = make_ensemble(n_profiles)
    ens.to_dataset(folder)
    size = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())
    print(
        f"ensemble: {n_profiles:,} profiles, {len(ens.exclusive_rows):,} (node, profile) rows; "
        f"made and written in {time.perf_counter() - t0:.1f} s, dataset {size / 2**20:.1f} MiB"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profiles", type=int, default=100_000)
    ap.add_argument("--memory-limit", default="500MB", help="DuckDB's memory_limit")
    ap.add_argument("--make", type=Path, help=argparse.SUPPRESS)  # the child that writes
    args = ap.parse_args()
    if args.make:
        make_dataset(args.profiles, args.make)
        return
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "ens"
        cmd = [sys.executable, __file__, "--profiles", str(args.profiles), "--make", str(folder)]
        subprocess.run(cmd, check=True)
        mem = run_child(folder, "memory", args.memory_limit)
        disk = run_child(folder, "dataset", args.memory_limit)
    same = np.allclose(mem["mean"], disk["mean"], rtol=1e-9) and mem["n"] == disk["n"]
    for label, r in (("in memory (pandas)", mem), ("on disk (DuckDB)", disk)):
        print(
            f"{label:20s} load {r['load_s']:6.2f} s   stats {r['stats_s']:6.2f} s   "
            f"peak RSS {r['peak_kib'] / 2**10:7.1f} MiB (after imports {r['import_kib'] / 2**10:.1f} MiB)"
        )
    total = {k: r["load_s"] + r["stats_s"] for k, r in (("mem", mem), ("disk", disk))}
    grown = {k: max(r["peak_kib"] - r["import_kib"], 1) for k, r in (("mem", mem), ("disk", disk))}
    print(f"same statistics: {same}")
    print(
        f"ratios on disk / in memory: time (load + stats) {total['disk'] / total['mem']:.2f}x, "
        f"stats alone {disk['stats_s'] / mem['stats_s']:.2f}x, "
        f"peak RSS {disk['peak_kib'] / mem['peak_kib']:.2f}x, "
        f"memory grown past the imports {grown['disk'] / grown['mem']:.2f}x"
    )


if __name__ == "__main__":
    main()
