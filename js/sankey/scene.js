// The ensemble Sankey's scene: a pure function from the decoded `_data`,
// plain settings and a text measure to everything the figure shows (layout,
// node marks with the spread over profiles, ribbons, labels, legends), as
// prims ({tag, attrs, text?, children?}). No DOM: draw.js turns it into SVG,
// in the notebook and in the exporter alike.

import { interpolateRdBu } from "d3-scale-chromatic";
import { r2 } from "../dom.js";
import { formatRatio, formatValue, unitLabel } from "../format.js";
import { FONT_FAMILY, TABLE_MEASURE, distinctCutter } from "../measure.js";
import { P, colorBar, frameSize, frameTop, legendFlowWidth, legendKit, typesetter } from "../scene-kit.js";
import { MISSING_COLOR, sequentialScale, textColorOn, valueAt } from "../kit/color.js";
import { binsOf, distRange, fmt, hasCue, profileLabel, waitOf } from "./data.js";
import { waitCue, waitHeading, waitSentences } from "../kit/waits.js";
import { sankeyLayout } from "./layout.js";

const TRIANGLE = "\u25b2";
const ELLIPSIS = "\u2026";
const MINUS = "\u2212";

/** Settings of a scene, all plain values; every field has a default. */
export const DEFAULT_SETTINGS = Object.freeze({
  fontSize: 12, // label size in figure units (px on screen, pt in export)
  width: null, // width to fill (null: natural)
  height: null, // height of the whole figure to fill (null: natural)
  fit: false, // export: scale the figure down to width/height when it cannot be laid out smaller
  legends: true,
  highlight: true, // draw the selections
  title: "",
  background: null,
  style: "",
  groupBy: "", // how call sites were grouped, in words (the `group_by` trait)
  selectedGroups: [], // selected super node ids
  selection: [], // selected call site ids (tree node ids)
  selectedProfiles: [], // selected profile ids
  brush: null, // {node, lo, hi} or null
});

/** Sizes of the figure, proportional to the font size (12 on screen). */
function sizes(fontSize) {
  const u = fontSize / 12;
  return {
    u,
    font: fontSize,
    small: r2(fontSize * (11 / 12)),
    tiny: r2(fontSize * (9 / 12)),
    margin: 14 * u,
    nodeW: 116 * u,
    minNodeW: 60 * u,
    gapX: 120 * u,
    minGapX: 56 * u,
    gapY: 10 * u,
    row: 16 * u, // label row inside a node
    box: 10 * u, // box plot strip
    hist: 14 * u, // least histogram height
    range: 11 * u, // min/max numbers row
    siteW: 76 * u,
  };
}

/** Font size and weight of a text prim by its class. */
const typeset = typesetter({
  bold: ["cctviz-legend-title", "cctviz-cue"],
  small: ["cctviz-cue", "cctviz-legend-title", "cctviz-legend-text", "cctviz-site-label"],
  tiny: ["cctviz-range", "cctviz-outlier-label"],
});

/** Node colours: imbalance (max/mean, log scale from 1×) or, in diff mode, B − A on a diverging scale. */
export function nodeColors(d) {
  if (d.diff) {
    let dom = d.diff.domain;
    if (!dom) {
      let a = 0;
      for (let k = 0; k < d.n; k++) if (Number.isFinite(d.diff.delta[k])) a = Math.max(a, Math.abs(d.diff.delta[k]));
      dom = [-a, a];
    }
    const scale = sequentialScale(dom, { interpolator: (t) => interpolateRdBu(1 - t), log: false });
    return { kind: "diff", scale, fill: (k) => scale.color(d.diff.delta[k]) };
  }
  // a ratio on a node worth less than the cue's threshold (1% of the run) is
  // noise (64x of a microsecond): such nodes neither stretch the scale nor
  // take its hot end; they are drawn as balanced (the tooltip has the ratio)
  const thr = Number.isFinite(d.costThreshold) ? d.costThreshold : 0;
  const counts = (k) => Number.isFinite(d.imbalance[k]) && !(d.value[k] < thr);
  let hi = 2;
  for (let k = 0; k < d.n; k++) if (counts(k)) hi = Math.max(hi, d.imbalance[k]);
  const scale = sequentialScale([1, hi], { log: true });
  return { kind: "imbalance", scale, fill: (k) => scale.color(counts(k) ? d.imbalance[k] : Number.isFinite(d.imbalance[k]) ? 1 : NaN) };
}

/** The imbalance cue's text: what the imbalance costs ("▲ 3.14 s"). */
export function cueText(d, k) {
  return `${TRIANGLE} ${fmt(d, d.cost[k])}`;
}

/** The cue of node k: the late rank on a collective whose waiting is known
 *  ("late: rank 2"), else the imbalance cue where it costs enough, else "". */
export function nodeCue(d, k) {
  const w = waitOf(d, k);
  if (w && w.pure) return waitCue(w);
  return hasCue(d, k) ? cueText(d, k) : "";
}

/** The metric's name above values that carry their units: "time (inc)" (with
 *  "[unit unknown]" where no unit is known: cct/data.js legendName). */
export function metricText(d) {
  const metric = d.metric || "value";
  return d.unit ? metric : unitLabel(metric, {});
}

/** "64 profiles", "63 profiles (1 failed, left out)". */
export function profilesText(d) {
  const live = `${d.profiles} profile${d.profiles === 1 ? "" : "s"}`;
  return d.failed > 0 ? `${live} (${d.failed} failed, left out)` : live;
}

/** The accessible label of super node k: its label first, then its values. */
export function ariaLabel(d, k) {
  const parts = [d.label[k], `mean ${fmt(d, d.mean[k])}`];
  if (d.diff) parts.push(`${d.diff.bLabel} ${MINUS} ${d.diff.aLabel} ${fmt(d, d.diff.delta[k])}`);
  else {
    parts.push(`min ${fmt(d, d.min[k])}`, `max ${fmt(d, d.max[k])}`);
    if (Number.isFinite(d.imbalance[k])) parts.push(`imbalance ${formatRatio(d.imbalance[k])}${hasCue(d, k) ? ` costing ${fmt(d, d.cost[k])} (flagged)` : ""}`);
    parts.push(...waitSentences(waitOf(d, k)));
  }
  parts.push(`${d.members[k]} call site${d.members[k] === 1 ? "" : "s"}`);
  return parts.join(", ");
}

/**
 * The tooltip of super node k as lines {text, cls?}: label, full group name,
 * call sites, mean/min/max/std, where the maximum is, imbalance and its cost;
 * in diff mode the means of A and B and their difference.
 */
export function tooltipLines(d, k) {
  const lines = [{ cls: "cctviz-tip-path", text: d.label[k] }];
  if (d.group[k] && d.group[k] !== d.label[k]) lines.push({ cls: "cctviz-tip-note", text: d.group[k] });
  lines.push({ text: `${d.members[k]} call site${d.members[k] === 1 ? "" : "s"}` });
  lines.push({ cls: "cctviz-tip-head", text: `${metricText(d)} over ${profilesText(d)}` });
  lines.push({ text: `mean ${fmt(d, d.mean[k])}, std ${fmt(d, d.std[k])}${d.counted[k] ? ` (${d.counted[k]} profiles)` : ""}` });
  lines.push({ text: `min ${fmt(d, d.min[k])}, max ${fmt(d, d.max[k])}` });
  if (d.argmax[k] >= 0) lines.push({ text: `max at ${profileLabel(d, d.argmax[k])}` });
  if (Number.isFinite(d.imbalance[k]) || Number.isFinite(d.cost[k])) {
    lines.push({
      cls: hasCue(d, k) ? "cctviz-tip-alert" : undefined,
      text: `imbalance (max/mean) ${formatRatio(d.imbalance[k])}, costs ${fmt(d, d.cost[k])} (max ${MINUS} mean)`,
    });
  }
  const outl = d.outliersOf[k];
  if (outl.length) {
    const more = d.outlierMore[k] > 0 ? ` and ${d.outlierMore[k]} more` : "";
    lines.push({ text: `outliers: ${outl.map((j) => `${profileLabel(d, d.outlierProfile[j])} ${fmt(d, d.outlierValue[j])}`).join(", ")}${more}` });
  }
  const waits = waitSentences(waitOf(d, k));
  if (waits.length) {
    lines.push({ cls: "cctviz-tip-head", text: waitHeading(waitOf(d, k)) });
    for (const text of waits) lines.push({ text });
  }
  if (d.selMean && Number.isFinite(d.selMean[k])) lines.push({ cls: "cctviz-tip-sel", text: `selected profiles: mean ${fmt(d, d.selMean[k])}` });
  if (d.diff) {
    const df = d.diff;
    lines.push({ cls: "cctviz-tip-head", text: `${df.aLabel} (A) vs ${df.bLabel} (B)` });
    lines.push({ text: `A mean ${fmt(d, df.meanA[k])}, B mean ${fmt(d, df.meanB[k])}` });
    lines.push({ text: `B ${MINUS} A ${fmt(d, df.delta[k])}` });
  }
  return lines;
}

/** Tooltip of call site i of the expanded super node `s` (an entry of `d.sites`). */
export function siteTooltipLines(d, s, i) {
  const path = [];
  for (let r = i; r >= 0; r = s.parent[r]) path.push(s.label[r]);
  return [
    { cls: "cctviz-tip-path", text: path.reverse().join(" \u203a ") },
    { cls: "cctviz-tip-note", text: `in ${d.label[s.node]}` },
    { text: `mean ${metricText(d)}: ${fmt(d, s.value[i])}` },
  ];
}

/** Tooltip of outlier j. */
export function outlierTooltipLines(d, j) {
  const k = d.outlierNode[j];
  return [
    { cls: "cctviz-tip-path", text: profileLabel(d, d.outlierProfile[j]) },
    { text: `${d.label[k]}: ${fmt(d, d.outlierValue[j])} (mean ${fmt(d, d.mean[k])})` },
    { cls: "cctviz-tip-note", text: "outlier (beyond 1.5 IQR); click to select the profile" },
  ];
}

/** Tooltip of the ribbon of edge e. */
export function edgeTooltipLines(d, e, value) {
  const s = d.edgeSource[e];
  const t = d.edgeTarget[e];
  return [{ cls: "cctviz-tip-path", text: `${d.label[s] ?? "?"} \u2192 ${d.label[t] ?? "?"}` }, { text: `${metricText(d)}: ${fmt(d, value)}` }];
}

/** The sites' icicle of an expanded node: cells {i, x, y, w, h} within the node's height `hgt`. */
export function siteCells(s, hgt, x0, siteW) {
  const cells = [];
  const kids = Array.from({ length: s.n }, () => []);
  const tops = [];
  for (let i = 0; i < s.n; i++) (s.parent[i] >= 0 ? kids[s.parent[i]] : tops).push(i);
  const place = (list, y, h, scaleTotal) => {
    let yy = y;
    for (const i of list) {
      const v = Math.max(0, s.value[i]);
      const hh = scaleTotal > 0 ? (v / scaleTotal) * h : h / list.length;
      cells.push({ i, x: x0 + s.depth[i] * siteW, y: yy, w: siteW, h: hh });
      const own = Math.max(v, kids[i].reduce((a, c) => a + Math.max(0, s.value[c]), 0));
      place(kids[i], yy, hh, own);
      yy += hh;
    }
  };
  const total = tops.reduce((a, i) => a + Math.max(0, s.value[i]), 0);
  place(tops, 0, hgt, total);
  return cells;
}

/** Levels of an expanded node's icicle. */
function siteLevels(s) {
  let L = 0;
  for (let i = 0; i < s.n; i++) L = Math.max(L, s.depth[i] + 1);
  return L;
}

/**
 * The distribution drawn on node k, inside a box (x0..x1, y0..y1) in node
 * coordinates: histogram bars, selected profiles over them, the mean, the box
 * plot with outliers (not in diff mode), outlier labels and the min/max numbers
 * when there is room. Returns [prims, geometry {x0, x1, lo, hi}].
 */
function distPrims(d, k, box, m, measure, paint, st, selProfiles) {
  const ink = paint.cls;
  const { x0, x1 } = box;
  const [lo, hi] = distRange(d, k);
  // the whole band takes the pointer (a drag may start between two bars); draws nothing
  const kids = [P("rect", { class: "cctviz-dist-hit", x: r2(x0), y: r2(box.y0), width: r2(Math.max(0, x1 - x0)), height: r2(Math.max(0, box.y1 - box.y0)), fill: "none", "pointer-events": "all" })];
  const span = hi - lo;
  const X = (v) => (Number.isFinite(v) ? (span > 0 ? x0 + ((Math.max(lo, Math.min(hi, v)) - lo) / span) * (x1 - x0) : x1) : NaN);
  let yHist0 = box.y0;
  const showBox = !d.diff && box.boxH > 0;
  const yBox = box.y1 - box.rangeH - box.boxH / 2;
  const yHist1 = box.y1 - box.rangeH - (showBox ? box.boxH : 0);
  // brushed range
  const b = st.brush;
  if (b && Number(b.node) === k && Number.isFinite(Number(b.lo)) && Number.isFinite(Number(b.hi)) && box.histH + box.boxH > 0) {
    const a = X(Math.min(Number(b.lo), Number(b.hi)));
    const z = X(Math.max(Number(b.lo), Number(b.hi)));
    if (Number.isFinite(a) && Number.isFinite(z)) {
      kids.push(P("rect", { class: "cctviz-brush-range", x: r2(a), y: r2(box.y0), width: r2(Math.max(1, z - a)), height: r2(box.y1 - box.rangeH - box.y0) }));
    }
  }
  if (box.histH > 0 && d.B > 0) {
    const bins = binsOf(d, k);
    let top = 0;
    for (const c of bins) top = Math.max(top, c);
    const bw = (x1 - x0) / d.B;
    const hh = yHist1 - yHist0;
    const bar = (c, cls) => (c > 0 && top > 0 ? Math.max(1, (c / top) * hh) : 0);
    const bars = [];
    for (let j = 0; j < d.B; j++) {
      const bh = bar(bins[j]);
      if (bh > 0) bars.push(P("rect", { x: r2(x0 + j * bw), y: r2(yHist1 - bh), width: r2(Math.max(0.5, bw - (bw > 3 ? 0.6 : 0))), height: r2(bh) }));
    }
    kids.push(P("g", { class: "cctviz-hist", fill: paint.ink, "fill-opacity": "0.5" }, null, bars));
    if (d.histSel && !d.diff) {
      const sel = d.histSel.subarray(k * d.B, (k + 1) * d.B);
      const sb = [];
      for (let j = 0; j < d.B; j++) {
        const bh = bar(sel[j]);
        if (bh > 0) sb.push(P("rect", { x: r2(x0 + j * bw), y: r2(yHist1 - bh), width: r2(Math.max(0.5, bw - (bw > 3 ? 0.6 : 0))), height: r2(bh) }));
      }
      if (sb.length) kids.push(P("g", { class: "cctviz-hist-sel" }, null, sb));
    }
    // the zero of the differences, and the mean (diff: B − A)
    if (d.diff && lo < 0 && hi > 0) {
      const xz = X(0);
      kids.push(P("line", { class: "cctviz-zero", stroke: paint.ink, x1: r2(xz), x2: r2(xz), y1: r2(yHist0), y2: r2(yHist1) }));
    }
    const mean = d.diff ? d.diff.delta[k] : d.mean[k];
    const xm = X(mean);
    if (Number.isFinite(xm)) kids.push(P("line", { class: "cctviz-mean", stroke: paint.ink, x1: r2(xm), x2: r2(xm), y1: r2(yHist0), y2: r2(yHist1) }));
    if (d.selMean && !d.diff && Number.isFinite(d.selMean[k])) {
      const xs = X(d.selMean[k]);
      kids.push(P("line", { class: "cctviz-sel-mean", x1: r2(xs), x2: r2(xs), y1: r2(yHist0 - 1), y2: r2(yHist1 + 1) }));
    }
  }
  if (showBox) {
    const bk = [];
    const wl = X(d.whiskerLo[k]);
    const wh = X(d.whiskerHi[k]);
    const q1 = X(d.q1[k]);
    const q3 = X(d.q3[k]);
    const med = X(d.median[k]);
    const half = Math.min(box.boxH / 2 - 1, 3.5 * m.u);
    if (Number.isFinite(wl) && Number.isFinite(wh)) bk.push(P("line", { class: "cctviz-whisker", x1: r2(wl), x2: r2(wh), y1: r2(yBox), y2: r2(yBox) }));
    if (Number.isFinite(q1) && Number.isFinite(q3)) {
      bk.push(P("rect", { class: "cctviz-box", fill: paint.fill, x: r2(q1), y: r2(yBox - half), width: r2(Math.max(1, q3 - q1)), height: r2(2 * half) }));
    }
    if (Number.isFinite(med)) bk.push(P("line", { class: "cctviz-median", x1: r2(med), x2: r2(med), y1: r2(yBox - half), y2: r2(yBox + half) }));
    kids.push(P("g", { class: "cctviz-boxplot", stroke: paint.ink }, null, bk));
    // outliers: dots on the box line; their labels at the top of the histogram where free
    const placed = [];
    for (const j of d.outliersOf[k]) {
      const x = X(d.outlierValue[j]);
      if (!Number.isFinite(x)) continue;
      const p = d.outlierProfile[j];
      const on = selProfiles.has(p);
      kids.push(P("circle", {
        class: `cctviz-outlier${on ? " selected" : ""}`,
        fill: paint.ink,
        "data-profile": String(p),
        cx: r2(x),
        cy: r2(yBox),
        r: r2(Math.max(1.5, Math.min(half, 2.4 * m.u))),
      }));
      if (box.histH >= 2 * m.tiny && placed.length < 3) {
        const t = profileLabel(d, p);
        const w = measure.text(t, m.tiny);
        const left = x > (x0 + x1) / 2 ? x - w - 2 * m.u : x + 2 * m.u;
        if (left >= x0 - 1 && left + w <= x1 + 1 && !placed.some(([a, z]) => left < z + 3 * m.u && left + w > a - 3 * m.u)) {
          placed.push([left, left + w]);
          kids.push(P("text", { class: `cctviz-outlier-label ${ink}`, x: r2(left), y: r2(yHist0), dy: "0.8em" }, t));
        }
      }
    }
  }
  if (box.rangeH > 0) {
    const tl = fmt(d, lo);
    const th = fmt(d, hi);
    if (measure.text(tl, m.tiny) + measure.text(th, m.tiny) + 6 * m.u <= x1 - x0) {
      const y = box.y1 - box.rangeH / 2;
      kids.push(P("text", { class: `cctviz-range ${ink}`, x: r2(x0), y: r2(y), dy: "0.35em" }, tl));
      kids.push(P("text", { class: `cctviz-range ${ink}`, x: r2(x1), y: r2(y), dy: "0.35em", "text-anchor": "end" }, th));
    }
  }
  const g = P("g", { class: "cctviz-dist", "data-node": String(k) }, null, kids);
  return [g, { x0, x1, lo, hi, y0: box.y0, y1: box.y1 }];
}

/** Whether a cue leaves too little of a name beside it (a cut name of fewer than
 *  5 characters, its ellipsis counted): then the cue shrinks to its triangle (the
 *  tooltip keeps the cost). */
function squeezedBy(cue, label, name) {
  return Boolean(cue) && label !== name && [...(label || "")].length < Math.min(5, [...String(name)].length);
}

/** Room right of the last column for its nodes' outside labels: the widest of
 *  name and cue, but no more than the ``spare`` width the columns leave at their
 *  natural pitch, and never under 96 (what every figure had before), so that
 *  long names (RAJAPerf's "Apps_NODAL_ACCUMULATION_3D") stay readable where there
 *  is room and a crowded figure keeps its columns' labels. */
function lastColumnRoom(d, last, measure, m, spare) {
  const u = m.u;
  let need = 0;
  for (let k = 0; k < d.n; k++) {
    if (d.column[k] !== last) continue;
    const cue = nodeCue(d, k);
    const w = measure.text(String(d.label[k]), m.font) + (cue ? measure.text(cue, m.small, 700) + 8 * u : 0);
    need = Math.max(need, w + 14 * u);
  }
  return Math.max(96 * u, Math.min(need, spare));
}

/** Legend items [prim, width, height]. */
function legendItems(d, colors, m, measure, st, maxW) {
  const items = [];
  if (d.n === 0) return items;
  const u = m.u;
  const { tw, title, text, cut } = legendKit(m, measure, maxW);
  // what the heights are
  {
    const t = cut(`Height: ${metricText(d)}, mean over ${profilesText(d)}`, 90);
    const lines = [];
    if (st.groupBy) lines.push(`grouped by ${st.groupBy}`);
    lines.push(`${d.n} group${d.n === 1 ? "" : "s"}, ${d.treeSize || "?"} call sites`);
    if (d.backEdges > 0) lines.push(`${d.backEdges} back edge${d.backEdges === 1 ? "" : "s"} broken (not drawn)`);
    const line = cut(lines.join(" \u00b7 "), 90);
    items.push([P("g", { class: "cctviz-legend" }, null, [title(t), text(0, 17 * u, line, { dy: "0.8em" })]), Math.max(tw(t, 700), tw(line)), 30 * u]);
  }
  // colour
  {
    const W = 180 * u;
    const y0 = 17 * u;
    const bh = 10 * u;
    const sc = colors.scale;
    const t = colors.kind === "diff" ? cut(`Colour: ${d.diff.bLabel} ${MINUS} ${d.diff.aLabel} (mean) ${d.unit ? `[${d.unit}]` : ""}`.trim(), 80) : "Colour: imbalance (max/mean)";
    const kids = [title(t), ...colorBar(sc.interpolator, W, y0, bh)];
    const ticks = colors.kind === "diff" ? [0, 0.5, 1] : [0, 0.5, 1];
    for (const tt of ticks) {
      const v = valueAt(sc, tt);
      const label = colors.kind === "diff" ? (tt === 0.5 ? "0" : fmt(d, v)) : formatRatio(v);
      kids.push(P("line", { class: "cctviz-legend-tick", x1: r2(tt * W), x2: r2(tt * W), y1: r2(y0 + bh), y2: r2(y0 + bh + 4 * u) }));
      kids.push(text(tt * W, y0 + bh + 6 * u, label, { dy: "0.8em", "text-anchor": tt === 0 ? "start" : tt === 1 ? "end" : "middle" }));
    }
    let w = W;
    let hgt = 48 * u;
    if (colors.kind === "diff") {
      const df = d.diff;
      const line = cut(`A: ${df.aLabel} (${df.aProfiles}) \u00b7 B: ${df.bLabel} (${df.bProfiles}) \u00b7 red: B higher`, 80);
      kids.push(text(0, 46 * u, line, { dy: "0.8em" }));
      w = Math.max(w, tw(line));
      hgt = 60 * u;
    } else {
      kids.push(P("rect", { class: "cctviz-legend-swatch", x: r2(W + 12 * u), y: r2(y0), width: r2(bh), height: r2(bh), fill: MISSING_COLOR }));
      kids.push(text(W + 26 * u, y0 + bh / 2, "n/a", { dy: "0.35em" }));
      w = W + 26 * u + tw("n/a");
    }
    items.push([P("g", { class: "cctviz-legend cctviz-legend-color" }, null, kids), Math.max(w, tw(t, 700)), hgt]);
  }
  // the glyph on the nodes
  {
    const t = d.diff ? `On each node: ${d.diff.bLabel}'s profiles ${MINUS} ${d.diff.aLabel}'s mean` : "On each node: the spread over profiles";
    const W = 64 * u;
    const y = 17 * u;
    const bars = [0.15, 0.35, 0.75, 1, 0.6, 0.35, 0.2, 0.1].map((f, j) =>
      P("rect", { x: r2((j * W) / 8), y: r2(y + 16 * u * (1 - f)), width: r2(W / 8 - 0.6), height: r2(16 * u * f) }),
    );
    const kids = [title(t), P("g", { class: "cctviz-hist cctviz-legend-hist" }, null, bars)];
    let t1;
    if (d.diff) {
      kids.push(P("line", { class: "cctviz-zero cctviz-legend-hist", x1: r2(W * 0.35), x2: r2(W * 0.35), y1: r2(y), y2: r2(y + 16 * u) }));
      t1 = "histogram of the differences (min \u2192 max of the node), dashed: mean difference, solid: 0";
    } else {
      const yb = y + 22 * u;
      kids.push(P("g", { class: "cctviz-boxplot cctviz-legend-hist" }, null, [
        P("line", { class: "cctviz-whisker", x1: r2(W * 0.05), x2: r2(W * 0.7), y1: r2(yb), y2: r2(yb) }),
        P("rect", { class: "cctviz-box", x: r2(W * 0.2), y: r2(yb - 3 * u), width: r2(W * 0.3), height: r2(6 * u) }),
        P("line", { class: "cctviz-median", x1: r2(W * 0.32), x2: r2(W * 0.32), y1: r2(yb - 3 * u), y2: r2(yb + 3 * u) }),
      ]));
      kids.push(P("circle", { class: "cctviz-outlier cctviz-legend-hist", cx: r2(W * 0.95), cy: r2(yb), r: r2(2.4 * u) }));
      t1 = "histogram (min \u2192 max of the node), dashed: mean; box: quartiles, whiskers 1.5 IQR, dots: outliers";
    }
    kids.push(text(W + 8 * u, y + 8 * u, t1, { dy: "0.35em" }));
    let w = W + 8 * u + tw(t1);
    let hgt = y + 28 * u;
    if (!d.diff && d.costThreshold !== null) {
      const t2 = `imbalance costs max ${MINUS} mean \u2265 ${fmt(d, d.costThreshold)}`;
      kids.push(P("text", { class: "cctviz-cue", x: r2(W + 8 * u), y: r2(y + 22 * u), dy: "0.35em" }, TRIANGLE));
      kids.push(text(W + 22 * u, y + 22 * u, t2, { dy: "0.35em" }));
      w = Math.max(w, W + 22 * u + tw(t2));
      hgt = y + 30 * u; // the cue's row ends below the box plot's
    }
    if (!d.diff && [...d.waits.values()].some((w) => waitCue(w))) {
      const yw = hgt + 6 * u;
      const t3 = "the rank the others waited for most at a collective (the waiters are not flagged)";
      kids.push(P("text", { class: "cctviz-cue", x: r2(W + 8 * u), y: r2(yw), dy: "0.35em" }, "late:"));
      kids.push(text(W + 8 * u + tw("late: ", 700), yw, t3, { dy: "0.35em" }));
      w = Math.max(w, W + 8 * u + tw("late: ", 700) + tw(t3));
      hgt = yw + 8 * u;
    }
    const sel = (st.selectedProfiles || []).map(Number);
    if (sel.length) {
      const names = sel.slice(0, 4).map((p) => profileLabel(d, p)).join(", ") + (sel.length > 4 ? `, ${ELLIPSIS}` : "");
      const t3 = cut(`selected: ${sel.length} profile${sel.length === 1 ? "" : "s"} (${names})`, 80);
      const ys = hgt + 6 * u; // a row of its own, clear of the rows above
      kids.push(P("rect", { class: "cctviz-hist-sel", x: 0, y: r2(ys - 4 * u), width: r2(10 * u), height: r2(8 * u) }));
      kids.push(text(14 * u, ys, t3, { dy: "0.35em" }));
      w = Math.max(w, 14 * u + tw(t3));
      hgt = ys + 8 * u;
    }
    items.push([P("g", { class: "cctviz-legend" }, null, kids), Math.max(w, tw(t, 700)), hgt]);
  }
  return items;
}

/**
 * Build the scene of a Sankey view.
 *
 * @param {import("./data.js").SankeyData} d decoded `_data`
 * @param {object} settings see {@link DEFAULT_SETTINGS}
 * @param {{text: Function, truncate: Function}} [measure]
 * @returns {object} `frame`, `width`, `height`, `scale`, `legends`, `band`, `title`,
 *   `titleHeight`, `content`, `links` (ribbons), `nodes`, `overlay`, `empty`, `geom`
 *   (layout and each node's distribution box, for interaction), `diff`, `fontSize`, `fontFamily`.
 */
export function sankeyScene(d, settings, measure = TABLE_MEASURE) {
  const st = { ...DEFAULT_SETTINGS, ...settings };
  const m = sizes(st.fontSize);
  // node labels cut so that different groups never read alike (measure.js)
  const cutLabel = distinctCutter(d.label, measure, m.font);
  const u = m.u;
  const colors = nodeColors(d);
  const selG = new Set(st.highlight ? (st.selectedGroups || []).map(Number) : []);
  const selS = new Set(st.highlight ? (st.selection || []).map(Number) : []);
  const selP = new Set(st.highlight ? (st.selectedProfiles || []).map(Number) : []);

  // widths: the asked width shared by the columns, within bounds
  let columns = Math.max(1, d.columns);
  for (let k = 0; k < d.n; k++) columns = Math.max(columns, d.column[k] + 1);
  for (let j = 0; j < d.nDummy; j++) columns = Math.max(columns, d.dummyColumn[j] + 1);
  // the columns at their natural pitch come first; the labels take what they leave
  const spare = (st.width || 1500 * u) - columns * (m.nodeW + m.gapX) - 2 * m.margin;
  const rightPad = lastColumnRoom(d, columns - 1, measure, m, spare);
  let nodeW = m.nodeW;
  let gapX = m.gapX;
  // without an asked width: the natural one, but no wider than 1500 (a figure, not a mural)
  const target = st.width || Math.min(columns * (m.nodeW + m.gapX) + rightPad + 2 * m.margin, 1500 * u);
  {
    const avail = target - 2 * m.margin - rightPad;
    const extra = d.sites.reduce((a, s) => a + siteLevels(s) * m.siteW, 0);
    const ratio = m.gapX / m.nodeW;
    nodeW = Math.max(m.minNodeW, Math.min(m.nodeW * 1.2, (avail - extra) / (columns + (columns - 1) * ratio)));
    gapX = columns > 1 ? Math.max(m.minGapX, (avail - extra - columns * nodeW) / (columns - 1)) : m.gapX;
  }
  const widths = new Float64Array(d.n).fill(nodeW);
  for (const s of d.sites) widths[s.node] = nodeW + siteLevels(s) * m.siteW;

  // natural width of the body (layout x does not depend on the height)
  const probe = sankeyLayout(d, { height: 1, nodeWidth: widths, dummyWidth: nodeW, columnGap: gapX, iterations: 0, relax: 0 });
  const naturalW = (d.n ? probe.width + rightPad : 300 * u) + 2 * m.margin;
  const items = st.legends ? legendItems(d, colors, m, measure, st, legendFlowWidth(st, m, naturalW) - 2 * m.margin) : [];
  const top = frameTop(st, m, measure, naturalW, items);
  let perCol = 1;
  {
    const cnt = new Map();
    for (let k = 0; k < d.n; k++) cnt.set(d.column[k], (cnt.get(d.column[k]) || 0) + 1);
    for (const c of cnt.values()) perCol = Math.max(perCol, c);
  }
  const naturalH = Math.max(300 * u, Math.min(760 * u, perCol * 40 * u + 160 * u));
  const bodyH = st.height ? Math.max(120 * u, st.height - top.titleHeight - top.band - 2 * m.margin) : naturalH;
  const L = sankeyLayout(d, { height: bodyH, gap: m.gapY, minHeight: 1, nodeWidth: widths, dummyWidth: nodeW, columnGap: gapX });

  // ribbons
  const links = [];
  for (const e of L.edges) {
    const first = L.links[e.links[0]];
    const s = d.edgeSource[e.edge] ?? first.source;
    const t = d.edgeTarget[e.edge] ?? L.links[e.links[e.links.length - 1]].target;
    const on = selG.has(s) || selG.has(t);
    links.push(P("path", { class: `cctviz-flow${on ? " selected" : ""}`, "data-edge": String(e.edge), "data-source": String(s), "data-target": String(t), "data-value": String(first.value), d: e.d }));
  }

  // nodes
  const nodes = [];
  const dist = new Array(d.n).fill(null);
  const outside = []; // [k, priority] labels placed after the nodes
  for (let k = 0; k < d.n; k++) {
    const x = L.x0[k];
    const y = L.y0[k];
    const hgt = L.h[k];
    const w = nodeW;
    const fill = colors.fill(k);
    const inkColor = textColorOn(fill);
    const ink = inkColor === "#ffffff" ? "cctviz-ink-light" : "cctviz-ink-dark";
    const cue = nodeCue(d, k);
    const kids = [P("rect", { class: "cctviz-smark", width: r2(w), height: r2(hgt), fill })];
    let inside = false;
    let head = 0; // rows of text at the top of the node
    if (hgt >= m.row) {
      inside = true;
      head = m.row;
      const cueW = cue ? measure.text(cue, m.small, 700) + 6 * u : 0;
      let label = cutLabel(d.label[k], w - 8 * u - cueW) || "";
      // a cut label and room for a second row: the cue goes there
      let cueY = m.row / 2;
      let cueText_ = cue;
      // the name cut by the cue: the cue takes a second row where the node has
      // room for it and for the box plot (the histogram may go); else, where it
      // squeezes the name (squeezedBy), the cue shrinks to its triangle
      const squeezed = squeezedBy(cue, label, d.label[k]);
      if (cue && label !== d.label[k] && hgt >= 2 * m.row + m.box + 2 * u) {
        label = cutLabel(d.label[k], w - 8 * u) || "";
        cueY = m.row * 1.5;
        head = 2 * m.row;
        // a row of its own, but wider than the node: the triangle, or nothing for a late rank
        if (cueW - 6 * u > w - 8 * u) cueText_ = hasCue(d, k) ? TRIANGLE : "";
      } else if (squeezed) {
        cueText_ = hasCue(d, k) ? TRIANGLE : ""; // a late rank's cue does not shrink: the tooltip has it
        label = cutLabel(d.label[k], w - 10 * u - measure.text(TRIANGLE, m.small, 700)) || "";
      }
      if (label) {
        kids.push(P("text", { class: `cctviz-label ${ink}`, x: r2(4 * u), y: r2(m.row / 2), dy: "0.35em" }, label));
        if (cueText_) kids.push(P("text", { class: `cctviz-cue ${ink}`, x: r2(w - 4 * u), y: r2(cueY), dy: "0.35em", "text-anchor": "end" }, cueText_));
      } else {
        // no room for the name inside: it goes outside, with the cue
        inside = false;
        head = 0;
      }
    }
    // the distribution
    const a = inside ? hgt - head - 2 * u : hgt - 2 * u;
    const boxH = d.diff ? 0 : a >= m.box ? m.box : 0;
    let histH = a - boxH >= m.hist ? Math.min(a - boxH, 64 * u) : 0;
    let rangeH = 0;
    if (histH > 0 && a - boxH - histH >= 0 && a - boxH >= m.hist + m.range + 4 * u) {
      rangeH = m.range;
      histH = Math.min(a - boxH - rangeH, 64 * u);
    }
    if (boxH + histH > 0 && w >= 40 * u) {
      const y0 = inside ? head : (hgt - (boxH + histH)) / 2;
      const box = { x0: 5 * u, x1: w - 5 * u, y0, y1: y0 + histH + boxH + rangeH, boxH, histH, rangeH };
      const [g, geo] = distPrims(d, k, box, m, measure, { cls: ink, ink: inkColor, fill }, st, selP);
      kids.push(g);
      dist[k] = { ...geo, x0: geo.x0 + x, x1: geo.x1 + x, y0: geo.y0 + y, y1: geo.y1 + y };
    }
    // the call sites of an expanded node
    const s = d.sitesOf.get(k);
    if (s) {
      for (const c of siteCells(s, hgt, w, m.siteW)) {
        const on = selS.has(s.id[c.i]);
        const sk = [P("rect", { class: "cctviz-site-cell", width: r2(Math.max(0, c.w - 1)), height: r2(Math.max(0, c.h - (c.h > 3 ? 1 : 0))) })];
        if (c.h >= 12 * u) {
          const t = measure.truncate(s.label[c.i], c.w - 6 * u, m.small) || "";
          if (t) sk.push(P("text", { class: "cctviz-site-label", x: r2(3 * u), y: r2(Math.min(c.h / 2, 8 * u)), dy: "0.35em" }, t));
        }
        kids.push(P("g", { class: `cctviz-site${on ? " selected" : ""}`, "data-id": String(s.id[c.i]), transform: `translate(${r2(c.x)},${r2(c.y)})` }, null, sk));
      }
    }
    if (!inside) outside.push(k);
    const cls = ["cctviz-snode"];
    if (selG.has(k)) cls.push("selected");
    if (cue) cls.push("imbalanced");
    if (s) cls.push("expanded");
    if (!inside) cls.push("small");
    nodes.push(P("g", {
      class: cls.join(" "),
      transform: `translate(${r2(x)},${r2(y)})`,
      role: "option",
      "data-node": String(k),
      "aria-label": ariaLabel(d, k),
      "aria-selected": String(selG.has(k)),
    }, null, kids));
  }
  // labels of small nodes: right of the node, the largest first, none over another
  const overlay = [];
  const taken = new Map();
  outside.sort((a, b) => L.val[b] - L.val[a] || a - b);
  const lh = m.font * 1.15;
  for (const k of outside) {
    const c = d.column[k];
    const cy = (L.y0[k] + L.y1[k]) / 2;
    const list = taken.get(c) || [];
    if (list.some((yy) => Math.abs(yy - cy) < lh)) continue;
    list.push(cy);
    taken.set(c, list);
    let cue = nodeCue(d, k);
    const room = (c === columns - 1 ? rightPad : gapX) - 10 * u;
    let cueW = cue ? measure.text(cue, m.small, 700) + 4 * u : 0;
    let label = cutLabel(d.label[k], room - cueW);
    if (hasCue(d, k) && squeezedBy(cue, label, d.label[k])) {
      // as inside a node: the name first, the cue shrinks to its triangle
      cue = TRIANGLE;
      cueW = measure.text(cue, m.small, 700) + 4 * u;
      label = cutLabel(d.label[k], room - cueW);
    }
    if (!label) continue;
    const x = L.x0[k] + widths[k] + 4 * u;
    const kids = [P("tspan", { class: "cctviz-label" }, label)];
    if (cue && measure.text(label, m.font) + cueW <= room) kids.push(P("tspan", { class: "cctviz-cue", dx: r2(4 * u) }, cue));
    overlay.push(P("text", { class: "cctviz-outside cctviz-halo", "data-node": String(k), x: r2(x), y: r2(cy), dy: "0.35em" }, null, kids));
  }

  const bodyWidth = d.n ? L.width + rightPad : 300 * u;
  const size = frameSize(st, m, top, bodyWidth + 2 * m.margin, d.n ? L.height : 40 * u);
  const empty = d.n ? null : P("text", { class: "cctviz-empty", x: r2(m.margin), y: r2(size.content.y + 12 * u) }, "No groups to show");
  for (const list of [nodes, overlay, top.legends]) for (const p of list) typeset(p, m);
  if (top.title) typeset(top.title, m);
  if (empty) typeset(empty, m);
  return {
    kind: "sankey",
    fontSize: m.font,
    fontFamily: FONT_FAMILY,
    width: size.width,
    height: size.height,
    scale: size.scale,
    frame: size.frame,
    style: st.style || "",
    background: st.background,
    title: top.title,
    titleHeight: top.titleHeight,
    legends: top.legends,
    band: top.band,
    content: size.content,
    links,
    nodes,
    overlay,
    empty,
    diff: Boolean(d.diff),
    geom: { layout: L, dist, widths, nodeW },
    colors,
    margin: m.margin,
  };
}
