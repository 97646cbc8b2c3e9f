// Linear axes for any view's figure (pure: no DOM): nice ticks in a display
// unit picked for the axis as a whole ("time (inc) [ms]" with ticks 0, 250,
// 500), so that tick labels never mix prefixes.

import { ticks, tickStep } from "d3-array";
import { canonicalUnit, displayUnit } from "./format.js";

const SI = [["T", 1e12], ["G", 1e9], ["M", 1e6], ["k", 1e3]];

/**
 * The unit an axis over values up to `maxAbs` (in `unit`) is labelled in, and
 * the factor that takes values to it: times pick s/ms/us/ns, bytes kB..TB and
 * bandwidths B/s..TB/s as `formatValue` does for the largest value; other values of 10,000 and more an
 * SI prefix ("k", "M calls").
 *
 * @param {number} maxAbs
 * @param {string|null} unit
 * @returns {{factor: number, unit: string}} `unit` "" when there is none
 */
export function axisUnit(maxAbs, unit) {
  const measured = displayUnit(maxAbs, unit); // times, sizes, bandwidths: as formatValue
  if (measured) return measured;
  const u = canonicalUnit(unit);
  const a = Number.isFinite(maxAbs) ? Math.abs(maxAbs) : 0;
  if (a >= 1e4 * 0.9995) {
    for (const [prefix, scale] of SI) if (a >= scale * 0.9995) return { factor: 1 / scale, unit: u ? `${prefix} ${u}` : prefix };
  }
  return { factor: 1, unit: u || "" };
}

/** A tick value as text with `dec` decimals ("-0" as "0"). */
function tickText(v, dec) {
  const s = v.toFixed(dec);
  return /^-0(\.0*)?$/.test(s) ? s.slice(1) : s;
}

/**
 * About `count` ticks over [a, b] (in the axis unit: values times `factor`), each
 * {value (in the values' unit), pos (`toPx` of the axis value), text (the axis
 * value with the decimals its step needs)}.
 */
export function tickMarks(a, b, count, toPx, factor = 1) {
  const step = tickStep(a, b, count);
  const dec = Math.max(0, -Math.floor(Math.log10(Math.abs(step)) + 1e-9));
  return ticks(a, b, count).map((t) => ({ value: t / factor, pos: toPx(t), text: tickText(t, dec) }));
}

/**
 * A linear axis over `values` mapped onto [r0, r1] (pixels; r1 < r0 for a y
 * axis): the domain padded by `pad` of its span, ticks with
 * labels in the axis unit (the domain is not rounded to ticks: dots use the room) ({@link axisUnit}).
 *
 * @param {ArrayLike<number>} values (NaN ignored)
 * @param {[number, number]} range
 * @param {object} [opts] `unit` (of the values), `count` (about how many ticks), `pad` (share of the span)
 * @returns {{domain: [number, number], scale: (v: number) => number, ticks: {value: number, pos: number, text: string}[],
 *   unit: string, factor: number}} `domain` in the values' unit
 */
export function linearAxis(values, range, opts = {}) {
  const count = opts.count ?? 5;
  const pad = opts.pad ?? 0.04;
  let lo = Infinity;
  let hi = -Infinity;
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (Number.isFinite(v)) {
      if (v < lo) lo = v;
      if (v > hi) hi = v;
    }
  }
  if (!(lo <= hi)) {
    lo = 0;
    hi = 1;
  }
  const { factor, unit } = axisUnit(Math.max(Math.abs(lo), Math.abs(hi)), opts.unit ?? null);
  let a = lo * factor;
  let b = hi * factor;
  if (a === b) {
    const d = a === 0 ? 1 : Math.abs(a) * 0.1;
    a -= d;
    b += d;
  } else {
    const p = (b - a) * pad;
    a -= p;
    b += p;
  }
  const [r0, r1] = range;
  const toPx = (d) => r0 + ((d - a) / (b - a)) * (r1 - r0);
  const scale = (v) => toPx(v * factor);
  return { domain: [a / factor, b / factor], scale, ticks: tickMarks(a, b, count, toPx, factor), unit, factor };
}
