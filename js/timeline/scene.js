// The TimelineView's scene: a pure function from the decoded `_data`, plain
// settings and a text measure to lanes (one per profile, the levels stacked),
// rectangles coloured by the node's kind, a time axis in one display unit,
// late-rank markers of collectives, the brushed window and a legend of kinds,
// as prims. No DOM: draw.js turns it into SVG, in the notebook and in export.

import { linearAxis } from "../axis.js";
import { r2 } from "../dom.js";
import { formatValue } from "../format.js";
import { FONT_FAMILY, TABLE_MEASURE } from "../measure.js";
import { CATEGORY_COLORS, OTHER_COLOR } from "../profiles/scene.js";
import { P, flatFrame } from "../scene-kit.js";

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

/** The colour of kind index k. */
export const kindColor = (k) => (k >= 0 && k < CATEGORY_COLORS.length ? CATEGORY_COLORS[k] : OTHER_COLOR);

/** Tooltip lines ({text, cls?}) of rectangle i. */
export function rectLines(d, i) {
  const w = (d.window[1] - d.window[0]) / d.bins;
  const t0 = d.window[0] + d.b0[i] * w;
  const t1 = d.window[0] + d.b1[i] * w;
  const k = d.node[i];
  const lines = [
    { cls: "cctviz-tip-path", text: d.names[k] ?? "?" },
    { text: `${d.lanes[d.lane[i]] ?? ""} \u00b7 level ${d.level[i]} \u00b7 ${d.kinds[d.nodeKind[k]] ?? ""}` },
    { text: `${formatValue(t0, "s")} \u2013 ${formatValue(t1, "s")} (${formatValue(t1 - t0, "s")})` },
  ];
  if (d.cover[i] < 0.999) lines.push({ cls: "cctviz-tip-note", text: `covers ${Math.round(d.cover[i] * 100)}% of these pixels` });
  return lines;
}

/** Tooltip lines of marker j. */
export function markLines(d, j) {
  return [
    { cls: "cctviz-tip-path", text: d.names[d.markNode[j]] ?? "collective" },
    { text: `last to arrive: ${d.lanes[d.markLane[j]] ?? `rank ${d.markRank[j]}`}` },
    { text: `late by ${formatValue(d.markLateBy[j], "s")} at ${formatValue(d.window[0] + d.markX[j], "s")}` },
  ];
}

/** The accessible name of lane k: its label, the rectangles shown, the levels. */
function laneLabel(d, k, n) {
  const [t0, t1] = d.window;
  return `${d.lanes[k]}: ${n} rectangle${n === 1 ? "" : "s"} over ${d.levels} level${d.levels === 1 ? "" : "s"}, ${formatValue(t0, "s")} \u2013 ${formatValue(t1, "s")}`;
}

/** The label of counter band c: lane and track, and the axis' display unit. */
export function bandTitle(d, c, axisUnit) {
  const lane = d.lanes[d.counterLane[c]] ?? "";
  const track = d.tracks[d.counterTrack[c]] ?? "";
  return `${lane} \u00b7 ${track}${axisUnit ? ` [${axisUnit}]` : ""}`;
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

/** The area of band c's peaks as a step path (bins with no value yet are left open). */
function areaPath(d, c, x0, px, axis, base) {
  const parts = [];
  let open = false;
  let prev = 0;
  for (let i = 0; i <= d.bins; i++) {
    const v = i < d.bins ? d.counterPeak[c * d.bins + i] : NaN;
    const x = r2(x0 + i * px);
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
  return parts.join("");
}

/**
 * Counter bands under the lanes: one per (lane, track), the peak of each pixel bin
 * as an area over a y axis in the track's unit (one scale per track).
 *
 * @returns {{prims: object[], bands: object[], bottom: number}}
 */
function counterBands(d, box, g, measure) {
  const { u, small, rowH, gap } = g;
  const prims = [];
  const bands = [];
  if (!d.k || !d.lanes.length) return { prims, bands, bottom: box.y };
  const top = trackPeaks(d);
  const headH = small + 4 * u;
  const chartH = 3 * rowH;
  const px = box.w / d.bins;
  let y = box.y;
  for (let c = 0; c < d.k; c++) {
    const t = d.counterTrack[c];
    const unit = d.trackUnits[t] || null;
    const y0 = y + headH;
    const base = y0 + chartH;
    const axis = linearAxis(top[t] > 0 ? [0, top[t]] : [0, 1], [base, y0], { unit, count: 2, pad: 0 });
    const kids = [P("text", { class: "cctviz-counter-title", x: r2(box.x), y: r2(y), dy: "0.8em", "font-size": small }, measure.truncate(bandTitle(d, c, axis.unit), box.w, small) || "\u2026")];
    kids.push(P("rect", { class: "cctviz-counter-bg", x: r2(box.x), y: r2(y0), width: r2(box.w), height: r2(chartH), "data-c": String(c) }));
    for (const tk of axis.ticks) {
      kids.push(P("line", { class: "cctviz-grid", x1: r2(box.x), x2: r2(box.x + box.w), y1: r2(tk.pos), y2: r2(tk.pos) }));
      kids.push(P("text", { class: "cctviz-tick-label", x: r2(box.x - 4 * u), y: r2(tk.pos), dy: "0.35em", "text-anchor": "end", "font-size": small }, measure.truncate(tk.text, box.labelW, small) || "\u2026"));
    }
    kids.push(P("path", { class: "cctviz-counter-area", d: areaPath(d, c, box.x, px, axis, base), "data-c": String(c) }));
    prims.push(P("g", { class: "cctviz-counter", "data-c": String(c), "data-track": d.tracks[t] ?? "" }, null, kids));
    bands.push({ c, top: y0, h: chartH, axis });
    y = base + gap;
  }
  return { prims, bands, bottom: y - gap };
}

/** Tooltip lines of counter band c at bin i: the peak in that pixel. */
export function counterLines(d, c, i) {
  const t = d.counterTrack[c];
  const w = (d.window[1] - d.window[0]) / d.bins;
  const v = d.counterPeak[c * d.bins + i];
  const a = d.window[0] + i * w;
  return [
    { cls: "cctviz-tip-path", text: bandTitle(d, c, "") },
    { text: Number.isFinite(v) ? `peak ${formatValue(v, d.trackUnits[t] || null)}` : "no sample yet" },
    { text: `${formatValue(a, "s")} \u2013 ${formatValue(a + w, "s")}` },
  ];
}

/**
 * Build the scene of a TimelineView.
 *
 * @param {import("./data.js").TimelineData} d decoded `_data`
 * @param {object} settings see {@link DEFAULT_SETTINGS}
 * @param {{text: Function, truncate: Function}} [measure]
 * @returns {object} `frame`, `width`, `height`, `scale`, `plot` ({x, y, w, h}), `lanes` (lane
 *   backgrounds and labels), `spans` (rectangles), `marks`, `axes`, `grid`, `brush`,
 *   `legend`, `title`, `empty`, `counters` (counter bands), `bands` ({c, top, h, axis} per band), `time` ({toX, toT}: seconds <-> figure x), `laneTop`, `rowH`.
 */
export function timelineScene(d, settings, measure = TABLE_MEASURE) {
  const st = { ...DEFAULT_SETTINGS, ...settings };
  const font = st.fontSize;
  const u = font / 12;
  const small = r2(font * (11 / 12));
  const margin = 14 * u;
  const sel = new Set(st.highlight ? (st.selection || []).map(Number) : []);
  const W = st.width || 900 * u;

  let top = margin;
  let title = null;
  if (st.title) {
    title = P("text", { class: "cctviz-title", x: r2(margin), y: r2(top), dy: "0.8em", "font-size": r2(font * 1.2), "font-weight": "700" }, measure.truncate(String(st.title), W - 2 * margin, font * 1.2, 700));
    top += font * 1.2 + 10 * u;
  }

  // legend of kinds: swatches and names in rows across the width
  let legend = null;
  if (st.legends && d.kinds.length && d.n) {
    const kids = [];
    let x = 0;
    let y = 0;
    const sw = 10 * u;
    const rowH = small + 6 * u;
    const used = new Set();
    for (let i = 0; i < d.n; i++) used.add(d.nodeKind[d.node[i]]);
    kids.push(P("text", { class: "cctviz-legend-title", x: 0, y: 0, dy: "0.8em", "font-size": small, "font-weight": "700" }, "kind"));
    x = measure.text("kind", small, 700) + 10 * u;
    d.kinds.forEach((name, k) => {
      if (!used.has(k)) return;
      const label = measure.truncate(name, 160 * u, small) || "\u2026";
      const w = sw + 4 * u + measure.text(label, small) + 12 * u;
      if (x + w > W - 2 * margin && x > 0) {
        x = 0;
        y += rowH;
      }
      kids.push(P("rect", { class: "cctviz-legend-swatch", x: r2(x), y: r2(y + 1 * u), width: r2(sw), height: r2(sw), fill: kindColor(k) }));
      kids.push(P("text", { class: "cctviz-legend-text", x: r2(x + sw + 4 * u), y: r2(y), dy: "0.8em", "font-size": small }, label));
      x += w;
    });
    legend = P("g", { class: "cctviz-legend", transform: `translate(${r2(margin)},${r2(top)})` }, null, kids);
    top += y + rowH + 6 * u;
  }

  // lanes: labels in a left gutter, levels stacked
  const labelW = Math.min(140 * u, Math.max(30 * u, ...d.lanes.map((s) => measure.text(s, small))));
  const plotX = margin + labelW + 8 * u;
  const plotW = Math.max(120 * u, W - plotX - margin);
  const rowH = 12 * u;
  const laneGap = 6 * u;
  const laneH = d.levels * rowH;
  const plotY = top;
  const laneTop = (k) => plotY + k * (laneH + laneGap);
  const lanesH = Math.max(rowH, d.lanes.length * (laneH + laneGap) - laneGap);
  const [t0, t1] = d.window;
  const bands = counterBands(d, { x: plotX, y: plotY + lanesH + 2 * laneGap, w: plotW, labelW }, { u, small, rowH, gap: laneGap }, measure);
  const plotH = bands.prims.length ? bands.bottom - plotY : lanesH;
  const plot = { x: plotX, y: plotY, w: plotW, h: plotH };

  const toX = (t) => plotX + ((t - t0) / (t1 - t0)) * plotW;
  const toT = (x) => t0 + ((x - plotX) / plotW) * (t1 - t0);

  const lanes = [];
  const perLane = new Int32Array(d.lanes.length);
  for (let i = 0; i < d.n; i++) if (d.lane[i] < perLane.length) perLane[d.lane[i]] += 1;
  d.lanes.forEach((name, k) => {
    const y = laneTop(k);
    lanes.push(P("rect", { class: "cctviz-lane-bg", x: r2(plotX), y: r2(y), width: r2(plotW), height: r2(laneH), role: "listitem", "aria-label": laneLabel(d, k, perLane[k] || 0) }));
    lanes.push(P("text", { class: "cctviz-lane-label", x: r2(plotX - 6 * u), y: r2(y + Math.min(laneH, rowH) / 2), dy: "0.35em", "text-anchor": "end", "font-size": small, "data-lane": String(k) }, measure.truncate(name, labelW, small) || "\u2026"));
  });

  const spans = [];
  const px = plotW / d.bins;
  for (let i = 0; i < d.n; i++) {
    const k = d.node[i];
    const id = d.nodeId[k];
    const selected = sel.has(id);
    const cover = d.cover[i];
    spans.push(
      P("rect", {
        class: selected ? "cctviz-span selected" : "cctviz-span",
        x: r2(plotX + d.b0[i] * px),
        y: r2(laneTop(d.lane[i]) + d.level[i] * rowH),
        width: r2(Math.max((d.b1[i] - d.b0[i]) * px, 0.5)),
        height: r2(rowH - 1 * u),
        fill: kindColor(d.nodeKind[k]),
        "fill-opacity": cover >= 0.999 ? null : r2(0.35 + 0.65 * cover),
        "data-i": String(i),
        "data-node": String(id),
      }),
    );
  }

  const marks = [];
  const s = 4 * u;
  for (let j = 0; j < d.m; j++) {
    const x = toX(t0 + d.markX[j]);
    const y = laneTop(d.markLane[j]);
    marks.push(P("path", { class: "cctviz-late", d: `M${r2(x - s)},${r2(y - s)}L${r2(x + s)},${r2(y - s)}L${r2(x)},${r2(y + s)}Z`, "data-j": String(j), "data-rank": String(d.markRank[j]) }));
  }

  let brush = null;
  if (Array.isArray(st.brush) && st.brush.length === 2) {
    const a = Math.max(t0, Math.min(st.brush[0], st.brush[1]));
    const b = Math.min(t1, Math.max(st.brush[0], st.brush[1]));
    if (b > a) brush = P("rect", { class: "cctviz-brushed", x: r2(toX(a)), y: r2(plotY - 2 * u), width: r2(Math.max(toX(b) - toX(a), 1)), height: r2(plotH + 4 * u) });
  }

  // time axis (seconds from the timeline's start) in one display unit
  const axisY = plotY + plotH + 6 * u;
  const xa = linearAxis([t0, t1], [plotX, plotX + plotW], { unit: "s", pad: 0, count: Math.max(3, Math.round(plotW / (90 * u))) });
  const axes = [P("line", { class: "cctviz-tick", x1: r2(plotX), x2: r2(plotX + plotW), y1: r2(axisY), y2: r2(axisY) })];
  const grid = [];
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
  const notes = [];
  const line = d.note || `${d.events.toLocaleString("en-US")} of ${d.eventsTotal.toLocaleString("en-US")} events in the window; ${d.n.toLocaleString("en-US")} rectangles (${d.bins} bins)${d.m ? `; red marks: the last rank to arrive at a collective (${d.m})` : ""}`;
  notes.push(P("text", { class: "cctviz-note", x: r2(margin), y: r2(bottom + 2 * u), dy: "0.8em", "font-size": small }, measure.truncate(line, W - 2 * margin, small) || "\u2026"));
  bottom += small + 6 * u;
  const empty = d.lanes.length ? null : P("text", { class: "cctviz-empty", x: r2(plotX + 12 * u), y: r2(plotY + 14 * u), "font-size": font }, "No lanes to show");

  const width = W;
  const height = bottom + margin;
  const { scale, frame } = flatFrame(st, width, height);
  return {
    kind: "timeline",
    fontSize: font,
    fontFamily: FONT_FAMILY,
    width,
    height,
    scale,
    frame,
    style: st.style || "",
    background: st.background,
    title,
    legend,
    plot,
    lanes,
    spans,
    counters: bands.prims,
    bands: bands.bands,
    marks,
    grid,
    axes,
    brush,
    notes,
    empty,
    axis: xa,
    time: { toX, toT },
    laneTop: d.lanes.map((_, k) => laneTop(k)),
    rowH,
  };
}
