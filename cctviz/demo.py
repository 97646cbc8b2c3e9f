"""The demo behind ``cctviz demo`` (the README's first command).

:func:`run_demo` profiles the bundled GPT example training on CPU processes
(gloo) under ``cctviz run``, once with DDP and once with FSDP2, prints the
calling-context tree of a step with the communication each module caused,
and writes the runs (one ``.cctviz`` ensemble of runs x ranks), the text tree
and per-module communication tables to ``out/``.

:func:`run_lulesh_demo` (``cctviz demo --lulesh``) composes the bundled
LULESH scaling runs into one Ensemble instead: an HPC code, no torch needed.
:func:`run_workflow_demo` (``cctviz demo --workflow``) runs the bundled coupled
workflow in both of its modes and prints who waits for whom.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from . import examples
from .model import units
from .model.ensemble import Ensemble
from .model.formats import OUTSIDE
from .ops.comm import by_context
from .ops.text import short_path
from .readers import read, read_ensemble


def example_script(name: str = "train.py") -> Path:
    """A bundled example script (``examples/`` in a checkout): ``train.py`` (the GPT
    example) or ``rotating_late.py`` (DDP whose last rank to arrive changes with the step)."""
    here = Path(__file__).resolve().parent
    for cand in (here / "_examples" / name, here.parent / "examples" / name):
        if cand.is_file():
            return cand
    raise FileNotFoundError(f"the example examples/{name} is not installed")


def profile_example(
    out: Path, strategy: str, *, nproc: int = 2, steps: int = 20, warmup: int = 2
) -> Path:
    """Run the example under ``cctviz run`` on CPU (gloo); returns the run folder."""
    cmd = [
        sys.executable, "-m", "cctviz.cli", "run", "--standalone",
        "--nproc-per-node", str(nproc), "--out", str(out), "--warmup", str(warmup),
        str(example_script()), "--strategy", strategy, "--steps", str(steps),
    ]  # fmt: skip
    env_note = f"== cctviz run --nproc-per-node {nproc} examples/train.py --strategy {strategy}"
    print(env_note, flush=True)
    p = subprocess.run(cmd, capture_output=True, text=True)
    last = [ln for ln in p.stdout.splitlines() if ln.startswith("done:")]
    print("   " + (last[0] if last else p.stdout.strip()[-300:]), flush=True)
    if p.returncode != 0:
        raise RuntimeError(f"the example training failed:\n{p.stderr[-4000:]}")
    return out


def comm_by_module(ens: Ensemble) -> pd.DataFrame:
    """Communication per step of each (context, collective), mean over ranks.

    Columns: context (the path above the collective, below ``step``), kind,
    ``calls_mean``, ``MB_mean`` (1e6 bytes), ``ms_mean``, ``algbw GB/s`` and
    ``busbw GB/s`` per rank and step (:func:`cctviz.ops.comm.by_context` divided
    by the steps), converted from the units the tree states.
    """
    tree = ens.tree
    steps = float(ens.profiles["steps"].fillna(0).mean()) or 1.0
    t = by_context(ens)  # per profiled run: sums over the steps
    paths = [tree.path(int(i)) for i in t.index]
    keep = [p[1] == "step" for p in paths]
    t = t[keep].rename(columns={"operation": "kind"})
    t["context"] = ["/".join(p[2:-1]) for p, k in zip(paths, keep) if k]
    per_step = ["calls_mean", "MB_mean", "ms_mean"]
    t[per_step] = t[per_step].to_numpy(dtype=np.float64) / steps
    return t.reset_index(drop=True)


def run_demo(out: str | Path = "out", *, nproc: int = 2, steps: int = 20) -> dict[str, Path]:
    """Profile the example training with DDP and FSDP2, print and write the results."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    runs = {
        s: profile_example(out / f"run-{s}", s, nproc=nproc, steps=steps) for s in ("ddp", "fsdp")
    }
    read_runs = {s: read(folder) for s, folder in runs.items()}
    ddp = read_runs["ddp"]
    prof = ddp.profiles
    n = int(prof["steps"].iloc[0])
    print(
        f"\nGPT example, DDP on {len(prof)} CPU processes (gloo): {n} "
        f"profiled steps, median step {prof['step_time_ns'].median() / 1e6:.1f} ms, "
        f"{ddp.meta.get('params', 0):,} parameters"
    )
    step = ddp.focus(ddp.tree.query('MATCH (".", a) WHERE a."name" = "step"'))
    print(f"\nThe step context, summed over {n} steps (mean over ranks [min .. max]):")
    print(step.render("time (inc)", depth=6, threshold=0.01))
    print(outside_steps_note(ddp))
    tables = {}
    for s, ens in read_runs.items():
        t = comm_by_module(ens)
        tables[s] = t
        print(f"\nCommunication per step by context, {strategy_name(ens, s)} (mean over ranks):")
        print(t.to_string(index=False, float_format=lambda v: f"{v:,.3f}"))
    print(COMM_NOTE)
    both = read_ensemble(list(runs.values()))
    files = {
        "runs": out / "runs.cctviz",
        "tree": out / "tree-ddp.txt",
        "comm_ddp": out / "comm-ddp.csv",
        "comm_fsdp": out / "comm-fsdp.csv",
    }
    files.update(write_figures(ddp, step, out))
    files.update(write_sankeys(both, out))
    both.save(files["runs"])
    files["tree"].write_text(ddp.render("time (inc)", max_nodes=None, threshold=0) + "\n")
    tables["ddp"].to_csv(files["comm_ddp"], index=False)
    tables["fsdp"].to_csv(files["comm_fsdp"], index=False)
    print("\nwrote " + ", ".join(str(p) for p in [*runs.values(), *files.values()]))
    print(
        f"open them with: {cctviz_command()} tree {runs['ddp']}"
        f"   or, in Python, cctviz.read({str(files['runs'])!r})"
    )
    return {**{f"run_{k}": v for k, v in runs.items()}, **files}


#: what the tree's collective time and the table's ms are, printed under the tables
COMM_NOTE = (
    "\nA collective's time in the tree is what the call itself took on the CPU (issuing\n"
    "it, and waiting where the call blocks), summed over the steps; the tables' ms per\n"
    "step is comm_time, from the issue to the end of the transfer (its wait()), which\n"
    "DDP and FSDP overlap with backward: the two measure different things and differ."
)


def outside_steps_note(ens: Ensemble) -> str:
    """What ``(outside steps)`` holds and how much of each rank's time it is."""
    tree = ens.tree
    roots = tree.parent < 0
    outside = np.flatnonzero(np.asarray(tree.names) == OUTSIDE)
    if not outside.size:
        return ""
    vals = ens.values("time (inc)")
    share = vals[outside].sum(axis=0) / vals[roots].sum(axis=0)
    return (
        f"\n(outside steps) holds {share.min():.0%} to {share.max():.0%} of each rank's time:"
        " what runs before the first step (building and wrapping the model: DDP's first"
        " broadcast of the parameters), between steps (logging) and after the last one"
        " (teardown). Warm-up steps are under (warm-up). Only the steps are shown above."
    )


def strategy_name(ens: Ensemble, fallback: str) -> str:
    """The parallel strategy as the run's metadata names it (``FSDP2``), else ``fallback``."""
    prof = ens.profiles
    if "strategy" in prof and prof["strategy"].notna().any():
        return str(prof["strategy"].dropna().iloc[0])
    return fallback.upper()


def cctviz_command() -> str:
    """How to call ``cctviz`` from here: the virtualenv's script when it is not on PATH."""
    import shutil

    script = Path(sys.executable).parent / "cctviz"
    found = shutil.which("cctviz")
    if found and Path(found).resolve() == script.resolve():
        return "cctviz"
    if script.exists():
        try:
            return str(script.relative_to(Path.cwd()))
        except ValueError:
            return str(script)
    return "cctviz"


def write_figures(ens: Ensemble, step: Ensemble, out: Path) -> dict[str, Path]:
    """The demo's figures: the DDP run's step context as a tree coloured by time
    and sized by it, spread over ranks (SVG and PDF, for a paper's column
    width), and its communication time against its time (bivariate, SVG)."""
    from .views.cct import CCTView

    tree = CCTView(step, max_nodes=60)
    comm = CCTView(step, color=("time", "comm_time"), size="time (inc)", max_nodes=60)
    title = "GPT example, DDP on CPU processes: the step context"
    return {
        "figure_svg": tree.save(out / "tree-ddp.svg", width="7in", font_size=8, title=title),
        "figure_pdf": tree.save(out / "tree-ddp.pdf", width="7in", font_size=8, title=title),
        "figure_comm": comm.save(out / "comm-ddp.svg", width="7in", font_size=8),
    }


def write_sankeys(both: Ensemble, out: Path) -> dict[str, Path]:
    """The ensemble Sankeys of the training step, modules by nn.Module path: the
    DDP run's ranks, and DDP against FSDP2 (diff mode: FSDP2 - DDP per module)."""
    from .views.sankey import SankeyView

    step = both.focus(both.tree.query('MATCH (".", a) WHERE a."name" = "step"'))
    ddp = step.select(step.profiles["strategy"] == "DDP")
    diff = SankeyView(
        step,
        diff=({"strategy": "DDP"}, {"strategy": "FSDP2"}),
        diff_labels=("DDP", "FSDP2"),
    )
    return {
        "figure_sankey": SankeyView(ddp).save(out / "sankey-ddp.svg", width="7in", font_size=8),
        "figure_sankey_diff": diff.save(out / "sankey-fsdp-vs-ddp.svg", width="7in", font_size=8),
    }


def example_files() -> list[Path]:
    """Paths of the bundled LULESH scaling runs (``cctviz.examples.files("lulesh-scaling")``)."""
    return examples.files("lulesh-scaling")


def cores_of(path: Path) -> int:
    m = re.search(r"(\d+)core", path.name)
    return int(m.group(1)) if m else 0


def load_example() -> Ensemble:
    """The bundled LULESH runs as one Ensemble (profiles = run x rank)."""
    return read_ensemble(example_files(), metadata=lambda p: {"cores": cores_of(p)}, progress=False)


def run_lulesh_demo(out: str | Path = "out") -> dict[str, Path]:
    """The LULESH demo: print its report, and return the files it wrote."""
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
    print(largest.render(depth=6, threshold=0.01))

    # where does the imbalance cost most? the time the slowest rank adds over the mean
    s = largest.stats("time (inc)")
    big = s.sort_values("cost", ascending=False).copy()
    big["slowest rank"] = largest.profiles["rank"].to_numpy()[big["argmax"].to_numpy()]
    big["path"] = [short_path(p, 60) for p in largest.tree.callpaths.loc[big.index]]
    print("\nContexts where imbalance costs most (max - mean over ranks):")
    cols = ["path", "mean", "max", "cost", "imbalance", "slowest rank"]
    unit = largest.tree.units.get("time")
    shown = big[cols].head(5).copy()
    for c in ("mean", "max", "cost"):
        shown[c] = [units.format_value(v, unit) for v in shown[c]]
    shown["imbalance"] = [f"x{v:.2f}" for v in shown["imbalance"]]
    print(shown.to_string(index=False))

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
    print(scaling.map(lambda v: units.format_value(v, unit)).to_string())

    files = {
        "ensemble": out / "lulesh-scaling.cctviz",
        "stats": out / f"stats-{max(runs)}cores.csv",
        "scaling": out / "scaling.csv",
        "tree": out / "tree.txt",
    }
    ens.save(files["ensemble"])
    s.to_csv(files["stats"])
    scaling.to_csv(files["scaling"])
    files["tree"].write_text(largest.render(max_nodes=None, threshold=0) + "\n")
    print("\nwrote " + ", ".join(str(p) for p in files.values()))
    return files


#: the example workflow's modes (``examples/workflow/<mode>.toml``)
WORKFLOW_MODES = ("sim_bound", "train_bound")


def run_workflow_demo(out: str | Path = "out") -> dict[str, Path]:
    """``cctviz demo --workflow``: the bundled coupled workflow (a heat-equation
    simulation streaming snapshots to a DDP surrogate, ``examples/workflow``) run
    in both of its modes under ``cctviz run --workflow``; prints each summary
    (busy, blocked and idle per component, the bottleneck and why) and writes
    the runs, the summary tables and a tree of each component to ``out/``."""
    from .views.cct import CCTView
    from .workflow import summary

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    files: dict[str, Path] = {}
    for mode in WORKFLOW_MODES:
        run = out / f"workflow-{mode}"
        cmd = [sys.executable, "-m", "cctviz.cli", "run", "--workflow"]
        cmd += [str(example_script(f"workflow/{mode}.toml")), "--out", str(run)]
        print(f"== cctviz run --workflow examples/workflow/{mode}.toml", flush=True)
        subprocess.run(cmd, check=True)
        s = summary(run)
        shown = s.table[["processes", "busy", "blocked", "idle", "cpu_util", "waits_for"]].copy()
        for c in ("busy", "blocked", "idle"):
            shown[c] = [f"{v:.0%}" for v in shown[c]]
        shown["cpu_util"] = [units.format_value(v, "%") for v in shown["cpu_util"]]
        print(shown.to_string())
        print(f"bottleneck: {s.bottleneck}. {s.why}\n", flush=True)
        files[f"{mode}_summary"] = out / f"workflow-{mode}-summary.csv"
        s.table.to_csv(files[f"{mode}_summary"])
        files[f"{mode}_blocked"] = out / f"workflow-{mode}-blocked.csv"
        s.blocked.to_csv(files[f"{mode}_blocked"], index=False)
        ens = read(run)
        for c in s.table.index:  # one tree per component: spreads over its own processes
            part = ens.select(ens.profiles["component"].to_numpy() == c)
            part = part.filter(part.values("calls (inc)").sum(axis=1) > 0)  # its own contexts
            title = f"Coupled workflow ({mode.replace('_', '-')}): {c}, time per context"
            path = out / f"workflow-{mode}-{c}.svg"
            files[f"{mode}_{c}_tree"] = CCTView(part, max_nodes=80).save(
                path, width="7in", title=title
            )
    return files
