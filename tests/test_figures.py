"""The README's figures are what notebooks/figures.py makes of the real data, byte for byte."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_readme_figures_regenerate_identically(tmp_path):
    subprocess.run(
        [sys.executable, str(ROOT / "notebooks" / "figures.py"), "--out", str(tmp_path)],
        check=True,
        capture_output=True,
        timeout=600,  # an export that hangs at exit fails here, not the CI run
    )
    made = sorted(p.name for p in tmp_path.glob("*.svg"))
    assert made == ["kripke-icicle.svg", "lulesh-sankey.svg", "lulesh-tree.svg"]
    for name in made:
        assert (tmp_path / name).read_bytes() == (ROOT / "docs" / "figures" / name).read_bytes(), (
            name
        )
    # every figure the README shows exists and is made by the script (or is the demo's)
    readme = (ROOT / "README.md").read_text()
    shown = re.findall(r"\]\((docs/figures/[^)]+)\)", readme)
    assert shown, "the README shows figures"
    for rel in shown:
        assert (ROOT / rel).exists(), rel
        assert Path(rel).name in made + ["demo-ddp.svg"], rel
