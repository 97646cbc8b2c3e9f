// TimelineView figure: the pure scene (lanes, rectangles, axis units, markers,
// legend, brush), draw on the minimal DOM, the exporter's entry, untrusted names.

import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { renderSVG } from "../../js/export.js";
import { decodeTimeline } from "../../js/timeline/data.js";
import { drawTimeline } from "../../js/timeline/draw.js";
import { timelineSVG } from "../../js/timeline/figure.js";
import { counterLines, kindColor, markLines, rectLines, timelineScene } from "../../js/timeline/scene.js";
import { clampWindow, keyWindow, zoomWindow } from "../../js/timeline/view.js";
import { localTimelineModel, rebin } from "../../js/timeline/local.js";
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

// two counter bands of one track (bytes) over 100 bins: rank 0 peaks at 4 MB in
// bin 30, rank 1 holds 1 MB from bin 50 (nothing before)
const PEAK0 = Array.from({ length: 100 }, (_, i) => (i === 30 ? 4e6 : 2e6));
const PEAK1 = Array.from({ length: 100 }, (_, i) => (i >= 50 ? 1e6 : null));
const COUNTERS = { ...DATA, k: 2, tracks: [EVIL], track_units: ["B"], counter_lane: [0, 1], counter_track: [0, 0], counter_peak: [...PEAK0, ...PEAK1] };

describe("timeline counters", () => {
  const d = decodeTimeline(COUNTERS);
  const sc = timelineScene(d, { width: 600 });
  const bandText = (c) => sc.counters[c].children.filter((p) => p.tag === "text").map((p) => p.text);

  it("draws a band per (lane, track) under the lanes, titled with the axis unit", () => {
    assert.equal(sc.counters.length, 2);
    assert.equal(bandText(0)[0], `rank 0 \u00b7 ${EVIL} [MB]`);
    assert.equal(bandText(1)[0], `rank 1 \u00b7 ${EVIL} [MB]`);
    const lanesBottom = sc.laneTop[1] + d.levels * sc.rowH;
    assert.ok(sc.bands[0].top > lanesBottom);
    assert.ok(sc.bands[1].top > sc.bands[0].top + sc.bands[0].h);
    assert.ok(sc.plot.y + sc.plot.h >= sc.bands[1].top + sc.bands[1].h - 0.01); // the plot (grid, brush) covers them
  });

  it("shares one y scale per track: the peak reaches the top tick's scale", () => {
    const [a, b] = sc.bands;
    assert.equal(a.axis.unit, "MB");
    assert.deepEqual(a.axis.ticks.map((t) => t.text), b.axis.ticks.map((t) => t.text));
    assert.ok(Math.abs(a.axis.scale(4e6) - a.top) < 0.01); // the highest peak at the top
    assert.ok(bandText(0).includes("4") && bandText(0).includes("0"));
  });

  it("draws the area as steps, open where nothing was sampled yet", () => {
    const area = (c) => sc.counters[c].children.find((p) => p.attrs.class === "cctviz-counter-area").attrs.d;
    const px = sc.plot.w / 100;
    const x = (i) => String(Math.round((sc.plot.x + i * px) * 100) / 100);
    const a = area(0);
    assert.equal((a.match(/M/g) || []).length, 1);
    assert.ok(a.startsWith(`M${x(0)},`));
    assert.ok(a.includes(`L${x(30)},`) && a.includes(`L${x(31)},`)); // the one-bin peak is drawn
    const b = area(1);
    assert.ok(b.startsWith(`M${x(50)},`)); // nothing before bin 50
    assert.ok(b.endsWith("Z"));
  });

  it("tooltips name the peak with its unit", () => {
    const lines = counterLines(d, 0, 30).map((l) => l.text);
    assert.equal(lines[0], `rank 0 \u00b7 ${EVIL}`);
    assert.equal(lines[1], "peak 4.00 MB");
    assert.equal(counterLines(d, 1, 10)[1].text, "no sample yet");
  });

  it("exports the bands and keeps names as text", () => {
    const svg = timelineSVG(COUNTERS, {}, { width: 500 });
    assert.equal((svg.match(/class="cctviz-counter-area"/g) || []).length, 2);
    assert.ok(!svg.includes("<img"));
  });

  it("lanes carry an accessible name", () => {
    const labels = sc.lanes.filter((p) => p.attrs.class === "cctviz-lane-bg").map((p) => p.attrs["aria-label"]);
    assert.equal(labels.length, 2);
    assert.ok(labels[0].startsWith("rank 0: 2 rectangles over 2 levels"), labels[0]);
  });
});

describe("timeline keys and the standalone page", () => {
  it("pans and zooms by key inside the whole run", () => {
    assert.deepEqual(keyWindow("ArrowRight", [2, 4], [0, 10]), [2.2, 4.2]);
    assert.deepEqual(keyWindow("ArrowLeft", [0, 4], [0, 10]), [0, 4]); // at the start: stays
    assert.deepEqual(keyWindow("ArrowRight", [6, 10], [0, 10], true), [6, 10]);
    assert.deepEqual(keyWindow("+", [2, 6], [0, 10]), [3, 5]);
    assert.deepEqual(keyWindow("-", [2, 6], [0, 10]), [0, 8]);
    assert.deepEqual(keyWindow("-", [0, 8], [0, 10]), [0, 10]);
    assert.equal(keyWindow("x", [0, 1], [0, 10]), null);
    assert.deepEqual(clampWindow([-1, 1], [0, 10]), [0, 2]);
  });

  it("re-bins the exported window: rectangles, peaks and marks move with it", () => {
    const d = decodeTimeline(COUNTERS);
    const r = rebin(d, [0.0005, 0.001]); // a quarter of the exported window: 4x coarser detail
    assert.deepEqual(r.whole, [0, 0.002]);
    const i = r.lane.findIndex((l, j) => l === 0 && r.level[j] === 1); // "solve": 0.2-0.8 ms
    assert.deepEqual([r.b0[i], r.b1[i]], [0, 60]); // cut at 0.5 ms, ends at 0.8 ms: bin 60 of 5 us
    assert.equal(r.counter_peak[0], 2e6);
    // export bin 30 (0.60-0.62 ms) is bins 20-23 of 5 us now, and only those
    assert.deepEqual(r.counter_peak.slice(0, 100).flatMap((v, k) => (v === 4e6 ? [k] : [])), [20, 21, 22, 23]);
    assert.equal(r.m, 0); // the mark at 1.5 ms is outside
    const whole = rebin(d, [0, 0.002]);
    assert.deepEqual(whole.b0, Array.from(d.b0));
    assert.deepEqual(whole.counter_peak, [...PEAK0, ...PEAK1]);
  });

  it("the local model re-bins on a window change, kept inside the export", () => {
    const m = localTimelineModel({ kind: "timeline", data: COUNTERS, state: { depth: 1 } });
    let fired = 0;
    m.on("change:_data", () => (fired += 1));
    m.set("window", [-0.0005, 0.0005]);
    m.save_changes();
    assert.equal(fired, 1);
    assert.deepEqual(m.get("window"), [0, 0.001]);
    assert.deepEqual(m.get("_data").window, [0, 0.001]);
  });
});
