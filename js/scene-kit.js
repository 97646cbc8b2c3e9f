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
 * {@link fitNotes} says.
 */
export function frameSize(st, m, top, naturalW, bodyHeight, caption = null) {
  const content = { x: m.margin, y: top.titleHeight + top.band + m.margin };
  const width = Math.max(top.flowW, top.legendsWidth, naturalW);
  const capH = caption ? caption.height : 0;
  const height = content.y + bodyHeight + m.margin + capH;
  const { frame } = flatFrame(st, width, height);
  return { content, width, height, scale: 1, frame, captionY: content.y + bodyHeight + m.margin };
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

/**
 * What an export of `width` x `height` could not hold at its font size, in words
 * (one sentence per item): what the view folded (`folded`: its own sentences),
 * and where the content makes the figure wider or taller than asked.
 *
 * @param {object} st the scene settings (`fit`, `width`, `height`, `fontSize`)
 * @param {string[]} folded the view's sentences ("3 deeper levels not drawn")
 * @param {number} contentW the content's width in points (margins included)
 * @param {number} contentH the whole figure's height in points
 * @returns {string[]}
 */
export function fitNotes(st, folded, contentW, contentH) {
  if (!st.fit) return []; // a live view says what it folded in its legend band (foldedLegend)
  const out = [...(st.notes || []), ...folded];
  const pt = (v) => `${Math.round(v)} pt`;
  if (st.width && contentW > st.width + 0.5) out.push(`drawn ${pt(contentW)} wide, not ${pt(st.width)}: the content does not fit at ${st.fontSize} pt`);
  if (st.height && contentH > st.height + 0.5) out.push(`drawn ${pt(contentH)} tall, not ${pt(st.height)}: the content does not fit at ${st.fontSize} pt`);
  return out;
}

/**
 * The caption line(s) under a figure that say what it folded ({@link fitNotes}),
 * wrapped to `width`, at the small size, or null when nothing was folded. The
 * prims are placed from y = 0 (the figure moves them under its body).
 *
 * @returns {{prims: object[], height: number, text: string}|null}
 */
export function captionOf(notes, width, m, measure) {
  if (!notes.length) return null;
  const text = `Not drawn at this size: ${notes.join("; ")}.`;
  const size = m.small;
  const lh = size * 1.25;
  const lines = wrapText(text, Math.max(size * 4, width - 2 * m.margin), size, measure);
  const prims = lines.map((t, k) => P("text", { class: "cctviz-caption", x: r2(m.margin), y: r2(k * lh), dy: "0.8em", "font-size": size }, t));
  return { prims, height: lines.length * lh + m.margin / 2, text };
}

/**
 * The frame of a figure with its caption: {@link frameSize} with the notes of
 * what did not fit ({@link fitNotes}: the view's `folded` sentences, a figure
 * wider or taller than asked) drawn under the body. Returns frameSize's fields
 * plus `caption` (a prim placed under the body, or null) and `notes`.
 */
export function captionedFrame(st, m, measure, top, naturalW, bodyHeight, folded = []) {
  const width = Math.max(top.flowW, top.legendsWidth, naturalW);
  let notes = fitNotes(st, folded, width, 0);
  let caption = captionOf(notes, st.fit && st.width ? Math.max(st.width, width) : width, m, measure);
  let size = frameSize(st, m, top, naturalW, bodyHeight, caption);
  // taller than asked: said with the height the caption itself makes (twice: the
  // note's own line may add to it)
  const base = notes;
  for (let k = 0; k < 2 && st.fit && st.height; k++) {
    const taller = fitNotes({ ...st, notes: [], width: null }, [], 0, size.height);
    if (!taller.length) break;
    notes = [...base, ...taller];
    caption = captionOf(notes, st.width ? Math.max(st.width, width) : width, m, measure);
    size = frameSize(st, m, top, naturalW, bodyHeight, caption);
  }
  const prim = caption ? P("g", { class: "cctviz-caption-band", transform: `translate(0,${r2(size.captionY)})` }, null, caption.prims) : null;
  const taller = Boolean(st.fit && st.height && size.height > st.height + 0.5);
  return { ...size, caption: prim, notes, taller };
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
  const lines = wrapText(`Not drawn at this size: ${folded.join("; ")}.`, Math.max(size * 4, maxW), size, measure);
  const kids = lines.map((t, k) => P("text", { class: "cctviz-legend-text cctviz-caption", x: 0, y: r2(k * lh), dy: "0.8em" }, t));
  const w = Math.max(...lines.map((t) => measure.text(t, size)));
  return [P("g", { class: "cctviz-legend cctviz-folded-note" }, null, kids), w, lines.length * lh];
}
