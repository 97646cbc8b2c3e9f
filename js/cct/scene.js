// The CCT view's scene: a pure function from the decoded `_data`, plain
// settings and a text measure to everything a figure shows (geometry, labels,
// encodings, legends, figure size), as plain objects. No DOM: draw.js turns a
// scene into SVG, in the notebook and in the exporter alike.
//
// A scene's marks are "prims": {tag, attrs, text?, children?} (SVG tags).

import { r2 } from "../dom.js";
import { formatPercent, formatRatio } from "../format.js";
import { WAIT_CLASS, WAIT_CUE, waitCue, waitHeading, waitSentences } from "../kit/waits.js";
import { FONT_FAMILY, TABLE_MEASURE, distinctCutter, measureText, truncateToWidth } from "../measure.js";
import {
  BIVARIATE,
  MISSING_COLOR,
  NEUTRAL_COLOR,
  bivariateColor,
  isLogDomain,
  sequentialScale,
  terciles,
  textColorOn,
  valueAt,
} from "../kit/color.js";
import {
  FLAG_MATCH,
  ancestorNames,
  finiteExtent,
  formatMetricValue,
  hasImbalanceCue,
  imbalance,
  waitOf,
  imbalanceCost,
  isAdditive,
  isCollapsed,
  isExpandable,
  isOther,
  legendName,
  metricName,
} from "./data.js";
import { icicleLayout, treeLayout } from "./layout.js";
import { P, captionedFrame, colorBar, foldedLegend, frameTop, legendFlowWidth, legendKit, textSizes, typesetter } from "../scene-kit.js";

const TRIANGLE = "\u25b2";
const ELLIPSIS = "\u2026";


/**
 * Settings of a scene, all plain values (built from the widget's traits and,
 * for export, the paper options). Every field has a default.
 */
export const DEFAULT_SETTINGS = Object.freeze({
  chart: "tree", // "tree" | "icicle"
  color: [], // [] | [a] | [a, b] (bivariate)
  size: "", // size metric, "" = all nodes alike
  selection: [], // selected node ids
  fontSize: 12, // label size in figure units (px on screen, pt in export)
  width: null, // width to fill (null: the content's natural width)
  height: null, // height to fit (export only; null: natural)
  fit: false, // export: lay the figure out at width/height, text at its size
  fitLevels: null, // live: the width the tree's levels must fit (deeper ones are cut, "+N")
  labelEm: 20, // longest tree label, in em, before the ellipsis
  legends: true,
  highlight: true, // draw the selection
  title: "",
  background: null, // fill behind the figure ("white"), or null (transparent)
  style: "", // CSS text put inside the SVG (export), "" in the notebook
});

/** Metric names of a `color` trait value: [], [a] or [a, b]. */
export function colorMetrics(value) {
  if (Array.isArray(value)) return value.filter((m) => typeof m === "string" && m !== "").slice(0, 2);
  return typeof value === "string" && value !== "" ? [value] : [];
}


/** Sizes of the figure, all proportional to the font size (12 on screen); in an
 *  export (`fit`) no text is smaller than the font size (scene-kit textSizes). */
function metrics(fontSize, labelEm = 20, fit = false) {
  const u = fontSize / 12;
  return {
    u,
    font: fontSize,
    small: textSizes(fontSize, fit).small,
    margin: 14 * u,
    whisker: 40 * u,
    labelWidth: labelEm * fontSize, // longest tree label, before the ellipsis
  };
}

/**
 * Colour and size encodings of the data under the settings.
 * In the icicle, when the colour metric is also the height, the colour shows
 * its exclusive part instead (the height already shows the inclusive value).
 */
export function encodings(d, settings) {
  const metrics = colorMetrics(settings.color);
  const keep = (i) => !isOther(d, i);
  const enc = { kind: "none", metrics: [...metrics], colorSetting: settings.color, fill: () => NEUTRAL_COLOR, values: d.color, note: "" };
  const sizeMetric = settings.size || "";
  if (
    settings.chart === "icicle" &&
    metrics.length === 1 &&
    sizeMetric === metrics[0] &&
    isAdditive(d, sizeMetric) &&
    d.exclusive &&
    d.exclusiveMetric
  ) {
    enc.values = d.exclusive;
    enc.metrics = [d.exclusiveMetric];
    enc.note = "exclusive part; the height shows the inclusive value";
  }
  if (d.color && d.color2 && metrics.length === 2) {
    enc.kind = "bivariate";
    enc.breaksA = terciles(d.color, keep);
    enc.breaksB = terciles(d.color2, keep);
    enc.fill = (i) => bivariateColor(d.color[i], d.color2[i], enc.breaksA, enc.breaksB);
  } else if (enc.values && metrics.length >= 1) {
    enc.kind = "sequential";
    let domain = enc.values === d.color ? d.colorDomain : finiteExtent(enc.values, keep);
    // zeros (nodes that did none of it) must not force a linear scale on a
    // heavy-tailed metric: log over the positive values, zeros at its low end
    const positive = domain && domain[0] === 0 ? finiteExtent(enc.values, (i) => keep(i) && enc.values[i] > 0) : null;
    if (positive && isLogDomain(positive)) {
      domain = positive;
      enc.note = enc.note ? `${enc.note}; 0 at the low end` : "0 at the low end";
    }
    enc.scale = sequentialScale(domain);
    enc.fill = (i) => enc.scale.color(enc.values[i]);
  }
  enc.sizeMetric = sizeMetric;
  enc.sizeMax = d.size && d.sizeDomain ? Math.max(0, d.sizeDomain[1]) : 0;
  return enc;
}

/** "8 profiles", "7 profiles (1 failed, left out)". */
export function profilesText(s) {
  const live = `${s.profiles} profile${s.profiles === 1 ? "" : "s"}`;
  return s.failed > 0 ? `${live} (${s.failed} failed, left out)` : live;
}

/** The imbalance cue's text: what the imbalance costs ("▲ 3.14 ms"). */
export function cueText(d, i) {
  return `${TRIANGLE} ${formatMetricValue(d, d.spread.metric, imbalanceCost(d, i))}`;
}

/**
 * The cue of row i ({text, cls}) or "": on a collective context whose waiting
 * is known (a Timeline), the rank the others waited for most ("waited for: rank 2"), not
 * the waiters' imbalance; elsewhere the imbalance cue where it costs enough.
 */
export function rowCue(d, i) {
  const w = waitOf(d, i);
  if (w && w.pure) return w.mostWaitedFor >= 0 ? { text: waitCue(w), cls: WAIT_CLASS } : "";
  return hasImbalanceCue(d, i) ? { text: cueText(d, i), cls: "cctviz-imbalance" } : "";
}

/** The accessible label of row i: its name and the values it shows. */
export function ariaLabel(d, enc, i) {
  const parts = [d.names[i]];
  const add = (m, col) => parts.push(`${metricName(d, m)} ${formatMetricValue(d, m, col[i])}`);
  const cm = colorMetrics(enc.colorSetting);
  if (cm[0] && d.color) add(cm[0], d.color);
  if (cm[1] && d.color2) add(cm[1], d.color2);
  if (enc.sizeMetric && d.size && enc.sizeMetric !== cm[0] && enc.sizeMetric !== cm[1]) add(enc.sizeMetric, d.size);
  if (isOther(d, i)) parts.push(`stands for ${d.folded[i]} folded nodes`);
  else if (d.folded[i] > 0) parts.push(`${d.folded[i]} hidden descendants`);
  const imb = imbalance(d, i);
  if (Number.isFinite(imb)) {
    const cost = imbalanceCost(d, i);
    const costs = Number.isFinite(cost) ? ` costing ${formatMetricValue(d, d.spread.metric, cost)}` : "";
    parts.push(`imbalance ${formatRatio(imb)}${costs}${hasImbalanceCue(d, i) ? " (flagged)" : ""}`);
  }
  parts.push(...waitSentences(waitOf(d, i)));
  return parts.join(", ");
}

/**
 * The tooltip of row i as lines {text, cls?}: the call path, the values of
 * the metrics shown, the first colour metric's exclusive value and its share
 * of the parent and of the whole tree, and an ensemble's spread.
 */
export function tooltipLines(d, settings, row) {
  const lines = [];
  const path = [...d.focusPath, ...ancestorNames(d, row)];
  lines.push({ cls: "cctviz-tip-path", text: path.join(" \u203a ") });
  const cm = colorMetrics(settings.color);
  const seen = new Set();
  const shown = [];
  if (cm[0] && d.color) shown.push([cm[0], d.color]);
  if (cm[1] && d.color2) shown.push([cm[1], d.color2]);
  if (settings.size && d.size) shown.push([settings.size, d.size]);
  for (const [m, col] of shown) {
    if (seen.has(m)) continue;
    seen.add(m);
    lines.push({ text: `${metricName(d, m)}: ${formatMetricValue(d, m, col[row])}` });
  }
  if (cm[0] && d.color && !isOther(d, row)) {
    const m = cm[0];
    const v = d.color[row];
    if (d.exclusive && d.exclusiveMetric && !seen.has(d.exclusiveMetric)) {
      const e = d.exclusive[row];
      let text = `${metricName(d, d.exclusiveMetric)} (exclusive): ${formatMetricValue(d, d.exclusiveMetric, e)}`;
      if (Number.isFinite(e) && Number.isFinite(v) && v > 0) text += ` (${formatPercent(e / v)} of inclusive)`;
      lines.push({ text });
    }
    if (isAdditive(d, m) && Number.isFinite(v)) {
      const shares = [];
      const p = d.parent[row];
      if (p >= 0 && d.color[p] > 0) shares.push(`${formatPercent(v / d.color[p])} of parent`);
      if (d.colorTotal > 0) shares.push(`${formatPercent(v / d.colorTotal)} of total`);
      if (shares.length) lines.push({ text: shares.join(", ") });
    }
  }
  if (isOther(d, row)) {
    lines.push({ cls: "cctviz-tip-note", text: `stands for ${d.folded[row]} folded node${d.folded[row] === 1 ? "" : "s"}; click to show them` });
  } else if (d.folded[row] > 0) {
    lines.push({ cls: "cctviz-tip-note", text: `${d.folded[row]} hidden descendant${d.folded[row] === 1 ? "" : "s"}` });
  }
  const s = d.spread;
  if (s && !isOther(d, row)) {
    const f = (v) => formatMetricValue(d, s.metric, v);
    lines.push({ cls: "cctviz-tip-head", text: `${metricName(d, s.metric)} over ${profilesText(s)}` });
    lines.push({ text: `mean ${f(s.mean[row])}, std ${f(s.std[row])}` });
    lines.push({ text: `min ${f(s.min[row])}, max ${f(s.max[row])}` });
    const imb = imbalance(d, row);
    const cost = imbalanceCost(d, row);
    if (Number.isFinite(imb) || Number.isFinite(cost)) {
      const a = s.argmax[row];
      const who = a >= 0 ? s.labels[String(a)] ?? `profile ${a}` : "";
      const parts = [`imbalance (max/mean) ${formatRatio(imb)}`];
      if (Number.isFinite(cost)) parts.push(`costs ${f(cost)} (max \u2212 mean)`);
      if (who) parts.push(`max on ${who}`);
      lines.push({ cls: hasImbalanceCue(d, row) ? "cctviz-tip-alert" : undefined, text: parts.join(", ") });
    }
  }
  const waits = waitSentences(waitOf(d, row));
  if (waits.length) {
    lines.push({ cls: "cctviz-tip-head", text: waitHeading(waitOf(d, row)) });
    for (const text of waits) lines.push({ text });
  }
  return lines;
}

/** The spread whisker of row i (min-max and mean, to the scale of max) as a prim, or null. */
function spreadPrim(d, i, x, y, w, cls = "cctviz-spread") {
  const s = d.spread;
  const max = s.max[i];
  const min = s.min[i];
  const mean = s.mean[i];
  if (!(Number.isFinite(max) && max > 0)) return null;
  const pos = (v) => r2(x + w * Math.max(0, Math.min(1, v / max)));
  const kids = [P("line", { class: "cctviz-spread-track", x1: r2(x), x2: r2(x + w), y1: r2(y), y2: r2(y) })];
  if (Number.isFinite(min)) kids.push(P("line", { class: "cctviz-spread-range", x1: pos(min), x2: pos(max), y1: r2(y), y2: r2(y) }));
  if (Number.isFinite(mean)) {
    kids.push(P("line", { class: "cctviz-spread-mean", x1: pos(mean), x2: pos(mean), y1: r2(y - 3.5), y2: r2(y + 3.5) }));
  }
  return P("g", { class: cls }, null, kids);
}

/** Attributes every node group carries (the accessible DOM contract). */
function nodeAttrs(d, enc, i, x, y, selected, cue) {
  // cue: the row's cue ({text, cls}) or ""
  const sibs = d.parent[i] >= 0 ? d.children[d.parent[i]] : d.roots;
  const cls = ["cctviz-node"];
  if (selected) cls.push("selected");
  if (d.flags[i] & FLAG_MATCH) cls.push("match");
  if (isOther(d, i)) cls.push("other");
  if (isCollapsed(d, i) && isExpandable(d, i) && !isOther(d, i)) cls.push("collapsed");
  if (cue) cls.push(cue.cls === WAIT_CLASS ? "waiting" : "imbalanced");
  const attrs = {
    class: cls.join(" "),
    transform: `translate(${r2(x)},${r2(y)})`,
    role: "treeitem",
    "data-id": String(d.id[i]),
    "aria-level": String(d.depth[i] + 1),
    "aria-setsize": String(sibs.length),
    "aria-posinset": String(sibs.indexOf(i) + 1),
  };
  if (isExpandable(d, i)) attrs["aria-expanded"] = String(!isCollapsed(d, i));
  attrs["aria-label"] = ariaLabel(d, enc, i);
  attrs["aria-selected"] = String(selected);
  return attrs;
}

/** The narrowest label column of a tree figure of a given width, in em: about 16
 *  characters (names are cut so that different names never read alike). */
const TREE_FIGURE_LABEL_EM = 9;
/** ... or 5 em where 9 em leaves a single level. */
const TREE_FIGURE_LABEL_EM_LEAST = 5;

/** Per row, the nodes under it that a figure cut at its depth does not draw (rows
 *  below it and the nodes they fold): one pass from the deepest rows up. */
function hiddenCounts(d) {
  const out = new Float64Array(d.n);
  const order = Array.from({ length: d.n }, (_, i) => i).sort((a, b) => d.depth[b] - d.depth[a]);
  for (const i of order) {
    let k = 0;
    for (const c of d.children[i]) k += isOther(d, c) ? d.folded[c] : 1 + d.folded[c] + out[c];
    out[i] = k;
  }
  return out;
}

/**
 * The levels and the label width of a node-link tree that fit `avail` points at
 * full text size: the most levels whose labels get at least
 * {@link TREE_FIGURE_LABEL_EM} em, each label as wide as the room left allows
 * (never wider than its name). Returns {levels, deepest, cap} (deepest: the
 * tree's levels; cap: the longest label).
 */
function fitTree(d, m, avail, natural, fixed, floor) {
  let levels = 1;
  for (let i = 0; i < d.n; i++) levels = Math.max(levels, d.depth[i] + 1);
  // width of `L` levels with labels cut at `cap` (treeLayout's columns)
  const widthOf = (L, cap) => {
    const maxR = new Float64Array(L);
    const reach = new Float64Array(L);
    for (let i = 0; i < d.n; i++) {
      const dep = d.depth[i];
      if (dep >= L) continue;
      maxR[dep] = Math.max(maxR[dep], fixed[i].r);
      const cut = dep === L - 1 && d.children[i].length ? fixed[i].moreCut : 0;
      reach[dep] = Math.max(reach[dep], fixed[i].r + 6 * m.u + Math.max(Math.min(natural[i], cap) + cut, floor[i]));
    }
    let w = maxR[0];
    for (let k = 1; k < L; k++) w += reach[k - 1] + 28 * m.u + maxR[k];
    return w + reach[L - 1];
  };
  let widest = 0;
  for (let i = 0; i < d.n; i++) widest = Math.max(widest, natural[i]);
  // labels of 9 em where that leaves two levels or more, else of 5 em (a narrow
  // column at a large font: two levels of short names say more than one)
  let least = Math.min(widest, TREE_FIGURE_LABEL_EM * m.font);
  if (levels > 1 && widthOf(2, least) > avail) least = Math.min(widest, TREE_FIGURE_LABEL_EM_LEAST * m.font);
  let L = levels;
  while (L > 1 && widthOf(L, least) > avail) L--;
  // the widest labels that still fit (bisection on the cap)
  let lo = least;
  let hi = Math.max(least, widest);
  if (widthOf(L, hi) <= avail) return { levels: L, deepest: levels, cap: hi };
  for (let k = 0; k < 24; k++) {
    const mid = (lo + hi) / 2;
    if (widthOf(L, mid) <= avail) lo = mid;
    else hi = mid;
  }
  return { levels: L, deepest: levels, cap: widthOf(L, lo) <= avail ? lo : Math.max(m.font, lo - (widthOf(L, lo) - avail)) };
}

function treeContent(d, enc, m, measure, labels, more, cue, sel, st) {
  const ensemble = Boolean(d.spread);
  const rowHeight = (ensemble ? 32 : 22) * m.u;
  const rMax = (enc.sizeMetric && d.size ? (ensemble ? 9 : 10) : 4.5) * m.u;
  enc.rMax = rMax;
  enc.radiusOf = (v) => {
    if (!(enc.sizeMax > 0) || !Number.isFinite(v) || v <= 0) return 2.5 * m.u;
    return Math.max(2 * m.u, rMax * Math.sqrt(Math.min(1, v / enc.sizeMax)));
  };
  const radius = (i) => (enc.sizeMetric && d.size ? enc.radiusOf(d.size[i]) : 4.5 * m.u);
  // the least width beside a node of an ensemble: its spread whisker and cue
  const floor = (i) => (ensemble ? m.whisker + 6 * m.u + (cue[i] ? measure.text(cue[i].text, m.small, 700) : 0) : 0);
  // a figure of a given width: the levels that fit it at full text size, labels cut
  // to the room left; deeper levels are not drawn (their parents say "+N", as a
  // collapsed node does, and the caption says how many levels)
  let levels = Infinity;
  const folded = [];
  const levelsWidth = st.fit && st.width ? st.width : st.fitLevels;
  if (levelsWidth && d.n) {
    const natural = d.names.map((nm, i) => measure.text(labels[i] + more[i], m.font));
    const hidden = hiddenCounts(d);
    // the "+N" of a cut parent (live: room for ", k selected" too)
    const fixed = d.names.map((nm, i) => ({ r: radius(i), moreCut: measure.text(`\u00a0+${hidden[i]}${st.fit ? "" : ", 9 selected"}`, m.font) }));
    const floors = d.names.map((nm, i) => floor(i));
    const fit = fitTree(d, m, levelsWidth - 2 * m.margin, natural, fixed, floors);
    const deepest = fit.deepest;
    const cutName = distinctCutter(d.names, measure, m.font);
    for (let i = 0; i < d.n; i++) {
      const room = fit.cap - (more[i] ? measure.text(more[i], m.font) : 0);
      if (natural[i] > fit.cap) labels[i] = cutName(d.names[i], Math.max(m.font, room)) || ELLIPSIS;
    }
    // live: the search matches the user steps through are drawn (the tree is panned
    // where that makes it wider than its box); a selection below the cut is
    // counted on its ancestor's "+N" ("+6, 2 selected")
    let needed = 0;
    if (!st.fit) for (let i = 0; i < d.n; i++) if (d.flags[i] & FLAG_MATCH) needed = Math.max(needed, d.depth[i] + 1);
    if (Math.max(fit.levels, needed) < deepest) {
      levels = Math.max(fit.levels, needed);
      const selectedBelow = new Map();
      for (let i = 0; i < d.n && !st.fit; i++) {
        if (d.depth[i] < levels || !sel.has(d.id[i])) continue;
        let a = i;
        while (d.depth[a] > levels - 1) a = d.parent[a];
        selectedBelow.set(a, (selectedBelow.get(a) || 0) + 1);
      }
      let nodes = 0;
      for (let i = 0; i < d.n; i++) {
        if (d.depth[i] === levels - 1 && d.children[i].length) {
          const k = hidden[i];
          const s = selectedBelow.get(i);
          more[i] = `\u00a0+${k}${s ? `, ${s} selected` : ""}`;
          nodes += k;
        }
      }
      const l = deepest - levels;
      const how = st.fit ? "" : "; double-click one to focus it";
      folded.push(`${l} deeper level${l === 1 ? "" : "s"} (${nodes} node${nodes === 1 ? "" : "s"}, "+N" on their parents${how})`);
    }
  }
  const lw = (i) => Math.max(measure.text(labels[i] + more[i], m.font), floor(i));
  const g = treeLayout(d, { rowHeight, radius, labelWidth: lw, labelGap: 6 * m.u, linkGap: 28 * m.u, maxDepth: levels - 1 });
  const links = [];
  for (let i = 0; i < d.n; i++) {
    const p = d.parent[i];
    if (p < 0 || d.depth[i] >= levels) continue;
    const sx = g.linkStart[p];
    const sy = g.y[p];
    const tx = g.x[i] - radius(i) - 1;
    const ty = g.y[i];
    const mx = (sx + tx) / 2;
    links.push(P("path", {
      class: isOther(d, i) ? "cctviz-link cctviz-link-other" : "cctviz-link",
      d: `M${r2(sx)},${r2(sy)}C${r2(mx)},${r2(sy)} ${r2(mx)},${r2(ty)} ${r2(tx)},${r2(ty)}`,
    }));
  }
  const nodes = [];
  for (let i = 0; i < d.n; i++) {
    if (d.depth[i] >= levels) continue;
    const r = radius(i);
    const kids = [P("circle", { class: "cctviz-mark", r: r2(r), fill: enc.fill(i) })];
    const label = P("text", { class: "cctviz-label", x: r2(r + 6 * m.u), y: ensemble ? r2(-5 * m.u) : 0, dy: "0.35em" }, labels[i]);
    if (more[i]) label.children = [P("tspan", { class: "cctviz-more" }, more[i])];
    kids.push(label);
    if (ensemble && !isOther(d, i)) {
      const sp = spreadPrim(d, i, r + 6 * m.u, 8 * m.u, m.whisker);
      if (sp) kids.push(sp);
      if (cue[i]) {
        kids.push(P("text", { class: cue[i].cls, x: r2(r + 6 * m.u + m.whisker + 6 * m.u), y: r2(8 * m.u), dy: "0.35em" }, cue[i].text));
      }
    }
    nodes.push(P("g", nodeAttrs(d, enc, i, g.x[i], g.y[i], sel.has(d.id[i]), cue[i]), null, kids));
  }
  return { geom: { kind: "tree", ...g, shownLevels: levels }, links, nodes, width: g.width, height: g.height, folded };
}

/** The narrowest icicle column, px at 12 px text: live (panned beyond) ... */
const ICICLE_COLUMN_MIN = 130;
/** ... and in a figure of a given width (about 10 characters; deeper levels are not drawn). */
const ICICLE_FIGURE_COLUMN_MIN = 72;

function icicleContent(d, enc, m, measure, cue, sel, settings) {
  const cutName = distinctCutter(d.names, measure, m.font);
  const ensemble = Boolean(d.spread);
  let leaves = 0;
  let levels = 1;
  for (let i = 0; i < d.n; i++) {
    if (d.children[i].length === 0) leaves++;
    levels = Math.max(levels, d.depth[i] + 1);
  }
  const height = Math.max(260, Math.min(560, leaves * 22)) * m.u;
  const avail = settings.width ? settings.width - 2 * m.margin : 160 * m.u * levels;
  // a figure of a given width shows the levels whose columns fit it at full text size
  // (deeper ones are marked as hidden, as collapsed nodes are), rather than shrinking
  // every label to fit them all
  const fitted = Boolean(settings.fit && settings.width);
  const narrowest = (fitted ? ICICLE_FIGURE_COLUMN_MIN : ICICLE_COLUMN_MIN) * m.u;
  const shownLevels = fitted ? Math.max(1, Math.min(levels, Math.floor(avail / narrowest))) : levels;
  const columnWidth = Math.max(narrowest, Math.min(260 * m.u, Math.floor(avail / shownLevels)));
  const g = icicleLayout(d, {
    values: enc.sizeMetric ? d.size : null,
    additive: isAdditive(d, enc.sizeMetric),
    height,
    columnWidth,
  });
  const nodes = [];
  let hiddenMarks = 0;
  const valueCol = enc.kind === "sequential" ? enc.values : d.color ?? d.size;
  const valueMetric = enc.kind === "sequential" ? enc.metrics[0] : d.color ? enc.metrics[0] : enc.sizeMetric;
  for (let i = 0; i < d.n; i++) {
    if (d.depth[i] >= shownLevels) continue;
    const w = g.x1[i] - g.x0[i];
    const hgt = g.y1[i] - g.y0[i];
    const fill = enc.fill(i);
    const kids = [P("rect", { class: "cctviz-mark", width: r2(w - 1), height: r2(Math.max(0, hgt)), fill })];
    // Text on the fill: dark or light ink, whichever contrasts more.
    const ink = textColorOn(fill) === "#ffffff" ? "cctviz-ink-light" : "cctviz-ink-dark";
    const labelled = hgt >= 15 * m.u;
    if (labelled) {
      // the name first: the imbalance cue only where it leaves the name room
      let cueW = cue[i] ? measure.text(cue[i].text, m.small, 700) + 6 * m.u : 0;
      if (cueW && w - 12 * m.u - cueW < 56 * m.u) cueW = 0;
      const avail = w - 12 * m.u - cueW;
      const label = avail > 0 ? cutName(d.names[i], avail) : "";
      const y = hgt >= 34 * m.u ? 11 * m.u : hgt / 2;
      if (label) kids.push(P("text", { class: `cctviz-label ${ink}`, x: r2(5 * m.u), y: r2(y), dy: "0.35em" }, label));
      if (cueW && avail > 0) {
        kids.push(P("text", { class: `${cue[i].cls} ${ink}`, x: r2(w - 6 * m.u), y: r2(y), dy: "0.35em", "text-anchor": "end" }, cue[i].text));
      }
      if (hgt >= 34 * m.u && valueCol && Number.isFinite(valueCol[i])) {
        const v = formatMetricValue(d, valueMetric, valueCol[i]);
        if (measure.text(v, m.small) <= w - 12 * m.u) {
          kids.push(P("text", { class: `cctviz-value ${ink}`, x: r2(5 * m.u), y: r2(26 * m.u), dy: "0.35em" }, v));
        }
      }
    }
    // The spread bar sits at the bottom, its mean tick clear of the border: only where
    // it does not cross the label.
    if (ensemble && !isOther(d, i) && (labelled ? hgt >= 28 * m.u : hgt >= 14 * m.u) && w >= 30 * m.u) {
      const sp = spreadPrim(d, i, 4 * m.u, hgt - 6 * m.u, w - 10 * m.u, `cctviz-spread cctviz-spread-inset ${ink}`);
      if (sp) kids.push(sp);
    }
    // Children not drawn (collapsed, or deeper than the figure's levels): a notch at
    // the right edge, in the label's ink (a heavy frame read as a selection)
    const hidden = (isCollapsed(d, i) && isExpandable(d, i) && !isOther(d, i)) || (d.depth[i] === shownLevels - 1 && d.children[i].length > 0);
    if (hidden && hgt >= 7 * m.u && w >= 12 * m.u) {
      hiddenMarks++;
      const a = Math.min(4 * m.u, hgt / 2 - 1);
      const x = w - 1 - 2 * m.u;
      kids.push(P("path", { class: `cctviz-hidden-mark ${ink}`, d: `M${r2(x - a)},${r2(hgt / 2 - a)}L${r2(x)},${r2(hgt / 2)}L${r2(x - a)},${r2(hgt / 2 + a)}Z` }));
    }
    nodes.push(P("g", nodeAttrs(d, enc, i, g.x0[i], g.y0[i], sel.has(d.id[i]), cue[i]), null, kids));
  }
  const width = Math.min(g.width, shownLevels * columnWidth);
  const geom = { kind: "icicle", ...g, shownLevels, hiddenLevels: levels - shownLevels, hiddenMarks };
  const l = levels - shownLevels;
  const folded = l > 0 ? [`${l} deeper level${l === 1 ? "" : "s"} (marked by a notch)`] : [];
  return { geom, links: [], nodes, width, height: g.height, folded };
}

/**
 * The selection drawn over an icicle (a double frame per selected node);
 * the tree shows selection on the nodes themselves (class "selected").
 */
export function selectionOverlay(d, geom, ids) {
  const out = [];
  if (!geom || geom.kind !== "icicle") return out;
  for (const id of ids) {
    const i = d.rowOf.get(id);
    if (i === undefined || geom.y1[i] - geom.y0[i] <= 0 || d.depth[i] >= geom.shownLevels) continue;
    const attrs = {
      x: r2(geom.x0[i] + 1),
      y: r2(geom.y0[i] + 1),
      width: r2(geom.x1[i] - geom.x0[i] - 3),
      height: r2(Math.max(0, geom.y1[i] - geom.y0[i] - 2)),
    };
    out.push(P("rect", { class: "cctviz-sel cctviz-sel-outer", ...attrs }));
    out.push(P("rect", { class: "cctviz-sel cctviz-sel-inner", ...attrs }));
  }
  return out;
}

/** "all 0 B" when a metric has one value only, else the tercile breaks "1 ms | 5 ms"
 *  (a zero as "0", in no unit; "0 | > 0" where the middle class is empty). */
function breaksText(d, metric, breaks, domain) {
  if (!breaks) return "\u2013";
  if (domain && domain[0] === domain[1]) return `all ${formatMetricValue(d, metric, domain[0])} (no spread)`;
  const f = (v) => (v === 0 ? "0" : formatMetricValue(d, metric, v));
  if (breaks[0] === breaks[1]) return `${f(breaks[0])} | > ${f(breaks[1])}`;
  return `${f(breaks[0])} | ${f(breaks[1])}`;
}

/** Whether a drawn node (not an "(other)", not below the levels drawn) lacks what
 *  `has(i)` asks of it: the legend shows a "missing" swatch only then. */
function drawnWithout(d, geom, has) {
  const shown = geom?.shownLevels ?? Infinity;
  for (let i = 0; i < d.n; i++) if (!isOther(d, i) && d.depth[i] < shown && !has(i)) return true;
  return false;
}

/** Legends as [prim, width, height] items (not yet placed). */
function legendItems(d, enc, m, measure, settings, geom, maxW) {
  const items = [];
  if (d.n === 0) return items;
  const u = m.u;
  const { tw, title, text, cut } = legendKit(m, measure, maxW);
  if (enc.kind === "sequential") {
    const sc = enc.scale;
    const t = cut(`Colour: ${legendName(d, enc.metrics[0])}${sc.log ? " (log scale)" : ""}${enc.note ? ` (${enc.note})` : ""}`, 96);
    const W = 180 * u;
    const y0 = 17 * u;
    const bh = 10 * u;
    const kids = [title(t), ...colorBar(sc.interpolator, W, y0, bh)];
    if (sc.domain) {
      const single = sc.domain[0] === sc.domain[1];
      for (const tt of single ? [0] : [0, 0.5, 1]) {
        const v = valueAt(sc, tt);
        kids.push(P("line", { class: "cctviz-legend-tick", x1: r2(tt * W), x2: r2(tt * W), y1: r2(y0 + bh), y2: r2(y0 + bh + 4 * u) }));
        const label = single ? `all ${formatMetricValue(d, enc.metrics[0], v)}` : formatMetricValue(d, enc.metrics[0], v);
        kids.push(text(tt * W, y0 + bh + 6 * u, label, { dy: "0.8em", "text-anchor": tt === 0 ? "start" : tt === 1 ? "end" : "middle" }));
      }
    }
    // the swatch of a node without a value, only where one is drawn
    const missing = drawnWithout(d, geom, (i) => Number.isFinite(enc.values[i]));
    if (missing) {
      kids.push(P("rect", { class: "cctviz-legend-swatch", x: r2(W + 12 * u), y: r2(y0), width: r2(bh), height: r2(bh), fill: MISSING_COLOR }));
      kids.push(text(W + 26 * u, y0 + bh / 2, "missing", { dy: "0.35em" }));
    }
    items.push([P("g", { class: "cctviz-legend" }, null, kids), Math.max(missing ? W + 26 * u + tw("missing") : W, tw(t, 700)), 48 * u]);
  } else if (enc.kind === "bivariate") {
    const [ma, mb] = enc.metrics;
    const t = cut(`Colour: ${ma} \u00d7 ${mb} (terciles)`, 64);
    const cell = 14 * u;
    const gy = 32 * u;
    const up = `\u2191 ${cut(legendName(d, mb), 40)}`;
    const right = `${cut(legendName(d, ma), 40)} \u2192`;
    const kids = [title(t), text(0, 17 * u, up, { dy: "0.8em" })];
    for (let bb = 0; bb < 3; bb++) {
      for (let ba = 0; ba < 3; ba++) {
        kids.push(P("rect", { x: r2(ba * cell), y: r2(gy + (2 - bb) * cell), width: r2(cell), height: r2(cell), fill: BIVARIATE[bb][ba] }));
      }
    }
    kids.push(text(0, gy + 3 * cell + 3 * u, right, { dy: "0.8em" }));
    const tx = 3 * cell + 10 * u;
    const lineA = `\u2192 ${breaksText(d, ma, enc.breaksA, d.colorDomain)}`;
    const lineB = `\u2191 ${breaksText(d, mb, enc.breaksB, d.color2Domain)}`;
    kids.push(P("text", { class: "cctviz-legend-text cctviz-legend-muted", x: r2(tx), y: r2(gy), dy: "0.8em" }, "tercile breaks"));
    kids.push(text(tx, gy + 14 * u, lineA, { dy: "0.8em" }));
    kids.push(text(tx, gy + 28 * u, lineB, { dy: "0.8em" }));
    let w = Math.max(tx + Math.max(tw(lineA), tw(lineB), tw("tercile breaks")), tw(up), tw(right), tw(t, 700));
    // grey: a node without one of the two values, only where one is drawn
    const missing = drawnWithout(d, geom, (i) => Number.isFinite(d.color[i]) && Number.isFinite(d.color2[i]));
    let hgt = gy + 3 * cell + 17 * u;
    if (missing) {
      const ym = hgt + 2 * u;
      kids.push(P("rect", { class: "cctviz-legend-swatch", x: 0, y: r2(ym), width: r2(10 * u), height: r2(10 * u), fill: MISSING_COLOR }));
      kids.push(text(14 * u, ym + 5 * u, "missing", { dy: "0.35em" }));
      w = Math.max(w, 14 * u + tw("missing"));
      hgt = ym + 12 * u;
    }
    items.push([P("g", { class: "cctviz-legend" }, null, kids), w, hgt]);
  }
  if (settings.chart === "tree" && enc.sizeMetric && d.size && enc.sizeMax > 0) {
    const t = cut(`Size (area): ${legendName(d, enc.sizeMetric)}`, 64);
    const kids = [title(t)];
    let x = 0;
    const rMax = enc.rMax;
    for (const f of [1, 0.25, 0.04]) {
      const v = enc.sizeMax * f;
      const r = enc.radiusOf(v);
      kids.push(P("circle", { class: "cctviz-legend-circle", cx: r2(x + r), cy: r2(17 * u + rMax), r: r2(r) }));
      const label = formatMetricValue(d, enc.sizeMetric, v);
      kids.push(text(x + 2 * r + 4 * u, 17 * u + rMax, label, { dy: "0.35em" }));
      x += 2 * r + 18 * u + tw(label);
    }
    items.push([P("g", { class: "cctviz-legend" }, null, kids), Math.max(x, tw(t, 700)), 17 * u + 2 * rMax + 2 * u]);
  } else if (settings.chart === "icicle") {
    let t = "Height by leaf count";
    if (geom && geom.bySize) t = `Height by ${legendName(d, enc.sizeMetric)}`;
    else if (enc.sizeMetric && !isAdditive(d, enc.sizeMetric)) t += ` (${enc.sizeMetric} does not add up)`;
    t = cut(t, 80);
    const kids = [title(t)];
    let w = tw(t, 700);
    let hgt = 16 * u;
    if (geom && geom.hiddenMarks) {
      // the notch of a column whose children are not drawn
      const a = 4 * u;
      const y = 24 * u;
      kids.push(P("path", { class: "cctviz-hidden-mark cctviz-ink-dark", d: `M0,${r2(y - a)}L${r2(a)},${r2(y)}L0,${r2(y + a)}Z` }));
      const t1 = geom.hiddenLevels > 0 ? `children not drawn (${geom.hiddenLevels} deeper level${geom.hiddenLevels === 1 ? "" : "s"}: focus a node)` : "children not drawn (collapsed)";
      kids.push(text(a + 6 * u, y, t1, { dy: "0.35em" }));
      w = Math.max(w, a + 6 * u + tw(t1));
      hgt = y + 8 * u;
    }
    items.push([P("g", { class: "cctviz-legend" }, null, kids), w, hgt]);
  }
  if (d.spread) {
    const s = d.spread;
    const t = cut(`Spread of ${legendName(d, s.metric)} over ${profilesText(s)}`, 80);
    const W = m.whisker;
    const y = 24 * u;
    const kids = [
      title(t),
      P("line", { class: "cctviz-spread-track", x1: 0, x2: r2(W), y1: r2(y), y2: r2(y) }),
      P("line", { class: "cctviz-spread-range", x1: r2(W * 0.3), x2: r2(W), y1: r2(y), y2: r2(y) }),
      P("line", { class: "cctviz-spread-mean", x1: r2(W * 0.6), x2: r2(W * 0.6), y1: r2(y - 4 * u), y2: r2(y + 4 * u) }),
    ];
    const t1 = "min\u2013max (to scale of max), | mean";
    kids.push(text(W + 6 * u, y, t1, { dy: "0.35em" }));
    let w = W + 6 * u + tw(t1);
    let hgt = y + 8 * u;
    if (s.costThreshold !== null) {
      const share = s.cueShare > 0 ? ` (${formatPercent(s.cueShare)} of ${s.cueBasis})` : "";
      const t2 = `imbalance costs max \u2212 mean \u2265 ${formatMetricValue(d, s.metric, s.costThreshold)}${share}`;
      kids.push(P("text", { class: "cctviz-imbalance", x: 0, y: r2(y + 15 * u), dy: "0.35em" }, TRIANGLE));
      kids.push(text(W + 6 * u, y + 15 * u, t2, { dy: "0.35em" }));
      w = Math.max(w, W + 6 * u + tw(t2));
      hgt = y + 22 * u;
    }
    if (d.waits && d.waits.size) {
      const yw = hgt + 7 * u;
      const t3 = "the rank whose last arrivals cost the others the most waiting (waiters not flagged)";
      const x3 = Math.max(W, tw(WAIT_CUE, 700)) + 6 * u;
      kids.push(P("text", { class: WAIT_CLASS, x: 0, y: r2(yw), dy: "0.35em" }, WAIT_CUE));
      kids.push(text(x3, yw, t3, { dy: "0.35em" }));
      w = Math.max(w, x3 + tw(t3));
      hgt = yw + 7 * u;
    }
    items.push([P("g", { class: "cctviz-legend" }, null, kids), Math.max(w, tw(t, 700)), hgt]);
  }
  return items;
}

/** Font size and weight of a text prim by its class. */
const typeset = typesetter({
  bold: ["cctviz-legend-title", "cctviz-imbalance", WAIT_CLASS],
  small: ["cctviz-value", "cctviz-more", "cctviz-imbalance", WAIT_CLASS, "cctviz-legend-title", "cctviz-legend-text"],
});

/**
 * Build the scene of a CCT view.
 *
 * @param {import("./data.js").CCTData} d decoded `_data`
 * @param {object} settings see {@link DEFAULT_SETTINGS}
 * @param {{text: Function, truncate: Function}} [measure] text measure (default: the bundled font's table)
 * @returns {object} the scene: `width`/`height` (figure size in figure units), `frame`
 *   (svg width, height and viewBox), `legends`, `band` (their height), `content`
 *   (offset of the tree), `links`, `nodes`, `overlay`, `title`, `empty`, `geom`
 *   (mark positions by row, for interaction), `fontSize`, `fontFamily`.
 */
export function cctScene(d, settings, measure = TABLE_MEASURE) {
  const st = { ...DEFAULT_SETTINGS, ...settings };
  st.chart = st.chart === "icicle" ? "icicle" : "tree";
  const m = metrics(st.fontSize, st.labelEm, st.fit);
  const enc = encodings(d, st);
  const sel = new Set(st.highlight ? (st.selection || []).map(Number) : []);

  // names cut so that different names never read alike (measure.js)
  const cutName = distinctCutter(d.names, measure, m.font);
  const labels = d.names.map((nm) => cutName(nm, m.labelWidth) || ELLIPSIS);
  const more = new Array(d.n).fill("");
  const cue = new Array(d.n).fill("");
  for (let i = 0; i < d.n; i++) {
    if (!isOther(d, i) && isCollapsed(d, i) && isExpandable(d, i)) more[i] = d.folded[i] > 0 ? `\u00a0+${d.folded[i]}` : "\u00a0+";
    cue[i] = rowCue(d, i);
  }
  const body =
    st.chart === "tree" ? treeContent(d, enc, m, measure, labels, more, cue, sel, st) : icicleContent(d, enc, m, measure, cue, sel, st);

  const naturalW = body.width + 2 * m.margin;
  const items = st.legends ? legendItems(d, enc, m, measure, st, body.geom, legendFlowWidth(st, m, naturalW) - 2 * m.margin) : [];
  const note = st.fit ? null : foldedLegend(body.folded, m, measure, legendFlowWidth(st, m, naturalW) - 2 * m.margin);
  if (note) items.push(note);
  const top = frameTop(st, m, measure, naturalW, items);
  const { content, width, height, scale, frame, caption, notes, taller } = captionedFrame(st, m, measure, top, naturalW, body.height, body.folded);
  const title = top.title;
  const empty = d.n
    ? null
    : P("text", { class: "cctviz-empty", x: r2(m.margin), y: r2(content.y + 12 * m.u) }, "No nodes to show");

  for (const list of [body.nodes, top.legends]) for (const p of list) typeset(p, m);
  if (title) typeset(title, m);
  if (empty) typeset(empty, m);
  return {
    kind: "cct",
    chart: st.chart,
    colorShown: enc.metrics, // the metrics the fill shows (the icicle may show an exclusive part)
    fontSize: m.font,
    fontFamily: FONT_FAMILY,
    width,
    height,
    scale,
    frame,
    style: st.style || "",
    background: st.background,
    title,
    titleHeight: top.titleHeight,
    legends: top.legends,
    band: top.band,
    content,
    links: body.links,
    nodes: body.nodes,
    overlay: st.highlight ? selectionOverlay(d, body.geom, sel) : [],
    empty,
    caption,
    notes,
    taller,
    geom: body.geom,
    encodings: enc,
    margin: m.margin,
  };
}
