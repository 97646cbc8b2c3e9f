import assert from "node:assert/strict";
import { describe, it } from "node:test";


import {
  FLAG_HAS_CHILDREN,
  FLAG_HIDDEN,
  FLAG_MATCH,
  FLAG_OTHER,
  ancestorNames,
  decodeData,
  decodeNames,
  hasImbalanceCue,
  imbalance,
  imbalanceCost,
  formatMetricValue,
  isAdditive,
  metricLabel,
  metricName,
  isCollapsed,
  isExpandable,
  isOther,
  otherParentId,
} from "../../js/cct/data.js";
import {
  ELLIPSIS,
  estimateTextWidth,
  icicleLayout,
  ownValues,
  treeLayout,
  truncateLabel,
} from "../../js/cct/layout.js";
import {
  BIVARIATE,
  MISSING_COLOR,
  interpolateHeat,
  bivariateColor,
  isLogDomain,
  luminance,
  sequentialScale,
  tercileBin,
  terciles,
  textColorOn,
  valueAt,
} from "../../js/kit/color.js";
import entry, * as named from "../../js/index.js";

/** Copy a typed array into a DataView at an odd byte offset (as ipywidgets buffers may be). */
function unaligned(typed) {
  const bytes = new Uint8Array(typed.buffer, typed.byteOffset, typed.byteLength);
  const buf = new ArrayBuffer(bytes.length + 3);
  new Uint8Array(buf, 1).set(bytes);
  return new DataView(buf, 1, bytes.length);
}

/**
 * Build a `_data` object as the Python widget sends it from rows
 * {id, parent (row), name, flags?, folded?, color?, color2?, size?}, in pre-order.
 */
function makeData(rows, extra = {}) {
  const n = rows.length;
  const enc = new TextEncoder();
  const parts = rows.map((r) => enc.encode(r.name));
  const offsets = new Int32Array(n + 1);
  parts.forEach((p, i) => {
    offsets[i + 1] = offsets[i] + p.length;
  });
  const nameBytes = new Uint8Array(offsets[n]);
  parts.forEach((p, i) => nameBytes.set(p, offsets[i]));
  const depth = new Int32Array(n);
  rows.forEach((r, i) => {
    depth[i] = r.parent < 0 ? 0 : depth[r.parent] + 1;
  });
  const col = (k) => (rows.some((r) => k in r) ? unaligned(Float32Array.from(rows, (r) => r[k] ?? NaN)) : undefined);
  return {
    n,
    total: extra.total ?? n,
    id: unaligned(Int32Array.from(rows, (r) => r.id)),
    parent: unaligned(Int32Array.from(rows, (r) => r.parent)),
    depth: unaligned(depth),
    flags: unaligned(Uint8Array.from(rows, (r) => r.flags ?? 0)),
    folded: unaligned(Int32Array.from(rows, (r) => r.folded ?? 0)),
    name_bytes: unaligned(nameBytes),
    name_offsets: unaligned(offsets),
    color: col("color"),
    color2: col("color2"),
    size: col("size"),
    units: { time: "us" },
    aggregation: { time: "sum" },
    focus_path: [],
    spread: null,
    ...extra,
  };
}

const XSS = "<img src=x onerror=alert(1)>";

// main(100) -> a(60) -> a1(20), a2(25); b(30) -> "other"(10) standing for 3 nodes
const SAMPLE = [
  { id: 0, parent: -1, name: "main", flags: FLAG_HAS_CHILDREN, size: 100, color: 100 },
  { id: 1, parent: 0, name: "données_計算", flags: FLAG_HAS_CHILDREN, size: 60, color: 60 },
  { id: 2, parent: 1, name: XSS, size: 20, color: 20, flags: FLAG_MATCH },
  { id: 3, parent: 1, name: "a2", size: 25, color: 25 },
  { id: 4, parent: 0, name: "b", flags: FLAG_HAS_CHILDREN, size: 30, color: 30 },
  { id: -6, parent: 4, name: "3 more", flags: FLAG_OTHER, folded: 3, size: 10, color: NaN },
];

describe("cct/data: decodeData", () => {
  it("round-trips names, including non-ASCII and markup, from unaligned buffers", () => {
    const d = decodeData(makeData(SAMPLE));
    assert.equal(d.n, 6);
    assert.deepEqual(d.names, SAMPLE.map((r) => r.name));
    assert.equal(d.names[2], XSS);
    assert.equal(d.names[1], "données_計算");
  });

  it("reads the integer, flag and float columns", () => {
    const d = decodeData(makeData(SAMPLE));
    assert.deepEqual(Array.from(d.id), [0, 1, 2, 3, 4, -6]);
    assert.deepEqual(Array.from(d.parent), [-1, 0, 1, 1, 0, 4]);
    assert.deepEqual(Array.from(d.depth), [0, 1, 2, 2, 1, 2]);
    assert.ok(d.flags instanceof Uint8Array);
    assert.equal(d.flags[5], FLAG_OTHER);
    assert.equal(d.folded[5], 3);
    assert.deepEqual(Array.from(d.size), [100, 60, 20, 25, 30, 10]);
    assert.ok(Number.isNaN(d.color[5]));
    assert.equal(d.color2, null);
  });

  it("builds children lists in row order, roots and the id index", () => {
    const d = decodeData(makeData(SAMPLE));
    assert.deepEqual(d.children, [[1, 4], [2, 3], [], [], [5], []]);
    assert.deepEqual(d.roots, [0]);
    assert.equal(d.rowOf.get(-6), 5);
    assert.deepEqual(ancestorNames(d, 2), ["main", "données_計算", XSS]);
  });

  it("falls back to a domain over the finite non-other values", () => {
    const d = decodeData(makeData(SAMPLE));
    assert.deepEqual(d.colorDomain, [20, 100]);
    const d2 = decodeData(makeData(SAMPLE, { color_domain: [1, 2] }));
    assert.deepEqual(d2.colorDomain, [1, 2]);
  });

  it("recognises other nodes and their parent id", () => {
    const d = decodeData(makeData(SAMPLE));
    assert.ok(isOther(d, 5));
    assert.ok(!isOther(d, 4));
    assert.equal(otherParentId(d, 5), 4);
    assert.ok(isExpandable(d, 5) && isCollapsed(d, 5));
    assert.ok(isExpandable(d, 0) && !isCollapsed(d, 0));
    assert.ok(!isExpandable(d, 3));
  });

  it("treats hidden children as collapsed", () => {
    const rows = [
      { id: 0, parent: -1, name: "r", flags: FLAG_HAS_CHILDREN },
      { id: 7, parent: 0, name: "c", flags: FLAG_HAS_CHILDREN | FLAG_HIDDEN, folded: 5 },
    ];
    const d = decodeData(makeData(rows));
    assert.ok(isCollapsed(d, 1));
    assert.equal(d.folded[1], 5);
  });

  it("decodes an ensemble spread and computes the imbalance", () => {
    const spread = {
      metric: "time",
      profiles: 4,
      min: unaligned(Float32Array.from([1, 1, 1, 1, 1, NaN])),
      mean: unaligned(Float32Array.from([2, 2, 2, 2, 2, NaN])),
      max: unaligned(Float32Array.from([3, 5, 2, 2, 2, NaN])),
      std: unaligned(Float32Array.from([0.5, 1, 0, 0, 0, NaN])),
      argmax: unaligned(Int32Array.from([3, 1, -1, 0, 0, -1])),
      labels: { 3: "rank 3", 1: "rank 1", 0: "rank 0" },
    };
    const d = decodeData(makeData(SAMPLE, { spread }));
    assert.equal(d.spread.profiles, 4);
    assert.equal(d.spread.argmax[0], 3);
    assert.equal(imbalance(d, 0), 1.5);
    assert.equal(imbalance(d, 1), 2.5);
    assert.ok(Number.isNaN(imbalance(d, 5)));
  });

  it("cues only rows whose imbalance costs at least the threshold, whatever the ratio", () => {
    // row 2: a tiny node with a huge ratio (x64); row 1: a big node, ratio 1.2
    const spread = {
      metric: "time (inc)",
      profiles: 4,
      failed: 1,
      min: unaligned(Float32Array.from([90, 40, 0.1, 1, 1, NaN])),
      mean: unaligned(Float32Array.from([100, 50, 0.5, 2, 2, NaN])),
      max: unaligned(Float32Array.from([101, 60, 32, 2, 2, 50])),
      std: unaligned(Float32Array.from([1, 5, 9, 0, 0, NaN])),
      cost: unaligned(Float32Array.from([1, 10, 31.5, 0, 0, 50])),
      cost_threshold: 5,
      argmax: unaligned(Int32Array.from([0, 1, 2, 0, 0, -1])),
      labels: {},
    };
    const d = decodeData(makeData(SAMPLE, { spread }));
    assert.equal(d.spread.failed, 1);
    assert.equal(d.spread.costThreshold, 5);
    assert.equal(imbalanceCost(d, 1), 10);
    assert.deepEqual([0, 1, 2, 3, 4, 5].map((i) => hasImbalanceCue(d, i)), [false, true, true, false, false, false]);
    // no threshold (e.g. an all-zero tree): no cue at all
    const none = decodeData(makeData(SAMPLE, { spread: { ...spread, cost_threshold: null } }));
    assert.ok([0, 1, 2].every((i) => !hasImbalanceCue(none, i)));
    // a tree: no spread, no cue
    assert.equal(hasImbalanceCue(decodeData(makeData(SAMPLE)), 1), false);
  });

  it("reads each metric's aggregation rule; only sums are additive", () => {
    const d = decodeData(makeData(SAMPLE, {
      aggregation: { "time (inc)": "sum", time: "none", "peak (inc)": "max", "time (inc) [max]": "none", odd: "avg" },
    }));
    assert.ok(isAdditive(d, "time (inc)"));
    for (const m of ["time", "peak (inc)", "time (inc) [max]", "odd", "missing", "", "toString"]) {
      assert.equal(isAdditive(d, m), false, m);
    }
    assert.equal(d.aggregation.odd, "none");
    assert.deepEqual(decodeData({ n: 0 }).aggregation, {});
  });

  it("names metrics with their units for legends, and says when a unit is unknown", () => {
    const d = decodeData(makeData(SAMPLE, {
      units: { "time (inc)": "ms", "time (inc) [cost]": "ms", "bytes (inc)": "B", "bw": "B/s" },
    }));
    assert.equal(metricLabel(d, "time (inc)"), "time (inc) [ms]");
    assert.equal(metricLabel(d, "time (inc) [cost]"), "time (inc) [cost] [ms]");
    assert.equal(metricLabel(d, "bytes (inc)"), "bytes (inc) [B]");
    assert.equal(metricLabel(d, "time"), "time [unit unknown]");
    assert.equal(metricLabel(d, "time (inc) [max]"), "time (inc) [max] [unit unknown]");
    assert.equal(metricLabel(d, "calls (inc)"), "calls (inc)");
    assert.equal(metricLabel(d, "time (inc) [imbalance]"), "time (inc) [imbalance] (max/mean)");
    // in a tooltip the value carries its unit: the name only says when it is unknown
    assert.equal(metricName(d, "time (inc)"), "time (inc)");
    assert.equal(metricName(d, "time"), "time [unit unknown]");
    assert.equal(metricName(d, "time (inc) [imbalance]"), "time (inc) [imbalance]");
    assert.equal(formatMetricValue(d, "time (inc)", 1317.177), "1.32 s");
    assert.equal(formatMetricValue(d, "time (inc) [cost]", 75.3), "75.3 ms");
    assert.equal(formatMetricValue(d, "bytes (inc)", 3.73e6), "3.73 MB");
    assert.equal(formatMetricValue(d, "bw", 2.1e9), "2.10 GB/s");
    assert.equal(formatMetricValue(d, "time", 51.2e6), "51.2 M");
    assert.equal(formatMetricValue(d, "time (inc) [imbalance]", 64), "64\u00d7");
    assert.equal(formatMetricValue(d, "time (inc)", NaN), "n/a");
  });

  it("decodes the exclusive column and the colour total for the tooltip", () => {
    const exclusive = unaligned(Float32Array.from([40, 15, 20, 25, 30, NaN]));
    const d = decodeData(makeData(SAMPLE, { exclusive, exclusive_metric: "time", color_total: 250 }));
    assert.equal(d.exclusive[1], 15);
    assert.equal(d.exclusiveMetric, "time");
    assert.equal(d.colorTotal, 250);
    const plain = decodeData(makeData(SAMPLE));
    assert.equal(plain.exclusive, null);
    assert.equal(plain.colorTotal, null);
  });

  it("gives an empty model for missing data", () => {
    for (const raw of [null, undefined, {}, { n: 0 }]) {
      const d = decodeData(raw);
      assert.equal(d.n, 0);
      assert.deepEqual(d.names, []);
      assert.deepEqual(d.roots, []);
    }
  });

  it("decodeNames replaces invalid UTF-8 and clamps bad offsets", () => {
    const bytes = new Uint8Array([0x61, 0xff, 0x62]);
    const names = decodeNames(bytes, Int32Array.from([0, 2, 99]), 2);
    assert.deepEqual(names, ["a\ufffd", "b"]);
  });
});

describe("cct/layout: tree", () => {
  const d = decodeData(makeData(SAMPLE));
  const labelWidth = (i) => estimateTextWidth(d.names[i]);
  const radius = (i) => 3 + i;
  const g = treeLayout(d, { rowHeight: 22, labelWidth, radius });

  it("puts children right of their parents, past the parent's label", () => {
    for (let i = 0; i < d.n; i++) {
      const p = d.parent[i];
      if (p < 0) continue;
      assert.ok(g.x[i] > g.x[p], `child ${i} right of parent ${p}`);
      assert.ok(g.x[i] - radius(i) > g.x[p] + radius(p) + labelWidth(p), `child ${i} clear of the parent's label`);
      assert.ok(g.linkStart[p] < g.x[i] - radius(i), "links start after the label and before the child");
    }
  });

  it("keeps nodes of one column at least a row apart (labels never overlap)", () => {
    for (let i = 0; i < d.n; i++) {
      for (let j = i + 1; j < d.n; j++) {
        if (d.depth[i] === d.depth[j]) assert.ok(Math.abs(g.y[i] - g.y[j]) >= 22 - 1e-9);
        // labels of different columns are in disjoint x ranges
        if (d.depth[j] === d.depth[i] + 1) {
          assert.ok(g.x[i] + radius(i) + 6 + labelWidth(i) < g.x[j] - radius(j));
        }
      }
    }
  });

  it("starts the content at (0, 0) and reports its size", () => {
    const minTop = Math.min(...Array.from(g.y));
    assert.equal(minTop, 11);
    assert.equal(Math.min(...Array.from(g.x).map((x, i) => x - radius(i))), 0);
    assert.ok(g.height >= 3 * 22);
    assert.ok(g.width >= Math.max(...Array.from(g.x)));
  });

  it("is deterministic", () => {
    const again = treeLayout(d, { rowHeight: 22, labelWidth, radius });
    assert.deepEqual(Array.from(again.x), Array.from(g.x));
    assert.deepEqual(Array.from(again.y), Array.from(g.y));
  });

  it("handles several top rows and no rows", () => {
    const rows = [
      { id: 0, parent: -1, name: "r1" },
      { id: 1, parent: -1, name: "r2" },
    ];
    const two = treeLayout(decodeData(makeData(rows)));
    assert.equal(two.x[0], two.x[1]);
    assert.notEqual(two.y[0], two.y[1]);
    const none = treeLayout(decodeData(null));
    assert.equal(none.width, 0);
  });
});

describe("cct/layout: icicle", () => {
  const d = decodeData(makeData(SAMPLE));
  const near = (a, b) => Math.abs(a - b) < 1e-6;

  it("uses value minus children (clamped at 0) as the own part of additive metrics", () => {
    const own = ownValues(d, d.size);
    assert.deepEqual(Array.from(own), [10, 15, 20, 25, 20, 10]);
    const clamped = ownValues(d, Float32Array.from([10, 60, 20, 25, 30, 10]));
    assert.equal(clamped[0], 0);
    assert.deepEqual(Array.from(ownValues(d, null)), [0, 0, 1, 1, 0, 1]);
  });

  it("gives inclusive nodes extents proportional to their values; children fit in the parent", () => {
    const H = 500;
    const g = icicleLayout(d, { values: d.size, additive: true, height: H, columnWidth: 100 });
    assert.ok(g.bySize);
    const ext = (i) => g.y1[i] - g.y0[i];
    assert.ok(near(ext(0), H));
    for (let i = 0; i < d.n; i++) {
      assert.ok(near(ext(i) / H, d.size[i] / 100), `row ${i} extent proportional to its value`);
      const kids = d.children[i];
      if (!kids.length) continue;
      const sum = kids.reduce((a, c) => a + ext(c), 0);
      assert.ok(sum <= ext(i) + 1e-6, `children of ${i} fit`);
      for (const c of kids) {
        assert.ok(g.y0[c] >= g.y0[i] - 1e-6 && g.y1[c] <= g.y1[i] + 1e-6, "child inside parent span");
        assert.equal(g.x0[c], g.x1[i], "child in the next column");
      }
    }
    // siblings in tree order, top to bottom
    assert.ok(g.y0[1] < g.y0[4]);
    assert.ok(g.y0[2] < g.y0[3]);
  });

  it("sizes by leaf counts, never by values that do not add up (max, [max] of a sum, exclusive)", () => {
    // a derived ensemble column such as "time (inc) [max]": summing it would lie
    const notAdditive = Float32Array.from([7, 6, 1, 5, 2, 0]);
    const leaves = icicleLayout(d, { values: null, height: 300 });
    for (const additive of [false, undefined]) {
      const g = icicleLayout(d, { values: notAdditive, additive, height: 300 });
      assert.equal(g.bySize, false);
      assert.deepEqual(Array.from(g.y1), Array.from(leaves.y1));
      assert.ok(near(g.y1[1] - g.y0[1], 200)); // a holds 2 of the 3 leaves
    }
  });

  it("falls back to leaf counts without sizes or with all-zero sizes", () => {
    for (const values of [null, new Float32Array(6)]) {
      const g = icicleLayout(d, { values, additive: true, height: 300 });
      assert.equal(g.bySize, false);
      assert.ok(near(g.y1[2] - g.y0[2], 100));
      assert.ok(near(g.y1[1] - g.y0[1], 200));
    }
  });
});

describe("cct/layout: labels", () => {
  it("truncates with an ellipsis and keeps short names", () => {
    assert.equal(truncateLabel("short", 10), "short");
    assert.equal(truncateLabel("abcdefghij", 5), `abcd${ELLIPSIS}`);
    assert.equal(Array.from(truncateLabel("計算計算計算", 4)).length, 4);
    assert.equal(truncateLabel("abc", 1), "");
  });
});

describe("kit/color", () => {
  it("maps the domain ends to the ends of the heat ramp and NaN to grey", () => {
    const s = sequentialScale([0, 10]);
    assert.equal(s.log, false);
    assert.equal(s.color(0), interpolateHeat(0));
    assert.equal(s.color(10), interpolateHeat(1));
    assert.equal(s.color(5), interpolateHeat(0.5));
    assert.equal(s.color(-3), interpolateHeat(0), "clamped");
    assert.equal(s.color(NaN), MISSING_COLOR);
    assert.equal(valueAt(s, 0.5), 5);
  });

  it("switches to a log scale for positive domains spanning three decades", () => {
    assert.ok(isLogDomain([1, 1000]));
    assert.ok(!isLogDomain([0, 1e6]));
    assert.ok(!isLogDomain([1, 999]));
    const s = sequentialScale([1, 1e4]);
    assert.ok(s.log);
    assert.equal(s.color(1), interpolateHeat(0));
    assert.equal(s.color(1e4), interpolateHeat(1));
    assert.ok(Math.abs(s.position(100) - 0.5) < 1e-12);
    assert.ok(Math.abs(valueAt(s, 0.5) - 100) < 1e-9);
  });

  it("handles a single-value domain and no domain", () => {
    assert.equal(sequentialScale([3, 3]).color(3), interpolateHeat(0.5));
    assert.equal(sequentialScale(null).color(3), MISSING_COLOR);
  });

  it("bins by terciles", () => {
    const v = Float32Array.from([1, 2, 3, 4, 5, 6, NaN]);
    const br = terciles(v);
    assert.ok(br[0] > 2 && br[0] < 3 && br[1] > 4 && br[1] < 5);
    assert.deepEqual(Array.from(v, (x) => tercileBin(x, br)), [0, 0, 1, 1, 2, 2, -1]);
    const first3 = terciles(v, (i) => i < 3);
    assert.ok(Math.abs(first3[0] - 5 / 3) < 1e-12 && Math.abs(first3[1] - 7 / 3) < 1e-12);
    assert.equal(terciles(Float32Array.from([NaN])), null);
    // ties at the minimum stay in the low bin
    const ties = terciles([0, 0, 0, 0, 5, 10]);
    assert.equal(tercileBin(0, ties), 0);
    assert.equal(tercileBin(10, ties), 2);
    // mostly zeros (nodes that move no bytes): the scale keeps three classes, the
    // values above zero split at their median (the median and above: high); it said
    // "0 | 0" and showed no bytes
    const bytes = [0, 0, 0, 0, 0, 0, 0, 2e6, 4e6, 8e6];
    const zb = terciles(bytes);
    assert.deepEqual(zb, [0, 2e6]);
    assert.deepEqual(bytes.map((x) => tercileBin(x, zb)), [0, 0, 0, 0, 0, 0, 0, 1, 2, 2]);
    // the one collective and its callers, all equal (inclusive communication time):
    // they take the high class, not the middle one (the demo's all_reduce was muted)
    const comm = [0, 0, 0, 0, 0, 0, 625, 625, 625];
    const cb = terciles(comm);
    assert.deepEqual(comm.map((x) => tercileBin(x, cb)), [0, 0, 0, 0, 0, 0, 2, 2, 2]);
    assert.deepEqual(terciles([3, 3, 3]), [3, 3], "all equal: one class");
  });

  it("uses the Stevens grid for bivariate colours", () => {
    const br = [1, 2];
    assert.equal(bivariateColor(0, 0, br, br), "#cfcfcf", "low-low: mid grey, not near-white");
    assert.equal(bivariateColor(3, 3, br, br), "#3b4994");
    assert.equal(bivariateColor(3, 0, br, br), "#5ac8c8", "high A, low B: teal");
    assert.equal(bivariateColor(0, 3, br, br), "#be64ac", "low A, high B: pink");
    assert.equal(bivariateColor(1.5, 1.5, br, br), BIVARIATE[1][1]);
    assert.equal(bivariateColor(NaN, 3, br, br), MISSING_COLOR);
  });

  it("makes the hottest colour the most visible on white: darkest, and dark to light monotonically", () => {
    const lum = [0, 0.25, 0.5, 0.75, 1].map((t) => luminance(interpolateHeat(t)));
    for (let k = 1; k < lum.length; k++) assert.ok(lum[k] < lum[k - 1], `luminance falls: ${lum}`);
    // contrast with white (WCAG): the hottest node stands out, the coolest is still not white
    const contrast = (l) => 1.05 / (l + 0.05);
    assert.ok(contrast(lum[4]) > 7, `hot on white ${contrast(lum[4])}`);
    assert.ok(contrast(lum[0]) > 1.1, `cold on white ${contrast(lum[0])}`);
    assert.ok(luminance(BIVARIATE[0][0]) < 0.7, "low-low bivariate cell is not near-white");
  });

  it("picks readable text on fills", () => {
    assert.equal(textColorOn(interpolateHeat(0)), "#111111");
    assert.equal(textColorOn(interpolateHeat(1)), "#ffffff");
    assert.equal(textColorOn("#e8e8e8"), "#111111");
    assert.equal(textColorOn("#3b4994"), "#ffffff");
    assert.ok(Math.abs(luminance("#ffffff") - 1) < 1e-12);
    assert.equal(luminance("rgb(0, 0, 0)"), 0);
  });
});

describe("js/index.js default export", () => {
  it("is an anywidget module with render, keeping the named exports", () => {
    assert.equal(typeof entry.render, "function");
    assert.equal(typeof named.formatMetric, "function");
    assert.equal(typeof named.readColumn, "function");
    assert.equal(named.VIEWS.cct, named.renderCCT);
  });
});
