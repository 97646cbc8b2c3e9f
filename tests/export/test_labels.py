"""Every view names its nodes: no two labelled nodes with different names share a
visible label, in the Sankey and in the tree (node-link and icicle), exported at
3.5 in, 7 in and 968 px, on LULESH, Kripke (HPCToolkit load modules) and a `cctviz
run` grouped by nn.Module. (LULESH's Sankey labelled three nodes "Lagran…".)"""

from __future__ import annotations

import re
import warnings
import xml.etree.ElementTree as ET
from collections import defaultdict

import pytest

import cctviz
from tests.conftest import DATA, LULESH_SCALING

pytestmark = pytest.mark.slow

#: figure widths and the font sizes a paper or a page would give them
WIDTHS = [("3.5in", 7), ("7in", 8), ("968px", 10)]


@pytest.fixture(scope="module")
def runtime_run(traced_ddp_run):
    return cctviz.read(traced_ddp_run)


def _visible(svg_text: str, cut: str) -> dict[str, set[str]]:
    """Visible label -> the full names (the node's aria-label up to ``cut``) it stands for."""
    root = ET.fromstring(svg_text)
    full_of: dict[str, str] = {}
    shown: dict[str, set[str]] = defaultdict(set)

    def cls(el) -> str:
        return el.get("class") or ""

    for el in root.iter():
        label = el.get("aria-label")
        key = el.get("data-node") or el.get("data-id")
        if not label or key is None or cut not in label:
            continue
        name = label.rsplit(cut, 1)[0]
        full_of[key] = name
        for t in el.iter():
            text = "".join(t.itertext())  # lines and a number's tspans joined
            if "cctviz-label" in cls(t) and text.strip():
                shown[text].add(name)
    for el in root.iter():  # labels drawn beside their node (the Sankey's outside labels)
        if "cctviz-outside" in cls(el) and el.get("data-node") in full_of:
            for t in el.iter():
                text = "".join(t.itertext())
                if "cctviz-label" in cls(t) and text.strip():
                    shown[text].add(full_of[el.get("data-node")])
    return shown


def _clashes(shown: dict[str, set[str]]) -> dict[str, set[str]]:
    return {label: names for label, names in shown.items() if len(names) > 1}


def _cases(request):
    which = request.param
    if which == "lulesh":
        ens = cctviz.read_ensemble(LULESH_SCALING)
        return ens, [
            cctviz.SankeyView(ens),
            cctviz.CCTView(ens),
            cctviz.CCTView(ens, chart="icicle"),
        ]
    if which == "kripke":
        ens = cctviz.read(DATA / "hatchet-tutorial" / "hpctoolkit-kripke-database-2589696")
        return ens, [cctviz.SankeyView(ens, group_by="module"), cctviz.CCTView(ens)]
    ens = request.getfixturevalue("runtime_run")
    return ens, [cctviz.SankeyView(ens, group_by="nn.Module"), cctviz.CCTView(ens)]


@pytest.fixture(scope="module", params=["lulesh", "kripke", "runtime"])
def views(request):
    return _cases(request)


@pytest.mark.parametrize("width,font_size", WIDTHS)
def test_no_two_names_share_a_label(views, width, font_size, tmp_path):
    ens, vs = views
    for view in vs:
        with warnings.catch_warnings():  # levels and columns that do not fit are cut
            warnings.simplefilter("ignore", cctviz.FigureFitWarning)
            svg = view.save(tmp_path / "fig.svg", width=width, font_size=font_size)
        svg = svg.read_text(encoding="utf-8")
        cut = (
            ", mean "
            if isinstance(view, cctviz.SankeyView)
            else f", {view.color if isinstance(view.color, str) else view.color[0]} "
        )
        shown = _visible(svg, cut)
        assert len(shown) >= 3, (type(view).__name__, width, "too few labels to say anything")
        assert not _clashes(shown), (
            type(view).__name__,
            getattr(view, "chart", ""),
            width,
            _clashes(shown),
        )


def _outside_labels(svg_text: str) -> list[tuple[float, str, str, str]]:
    """The Sankey's labels beside their nodes: (x, name shown, cue shown, the
    node's name)."""
    root = ET.fromstring(svg_text)
    name_of = {
        el.get("data-node"): el.get("aria-label").rsplit(", mean ", 1)[0]
        for el in root.iter()
        if el.get("data-node") is not None and ", mean " in (el.get("aria-label") or "")
    }
    out = []
    for el in root.iter():
        if "cctviz-outside" in (el.get("class") or ""):
            text = {
                c: "".join(
                    "".join(t.itertext()) for t in el.iter() if c in (t.get("class") or "").split()
                )
                for c in ("cctviz-label", "cctviz-cue")
            }
            node = el.get("data-node")
            out.append((float(el.get("x")), *text.values(), name_of[node]))
    return out


def test_the_last_column_names_fit_at_the_natural_width(tmp_path):
    """The Sankey's last column gets the room its names need: RAJAPerf's 18 runs
    (names up to "Apps_NODAL_ACCUMULATION_3D" beside an imbalance cue) exported at
    the natural width show every labelled kernel whole. (A fixed 96 pt room cut
    them to "…3…".) At 3.5 in a name that does not fit beside its node is a
    number whose entry in the key holds the name (it was cut to a few letters),
    and its cue shrinks to the triangle."""
    ens = cctviz.read_ensemble(DATA / "thicket" / "rajaperf")
    view = cctviz.SankeyView(ens)
    natural = view.save(tmp_path / "fig.svg", width=None).read_text(encoding="utf-8")
    labels = _outside_labels(natural)
    last_x = max(x for x, *_ in labels)
    last = [(shown, name) for x, shown, _, name in labels if x == last_x]
    assert len(last) >= 20
    assert all(shown == name for shown, name in last), last
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", cctviz.FigureFitWarning)
        narrow = view.save(tmp_path / "narrow.svg", width="3.5in", font_size=7)
    labels = _outside_labels(narrow.read_text(encoding="utf-8"))
    assert len(labels) >= 10
    numbered = [(shown, cue, name) for _, shown, cue, name in labels if re.match(r"\d+", shown)]
    assert numbered, labels
    whole = [(shown, name) for _, shown, _, name in labels if not re.match(r"\d+", shown)]
    assert all(shown == name for shown, name in whole), whole
    assert all(cue in ("", "\u25b2") for _, cue, _ in numbered), numbered
