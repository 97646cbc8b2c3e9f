"""save() to SVG, PDF, PNG and HTML: valid files of the asked size, the same bytes
twice, fonts embedded, names as text (never markup), no browser and no network."""

from __future__ import annotations

import json
import re
import struct
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import cctviz
from cctviz.errors import ExportError, ExportOptionError, MissingDependencyError
from cctviz.export import FORMATS, payload, save, to_svg
from cctviz.export.html import CSS, script_json
from cctviz.export.pdf import to_pdf
from cctviz.export.png import to_png
from tests.export.checks import (
    pdf_fonts,
    pdf_page_size,
    png_chunks,
    png_size,
    svg_pt,
    svg_tags,
    svg_texts,
)
from tests.export.conftest import HOSTILE

W = 252.0  # 3.5 in: one column of a two-column paper


# ------------------------------------------------------------------ SVG
def test_svg_is_xml_in_points_with_the_names_as_text(view):
    svg = to_svg(view, width="7in")  # the whole tree fits 7 in at 10 pt
    w, h = svg_pt(svg)
    assert w == pytest.approx(2 * W, abs=0.01) and h > 0
    texts = svg_texts(svg)
    for name in view.visible["name"]:
        assert name in texts, name
    tags = svg_tags(svg)
    assert "svg" in tags and "text" in tags
    assert not tags & {"foreignObject", "script", "iframe", "image"}
    assert not re.search(r"\son[a-z]+\s*=", svg, re.I)  # no event handler attributes


def test_svg_names_that_look_like_markup_stay_text(hostile_view):
    svg = to_svg(hostile_view)
    texts = svg_texts(svg)
    for name in HOSTILE:
        assert name in texts
    assert not svg_tags(svg) & {"img", "script", "foreignObject"}


def test_svg_height_and_natural_size(view):
    w, h = svg_pt(to_svg(view, width=W, height=400))
    assert (w, h) == (pytest.approx(W, abs=0.01), pytest.approx(400, abs=0.01))
    nw, nh = svg_pt(to_svg(view))
    assert nw > 0 and nh > 0
    # a height the legends alone overflow at 10 pt: the text keeps its size, the
    # figure is taller than asked and says so (caption, data-folded, a warning)
    with pytest.warns(cctviz.FigureFitWarning, match="tall, not 100 pt"):
        svg = save(view, Path(tempfile.mkdtemp()) / "f.svg", width=W, height=100).read_text()
    assert svg_pt(svg)[1] > 100
    assert "tall, not 100 pt" in ET.fromstring(svg).get("data-folded")


def test_a_tree_keeps_its_height_by_folding_small_nodes(tmp_path):
    """LULESH's tree at 7 x 4 in, 8 pt: the view's node budget is lowered until the
    figure fits (small siblings folded into (other) by the level of detail), said
    in the caption; the view itself is left as it was."""
    ens = cctviz.read(
        cctviz.examples.path("lulesh-scaling") / "lulesh-annotation-profile-64cores.json"
    )
    view = cctviz.CCTView(ens, collapsed=[])
    with pytest.warns(cctviz.FigureFitWarning, match=r"folded into \(other\)"):
        svg = to_svg(view, width="7in", height="4in", font_size=8)
    assert svg_pt(svg) == (pytest.approx(2 * W, abs=0.01), pytest.approx(288, abs=0.01))
    assert any(t.startswith("(other)") for t in svg_texts(svg))
    assert view.max_nodes == 2000 and not view.visible["name"].str.startswith("(other)").any()


def test_title_is_drawn(view):
    assert "LULESH at 64 ranks" in svg_texts(to_svg(view, title="LULESH at 64 ranks"))


# ------------------------------------------------------------------ all formats
@pytest.mark.parametrize("suffix", [".svg", ".pdf", ".png"])
def test_two_saves_give_the_same_bytes(view, tmp_path, suffix):
    a = save(view, tmp_path / f"a{suffix}", width="3.5in", title="t")
    b = save(
        cctviz.CCTView(view.shown, **view.state), tmp_path / f"b{suffix}", width="3.5in", title="t"
    )
    assert a.read_bytes() == b.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        f"a{suffix}",
        f"b{suffix}",
    ]  # no temp left


def test_save_returns_the_path_and_picks_the_format(view, tmp_path):
    out = {s: save(view, tmp_path / f"fig{s}") for s in FORMATS}
    assert out[".svg"] == tmp_path / "fig.svg"
    assert out[".svg"].read_bytes().lstrip().startswith((b"<svg", b"<?xml"))
    assert out[".pdf"].read_bytes()[:5] == b"%PDF-"
    assert out[".png"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert out[".html"].read_bytes()[:15] == b"<!doctype html>"
    assert save(view, str(tmp_path / "fig.out"), format="pdf").read_bytes()[:5] == b"%PDF-"


def test_save_refuses_what_it_cannot_do(view, tmp_path):
    with pytest.raises(ValueError, match=r"\.svg, \.pdf, \.png, \.html"):
        save(view, tmp_path / "fig.jpg")
    with pytest.raises(ExportOptionError, match="^format: 'svg' does not match"):
        save(view, tmp_path / "fig.pdf", format="svg")
    with pytest.raises(ExportOptionError, match="^format: "):
        save(view, tmp_path / "fig", format="eps")
    with pytest.raises(ExportOptionError, match="^scale: only a PNG"):
        save(view, tmp_path / "fig.pdf", scale=3)
    with pytest.raises(ExportOptionError, match="^dpi: give scale or dpi"):
        save(view, tmp_path / "fig.png", scale=3, dpi=300)
    with pytest.raises(ExportOptionError, match="^scale: expected a positive number"):
        save(view, tmp_path / "fig.png", scale=0)
    with pytest.raises(ExportError, match="does not exist"):
        save(view, tmp_path / "no" / "fig.svg")
    assert list(tmp_path.iterdir()) == []


def test_a_failed_save_leaves_the_old_file(view, tmp_path, monkeypatch):
    target = tmp_path / "fig.pdf"
    target.write_bytes(b"old")

    def boom(*a, **k):
        raise ExportError("typst could not make the PDF: test")

    monkeypatch.setattr("cctviz.export.pdf.to_pdf", boom)
    with pytest.raises(ExportError):
        save(view, target)
    assert target.read_bytes() == b"old" and list(tmp_path.iterdir()) == [target]


# ------------------------------------------------------------------ PDF
def test_pdf_embeds_every_font_and_has_the_asked_size(view, tmp_path):
    pdf = save(view, tmp_path / "fig.pdf", width="3.5in", height="6in", title="Kripke")
    fonts = pdf_fonts(pdf)
    assert fonts, "no font: the text did not stay text"
    assert all(f["emb"] == "yes" for f in fonts), fonts
    assert all("CctvizSans" in f["name"] for f in fonts), fonts
    w, h = pdf_page_size(pdf)
    assert w == pytest.approx(W, abs=0.5) and h == pytest.approx(432, abs=0.5)


def test_pdf_page_is_the_natural_size_of_the_figure(view, tmp_path):
    svg = to_svg(view)
    pdf = tmp_path / "fig.pdf"
    pdf.write_bytes(to_pdf(svg))
    assert pdf_page_size(pdf) == pytest.approx(svg_pt(svg), abs=0.5)


def test_pdf_transparent_background(view, tmp_path):
    pdf = save(view, tmp_path / "fig.pdf", width=W, background="transparent")
    assert pdf_page_size(pdf)[0] == pytest.approx(W, abs=0.5)


def test_a_page_too_large_for_acrobat_warns():
    svg = '<svg xmlns="http://www.w3.org/2000/svg" width="20000pt" height="100pt"/>'
    with pytest.warns(UserWarning, match="Acrobat"):
        to_pdf(svg)


# ------------------------------------------------------------------ PNG
@pytest.mark.parametrize(
    ("opts", "scale"), [({}, 2.0), ({"scale": 1}, 1.0), ({"dpi": 300}, 300 / 96)]
)
def test_png_size_is_width_times_scale(view, tmp_path, opts, scale):
    png = save(view, tmp_path / "fig.png", width="3.5in", **opts).read_bytes()
    w_pt, h_pt = svg_pt(to_svg(view, width="3.5in"))
    w, h = png_size(png)
    assert w == round(W * 4 / 3 * scale)
    assert abs(h - h_pt * 4 / 3 * scale) <= 1
    ppm_x, ppm_y, unit = struct.unpack(">IIB", png_chunks(png)[b"pHYs"])
    assert unit == 1 and ppm_x == ppm_y == round(96 * scale / 0.0254)


def test_png_draws_the_text_with_the_bundled_font(view):
    svg = to_svg(view, width=W)
    bare = re.sub(r"<text\b.*?</text>", "", svg, flags=re.S)
    assert svg_texts(bare) == [] and svg_texts(svg)
    assert to_png(svg) != to_png(bare)  # resvg drops text silently when it finds no font


def test_png_transparent_background(view):
    svg = to_svg(view, width=W, background="transparent")
    png = to_png(svg, background="transparent")
    assert png_chunks(png)[b"IHDR"][9] == 6  # RGBA


# ------------------------------------------------------------------ HTML
def _payload_in(page: str) -> dict:
    m = re.search(r'<script type="application/json" id="cctviz-payload">(.*?)</script>', page, re.S)
    assert m
    return json.loads(m.group(1))


def test_html_is_one_self_contained_page(view, tmp_path):
    page = save(view, tmp_path / "view.html").read_text(encoding="utf-8")
    assert page.startswith("<!doctype html>")
    assert "<title>hatchet-graph-literal.json</title>" in page
    assert CSS.read_text(encoding="utf-8").strip()[:200] in page
    import cctviz.export.html as html_mod

    js = html_mod.STANDALONE_BUNDLE.read_text(encoding="utf-8")
    assert js.strip()[:200].replace("</script", "\\x3C/script") in page
    assert "cctvizStandalone.mount(document.getElementById(" in page
    assert _payload_in(page) == json.loads(json.dumps(payload(view)))
    # nothing fetched from anywhere: only XML namespace names may look like URLs
    for url in re.findall(r"https?://[^\s\"'<>)]*", page):
        assert url.startswith("http://www.w3.org/"), url
    assert not re.search(r"<(link|iframe|img)\b|<script[^>]*\bsrc=|@import", page, re.I)


def test_html_names_cannot_end_the_script(hostile_view, tmp_path):
    page = save(hostile_view, tmp_path / "v.html", title="</title><b>x</b>").read_text("utf-8")
    assert page.count("</script>") == 3  # the payload, the bundle, the mount call
    assert page.count("<script") == 3
    assert "<title>&lt;/title&gt;&lt;b&gt;x&lt;/b&gt;</title>" in page
    p = _payload_in(page)
    raw, off = bytes(p["data"]["name_bytes"]), p["data"]["name_offsets"]
    names = {raw[off[i] : off[i + 1]].decode() for i in range(p["data"]["n"])}
    assert set(HOSTILE) <= names
    assert p["options"]["title"] == "</title><b>x</b>"


def test_script_json_round_trips():
    value = {"s": "</script><!-- & -->", "u": "é\u2028"}
    text = script_json(value)
    assert "<" not in text and ">" not in text and "&" not in text
    assert json.loads(text) == value


# ------------------------------------------------------------------ optional packages
@pytest.mark.parametrize(("suffix", "module"), [(".pdf", "typst"), (".png", "resvg_py")])
def test_missing_extra_says_what_to_install(view, tmp_path, monkeypatch, suffix, module):
    monkeypatch.setitem(sys.modules, module, None)  # import fails
    with pytest.raises(MissingDependencyError, match=r"pip install 'cctviz\[export\]'") as e:
        save(view, tmp_path / f"fig{suffix}")
    assert isinstance(e.value, ImportError)
    assert list(tmp_path.iterdir()) == []
    save(view, tmp_path / "fig.svg")  # SVG and HTML need neither
    save(view, tmp_path / "fig.html")
