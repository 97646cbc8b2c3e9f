// TimelineView figure: the pure scene (lanes, rectangles coloured by context and
// named where they fit, communication as wait and transfer, a start-up drawn
// apart, axis units, markers, legend, brush), draw on the minimal DOM, the
// exporter's entry, untrusted names, the export's text at the size asked for.

import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { renderSVG } from "../../js/export.js";
import { binTime, decodeTimeline } from "../../js/timeline/data.js";
import { drawTimeline } from "../../js/timeline/draw.js";
import { timelineSVG } from "../../js/timeline/figure.js";
import { GREY, GROUP_COLORS, collLines, collectiveRuns, counterLines, groupColor, markLines, mixWhite, nodeFill, rectLines, spreadLines, timeScale, timelineScene } from "../../js/timeline/scene.js";
import { clampWindow, keyWindow, zoomWindow } from "../../js/timeline/view.js";
import { localTimelineModel, rebin, stepSegments } from "../../js/timeline/local.js";
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
  node_role: [1, 0, 0],
  node_group: [-1, 0, 1],
  node_tint: [0, 0, 1],
  groups: ["solve", EVIL],
  group_slot: [1, -1],
  m: 1,
  mark_x: [0.0015],
  mark_lane: [1],
  mark_rank: [1],
  mark_node: [2],
  mark_last_by: [0.0002],
  mark_waited: [0.0003],
  mark_ranks: [2],
  mark_of: ["train"],
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
    assert.equal(a.fill, null); // a frame: coloured by its class
    assert.ok(a.class.includes("cctviz-role-frame"));
    assert.equal(b.fill, GROUP_COLORS[1]); // its context's slot
    assert.equal(e.fill, mixWhite(GREY, 0.42)); // slot -1, a lighter shade
    assert.equal(e["data-node"], "7");
  });

  it("outlines the selected nodes", () => {
    assert.deepEqual(
      sc.spans.map((p) => p.attrs.class),
      ["cctviz-span cctviz-role-frame", "cctviz-span selected", "cctviz-span cctviz-role-frame", "cctviz-span"],
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

  it("has a legend naming the contexts shown and what the marks are", () => {
    const texts = sc.legend.children.map((g) => g.children.find((p) => p.tag === "text").text);
    assert.deepEqual(texts, ["solve", EVIL, "last of train's ranks to arrive at a collective (1)"]);
  });

  it("names the rectangles where the names fit, cut in the middle where names share a start", () => {
    const texts = sc.labels.map((p) => p.text);
    assert.ok(texts.includes("main") && texts.includes("solve"), texts.join("|"));
    const wide = timelineScene(decodeTimeline({ ...DATA, names: ["main", "CalcMonotonicQGradientsForElems", "CalcMonotonicQRegionForElems"] }), { width: 300 });
    const cut = wide.labels.map((p) => p.text).filter((t) => t.startsWith("Calc"));
    assert.ok(cut.length >= 1 && cut.every((t) => t.includes("\u2026") && /Gra|Reg/.test(t)), cut.join("|"));
    // ink that contrasts with the fill (vermillion: dark)
    assert.ok(sc.labels.find((p) => p.text === "solve").attrs.class.includes("cctviz-ink-dark"));
    // nothing is named where not even a few letters fit
    for (const p of sc.labels) assert.ok([...p.text.replaceAll("\u2026", "")].length >= 3);
  });

  it("is deterministic and tooltips keep names as text", () => {
    const svg = (x) => timelineSVG(x, { selection: [3] }, { width: 400 });
    assert.equal(svg(DATA), svg(JSON.parse(JSON.stringify(DATA))));
    assert.equal(rectLines(d, 3)[0].text, EVIL);
    assert.equal(markLines(d, 0)[1].text, "rank 1: last of train's 2 ranks to arrive");
    assert.equal(markLines(d, 0)[2].text, "the others waited up to 300 us; last by 200 us at 1.50 ms");
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

// a run: root (frame), a start-up (outside steps) to 0.8 s, then steps with
// forward and backward (contexts) and an all-reduce (communication) whose wait is
// known in one call and not in the other; the start-up drawn apart in 12 of 100 bins
const RUN = {
  n: 6,
  bins: 100,
  levels: 3,
  window: [0, 1],
  whole: [0, 1],
  segments: [
    [0, 0.8, 12],
    [0.8, 1, 88],
  ],
  events: 9,
  events_total: 9,
  lanes: ["rank 0"],
  lane_profile: [0],
  lane: [0, 0, 0, 0, 0, 0],
  level: [0, 1, 1, 2, 2, 2],
  b0: [0, 0, 12, 12, 50, 80],
  b1: [100, 12, 100, 50, 80, 81],
  node: [0, 1, 2, 3, 4, 5],
  cover: [1, 1, 1, 1, 1, 1],
  node_id: [0, 1, 2, 3, 4, 5],
  names: ["train.py", "(outside steps)", "step", "forward", "backward", "all_reduce"],
  node_kind: [0, 0, 0, 0, 0, 0],
  kinds: ["x"],
  node_role: [1, 3, 2, 0, 0, 4],
  node_group: [-1, -1, -1, 0, 1, 1],
  node_tint: [0, 0, 0, 0, 0, 1],
  groups: ["forward", "backward"],
  group_slot: [0, 1],
  c: 3,
  coll_lane: [0, 0, 0],
  coll_level: [2, 2, 2],
  coll_b0: [80, 81, 95],
  coll_b1: [81, 82, 96],
  coll_node: [5, 5, 5],
  coll_calls: [1, 1, 1],
  coll_time: [0.001, 0.001, 0.002],
  coll_waited: [0.0005, 0.0, null],
};

describe("timeline of a run: contexts, start-up apart, communication", () => {
  const d = decodeTimeline(RUN);
  const sc = timelineScene(d, { width: 600 });

  it("puts the start-up in its own segment before a break, bins uniform in each", () => {
    const [a, b] = sc.time.segments;
    assert.equal(a.b1, 12);
    assert.ok(b.x0 > a.x1); // the break
    assert.ok(Math.abs((a.x1 - a.x0) / (b.x1 - b.x0) - 12 / 88) < 1e-9);
    assert.ok(Math.abs(sc.time.endX(12) - a.x1) < 1e-9); // a rectangle ending at the split ends before the break
    assert.equal(sc.time.startX(12), b.x0); // one starting there starts after it
    assert.ok(Math.abs(sc.time.toX(0.4) - (a.x0 + a.x1) / 2) < 1e-9);
    assert.ok(Math.abs(sc.time.toT(sc.time.toX(0.9)) - 0.9) < 1e-12);
    assert.equal(sc.time.binAt((a.x1 + b.x0) / 2), -1);
    assert.equal(binTime(d, 12), 0.8);
    assert.ok(Math.abs(binTime(d, 56) - 0.9) < 1e-12);
    const ticks = sc.axis.ticks.map((t) => t.text);
    assert.ok(ticks.includes("0") && ticks.includes("0.90"), ticks.join("|"));
  });

  it("takes three segments (start-up, steps, end) and bad segments as the window whole", () => {
    const three = decodeTimeline({ ...RUN, segments: [[0, 0.5, 10], [0.5, 0.9, 80], [0.9, 1, 10]] });
    const ts = timeScale(three, 100, 500, 10);
    assert.equal(ts.segments.length, 3);
    assert.ok(Math.abs(ts.segments[2].x1 - 600) < 1e-9 && Math.abs(ts.segments[1].x0 - ts.segments[0].x1 - 10) < 1e-9);
    assert.ok(Math.abs(ts.endX(90) - ts.segments[1].x1) < 1e-9 && Math.abs(ts.startX(90) - ts.segments[2].x0) < 1e-9);
    assert.equal(binTime(three, 90), 0.9);
    assert.ok(Math.abs(ts.toT(ts.toX(0.95)) - 0.95) < 1e-12);
    for (const bad of [[[0, 0.5, 10], [0.6, 1, 90]], [[0, 0.5, 10], [0.5, 1, 80]], "x"]) {
      assert.equal(decodeTimeline({ ...RUN, segments: bad }).segments.length, 1);
    }
  });

  it("colours forward and backward apart and names them", () => {
    const fill = (name) => sc.spans[d.names.indexOf(name)].attrs.fill;
    assert.equal(fill("forward"), groupColor(d, 0));
    assert.equal(fill("backward"), groupColor(d, 1));
    assert.notEqual(fill("forward"), fill("backward"));
    assert.equal(nodeFill(d, 1), null); // the start-up: its class
    assert.ok(sc.spans[1].attrs.class.includes("cctviz-role-startup"));
    const labels = sc.labels.map((p) => p.text);
    for (const n of ["forward", "backward", "step", "train.py"]) assert.ok(labels.includes(n), labels.join("|"));
    const legend = sc.legend.children.map((g) => g.children.find((p) => p.tag === "text").text);
    assert.deepEqual(legend.slice(0, 3), ["forward", "backward", "outside steps: start-up, end (time axis compressed)"]);
    assert.ok(legend.includes("waiting in a collective") && legend.includes("transfer") && legend.includes("communication, wait not known"));
  });

  it("draws communication at least a few units wide, merged where widened calls overlap, wait then transfer", () => {
    const narrow = timelineScene(d, { width: 200 }); // a bin is about a unit wide
    const runs = collectiveRuns(d, narrow.time, 3, narrow.plot);
    assert.deepEqual(runs, narrow.colls);
    assert.equal(runs.length, 2); // calls in bins 80 and 81 overlap once widened
    assert.equal(runs[0].calls, 2);
    assert.ok(Math.abs(runs[0].waited - 0.0005) < 1e-9 && Math.abs(runs[0].time - 0.002) < 1e-9);
    for (const r of runs) assert.ok(r.x1 - r.x0 >= 3 - 1e-9);
    assert.ok(Number.isNaN(runs[1].waited));
    assert.equal(collectiveRuns(d, sc.time, 3, sc.plot).length, 3); // wider: they keep apart
    const kinds = narrow.collPrims.map((g) => g.children.filter((p) => p.tag === "rect").map((p) => p.attrs.class).join(","));
    assert.deepEqual(kinds, ["cctviz-coll-wait,cctviz-hatch,cctviz-coll-transfer", "cctviz-coll-call"]);
    const wait = narrow.collPrims[0].children[0].attrs.width;
    const transfer = narrow.collPrims[0].children[2].attrs.width;
    assert.ok(Math.abs(wait / (wait + transfer) - 0.25) < 0.02);
    assert.deepEqual(collLines(d, narrow.colls[0]).map((l) => l.text).slice(0, 1), ["all_reduce (2 calls)"]);
    assert.ok(collLines(d, narrow.colls[1])[2].text.includes("not known"));
  });

  it("in an export, every text is at least the font size asked for", () => {
    for (const [width, fontSize] of [[252, 7], [504, 8]]) {
      const svg = timelineSVG(RUN, {}, { width, fontSize });
      const sizes = [...svg.matchAll(/<text[^>]*font-size="([\d.]+)"/g)].map((m) => Number(m[1]));
      assert.ok(sizes.length > 5);
      assert.ok(Math.min(...sizes) >= fontSize, `${Math.min(...sizes)} < ${fontSize}`);
      assert.ok(svg.includes(`width="${width}pt"`) && svg.includes(`viewBox="0 0 ${width} `));
      assert.ok(!svg.includes("data-folded"));
    }
  });

  it("an export too short for its counter bands folds them and says so", () => {
    const withBands = { ...RUN, k: 2, tracks: ["cpu"], track_units: ["%"], counter_lane: [0, 0], counter_track: [0, 0], counter_label: ["sim (highest of 2)", "train (highest of 2)"], counter_peak: Array(200).fill(50) };
    const tall = timelineSVG(withBands, {}, { width: 504, fontSize: 8 });
    assert.ok(tall.includes("sim (highest of 2) \u00b7 cpu [%]"));
    const short = timelineScene(decodeTimeline(withBands), { width: 504, height: 120, fontSize: 8, fit: true });
    assert.equal(short.counters.length, 0);
    assert.ok(short.notes[0].startsWith("2 counter bands"), short.notes.join("|"));
    const svg = timelineSVG(withBands, {}, { width: 504, height: 120, fontSize: 8 });
    assert.ok(/data-folded="2 counter bands/.test(svg));
    assert.ok(svg.includes("Not drawn at this size"));
  });

  it("re-bins an export with segments, the start-up kept compressed as Python would", () => {
    assert.deepEqual(stepSegments(0, 100, 80, 99, 100).map((g) => [g.t0, g.t1, g.b1 - g.b0]), [[0, 80, 12], [80, 100, 88]]);
    assert.deepEqual(stepSegments(0, 100, 10, 20, 100).map((g) => [g.t0, g.t1, g.b1 - g.b0]), [[0, 10, 12], [10, 20, 76], [20, 100, 12]]);
    assert.equal(stepSegments(0, 100, 5, 99, 100).length, 1);
    // the steps of the export are 0.8-1 s: the whole window keeps the start-up compressed
    const same = rebin(d, [0, 1]);
    assert.deepEqual(same.segments, [[0, 0.8, 13], [0.8, 1, 87]]);
    const f = same.node.indexOf(3); // forward from 0.8 s: the steps' first bin
    assert.equal(same.b0[f], 13);
    assert.equal(same.c, 3);
    assert.equal(timelineScene(decodeTimeline(same), { width: 600 }).time.segments.length, 2);
    // inside the steps: one uniform segment
    const r = rebin(d, [0.8, 1]);
    assert.deepEqual(r.segments, []);
    const i = r.node.indexOf(3); // forward: bins 12-50 of the export: 0.8 s + (0..38/88) x 0.2 s
    assert.deepEqual([r.b0[i], r.b1[i]], [0, Math.ceil((38 / 88) * 100 - 1e-9)]);
    const back = timelineScene(decodeTimeline(r), { width: 600 });
    assert.equal(back.time.segments.length, 1);
  });
});

describe("timeline critical path", () => {
  // rank 0 until 0.6 ms, a hop to rank 1 until 1.2 ms, then rank 0 again; a later stretch
  const PATH = { ...DATA, p: 4, path_x0: [0, 0.0006, 0.0012, 0.0018], path_x1: [0.0006, 0.0012, 0.0015, 0.002], path_lane: [0, 1, 0, 0] };
  const d = decodeTimeline(PATH);
  const sc = timelineScene(d, { width: 600 });

  it("draws one polyline: runs along their lanes' tops, hops between lanes, a new stroke after a gap", () => {
    assert.equal(sc.critical.length, 1);
    const path = sc.critical[0].attrs.d;
    assert.equal((path.match(/M/g) || []).length, 2); // the start, and after the gap at 1.5 ms
    const ys = [...path.matchAll(/[ML]([-\d.]+),([-\d.]+)/g)].map((m) => Number(m[2]));
    assert.ok(ys[0] < sc.laneTop[0] && ys[2] > sc.laneTop[0] && ys[2] < sc.laneTop[1]); // rank 0, then rank 1
    assert.ok(Math.abs(Number(path.match(/^M([-\d.]+)/)[1]) - sc.time.toX(0)) < 0.01);
  });

  it("names it in the legend, and not without a path", () => {
    const texts = (s) => s.legend.children.map((g) => g.children.at(-1).text);
    assert.ok(texts(sc).includes("critical path (across ranks)"));
    assert.ok(!texts(timelineScene(decodeTimeline(DATA), { width: 600 })).includes("critical path (across ranks)"));
    assert.equal(timelineScene(decodeTimeline(DATA), { width: 600 }).critical.length, 0);
  });

  it("re-bins with the exported window: runs clipped to it, those outside left out", () => {
    const r = rebin(d, [0.0005, 0.001]);
    assert.equal(r.p, 2);
    assert.deepEqual(r.path_lane, [0, 1]);
    assert.ok(Math.abs(r.path_x0[0]) < 1e-12 && Math.abs(r.path_x1[1] - 0.0005) < 1e-9);
  });
});

describe("timeline group lanes", () => {
  // lane 0 stands for 5 ranks (a group, with a band of 4 bins, each 25 of the 100), lane 1 for one
  const GROUPED = {
    ...DATA,
    lanes: ["5 ranks like rank 4", "rank 2"],
    lane_members: [5, 1],
    lane_key: ["#0", ""],
    band_lane: [0],
    band_bins: 4,
    band_stride: 25,
    band_lo: [0, 0.1, 0.5, 0],
    band_mid: [0, 0.4, 0.9, 0],
    band_hi: [0.2, 0.6, 1, 0],
  };
  const d = decodeTimeline(GROUPED);
  const sc = timelineScene(d, { width: 600 });

  it("gives a group lane a band row under its levels and a two-line label", () => {
    const plain = timelineScene(decodeTimeline(DATA), { width: 600 });
    assert.ok(Math.abs(sc.laneTop[1] - sc.laneTop[0] - (plain.laneTop[1] - plain.laneTop[0] + sc.rowH)) < 1e-9);
    const texts = sc.lanes.filter((p) => p.tag === "text").map((p) => p.text);
    assert.deepEqual(texts, ["5 ranks", "like rank 4", "in comm.", "rank 2"]);
    const group = sc.lanes.find((p) => p.tag === "text" && p.attrs["data-key"] === "#0");
    assert.match(group.attrs.class, /cctviz-lane-group/);
  });

  it("draws the band's range and median between 0 (the row's bottom) and 1 (its top)", () => {
    assert.equal(sc.spreads.length, 1);
    const [bg, range, median] = sc.spreads[0].children;
    const top = Number(bg.attrs.y);
    const bottom = top + Number(bg.attrs.height);
    const ys = (path) => [...path.attrs.d.matchAll(/,(-?[\d.]+)/g)].map((m) => Number(m[1]));
    const mid = ys(median);
    assert.ok(Math.abs(mid[0] - bottom) < 0.01 && Math.abs(mid[4] - (bottom - 0.9 * (bottom - top))) < 0.01);
    assert.ok(Math.min(...ys(range)) >= top - 0.01 && Math.max(...ys(range)) <= bottom + 0.01);
    const lines = spreadLines(d, 0, 60); // view bin 60: band bin 2
    assert.match(lines[2].text, /least 50\.0%, median 90\.0%, most 100\.0%/);
  });

  it("draws no band without one and reads a payload of old (no members, no keys)", () => {
    const old = decodeTimeline(DATA);
    assert.deepEqual(Array.from(old.laneMembers), [1, 1]);
    assert.deepEqual(old.laneKey, ["", ""]);
    assert.equal(timelineScene(old, { width: 600 }).spreads.length, 0);
  });
});
