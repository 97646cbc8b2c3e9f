"""Benchmark: compose an ensemble from N Caliper json-split profiles, cctviz vs Thicket.

What it measures
----------------
For each case, both tools build one composed ensemble (the union call tree
plus every profile's metrics) from the *same* list of Caliper json-split files:

* cctviz:  ``cctviz.read_ensemble(files, progress=False)`` (format detected per file)
* Thicket: ``Thicket.from_caliper(files)``, i.e. ``Thicket.reader_dispatch(
  GraphFrame.from_caliper, ...)`` with hatchet's json-split ``CaliperReader``,
  called with ``node_ordering=False`` (see "Caveats") and Thicket's defaults
  otherwise (union call tree, ``fill_perfdata=True``), progress bars off.

Each tool runs in a fresh Python subprocess (this same file with ``--child``),
so imports are fair and peak memory is per tool. The child reports:

* the wall time of the compose call alone (``time.perf_counter`` around it;
  interpreter start and imports excluded, import time reported separately);
* its peak resident set size (``VmHWM`` of the child itself, not ``ru_maxrss``,
  which on Linux keeps the parent's peak across ``exec``; this includes the
  interpreter and the imported libraries, whose RSS after import is shown too);
* optionally (``--tracemalloc``) the Python-level peak of a *separate*,
  untimed run under ``tracemalloc``.

The two tools run alternately on each case (cctviz first on even repeats,
Thicket first on odd ones); the table shows the median time and the largest
peak RSS over repeats. A tool that runs past ``--timeout`` is killed and shown
as ``> T s`` (its peak RSS at that moment as ``> M``), so the ratio becomes a
lower bound.

Cases
-----
* ``lulesh N`` (N = ``--sizes``, default 10 100 1000): the 8 real files of
  ``../shared/data/hatchet-tutorial/lulesh-scaling`` (LULESH on 1..512 MPI
  ranks, 45 regions), then N-8 synthetic copies written to a temporary
  directory, cycling through the real files (``--cycle-max-ranks`` limits the
  cycle to the smaller ones). In each copy every exclusive metric value is
  multiplied by its own lognormal factor (sigma 0.1, seeded numpy RNG) and the
  inclusive values are recomputed from the perturbed exclusive ones, so every
  file differs and stays internally consistent.
* ``synthetic 10k x 256``: a seeded random tree of 10,000 regions (random
  recursive tree, max depth about 30, mean about 11, names drawn with
  repeats from a pool of 1,200, unique among siblings) written as 256
  single-rank json-split files (``mpi.rank`` 0 in each, like 256 runs);
  each file drops its own random 1% of the leaves and perturbs the metrics as
  above. The same tree is also composed from only its first 8 files
  (``--big-small-profiles``), where Thicket finishes, to give a measured
  ratio on the big tree. Skip both with ``--no-big``; resize with
  ``--big-nodes/--big-profiles``.

Limits: a run is killed after ``--timeout`` (default 1800 s) on the LULESH
cases and ``--big-timeout`` (default 600 s) on the synthetic ones.

Profiles are counted differently by the two tools: a Thicket profile is a
file (its ranks are an index level), a cctviz profile is a (file, rank)
pair. The table shows both. After timing (untimed), each child reports what it
built: node count, (file, rank) pairs with data, and per call path the sums of
exclusive and inclusive ``time`` over all profiles; the parent checks that the
two tools agree and prints the comparison.

Run
---
    .venv/bin/python benchmarks/compose.py            # full run: ~30 min on 2 cores
    .venv/bin/python benchmarks/compose.py --quick    # smoke run: N=10 only, no big case
    .venv/bin/python benchmarks/compose.py --sizes 10 100 --no-big --repeat 3

Caveats
-------
* Thicket's ``from_caliper`` does not pass ``node_ordering`` and hatchet's
  ``CaliperReader`` defaults to ``node_ordering=True``, which fails with
  ``KeyError: "['Node order'] not found in axis"`` on json-split files without
  a ``Node order`` column (the LULESH files have none), so the benchmark
  calls ``Thicket.reader_dispatch`` -- exactly the code path of
  ``Thicket.from_caliper`` -- with ``node_ordering=False``.
* Thicket stores inclusive metrics read from the files and pads the table to
  every (node, file, rank) combination; cctviz stores exclusive metrics in a
  sparse long table and derives inclusive ones lazily (the time to
  materialise them, ``ens.long_table``, is reported separately as "cctviz +inc").
* The padding (``fill_perfdata=True``, Thicket's default) costs Thicket much
  time and memory here: with ``--thicket-no-fill`` (``fill_perfdata=False``)
  Thicket composed the 1,000 LULESH files in 305 s with a 1.8 GB peak
  (default: 845 s, 5.7 GB), i.e. about 11x cctviz's time and a similar peak.

This is a benchmark, not a test: nothing is asserted on timings.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve()
REPO = HERE.parents[1]
DEFAULT_DATA = REPO.parent / "shared" / "data" / "hatchet-tutorial" / "lulesh-scaling"

EXC_COL = "sum#time.duration"
INC_COL = "inclusive#sum#time.duration"
RANK_COL = "mpi.rank"
PATH_COL = "path"
SECTIONS = ("data", "columns", "column_metadata", "nodes")


# ---------------------------------------------------------------- helpers
def _rss_kib(field: str = "VmRSS", pid: int | str = "self") -> int | None:
    """A memory field of /proc/<pid>/status in KiB (None if unavailable)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def _round1(x: np.ndarray) -> np.ndarray:
    return np.round(x, 1)


def _accumulate_inclusive(
    parent: np.ndarray, depth: np.ndarray, node: np.ndarray, rank: np.ndarray, exc: np.ndarray
) -> np.ndarray:
    """Inclusive value of each row: sum of the exclusive values of the same rank
    over the subtree of the row's node. ``parent``/``depth`` describe the tree
    of path nodes (local ids); ``node`` holds -1 for rows without a path."""
    ok = node >= 0
    uranks, rk = np.unique(rank[ok], return_inverse=True)
    R = max(uranks.size, 1)
    n = parent.size
    acc = np.zeros((n, R))
    np.add.at(acc, (node[ok], rk), exc[ok])
    for d in range(int(depth.max(initial=0)), 0, -1):
        lev = np.flatnonzero(depth == d)
        np.add.at(acc, parent[lev], acc[lev])
    out = exc.copy()
    out[ok] = acc[node[ok], rk]
    return out


class CaliperTemplate:
    """A Caliper json-split document, prepared for writing perturbed copies."""

    def __init__(self, doc: dict):
        self.doc = doc
        cols = doc["columns"]
        self.cols = cols
        self.cmeta = doc["column_metadata"]
        self.extra = {k: v for k, v in doc.items() if k not in SECTIONS}
        data = doc["data"]
        j_path = cols.index(PATH_COL)
        j_rank = cols.index(RANK_COL) if RANK_COL in cols else None
        nodes = doc["nodes"]
        # local ids of path nodes, their parent (nearest path ancestor) and depth
        is_path = np.array([nd["column"] == PATH_COL for nd in nodes], dtype=bool)
        local = np.full(len(nodes), -1, dtype=np.int64)
        local[is_path] = np.arange(int(is_path.sum()))
        parent = np.full(int(is_path.sum()), -1, dtype=np.int64)
        depth = np.zeros(int(is_path.sum()), dtype=np.int64)
        for i, nd in enumerate(nodes):
            if not is_path[i]:
                continue
            p = nd.get("parent", -1)
            while p >= 0 and not is_path[p]:
                p = nodes[p].get("parent", -1)
            if p >= 0:
                parent[local[i]] = local[p]
        for i in range(parent.size):  # depth by walking up (tiny trees; no order assumed)
            d, q = 0, parent[i]
            while q >= 0:
                d, q = d + 1, parent[q]
            depth[i] = d
        self.parent, self.depth = parent, depth
        raw_node = [row[j_path] for row in data]
        self.node = np.array([local[x] if x is not None else -1 for x in raw_node], dtype=np.int64)
        self.rank = (
            np.array([row[j_rank] for row in data], dtype=np.int64)
            if j_rank is not None
            else np.zeros(len(data), np.int64)
        )
        # value columns: pairs (exclusive, inclusive) get a consistent inclusive,
        # other value columns are scaled by the row's factor
        self.values = {
            j: np.array([np.nan if row[j] is None else row[j] for row in data], dtype=np.float64)
            for j, m in enumerate(self.cmeta)
            if m.get("is_value") and cols[j] not in (RANK_COL, "Node order")
        }
        self.pairs: dict[int, int] = {}
        for j in list(self.values):
            name = cols[j]
            if name.startswith("inclusive#") and name[len("inclusive#") :] in cols:
                self.pairs[j] = cols.index(name[len("inclusive#") :])
        self.data = data

    def perturbed(self, rng: np.random.Generator, sigma: float) -> dict:
        nrow = len(self.data)
        f = rng.lognormal(0.0, sigma, nrow)
        new: dict[int, np.ndarray] = {}
        for j, v in self.values.items():
            if j not in self.pairs:
                new[j] = _round1(v * f)
        for j_inc, j_exc in self.pairs.items():
            inc = _accumulate_inclusive(self.parent, self.depth, self.node, self.rank, new[j_exc])
            nopath = self.node < 0
            inc[nopath] = _round1(self.values[j_inc][nopath] * f[nopath])
            new[j_inc] = _round1(inc)
        cols_lists = {j: [None if np.isnan(x) else float(x) for x in v] for j, v in new.items()}
        rows = []
        for k, row in enumerate(self.data):
            r = list(row)
            for j, lst in cols_lists.items():
                r[j] = lst[k]
            rows.append(r)
        out = {
            "data": rows,
            "columns": self.cols,
            "column_metadata": self.cmeta,
            "nodes": self.doc["nodes"],
        }
        out.update(self.extra)
        return out


def write_lulesh_copies(
    real: list[Path],
    n_copies: int,
    outdir: Path,
    seed: int,
    sigma: float,
    cycle_max_ranks: int | None,
) -> list[Path]:
    """Perturbed copies of the real files, cycling through them (smallest first)."""
    bases = [p for p in real if cycle_max_ranks is None or _ranks_of(p) <= cycle_max_ranks]
    templates = [CaliperTemplate(json.loads(p.read_text())) for p in bases]
    rng = np.random.default_rng(seed)
    out = []
    for k in range(n_copies):
        b = k % len(bases)
        path = outdir / f"copy{k:05d}-{bases[b].stem}.json"
        path.write_text(json.dumps(templates[b].perturbed(rng, sigma), separators=(",", ":")))
        out.append(path)
    return out


def _ranks_of(p: Path) -> int:
    """Rank count from the LULESH file name (…-512cores.json, …-1core.json)."""
    s = p.stem.rsplit("-", 1)[-1]
    digits = "".join(ch for ch in s if ch.isdigit())
    return int(digits) if digits else 0


def make_random_tree(n: int, seed: int, pool_size: int = 1200) -> tuple[np.ndarray, list[str]]:
    """A random recursive tree (parent[i] < i) with names drawn from a pool,
    repeated across the tree but unique among siblings."""
    rng = np.random.default_rng(seed)
    parent = np.full(n, -1, dtype=np.int64)
    # random recursive tree: the parent of node i is uniform among the earlier
    # nodes, or (30% of the time) among the 20 just before it, which deepens
    # the tree (10,000 nodes: max depth ~30, mean ~11)
    i = np.arange(1, n)
    lo = np.where(rng.random(n - 1) < 0.3, np.maximum(i - 20, 0), 0)
    parent[1:] = lo + (rng.random(n - 1) * (i - lo)).astype(np.int64)
    stems = [
        "solve",
        "compute",
        "exchange",
        "apply",
        "update",
        "init",
        "reduce",
        "kernel",
        "loop",
        "assemble",
        "halo",
        "io_write",
        "io_read",
        "precond",
        "smooth",
        "interp",
        "advance",
        "flux",
    ]
    mpi = [
        "MPI_Allreduce",
        "MPI_Waitall",
        "MPI_Isend",
        "MPI_Irecv",
        "MPI_Barrier",
        "MPI_Bcast",
        "MPI_Reduce",
        "MPI_Wait",
        "MPI_Alltoall",
        "MPI_Gather",
    ]
    pool = mpi + [f"{stems[i % len(stems)]}_{i}" for i in range(pool_size - len(mpi))]
    w = 1.0 / np.arange(1, len(pool) + 1) ** 0.8  # Zipf-like: some names are frequent
    w /= w.sum()
    names: list[str] = ["main"]
    used: dict[int, set[str]] = {}
    draws = iter(rng.choice(len(pool), size=4 * n, p=w))
    for i in range(1, n):
        sib = used.setdefault(int(parent[i]), set())
        while True:
            try:
                nm = pool[next(draws)]
            except StopIteration:  # pragma: no cover - extremely unlikely
                nm = pool[int(rng.integers(len(pool)))]
            if nm not in sib:
                break
        sib.add(nm)
        names.append(nm)
    return parent, names


def write_big_case(
    n_nodes: int, n_profiles: int, outdir: Path, seed: int, sigma: float, drop_frac: float = 0.01
) -> tuple[list[Path], dict]:
    parent, names = make_random_tree(n_nodes, seed)
    rng = np.random.default_rng(seed + 1)
    depth = np.zeros(n_nodes, dtype=np.int64)
    for i in range(1, n_nodes):
        depth[i] = depth[parent[i]] + 1
    nchild = np.bincount(parent[1:], minlength=n_nodes)
    leaves = np.flatnonzero(nchild == 0)
    base_exc = _round1(rng.lognormal(6.0, 2.0, n_nodes))
    cols = [INC_COL, RANK_COL, EXC_COL, PATH_COL]
    cmeta = [{"is_value": True}, {"is_value": True}, {"is_value": True}, {"is_value": False}]
    n_drop = int(round(drop_frac * leaves.size))
    files = []
    for p in range(n_profiles):
        keep = np.ones(n_nodes, dtype=bool)
        keep[rng.choice(leaves, size=n_drop, replace=False)] = False
        kept = np.flatnonzero(keep)
        newid = np.full(n_nodes, -1, dtype=np.int64)
        newid[kept] = np.arange(kept.size)
        kpar = np.where(parent[kept] >= 0, newid[np.maximum(parent[kept], 0)], -1)
        exc = _round1(base_exc[kept] * rng.lognormal(0.0, sigma, kept.size))
        inc = _round1(
            _accumulate_inclusive(
                kpar, depth[kept], np.arange(kept.size), np.zeros(kept.size, np.int64), exc
            )
        )
        nodes = []
        for nid, pp in zip(kept.tolist(), kpar.tolist()):
            nd = {"label": names[nid], "column": PATH_COL}
            if pp >= 0:
                nd["parent"] = pp
            nodes.append(nd)
        data = [[a, 0, b, i] for i, (a, b) in enumerate(zip(inc.tolist(), exc.tolist()))]
        doc = {"data": data, "columns": cols, "column_metadata": cmeta, "nodes": nodes}
        path = outdir / f"big{p:04d}.json"
        path.write_text(json.dumps(doc, separators=(",", ":")))
        files.append(path)
    info = {
        "max_depth": int(depth.max()),
        "mean_depth": float(depth.mean()),
        "leaves": int(leaves.size),
        "distinct_names": len(set(names)),
        "dropped_per_profile": n_drop,
    }
    return files, info


# ---------------------------------------------------------------- child side
def _paths_cctviz(names: list[str], parent: np.ndarray) -> list[str]:
    out: list[str] = [""] * len(names)
    for i, (nm, p) in enumerate(zip(names, parent.tolist())):  # parents precede children (preorder)
        out[i] = nm if p < 0 else out[p] + "/" + nm
    return out


def child_main(
    tool: str, list_file: str, result_file: str, use_tracemalloc: bool, thicket_fill: bool = True
) -> None:
    files = [line for line in Path(list_file).read_text().splitlines() if line]
    res: dict = {"tool": tool, "n_files": len(files)}
    if use_tracemalloc:
        import tracemalloc
    t0 = time.perf_counter()
    if tool == "cctviz":
        import cctviz
    else:
        import contextlib
        import io

        with contextlib.redirect_stdout(io.StringIO()):  # thicket prints a note about seaborn
            import hatchet  # noqa: F401
            import thicket  # noqa: F401
    res["import_s"] = time.perf_counter() - t0
    res["rss_after_import_mb"] = (_rss_kib() or 0) / 1024
    if use_tracemalloc:
        tracemalloc.start()

    if tool == "cctviz":
        t = time.perf_counter()
        ens = cctviz.read_ensemble(files, progress=False)
        res["compose_s"] = time.perf_counter() - t
        res["peak_rss_mb"] = (_rss_kib("VmHWM") or 0) / 1024
        if use_tracemalloc:
            res["tracemalloc_peak_mb"] = tracemalloc.get_traced_memory()[1] / 2**20
            tracemalloc.stop()
        t = time.perf_counter()
        data = ens.long_table  # materialise the inclusive metrics (lazy in cctviz)
        res["inclusive_s"] = time.perf_counter() - t
        res["peak_rss_with_inc_mb"] = (_rss_kib("VmHWM") or 0) / 1024
        # ---- what was built (untimed)
        tree = ens.tree
        n = len(tree)
        rows = ens.exclusive_rows
        node = rows["node"].to_numpy()
        exc = np.bincount(node, weights=rows["time"].to_numpy(), minlength=n)
        inc = np.bincount(node, weights=data["time (inc)"].to_numpy(), minlength=n)
        paths = _paths_cctviz(tree.names.tolist(), tree.parent)
        res.update(
            nodes=n,
            profiles=int(ens.n_profiles),
            files_seen=int(ens.profiles["file"].nunique()),
            pairs_with_data=int(ens.n_profiles),
            stored_rows=int(len(rows)),
            per_path={p: [float(a), float(b)] for p, a, b in zip(paths, exc, inc)},
        )
    else:
        from hatchet import GraphFrame
        from thicket import Thicket

        progress = {"read": 0, "merged": 0}

        def tick(what):
            progress[what] += 1
            print(
                f"PROGRESS read {progress['read']} merged {progress['merged']}",
                file=sys.stderr,
                flush=True,
            )

        def reader(f, *a, **k):
            gf = GraphFrame.from_caliper(f, *a, **k)
            tick("read")
            return gf

        orig_concat = Thicket.concat_thickets

        def concat_counting(*a, **k):
            out = orig_concat(*a, **k)
            tick("merged")
            return out

        Thicket.concat_thickets = staticmethod(concat_counting)
        t = time.perf_counter()
        # == Thicket.from_caliper(files, disable_tqdm=True), plus node_ordering=False for the reader
        tk = Thicket.reader_dispatch(
            reader, False, thicket_fill, True, files, None, node_ordering=False
        )
        res["compose_s"] = time.perf_counter() - t
        res["peak_rss_mb"] = (_rss_kib("VmHWM") or 0) / 1024
        if use_tracemalloc:
            res["tracemalloc_peak_mb"] = tracemalloc.get_traced_memory()[1] / 2**20
            tracemalloc.stop()
        # ---- what was built (untimed)
        df = tk.dataframe
        paths: dict = {}
        for root in tk.graph.roots:
            stack = [(root, root.frame["name"])]
            while stack:
                nd, pth = stack.pop()
                paths[nd] = pth
                stack.extend((c, pth + "/" + c.frame["name"]) for c in nd.children)
        g = df[["time", "time (inc)"]].groupby(level="node").sum(min_count=0)
        per_path = {
            paths[nd]: [float(a), float(b)] for nd, a, b in zip(g.index, g["time"], g["time (inc)"])
        }
        for pth in paths.values():
            per_path.setdefault(pth, [0.0, 0.0])
        has = df["time"].notna() | df["time (inc)"].notna()
        lv = [x for x in df.index.names if x != "node"]
        res.update(
            nodes=len(tk.graph),
            profiles=len(tk.profile),
            files_seen=len(tk.profile),
            pairs_with_data=int(df.index[has.to_numpy()].droplevel("node").unique().size)
            if lv
            else 1,
            stored_rows=int(len(df)),
            per_path=per_path,
        )
    Path(result_file).write_text(json.dumps(res))


# ---------------------------------------------------------------- parent side
def run_child(
    tool: str,
    files: list[Path],
    workdir: Path,
    timeout: float,
    use_tracemalloc: bool = False,
    thicket_fill: bool = True,
) -> dict:
    lst = workdir / f"files-{tool}.txt"
    lst.write_text("\n".join(str(p) for p in files) + "\n")
    res_file = workdir / f"result-{tool}.json"
    err_file = workdir / f"stderr-{tool}.txt"
    res_file.unlink(missing_ok=True)
    cmd = [
        sys.executable,
        str(HERE),
        "--child",
        tool,
        "--list",
        str(lst),
        "--result",
        str(res_file),
    ]
    if use_tracemalloc:
        cmd.append("--tracemalloc")
    if not thicket_fill:
        cmd.append("--thicket-no-fill")
    env = dict(os.environ, PYTHONHASHSEED="0", TQDM_DISABLE="1")
    t0 = time.perf_counter()
    with open(err_file, "w") as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, env=env, cwd=str(REPO))
        hwm = 0
        timed_out = False
        try:
            while True:
                try:
                    proc.wait(timeout=0.5)
                    break
                except subprocess.TimeoutExpired:
                    hwm = max(hwm, _rss_kib("VmHWM", proc.pid) or 0)
                    if time.perf_counter() - t0 > timeout:
                        proc.kill()
                        proc.wait()
                        timed_out = True
                        break
        finally:
            if proc.poll() is None:  # interrupted: do not leave the child running
                proc.kill()
                proc.wait()
    wall = time.perf_counter() - t0
    if timed_out:
        last = ""
        for line in err_file.read_text().splitlines():
            if line.startswith("PROGRESS"):
                last = line[len("PROGRESS ") :]
        return {
            "tool": tool,
            "timeout": True,
            "limit_s": timeout,
            "wall_s": wall,
            "peak_rss_mb": hwm / 1024,
            "progress": last,
        }
    if proc.returncode != 0 or not res_file.exists():
        tail = "\n".join(
            ln for ln in err_file.read_text().splitlines() if not ln.startswith("PROGRESS")
        )[-3000:]
        return {
            "tool": tool,
            "error": f"exit code {proc.returncode}",
            "stderr": tail,
            "wall_s": wall,
        }
    res = json.loads(res_file.read_text())
    res["wall_s"] = wall
    return res


def compare(c: dict, t: dict) -> list[str]:
    """What both tools built, side by side; flags disagreements."""
    out = []
    ok = True
    out.append(f"    unified nodes: cctviz {c['nodes']}, Thicket {t['nodes']}")
    ok &= c["nodes"] == t["nodes"]
    out.append(
        f"    (file, rank) pairs with data: cctviz {c['pairs_with_data']}, Thicket {t['pairs_with_data']}"
        f"  [profiles as counted by each: cctviz {c['profiles']} (file, rank) pairs, "
        f"Thicket {t['profiles']} files]"
    )
    ok &= c["pairs_with_data"] == t["pairs_with_data"] and c["files_seen"] == t["files_seen"]
    out.append(
        f"    stored rows: cctviz {c['stored_rows']:,} (sparse long table), "
        f"Thicket {t['stored_rows']:,} ((node, profile, rank) table, NaN-padded unless --thicket-no-fill)"
    )
    pc, pt = c["per_path"], t["per_path"]
    same_paths = set(pc) == set(pt)
    ok &= same_paths
    if not same_paths:
        only_c, only_t = sorted(set(pc) - set(pt))[:3], sorted(set(pt) - set(pc))[:3]
        out.append(f"    call paths differ: only in cctviz {only_c}, only in Thicket {only_t}")
    common = sorted(set(pc) & set(pt))
    a = np.array([pc[k] for k in common]) if common else np.zeros((0, 2))
    b = np.array([pt[k] for k in common]) if common else np.zeros((0, 2))
    with np.errstate(invalid="ignore", divide="ignore"):
        rel = np.abs(a - b) / np.maximum(np.maximum(np.abs(a), np.abs(b)), 1e-300)
    rel[(a == 0) & (b == 0)] = 0
    mx = rel.max(axis=0) if rel.size else np.zeros(2)
    ok &= bool((mx < 1e-6).all())
    roots = [k for k in common if "/" not in k]
    for r in roots[:1]:
        out.append(
            f"    total over all profiles at '{r}': time (inc) cctviz {pc[r][1]:.6g}, Thicket {pt[r][1]:.6g}"
        )
    out.append(
        f"    sum of exclusive time over everything: cctviz {a[:, 0].sum():.6g}, Thicket {b[:, 0].sum():.6g}"
    )
    out.append(
        f"    per call path ({len(common)} paths), max relative difference: "
        f"exclusive {mx[0]:.1e}, inclusive {mx[1]:.1e}"
    )
    out.append("    -> " + ("AGREE" if ok else "DISAGREE"))
    return out


def fmt_time(r: dict) -> str:
    if r.get("timeout"):
        return f"> {r['limit_s']:.0f}"
    if "error" in r:
        return "error"
    return f"{r['compose_s']:.3f}" if r["compose_s"] < 10 else f"{r['compose_s']:.1f}"


def fmt_mem(r: dict) -> str:
    if "error" in r:
        return "error"
    return ("> " if r.get("timeout") else "") + f"{r['peak_rss_mb']:.0f}"


def summarise(runs: list[dict]) -> dict:
    """Median time, largest peak over repeats; a timeout anywhere wins."""
    for r in runs:
        if r.get("timeout") or "error" in r:
            return r
    out = dict(runs[0])
    out["compose_s"] = statistics.median(r["compose_s"] for r in runs)
    out["compose_all"] = [r["compose_s"] for r in runs]
    out["peak_rss_mb"] = max(r["peak_rss_mb"] for r in runs)
    for k in ("inclusive_s", "import_s"):
        if k in out:
            out[k] = statistics.median(r[k] for r in runs)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--sizes",
        type=int,
        nargs="+",
        default=[10, 100, 1000],
        help="numbers of files (default 10 100 1000)",
    )
    ap.add_argument("--quick", action="store_true", help="smoke run: N=10, one repeat, no big case")
    ap.add_argument(
        "--no-big", action="store_true", help="skip the synthetic 10k-node x 256-profile case"
    )
    ap.add_argument("--big-nodes", type=int, default=10_000)
    ap.add_argument("--big-profiles", type=int, default=256)
    ap.add_argument(
        "--big-small-profiles",
        type=int,
        default=8,
        help="also run the big tree with only this many files, so that Thicket gets a measured "
        "time on it (default 8; 0 skips)",
    )
    ap.add_argument(
        "--repeat",
        type=int,
        default=3,
        help="runs per tool and case, alternating order (default 3; 1 once a run takes over --repeat-max-s)",
    )
    ap.add_argument("--repeat-max-s", type=float, default=60.0)
    ap.add_argument(
        "--timeout",
        type=float,
        default=1800.0,
        help="limit per tool run on the LULESH cases, seconds (default 1800)",
    )
    ap.add_argument(
        "--big-timeout",
        type=float,
        default=600.0,
        help="limit per tool run on the synthetic big-tree cases, seconds (default 600)",
    )
    ap.add_argument(
        "--cycle-max-ranks",
        type=int,
        default=None,
        help="synthetic copies cycle only through real files with at most this many ranks",
    )
    ap.add_argument(
        "--sigma", type=float, default=0.1, help="sigma of the lognormal metric perturbation"
    )
    ap.add_argument("--seed", type=int, default=12345)
    ap.add_argument(
        "--data", type=Path, default=DEFAULT_DATA, help="folder of the real LULESH files"
    )
    ap.add_argument(
        "--tracemalloc",
        action="store_true",
        help="also measure the Python-level peak (tracemalloc) in separate, untimed runs",
    )
    ap.add_argument(
        "--thicket-no-fill",
        action="store_true",
        help="call Thicket with fill_perfdata=False (not its default): no NaN padding",
    )
    ap.add_argument("--child", choices=["cctviz", "thicket"], help=argparse.SUPPRESS)
    ap.add_argument("--list", help=argparse.SUPPRESS)
    ap.add_argument("--result", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.child:
        child_main(args.child, args.list, args.result, args.tracemalloc, not args.thicket_no_fill)
        return 0

    if args.quick:
        args.sizes, args.no_big, args.repeat = [10], True, 1
    # SIGTERM: unwind normally, so that the child is killed and the temp dir removed
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    t_start = time.perf_counter()
    real = sorted(args.data.glob("*.json"), key=_ranks_of)
    if not real:
        print(f"no Caliper JSON files in {args.data}", file=sys.stderr)
        return 1
    print(
        f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs; real files: {len(real)} in {args.data}"
    )
    try:
        from importlib.metadata import version

        print(
            "versions: "
            + ", ".join(
                f"{p} {version(p)}"
                for p in ("cctviz", "llnl-thicket", "llnl-hatchet", "pandas", "numpy")
            )
        )
    except Exception:  # noqa: BLE001
        pass
    try:
        head = subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(REPO), "status", "--porcelain", "--", "cctviz"],
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
        if head:
            print(f"repository at {head}" + (" (cctviz/ has uncommitted changes)" if dirty else ""))
    except (OSError, subprocess.SubprocessError):
        pass

    tmp = Path(tempfile.mkdtemp(prefix="cctviz-bench-"))
    try:
        cases: list[tuple[str, list[Path]]] = []
        n_copies = max(0, max(args.sizes) - len(real))
        t = time.perf_counter()
        copies = write_lulesh_copies(
            real, n_copies, tmp, args.seed, args.sigma, args.cycle_max_ranks
        )
        if n_copies:
            size = sum(p.stat().st_size for p in copies) / 2**20
            cyc = (
                "all 8 real files"
                if args.cycle_max_ranks is None
                else f"real files with <= {args.cycle_max_ranks} ranks"
            )
            print(
                f"wrote {n_copies} perturbed copies cycling through {cyc} ({size:.0f} MiB) "
                f"in {time.perf_counter() - t:.1f} s"
            )
        allfiles = list(real) + copies
        for n in sorted(args.sizes):
            cases.append((f"lulesh N={n}", allfiles[:n]))
        if not args.no_big:
            t = time.perf_counter()
            bigdir = tmp / "big"
            bigdir.mkdir()
            bigfiles, info = write_big_case(
                args.big_nodes, args.big_profiles, bigdir, args.seed, args.sigma
            )
            size = sum(p.stat().st_size for p in bigfiles) / 2**20
            print(
                f"wrote synthetic tree {args.big_nodes} nodes x {args.big_profiles} files ({size:.0f} MiB) "
                f"in {time.perf_counter() - t:.1f} s: max depth {info['max_depth']}, mean depth "
                f"{info['mean_depth']:.1f}, {info['leaves']} leaves, {info['distinct_names']} distinct names, "
                f"{info['dropped_per_profile']} leaves dropped per file"
            )
            k = args.big_nodes // 1000
            if 0 < args.big_small_profiles < args.big_profiles:
                cases.append(
                    (
                        f"synthetic {k}k x {args.big_small_profiles}",
                        bigfiles[: args.big_small_profiles],
                    )
                )
            cases.append((f"synthetic {k}k x {args.big_profiles}", bigfiles))

        results = []
        for name, files in cases:
            limit = args.big_timeout if name.startswith("synthetic") else args.timeout
            print(f"\n== {name}: {len(files)} files (limit {limit:.0f} s per run)", flush=True)
            runs: dict[str, list[dict]] = {"cctviz": [], "thicket": []}
            for rep in range(args.repeat):
                order = ("cctviz", "thicket") if rep % 2 == 0 else ("thicket", "cctviz")
                for tool in order:
                    r = run_child(tool, files, tmp, limit, thicket_fill=not args.thicket_no_fill)
                    runs[tool].append(r)
                    if r.get("timeout"):
                        print(
                            f"   {tool:8s} run {rep + 1}: killed after {limit:.0f} s "
                            f"(progress: {r['progress'] or 'none'}; peak RSS so far {r['peak_rss_mb']:.0f} MB)",
                            flush=True,
                        )
                    elif "error" in r:
                        print(
                            f"   {tool:8s} run {rep + 1}: FAILED ({r['error']})\n{r['stderr']}",
                            flush=True,
                        )
                    else:
                        print(
                            f"   {tool:8s} run {rep + 1}: compose {r['compose_s']:.3f} s, peak RSS "
                            f"{r['peak_rss_mb']:.0f} MB (after imports {r['rss_after_import_mb']:.0f} MB, "
                            f"import {r['import_s']:.2f} s)",
                            flush=True,
                        )
                slow = any(
                    r.get("timeout") or "error" in r or r.get("compose_s", 0) > args.repeat_max_s
                    for rr in runs.values()
                    for r in rr
                )
                if slow:
                    break
            c, t = summarise(runs["cctviz"]), summarise(runs["thicket"])
            if (
                "error" not in c
                and "error" not in t
                and not c.get("timeout")
                and not t.get("timeout")
            ):
                for line in compare(c, t):
                    print(line)
            if args.tracemalloc:
                for tool in ("cctviz", "thicket"):
                    r = run_child(
                        tool, files, tmp, limit, True, thicket_fill=not args.thicket_no_fill
                    )
                    (c if tool == "cctviz" else t)["tracemalloc_peak_mb"] = r.get(
                        "tracemalloc_peak_mb"
                    )
                    print(
                        f"   {tool:8s} tracemalloc peak: "
                        + (
                            f"{r['tracemalloc_peak_mb']:.0f} MB"
                            if "tracemalloc_peak_mb" in r
                            else "n/a (run killed at the limit or failed)"
                        )
                    )
            results.append((name, files, c, t))

        # ------------------------------------------------------------ table
        print(
            "\nCompose an ensemble: cctviz.read_ensemble vs Thicket.from_caliper "
            f"(fill_perfdata={not args.thicket_no_fill}; same files, fresh process each)"
        )
        print(
            "time = wall time of the compose call (median of runs); peak = peak RSS of the process, MB "
            "(includes interpreter and imports)"
        )
        hdr = [
            "case",
            "N files",
            "profiles c / T",
            "nodes",
            "cctviz s",
            "Thicket s",
            "ratio T/c",
            "cctviz MB",
            "Thicket MB",
        ]
        rows = []
        for name, files, c, t in results:
            prof = f"{c.get('profiles', '?')} / {t.get('profiles', '?')}"
            nodes = str(c.get("nodes", t.get("nodes", "?")))
            if "error" in c or "error" in t or c.get("timeout"):
                ratio = "n/a"
            elif t.get("timeout"):
                ratio = f"> {t['limit_s'] / c['compose_s']:.0f}x"
                prof = f"{c['profiles']} / {len(files)}"
            else:
                ratio = f"{t['compose_s'] / c['compose_s']:.1f}x"
            rows.append(
                [
                    name,
                    str(len(files)),
                    prof,
                    nodes,
                    fmt_time(c),
                    fmt_time(t),
                    ratio,
                    fmt_mem(c),
                    fmt_mem(t),
                ]
            )
        w = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(hdr)]
        line = "  ".join(h.ljust(w[i]) if i == 0 else h.rjust(w[i]) for i, h in enumerate(hdr))
        print(line)
        print("-" * len(line))
        for r in rows:
            print("  ".join(x.ljust(w[i]) if i == 0 else x.rjust(w[i]) for i, x in enumerate(r)))
        print(
            "profiles: cctviz counts (file, rank) pairs, Thicket counts files (ranks are an index level)"
        )

        print("\ndetails (medians):")
        for name, _files, c, t in results:
            parts = []
            for tool, r in (("cctviz", c), ("Thicket", t)):
                if "compose_all" in r:
                    parts.append(
                        f"{tool} runs " + ", ".join(f"{x:.3f}" for x in r["compose_all"]) + " s"
                    )
                if "inclusive_s" in r:
                    parts.append(
                        f"{tool} +inc (ens.long_table) {r['inclusive_s']:.3f} s, peak {r['peak_rss_with_inc_mb']:.0f} MB"
                    )
                if "import_s" in r:
                    parts.append(
                        f"imports: {tool} {r['import_s']:.2f} s / {r['rss_after_import_mb']:.0f} MB"
                    )
            if t.get("timeout"):
                parts.append(
                    f"Thicket killed at {t['limit_s']:.0f} s, progress {t['progress'] or 'none'}"
                )
            for tool, r in (("cctviz", c), ("Thicket", t)):
                if r.get("tracemalloc_peak_mb") is not None:
                    parts.append(f"{tool} tracemalloc peak {r['tracemalloc_peak_mb']:.0f} MB")
            print(f"  {name}: " + "; ".join(parts))
        print(f"\ntotal benchmark time {time.perf_counter() - t_start:.0f} s")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
