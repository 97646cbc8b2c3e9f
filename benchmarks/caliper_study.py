"""A study of many Caliper json-split files made from the real LULESH and RAJAPerf
profiles (``benchmarks/compose_parallel.py``, ``tests/readers/test_batch_compose.py``).

- **LULESH** (``../shared/data/hatchet-tutorial/lulesh-scaling``, json-split as
  Caliper's ``cali-query`` wrote them; the 1- and 8-rank runs by default): every
  exclusive value of every record times its own lognormal factor, rounded to whole
  microseconds as the timer wrote them, the inclusive column recomputed from the
  exclusive ones (each file stays consistent).
- **RAJAPerf** (``../shared/data/thicket/rajaperf``, native ``.cali`` from the
  ``spot`` controller): read by cctviz's ``cali`` reader and written back as
  json-split with the attributes Caliper names (``sum#inclusive#sum#time.duration``
  aliased ``Total time``, ``max#inclusive#...`` ``Max time/rank``, the ``any#any#max#``
  constants), their stated units and the run's metadata; the times of each copy
  scaled by one lognormal factor (so the maxima stay maxima of their subtrees).

Variation: one file in ``missing_every`` lacks a leaf node (its records go with
it: a kernel not built, a region not entered), and one RAJAPerf file in
``drop_every`` lacks the ``Avg time/rank`` and ``Min time/rank`` columns (a
metric some files do not have). Seeded: the same arguments write the same files.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
LULESH = sorted((DATA / "hatchet-tutorial" / "lulesh-scaling").glob("*.json"))
RAJAPERF = sorted((DATA / "thicket" / "rajaperf").rglob("*.cali"))
SECTIONS = ("data", "columns", "column_metadata", "nodes")
#: Caliper attributes of the metrics cctviz names after their spot alias
SPOT = {
    "Min time/rank": "min#inclusive#sum#time.duration",
    "Max time/rank": "max#inclusive#sum#time.duration",
    "Avg time/rank": "avg#inclusive#sum#time.duration",
    "Total time": "sum#inclusive#sum#time.duration",
}
TIMES = tuple(SPOT)


def _ranks(p: Path) -> int:
    digits = "".join(ch for ch in p.stem.rsplit("-", 1)[-1] if ch.isdigit())
    return int(digits) if digits else 0


def lulesh_docs(max_ranks: int = 8) -> list[dict[str, Any]]:
    """The real LULESH json-split documents of at most ``max_ranks`` ranks."""
    return [json.loads(p.read_text()) for p in LULESH if _ranks(p) <= max_ranks]


def rajaperf_docs() -> list[dict[str, Any]]:
    """The real RAJAPerf runs as json-split documents (see the module docstring)."""
    import cctviz

    return [_cali_to_json(cctviz.read(p)) for p in RAJAPERF]


def _cali_to_json(t: Any) -> dict[str, Any]:
    """A RAJAPerf Tree (one profile) as the json-split document Caliper writes."""
    names = list(t.exc_metrics)
    assumed = t.meta.get("units_assumed", {})
    columns, cmeta, series = [], [], []
    for m in names:
        attr = SPOT.get(m, f"any#any#max#{m}")
        inclusive = m in ("Total time", "Max time/rank")
        series.append(t.metrics[f"{m} (inc)" if inclusive else m].to_numpy(dtype=float))
        md: dict[str, Any] = {"is_value": True, "attribute.alias": m}
        if m in t.units and m not in assumed:
            md["attribute.unit"] = t.units[m]
        columns.append(attr)
        cmeta.append(md)
    columns.append("path")
    cmeta.append({"is_value": False})
    parent = t.parent.tolist()
    nodes = [
        {"label": str(n), "column": "path", **({"parent": p} if p >= 0 else {})}
        for n, p in zip(t.names, parent)
    ]
    vals = np.column_stack(series)
    data = [[*(None if np.isnan(x) else float(x) for x in row), k] for k, row in enumerate(vals)]
    skip = {"units", "units_assumed", "aggregation", "aggregation_notes", "format", "source"}
    meta = {k: v for k, v in t.meta.items() if k not in skip and isinstance(v, (str, int, float))}
    return {"data": data, "columns": columns, "column_metadata": cmeta, "nodes": nodes, **meta}


def drop_leaf(doc: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
    """The document without one of its leaf nodes and that node's records."""
    nodes = doc["nodes"]
    parents = {nd.get("parent", -1) for nd in nodes}
    leaves = [i for i in range(len(nodes)) if i not in parents]
    gone = leaves[int(rng.integers(len(leaves)))]
    jp = doc["columns"].index("path")

    def moved(i: int) -> int:
        return i - 1 if i > gone else i

    new_nodes = []
    for i, nd in enumerate(nodes):
        if i == gone:
            continue
        nd = dict(nd)
        if nd.get("parent", -1) >= 0:
            nd["parent"] = moved(nd["parent"])
        new_nodes.append(nd)
    data = []
    for row in doc["data"]:
        if row[jp] == gone:
            continue
        row = list(row)
        if row[jp] is not None:
            row[jp] = moved(row[jp])
        data.append(row)
    return {**doc, "nodes": new_nodes, "data": data}


def drop_columns(doc: dict[str, Any], names: tuple[str, ...]) -> dict[str, Any]:
    """The document without the value columns of these aliases or attributes."""
    keep = [
        j
        for j, (c, m) in enumerate(zip(doc["columns"], doc["column_metadata"]))
        if m.get("attribute.alias") not in names and c not in names
    ]
    return {
        **doc,
        "columns": [doc["columns"][j] for j in keep],
        "column_metadata": [doc["column_metadata"][j] for j in keep],
        "data": [[row[j] for j in keep] for row in doc["data"]],
    }


def perturb_lulesh(doc: dict[str, Any], rng: np.random.Generator, sigma: float) -> dict[str, Any]:
    """Every record's exclusive time times its own factor (whole microseconds), the
    inclusive time recomputed per rank over the call tree."""
    cols = doc["columns"]
    je, ji, jp = (
        cols.index("sum#time.duration"),
        cols.index("inclusive#sum#time.duration"),
        cols.index("path"),
    )
    jr = cols.index("mpi.rank") if "mpi.rank" in cols else None
    data = doc["data"]
    n = len(doc["nodes"])
    parent = np.array([nd.get("parent", -1) for nd in doc["nodes"]], dtype=np.int64)
    node = np.array([-1 if r[jp] is None else r[jp] for r in data], dtype=np.int64)
    rank = np.array([0 if jr is None else r[jr] for r in data], dtype=np.int64)
    exc = np.array([np.nan if r[je] is None else r[je] for r in data], dtype=float)
    exc = np.round(exc * rng.lognormal(0.0, sigma, len(data)))
    ur, rk = np.unique(rank, return_inverse=True)
    acc = np.zeros((n, ur.size))
    ok = node >= 0
    np.add.at(acc, (node[ok], rk[ok]), np.nan_to_num(exc[ok]))
    depth = np.zeros(n, dtype=np.int64)
    for i in range(n):  # tiny trees
        q = parent[i]
        while q >= 0:
            depth[i] += 1
            q = parent[q]
    for d in range(int(depth.max(initial=0)), 0, -1):
        lev = np.flatnonzero(depth == d)
        np.add.at(acc, parent[lev], acc[lev])
    inc = np.where(ok, acc[np.maximum(node, 0), rk], exc)
    out = []
    for k, r in enumerate(data):
        r = list(r)
        r[je] = None if np.isnan(exc[k]) else float(exc[k])
        r[ji] = None if np.isnan(inc[k]) else float(inc[k])
        out.append(r)
    return {**doc, "data": out}


def perturb_rajaperf(doc: dict[str, Any], rng: np.random.Generator, sigma: float) -> dict[str, Any]:
    """The times of the run times one factor (maxima stay maxima of their subtrees)."""
    f = float(rng.lognormal(0.0, sigma))
    js = [j for j, m in enumerate(doc["column_metadata"]) if m.get("attribute.alias") in TIMES]
    data = []
    for r in doc["data"]:
        r = list(r)
        for j in js:
            if r[j] is not None:
                r[j] = r[j] * f
        data.append(r)
    return {**doc, "data": data}


def write_study(
    n_files: int,
    outdir: Path,
    *,
    seed: int = 12345,
    sigma: float = 0.1,
    max_ranks: int = 8,
    missing_every: int = 10,
    drop_every: int = 7,
) -> list[Path]:
    """``n_files`` json-split files in ``outdir``, a LULESH run and a RAJAPerf run
    in turn, each cycling through its real runs (the module docstring says how
    each copy differs from its source)."""
    kinds = {"lulesh": lulesh_docs(max_ranks), "rajaperf": rajaperf_docs()}
    rng = np.random.default_rng(seed)
    outdir.mkdir(parents=True, exist_ok=True)
    out = []
    for k in range(n_files):
        kind = ("lulesh", "rajaperf")[k % 2]
        doc = kinds[kind][(k // 2) % len(kinds[kind])]
        if k % missing_every == missing_every - 1:
            doc = drop_leaf(doc, rng)
        if kind == "lulesh":
            doc = perturb_lulesh(doc, rng, sigma)
        else:
            if k % drop_every == drop_every - 1:
                doc = drop_columns(doc, ("Avg time/rank", "Min time/rank"))
            doc = perturb_rajaperf(doc, rng, sigma)
        path = outdir / f"{kind}-{k:06d}.json"
        path.write_text(json.dumps(doc, separators=(",", ":")))
        out.append(path)
    return out
