"""The demo behind ``cctviz demo`` (the README's first command).

It composes the bundled LULESH scaling runs into one Ensemble, prints the
calling-context tree of the largest run with the spread over its ranks,
answers two questions with queries, and writes the results to ``out/``.
Later issues add the profiled PyTorch training and the figures.
"""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

from .model.ensemble import Ensemble
from .readers import read_ensemble


def example_files() -> list[Path]:
    """Paths of the bundled example profiles."""
    root = resources.files("cctviz") / "examples" / "lulesh-scaling"
    return sorted(Path(str(p)) for p in root.iterdir() if str(p).endswith(".json"))


def cores_of(path: Path) -> int:
    m = re.search(r"(\d+)core", path.name)
    return int(m.group(1)) if m else 0


def load_example() -> Ensemble:
    """The bundled LULESH runs as one Ensemble (profiles = run x rank)."""
    return read_ensemble(example_files(), metadata=lambda p: {"cores": cores_of(p)}, progress=False)


def run_demo(out: str | Path = "out") -> dict[str, Path]:
    """Run the demo, print its report, and return the files it wrote."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    ens = load_example()
    runs = ens.groupby("cores")
    largest = runs[max(runs)]
    print(
        f"cctviz demo: {ens.n_profiles} profiles from {len(runs)} LULESH runs "
        f"({', '.join(str(c) for c in sorted(runs))} cores), {len(ens.tree)} call paths\n"
    )
    print(f"Calling-context tree of the {max(runs)}-core run (mean over ranks, spread, imbalance):")
    print(largest.prune("time (inc)", fraction=0.01).render(depth=6, precision=0))

    # where does the imbalance come from? nodes above 1% of the time with the worst max/mean
    s = largest.stats("time (inc)")
    total = s["mean"].iloc[largest.tree.roots].sum()
    big = s[s["mean"] > 0.01 * total].sort_values("imbalance", ascending=False).copy()
    big["slowest rank"] = largest.profiles["rank"].to_numpy()[big["argmax"].to_numpy()]
    big["path"] = largest.tree.callpaths.loc[big.index].str.replace("main/lulesh.cycle/", ".../")
    print("\nMost imbalanced contexts (time (inc) > 1% of total):")
    cols = ["path", "mean", "max", "imbalance", "slowest rank"]
    print(big[cols].head(5).to_string(index=False, float_format=lambda v: f"{v:,.2f}"))

    # scaling: mean inclusive time of the main phases per run
    q = largest.tree.query('MATCH (".", a)->(".", b) WHERE a."name" = "lulesh.cycle"')
    phases = [n for n in q.names if n != "lulesh.cycle"]
    rows = {}
    for cores, e in sorted(runs.items()):
        st = e.stats("time (inc)")
        rows[cores] = {p: float(st.loc[st["name"] == p, "mean"].sum()) for p in phases}
    import pandas as pd

    scaling = pd.DataFrame(rows).T
    scaling.index.name = "cores"
    print("\nMean inclusive time of each phase under lulesh.cycle, per run:")
    print(scaling.round(0).to_string())

    files = {
        "ensemble": out / "lulesh-scaling.cctviz",
        "stats": out / f"stats-{max(runs)}cores.csv",
        "scaling": out / "scaling.csv",
        "tree": out / "tree.txt",
    }
    ens.save(files["ensemble"])
    s.to_csv(files["stats"])
    scaling.to_csv(files["scaling"])
    files["tree"].write_text(largest.render(precision=0) + "\n")
    print("\nwrote " + ", ".join(str(p) for p in files.values()))
    return files
