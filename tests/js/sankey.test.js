// The ensemble Sankey's front end: layout (order, scale, conservation,
// dummies, determinism), scene and figure (DOM contract, diff mode, untrusted
// names, degenerate input), and the standalone page's local model.
// Payloads are synthetic (tests/js/sankey-synth.js), per CONTRACT.md.

import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { renderSVG } from "../../js/export.js";
import { decodeSankey } from "../../js/sankey/data.js";
import { sankeyExportSettings, sankeySVG } from "../../js/sankey/figure.js";
import { canonicalGraph, crossings, initialOrder, orderColumns, sankeyLayout } from "../../js/sankey/layout.js";
import { sankeyScene, siteCells, tooltipLines } from "../../js/sankey/scene.js";
import { localSankeyModel } from "../../js/standalone.js";
import { prng, synthPayload } from "./sankey-synth.js";

/** A bare graph (no stats) from columns, values and links [s, t, v]. */
function graph(column, value, links, dummyColumn = []) {
  return {
    n: column.length,
    nDummy: dummyColumn.length,
    column,
    value,
    dummyColumn,
    linkSource: links.map((l) => l[0]),
    linkTarget: links.map((l) => l[1]),
    linkValue: links.map((l) => l[2]),
    linkEdge: links.map((_, i) => i),
  };
}

/** A random layered DAG (links between adjacent columns only). */
function randomDag(rand) {
  const C = 2 + Math.floor(rand() * 4);
  const column = [];
  for (let c = 0; c < C; c++) for (let k = 1 + Math.floor(rand() * 5); k > 0; k--) column.push(c);
  const value = column.map(() => Math.floor(rand() * 10));
  const links = [];
  for (let t = 0; t < column.length; t++) {
    for (let s = 0; s < column.length; s++) if (column[s] === column[t] - 1 && rand() < 0.4) links.push([s, t, 1 + Math.floor(rand() * 9)]);
  }
  return graph(column, value, links);
}

/** The same payload with its links in another order (edges keep their ids). */
function shuffledLinks(p, seed) {
  const rand = prng(seed);
  const idx = p.link_source.map((_, i) => i);
  for (let i = idx.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [idx[i], idx[j]] = [idx[j], idx[i]];
  }
  const q = { ...p };
  for (const k of ["link_source", "link_target", "link_value", "link_edge"]) q[k] = idx.map((i) => p[k][i]);
  return q;
}

/** Columns as DataViews at odd offsets (as ipywidgets delivers them). */
function asBuffers(p) {
  const put = (arr, Ctor) => {
    const typed = Ctor.from(arr);
    const bytes = new Uint8Array(typed.buffer);
    const buf = new ArrayBuffer(bytes.length + 1);
    new Uint8Array(buf, 1).set(bytes);
    return new DataView(buf, 1, bytes.length);
  };
  const out = { ...p };
  for (const k of ["column", "members", "argmax", "hist", "outlier_node", "outlier_profile", "outlier_more", "link_source", "link_target", "link_edge", "edge_source", "edge_target", "dummy_column"]) out[k] = put(p[k], Int32Array);
  for (const k of ["value", "min", "max", "std", "q1", "median", "q3", "whisker_lo", "whisker_hi", "cost", "imbalance", "outlier_value", "link_value"]) out[k] = put(p[k], Float32Array);
  return out;
}

const SMALL = synthPayload({ perColumn: [1, 3, 4, 3], seed: 3, profiles: 32 });
const BIG = synthPayload({ perColumn: [1, 3, 5, 6, 7, 7, 6, 6, 6, 5, 5, 3], seed: 5, profiles: 64 });

describe("sankey layout: crossings", () => {
  const cg = (column) => ({ col: column, N: column.length });
  it("counts two crossing links once, weighted by the product of their values", () => {
    const links = [
      { source: 0, target: 3, value: 2 },
      { source: 1, target: 2, value: 5 },
    ];
    assert.equal(crossings([[0, 1], [2, 3]], links, cg([0, 0, 1, 1]), false), 1);
    assert.equal(crossings([[0, 1], [2, 3]], links, cg([0, 0, 1, 1])), 10);
    assert.equal(crossings([[0, 1], [3, 2]], links, cg([0, 0, 1, 1])), 0);
  });
  it("never counts links that share an end", () => {
    const links = [
      { source: 0, target: 2, value: 1 },
      { source: 0, target: 3, value: 1 },
      { source: 1, target: 3, value: 1 },
    ];
    assert.equal(crossings([[0, 1], [2, 3]], links, cg([0, 0, 1, 1]), false), 0);
    assert.equal(crossings([[0, 1], [3, 2]], links, cg([0, 0, 1, 1]), false), 1);
  });
  it("counts a full reversal of three links as three crossings, per pair of columns", () => {
    const links = [
      { source: 0, target: 5, value: 1 },
      { source: 1, target: 4, value: 1 },
      { source: 2, target: 3, value: 1 },
      { source: 3, target: 6, value: 1 },
      { source: 4, target: 7, value: 1 },
    ];
    const col = [0, 0, 0, 1, 1, 1, 2, 2];
    assert.equal(crossings([[0, 1, 2], [3, 4, 5], [7, 6]], links, cg(col), false), 4);
  });
});

describe("sankey layout: order", () => {
  it("starts from values, descending, ties by id", () => {
    const g = canonicalGraph(graph([0, 1, 1, 1], [9, 2, 5, 2], []));
    assert.deepEqual(initialOrder(g), [[0], [2, 1, 3]]);
  });
  it("the sweeps take out crossings that the value order makes", () => {
    // A (10) feeds the small D, B (9) the large C: by value, C above D, and the links cross
    const g = canonicalGraph(graph([0, 0, 1, 1], [10, 9, 5, 4], [[0, 3, 4], [1, 2, 5]]));
    const r = orderColumns(g);
    assert.ok(r.initial > 0);
    assert.ok(r.crossings < r.initial, `${r.crossings} < ${r.initial}`);
    assert.equal(r.crossings, 0);
  });
  it("never increases crossings on random DAGs", () => {
    const rand = prng(42);
    let improved = 0;
    for (let t = 0; t < 200; t++) {
      const r = orderColumns(canonicalGraph(randomDag(rand)));
      assert.ok(r.crossings <= r.initial, `graph ${t}: ${r.crossings} > ${r.initial}`);
      if (r.crossings < r.initial) improved++;
    }
    assert.ok(improved > 10, `improved ${improved}`);
  });
});

describe("sankey layout: geometry", () => {
  const d = decodeSankey(BIG);
  const opts = { height: 500, gap: 8, nodeWidth: 60, columnGap: 50 };
  const L = sankeyLayout(d, opts);

  it("is deterministic, whatever the order of the links", () => {
    const again = sankeyLayout(decodeSankey(BIG), opts);
    const shuffled = sankeyLayout(decodeSankey(shuffledLinks(BIG, 7)), opts);
    for (const other of [again, shuffled]) {
      for (const k of ["x0", "x1", "y0", "y1"]) assert.deepEqual(Array.from(other[k]), Array.from(L[k]), k);
      assert.deepEqual(other.edges.map((e) => e.d), L.edges.map((e) => e.d));
    }
  });

  it("fills each target exactly with its incoming links", () => {
    const inW = new Float64Array(L.N);
    let checked = 0;
    for (const l of L.links) inW[l.target] += l.width;
    for (let v = 0; v < L.N; v++) {
      if (inW[v] === 0 || L.val[v] * L.ky < 1) continue;
      checked++;
      assert.ok(Math.abs(inW[v] - L.h[v]) <= 1e-6 * L.h[v], `vertex ${v}: ${inW[v]} vs ${L.h[v]}`);
      // and they stack from the node's top, in the order of their sources
      const ins = L.links.filter((l) => l.target === v).sort((a, b) => a.ty - b.ty);
      assert.ok(Math.abs(ins[0].ty - L.y0[v]) < 1e-9);
    }
    assert.ok(checked > 20);
  });

  it("keeps one vertical scale and the height", () => {
    assert.ok(L.ky > 0);
    assert.ok(L.height <= 500 + 1e-6, `height ${L.height}`);
    for (let k = 0; k < d.n; k++) assert.ok(Math.abs(L.h[k] - Math.max(1, d.value[k] * L.ky)) < 1e-9);
  });

  it("puts dummies in their columns and chains continue through them", () => {
    for (let j = 0; j < d.nDummy; j++) {
      const v = d.n + j;
      assert.equal(L.col[v], d.dummyColumn[j]);
      assert.equal(L.x0[v], L.colX[d.dummyColumn[j]]);
    }
    let chains = 0;
    for (const e of L.edges) {
      for (let i = 0; i + 1 < e.links.length; i++) {
        const a = L.links[e.links[i]];
        const b = L.links[e.links[i + 1]];
        assert.equal(a.target, b.source);
        assert.ok(a.target >= d.n, "a chain passes through dummies");
        assert.ok(Math.abs(a.ty - b.sy) < 1e-9);
        chains++;
      }
    }
    assert.ok(chains > 0);
  });

  it("survives zero values, a single node and nothing at all", () => {
    const zero = sankeyLayout(graph([0, 1, 1], [0, 0, 0], [[0, 1, 0], [0, 2, 0]]), opts);
    assert.equal(zero.ky, 0);
    for (const k of ["y0", "y1", "x0"]) assert.ok(Array.from(zero[k]).every(Number.isFinite));
    assert.ok(zero.edges.every((e) => !e.d.includes("NaN")));
    const one = sankeyLayout(graph([0], [5], []), opts);
    assert.equal(one.h[0], 500);
    const none = sankeyLayout(graph([], [], []), opts);
    assert.equal(none.N, 0);
  });
});

describe("sankey figure", () => {
  const STATE = { group_by: "file", selected_groups: [1], selected_profiles: [3] };

  it("is deterministic bytes, from arrays, DataViews, shuffled links and the exporter alike", () => {
    const a = sankeySVG(BIG, STATE);
    assert.equal(sankeySVG(BIG, STATE), a);
    assert.equal(sankeySVG(shuffledLinks(BIG, 3), STATE), a);
    assert.equal(sankeySVG(asBuffers(BIG), STATE), a);
    assert.equal(renderSVG(JSON.stringify({ kind: "sankey", data: BIG, state: STATE, options: {} })), a);
  });

  it("follows the DOM contract", () => {
    const svg = sankeySVG(SMALL, STATE);
    assert.match(svg, /<g class="cctviz-nodes" role="listbox" aria-label="[^"]+" aria-multiselectable="true">/);
    const opts = [...svg.matchAll(/<g class="(cctviz-snode[^"]*)"[^>]* role="option" data-node="(\d+)" aria-label="([^"]*)" aria-selected="(true|false)"/g)];
    assert.equal(opts.length, SMALL.n);
    for (const [, cls, k, label, sel] of opts) {
      assert.ok(label.startsWith(SMALL.label[Number(k)]), label);
      assert.equal(sel, String(Number(k) === 1));
      assert.equal(cls.split(" ").includes("selected"), Number(k) === 1);
    }
    assert.match(svg, /<g class="cctviz-dist" data-node="\d+">/);
    assert.match(svg, /<circle class="cctviz-outlier[^"]*"[^>]* data-profile="\d+"/);
    assert.match(svg, /class="cctviz-cue[^"]*"[^>]*>\u25b2 [\d.]+ (s|ms)</);
    assert.ok(svg.includes("Height: time (inc), mean over"), "the legend names the metric");
    assert.ok(!svg.includes("time (inc) [s]"), "not the recorded unit: the values carry theirs");
    assert.ok(svg.includes("grouped by file"));
    assert.ok(!svg.includes("NaN"));
    assert.ok(!svg.includes("cctviz-diff"));
  });

  it("renders diff mode with a diverging legend and the differences' histogram", () => {
    const p = synthPayload({ perColumn: [1, 3, 4, 3], seed: 3, diff: true });
    const svg = sankeySVG(p, {});
    assert.match(svg, /<svg [^>]*class="cctviz-fig cctviz-sankey-fig cctviz-diff cctviz-export-light"/);
    // the legend's ticks carry their unit: no recorded unit over them (issue 35)
    assert.ok(svg.includes("Colour: run B (after) \u2212 run A (before) (mean)<"));
    const bar = [...svg.split("cctviz-legend-color")[1].matchAll(/fill="rgb\((\d+), (\d+), (\d+)\)"/g)].map((x) => x.slice(1).map(Number));
    assert.ok(bar[0][2] > bar[0][0] && bar.at(-1)[0] > bar.at(-1)[2], "RdBu from blue (low) to red (high)");
    assert.ok(!svg.includes("cctviz-boxplot\""), "no box plot of values on differences");
    const scene = sankeyScene(decodeSankey(p), sankeyExportSettings({}));
    const k = scene.geom.dist.findIndex(Boolean);
    assert.deepEqual([scene.geom.dist[k].lo, scene.geom.dist[k].hi], [Math.fround(p.diff.dhist_lo[k]), Math.fround(p.diff.dhist_hi[k])]);
    const lines = tooltipLines(decodeSankey(p), 0).map((l) => l.text);
    assert.ok(lines.some((t) => t.startsWith("A mean ") && t.includes(", B mean ")));
  });

  it("keeps an untrusted name as escaped text", () => {
    const evil = "<img src=x onerror=alert(1)>";
    const p = { ...SMALL, label: [evil, ...SMALL.label.slice(1)], group: [evil, ...SMALL.group.slice(1)] };
    const svg = sankeySVG(p, {});
    assert.ok(svg.includes("&lt;img src=x onerror=alert(1)&gt;"));
    assert.ok(!svg.includes("<img"));
    assert.ok(!/<script|<foreignObject/i.test(svg));
  });

  it("has no NaN with zero values, one node, or no data", () => {
    const zero = synthPayload({ perColumn: [1, 2, 2], seed: 1 });
    for (const k of ["value", "min", "max", "std", "q1", "median", "q3", "whisker_lo", "whisker_hi", "cost", "link_value", "outlier_value"]) zero[k] = zero[k].map(() => 0);
    zero.imbalance = zero.imbalance.map(() => NaN);
    zero.hist = zero.hist.map((_, i) => (i % zero.bins === zero.bins - 1 ? zero.profiles : 0));
    const one = { ...synthPayload({ perColumn: [1], seed: 2 }), n_dummy: 0 };
    for (const p of [zero, one, {}, { n: 0 }]) {
      const svg = sankeySVG(JSON.parse(JSON.stringify(p)), {});
      assert.ok(!svg.includes("NaN") && !svg.includes("Infinity"), svg.slice(0, 300));
    }
    assert.ok(sankeySVG({}, {}).includes("No groups to show"));
  });

  it("tooltips give values with units and where the maximum is", () => {
    const d = decodeSankey(SMALL);
    const lines = tooltipLines(d, 0).map((l) => l.text);
    assert.equal(lines[0], SMALL.label[0]);
    assert.ok(lines.includes(SMALL.group[0]));
    assert.ok(lines.some((t) => /^mean [\d.]+ s, std [\d.]+ (s|ms)$/.test(t)), lines.join("|"));
    assert.ok(lines.includes(`max at rank ${SMALL.argmax[0]}`));
    assert.ok(lines.some((t) => t.startsWith("imbalance (max/mean) ")));
  });

  it("draws an expanded node as an icicle of its call sites", () => {
    const sites = { node: 1, n: 4, id: [10, 11, 12, 13], parent: [-1, 0, 0, -1], depth: [0, 1, 1, 0], value: [SMALL.value[1] * 0.75, 30, 20, SMALL.value[1] * 0.25], label: ["solve", "cg", "dot", "setup"] };
    const p = { ...SMALL, sites: [sites] };
    const svg = sankeySVG(p, { selection: [12] });
    for (const id of sites.id) assert.match(svg, new RegExp(`<g class="cctviz-site[^"]*" data-id="${id}"`));
    assert.match(svg, /<g class="cctviz-site selected" data-id="12"/);
    const scene = sankeyScene(decodeSankey(p), sankeyExportSettings({}));
    const L = scene.geom.layout;
    const cells = siteCells(decodeSankey(p).sites[0], L.h[1], 0, 50);
    const top = cells.filter((c) => c.i === 0 || c.i === 3).reduce((a, c) => a + c.h, 0);
    assert.ok(Math.abs(top - L.h[1]) < 1e-9, "depth-0 sites fill the node");
    assert.ok(scene.geom.widths[1] > scene.geom.widths[0], "an expanded node is wider");
  });

  it("draws the brushed range on its node", () => {
    const k = 1;
    const svg = sankeySVG(SMALL, { brush: { node: k, lo: SMALL.min[k], hi: SMALL.median[k] } });
    assert.match(svg, new RegExp(`<g class="cctviz-dist" data-node="${k}"><rect class="cctviz-dist-hit"[^>]*/><rect class="cctviz-brush-range"`));
  });

  it("lays out to an asked width and height", () => {
    const s = sankeyScene(decodeSankey(SMALL), sankeyExportSettings({}, { width: 700, height: 500 }));
    assert.equal(s.frame.width, "700pt");
    assert.equal(s.frame.height, "500pt");
    assert.ok(s.scale > 0.99, `scale ${s.scale}`);
    // twelve columns do not fit in 400 pt at 10 pt: the deeper columns are cut (said
    // in the caption), nothing is scaled, every drawn node is named
    const big = sankeyScene(decodeSankey(BIG), sankeyExportSettings({}, { width: 400 }));
    assert.equal(big.frame.width, "400pt");
    assert.equal(big.scale, 1);
    assert.equal(big.frame.viewBox, `0 0 400 ${big.frame.height.replace("pt", "")}`);
    assert.match(big.notes.join(" "), /deeper column/);
    assert.ok(big.geom.layout.width <= 400);
  });
});

describe("sankey standalone page", () => {
  it("keeps selections local and expands nothing", () => {
    const model = localSankeyModel({ kind: "sankey", data: SMALL, state: { selected_groups: [2] } });
    let fired = 0;
    model.on("change:selected_groups", () => fired++);
    model.set("selected_groups", [1]);
    model.set("expanded", [1]);
    model.save_changes();
    assert.equal(fired, 1);
    assert.deepEqual(model.get("selected_groups"), [1]);
    assert.deepEqual(model.get("expanded"), []);
  });
});
