"""The browser lays text out with the widths js/measure.js computes.

A page with the built stylesheet (cctviz/static/cctviz.css: the bundled font as
@font-face data URLs, `.cctviz` with font-kerning and ligatures off) draws SVG <text>
at 12px; getComputedTextLength() must equal measureText to within 0.5 px. The text
inherits its font from the stylesheet's rules (the notebook's case) and, as a
control, names the bundled font with a monospace fallback, so a font that failed to
load could not pass for it (system Liberation Sans or Arial have the same widths).
"""

from __future__ import annotations

import json

import pytest

from ..fontmetrics import ROOT, measure_in_node

CSS = ROOT / "cctviz" / "static" / "cctviz.css"
SOURCES = [ROOT / "js" / "cctviz.css", *sorted((ROOT / "cctviz" / "fonts").glob("*.ttf"))]
SIZE = 12
TOLERANCE = 0.5  # px

STRINGS = [
    "Hello, world",
    "torch.nn.modules.linear.Linear.forward",
    "MPI_Allreduce [libmpi.so.40]",
    "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
    "0123456789 %.,:;!?",
    "WWWWWWWWWW iiiiiiiiii",
    "fi fl ffi AV To Wa LT",  # ligatures and kerning pairs: neither applies
    "{}[]()<>/\\|@#$&*+=~^`'\"",
    "Größe über Ähnlichkeit",
    "naïve façade déjà vu",
    "Ærøskøbing Þórshöfn ñ ç ß",
    "«guillemets» ¿qué? ¡sí! £5 ¥3 €7 ™",
    "12.5 µs × 3 · 4",
    "a … b › c – d",
    "Łódź Čeština Ğ ő ű",
    "ΣΔΩ αβγ μs",
]
BOLD = [
    "Hello, world",
    "torch.nn.modules.linear.Linear.forward",
    "Größe über Ähnlichkeit",
    "0123456789 %.,:;!?",
    "AV To Wa fi",
]
CASES = [(s, SIZE, 400) for s in STRINGS] + [(s, SIZE, 700) for s in BOLD]

PAGE = """<!doctype html><html><head><meta charset="utf-8"><style>{css}</style></head>
<body><div class="cctviz"><svg class="cctviz" xmlns="http://www.w3.org/2000/svg"
  width="900" height="{height}" style="font-size: {size}px"></svg></div></body></html>"""

MEASURE = """async ([cases, control]) => {
  await document.fonts.load("400 12px 'Cctviz Sans'");
  await document.fonts.load("700 12px 'Cctviz Sans'");
  await document.fonts.ready;
  const svg = document.querySelector("svg");
  const NS = "http://www.w3.org/2000/svg";
  const out = [];
  cases.forEach(([text, size, weight], i) => {
    const t = document.createElementNS(NS, "text");
    t.setAttribute("x", "4");
    t.setAttribute("y", String(16 + 16 * i));
    t.setAttribute("font-size", String(size));
    t.setAttribute("font-weight", String(weight));
    if (control) t.setAttribute("style", "font-family: 'Cctviz Sans', monospace");
    t.textContent = text;
    svg.appendChild(t);
    out.push(t.getComputedTextLength());
  });
  const style = getComputedStyle(svg.querySelector("text"));
  const faces = [...document.fonts].filter((f) => f.family.replace(/["']/g, "") === "Cctviz Sans");
  return {
    widths: out,
    family: style.fontFamily,
    kerning: style.fontKerning,
    ligatures: style.fontVariantLigatures,
    faces: faces.map((f) => [f.weight, f.status]).sort(),
  };
}"""


@pytest.fixture(scope="module")
def css_text():
    text = CSS.read_text(encoding="utf-8") if CSS.exists() else ""
    stale = [p.name for p in SOURCES if CSS.exists() and p.stat().st_mtime > CSS.stat().st_mtime]
    assert "data:font/ttf;base64," in text and not stale, (
        f"{CSS} lacks the bundled font or is older than {stale}: run `npm run build`"
    )
    return text


@pytest.mark.parametrize("control", [False, True], ids=["stylesheet", "control"])
def test_browser_widths_are_measure_text(page, css_text, control):
    expected = measure_in_node(CASES)
    page.set_content(PAGE.format(css=css_text, height=16 * len(CASES) + 16, size=SIZE))
    got = page.evaluate(MEASURE, [CASES, control])
    assert got["faces"] == [["400", "loaded"], ["700", "loaded"]], got["faces"]
    if not control:
        assert got["family"].replace('"', "'").startswith("'Cctviz Sans', 'Liberation Sans'")
        assert got["kerning"] == "none"
        assert got["ligatures"] == "none"
    diffs = [b - e for b, e in zip(got["widths"], expected, strict=True)]
    report = "\n".join(
        f"{json.dumps(t)} {w}: browser {b:.4f} table {e:.4f} diff {d:+.4f}"
        for (t, _, w), b, e, d in zip(CASES, got["widths"], expected, diffs, strict=True)
    )
    assert max(abs(d) for d in diffs) <= TOLERANCE, report
