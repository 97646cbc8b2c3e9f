"""cctviz's scaling models beside Extra-P's, on the same per-run values.

Extra-P (the reference implementation of the performance-model normal form,
https://github.com/extra-p/extrap) pins numpy<2 and PySide6, so it is never a
dependency of cctviz: this script makes a virtualenv of its own for it
(``~/.cache/cctviz-extrap-venv``: ``python -m venv`` then ``pip install
extrap``), exports the (nodes x scales) tables cctviz fits to Extra-P's JSON
input format (one file per set of scales: Extra-P wants every call path at
every point), runs Extra-P's default single-parameter modeler (``Basic``, the
same search space and selection cctviz reproduces) there, and prints both
models per node side by side with the time each took and the ratio.

    python benchmarks/scaling_models.py                      # LULESH + mpi_scaling_cali + synthetic
    python benchmarks/scaling_models.py --synthetic 2000     # more synthetic nodes
    python benchmarks/scaling_models.py --venv /path/to/venv # an Extra-P venv elsewhere

Times: cctviz is the best of 3 calls of ``fit_scaling`` on the table (all
nodes at once); Extra-P is ``ModelGenerator(...).model_all()`` in its own
process, reading excluded (one call: it takes seconds).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DATA = ROOT.parent / "shared" / "data"
VENV = Path(os.path.expanduser("~/.cache/cctviz-extrap-venv"))

import cctviz  # noqa: E402
from cctviz.perfmodel.scaling import fit_scaling, scaling_table  # noqa: E402

# runs inside Extra-P's virtualenv: read each JSON file, model, print JSON
_RUNNER = r"""
import json, sys, time, warnings
warnings.simplefilter("ignore")
from extrap.fileio.file_reader.json_file_reader import JsonFileReader
from extrap.modelers.model_generator import ModelGenerator
out = {"models": {}, "seconds": 0.0, "version": None}
try:
    from importlib.metadata import version
    out["version"] = version("extrap")
except Exception:
    pass
for path in sys.argv[1:]:
    exp = JsonFileReader().read_experiment(path)
    gen = ModelGenerator(exp, "Basic")
    t = time.perf_counter()
    gen.model_all()
    out["seconds"] += time.perf_counter() - t
    param = exp.parameters[0]
    for (cp, metric), model in gen.models.items():
        h = model.hypothesis
        f = h.function
        terms = []
        for ct in getattr(f, "compound_terms", []):
            i = j = 0.0
            for st in ct.simple_terms:
                if st.term_type == "polynomial":
                    i = float(st.exponent)
                else:
                    j = float(st.exponent)
            terms.append([i, j, float(ct.coefficient)])
        out["models"][cp.name] = {
            "model": f.to_string(param),
            "smape": float(h.SMAPE),
            "rss": float(h.RSS),
            "c0": float(f.constant_coefficient),
            "terms": terms,
        }
print(json.dumps(out))
"""


def ensure_venv(venv: Path) -> Path:
    """The Extra-P virtualenv's python, made (and extrap installed) on first use."""
    py = venv / "bin" / "python"
    ok = (
        py.exists()
        and subprocess.run([str(py), "-c", "import extrap"], capture_output=True).returncode == 0
    )
    if not ok:
        print(f"# making {venv} and installing extrap there (once)", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(py), "-m", "pip", "install", "-q", "extrap"], check=True)
    return py


def export_extrap_json(
    table: pd.DataFrame, labels: list[str], metric: str, folder: Path
) -> list[Path]:
    """Extra-P JSON input files (the newer format of its docs/file-formats.md):
    one per set of scales a group of nodes has, NaN points left out."""
    param = str(table.columns.name or "p")
    points = np.asarray(table.columns, dtype=float)
    y = table.to_numpy(dtype=float)
    present = np.isfinite(y)
    files = []
    for g, pat in enumerate(np.unique(present, axis=0)):
        if pat.sum() < 2:
            continue
        rows = np.flatnonzero((present == pat).all(axis=1))
        meas = {
            labels[r]: {metric: [{"point": [float(points[k])], "values": [float(y[r, k])]}
                                 for k in np.flatnonzero(pat)]}
            for r in rows
        }  # fmt: skip
        path = folder / f"group{g}.json"
        path.write_text(json.dumps({"parameters": [param], "measurements": meas}))
        files.append(path)
    return files


def run_extrap(py: Path, files: list[Path]) -> dict:
    res = subprocess.run(
        [str(py), "-c", _RUNNER, *map(str, files)], capture_output=True, text=True, check=True
    )
    return json.loads(res.stdout.strip().splitlines()[-1])


def labels_of(tree) -> list[str]:
    """Unique Extra-P call paths ("a->b->c") for the nodes of a tree."""
    out, seen = [], set()
    for k in range(len(tree)):
        s = "->".join(str(x).replace("->", "-") for x in tree.path(k))
        if s in seen:
            s = f"{s} [{k}]"
        seen.add(s)
        out.append(s)
    return out


def time_cctviz(table: pd.DataFrame, reps: int = 3):
    best, models = np.inf, None
    for _ in range(reps):
        t = time.perf_counter()
        models = fit_scaling(table)
        best = min(best, time.perf_counter() - t)
    return models, best


def same_terms(ours: list, theirs: list) -> bool:
    a = sorted((float(i), float(j)) for i, j in ours)
    b = sorted((float(i), float(j)) for i, j, _ in theirs)
    return a == b


def coef_diff(ours: np.ndarray, theirs: dict) -> float:
    """Largest relative difference of the coefficients (c0, then the terms in order)."""
    b = np.array([theirs["c0"]] + [c for _, _, c in theirs["terms"]])
    a = np.asarray(ours, dtype=float)[: b.size]
    if a.size != b.size:
        return np.nan
    return float(np.max(np.abs(a - b) / np.maximum(np.abs(b), 1e-300)))


def compare(title: str, table: pd.DataFrame, labels: list[str], names: list[str], py: Path,
            show: bool = True) -> dict:  # fmt: skip
    models, t_ours = time_cctviz(table)
    with tempfile.TemporaryDirectory() as d:
        files = export_extrap_json(table, labels, "metric", Path(d))
        ext = run_extrap(py, files)
    rows = []
    for k, lab in enumerate(labels):
        e = ext["models"].get(lab)
        rows.append(
            {
                "node": names[k],
                "cctviz model": models.formulas.iloc[k],
                "smape": models.smape[k],
                "Extra-P model": e["model"] if e else "(not modelled)",
                "Extra-P smape": e["smape"] if e else np.nan,
                "same terms": same_terms(models.terms(k), e["terms"]) if e else False,
                "coef rel diff": coef_diff(models.coefficients[k], e) if e else np.nan,
            }
        )
    df = pd.DataFrame(rows)
    agree = int(df["same terms"].sum())
    worst = float(df.loc[df["same terms"], "coef rel diff"].max())
    print(f"\n## {title}: {len(table)} nodes x {table.shape[1]} scales {list(table.columns)}")
    if show:
        with pd.option_context("display.width", 250, "display.max_colwidth", 60,
                               "display.max_rows", 500, "display.float_format", "{:.2f}".format):  # fmt: skip
            print(df.to_string(index=False))
    t_ext = ext["seconds"]
    print(
        f"same hypothesis on {agree} of {len(df)} nodes (coefficients within {worst:.1e}); "
        f"time: cctviz {t_ours * 1e3:.1f} ms, Extra-P {ext['version']} {t_ext * 1e3:.1f} ms "
        f"(Extra-P / cctviz = {t_ext / max(t_ours, 1e-9):.0f}x)"
    )
    return {
        "agree": agree,
        "worst": worst,
        "n": len(df),
        "t_ours": t_ours,
        "t_ext": t_ext,
        "table": df,
    }


def lulesh():
    files = sorted((DATA / "hatchet-tutorial" / "lulesh-scaling").glob("*.json"))
    ens = cctviz.read_ensemble(
        files,
        metadata=lambda p: {"cores": int(re.search(r"(\d+)core", Path(p).name).group(1))},
        progress=False,
    )
    return ens, scaling_table(ens, "cores", "time (inc)", "mean")


def mpi_scaling():
    files = sorted(glob.glob(str(DATA / "thicket" / "mpi_scaling_cali" / "*.cali")))
    ens = cctviz.read_ensemble(files, progress=False)
    return ens, scaling_table(ens, "mpi.world.size", "Avg time/rank", "mean")


def synthetic(n: int, seed: int = 0) -> pd.DataFrame:
    """n nodes, each c0 + c1 * p^i log2(p)^j with its own (i, j), 1% noise, at LULESH's scales."""
    from cctviz.perfmodel.scaling import EXTRAP_BUILDING_BLOCKS

    rng = np.random.default_rng(seed)
    p = np.array([1, 8, 27, 64, 125, 216, 343, 512], dtype=float)
    pick = rng.integers(0, len(EXTRAP_BUILDING_BLOCKS), n)
    i = np.array([float(EXTRAP_BUILDING_BLOCKS[k][0]) for k in pick])
    j = np.array([EXTRAP_BUILDING_BLOCKS[k][1] for k in pick])
    c0 = rng.uniform(10, 1000, n)
    c1 = rng.uniform(0.5, 5, n)
    y = c0[:, None] + c1[:, None] * p[None] ** i[:, None] * np.log2(p)[None] ** j[:, None]
    y *= 1 + 0.01 * rng.standard_normal(y.shape)
    df = pd.DataFrame(y, columns=p)
    df.columns.name = "p"
    return df


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--venv", type=Path, default=VENV)
    ap.add_argument("--synthetic", type=int, default=1000, help="synthetic nodes (0: none)")
    args = ap.parse_args(argv)
    py = ensure_venv(args.venv)
    summary = []
    ens, table = lulesh()
    r = compare("LULESH (hatchet-tutorial/lulesh-scaling), time (inc), mean over ranks",
                table, labels_of(ens.tree), list(ens.tree.names), py)  # fmt: skip
    summary.append(("LULESH", r))
    ens, table = mpi_scaling()
    r = compare("thicket/mpi_scaling_cali, Avg time/rank", table, labels_of(ens.tree),
                list(ens.tree.names), py)  # fmt: skip
    summary.append(("mpi_scaling_cali", r))
    if args.synthetic:
        table = synthetic(args.synthetic)
        labels = [f"node{k}" for k in range(len(table))]
        r = compare(f"synthetic, {args.synthetic} nodes", table, labels, labels, py, show=False)
        summary.append((f"synthetic {args.synthetic}", r))
    print(
        "\n| data | nodes | same hypothesis | coef. rel. diff | cctviz | Extra-P | Extra-P / cctviz |"
    )
    print("|---|---|---|---|---|---|---|")
    for name, r in summary:
        print(
            f"| {name} | {r['n']} | {r['agree']} | {r['worst']:.0e} | {r['t_ours'] * 1e3:.1f} ms | "
            f"{r['t_ext'] * 1e3:.0f} ms | {r['t_ext'] / max(r['t_ours'], 1e-9):.0f}x |"
        )


if __name__ == "__main__":
    main()
