"""Out of core: statistics, a groupby and a Sankey's node statistics of a large
ensemble on disk (DuckDB), with peak memory, against the in-memory Ensemble.

    python benchmarks/dataset_outofcore.py [--nodes 10000] [--profiles 10000]
                                          [--memory-limit 3GB] [--in-memory-max 2e8]

The ensemble is generated: a random calling-context tree of ``--nodes`` nodes
(``compose.make_random_tree``: names from a pool of HPC-like stems, depth ~30),
and per profile each node's time drawn around the node's own mean (lognormal), 90%
of the nodes recorded per profile (with their ancestors), one dead rank in 1,000,
the profiles in 4 jobs (``job``, also the ``run``: the absence rule counts within
a job). It is written a chunk of profiles at a time
(:func:`cctviz.dataset.write_chunks`), so the writer never holds it whole. Then,
each in a fresh process so that its peak RSS is its own:

- on disk: ``cctviz.open_dataset(memory_limit=...)``, then ``stats("time")``,
  ``stats("time (inc)")``, ``groupby("job")`` with each group's
  ``stats("time (inc)")``, and the Sankey's super graph with its node statistics
  (``cctviz.ops.sankey.module_graph(ds, group_by=2)``);
- in memory (when the values number at most ``--in-memory-max``): the rows read
  into an ``Ensemble`` and the same four.

Printed: each step's seconds, the peak RSS, the ratio on disk / in memory, and
whether the answers agree.
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
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

CHILD = r"""
from cctviz.ops.sankey import module_graph
folder, how, limit = sys.argv[1], sys.argv[2], sys.argv[3]
times = {}
t0 = time.perf_counter()
if how == "memory":
    ens = load_in_memory(folder)  # dataset_scale.PRELUDE
else:
    ens = cctviz.open_dataset(folder, memory_limit=limit)
times["load"] = time.perf_counter() - t0
out = {}
def step(name, fn):
    t = time.perf_counter(); r = fn(); times[name] = time.perf_counter() - t; return r
out["exc"] = step("stats time", lambda: ens.stats("time"))["mean"].tolist()
inc = step("stats time (inc)", lambda: ens.stats("time (inc)"))
out["inc_mean"], out["inc_median"] = inc["mean"].tolist(), inc["median"].tolist()
groups = step("groupby job + stats", lambda: {k: g.stats("time (inc)")["mean"].tolist()
                                             for k, g in ens.groupby("job").items()})
out["groups"] = {str(k): v for k, v in groups.items()}
g = step("Sankey node statistics", lambda: module_graph(ens, group_by=2))
out["sankey"] = g.nodes[["value", "mean", "max"]].to_numpy().tolist()
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"times": times, "peak_kib": peak, "out": out}))
"""


def make_chunks(n_nodes: int, n_profiles: int, chunk: int, seed: int):
    """The generated ensemble, ``chunk`` profiles at a time (module docstring)."""
    from compose import make_random_tree

    import cctviz

    parent, names = make_random_tree(n_nodes, seed)
    structure = cctviz.Tree.from_parents(parent.tolist(), names)
    structure = cctviz.Tree(structure.nodes, None, {"units": {"time": "s"}})
    rng = np.random.default_rng(seed)
    node_mean = rng.lognormal(-6, 1.5, n_nodes)
    dead = set(rng.choice(n_profiles, size=max(n_profiles // 1000, 1), replace=False).tolist())
    per_job = -(-n_profiles // 4)
    for lo in range(0, n_profiles, chunk):
        ids = np.arange(lo, min(lo + chunk, n_profiles))
        present = rng.random((n_nodes, ids.size)) < 0.9
        present[:, [k for k, p in enumerate(ids) if p in dead]] = False
        node, prof = np.nonzero(present)
        t = node_mean[node] * rng.lognormal(0.0, 0.3, node.size)
        rows = pd.DataFrame({"node": node, "profile": prof, "time": t})
        profiles = pd.DataFrame({"rank": ids, "job": ids // per_job, "run": ids // per_job})
        yield cctviz.Ensemble(structure, rows, profiles, {"units": {"time": "s"}})


def run_child(folder: Path, how: str, limit: str) -> dict:
    from dataset_scale import run_child as run

    return run(folder, how, limit, CHILD)


def agree(a: dict, b: dict) -> bool:
    def close(x, y) -> bool:
        return np.allclose(np.asarray(x, float), np.asarray(y, float), rtol=1e-9, equal_nan=True)

    return all(close(a[k], b[k]) for k in ("exc", "inc_mean", "inc_median", "sankey")) and all(
        close(a["groups"][k], b["groups"][k]) for k in a["groups"]
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=10_000)
    ap.add_argument("--profiles", type=int, default=10_000)
    ap.add_argument("--chunk", type=int, default=250, help="profiles per chunk written")
    ap.add_argument("--memory-limit", default="3GB", help="DuckDB's memory_limit")
    ap.add_argument("--in-memory-max", type=float, default=2e8, help="values, for the peer")
    ap.add_argument("--dir", type=Path, help="where to write (default: a temporary folder)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--make", type=Path, help=argparse.SUPPRESS)  # the child that writes
    args = ap.parse_args()
    if args.make:
        from cctviz.dataset import write_chunks

        t0 = time.perf_counter()
        chunks = make_chunks(args.nodes, args.profiles, args.chunk, args.seed)
        write_chunks(chunks, args.make)
        size = sum(f.stat().st_size for f in args.make.rglob("*") if f.is_file())
        print(f"written in {time.perf_counter() - t0:.1f} s, {size / 2**20:,.0f} MiB on disk")
        return
    values = args.nodes * args.profiles
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        folder = Path(tmp) / "ens"
        cmd = [sys.executable, __file__, "--make", str(folder)]
        cmd += ["--nodes", str(args.nodes), "--profiles", str(args.profiles)]
        cmd += ["--chunk", str(args.chunk), "--seed", str(args.seed)]
        subprocess.run(cmd, check=True)
        manifest = json.loads((folder / "manifest.json").read_text())
        print(
            f"ensemble: {args.profiles:,} profiles x {args.nodes:,} nodes = {values:.2g} values, "
            f"{manifest['n_rows']:,} recorded (node, profile) rows"
        )
        disk = run_child(folder, "dataset", args.memory_limit)
        mem = run_child(folder, "memory", "") if values <= args.in_memory_max else None
    cols = [("on disk (DuckDB)", disk)] + ([("in memory (pandas)", mem)] if mem else [])
    steps = list(disk["times"])
    print(
        f"{'step':26s}"
        + "".join(f"{label:>22s}" for label, _ in cols)
        + ("   ratio" if mem else "")
    )
    for s in steps:
        line = f"{s:26s}" + "".join(f"{r['times'][s]:20.2f} s" for _, r in cols)
        if mem:
            line += f"   {disk['times'][s] / max(mem['times'][s], 1e-9):5.2f}x"
        print(line)
    print(
        f"{'peak RSS':26s}"
        + "".join(f"{r['peak_kib'] / 2**20:18.2f} GiB" for _, r in cols)
        + (f"   {disk['peak_kib'] / mem['peak_kib']:5.2f}x" if mem else "")
    )
    if mem:
        print(f"same answers: {agree(disk['out'], mem['out'])}")
    else:
        print(f"in memory not run: {values:.2g} values > --in-memory-max {args.in_memory_max:.2g}")


if __name__ == "__main__":
    main()
