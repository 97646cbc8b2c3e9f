"""The timeline figure of a runtime run says what ran (issue 35): ``cctviz run
--timeline`` of the bundled example training (2 gloo ranks, a warm-up step and
steps small enough that a step's phases are wide at 7 in), read with
``read_timeline`` and exported with ``TimelineView(tl).save(width="7in",
font_size=8)``:

- its slices name forward, backward and optimizer, coloured apart, and the
  legend names them;
- the start-up (``(outside steps)``) is drawn apart: a segment of its own before
  a break in the time axis;
- the communication calls are drawn, the all-reduces split into wait and transfer;
- no text on the page is below the size asked for, at 7 in / 8 pt and 3.5 in / 7 pt.
"""

from __future__ import annotations

import pytest

import cctviz
from cctviz.views.timeline import TimelineView
from tests.export.checks import SVG_NS, page_font_sizes, svg_root

from .conftest import example_run


@pytest.fixture(scope="module")
def small_steps(tmp_path_factory):
    out = tmp_path_factory.mktemp("timeline-figure") / "run"
    return example_run(
        out, "ddp", steps=2, warmup=1, extra=("--timeline",),
        script_args=("--batch-size", "1", "--seq-len", "8"),
    )[0]  # fmt: skip


def texts(svg: str, cls: str) -> list[tuple[str, dict]]:
    root = svg_root(svg)
    return [
        ("".join(t.itertext()), t.attrib)
        for t in root.iter(f"{SVG_NS}text")
        if cls in (t.get("class") or "").split()
    ]


def test_the_figure_names_forward_backward_and_optimizer(small_steps, tmp_path):
    tl = cctviz.read_timeline(small_steps)
    view = TimelineView(tl)
    svg = view.save(tmp_path / "t.svg", width="7in", font_size=8).read_text()
    names = {t for t, _ in texts(svg, "cctviz-span-label")}
    assert {"forward", "backward", "optimizer"} <= names, names
    legend = [t for t, _ in texts(svg, "cctviz-legend-text")]
    assert legend[:3] == ["forward", "backward", "optimizer"]
    r = view.rects
    fills = {g: set(r.loc[r["group"] == g, "node"]) for g in ("forward", "backward")}
    assert fills["forward"] and fills["backward"]
    slots = dict(zip(view._data["groups"], view._data["group_slot"]))
    assert slots["forward"] != slots["backward"]
    # the start-up apart, the all-reduces as wait and transfer
    segments = view._data["segments"]
    assert len(segments) >= 2 and segments[0][2] < 0.2 * view.bins
    assert any(t.startswith("outside steps: start-up") for t in legend)
    c = view.collectives
    assert (
        "all_reduce" in set(c["name"]) and (c.loc[c["name"] == "all_reduce", "waited"] >= 0).all()
    )
    assert view._data["m"] > 0  # two ranks: the last to arrive is marked
    assert min(s for s, _ in page_font_sizes(svg)) >= 8
    assert "data-folded" not in svg


def test_the_figure_keeps_its_font_size_in_one_column(small_steps, tmp_path):
    view = TimelineView(cctviz.read_timeline(small_steps))
    svg = view.save(tmp_path / "t.svg", width="3.5in", font_size=7).read_text()
    assert svg_root(svg).get("width") == "252pt"
    assert min(s for s, _ in page_font_sizes(svg)) >= 7
    for ext in ("png", "pdf"):
        assert view.save(tmp_path / f"t.{ext}", width="3.5in", font_size=7).stat().st_size > 1000
