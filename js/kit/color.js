// Colour encodings of the CCT view. Pure functions: no DOM.
//
// - Sequential: "heat", ColorBrewer's YlOrRd from 15% to 100% (luminance falls
//   monotonically, so it reads in greyscale print; the hottest nodes are the
//   darkest red, the most visible on white; marks carry an outline so the pale
//   low end and the dark high end both read on light and dark pages). Linear over
//   the domain, or logarithmic when the domain is positive and spans at least
//   three decades (profiles are heavy-tailed: with a linear scale almost every
//   node would get the lowest colour).
// - Bivariate: the 3x3 Stevens pink/blue palette; each metric is binned by its
//   terciles (the 1/3 and 2/3 quantiles of the visible values).
// - Missing values (NaN): neutral grey, readable on light and dark themes.

import { interpolateYlOrRd } from "d3-scale-chromatic";

/** The default sequential ramp, t in [0, 1]: pale yellow (low) to dark red (high). */
export const interpolateHeat = (t) => interpolateYlOrRd(0.15 + 0.85 * Math.max(0, Math.min(1, t)));

/** Fill of nodes with a missing value. */
export const MISSING_COLOR = "#9e9e9e";
/** Fill of nodes when no colour metric is chosen. */
export const NEUTRAL_COLOR = "#7aa6c2";

/**
 * Joshua Stevens' bivariate palette, `BIVARIATE[binB][binA]`: metric A grows
 * to the right (towards teal), metric B grows upwards (towards pink), both
 * together towards dark blue. The low-low cell is a mid grey (not Stevens'
 * near-white), so that cold nodes still show on a white page.
 */
export const BIVARIATE = [
  ["#cfcfcf", "#ace4e4", "#5ac8c8"],
  ["#dfb0d6", "#a5add3", "#5698b9"],
  ["#be64ac", "#8c62aa", "#3b4994"],
];

/** Whether a sequential scale over `domain` is logarithmic (positive, >= 3 decades). */
export function isLogDomain(domain) {
  return Boolean(domain) && domain[0] > 0 && domain[1] / domain[0] >= 1000;
}

/**
 * Sequential colour scale.
 *
 * @param {[number,number]|null} domain [min, max]
 * @param {object} [opts]
 * @param {(t:number)=>string} [opts.interpolator=interpolateHeat]
 * @param {boolean} [opts.log] force (true) or forbid (false) a log scale; default {@link isLogDomain}
 * @returns {{color:(v:number)=>string, position:(v:number)=>number, log:boolean,
 *   domain:[number,number]|null, interpolator:(t:number)=>string}}
 *   `position(v)` is v's place on the colour bar in [0, 1] (NaN if missing).
 */
export function sequentialScale(domain, opts = {}) {
  const interpolator = opts.interpolator ?? interpolateHeat;
  const log = opts.log ?? isLogDomain(domain);
  let position;
  if (!domain) position = () => NaN;
  else if (domain[0] === domain[1]) position = (v) => (Number.isFinite(v) ? 0.5 : NaN);
  else if (log) {
    const l0 = Math.log(domain[0]);
    const span = Math.log(domain[1]) - l0;
    position = (v) => {
      if (!Number.isFinite(v)) return NaN;
      if (v <= domain[0]) return 0;
      return Math.min(1, (Math.log(v) - l0) / span);
    };
  } else {
    const span = domain[1] - domain[0];
    position = (v) => (Number.isFinite(v) ? Math.max(0, Math.min(1, (v - domain[0]) / span)) : NaN);
  }
  const color = (v) => {
    const t = position(v);
    return Number.isNaN(t) ? MISSING_COLOR : interpolator(t);
  };
  return { color, position, log, domain, interpolator };
}

/** Value at colour-bar position t in [0, 1] of a scale from {@link sequentialScale}. */
export function valueAt(scale, t) {
  const [a, b] = scale.domain;
  return scale.log ? Math.exp(Math.log(a) + t * (Math.log(b) - Math.log(a))) : a + t * (b - a);
}

/** Linear-interpolated quantile of sorted finite values. */
function quantileSorted(sorted, p) {
  const h = (sorted.length - 1) * p;
  const lo = Math.floor(h);
  return sorted[lo] + (sorted[Math.min(lo + 1, sorted.length - 1)] - sorted[lo]) * (h - lo);
}

/**
 * Tercile breaks [q1/3, q2/3] of the finite values (at rows where `keep(i)`),
 * or null when there are none. When a third or more of the values tie at the
 * minimum (most nodes move no bytes: zeros), the low class is that minimum and
 * the values above it split at their median, so the scale keeps three classes
 * instead of collapsing to "0 | 0".
 */
export function terciles(values, keep = () => true) {
  if (!values) return null;
  const v = [];
  for (let i = 0; i < values.length; i++) if (Number.isFinite(values[i]) && keep(i)) v.push(values[i]);
  if (v.length === 0) return null;
  v.sort((a, b) => a - b);
  const breaks = [quantileSorted(v, 1 / 3), quantileSorted(v, 2 / 3)];
  if (breaks[0] === v[0]) {
    // a third or more at the minimum (nodes that did none of it: no bytes, no
    // communication): the minimum is the low class, and the values above it split
    // at their median, the median and above in the high class, so the nodes that
    // do the most of it take the strongest colour even when they are all equal
    const above = v.filter((x) => x > v[0]);
    if (above.length) {
      const median = quantileSorted(above, 0.5);
      let mid = v[0];
      for (const x of above) if (x < median) mid = x;
      return [v[0], mid];
    }
  }
  return breaks;
}

/** Tercile bin 0 (low), 1, 2 (high) of v given the breaks; -1 when v or the breaks are missing. */
export function tercileBin(v, breaks) {
  if (!breaks || !Number.isFinite(v)) return -1;
  if (v <= breaks[0]) return 0;
  if (v <= breaks[1]) return 1;
  return 2;
}

/** Bivariate colour of (a, b); grey when either is missing. */
export function bivariateColor(a, b, breaksA, breaksB) {
  const ba = tercileBin(a, breaksA);
  const bb = tercileBin(b, breaksB);
  return ba < 0 || bb < 0 ? MISSING_COLOR : BIVARIATE[bb][ba];
}

/** Relative luminance (WCAG) of a "#rrggbb" or "rgb(r, g, b)" colour; NaN if unparsable. */
export function luminance(color) {
  let rgb;
  const s = String(color).trim();
  let m = /^#([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})$/i.exec(s);
  if (m) rgb = m.slice(1, 4).map((h) => parseInt(h, 16));
  else {
    m = /^rgba?\(\s*([\d.]+)[,\s]+([\d.]+)[,\s]+([\d.]+)/i.exec(s);
    if (!m) return NaN;
    rgb = m.slice(1, 4).map(Number);
  }
  const lin = rgb.map((c) => {
    const x = c / 255;
    return x <= 0.04045 ? x / 12.92 : ((x + 0.055) / 1.055) ** 2.4;
  });
  return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2];
}

/** Dark or light text colour, whichever contrasts more with the fill. */
export function textColorOn(fill) {
  const l = luminance(fill);
  if (Number.isNaN(l)) return "#111111";
  // Contrast against black (#111, L~0.0056) vs white (L=1).
  return (l + 0.05) / (0.0056 + 0.05) >= 1.05 / (l + 0.05) ? "#111111" : "#ffffff";
}
