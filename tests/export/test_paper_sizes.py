"""Paper figures keep their font size, and every Sankey node has a name (issue 35,
items 1 and 2).

- Every view of three real inputs (LULESH on 64 ranks, Kripke on 64 ranks, a
  runtime run of the example training with its timeline), exported at 3.5 in / 7 pt
  and 7 in / 8 pt: on the page the smallest text is the size asked for. In the SVG
  the size on the page is the font size times the page's points per figure unit
  (width in pt / viewBox width); in the PDF it is each word's height (poppler's
  boxes) over the height of a word of known size in a reference PDF; the PNG is
  the SVG drawn at its page size (its pixels and its resolution say the same page).
- What does not fit at that size is folded, said in a caption line under the
  figure and in a warning (FigureFitWarning), never shrunk.
- Every node of an exported Sankey (3.5 in, 7 in, 968 px) has a visible label that
  identifies it: its whole name (on one or two lines), or a number whose entry in
  the key under the figure holds the whole name.
"""

from __future__ import annotations

import re
import subprocess
import warnings
import xml.etree.ElementTree as ET

import pytest

import cctviz
from cctviz import examples
from tests.export.checks import (
    SVG_NS,
    page_font_sizes,
    pdf_page_size,
    png_chunks,
    png_size,
    svg_pt,
)

pytestmark = pytest.mark.slow

#: (width, font size) pairs of the acceptance: a journal's column and its page
PAPER = [("3.5in", 7.0), ("7in", 8.0)]
PT = {"3.5in": 252.0, "7in": 504.0, "968px": 726.0}


@pytest.fixture(scope="module")
def runtime_run(traced_ddp_run):
    return traced_ddp_run


def _views(which: str, request) -> list:
    if which == "lulesh":
        ens = cctviz.read(
            examples.path("lulesh-scaling") / "lulesh-annotation-profile-64cores.json"
        )
    elif which == "kripke":
        ens = cctviz.read(examples.path("kripke-hpctoolkit"))
    else:
        ens = cctviz.read(request.getfixturevalue("runtime_run"))
    views = [
        cctviz.CCTView(ens),
        cctviz.CCTView(ens, chart="icicle"),
        cctviz.SankeyView(ens),
        cctviz.ProfilesView(ens),
    ]
    if which == "runtime":
        views.append(
            cctviz.TimelineView(cctviz.read_timeline(request.getfixturevalue("runtime_run")))
        )
    return views


@pytest.fixture(scope="module", params=["lulesh", "kripke", "runtime"])
def views(request):
    return request.param, _views(request.param, request)


def _name(view) -> str:
    return f"{type(view).__name__}{'/' + view.chart if getattr(view, 'chart', '') else ''}"


@pytest.fixture(scope="module")
def pdf_word_scale(tmp_path_factory):
    """A word's height in poppler's boxes per pt of font size, from a reference PDF
    whose only text is drawn at a known size (the font's ascent and descent)."""
    tree = cctviz.Tree.from_parents([-1, 0], ["main", "solve"], {"time": [1.0, 2.0]})
    path = tmp_path_factory.mktemp("ref") / "ref.pdf"
    cctviz.CCTView(tree).save(path, width="7in", font_size=10, legends=False)
    heights = [h for h, _ in _pdf_words(path)]
    assert heights and max(heights) - min(heights) < 1e-3, heights  # one size only
    return heights[0] / 10.0


def _pdf_words(path) -> list[tuple[float, str]]:
    """(extent across its line in pt, word) of every word of a PDF (poppler's
    ``pdftotext -bbox-layout``): its height, or its width in a line set vertically
    (an axis title: words that share their x extent, stacked)."""
    out = subprocess.run(
        ["pdftotext", "-bbox-layout", str(path), "-"], check=True, capture_output=True
    ).stdout
    ns = "{http://www.w3.org/1999/xhtml}"
    words = []
    for line in ET.fromstring(out).iter(f"{ns}line"):
        boxes = [
            ([float(w.get(k)) for k in ("xMin", "yMin", "xMax", "yMax")], w.text or "")
            for w in line.iter(f"{ns}word")
        ]
        xs = {(round(b[0], 3), round(b[2], 3)) for b, _ in boxes}
        vertical = len(boxes) > 1 and len(xs) == 1
        words += [((b[2] - b[0]) if vertical else (b[3] - b[1]), w) for b, w in boxes]
    return words


@pytest.mark.parametrize("width,size", PAPER)
def test_the_smallest_text_on_the_page_is_the_size_asked_for(
    views, width, size, tmp_path, pdf_word_scale
):
    which, vs = views
    for view in vs:
        name = f"{which}: {_name(view)} at {width}/{size} pt"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", cctviz.FigureFitWarning)
            svg = view.save(tmp_path / "f.svg", width=width, font_size=size).read_text()
            pdf = view.save(tmp_path / "f.pdf", width=width, font_size=size)
            png = view.save(tmp_path / "f.png", width=width, font_size=size, scale=2).read_bytes()
        w_pt, h_pt = svg_pt(svg)
        # the page is as wide as asked (or wider, said in the caption), never narrower
        assert w_pt >= PT[width] - 0.01, name
        if w_pt > PT[width] + 0.5:
            assert "wide, not" in ET.fromstring(svg).get("data-folded", ""), name
        sizes = page_font_sizes(svg)
        assert len(sizes) >= 5, name
        smallest = min(sizes)
        assert smallest[0] >= size - 1e-6, (name, smallest)
        # the PDF: the same page, its words no smaller than the size asked for
        assert pdf_page_size(pdf) == pytest.approx((w_pt, h_pt), abs=0.5), name
        words = _pdf_words(pdf)
        assert words, name
        low = min(words)
        assert low[0] / pdf_word_scale >= size - 0.05, (name, low, low[0] / pdf_word_scale)
        # the PNG: the SVG's page at 2 x 96/72 pixels per pt, and 192 dpi (pHYs)
        got = png_size(png)
        assert all(abs(g - pt * 8 / 3) <= 1 for g, pt in zip(got, (w_pt, h_pt))), (name, got)
        ppm = int.from_bytes(png_chunks(png)[b"pHYs"][:4], "big")
        assert ppm == pytest.approx(192 / 0.0254, rel=1e-3), name


def test_what_does_not_fit_is_folded_said_and_warned(tmp_path):
    """LULESH's tree at 3.5 in / 7 pt cannot hold its ten levels: the deeper ones are
    cut ("+N" on their parents), the caption says how many, save() warns, and the
    text keeps 7 pt. The default width is a journal's 7 in, not the natural 18 in."""
    ens = cctviz.read(examples.path("lulesh-scaling") / "lulesh-annotation-profile-64cores.json")
    view = cctviz.CCTView(ens, collapsed=[])
    with pytest.warns(cctviz.FigureFitWarning, match=r"deeper level") as got:
        svg = view.save(tmp_path / "f.svg", width="3.5in", font_size=7).read_text()
    assert got[0].filename == __file__  # the warning points at the caller's line
    root = ET.fromstring(svg)
    note = root.get("data-folded")
    assert note and "deeper level" in note
    caption = [
        "".join(t.itertext())
        for t in root.iter(f"{SVG_NS}text")
        if "cctviz-caption" in (t.get("class") or "")
    ]
    assert caption and "deeper level" in " ".join(caption)
    more = [t for t in root.iter(f"{SVG_NS}tspan") if "cctviz-more" in (t.get("class") or "")]
    assert more and all(re.fullmatch(r"\u00a0\+\d+", t.text) for t in more)
    assert min(s for s, _ in page_font_sizes(svg)) >= 7
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", cctviz.FigureFitWarning)
        default = view.save(tmp_path / "d.svg").read_text()
    assert svg_pt(default)[0] == 504.0
    # a figure that holds everything says nothing and does not warn
    small = cctviz.CCTView(cctviz.Tree.from_parents([-1, 0], ["main", "f"], {"time": [1.0, 2.0]}))
    with warnings.catch_warnings():
        warnings.simplefilter("error", cctviz.FigureFitWarning)
        plain = small.save(tmp_path / "s.svg", width="7in", font_size=8).read_text()
    assert "data-folded" not in plain and 'class="cctviz-caption"' not in plain


# ------------------------------------------------------------ every Sankey node named


def sankey_names(svg: str) -> dict[str, tuple[str, str]]:
    """node id -> ("label", the label's text, its lines joined) or, for a numbered
    label, ("key", the key's entry for that number: the group's whole name)."""
    root = ET.fromstring(svg)

    def classes(el) -> list[str]:
        return (el.get("class") or "").split()

    key = {}
    for t in root.iter(f"{SVG_NS}text"):
        if "cctviz-key" in classes(t):
            num, name = (s.text for s in t.iter(f"{SVG_NS}tspan"))
            key[num] = name
    out: dict[str, tuple[str, str]] = {}
    for t in root.iter(f"{SVG_NS}text"):
        node = t.get("data-node")
        if node is None or "cctviz-key" in classes(t):
            continue
        if "cctviz-outside" in classes(t):  # a name beside its node
            label = next(s for s in t.iter(f"{SVG_NS}tspan") if "cctviz-label" in classes(s))
        elif "cctviz-label" in classes(t):  # a name inside its node
            label = t
        else:
            continue
        nums = [s.text for s in label.iter(f"{SVG_NS}tspan") if "cctviz-num" in classes(s)]
        if nums:
            out[node] = ("key", key.get(nums[0], f"<no key entry {nums[0]}>"))
        else:
            out[node] = ("label", "".join(label.itertext()))
    return out


def _squash(s: str) -> str:
    return re.sub(r"\s+", "", s)


@pytest.mark.parametrize("width", ["3.5in", "7in", "968px"])
@pytest.mark.parametrize("which", ["lulesh", "kripke", "runtime"])
def test_every_sankey_node_has_a_name_a_reader_can_use(which, width, request, tmp_path):
    view = next(v for v in _views(which, request) if isinstance(v, cctviz.SankeyView))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", cctviz.FigureFitWarning)
        svg = view.save(tmp_path / "s.svg", width=width, font_size=8).read_text()
    root = ET.fromstring(svg)
    drawn = [
        g.get("data-node")
        for g in root.iter(f"{SVG_NS}g")
        if "cctviz-snode" in (g.get("class") or "")
    ]
    assert len(drawn) >= 2
    labels = view._data["label"]  # what each node is called (a group's short name)
    groups = view._data["group"]  # and its whole name (a path, "train/step")
    names = sankey_names(svg)
    for node in drawn:
        k = int(node)
        assert node in names, (width, labels[k], "has no label")
        how, text = names[node]
        mark = re.search(r" \(\d+\)$", labels[k])  # a group's second occurrence: "(2)"
        whole = str(groups[k] or labels[k]) + (mark[0] if mark else "")
        if how == "label":
            assert _squash(text) == _squash(labels[k]), (width, node, text, labels[k])
        elif _squash(text) not in (_squash(whole), _squash(labels[k])):
            # a name wider than the figure: the node's label, cut in the middle, its end kept
            head, _, tail = text.partition("\u2026")
            assert tail and labels[k].startswith(head) and labels[k].endswith(tail), (text, whole)
    # what was cut to fit is said (its time stays in its callers' heights)
    if len(drawn) < len(view.nodes):
        assert "deeper column" in root.get("data-folded", "")
