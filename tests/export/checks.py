"""Readers of exported files for the tests: SVG texts and size, PDF fonts and
page size (poppler's pdffonts/pdfinfo), PNG size and resolution."""

from __future__ import annotations

import re
import struct
import subprocess
import xml.etree.ElementTree as ET
import zlib
from pathlib import Path

SVG_NS = "{http://www.w3.org/2000/svg}"


def svg_root(svg: str | bytes) -> ET.Element:
    return ET.fromstring(svg)


def svg_texts(svg: str | bytes) -> list[str]:
    """The text content of every ``<text>`` element (tspans joined)."""
    return ["".join(el.itertext()) for el in svg_root(svg).iter(f"{SVG_NS}text")]


def svg_tags(svg: str | bytes) -> set[str]:
    return {el.tag.removeprefix(SVG_NS) for el in svg_root(svg).iter()}


def svg_pt(svg: str | bytes) -> tuple[float, float]:
    """The root's width and height, which must be in pt."""
    root = svg_root(svg)
    w, h = root.get("width", ""), root.get("height", "")
    assert w.endswith("pt") and h.endswith("pt"), (w, h)
    return float(w[:-2]), float(h[:-2])


def pdf_fonts(path: Path) -> list[dict[str, str]]:
    """``pdffonts``' table: one dict per font (name, type, emb, sub, ...)."""
    out = subprocess.run(["pdffonts", str(path)], check=True, capture_output=True, text=True)
    lines = out.stdout.splitlines()
    rule = lines[1]  # "----- ---- ..." marks the columns
    spans = [(m.start(), m.end()) for m in re.finditer(r"-+", rule)]
    heads = [
        lines[0][a:b].strip() if i < len(spans) - 1 else lines[0][a:].strip()
        for i, (a, b) in enumerate(spans)
    ]
    rows = []
    for ln in lines[2:]:
        cells = [
            ln[a : (spans[i + 1][0] if i + 1 < len(spans) else None)].strip()
            for i, (a, _) in enumerate(spans)
        ]
        rows.append(dict(zip(heads, cells)))
    return rows


def pdf_page_size(path: Path) -> tuple[float, float]:
    out = subprocess.run(["pdfinfo", str(path)], check=True, capture_output=True, text=True)
    m = re.search(r"^Page size:\s+([\d.]+) x ([\d.]+) pts", out.stdout, re.M)
    assert m, out.stdout
    assert re.search(r"^Pages:\s+1$", out.stdout, re.M), out.stdout
    return float(m.group(1)), float(m.group(2))


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def png_chunks(data: bytes) -> dict[bytes, bytes]:
    """The chunks of a PNG by type (the last of each type), CRCs checked."""
    out, i = {}, 8
    while i < len(data):
        (n,) = struct.unpack(">I", data[i : i + 4])
        kind, body = data[i + 4 : i + 8], data[i + 8 : i + 8 + n]
        (crc,) = struct.unpack(">I", data[i + 8 + n : i + 12 + n])
        assert crc == zlib.crc32(kind + body), kind
        out[kind] = body
        i += 12 + n
    return out


def page_font_sizes(svg: str | bytes) -> list[tuple[float, str]]:
    """(size on the page in pt, text) of every drawn text: each ``<text>`` or
    ``<tspan>`` with text of its own, its font size (the nearest ``font-size``
    attribute up its ancestors) times the page's points per figure unit (the
    root's width in pt over its viewBox width) times any ``scale()`` of its groups.
    """
    root = svg_root(svg)
    width = float(root.get("width", "").removesuffix("pt"))
    per_unit = width / float(root.get("viewBox").split()[2])
    out: list[tuple[float, str]] = []

    def walk(el: ET.Element, size: float | None, scale: float) -> None:
        m = re.search(r"scale\(([-\d.eE]+)", el.get("transform") or "")
        if m:
            scale *= float(m.group(1))
        if el.get("font-size"):
            size = float(el.get("font-size"))
        if el.tag in (f"{SVG_NS}text", f"{SVG_NS}tspan") and (el.text or "").strip():
            assert size is not None, f"text without a font size: {el.text!r}"
            out.append((size * scale * per_unit, el.text))
        for child in el:
            walk(child, size, scale)

    walk(root, None, 1.0)
    return out
