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
  // an export is never scaled: the font size asked for is the size on the page
  // (a view lays its content out at the asked width, folding what does not fit)
  const scale = 1;
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
 * content's offset, the width and height in figure units, the scale (always 1:
 * text is drawn at the size asked for) and the svg's `frame` (pt and viewBox).
 * An export takes the asked width and height; content that does not fit them
 * makes the figure wider or taller than asked (never smaller text), which
 * {@link captionUnder} says.
 */
export function frameSize(st, m, top, naturalW, bodyHeight) {
  const content = { x: m.margin, y: top.titleHeight + top.band + m.margin };
  const width = Math.max(top.flowW, top.legendsWidth, naturalW);
  const height = content.y + bodyHeight + m.margin;
  const { frame } = flatFrame(st, width, height);
  return { content, width, height, scale: 1, frame };
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
 * The svg frame of a flat figure (no zoomable viewport) of `width` x `height`
 * figure units, one unit a point: an export (`st.fit`) takes the asked width and
 * height, or the content's where it is larger; nothing is ever scaled, so the
 * text on the page is the size asked for.
 *
 * @returns {{scale: number, frame: {width: string, height: string, viewBox: string}}}
 */
export function flatFrame(st, width, height) {
  const outW = st.fit && st.width ? Math.max(st.width, width) : width;
  const outH = st.fit && st.height ? Math.max(st.height, height) : height;
  return { scale: 1, frame: { width: `${r2(outW)}pt`, height: `${r2(outH)}pt`, viewBox: `0 0 ${r2(outW)} ${r2(outH)}` } };
}

/**
 * Text sizes of a figure from its font size: the labels at `font`, legends and
 * values at `small`, axis ranges and outlier names at `tiny`. On screen the
 * smaller sizes are 11/12 and 9/12 of the font (9 px at the default 12); in an
 * export (`fit`) the font size asked for is the smallest text on the page, so
 * they equal it.
 *
 * @returns {{font: number, small: number, tiny: number}}
 */
export function textSizes(fontSize, fit = false) {
  if (fit) return { font: fontSize, small: fontSize, tiny: fontSize };
  return { font: fontSize, small: r2(fontSize * (11 / 12)), tiny: r2(fontSize * (9 / 12)) };
}

/** Break `text` into lines no wider than `width` at `size` (words kept whole where
 *  they fit; a word wider than the line is cut). */
export function wrapText(text, width, size, measure, weight = 400) {
  const lines = [];
  let line = "";
  for (const word of String(text).split(/\s+/).filter(Boolean)) {
    const next = line ? `${line} ${word}` : word;
    if (measure.text(next, size, weight) <= width) line = next;
    else {
      if (line) lines.push(line);
      line = measure.text(word, size, weight) <= width ? word : measure.truncate(word, width, size, weight) || ELLIPSIS;
    }
  }
  if (line) lines.push(line);
  return lines;
}

/** "Not drawn at this size: a; b." wrapped to `width` at `size`. */
function notDrawnLines(notes, width, size, measure) {
  return wrapText(`Not drawn at this size: ${notes.join("; ")}.`, Math.max(size * 4, width), size, measure);
}

/** The note of an export `what` ("wide", "tall") `got` points where `asked`, or "". */
function overflowNote(st, what, got, asked) {
  const pt = (v) => `${Math.round(v)} pt`;
  return st.fit && asked && got > asked + 0.5 ? `drawn ${pt(got)} ${what}, not ${pt(asked)}: the content does not fit at ${st.fontSize} pt` : "";
}

/**
 * The caption under an export's body that says what it could not hold at its font
 * size: the exporter's notes (`st.notes`), what the view folded (`folded`: its own
 * sentences, "3 deeper levels ..."), a figure wider than asked (`width`: the
 * content's, margins included) or taller (with the caption's own lines). The
 * caption starts at `bottom`; `end` is where the figure would end without it. A
 * live view says what it folded in its legend band instead ({@link foldedLegend}).
 *
 * @returns {{caption: object|null, notes: string[], height: number, taller: boolean}}
 *   `caption`: a prim placed at `bottom` (or null); `height`: the figure's height with it
 */
export function captionUnder(st, m, measure, width, bottom, end, folded = []) {
  if (!st.fit) return { caption: null, notes: [], height: end, taller: false };
  const base = [...(st.notes || []), ...folded, overflowNote(st, "wide", width, st.width)].filter(Boolean);
  const lh = m.small * 1.25;
  const captionW = (st.width ? Math.max(st.width, width) : width) - 2 * m.margin;
  const lay = (notes) => {
    const lines = notes.length ? notDrawnLines(notes, captionW, m.small, measure) : [];
    return { notes, lines, height: end + (lines.length ? lines.length * lh + m.margin / 2 : 0) };
  };
  let c = lay(base);
  for (let k = 0; k < 2; k++) { // taller than asked, said with the height the note itself adds
    const tall = overflowNote(st, "tall", c.height, st.height);
    if (!tall) break;
    c = lay([...base, tall]);
  }
  const prims = c.lines.map((t, k) => P("text", { class: "cctviz-caption", x: r2(m.margin), y: r2(k * lh), dy: "0.8em", "font-size": m.small }, t));
  const caption = prims.length ? P("g", { class: "cctviz-caption-band", transform: `translate(0,${r2(bottom)})` }, null, prims) : null;
  return { caption, notes: c.notes, height: c.height, taller: Boolean(st.fit && st.height && c.height > st.height + 0.5) };
}

/**
 * The frame of a figure with its caption: {@link frameSize} and
 * {@link captionUnder} (the caption under the body). Returns frameSize's fields
 * (the height and frame with the caption) plus `caption`, `notes` and `taller`.
 */
export function captionedFrame(st, m, measure, top, naturalW, bodyHeight, folded = []) {
  const size = frameSize(st, m, top, naturalW, bodyHeight);
  const c = captionUnder(st, m, measure, size.width, size.height, size.height, folded);
  return { ...size, height: c.height, frame: flatFrame(st, size.width, c.height).frame, caption: c.caption, notes: c.notes, taller: c.taller };
}

/**
 * A live view's note of what it folded to fit its box (its legend band is not
 * scaled or panned, unlike its body): a legend item [prim, width, height] of the
 * sentences wrapped to `maxW`, or null.
 */
export function foldedLegend(folded, m, measure, maxW) {
  if (!folded.length) return null;
  const size = m.small;
  const lh = size * 1.25;
  const lines = notDrawnLines(folded, maxW, size, measure);
  const kids = lines.map((t, k) => P("text", { class: "cctviz-legend-text cctviz-caption", x: 0, y: r2(k * lh), dy: "0.8em" }, t));
  const w = Math.max(...lines.map((t) => measure.text(t, size)));
  return [P("g", { class: "cctviz-legend cctviz-folded-note" }, null, kids), w, lines.length * lh];
}
