"""Notebook 08's workflow in the browser (issue 35): its last cell,
``cctviz.TimelineView(cctviz.read_timeline(out))`` of the simulation-bound run
(``cctviz run --workflow examples/workflow/sim_bound.toml --timeline``, as the
notebook's first cell makes it), drawn by the kernel-less harness. The late marks
and the workflow summary agree:

- the figure states the summary's bottleneck and why, in the summary's words;
- each mark says what it is, the last of a component's own ranks to reach a
  collective (the legend: "last of train's ranks ..."; the tooltip: "last of
  train's 2 ranks to arrive"), not the bottleneck;
- where a component was blocked, as the summary counts it, its lanes are
  hatched, and the hatched time per process is the summary's blocked time of
  those contexts (within 10%);
- counter tracks are folded per component (8 bands, not 16), under the lanes.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import cctviz
from cctviz.demo import example_script

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def sim_bound(tmp_path_factory):
    out = tmp_path_factory.mktemp("notebook-08") / "sim-bound"
    workflow = example_script("workflow/sim_bound.toml")
    cmd = [sys.executable, "-m", "cctviz.cli", "run", "--workflow", str(workflow), "--out", str(out), "--timeline"]  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONWARNINGS": "ignore"}
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env, cwd=ROOT)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-4000:]
    return out


def test_late_marks_and_the_summary_agree_in_notebook_08(widget_page, sim_bound):
    s = cctviz.workflow.summary(sim_bound)
    tl = cctviz.read_timeline(sim_bound)
    view = cctviz.TimelineView(tl)  # the notebook's cell, as it is
    assert view.summary is not None and view.summary.bottleneck == s.bottleneck
    wp = widget_page(view)
    root = wp.view(view)

    # the verdict, in the summary's words
    said = " ".join(root.locator("text.cctviz-summary").all_text_contents())
    assert f"the bottleneck is {s.bottleneck}" in said
    assert " ".join(s.why.split()[:4]) in said

    # the marks: each the last of its own component's ranks, and said so
    d = view._data
    marks = root.locator("path.cctviz-late")
    assert marks.count() == d["m"] > 0
    lanes = [d["lanes"][k] for k in np.frombuffer(d["mark_lane"], "<i4")]
    for comp, lane in zip(d["mark_of"], lanes):
        assert comp and lane.startswith(f"{comp} \u00b7 ")
    legend = root.locator("text.cctviz-legend-text").all_text_contents()
    of = sorted(set(d["mark_of"]))
    if len(of) == 1:
        assert any(
            t.startswith(f"last of {of[0]}'s ranks to arrive at a collective") for t in legend
        ), legend
    assert not any("bottleneck" in t for t in legend)  # the marks never claim it
    marks.first.hover(force=True)
    tip = root.locator(".cctviz-tooltip")
    tip.wait_for(state="visible")
    assert f"last of {d['mark_of'][0]}'s " in tip.text_content()

    # blocked, as the summary counts it: hatched on the lanes of who waited
    regions = s.blocked[s.blocked["kind"].astype(str) != "comm"]
    assert root.locator("rect.cctviz-blocked").count() > 0
    who = [f"{c} for {w}" for c, w in zip(regions["component"], regions["waits_for"]) if w]
    blocked_label = next(t for t in legend if t.startswith("blocked, as the summary counts it"))
    for pair in who:
        assert pair in blocked_label
    # process by process: a region can be blocked (low CPU) in one process of a
    # component and not in the other; the hatched time of each lane is its own
    r = view.rects
    rank = tl.profiles["rank"].to_numpy()
    hatched = r[r["blocked"]].assign(rank=rank[r.loc[r["blocked"], "profile"]])
    per_lane = hatched.groupby("rank").apply(
        lambda g: (g["t1"] - g["t0"]).sum(), include_groups=False
    )
    where = s.blocked_per_process
    where = where[where["kind"].astype(str) != "comm"]
    # regions without sub-contexts: the summary counts a region's own time, which
    # the figure shows apart only where nothing is drawn below it
    paths = tl.tree.callpaths.astype(str)
    leaves = set(paths[tl.tree.is_leaf])
    where = where[where["context"].astype(str).isin(leaves)]
    want = where.groupby("rank")["blocked"].sum().astype(float)
    assert len(want) > 0
    for k, seconds in want.items():
        assert per_lane.get(k, 0.0) == pytest.approx(seconds, rel=0.1), (k, per_lane, seconds)
    assert set(per_lane.index) <= set(want.index)  # nothing hatched where nothing was blocked

    # counters folded per component, drawn under the lanes
    bands = root.locator("g.cctviz-counter")
    assert bands.count() == d["k"] == 2 * len(d["tracks"])
    titles = root.locator("text.cctviz-counter-title").all_text_contents()
    assert all("(highest of 2)" in t for t in titles)
    lane_bottom = max(
        b["y"] + b["height"]
        for b in (x.bounding_box() for x in root.locator("rect.cctviz-lane-bg").all())
    )
    assert bands.first.bounding_box()["y"] >= lane_bottom
