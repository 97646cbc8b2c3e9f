// The ensemble Sankey's scene: a pure function from the decoded `_data`,
// plain settings and a text measure to everything the figure shows (layout,
// node marks with the spread over profiles, ribbons, labels, legends), as
// prims ({tag, attrs, text?, children?}). No DOM: draw.js turns it into SVG,
// in the notebook and in the exporter alike.

import { interpolateRdBu } from "d3-scale-chromatic";
import { r2 } from "../dom.js";
import { formatRatio, formatValue, unitLabel } from "../format.js";
import { FONT_FAMILY, TABLE_MEASURE, distinctCutter } from "../measure.js";
import { P, captionedFrame, colorBar, frameTop, legendFlowWidth, legendKit, textSizes, typesetter, wrapText } from "../scene-kit.js";
import { MISSING_COLOR, sequentialScale, textColorOn, valueAt } from "../kit/color.js";
import { binsOf, distRange, fmt, hasCue, keepColumns, profileLabel, waitOf } from "./data.js";
import { WAIT_CUE, waitCue, waitHeading, waitSentences } from "../kit/waits.js";
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

/** Sizes of the figure, proportional to the font size (12 on screen); in an
 *  export (`fit`) no text is smaller than the font size (scene-kit textSizes). */
function sizes(fontSize, fit = false) {
  const u = fontSize / 12;
  const t = textSizes(fontSize, fit);
  return {
    u,
    font: fontSize,
    small: t.small,
    tiny: t.tiny,
    margin: 14 * u,
    nodeW: 116 * u,
    minNodeW: 60 * u,
    gapX: 120 * u,
    minGapX: 56 * u,
    gapY: 10 * u,
    row: 16 * u, // label row inside a node
    box: 10 * u, // box plot strip
    hist: 14 * u, // least histogram height
    range: Math.max(11 * u, t.tiny * 1.25), // min/max numbers row
    siteW: 76 * u,
    minPad: 40 * u, // least room right of the last column (a numbered label)
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

/** The cue of node k: the most waited for rank on a collective whose waiting is
 *  known ("waited for: rank 2"), else the imbalance cue where it costs enough, else "". */
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
    // outliers: dots on the box line; their labels go in the row under it (below)
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
    }
  }
  // the row under the box plot: min and max at its ends, the outliers' names near
  // their dots where free (never over the histogram; the tooltip lists them all)
  if (box.rangeH > 0) {
    const y = box.y1 - box.rangeH / 2;
    const tl = fmt(d, lo);
    const th = fmt(d, hi);
    const placed = [];
    if (measure.text(tl, m.tiny) + measure.text(th, m.tiny) + 6 * m.u <= x1 - x0) {
      kids.push(P("text", { class: `cctviz-range ${ink}`, x: r2(x0), y: r2(y), dy: "0.35em" }, tl));
      kids.push(P("text", { class: `cctviz-range ${ink}`, x: r2(x1), y: r2(y), dy: "0.35em", "text-anchor": "end" }, th));
      placed.push([x0, x0 + measure.text(tl, m.tiny)], [x1 - measure.text(th, m.tiny), x1]);
    }
    if (showBox) {
      for (const j of d.outliersOf[k].slice(0, 3)) {
        const x = X(d.outlierValue[j]);
        if (!Number.isFinite(x)) continue;
        const t = profileLabel(d, d.outlierProfile[j]);
        const w = measure.text(t, m.tiny);
        const left = Math.max(x0, Math.min(x1 - w, x - w / 2));
        if (!placed.some(([a, z]) => left < z + 3 * m.u && left + w > a - 3 * m.u)) {
          placed.push([left, left + w]);
          kids.push(P("text", { class: `cctviz-outlier-label ${ink}`, x: r2(left), y: r2(y), dy: "0.35em" }, t));
        }
      }
    }
  }
  const g = P("g", { class: "cctviz-dist", "data-node": String(k) }, null, kids);
  return [g, { x0, x1, lo, hi, y0: box.y0, y1: box.y1 }];
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
  return Math.max(m.minPad, Math.min(Math.max(96 * u, need), Math.max(96 * u, spare)), Math.min(96 * u, need));
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
    const all = d.kept ? d.n + d.cut : d.n;
    lines.push(`${all} group${all === 1 ? "" : "s"}${d.kept ? ` (${d.n} drawn)` : ""}, ${d.treeSize || "?"} call sites`);
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
    // the ticks carry their units ("-1.2 s"): no recorded unit ("[us]") over them
    const t = colors.kind === "diff" ? cut(`Colour: ${d.diff.bLabel} ${MINUS} ${d.diff.aLabel} (mean)${d.unit ? "" : " [unit unknown]"}`, 80) : "Colour: imbalance (max/mean)";
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
    } else if (d.imbalance.some((v) => !Number.isFinite(v))) {
      // the swatch of a node without a ratio, only where there is one
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
    // the explanation wraps where the band is narrow (a figure of 3.5 in)
    const lh1 = m.small * 1.25;
    const t1lines = wrapText(t1, Math.max(maxW - W - 8 * u, 80 * u), m.small, measure);
    t1lines.forEach((ln, j) => kids.push(text(W + 8 * u, y + 8 * u + j * lh1, ln, { dy: "0.35em" })));
    const extra = (t1lines.length - 1) * lh1;
    let w = W + 8 * u + Math.max(...t1lines.map((ln) => tw(ln)));
    let hgt = y + 28 * u + extra;
    if (!d.diff && d.costThreshold !== null) {
      const t2 = `imbalance costs max ${MINUS} mean \u2265 ${fmt(d, d.costThreshold)}`;
      const y2 = Math.max(y + 22 * u, y + 8 * u + extra + lh1);
      kids.push(P("text", { class: "cctviz-cue", x: r2(W + 8 * u), y: r2(y2), dy: "0.35em" }, TRIANGLE));
      kids.push(text(W + 22 * u, y2, t2, { dy: "0.35em" }));
      w = Math.max(w, W + 22 * u + tw(t2));
      hgt = y2 + 8 * u; // the cue's row ends below the box plot's
    }
    if (!d.diff && [...d.waits.values()].some((w) => waitCue(w))) {
      const yw = hgt + 6 * u;
      const t3 = "the rank whose last arrivals cost the others the most waiting (waiters not flagged)";
      kids.push(P("text", { class: "cctviz-cue", x: r2(W + 8 * u), y: r2(yw), dy: "0.35em" }, WAIT_CUE));
      kids.push(text(W + 8 * u + tw(`${WAIT_CUE} `, 700), yw, t3, { dy: "0.35em" }));
      w = Math.max(w, W + 8 * u + tw(`${WAIT_CUE} `, 700) + tw(t3));
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
 * The label inside node k (`room` wide; `roomy`: the node holds a second row of
 * text and its box plot): the name first, whole on one line, with the cue beside
 * it or on a row of its own, or shrunk to its triangle (a waited-for rank's cue does not
 * shrink: the tooltip has it), or left out where the name alone fits; else the
 * name on two lines; else a number (the figure's key names it). Returns {lines, numbered, cue, cueRow, rows}.
 */
function insideLabel(d, k, name, cue, room, roomy, m, measure) {
  const u = m.u;
  const nameW = measure.text(name, m.font);
  const cueW = cue ? measure.text(cue, m.small, 700) + 6 * u : 0;
  const tri = hasCue(d, k) ? TRIANGLE : "";
  const triW = tri ? measure.text(tri, m.small, 700) + 6 * u : 0;
  if (nameW <= room - cueW) return { lines: [name], numbered: false, cue, cueRow: 0, rows: 1 };
  if (cue && nameW <= room && roomy) {
    return { lines: [name], numbered: false, cue: cueW - 6 * u > room ? tri : cue, cueRow: 1, rows: 2 };
  }
  if (nameW <= room - triW) return { lines: [name], numbered: false, cue: tri, cueRow: 0, rows: 1 };
  // the name before its cue: the node's colour still shows the imbalance, the
  // tooltip its cost
  if (nameW <= room) return { lines: [name], numbered: false, cue: "", cueRow: 0, rows: 1 };
  if (roomy) {
    const two = twoLines(name, room - triW, m.font, measure);
    if (two) return { lines: two, numbered: false, cue: tri, cueRow: 0, rows: 2 };
  }
  return { lines: [""], numbered: true, cue: tri, cueRow: 0, rows: 1 };
}

/** A node's whole name for the key: its group ("train/step", a load module's
 *  path), with the label's occurrence mark where the group recurs ("... (2)"). */
export function wholeName(d, k) {
  const label = d.label[k];
  const group = d.group[k] || label;
  const mark = / \(\d+\)$/.exec(label);
  return mark && !group.endsWith(mark[0]) ? `${group}${mark[0]}` : group;
}

/** The columns a decoded Sankey spans. */
function columnCount(d) {
  let columns = Math.max(1, d.columns);
  for (let k = 0; k < d.n; k++) columns = Math.max(columns, d.column[k] + 1);
  for (let j = 0; j < d.nDummy; j++) columns = Math.max(columns, d.dummyColumn[j] + 1);
  return columns;
}

/** Places where a name may break onto a second line: after "_", ".", "/", ":",
 *  "-", a space, and before an upper-case letter that follows a lower-case one. */
function breakPoints(name) {
  const cs = Array.from(name);
  const out = [];
  for (let i = 1; i < cs.length; i++) {
    const a = cs[i - 1];
    const b = cs[i];
    if ("_./:- ".includes(a) || (/[a-z0-9]/.test(a) && /[A-Z]/.test(b))) out.push(i);
  }
  return out;
}

/** `name` on two lines no wider than `width` (the most even break), or null. */
export function twoLines(name, width, size, measure) {
  const cs = Array.from(String(name));
  let best = null;
  for (const i of breakPoints(name)) {
    const a = cs.slice(0, i).join("").trimEnd();
    const b = cs.slice(i).join("").trimStart();
    const wa = measure.text(a, size);
    const wb = measure.text(b, size);
    if (wa <= width && wb <= width && (!best || Math.max(wa, wb) < best.w)) best = { lines: [a, b], w: Math.max(wa, wb) };
  }
  return best ? best.lines : null;
}

/** The text of a numbered label: "12 CalcHour…" where room, else "12". */
function numberedText(num, name, room, size, measure) {
  const head = `${num}`;
  const rest = room - measure.text(`${head} `, size, 700);
  const cut = rest > 0 ? measure.truncate(name, rest, size) : "";
  return Array.from(cut || "").length >= 4 ? [head, cut] : [head, ""];
}

/**
 * The key of a figure's numbered labels: "12 CalcHourglassControlForElems" per
 * entry, in as many columns as `width` holds, at the label size. Returns {prims,
 * height} placed from y = 0.
 */
function keyBlock(entries, width, m, measure) {
  if (!entries.length) return { prims: [], height: 0 };
  const size = m.font;
  const lh = size * 1.3;
  const numW = Math.max(...entries.map((e) => measure.text(`${e.num}`, size, 700))) + 4 * m.u;
  const nameW = Math.max(...entries.map((e) => Math.min(measure.text(e.name, size), width / 2)));
  const colW = Math.min(width, numW + nameW + 14 * m.u);
  const cols = Math.max(1, Math.floor((width + 14 * m.u) / colW));
  const rows = Math.ceil(entries.length / cols);
  const prims = [P("text", { class: "cctviz-legend-title cctviz-key-title", x: 0, y: 0, dy: "0.8em" }, "Key of the numbered nodes")];
  entries.forEach((e, j) => {
    const x = Math.floor(j / rows) * colW;
    const y = lh * (1 + (j % rows));
    const name = keyName(e, colW - numW - 14 * m.u, size, measure);
    prims.push(P("text", { class: "cctviz-key", x: r2(x), y: r2(y), dy: "0.8em", "data-node": String(e.id) }, null, [
      P("tspan", { class: "cctviz-key-num" }, `${e.num}`),
      P("tspan", { class: "cctviz-key-name", x: r2(x + numW) }, name),
    ]));
  });
  return { prims: [P("g", { class: "cctviz-keyblock" }, null, prims)], height: lh * (rows + 1) + 4 * m.u };
}

/** A key entry's name in `room`: the whole name where it fits, else the node's
 *  own label (what it is called everywhere), else that label cut in the middle,
 *  its end kept ("libmon…so.0.0.0 (2)"). */
function keyName(e, room, size, measure) {
  if (measure.text(e.name, size) <= room) return e.name;
  if (measure.text(e.label, size) <= room) return e.label;
  const cs = Array.from(e.label);
  for (let keep = cs.length - 1; keep > 0; keep--) {
    const head = Math.ceil(keep / 3);
    const t = `${cs.slice(0, head).join("")}${ELLIPSIS}${cs.slice(cs.length - (keep - head)).join("")}`;
    if (measure.text(t, size) <= room) return t;
  }
  return ELLIPSIS;
}

/** Outside labels of one column, top to bottom, moved apart vertically (at least
 *  `lh` between centres) within [lo, hi]; returns the y of each. */
function spreadLabels(ys, lh, lo, hi) {
  const out = ys.slice();
  for (let j = 0; j < out.length; j++) out[j] = Math.max(out[j], lo, j ? out[j - 1] + lh : -Infinity);
  for (let j = out.length - 1; j >= 0; j--) out[j] = Math.min(out[j], j < out.length - 1 ? out[j + 1] - lh : hi);
  return out;
}

/**
 * Build the scene of a Sankey view.
 *
 * A figure of a given width (`fit`) draws the columns that fit it at full text
 * size (deeper ones are cut, said in its caption); every node is named: by its
 * whole name inside the node or beside it (two lines where that helps), or by a
 * number whose entry in the key under the figure holds the whole name.
 *
 * @param {import("./data.js").SankeyData} d0 decoded `_data`
 * @param {object} settings see {@link DEFAULT_SETTINGS}
 * @param {{text: Function, truncate: Function}} [measure]
 * @returns {object} `frame`, `width`, `height`, `scale`, `legends`, `band`, `title`,
 *   `titleHeight`, `content`, `links` (ribbons), `nodes`, `overlay`, `empty`, `geom`
 *   (layout and each node's distribution box, for interaction), `diff`, `fontSize`,
 *   `fontFamily`, `caption`, `notes`, `key` (the numbered nodes: {num, id, name}).
 */
export function sankeyScene(d0, settings, measure = TABLE_MEASURE) {
  const st = { ...DEFAULT_SETTINGS, ...settings };
  const m = sizes(st.fontSize, st.fit);
  const u = m.u;
  // a figure of a given width: the columns that fit at full text size
  let d = d0;
  const folded = [];
  if (st.fit && st.width && d0.n) {
    // the most columns whose nodes and gaps, at their least, and the last column's
    // labels fit the width
    let fits = columnCount(d0);
    const least = (c, dd) => c * m.minNodeW + (c - 1) * m.minGapX + lastColumnRoom(dd, c - 1, measure, m, 0) + 2 * m.margin;
    while (fits > 1 && least(fits, fits < columnCount(d0) ? keepColumns(d0, fits) : d0) > st.width) fits--;
    if (fits < columnCount(d0)) {
      d = keepColumns(d0, fits);
      if (d.cut > 0) {
        const c = d.cutColumns;
        folded.push(`${c} deeper column${c === 1 ? "" : "s"} (${d.cut} group${d.cut === 1 ? "" : "s"}, whose time is in their callers' heights)`);
      }
    }
  }
  const idOf = (k) => (d.kept ? d.kept[k] : k); // the node's id in the view's data
  const local = (ids) => {
    if (!d.kept) return ids;
    const back = new Map(Array.from(d.kept, (id, k) => [id, k]));
    return ids.filter((id) => back.has(id)).map((id) => back.get(id));
  };
  const colors = nodeColors(d);
  const selG = new Set(st.highlight ? local((st.selectedGroups || []).map(Number)) : []);
  const selS = new Set(st.highlight ? (st.selection || []).map(Number) : []);
  const selP = new Set(st.highlight ? (st.selectedProfiles || []).map(Number) : []);
  const brush = st.brush && d.kept ? { ...st.brush, node: local([Number(st.brush.node)])[0] ?? -1 } : st.brush;

  // widths: the asked width shared by the columns, within bounds
  const columns = columnCount(d);
  // the columns at their natural pitch come first; the labels take what they leave
  const spare = (st.width || 1500 * u) - columns * (m.nodeW + m.gapX) - 2 * m.margin;
  const rightPad = Math.max(m.minPad, lastColumnRoom(d, columns - 1, measure, m, spare));
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
  // the body at a height: layout, ribbons, nodes, names and the key of numbered
  // names (a figure of a given height lays out again, leaving the key its room)
  const bodyAt = (bodyH) => {
    const L = sankeyLayout(d, { height: Math.max(40 * u, bodyH), gap: m.gapY, minHeight: 1, nodeWidth: widths, dummyWidth: nodeW, columnGap: gapX });

    // ribbons
    const links = [];
    for (const e of L.edges) {
      const first = L.links[e.links[0]];
      const s = d.edgeSource[e.edge] ?? first.source;
      const t = d.edgeTarget[e.edge] ?? L.links[e.links[e.links.length - 1]].target;
      const on = selG.has(s) || selG.has(t);
      links.push(P("path", { class: `cctviz-flow${on ? " selected" : ""}`, "data-edge": String(e.edge), "data-source": String(idOf(s)), "data-target": String(idOf(t)), "data-value": String(first.value), d: e.d }));
    }

    // nodes
    const nodes = [];
    const dist = new Array(d.n).fill(null);
    const outside = []; // nodes named beside themselves, placed after the nodes
    const numbered = []; // [k, text prim, room] of the labels that take a number
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
        const name = d.label[k];
        const room = w - 8 * u;
        const roomy = hgt >= 2 * m.row + m.box + 2 * u; // a second row leaves the box plot its room
        const lab = insideLabel(d, k, name, cue, room, roomy, m, measure);
        head = lab.rows * m.row;
        const label = P("text", { class: `cctviz-label ${ink}`, x: r2(4 * u), y: r2(m.row / 2), dy: "0.35em", "data-node": String(idOf(k)) }, lab.lines.length === 1 ? lab.lines[0] : null,
          lab.lines.length === 2 ? [P("tspan", { x: r2(4 * u) }, lab.lines[0]), P("tspan", { x: r2(4 * u), dy: r2(m.row) }, lab.lines[1])] : undefined);
        kids.push(label);
        if (lab.numbered) numbered.push([k, label, room - (lab.cue && lab.cueRow === 0 ? measure.text(lab.cue, m.small, 700) + 6 * u : 0)]);
        if (lab.cue) kids.push(P("text", { class: `cctviz-cue ${ink}`, x: r2(w - 4 * u), y: r2(m.row / 2 + lab.cueRow * m.row), dy: "0.35em", "text-anchor": "end" }, lab.cue));
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
        const [g, geo] = distPrims(d, k, box, m, measure, { cls: ink, ink: inkColor, fill }, { ...st, brush }, selP);
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
        "data-node": String(idOf(k)),
        "aria-label": ariaLabel(d, k),
        "aria-selected": String(selG.has(k)),
      }, null, kids));
    }
    // names of small nodes: beside the node, in the gap toward the next column, moved
    // apart where neighbours crowd (a leader line back to a moved name's node)
    const overlay = [];
    const lh = m.font * 1.2;
    const byColumn = new Map();
    for (const k of outside) byColumn.set(d.column[k], [...(byColumn.get(d.column[k]) || []), k]);
    for (const [c, ks] of [...byColumn].sort((a, b) => a[0] - b[0])) {
      ks.sort((a, b) => L.y0[a] + L.y1[a] - L.y0[b] - L.y1[b] || a - b);
      const cys = ks.map((k) => (L.y0[k] + L.y1[k]) / 2);
      const ys = spreadLabels(cys, lh, lh / 2, Math.max(L.height, cys.length * lh) - lh / 2);
      ks.forEach((k, j) => {
        const room = (c === columns - 1 ? rightPad : gapX) - 10 * u;
        let cue = nodeCue(d, k);
        let cueW = cue ? measure.text(cue, m.small, 700) + 4 * u : 0;
        const name = d.label[k];
        let numberedLabel = measure.text(name, m.font) > room - cueW;
        if (numberedLabel && cue && measure.text(name, m.font) <= room - (measure.text(TRIANGLE, m.small, 700) + 4 * u) && hasCue(d, k)) {
          cue = TRIANGLE; // the name first: the cue shrinks to its triangle
          cueW = measure.text(cue, m.small, 700) + 4 * u;
          numberedLabel = false;
        }
        if (numberedLabel && cue) {
          cue = hasCue(d, k) ? TRIANGLE : "";
          cueW = cue ? measure.text(cue, m.small, 700) + 4 * u : 0;
        }
        const x = L.x0[k] + widths[k] + 4 * u;
        const kids = [P("tspan", { class: "cctviz-label" }, numberedLabel ? "" : name)];
        if (cue) kids.push(P("tspan", { class: "cctviz-cue", dx: r2(4 * u) }, cue));
        const prim = P("text", { class: "cctviz-outside cctviz-halo", "data-node": String(idOf(k)), x: r2(x + (Math.abs(ys[j] - cys[j]) > 1.5 * u ? 6 * u : 0)), y: r2(ys[j]), dy: "0.35em" }, null, kids);
        if (Math.abs(ys[j] - cys[j]) > 1.5 * u) {
          overlay.push(P("path", { class: "cctviz-leader", d: `M${r2(x - 3 * u)},${r2(cys[j])}L${r2(x + 4 * u)},${r2(ys[j])}` }));
        }
        overlay.push(prim);
        if (numberedLabel) numbered.push([k, kids[0], room - cueW - (prim.attrs.x - x)]);
      });
    }
    // numbers in reading order (column, then top to bottom), then their texts
    numbered.sort((a, b) => d.column[a[0]] - d.column[b[0]] || L.y0[a[0]] - L.y0[b[0]] || a[0] - b[0]);
    const key = numbered.map(([k, prim, room], j) => {
      const [num, cut] = numberedText(j + 1, d.label[k], room, m.font, measure);
      prim.text = undefined;
      prim.children = [P("tspan", { class: "cctviz-num" }, num), ...(cut ? [P("tspan", { dx: r2(3 * u) }, cut)] : [])];
      return { num: j + 1, id: idOf(k), name: wholeName(d, k), label: d.label[k] };
    });
    const bodyWidth = d.n ? L.width + rightPad : 300 * u;
    const keyW = Math.max(bodyWidth, (st.fit && st.width ? st.width : 0) - 2 * m.margin);
    const kb = keyBlock(key, keyW, m, measure);
    const bodyHeight = (d.n ? L.height : 40 * u) + (kb.height ? 14 * u + kb.height : 0);
    if (kb.prims.length) overlay.push(P("g", { class: "cctviz-key-band", transform: `translate(0,${r2(L.height + 14 * u)})` }, null, kb.prims));
    return { L, links, nodes, dist, overlay, key, bodyWidth, bodyHeight };
  };
  let body = bodyAt(bodyH);
  if (st.height && body.bodyHeight > bodyH + 0.5) body = bodyAt(bodyH - (body.bodyHeight - body.L.height));
  const { L, links, nodes, dist, overlay, key, bodyWidth, bodyHeight } = body;
  const size = captionedFrame(st, m, measure, top, bodyWidth + 2 * m.margin, bodyHeight, folded);
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
    caption: size.caption,
    notes: size.notes,
    taller: size.taller,
    key,
    diff: Boolean(d.diff),
    geom: { layout: L, dist, widths, nodeW },
    colors,
    margin: m.margin,
  };
}
