// The TimelineView's scene: a pure function from the decoded `_data`, plain
// settings and a text measure to lanes (one per profile, the levels stacked),
// rectangles coloured by context (the phase or first level a node belongs to,
// lighter shades inside it) and named where the names fit, communication calls
// widened to a few pixels and split into waiting and transfer, the start-up
// drawn apart (its own segment of the time axis, after a break), marks of the
// last to arrive at collectives, counter bands, the brushed window and a
// legend that names the contexts, as prims. No DOM: draw.js turns it into SVG,
// in the notebook and in export.

import { axisUnit, linearAxis, tickMarks } from "../axis.js";
import { r2 } from "../dom.js";
import { formatValue } from "../format.js";
import { textColorOn } from "../kit/color.js";
import { FONT_FAMILY, TABLE_MEASURE, distinctCutter } from "../measure.js";
import { P, captionUnder, flatFrame, textSizes, wrapText } from "../scene-kit.js";
import { binTime } from "./data.js";

/** Settings of a scene (plain values; every field has a default). */
export const DEFAULT_SETTINGS = Object.freeze({
  selection: [], // node ids (tree ids) outlined
  brush: [], // [t0, t1] seconds, or []
  fontSize: 12,
  width: null, // the figure's width (null: natural)
  height: null,
  fit: false,
  legends: true,
  highlight: true,
  title: "",
  background: null,
  style: "",
});

/**
 * Colours of the contexts by slot (Python's `context_colors`): Okabe-Ito, then
 * Paul Tol's muted scheme. Slots 0-3 are forward, backward, optimizer and data
 * where a run has them, so forward and backward always differ.
 */
export const GROUP_COLORS = Object.freeze(["#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#f0e442", "#882255", "#44aa99", "#999933", "#332288"]);
/** The colour of slot -1 ("other", contexts past the palette). */
export const GREY = "#8f8f8f";
/** What a node is drawn as (`_data.node_role`). */
export const ROLE = Object.freeze({ context: 0, frame: 1, step: 2, startup: 3, comm: 4 });
const ROLE_CLASS = ["", " cctviz-role-frame", " cctviz-role-step", " cctviz-role-startup", " cctviz-role-comm"];
/** Shades inside a context: its own colour, then mixed with white by these. */
const TINTS = [0, 0.42, 0.64];
/** The hatching of waiting (collectives' waits, blocked regions). */
export const HATCH_ID = "cctviz-tl-hatch";
const HATCH = `url(#${HATCH_ID})`;

/** `hex` ("#rrggbb") mixed with white by `t` in [0, 1]. */
export function mixWhite(hex, t) {
  const m = /^#([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})$/i.exec(hex);
  if (!m) return hex;
  const c = m.slice(1, 4).map((x) => Math.round(parseInt(x, 16) + (255 - parseInt(x, 16)) * t));
  return `#${c.map((v) => v.toString(16).padStart(2, "0")).join("")}`;
}

/** The colour of context group `g` at shade `tint` (null: no such group). */
export function groupColor(d, g, tint = 0) {
  if (!(g >= 0 && g < d.groups.length)) return null;
  const slot = d.groupSlot[g] ?? -1;
  const base = slot >= 0 && slot < GROUP_COLORS.length ? GROUP_COLORS[slot] : GREY;
  return tint ? mixWhite(base, TINTS[tint] ?? TINTS[1]) : base;
}

/** The fill of used node k: its context's shade, or null where its role's class colours it. */
export function nodeFill(d, k) {
  return d.nodeRole[k] === ROLE.context ? (groupColor(d, d.nodeGroup[k], d.nodeTint[k]) ?? GREY) : null;
}

/**
 * Figure x of the window's time and bins: bins are uniform within each
 * segment (`d.segments`: the time outside the steps compressed apart), each
 * segment as wide as its share of the bins, with a break of `gap` between them.
 *
 * @returns {{segments: {t0: number, t1: number, x0: number, x1: number, b0: number, b1: number}[],
 *   startX: (b: number) => number, endX: (b: number) => number, toX: (t: number) => number,
 *   toT: (x: number) => number, binAt: (x: number) => number}}
 */
export function timeScale(d, x0, w, gap) {
  const n = d.segments.length;
  const room = w - gap * (n - 1);
  const segments = [];
  let x = x0;
  for (const g of d.segments) {
    const sw = (room * (g.b1 - g.b0)) / d.bins;
    segments.push({ t0: g.t0, t1: g.t1, x0: x, x1: x + sw, b0: g.b0, b1: g.b1 });
    x += sw + gap;
  }
  const bx = (g, b) => g.x0 + ((b - g.b0) * (g.x1 - g.x0)) / (g.b1 - g.b0);
  const tx = (g, t) => g.x0 + ((t - g.t0) / (g.t1 - g.t0)) * (g.x1 - g.x0);
  const last = segments[n - 1];
  const find = (ok) => segments.find(ok) || last;
  return {
    segments,
    startX: (b) => bx(find((g) => b < g.b1), b), // a rectangle starting at bin b
    endX: (b) => bx(find((g) => b <= g.b1), b), // a rectangle ending at bin b
    toX: (t) => tx(find((g) => t < g.t1), t),
    toT: (px) => {
      const g = find((s, k) => k === n - 1 || px < (s.x1 + segments[k + 1].x0) / 2);
      return g.t0 + ((Math.min(Math.max(px, g.x0), g.x1) - g.x0) / (g.x1 - g.x0)) * (g.t1 - g.t0);
    },
    binAt: (px) => {
      for (const g of segments) if (px >= g.x0 && px < g.x1) return Math.min(g.b1 - 1, g.b0 + Math.floor(((px - g.x0) / (g.x1 - g.x0)) * (g.b1 - g.b0)));
      return -1;
    },
  };
}

/** Whether a cut label still names something: the whole name, or at least three of its letters. */
const named = (text, name) => Boolean(text) && (text === name || [...text.replaceAll("\u2026", "")].length >= 3);

/** The role of rectangle i's node. */
const roleOf = (d, i) => d.nodeRole[d.node[i]] ?? ROLE.context;

/** Tooltip lines ({text, cls?}) of rectangle i. */
export function rectLines(d, i) {
  const t0 = binTime(d, d.b0[i]);
  const t1 = binTime(d, d.b1[i]);
  const k = d.node[i];
  const g = d.nodeGroup[k];
  const what = d.nodeRole[k] === ROLE.startup ? "start-up, outside steps" : g >= 0 ? `in ${d.groups[g]}` : d.kinds[d.nodeKind[k]] ?? "";
  const lines = [
    { cls: "cctviz-tip-path", text: d.names[k] ?? "?" },
    { text: `${d.lanes[d.lane[i]] ?? ""} \u00b7 level ${d.level[i]} \u00b7 ${what}` },
    { text: `${formatValue(t0, "s")} \u2013 ${formatValue(t1, "s")} (${formatValue(t1 - t0, "s")})` },
  ];
  if (d.cover[i] < 0.999) lines.push({ cls: "cctviz-tip-note", text: `covers ${Math.round(d.cover[i] * 100)}% of these pixels` });
  if (d.blocked[i]) lines.push({ cls: "cctviz-tip-note", text: "blocked here, as the workflow summary counts it" });
  return lines;
}

/** Tooltip lines of communication run `run` (a scene's `colls[j]`). */
export function collLines(d, run) {
  const name = d.names[run.node] ?? "communication";
  const lines = [
    { cls: "cctviz-tip-path", text: run.calls > 1 ? `${name} (${run.calls} calls)` : name },
    { text: `${d.lanes[run.lane] ?? ""} \u00b7 ${formatValue(run.t0, "s")} \u2013 ${formatValue(run.t1, "s")}` },
  ];
  if (Number.isFinite(run.waited)) lines.push({ text: `waiting ${formatValue(run.waited, "s")}, transfer ${formatValue(Math.max(run.time - run.waited, 0), "s")}` });
  else lines.push({ text: `${formatValue(run.time, "s")} in the call${run.calls > 1 ? "s" : ""}; the wait is not known (not matched across ranks)` });
  return lines;
}

/** What marker j means: "last of train's 2 ranks to arrive". */
function markWho(d, j) {
  const of = d.markOf[j] ? `${d.markOf[j]}'s ` : "";
  const n = d.markRanks[j] > 0 ? `${d.markRanks[j]} ` : "";
  return `last of ${of}${n}ranks to arrive`;
}

/** Tooltip lines of marker j. */
export function markLines(d, j) {
  const lines = [
    { cls: "cctviz-tip-path", text: d.names[d.markNode[j]] ?? "collective" },
    { text: `${d.lanes[d.markLane[j]] ?? `rank ${d.markRank[j]}`}: ${markWho(d, j)}` },
  ];
  const waited = Number.isFinite(d.markWaited[j]) ? `the others waited up to ${formatValue(d.markWaited[j], "s")}; ` : "";
  lines.push({ text: `${waited}last by ${formatValue(d.markLastBy[j], "s")} at ${formatValue(d.window[0] + d.markX[j], "s")}` });
  return lines;
}

/**
 * The label of lane k as [first line, second line]: a group lane's "5 ranks like
 * rank 4" on two lines ("5 ranks", "like rank 4") where the lane has two levels.
 */
function laneText(d, k) {
  const name = d.lanes[k] ?? "";
  const at = d.laneKey[k] && d.levels > 1 ? name.lastIndexOf(" like ") : -1;
  return at > 0 ? [name.slice(0, at), name.slice(at + 1)] : [name, ""];
}

/**
 * The bands of the group lanes, a row under each one's levels: per band bin,
 * the least to the greatest share of the bin its ranks spend in communication
 * (a filled range) and the median (a line); 0 at the row's bottom, 1 at its top.
 *
 * @returns {object[]} prims: `g.cctviz-spread[data-b]` (b: the band's index) per band lane
 */
export function spreadBands(d, ts, laneTop, { laneH, rowH, u, banded }) {
  const out = [];
  const nb = d.bandBins;
  d.bandLane.forEach((k, b) => {
    if (!banded.has(k)) return;
    const y0 = laneTop(k) + laneH + rowH - 1 * u;
    const hh = rowH - 2 * u;
    const y = (v) => r2(y0 - Math.min(Math.max(Number.isFinite(v) ? v : 0, 0), 1) * hh);
    const xs = [];
    for (let j = 0; j <= nb; j++) xs.push(j < nb ? ts.startX(j * d.bandStride) : ts.endX(d.bins));
    let hi = "";
    let lo = "";
    let mid = "";
    for (let j = 0; j < nb; j++) {
      const i = b * nb + j;
      const [xa, xb] = [r2(xs[j]), r2(xs[j + 1])];
      hi += `${j ? "L" : "M"}${xa},${y(d.bandHi[i])}L${xb},${y(d.bandHi[i])}`;
      lo = `L${xb},${y(d.bandLo[i])}L${xa},${y(d.bandLo[i])}${lo}`;
      mid += `${j ? "L" : "M"}${xa},${y(d.bandMid[i])}L${xb},${y(d.bandMid[i])}`;
    }
    const kids = [
      P("rect", { class: "cctviz-spread-bg", x: r2(xs[0]), y: r2(y0 - hh), width: r2(Math.max(xs[nb] - xs[0], 0)), height: r2(hh) }),
      P("path", { class: "cctviz-spread-range", d: `${hi}${lo}Z` }),
      P("path", { class: "cctviz-spread-median", d: mid, fill: "none" }),
    ];
    out.push(P("g", { class: "cctviz-spread", "data-b": String(b), "data-lane": String(k), role: "img", "aria-label": `${d.lanes[k]}: the share of time in communication, least, median and greatest over its ${d.laneMembers[k]} ranks` }, null, kids));
  });
  return out;
}

/** Tooltip lines of band b at view bin i: the bin's time and the least, median and greatest share. */
export function spreadLines(d, b, i) {
  const j = Math.min(Math.floor(i / d.bandStride), d.bandBins - 1);
  const at = b * d.bandBins + j;
  const pc = (v) => (Number.isFinite(v) ? `${(100 * v).toFixed(1)}%` : "n/a");
  const t0 = binTime(d, j * d.bandStride);
  const t1 = binTime(d, Math.min((j + 1) * d.bandStride, d.bins));
  return [
    { cls: "cctviz-tip-path", text: d.lanes[d.bandLane[b]] ?? "" },
    { text: `${formatValue(t0, "s")} \u2013 ${formatValue(t1, "s")}` },
    { text: `in communication: least ${pc(d.bandLo[at])}, median ${pc(d.bandMid[at])}, most ${pc(d.bandHi[at])} of the time` },
    { text: `over its ${d.laneMembers[d.bandLane[b]].toLocaleString("en-US")} ranks; click the label to expand` , cls: "cctviz-tip-note" },
  ];
}

/** The accessible name of lane k: its label, the rectangles shown, the levels. */
function laneLabel(d, k, n) {
  const [t0, t1] = d.window;
  return `${d.lanes[k]}: ${n} rectangle${n === 1 ? "" : "s"} over ${d.levels} level${d.levels === 1 ? "" : "s"}, ${formatValue(t0, "s")} \u2013 ${formatValue(t1, "s")}`;
}

/** The label of counter band c: its lanes (or group) and track, and the axis' display unit. */
export function bandTitle(d, c, axisUnit) {
  const who = d.counterLabel[c] || d.lanes[d.counterLane[c]] || "";
  const track = d.tracks[d.counterTrack[c]] ?? "";
  return `${who} \u00b7 ${track}${axisUnit ? ` [${axisUnit}]` : ""}`;
}

/** The highest peak of each track over its bands (one y scale per track). */
function trackPeaks(d) {
  const top = new Float64Array(d.tracks.length);
  for (let c = 0; c < d.k; c++) {
    const t = d.counterTrack[c];
    for (let i = c * d.bins, e = i + d.bins; i < e; i++) if (d.counterPeak[i] > top[t]) top[t] = d.counterPeak[i];
  }
  return top;
}

/** The area of band c's peaks as a step path, segment by segment (bins with no value yet are left open). */
function areaPath(d, c, ts, axis, base) {
  const parts = [];
  for (const g of ts.segments) {
    let open = false;
    let prev = 0;
    const px = (g.x1 - g.x0) / (g.b1 - g.b0);
    for (let i = g.b0; i <= g.b1; i++) {
      const v = i < g.b1 ? d.counterPeak[c * d.bins + i] : NaN;
      const x = r2(g.x0 + (i - g.b0) * px);
      if (!Number.isFinite(v)) {
        if (open) parts.push(`L${x},${prev}L${x},${r2(base)}Z`);
        open = false;
        continue;
      }
      const y = r2(axis.scale(v));
      if (!open) parts.push(`M${x},${r2(base)}L${x},${y}`);
      else if (y !== prev) parts.push(`L${x},${prev}L${x},${y}`);
      open = true;
      prev = y;
    }
  }
  return parts.join("");
}

/**
 * Counter bands under the lanes: one per band of `_data` (a lane's track, or a
 * lane group's: the highest of its lanes), the peak of each pixel bin as an
 * area over a y axis in the track's unit (one scale per track).
 *
 * @returns {{prims: object[], bands: object[], bottom: number}}
 */
function counterBands(d, box, ts, g, measure) {
  const { u, small, rowH, gap } = g;
  const prims = [];
  const bands = [];
  if (!d.k || !d.lanes.length) return { prims, bands, bottom: box.y };
  const top = trackPeaks(d);
  const headH = small + 4 * u;
  const chartH = r2(Math.max(2 * rowH, 2.6 * small));
  let y = box.y;
  for (let c = 0; c < d.k; c++) {
    const t = d.counterTrack[c];
    const unit = d.trackUnits[t] || null;
    const y0 = y + headH;
    const base = y0 + chartH;
    const axis = linearAxis(top[t] > 0 ? [0, top[t]] : [0, 1], [base, y0], { unit, count: 2, pad: 0 });
    const kids = [P("text", { class: "cctviz-counter-title", x: r2(box.x), y: r2(y), dy: "0.8em", "font-size": small }, measure.truncate(bandTitle(d, c, axis.unit), box.w, small) || "\u2026")];
    kids.push(P("rect", { class: "cctviz-counter-bg", x: r2(box.x), y: r2(y0), width: r2(box.w), height: r2(chartH), "data-c": String(c) }));
    const ticksShown = axis.ticks.length > 2 ? [axis.ticks[0], axis.ticks[axis.ticks.length - 1]] : axis.ticks;
    for (const tk of ticksShown) {
      kids.push(P("line", { class: "cctviz-grid", x1: r2(box.x), x2: r2(box.x + box.w), y1: r2(tk.pos), y2: r2(tk.pos) }));
      kids.push(P("text", { class: "cctviz-tick-label", x: r2(box.x - 4 * u), y: r2(tk.pos), dy: "0.35em", "text-anchor": "end", "font-size": small }, measure.truncate(tk.text, box.labelW, small) || "\u2026"));
    }
    kids.push(P("path", { class: "cctviz-counter-area", d: areaPath(d, c, ts, axis, base), "data-c": String(c) }));
    prims.push(P("g", { class: "cctviz-counter", "data-c": String(c), "data-track": d.tracks[t] ?? "" }, null, kids));
    bands.push({ c, top: y0, h: chartH, axis });
    y = base + gap;
  }
  return { prims, bands, bottom: y - gap };
}

/** Tooltip lines of counter band c at bin i: the peak in that pixel. */
export function counterLines(d, c, i) {
  const t = d.counterTrack[c];
  const v = d.counterPeak[c * d.bins + i];
  return [
    { cls: "cctviz-tip-path", text: bandTitle(d, c, "") },
    { text: Number.isFinite(v) ? `peak ${formatValue(v, d.trackUnits[t] || null)}` : "no sample yet" },
    { text: `${formatValue(binTime(d, i), "s")} \u2013 ${formatValue(binTime(d, i + 1), "s")}` },
  ];
}

/**
 * Communication runs widened to `minW` and merged where they then overlap, per
 * (lane, level) row (`_data` orders them so).
 *
 * @returns {{lane: number, level: number, x0: number, x1: number, calls: number, time: number,
 *   waited: number, node: number, t0: number, t1: number}[]}
 */
export function collectiveRuns(d, ts, minW, plot) {
  const out = [];
  let longest = 0;
  for (let j = 0; j < d.c; j++) {
    let x0 = ts.startX(d.collB0[j]);
    let x1 = ts.endX(d.collB1[j]);
    if (x1 - x0 < minW) {
      const mid = (x0 + x1) / 2;
      x0 = Math.max(plot.x, mid - minW / 2);
      x1 = Math.min(plot.x + plot.w, x0 + minW);
      x0 = Math.max(plot.x, x1 - minW);
    }
    const run = out[out.length - 1];
    const t0 = binTime(d, d.collB0[j]);
    const t1 = binTime(d, d.collB1[j]);
    if (run && run.lane === d.collLane[j] && run.level === d.collLevel[j] && x0 < run.x1) {
      run.x1 = Math.max(run.x1, x1);
      run.calls += d.collCalls[j];
      run.time += d.collTime[j];
      run.waited += d.collWaited[j]; // NaN where any is not known
      run.t1 = Math.max(run.t1, t1);
      if (d.collTime[j] > longest) [run.node, longest] = [d.collNode[j], d.collTime[j]];
      continue;
    }
    longest = d.collTime[j];
    out.push({ lane: d.collLane[j], level: d.collLevel[j], x0, x1, calls: d.collCalls[j], time: d.collTime[j], waited: d.collWaited[j], node: d.collNode[j], t0, t1 });
  }
  return out;
}

/** Nice ticks of a segment in the axis' factor, labelled with the decimals of their step. */
function segmentTicks(g, factor, count) {
  const a = g.t0 * factor;
  const b = g.t1 * factor;
  if (!(b > a)) return [];
  return tickMarks(a, b, count, (v) => g.x0 + ((v / factor - g.t0) / (g.t1 - g.t0)) * (g.x1 - g.x0), factor);
}

/** The time axis: one linear axis, or one per segment in a common unit; labels that would overlap dropped. */
function timeAxis(d, ts, u, small, measure, maxX) {
  const [t0, t1] = d.window;
  const segs = ts.segments;
  let unit;
  let all;
  if (segs.length === 1) {
    const g = segs[0];
    const xa = linearAxis([t0, t1], [g.x0, g.x1], { unit: "s", pad: 0, count: Math.max(3, Math.round((g.x1 - g.x0) / (90 * u))) });
    unit = xa.unit;
    all = xa.ticks;
  } else {
    const au = axisUnit(Math.max(Math.abs(t0), Math.abs(t1)), "s");
    unit = au.unit;
    all = segs.flatMap((g) => segmentTicks(g, au.factor, Math.max(1, Math.round((g.x1 - g.x0) / (90 * u)))));
  }
  const kept = [];
  let right = -Infinity;
  for (const t of all) {
    const half = measure.text(t.text, small) / 2;
    if (t.pos - half < right + 4 * u || t.pos + half > maxX) continue;
    kept.push(t);
    right = t.pos + half;
  }
  return { unit, ticks: kept };
}

/** The hatch pattern of waiting, scaled with the font. */
function hatchDefs(u) {
  const s = r2(Math.max(2.5, 4 * u));
  const pattern = P("pattern", { id: HATCH_ID, width: s, height: s, patternUnits: "userSpaceOnUse", patternTransform: "rotate(45)" }, null, [
    P("line", { class: "cctviz-hatch-line", x1: 0, y1: 0, x2: 0, y2: s }),
  ]);
  return P("defs", {}, null, [pattern]);
}

/**
 * The legend: the contexts in the window by colour, then what the neutral and
 * hatched marks mean, flowed in rows across `width`.
 *
 * @returns {{prim: object|null, height: number}}
 */
function legendOf(d, used, width, g, measure) {
  const { u, small } = g;
  const sw = r2(small * 0.9);
  const rowH = small + 6 * u;
  const swatch = (extra, cls = "cctviz-legend-swatch") => [P("rect", { class: cls, x: 0, y: r2((small - sw) / 2), width: sw, height: sw, ...extra })];
  const items = [];
  for (const gi of used.groups) items.push([swatch({ fill: groupColor(d, gi) }), d.groups[gi]]);
  if (used.startup) items.push([swatch({}, "cctviz-legend-swatch cctviz-role-startup"), d.segments.length > 1 ? "outside steps: start-up, end (time axis compressed)" : "outside steps: start-up, end"]);
  const hatched = (cls) => [...swatch({}, `cctviz-legend-swatch ${cls}`), P("rect", { class: "cctviz-hatch", x: 0, y: r2((small - sw) / 2), width: sw, height: sw, fill: HATCH })];
  if (used.waited) items.push([hatched("cctviz-coll-wait"), "waiting in a collective"]);
  if (used.transfer) items.push([swatch({}, "cctviz-legend-swatch cctviz-coll-transfer"), "transfer"]);
  if (used.unknown) items.push([swatch({}, "cctviz-legend-swatch cctviz-coll-call"), "communication, wait not known"]);
  if (used.blocked) items.push([hatched("cctviz-blocked-swatch"), d.blockedLabel || "blocked"]);
  if (d.m) {
    const ofs = new Set(d.markOf);
    const of = ofs.size === 1 && d.markOf[0] ? `${d.markOf[0]}'s ranks` : "its ranks";
    const s = sw / 2;
    const tri = P("path", { class: "cctviz-key-late", d: `M0,${r2(small / 2 - s)}L${r2(sw)},${r2(small / 2 - s)}L${r2(s)},${r2(small / 2 + s)}Z` });
    items.push([[tri], `last of ${of} to arrive at a collective (${d.m})`]);
  }
  if (d.p) items.push([[P("line", { class: "cctviz-key-critical", x1: 0, x2: r2(sw), y1: r2(small / 2), y2: r2(small / 2) })], "critical path (across ranks)"]);
  if (!items.length) return { prim: null, height: 0 };
  const kids = [];
  let x = 0;
  let y = 0;
  const maxText = Math.max(small * 3, width - sw - 4 * u);
  for (const [sws, name] of items) {
    const label = measure.truncate(name, maxText, small) || "\u2026";
    const w = sw + 4 * u + measure.text(label, small) + 12 * u;
    if (x > 0 && x + w - 12 * u > width) {
      x = 0;
      y += rowH;
    }
    kids.push(P("g", { class: "cctviz-legend-item", transform: `translate(${r2(x)},${r2(y)})` }, null, [...sws, P("text", { class: "cctviz-legend-text", x: r2(sw + 4 * u), y: 0, dy: "0.8em", "font-size": small }, label)]));
    x += w;
  }
  return { prim: P("g", { class: "cctviz-legend" }, null, kids), height: y + rowH };
}

/**
 * The critical path as one polyline: each run along the top edge of its lane,
 * a vertical hop where the path crosses to another lane at the same time, a new
 * stroke where it resumes later (the next step).
 *
 * @returns {object[]} primitives (none without a path)
 */
export function criticalPath(d, ts, laneTop, u) {
  if (!d.p) return [];
  const parts = [];
  let lastX = -Infinity;
  const y = (k) => laneTop(k) - 1.5 * u;
  for (let j = 0; j < d.p; j++) {
    const x0 = ts.toX(d.window[0] + d.pathX0[j]);
    const x1 = ts.toX(d.window[0] + d.pathX1[j]);
    const yy = r2(y(d.pathLane[j]));
    parts.push(Math.abs(x0 - lastX) <= 1.5 * u ? `L${r2(x0)},${yy}` : `M${r2(x0)},${yy}`);
    parts.push(`L${r2(Math.max(x1, x0 + 0.5 * u))},${yy}`);
    lastX = Math.max(x1, x0 + 0.5 * u);
  }
  return [P("path", { class: "cctviz-critical", d: parts.join(""), "data-runs": String(d.p) })];
}

/**
 * Build the scene of a TimelineView.
 *
 * @param {import("./data.js").TimelineData} d decoded `_data`
 * @param {object} settings see {@link DEFAULT_SETTINGS}
 * @param {{text: Function, truncate: Function}} [measure]
 * @returns {object} `frame`, `width`, `height`, `scale`, `plot` ({x, y, w, h}), `lanes` (lane
 *   backgrounds and labels), `spans` (rectangles), `labels` (names on them), `colls`
 *   (communication runs: their geometry and sums), `collPrims`, `blockedPrims`, `marks`,
 *   `axes`, `grid`, `brush`, `legend`, `summary`, `title`, `footer`, `empty`, `counters`
 *   (counter bands), `bands` ({c, top, h, axis} per band), `time` (seconds <-> figure x,
 *   bins -> x: {@link timeScale}), `laneTop`, `rowH`, `caption` and `notes` (what an export
 *   could not hold at its font size).
 */
export function timelineScene(d, settings, measure = TABLE_MEASURE) {
  const st = { ...DEFAULT_SETTINGS, ...settings };
  const { font, small } = textSizes(st.fontSize, st.fit);
  const u = font / 12;
  const margin = 14 * u;
  const sel = new Set(st.highlight ? (st.selection || []).map(Number) : []);
  const W0 = st.width || 900 * u;
  // the lane labels' gutter; the plot takes the rest, but never less than a few labels' room
  const labelW = Math.min(140 * u, Math.max(30 * u, ...d.lanes.flatMap((_, k) => laneText(d, k).map((t) => measure.text(t, small)))));
  const plotX = margin + labelW + 8 * u;
  const W = Math.max(W0, plotX + 60 * u + margin);
  const plotW = W - plotX - margin;
  const inner = W - 2 * margin;

  let top = margin;
  let title = null;
  if (st.title) {
    title = P("text", { class: "cctviz-title", x: r2(margin), y: r2(top), dy: "0.8em", "font-size": r2(font * 1.2), "font-weight": "700" }, measure.truncate(String(st.title), inner, font * 1.2, 700));
    top += font * 1.2 + 10 * u;
  }

  const rowH = r2(Math.max(12 * u, small * 1.4));
  const laneGap = 6 * u;
  const laneH = d.levels * rowH;
  const gap = d.segments.length > 1 ? 10 * u : 0;
  const ts = timeScale(d, plotX, plotW, gap);
  const minW = 3 * u; // the narrowest a communication call is drawn

  // what the window holds: the legend names it
  const used = { groups: [], startup: false, waited: false, transfer: false, unknown: false, blocked: false };
  const groupSeen = new Set();
  for (let i = 0; i < d.n; i++) {
    const k = d.node[i];
    const role = d.nodeRole[k];
    if (role === ROLE.context && d.nodeGroup[k] >= 0) groupSeen.add(d.nodeGroup[k]);
    else if (role === ROLE.startup) used.startup = true;
    if (d.blocked[i]) used.blocked = true;
  }
  used.groups = [...groupSeen].sort((a, b) => a - b);
  const colls = collectiveRuns(d, ts, minW, { x: plotX, w: plotW });
  for (const run of colls) {
    if (!Number.isFinite(run.waited)) used.unknown = true;
    else {
      if (run.waited > 0) used.waited = true;
      if (run.time > run.waited) used.transfer = true;
    }
  }
  let legend = null;
  if (st.legends) {
    const lg = legendOf(d, used, inner, { u, small }, measure);
    if (lg.prim) {
      lg.prim.attrs.transform = `translate(${r2(margin)},${r2(top)})`;
      legend = lg.prim;
      top += lg.height + 4 * u;
    }
  }
  const summary = [];
  if (d.summary) {
    const lh = small * 1.25;
    for (const line of wrapText(d.summary, inner, small, measure)) {
      summary.push(P("text", { class: "cctviz-summary", x: r2(margin), y: r2(top), dy: "0.8em", "font-size": small }, line));
      top += lh;
    }
    top += 6 * u;
  }
  top += 4 * u; // room for the marks above the first lane

  const plotY = top;
  // a group lane with a band (its ranks' communication share) is a row taller
  const banded = new Set(d.bandBins ? Array.from(d.bandLane) : []);
  const tops = [];
  let at = plotY;
  for (let k = 0; k < d.lanes.length; k++) {
    tops.push(at);
    at += laneH + (banded.has(k) ? rowH : 0) + laneGap;
  }
  const laneTop = (k) => (k < tops.length ? tops[k] : at);
  const lanesH = Math.max(rowH, at - plotY - laneGap);

  // the axis and what follows it, to see whether the counter bands fit a given height
  const tailH = 6 * u + 6 * u + small + 6 * u + font + 4 * u + (st.fit ? 0 : small + 6 * u) + margin;
  let bands = counterBands(d, { x: plotX, y: plotY + lanesH + 2 * laneGap, w: plotW, labelW }, ts, { u, small, rowH, gap: laneGap }, measure);
  const folded = [];
  if (st.fit && st.height && bands.prims.length && bands.bottom + tailH > st.height) {
    folded.push(`${bands.prims.length} counter band${bands.prims.length === 1 ? "" : "s"}`);
    bands = { prims: [], bands: [], bottom: plotY + lanesH };
  }
  const plotH = bands.prims.length ? bands.bottom - plotY : lanesH;
  const plot = { x: plotX, y: plotY, w: plotW, h: plotH };

  const lanes = [];
  const perLane = new Int32Array(d.lanes.length);
  for (let i = 0; i < d.n; i++) if (d.lane[i] < perLane.length) perLane[d.lane[i]] += 1;
  d.lanes.forEach((name, k) => {
    const y = laneTop(k);
    const h = laneH + (banded.has(k) ? rowH : 0);
    lanes.push(P("rect", { class: "cctviz-lane-bg", x: r2(plotX), y: r2(y), width: r2(plotW), height: r2(h), role: "listitem", "aria-label": laneLabel(d, k, perLane[k] || 0) }));
    const key = d.laneKey[k];
    const attrs = { class: `cctviz-lane-label${key ? " cctviz-lane-group" : ""}`, x: r2(plotX - 6 * u), y: r2(y + Math.min(laneH, rowH) / 2), dy: "0.35em", "text-anchor": "end", "font-size": small, "data-lane": String(k) };
    if (key) Object.assign(attrs, { "data-key": key, role: "button", "aria-label": `Expand the group of ${d.laneMembers[k]} ranks` });
    const [first, second] = laneText(d, k);
    lanes.push(P("text", attrs, measure.truncate(first, labelW, small) || "\u2026"));
    const under = { class: "cctviz-lane-sublabel", x: attrs.x, dy: "0.35em", "text-anchor": "end", "font-size": small };
    if (second && d.levels > 1) lanes.push(P("text", { ...under, y: r2(y + rowH * 1.5) }, measure.truncate(second, labelW, small) || "\u2026"));
    if (banded.has(k)) lanes.push(P("text", { ...under, y: r2(y + laneH + rowH / 2) }, measure.truncate("in comm.", labelW, small)));
  });
  const spreads = spreadBands(d, ts, laneTop, { laneH, rowH, u, banded });

  // rectangles, their names where they fit, the blocked ones hatched
  const spans = [];
  const labels = [];
  const blockedPrims = [];
  const pad = 2.5 * u;
  const cut = distinctCutter(d.names, measure, small);
  const minLabel = measure.text("Wi\u2026", small) + 2 * pad;
  const h = r2(rowH - 1 * u);
  for (let i = 0; i < d.n; i++) {
    const k = d.node[i];
    const id = d.nodeId[k];
    const role = roleOf(d, i);
    const cover = d.cover[i];
    const x = ts.startX(d.b0[i]);
    const w = Math.max(ts.endX(d.b1[i]) - x, 0.5);
    const y = laneTop(d.lane[i]) + d.level[i] * rowH;
    const fill = nodeFill(d, k);
    spans.push(
      P("rect", {
        class: `cctviz-span${ROLE_CLASS[role] || ""}${sel.has(id) ? " selected" : ""}`,
        x: r2(x),
        y: r2(y),
        width: r2(w),
        height: h,
        fill,
        "fill-opacity": cover >= 0.999 ? null : r2(0.35 + 0.65 * cover),
        "data-i": String(i),
        "data-node": String(id),
      }),
    );
    if (d.blocked[i]) blockedPrims.push(P("rect", { class: "cctviz-blocked", x: r2(x), y: r2(y), width: r2(w), height: h, fill: HATCH }));
    if (role === ROLE.comm || w < minLabel || cover < 0.5) continue;
    const text = cut(d.names[k] ?? "", w - 2 * pad);
    if (!named(text, d.names[k])) continue;
    const ink = fill ? (textColorOn(fill) === "#111111" ? " cctviz-ink-dark" : " cctviz-ink-light") : "";
    labels.push(P("text", { class: `cctviz-span-label${ink}`, x: r2(x + pad), y: r2(y + h / 2), dy: "0.35em", "font-size": small }, text));
  }

  // communication: at least minW wide, the waiting part hatched, then the transfer
  const collPrims = [];
  colls.forEach((run, j) => {
    const y = laneTop(run.lane) + run.level * rowH;
    const w = run.x1 - run.x0;
    const id = d.nodeId[run.node];
    const kids = [];
    if (Number.isFinite(run.waited) && run.time > 0) {
      const ww = (w * Math.min(Math.max(run.waited / run.time, 0), 1));
      if (ww > 0) {
        kids.push(P("rect", { class: "cctviz-coll-wait", x: r2(run.x0), y: r2(y), width: r2(ww), height: h }));
        kids.push(P("rect", { class: "cctviz-hatch", x: r2(run.x0), y: r2(y), width: r2(ww), height: h, fill: HATCH }));
      }
      if (w - ww > 0) kids.push(P("rect", { class: "cctviz-coll-transfer", x: r2(run.x0 + ww), y: r2(y), width: r2(w - ww), height: h }));
      const room = w - ww - 2 * pad;
      const text = room >= minLabel - 2 * pad ? cut(d.names[run.node] ?? "", room) : "";
      if (named(text, d.names[run.node])) kids.push(P("text", { class: "cctviz-coll-label", x: r2(run.x0 + ww + pad), y: r2(y + h / 2), dy: "0.35em", "font-size": small }, text));
    } else {
      kids.push(P("rect", { class: "cctviz-coll-call", x: r2(run.x0), y: r2(y), width: r2(w), height: h }));
      const text = w >= minLabel ? cut(d.names[run.node] ?? "", w - 2 * pad) : "";
      if (named(text, d.names[run.node])) kids.push(P("text", { class: "cctviz-coll-label", x: r2(run.x0 + pad), y: r2(y + h / 2), dy: "0.35em", "font-size": small }, text));
    }
    collPrims.push(P("g", { class: `cctviz-coll${sel.has(id) ? " selected" : ""}`, "data-j": String(j), "data-node": String(id) }, null, kids));
  });

  const marks = [];
  const s = 4 * u;
  for (let j = 0; j < d.m; j++) {
    const x = ts.toX(d.window[0] + d.markX[j]);
    const y = laneTop(d.markLane[j]);
    marks.push(P("path", { class: "cctviz-late", d: `M${r2(x - s)},${r2(y - s)}L${r2(x + s)},${r2(y - s)}L${r2(x)},${r2(y + s)}Z`, "data-j": String(j), "data-rank": String(d.markRank[j]) }));
  }

  // the critical path: along the top of each lane it runs on, a hop between lanes
  const critical = criticalPath(d, ts, laneTop, u);

  let brush = null;
  const [t0, t1] = d.window;
  if (Array.isArray(st.brush) && st.brush.length === 2) {
    const a = Math.max(t0, Math.min(st.brush[0], st.brush[1]));
    const b = Math.min(t1, Math.max(st.brush[0], st.brush[1]));
    if (b > a) brush = P("rect", { class: "cctviz-brushed", x: r2(ts.toX(a)), y: r2(plotY - 2 * u), width: r2(Math.max(ts.toX(b) - ts.toX(a), 1)), height: r2(plotH + 4 * u) });
  }

  // time axis (seconds from the timeline's start) in one display unit, broken after a start-up drawn apart
  const axisY = plotY + plotH + 6 * u;
  const xa = timeAxis(d, ts, u, small, measure, W - 2 * u);
  const axes = ts.segments.map((g) => P("line", { class: "cctviz-tick", x1: r2(g.x0), x2: r2(g.x1), y1: r2(axisY), y2: r2(axisY) }));
  const grid = [];
  for (let k = 1; k < ts.segments.length; k++) {
    const a = ts.segments[k - 1];
    const b = ts.segments[k];
    grid.push(P("rect", { class: "cctviz-break", x: r2(a.x1), y: r2(plotY - 2 * u), width: r2(b.x0 - a.x1), height: r2(plotH + 4 * u) }));
    for (const x of [a.x1, b.x0]) axes.push(P("line", { class: "cctviz-tick", x1: r2(x - 2 * u), x2: r2(x + 2 * u), y1: r2(axisY + 3 * u), y2: r2(axisY - 3 * u) }));
  }
  for (const t of xa.ticks) {
    const x = r2(t.pos);
    grid.push(P("line", { class: "cctviz-grid", x1: x, x2: x, y1: r2(plotY), y2: r2(plotY + plotH) }));
    axes.push(P("line", { class: "cctviz-tick", x1: x, x2: x, y1: r2(axisY), y2: r2(axisY + 4 * u) }));
    axes.push(P("text", { class: "cctviz-tick-label", x, y: r2(axisY + 6 * u), dy: "0.8em", "text-anchor": "middle", "font-size": small }, t.text));
  }
  const axisTitle = `time since start${xa.unit ? ` [${xa.unit}]` : ""}`;
  const titleY = axisY + 6 * u + small + 6 * u;
  axes.push(P("text", { class: "cctviz-axis-title", x: r2(plotX + plotW / 2), y: r2(titleY), dy: "0.8em", "text-anchor": "middle", "font-size": font }, axisTitle));
  let bottom = titleY + font + 4 * u;
  const footer = [];
  if (!st.fit) {
    const line = d.note || `${d.events.toLocaleString("en-US")} of ${d.eventsTotal.toLocaleString("en-US")} events in the window; ${d.n.toLocaleString("en-US")} rectangles (${d.bins} bins)`;
    footer.push(P("text", { class: "cctviz-note", x: r2(margin), y: r2(bottom + 2 * u), dy: "0.8em", "font-size": small }, measure.truncate(line, inner, small) || "\u2026"));
    bottom += small + 6 * u;
  }
  const empty = d.lanes.length ? null : P("text", { class: "cctviz-empty", x: r2(plotX + 12 * u), y: r2(plotY + 14 * u), "font-size": font }, "No lanes to show");

  // what an export could not hold: the caption under the figure (and the root's data-folded)
  const { caption, notes, height } = captionUnder(st, { small, margin }, measure, W, bottom, bottom + margin, folded);
  const { scale, frame } = flatFrame(st, W, height);
  return {
    kind: "timeline",
    fontSize: font,
    fontFamily: FONT_FAMILY,
    width: W,
    height,
    scale,
    frame,
    style: st.style || "",
    background: st.background,
    defs: hatchDefs(u),
    title,
    legend,
    summary,
    plot,
    lanes,
    spreads,
    spans,
    labels,
    blockedPrims,
    colls,
    collPrims,
    counters: bands.prims,
    bands: bands.bands,
    marks,
    critical,
    grid,
    axes,
    brush,
    footer,
    empty,
    caption,
    notes,
    axis: xa,
    time: ts,
    laneTop: d.lanes.map((_, k) => laneTop(k)),
    rowH,
  };
}
