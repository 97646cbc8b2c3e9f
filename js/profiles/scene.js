// The ProfilesView's scene: a pure function from the decoded `_data`, plain
// settings and a text measure to a scatter plot of profiles as prims (dots,
// axes with ticks in one unit per axis, legend, notes) plus the dots'
// positions for interaction. No DOM: draw.js turns it into SVG, in the
// notebook and in the exporter alike.

import { interpolateViridis } from "d3-scale-chromatic";
import { linearAxis } from "../axis.js";
import { MISSING_COLOR, sequentialScale } from "../kit/color.js";
import { r2 } from "../dom.js";
import { formatValue } from "../format.js";
import { FONT_FAMILY, TABLE_MEASURE } from "../measure.js";
import { P, flatFrame, textSizes } from "../scene-kit.js";

/** The text measure of the bundled font: the same in the notebook and in export. */

/**
 * Okabe & Ito's colour-blind-safe qualitative palette (black left out: it
 * vanishes on a dark page), most distinct first; the eighth is a mid grey.
 * Categories past it share {@link OTHER_COLOR}.
 */
export const CATEGORY_COLORS = Object.freeze(["#0072b2", "#e69f00", "#009e73", "#d55e00", "#56b4e9", "#cc79a7", "#f0e442", "#7f7f7f"]);
/** Colour of categories past the palette. */
export const OTHER_COLOR = "#c4c4c4";
/** The sequential ramp (viridis without its palest end, which vanishes on white). */
export const rampColor = (t) => interpolateViridis(0.9 * Math.max(0, Math.min(1, t)));

/** Settings of a scene (plain values; every field has a default). */
export const DEFAULT_SETTINGS = Object.freeze({
  selection: [], // selected profile ids
  fontSize: 12, // figure units (px on screen, pt in export)
  width: null, // the figure's width to fill (null: natural)
  height: null, // export: height to fit (null: natural)
  fit: false, // export: scale the figure to width/height
  legends: true,
  highlight: true, // draw the selection (others dimmed)
  title: "",
  background: null,
  style: "",
});

/** Dot radius for n dots, in font units (u = fontSize / 12). */
export function dotRadius(n) {
  return n <= 60 ? 5 : n <= 400 ? 4 : n <= 2000 ? 3 : 2.2;
}

/** Colour encoding of the data: {fill(i), kind, ...}. */
export function colorEncoding(d) {
  if (d.colorKind === "category") {
    const fill = (i) => {
      const c = d.category[i];
      if (!(c >= 0)) return MISSING_COLOR;
      return c < CATEGORY_COLORS.length ? CATEGORY_COLORS[c] : OTHER_COLOR;
    };
    return { kind: "category", fill };
  }
  if (d.colorKind === "numeric") {
    let lo = Infinity;
    let hi = -Infinity;
    for (const v of d.color) {
      if (Number.isFinite(v)) {
        lo = Math.min(lo, v);
        hi = Math.max(hi, v);
      }
    }
    const scale = sequentialScale(lo <= hi ? [lo, hi] : null, { interpolator: rampColor });
    return { kind: "numeric", scale, fill: (i) => scale.color(d.color[i]) };
  }
  return { kind: "none", fill: () => CATEGORY_COLORS[0] };
}

/** The colour value of dot i as text ("" without colour). */
export function colorText(d, i) {
  if (d.colorKind === "category") {
    const c = d.category[i];
    return c >= 0 && c < d.categories.length ? d.categories[c] : "n/a";
  }
  if (d.colorKind === "numeric") return formatValue(d.color[i], d.colorUnit);
  return "";
}

/** Axis title: name [unit], and the projection's note ("59% of variance"). */
export function axisTitle(axis, unit) {
  let t = axis.name || axis.label;
  if (unit) t += ` [${unit}]`;
  if (axis.note) t += ` \u00b7 ${axis.note}`;
  return t;
}

/** Accessible label of dot i: its label first, then the values shown. */
export function dotLabel(d, i) {
  const parts = [d.label[i], `${d.xAxis.name} ${formatValue(d.x[i], d.xAxis.unit)}`, `${d.yAxis.name} ${formatValue(d.y[i], d.yAxis.unit)}`];
  if (d.colorKind !== "none") parts.push(`${d.colorLabel} ${colorText(d, i)}`);
  return parts.join(", ");
}

/** Tooltip lines ({text, cls?}) of dot i. */
export function tooltipLines(d, i) {
  const lines = [{ cls: "cctviz-tip-path", text: d.label[i] }];
  lines.push({ text: `${d.xAxis.name}: ${formatValue(d.x[i], d.xAxis.unit)}` });
  lines.push({ text: `${d.yAxis.name}: ${formatValue(d.y[i], d.yAxis.unit)}` });
  if (d.colorKind !== "none") lines.push({ text: `${d.colorLabel}: ${colorText(d, i)}` });
  lines.push({ cls: "cctviz-tip-note", text: `profile ${d.id[i]}` });
  return lines;
}

/**
 * Profile ids of the dots whose centre lies in `rect` ({x0, y0, x1, y1}, the
 * scene's coordinates; either corner order), in row order.
 *
 * @param {{id: ArrayLike<number>, x: number[], y: number[]}} points a scene's `points`
 * @param {{x0: number, y0: number, x1: number, y1: number}} rect
 * @returns {number[]}
 */
export function profilesInRect(points, rect) {
  const x0 = Math.min(rect.x0, rect.x1);
  const x1 = Math.max(rect.x0, rect.x1);
  const y0 = Math.min(rect.y0, rect.y1);
  const y1 = Math.max(rect.y0, rect.y1);
  const out = [];
  for (let i = 0; i < points.x.length; i++) {
    const x = points.x[i];
    const y = points.y[i];
    if (x >= x0 && x <= x1 && y >= y0 && y <= y1) out.push(points.id[i]);
  }
  return out;
}

/** Legend of the colour encoding as {prims, width, height} (a column right of the plot). */
function legend(d, enc, m, measure, maxW) {
  const S = m.small;
  const u = m.u;
  const tw = (t, w = 400) => measure.text(t, S, w);
  const text = (x, y, t, extra = {}) => P("text", { class: "cctviz-legend-text", x: r2(x), y: r2(y), "font-size": S, ...extra }, t);
  const titleText = measure.truncate(d.colorLabel || "colour", maxW, S, 700) || "\u2026";
  const kids = [P("text", { class: "cctviz-legend-title", x: 0, y: 0, dy: "0.8em", "font-size": S, "font-weight": "700" }, titleText)];
  let width = tw(titleText, 700);
  let y = 18 * u;
  if (enc.kind === "category") {
    const counts = new Map();
    let missing = 0;
    for (let i = 0; i < d.n; i++) {
      const c = d.category[i];
      if (c >= 0) counts.set(c, (counts.get(c) || 0) + 1);
      else missing++;
    }
    const rows = [];
    const shown = Math.min(d.categories.length, CATEGORY_COLORS.length);
    for (let c = 0; c < shown; c++) if (counts.get(c)) rows.push([CATEGORY_COLORS[c], d.categories[c], counts.get(c)]);
    let rest = 0;
    let restCats = 0;
    for (let c = shown; c < d.categories.length; c++) {
      if (counts.get(c)) {
        rest += counts.get(c);
        restCats++;
      }
    }
    if (restCats) rows.push([OTHER_COLOR, `${restCats} more`, rest]);
    if (missing) rows.push([MISSING_COLOR, "n/a", missing]);
    const r = 4.5 * u;
    for (const [fill, name, count] of rows) {
      const tail = `(${count})`;
      const gap = 4 * u;
      const label = measure.truncate(name, maxW - 2 * r - 6 * u - gap - tw(tail), S) || "\u2026";
      kids.push(P("circle", { class: "cctviz-legend-dot", cx: r2(r), cy: r2(y + r), r: r2(r), fill }));
      kids.push(text(2 * r + 6 * u, y + r, label, { dy: "0.35em" }));
      kids.push(P("text", { class: "cctviz-legend-text cctviz-legend-muted", x: r2(2 * r + 6 * u + tw(label) + gap), y: r2(y + r), dy: "0.35em", "font-size": S }, tail));
      width = Math.max(width, 2 * r + 6 * u + tw(label) + gap + tw(tail));
      y += 2 * r + 5 * u;
    }
  } else if (enc.kind === "numeric") {
    const sc = enc.scale;
    const H = 110 * u;
    const W = 12 * u;
    const steps = 48;
    for (let k = 0; k < steps; k++) {
      kids.push(P("rect", { x: 0, y: r2(y + H - ((k + 1) * H) / steps), width: r2(W), height: r2(H / steps + 0.4), fill: sc.interpolator((k + 0.5) / steps) }));
    }
    kids.push(P("rect", { class: "cctviz-legend-frame", x: 0, y: r2(y), width: r2(W), height: r2(H) }));
    if (sc.domain) {
      const single = sc.domain[0] === sc.domain[1];
      for (const t of single ? [0.5] : [0, 0.5, 1]) {
        const v = sc.log ? Math.exp(Math.log(sc.domain[0]) + t * (Math.log(sc.domain[1]) - Math.log(sc.domain[0]))) : sc.domain[0] + t * (sc.domain[1] - sc.domain[0]);
        const py = y + H - t * H;
        const label = (single ? "all " : "") + formatValue(v, d.colorUnit);
        kids.push(P("line", { class: "cctviz-legend-tick", x1: r2(W), x2: r2(W + 4 * u), y1: r2(py), y2: r2(py) }));
        kids.push(text(W + 6 * u, py, label, { dy: "0.35em" }));
        width = Math.max(width, W + 6 * u + tw(label));
      }
    }
    y += H + 6 * u;
    if (sc.log) {
      kids.push(text(0, y, "log scale", { dy: "0.8em", class: "cctviz-legend-text cctviz-legend-muted" }));
      y += 14 * u;
    }
  }
  return { prims: kids, width: Math.min(maxW, width), height: y };
}

/**
 * Build the scene of a ProfilesView.
 *
 * @param {import("./data.js").ProfilesData} d decoded `_data`
 * @param {object} settings see {@link DEFAULT_SETTINGS}
 * @param {{text: Function, truncate: Function}} [measure]
 * @returns {object} `frame`, `width`, `height`, `scale`, `plot` ({x, y, w, h}), `grid`,
 *   `axes`, `dots` (prims with the DOM contract), `legend`, `notes`, `title`, `empty`,
 *   `points` ({id, x, y}: dot centres in figure coordinates), `radius`.
 */
/** The narrowest plot (px at 12 px text) worth keeping the legend beside it. */
const PLOT_MIN_BESIDE = 240;

export function profilesScene(d, settings, measure = TABLE_MEASURE) {
  const st = { ...DEFAULT_SETTINGS, ...settings };
  const font = st.fontSize;
  const u = font / 12;
  const m = { u, font, small: textSizes(font, st.fit).small, margin: 14 * u };
  const sel = new Set(st.highlight ? (st.selection || []).map(Number) : []);
  const enc = colorEncoding(d);

  let top = m.margin;
  let title = null;
  if (st.title) {
    const flow = (st.width || 560 * u) - 2 * m.margin;
    title = P("text", { class: "cctviz-title", x: r2(m.margin), y: r2(top), dy: "0.8em", "font-size": r2(font * 1.2), "font-weight": "700" }, measure.truncate(String(st.title), flow, font * 1.2, 700));
    top += font * 1.2 + 10 * u;
  }

  const legendMax = 190 * u;
  const leg = st.legends && enc.kind !== "none" && d.n > 0 ? legend(d, enc, m, measure, legendMax) : null;
  let legendW = leg ? leg.width + 22 * u : 0;

  // Axes: the units first (the y tick labels' width sets the left gutter).
  const plotH0 = 300 * u;
  const yProbe = linearAxis(d.y, [plotH0, 0], { unit: d.yAxis.unit, count: 6 });
  const yTickW = Math.max(0, ...yProbe.ticks.map((t) => measure.text(t.text, m.small)));
  const gutterL = 16 * u + 6 * u + yTickW + 6 * u; // rotated title, gap, ticks, tick marks
  const gutterB = 6 * u + m.small + 8 * u + font + 2 * u;
  const natural = 420 * u;
  // the plot fills the asked width (live or export); a box too narrow for the plot and the
  // legend beside it puts the legend under the plot (the view uses its height); only a
  // width too narrow for the plot alone shrinks the figure
  const legendBelow = Boolean(leg && st.width && st.width - 2 * m.margin - gutterL - legendW < PLOT_MIN_BESIDE * u);
  if (legendBelow) legendW = 0;
  const avail = st.width ? st.width - 2 * m.margin - gutterL - legendW : natural;
  const plotW = Math.max(160 * u, avail);
  const plotH = st.width ? Math.max(200 * u, Math.min(440 * u, plotW * 0.62)) : plotH0;
  const plot = { x: m.margin + gutterL, y: top + 4 * u, w: plotW, h: plotH };

  const xa = linearAxis(d.x, [plot.x, plot.x + plot.w], { unit: d.xAxis.unit, count: Math.max(3, Math.round(plotW / (80 * u))) });
  const ya = linearAxis(d.y, [plot.y + plot.h, plot.y], { unit: d.yAxis.unit, count: Math.max(3, Math.round(plotH / (50 * u))) });

  const grid = [];
  const axes = [];
  for (const t of xa.ticks) {
    const x = r2(t.pos);
    grid.push(P("line", { class: "cctviz-grid", x1: x, x2: x, y1: r2(plot.y), y2: r2(plot.y + plot.h) }));
    axes.push(P("line", { class: "cctviz-tick", x1: x, x2: x, y1: r2(plot.y + plot.h), y2: r2(plot.y + plot.h + 4 * u) }));
    axes.push(P("text", { class: "cctviz-tick-label", x, y: r2(plot.y + plot.h + 6 * u), dy: "0.8em", "text-anchor": "middle", "font-size": m.small }, t.text));
  }
  for (const t of ya.ticks) {
    const y = r2(t.pos);
    grid.push(P("line", { class: "cctviz-grid", x1: r2(plot.x), x2: r2(plot.x + plot.w), y1: y, y2: y }));
    axes.push(P("line", { class: "cctviz-tick", x1: r2(plot.x - 4 * u), x2: r2(plot.x), y1: y, y2: y }));
    axes.push(P("text", { class: "cctviz-tick-label", x: r2(plot.x - 6 * u), y, dy: "0.35em", "text-anchor": "end", "font-size": m.small }, t.text));
  }
  axes.push(P("rect", { class: "cctviz-plot-frame", x: r2(plot.x), y: r2(plot.y), width: r2(plot.w), height: r2(plot.h) }));
  const xTitle = measure.truncate(axisTitle(d.xAxis, xa.unit), plot.w, font) || "\u2026";
  const yTitle = measure.truncate(axisTitle(d.yAxis, ya.unit), plot.h, font) || "\u2026";
  const xTitleY = plot.y + plot.h + 6 * u + m.small + 8 * u;
  axes.push(P("text", { class: "cctviz-axis-title", x: r2(plot.x + plot.w / 2), y: r2(xTitleY), dy: "0.8em", "text-anchor": "middle", "font-size": font }, xTitle));
  const yx = r2(m.margin + 2 * u);
  const yy = r2(plot.y + plot.h / 2);
  axes.push(P("text", { class: "cctviz-axis-title", x: 0, y: 0, dy: "0.8em", "text-anchor": "middle", "font-size": font, transform: `translate(${yx},${yy}) rotate(-90)` }, yTitle));

  // Dots: unselected first, the selection on top.
  const radius = dotRadius(d.n) * u;
  const points = { id: Array.from(d.id), x: new Array(d.n), y: new Array(d.n) };
  const dots = [];
  const on = [];
  const dim = sel.size > 0;
  for (let i = 0; i < d.n; i++) {
    const fx = Number.isFinite(d.x[i]) ? xa.scale(d.x[i]) : NaN;
    const fy = Number.isFinite(d.y[i]) ? ya.scale(d.y[i]) : NaN;
    points.x[i] = fx;
    points.y[i] = fy;
    if (!Number.isFinite(fx) || !Number.isFinite(fy)) continue;
    const selected = sel.has(d.id[i]);
    const cls = selected ? "cctviz-dot selected" : dim ? "cctviz-dot dim" : "cctviz-dot";
    const dot = P("circle", {
      class: cls,
      cx: r2(fx),
      cy: r2(fy),
      r: r2(radius),
      fill: enc.fill(i),
      role: "option",
      "data-profile": String(d.id[i]),
      "aria-label": dotLabel(d, i),
      "aria-selected": String(selected),
    });
    (selected ? on : dots).push(dot);
  }
  dots.push(...on);

  let bottom = xTitleY + font + 4 * u;
  const notes = [];
  const missingXY = points.x.filter((x, i) => !Number.isFinite(x) || !Number.isFinite(points.y[i])).length;
  const noteLines = [];
  if (d.dead.length) noteLines.push(`Not shown, no data: ${d.dead.join(", ")}`);
  if (missingXY) noteLines.push(`${missingXY} profile${missingXY === 1 ? "" : "s"} without a value on an axis, not shown`);
  for (const line of noteLines) {
    bottom += 4 * u;
    notes.push(P("text", { class: "cctviz-note", x: r2(m.margin), y: r2(bottom), dy: "0.8em", "font-size": m.small }, measure.truncate(line, plot.x + plot.w - m.margin, m.small) || "\u2026"));
    bottom += m.small + 2 * u;
  }

  let legendPrim = null;
  let legendBottom = leg ? plot.y + leg.height : 0;
  if (leg && legendBelow) {
    const y = bottom + 10 * u;
    legendPrim = P("g", { class: "cctviz-legend", transform: `translate(${r2(m.margin)},${r2(y)})` }, null, leg.prims);
    legendBottom = y + leg.height;
  } else if (leg) legendPrim = P("g", { class: "cctviz-legend", transform: `translate(${r2(plot.x + plot.w + 22 * u)},${r2(plot.y)})` }, null, leg.prims);
  const empty = d.n ? null : P("text", { class: "cctviz-empty", x: r2(plot.x + 12 * u), y: r2(plot.y + 20 * u), "font-size": font }, "No profiles to show");

  const width = plot.x + plot.w + legendW + m.margin;
  const height = Math.max(bottom, legendBottom) + m.margin;
  const { scale, frame } = flatFrame(st, width, height);
  return {
    kind: "profiles",
    fontSize: font,
    fontFamily: FONT_FAMILY,
    width,
    height,
    scale,
    frame,
    style: st.style || "",
    background: st.background,
    title,
    plot,
    grid,
    axes,
    dots,
    legend: legendPrim,
    notes,
    empty,
    points,
    radius,
    axisX: xa,
    axisY: ya,
    encoding: enc,
  };
}
