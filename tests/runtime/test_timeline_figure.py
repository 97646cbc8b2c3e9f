"""The timeline figure of a runtime run says what ran (issue 35): ``cctviz run
--timeline`` of the bundled example training (2 gloo ranks, a warm-up step and
steps small enough that a step's phases are wide at 7 in), read with
``read_timeline`` and exported with ``TimelineView(tl).save(width="7in",
font_size=8)``:

- its legend names forward, backward and optimizer, coloured apart; in one
  step's window every phase span wide enough for its name is named in full;
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


PHASES = ("forward", "backward", "optimizer")


def spans_and_labels(svg: str) -> tuple[list[dict], list[tuple[str, float, float]]]:
    """The drawn spans (their ``data-i``, x, y, width and height on the page in
    pt) and the span labels (text, x, y on the page)."""
    root = svg_root(svg)
    per_pt = float(root.get("width").removesuffix("pt")) / float(root.get("viewBox").split()[2])
    spans = [
        {"i": int(r.get("data-i")), **{k: float(r.get(k)) * per_pt for k in ("x", "y", "width", "height")}}
        for r in root.iter(f"{SVG_NS}rect")
        if "cctviz-span" in (r.get("class") or "").split()
    ]  # fmt: skip
    labels = [
        (t, float(a["x"]) * per_pt, float(a["y"]) * per_pt)
        for t, a in texts(svg, "cctviz-span-label")
    ]
    return spans, labels


def test_a_step_names_its_phases_where_they_fit(small_steps, tmp_path):
    """One step, 7 in wide at 8 pt: every phase span wide enough for its name
    (0.7 em a letter and the padding, more than any sans-serif needs) is named
    in full inside it, any other label is its span's name cut with an ellipsis,
    and the phases are named. Which phase is wide enough depends on the machine
    that ran the step (the rule, not one run's widths, is asserted)."""
    tl = cctviz.read_timeline(small_steps)
    rects = TimelineView(tl).rects
    step = rects[(rects["name"] == "step") & (rects["lane"] == 0)].iloc[-1]
    view = TimelineView(tl, window=(float(step["t0"]), float(step["t1"])))
    svg = view.save(tmp_path / "step.svg", width="7in", font_size=8).read_text()
    spans, labels = spans_and_labels(svg)
    rows = view.rects
    named = set()
    for span in spans:
        row = rows.iloc[span["i"]]
        inside = [
            t for t, x, y in labels
            if span["x"] <= x <= span["x"] + span["width"] and span["y"] <= y <= span["y"] + span["height"]
        ]  # fmt: skip
        assert len(inside) <= 1, (row["name"], inside)
        for t in inside:
            assert t == row["name"] or (t.endswith("…") and row["name"].startswith(t[:-1])), (
                t,
                row,
            )
        if row["group"] in PHASES and row["name"] == row["group"]:
            fits = span["width"] >= 0.7 * 8 * len(row["name"]) + 4
            assert not fits or inside == [row["name"]], (row["name"], span, inside)
            named |= set(inside) & {row["name"]}
    assert named, "no phase of the step named in full"
    legend = [t for t, _ in texts(svg, "cctviz-legend-text")]
    assert set(PHASES) <= set(legend)


def test_the_figure_keeps_its_font_size_in_one_column(small_steps, tmp_path):
    view = TimelineView(cctviz.read_timeline(small_steps))
    svg = view.save(tmp_path / "t.svg", width="3.5in", font_size=7).read_text()
    assert svg_root(svg).get("width") == "252pt"
    assert min(s for s, _ in page_font_sizes(svg)) >= 7
    for ext in ("png", "pdf"):
        assert view.save(tmp_path / f"t.{ext}", width="3.5in", font_size=7).stat().st_size > 1000
