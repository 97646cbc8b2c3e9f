// TimelineView figure: the pure scene (lanes, rectangles, axis units, markers,
// legend, brush), draw on the minimal DOM, the exporter's entry, untrusted names.

import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { renderSVG } from "../../js/export.js";
import { decodeTimeline } from "../../js/timeline/data.js";
import { drawTimeline } from "../../js/timeline/draw.js";
import { timelineSVG } from "../../js/timeline/figure.js";
import { kindColor, markLines, rectLines, timelineScene } from "../../js/timeline/scene.js";
import { zoomWindow } from "../../js/timeline/view.js";
import { shimContainer } from "../../js/shim.js";

const EVIL = "<img src=x onerror=alert(1)>";

const DATA = {
  n: 4,
  bins: 100,
  levels: 2,
  window: [0, 0.002],
  whole: [0, 0.004],
  events: 7,
  events_total: 12,
  lanes: ["rank 0", "rank 1"],
  lane_profile: [0, 1],
  lane: [0, 0, 1, 1],
  level: [0, 1, 0, 1],
  b0: [0, 10, 0, 50],
  b1: [100, 40, 80, 60],
  node: [0, 1, 0, 2],
  cover: [1, 1, 1, 0.5],
  node_id: [0, 3, 7],
  names: ["main", "solve", EVIL],
  node_kind: [0, 0, 1],
  kinds: ["function", "comm"],
  m: 1,
  mark_x: [0.0015],
  mark_lane: [1],
  mark_rank: [1],
  mark_node: [2],
  mark_late_by: [0.0002],
};

describe("timeline scene", () => {
  const d = decodeTimeline(DATA);
  const sc = timelineScene(d, { width: 600, selection: [3], brush: [0.0005, 0.001] });

  it("draws one rectangle per entry, in its lane and level, by bins", () => {
    assert.equal(sc.spans.length, 4);
    const [a, b, c, e] = sc.spans.map((p) => p.attrs);
    assert.ok(Math.abs(a.x - sc.plot.x) < 0.01);
    assert.ok(Math.abs(a.width - sc.plot.w) < 0.02); // 100 of 100 bins
    assert.ok(Math.abs(b.x - (sc.plot.x + 0.1 * sc.plot.w)) < 0.02);
    assert.ok(Math.abs(b.width - 0.3 * sc.plot.w) < 0.02);
    assert.equal(b.y, a.y + sc.rowH); // level 1 under level 0
    assert.ok(c.y > b.y); // lane 1 under lane 0
    assert.equal(e["fill-opacity"], 0.68); // half covered
    assert.equal(a.fill, kindColor(0));
    assert.equal(e.fill, kindColor(1));
    assert.equal(e["data-node"], "7");
  });

  it("outlines the selected nodes", () => {
    assert.deepEqual(
      sc.spans.map((p) => p.attrs.class),
      ["cctviz-span", "cctviz-span selected", "cctviz-span", "cctviz-span"],
    );
  });

  it("has a time axis with its unit, ticks inside the window", () => {
    const texts = sc.axes.filter((p) => p.tag === "text").map((p) => p.text);
    assert.ok(texts.includes("time since start [ms]"), texts.join("|"));
    assert.equal(sc.axis.unit, "ms");
    for (const t of sc.axis.ticks) assert.ok(t.pos >= sc.plot.x - 0.01 && t.pos <= sc.plot.x + sc.plot.w + 0.01);
    assert.ok(Math.abs(sc.time.toX(0.001) - (sc.plot.x + sc.plot.w / 2)) < 1e-9);
    assert.ok(Math.abs(sc.time.toT(sc.time.toX(0.0013)) - 0.0013) < 1e-12);
  });

  it("marks the late rank's lane and draws the brushed window", () => {
    assert.equal(sc.marks.length, 1);
    assert.equal(sc.marks[0].attrs["data-rank"], "1");
    assert.ok(sc.marks[0].attrs.d.includes(`${Math.round(sc.time.toX(0.0015) * 100) / 100},`));
    assert.ok(Math.abs(sc.brush.attrs.x - sc.time.toX(0.0005)) < 0.01);
    assert.ok(Math.abs(sc.brush.attrs.width - (sc.time.toX(0.001) - sc.time.toX(0.0005))) < 0.02);
  });

  it("has a legend of the kinds used", () => {
    const texts = sc.legend.children.filter((p) => p.tag === "text").map((p) => p.text);
    assert.deepEqual(texts, ["kind", "function", "comm"]);
  });

  it("is deterministic and tooltips keep names as text", () => {
    const svg = (x) => timelineSVG(x, { selection: [3] }, { width: 400 });
    assert.equal(svg(DATA), svg(JSON.parse(JSON.stringify(DATA))));
    assert.equal(rectLines(d, 3)[0].text, EVIL);
    assert.equal(markLines(d, 0)[1].text, "last to arrive: rank 1");
  });

  it("an empty payload draws an empty note", () => {
    const e = timelineScene(decodeTimeline({}), {});
    assert.equal(e.spans.length, 0);
    assert.equal(e.empty.text, "No lanes to show");
  });

  it("zooms a window around a time", () => {
    assert.deepEqual(zoomWindow([0, 10], 5, 0.5), [2.5, 7.5]);
    assert.deepEqual(zoomWindow([0, 10], 0, 2), [0, 20]);
  });
});

describe("timeline figure", () => {
  it("draws on the minimal DOM and exports through the registry", () => {
    const svg = drawTimeline(shimContainer(), timelineScene(decodeTimeline(DATA), { width: 600 }));
    assert.equal(svg.tagName.toLowerCase(), "svg");
    const a = timelineSVG(DATA, { selection: [3] }, { width: 500 });
    const b = renderSVG(JSON.stringify({ kind: "timeline", data: DATA, state: { selection: [3] }, options: { width: 500 } }));
    assert.equal(a, b);
    assert.ok(a.includes("cctviz-export-light"));
    assert.ok(a.includes("time since start [ms]"));
    assert.ok(!a.includes("<img"));
    assert.ok(a.includes("&lt;img") || !a.includes(EVIL)); // the name only in data attributes or text, escaped
    assert.equal((a.match(/class="cctviz-span[ "]/g) || []).length, 4);
  });
});
