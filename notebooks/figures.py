"""Regenerate every figure the README shows (docs/figures/).

From real profiles bundled with cctviz (``cctviz.examples``; deterministic:
tests/test_figures.py runs this script and compares the bytes) and, with
``--demo OUT``, from the demo's run (``bash scripts/demo.sh`` writes ``out/``;
its timings differ from run to run, so that figure is only regenerated when asked).

    python notebooks/figures.py [--out docs/figures] [--demo out]
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


#: (file, bundled sample and the profile in it, view, view arguments, title): the README's figures
FIGURES = [
    (
        "lulesh-tree.svg",
        ("lulesh-scaling", "lulesh-annotation-profile-64cores.json"),
        "CCTView",
        {"max_nodes": 80},
        "LULESH, 64 ranks (Caliper): mean time per rank",
    ),
    (
        "kripke-icicle.svg",
        ("kripke-hpctoolkit", ""),
        "CCTView",
        {"chart": "icicle", "max_nodes": 60},
        "Kripke, 64 ranks (HPCToolkit): time and its spread over ranks",
    ),
    (
        "lulesh-sankey.svg",
        ("lulesh-scaling", "lulesh-annotation-profile-64cores.json"),
        "SankeyView",
        {},
        "LULESH, 64 ranks: where the time flows, and how it spreads over the ranks",
    ),
]


def data_figures(out: Path) -> list[Path]:
    """The figures of real profiles, written to ``out``."""
    import cctviz
    from cctviz import examples

    out.mkdir(parents=True, exist_ok=True)
    return [
        getattr(cctviz, view)(cctviz.read(examples.path(sample) / rel), **kw).save(
            out / name, width="7in", font_size=8, title=title
        )
        for name, (sample, rel), view, kw, title in FIGURES
    ]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "figures")
    ap.add_argument(
        "--demo", type=Path, help="the demo's output folder: copy its DDP tree figure too"
    )
    a = ap.parse_args(argv)
    for p in data_figures(a.out):
        print(p)
    if a.demo:
        src = a.demo / "tree-ddp.svg"
        if not src.exists():
            print(f"{src}: not found (run bash scripts/demo.sh first)", file=sys.stderr)
            return 1
        shutil.copyfile(src, a.out / "demo-ddp.svg")
        print(a.out / "demo-ddp.svg")
    return 0


if __name__ == "__main__":
    sys.exit(main())
