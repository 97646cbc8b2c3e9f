// Pieces every view's scene uses: prims, legend items and their flow, the
// figure's frame (title, legend band, size, the scale that fits an export),
// and the typesetting of text prims. Pure: no DOM.
//
// A prim is an SVG element as data: {tag, attrs, text?, children?}.

import { r2 } from "./dom.js";

const ELLIPSIS = "\u2026";

/** A prim: an SVG element as data. */
export function P(tag, attrs, text, children) {
  const p = { tag, attrs };
  if (text !== undefined && text !== null) p.text = text;
  if (children) p.children = children;
  return p;
}

/**
 * Helpers that make legend prims at the small size `m.small`: `title`, `text`,
 * `cut` (truncate to about `chars` characters), `tw` (a text's width).
 */
export function legendKit(m, measure, maxW = Infinity) {
  const S = m.small;
  // a text that starts at x is cut where it would pass the legend band's width
  const fit = (t, x) => (x + measure.text(t, S) <= maxW ? t : measure.truncate(t, Math.max(0, maxW - x), S) || ELLIPSIS);
  return {
    tw: (t, weight = 400) => measure.text(t, S, weight),
    title: (text) => P("text", { class: "cctviz-legend-title", x: 0, y: 0, dy: "0.8em" }, text),
    text: (x, y, t, extra = {}) => {
      const anchored = extra["text-anchor"] && extra["text-anchor"] !== "start";
      return P("text", { class: "cctviz-legend-text", x: r2(x), y: r2(y), ...extra }, anchored ? t : fit(t, x));
    },
    cut: (t, chars) => measure.truncate(t, Math.min(chars * S * 0.55, maxW), S, 700) || ELLIPSIS,
  };
}

/**
 * The width the legend band flows in, the same rule as {@link frameTop}: an export
 * flows at the asked width (or the content's, if wider), a live view at its width.
 */
export function legendFlowWidth(st, m, naturalW) {
  return st.fit ? Math.max(naturalW, st.width || 0) : st.width || Math.max(naturalW, 480 * m.u);
}

/** A colour bar: `steps` rects from `interpolator(0)` to `interpolator(1)`, framed, `W` wide at y0. */
export function colorBar(interpolator, W, y0, bh, steps = 60) {
  const out = [];
  for (let k = 0; k < steps; k++) {
    out.push(P("rect", { x: r2((k * W) / steps), y: r2(y0), width: r2(W / steps + 0.4), height: r2(bh), fill: interpolator((k + 0.5) / steps) }));
  }
  out.push(P("rect", { class: "cctviz-legend-frame", x: 0, y: r2(y0), width: r2(W), height: r2(bh) }));
  return out;
}

/** Place legend items ([prim, width, height]) left to right, wrapping at `width`; returns {prims, height, width}. */
export function flowLegends(items, width, m) {
  const prims = [];
  let x = m.margin;
  let y = 8 * m.u;
  let rowH = 0;
  let right = 0;
  for (const [g, itemW, hgt] of items) {
    const w = Math.min(itemW, width - 2 * m.margin); // its texts are cut to the band (legendKit)
    if (x > m.margin && x + w > width - m.margin) {
      x = m.margin;
      y += rowH + 8 * m.u;
      rowH = 0;
    }
    g.attrs.transform = `translate(${r2(x)},${r2(y)})`;
    prims.push(g);
    right = Math.max(right, x + w + m.margin);
    x += w + 28 * m.u;
    rowH = Math.max(rowH, hgt);
  }
  return { prims, height: items.length ? y + rowH + 8 * m.u : 0, width: right };
}

/**
 * The top of a figure: the title and the legend band, flowed at the figure's
 * width. `naturalW` is the content's width plus margins.
 *
 * @returns {{title: object|null, titleHeight: number, legends: object[], band: number,
 *   legendsWidth: number, flowW: number, scale: number}}
 */
export function frameTop(st, m, measure, naturalW, items) {
  // export: shrink to the asked width (the legends flow at the figure's own width)
  let scale = 1;
  if (st.fit && st.width && naturalW > st.width) scale = st.width / naturalW;
  const flowW = legendFlowWidth(st, m, naturalW);
  const legends = st.legends ? flowLegends(items, flowW, m) : { prims: [], height: 0, width: 0 };
  let top = 0;
  let title = null;
  if (st.title) {
    const tt = measure.truncate(String(st.title), flowW - 2 * m.margin, m.font * 1.2, 700);
    title = P("text", { class: "cctviz-title", x: r2(m.margin), y: r2(m.margin), dy: "0.8em" }, tt);
    top = m.margin + m.font * 1.2 + 4 * m.u;
  }
  return { title, titleHeight: top, legends: legends.prims, band: legends.height, legendsWidth: legends.width, flowW, scale };
}

/**
 * The figure's size under the frame's top and a body of `bodyHeight`: the
 * content's offset, the width and height in figure units, the scale that fits
 * an export into `st.width`/`st.height`, and the svg's `frame` (pt and viewBox).
 */
export function frameSize(st, m, top, naturalW, bodyHeight) {
  const content = { x: m.margin, y: top.titleHeight + top.band + m.margin };
  const width = Math.max(top.flowW, top.legendsWidth, naturalW);
  const height = content.y + bodyHeight + m.margin;
  let scale = top.scale;
  if (st.fit && st.height && height * scale > st.height) scale = st.height / height;
  const outW = st.fit && st.width ? st.width : width * scale;
  const outH = st.fit && st.height ? st.height : height * scale;
  const frame = {
    width: `${r2(outW)}pt`,
    height: `${r2(outH)}pt`,
    viewBox: `0 0 ${r2(outW / scale)} ${r2(outH / scale)}`,
  };
  return { content, width, height, scale, frame };
}

/**
 * A typesetter of text prims by class: `bold` and `small` are class names;
 * the title is 1.2 times the font. Sizes are attributes, so several figures
 * on one page never share them.
 *
 * @param {{bold: string[], small: string[], tiny?: string[]}} rules
 * @returns {(prim: object, m: object) => object}
 */
export function typesetter(rules) {
  const has = (cls, list) => list.some((c) => cls.includes(` ${c} `));
  const tiny = rules.tiny || [];
  const typeset = (prim, m) => {
    if (prim.tag === "text" || prim.tag === "tspan") {
      const cls = ` ${prim.attrs.class || ""} `;
      let size = m.font;
      if (cls.includes(" cctviz-title ")) size = r2(m.font * 1.2);
      else if (has(cls, tiny)) size = m.tiny;
      else if (has(cls, rules.small)) size = m.small;
      if (prim.tag === "text" || size !== m.font) prim.attrs["font-size"] = size;
      if (cls.includes(" cctviz-title ") || has(cls, rules.bold)) prim.attrs["font-weight"] = "700";
    }
    if (prim.children) for (const c of prim.children) typeset(c, m);
    return prim;
  };
  return typeset;
}

/**
 * The scale and svg frame of a flat figure (no zoomable viewport) of `width` x
 * `height` figure units: an export (`st.fit`) is shrunk to the asked width (and
 * height), never enlarged, so its fonts are never scaled up.
 *
 * @returns {{scale: number, frame: {width: string, height: string, viewBox: string}}}
 */
export function flatFrame(st, width, height) {
  let scale = 1;
  if (st.fit && st.width && width > st.width) scale = st.width / width;
  if (st.fit && st.height && height * scale > st.height) scale = st.height / height;
  const outW = st.fit && st.width ? st.width : width * scale;
  const outH = st.fit && st.height ? st.height : height * scale;
  return { scale, frame: { width: `${r2(outW)}pt`, height: `${r2(outH)}pt`, viewBox: `0 0 ${r2(outW / scale)} ${r2(outH / scale)}` } };
}
