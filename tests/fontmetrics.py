"""Helpers for the font tests: the bundled fonts and js/measure.js run through node."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FONTS = ROOT / "cctviz" / "fonts"
FONT_FILES = {400: FONTS / "LiberationSans-Regular.ttf", 700: FONTS / "LiberationSans-Bold.ttf"}
MEASURE_JS = ROOT / "js" / "measure.js"


def node() -> str:
    path = shutil.which("node")
    if path is None:  # never a skip: npm (Node.js 20+) builds the bundle anyway
        raise RuntimeError("node (Node.js 20+) is needed to run js/measure.js")
    return path


def measure_in_node(cases: list[tuple[str, float, int]]) -> list[float]:
    """measureText(text, size, weight) for each case, computed by js/measure.js in node."""
    script = (
        f"import {{ measureText }} from {json.dumps(MEASURE_JS.as_uri())};\n"
        "let input = '';\n"
        "for await (const chunk of process.stdin) input += chunk;\n"
        "const cases = JSON.parse(input);\n"
        "process.stdout.write(JSON.stringify(cases.map(([t, s, w]) => measureText(t, s, w))));\n"
    )
    out = subprocess.run(
        [node(), "--input-type=module", "-e", script],
        input=json.dumps(cases),
        capture_output=True,
        text=True,
        check=True,
        encoding="utf-8",
    )
    return json.loads(out.stdout)


def hmtx_width(font, text: str, size: float) -> float:
    """Sum of the advance widths (fontTools' hmtx; no kerning) of `text` at `size`."""
    cmap = font.getBestCmap()
    hmtx = font["hmtx"].metrics
    units = sum(hmtx[cmap[ord(ch)]][0] for ch in text)
    return units * size / font["head"].unitsPerEm
