/**
 * Text widths from the bundled font's metrics table (js/font-metrics.js), so the
 * notebook and the browser-free exporter lay out alike. Pure: no DOM, no canvas.
 *
 * The font (cctviz/fonts, family "Cctviz Sans": a subset of Liberation Sans 2.x,
 * metric-compatible with Arial) has no kerning and no ligatures, and .cctviz sets
 * `font-kerning: none` and `font-variant-ligatures: none`, so a string's width in the
 * browser is the sum of its characters' advance widths: what measureText returns.
 *
 * A code point the table lacks is drawn by some fallback font whose width is not
 * known here; the rule below errs wide, so that a label measured with it does not
 * overflow its box (it may be cut a little earlier than needed):
 * - invisible format characters (zero-width spaces and joiners, bidi controls,
 *   variation selectors, tags; see isInvisible): 0;
 * - emoji and symbols (U+1F000-U+1FAFF, U+2600-U+27BF): 1.25 em (colour emoji
 *   fonts draw them wider than 1 em);
 * - any other code point from U+1100 on (CJK, Hangul, kana, fullwidth forms, symbols,
 *   other scripts, lone surrogates): 1 em (East Asian wide characters are 1 em);
 * - any other code point below U+1100 (Cyrillic, Hebrew, Arabic, Indic, combining
 *   marks, control characters): the width of "W" in that weight,
 *   the widest letter of Basic Latin (0.94 em).
 */

import { ASCENT, DESCENT, FAMILY, UNITS_PER_EM, WIDTHS } from "./font-metrics.js";

export { ASCENT, DESCENT, UNITS_PER_EM };

/** CSS font stack: the bundled font, then metric-compatible system fonts. */
export const FONT_FAMILY = `'${FAMILY}', 'Liberation Sans', Arial, Helvetica, sans-serif`;

/** Horizontal ellipsis, appended to a truncated label. */
export const ELLIPSIS = "\u2026";

const DENSE = 0x0400; // code points below this are looked up in an array
const NONE = 0xffff; // "not in the table" in the dense array

/** Decoded table of one weight: {dense: Uint16Array, sparse: Map, fallback} */
function decode(runs) {
  const dense = new Uint16Array(DENSE).fill(NONE);
  const sparse = new Map();
  for (const [first, digits] of runs) {
    for (let i = 0; i * 3 < digits.length; i++) {
      const cp = first + i;
      const w = Number.parseInt(digits.slice(i * 3, i * 3 + 3), 36);
      if (cp < DENSE) dense[cp] = w;
      else sparse.set(cp, w);
    }
  }
  return { dense, sparse, fallback: dense[0x57] }; // "W"
}

const TABLES = { 400: decode(WIDTHS["400"]), 700: decode(WIDTHS["700"]) };

const EM = UNITS_PER_EM;
const EMOJI = Math.round(1.25 * UNITS_PER_EM);

/** Zero-width format characters (drawn as nothing). */
function isInvisible(cp) {
  return (
    (cp >= 0x200b && cp <= 0x200f) || // zero-width space, ZWNJ, ZWJ, LRM, RLM
    (cp >= 0x202a && cp <= 0x202e) || // bidi embeddings and overrides
    (cp >= 0x2060 && cp <= 0x206f) || // word joiner, invisible operators, bidi isolates
    (cp >= 0xfe00 && cp <= 0xfe0f) || // variation selectors
    cp === 0xfeff || // zero-width no-break space (BOM)
    (cp >= 0xe0000 && cp <= 0xe0fff) // tags, variation selectors supplement
  );
}

/** Width in font units of a code point the table lacks (see the rule above). */
function missingWidth(cp, table) {
  if (isInvisible(cp)) return 0;
  if ((cp >= 0x1f000 && cp <= 0x1faff) || (cp >= 0x2600 && cp <= 0x27bf)) return EMOJI;
  if (cp >= 0x1100) return EM;
  return table.fallback;
}

/** Font units -> width at fontSize (one expression, so truncateToWidth's widths
 * are measureText's to the last bit). */
function toWidth(units, fontSize) {
  return (units * fontSize) / UNITS_PER_EM;
}

function tableOf(weight) {
  let w = weight;
  if (typeof w === "string") w = w === "bold" || w === "bolder" ? 700 : Number.parseFloat(w);
  return w >= 600 ? TABLES[700] : TABLES[400];
}

/** Width in font units of the code point `cp`. */
function unitsOf(cp, table) {
  if (cp < DENSE) {
    const w = table.dense[cp];
    return w === NONE ? missingWidth(cp, table) : w;
  }
  const w = table.sparse.get(cp);
  return w === undefined ? missingWidth(cp, table) : w;
}

/** Width in font units of the string `s`. */
function unitsOfString(s, table) {
  let units = 0;
  for (let i = 0; i < s.length; i++) {
    const cp = s.codePointAt(i); // a surrogate pair is one code point, a lone one itself
    if (cp > 0xffff) i++;
    units += unitsOf(cp, table);
  }
  return units;
}

/**
 * Width of `text` at `fontSize` (any unit: the result is in the same unit), set in
 * the bundled font at `weight` (>= 600 is Bold; "bold" is 700, "normal" 400).
 * Sum of advance widths, no kerning; iterates code points (surrogate pairs are one).
 */
export function measureText(text, fontSize, weight = 400) {
  return toWidth(unitsOfString(String(text), tableOf(weight)), fontSize);
}

/**
 * `text` if it fits in `maxWidth`, else its longest prefix (whole code points) with
 * "…" appended that fits, else "" (not even "…" fits). Widths as measureText's:
 * `measureText(result, fontSize, weight) <= maxWidth` always holds.
 *
 * Widths add up (no kerning), so the prefix widths grow with the prefix and the
 * longest prefix that fits is found in one scan that stops where it no longer
 * fits: O(length) and no allocation, cheaper than a binary search that measures
 * each candidate prefix anew.
 */
export function truncateToWidth(text, maxWidth, fontSize, weight = 400) {
  const table = tableOf(weight);
  const s = String(text);
  if (toWidth(unitsOfString(s, table), fontSize) <= maxWidth) return s;
  const ellipsis = unitsOf(0x2026, table);
  if (!(toWidth(ellipsis, fontSize) <= maxWidth)) return "";
  let units = ellipsis; // of the prefix s.slice(0, end) plus "…", which fits
  let end = 0;
  for (let i = 0; i < s.length; i++) {
    const cp = s.codePointAt(i);
    const next = units + unitsOf(cp, table);
    if (!(toWidth(next, fontSize) <= maxWidth)) break;
    units = next;
    if (cp > 0xffff) i++;
    end = i + 1;
  }
  return s.slice(0, end) + ELLIPSIS;
}

/** Code points two strings share at their start. */
function sharedPrefix(a, b) {
  const x = [...a];
  const y = [...b];
  let i = 0;
  while (i < x.length && i < y.length && x[i] === y[i]) i++;
  return i;
}

/**
 * A label cutter that keeps different names told apart (issue 20, section 4).
 *
 * Cutting names at the end turns "CalcMonotonicQGradientsForElems" and
 * "CalcMonotonicQRegionForElems" into the same "CalcMonotonic…". The cutter knows
 * every name the view labels; where an end cut would keep no more than a name
 * shares with another, it cuts in the middle instead, keeping a short head and
 * the part where the name differs: "Calc…QGradie…" and "Calc…QRegion…". Names that
 * fit are shown whole; the same name twice is the same label.
 *
 * @param {string[]} names every name the view may label
 * @param {{text: Function, truncate: Function}} measure
 * @param {number} fontSize
 * @param {number} [weight]
 * @returns {(name: string, maxWidth: number) => string} "" when nothing fits
 */
export function distinctCutter(names, measure, fontSize, weight = 400) {
  const distinct = [...new Set(names.map(String))].sort();
  const shared = new Map();
  for (let i = 0; i < distinct.length; i++) {
    const prev = i > 0 ? sharedPrefix(distinct[i - 1], distinct[i]) : 0;
    const next = i + 1 < distinct.length ? sharedPrefix(distinct[i], distinct[i + 1]) : 0;
    shared.set(distinct[i], Math.max(prev, next));
  }
  return (name, maxWidth) => {
    const s = String(name);
    const plain = measure.truncate(s, maxWidth, fontSize, weight) || "";
    if (plain === s || !plain) return plain;
    const common = shared.get(s) ?? 0;
    if ([...plain].length - 1 > common) return plain; // the end cut already tells it apart
    const cps = [...s];
    const rest = cps.slice(common).join("");
    const want = Math.min(3, [...rest].length); // letters of the differing part worth showing
    let best = "";
    let bestShown = 0;
    for (let h = Math.min(4, common); h >= 0; h--) {
      // a shorter head leaves more room for where the name differs
      const head = cps.slice(0, h).join("") + ELLIPSIS;
      const room = maxWidth - measure.text(head, fontSize, weight);
      const tail = room > 0 ? measure.truncate(rest, room, fontSize, weight) : "";
      const shown = [...tail].length - (tail.endsWith(ELLIPSIS) ? 1 : 0);
      if (shown >= want && shown > 0) return head + tail;
      if (shown > bestShown) [best, bestShown] = [head + tail, shown];
    }
    return best || plain;
  };
}

/** The text measure of the bundled font: the same in the notebook and in export (every view's scene default). */
export const TABLE_MEASURE = { text: measureText, truncate: truncateToWidth };
