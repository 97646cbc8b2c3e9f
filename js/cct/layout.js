// Layouts of the CCT view: node-link tidy tree (left to right) and icicle
// (root on the left, depth to the right). Pure functions: no DOM.
// Input is a decoded `_data` (see data.js); output is plain arrays indexed by row.

import { hierarchy, partition, tree } from "d3-hierarchy";

/** U+2026 HORIZONTAL ELLIPSIS, appended to truncated labels. */
export const ELLIPSIS = "\u2026";

/**
 * Truncate `name` to at most `maxChars` characters (code points), ending with
 * an ellipsis when cut. Returns "" when not even one character and the
 * ellipsis fit.
 */
export function truncateLabel(name, maxChars) {
  const chars = Array.from(String(name));
  if (chars.length <= maxChars) return chars.join("");
  if (maxChars < 2) return "";
  return chars.slice(0, maxChars - 1).join("").trimEnd() + ELLIPSIS;
}

/**
 * Approximate rendered width of `text` in px for a sans-serif font of
 * `fontSize` px (deterministic; used when the real width cannot be measured).
 * It errs on the wide side so that labels never overlap.
 */
export function estimateTextWidth(text, fontSize = 12) {
  let w = 0;
  for (const ch of String(text)) {
    if ("il.,:;|!'`".includes(ch)) w += 0.3;
    else if ("mwMW@%".includes(ch)) w += 0.9;
    else if (ch >= "A" && ch <= "Z") w += 0.68;
    else if (ch.codePointAt(0) > 0x2e80) w += 1.0; // CJK and wider
    else w += 0.58;
  }
  return w * fontSize;
}

/**
 * A d3 hierarchy over the visible rows, under a virtual root (row -1) that
 * holds the top rows, so that several top rows work too. Children keep the
 * row order (tree order).
 *
 * @param {import("./data.js").CCTData} data
 */
export function buildHierarchy(data, maxDepth = Infinity) {
  const make = (row) => ({ row, kids: row < 0 ? data.roots : data.depth[row] >= maxDepth ? [] : data.children[row] });
  return hierarchy(make(-1), (d) => d.kids.map(make));
}

/**
 * Each node's own contribution to the icicle size, so that a parent's extent
 * is the sum of its children's plus its own part:
 * - values of an additive (inclusive "sum") metric: value minus the
 *   children's values, clamped at 0;
 * - no values: 1 per leaf (leaf counts).
 * NaN and negative values count as 0. Values that do not add up under their
 * parent (a maximum, an exclusive metric, a spread statistic) must not be
 * given: they have no extent that children fill.
 *
 * @param {import("./data.js").CCTData} data
 * @param {Float32Array|Float64Array|null} values additive size metric per row, or null
 * @returns {Float64Array}
 */
export function ownValues(data, values) {
  const n = data.n;
  const own = new Float64Array(n);
  const clean = (v) => (Number.isFinite(v) && v > 0 ? v : 0);
  if (!values) {
    for (let i = 0; i < n; i++) own[i] = data.children[i].length === 0 ? 1 : 0;
    return own;
  }
  for (let i = 0; i < n; i++) {
    let kids = 0;
    for (const c of data.children[i]) kids += clean(values[c]);
    own[i] = Math.max(0, clean(values[i]) - kids);
  }
  return own;
}

/**
 * Tidy tree, left to right (d3-hierarchy `tree().nodeSize`). Every depth gets
 * its own column, as wide as its widest label, so labels never run into the
 * next column; rows are `rowHeight` apart, so labels never overlap vertically.
 *
 * @param {import("./data.js").CCTData} data
 * @param {object} [opts]
 * @param {number} [opts.rowHeight=22] vertical distance between sibling rows
 * @param {(row:number)=>number} [opts.labelWidth] width of the label(s) right of the mark
 * @param {(row:number)=>number} [opts.radius] radius of the mark
 * @param {number} [opts.labelGap=6] gap between mark and label
 * @param {number} [opts.linkGap=28] minimum horizontal room for links between columns
 * @param {number} [opts.maxDepth=Infinity] the deepest level laid out (deeper rows get no place)
 * @returns {{x: Float64Array, y: Float64Array, columns: number[], linkStart: Float64Array,
 *   width: number, height: number}} `x` horizontal, `y` vertical mark centres (content
 *   starts at 0,0); `linkStart[i]`: x where links leave row i (after its label).
 */
export function treeLayout(data, opts = {}) {
  const rowHeight = opts.rowHeight ?? 22;
  const labelGap = opts.labelGap ?? 6;
  const linkGap = opts.linkGap ?? 28;
  const radius = opts.radius ?? (() => 4.5);
  const labelWidth = opts.labelWidth ?? ((i) => estimateTextWidth(data.names[i]));
  const limit = opts.maxDepth ?? Infinity;
  const n = data.n;
  const x = new Float64Array(n);
  const y = new Float64Array(n);
  const linkStart = new Float64Array(n);
  if (n === 0) return { x, y, columns: [], linkStart, width: 0, height: 0 };

  // Column widths: the widest mark + label at each depth.
  let maxDepth = 0;
  for (let i = 0; i < n; i++) if (data.depth[i] <= limit) maxDepth = Math.max(maxDepth, data.depth[i]);
  const maxR = new Float64Array(maxDepth + 1);
  const reach = new Float64Array(maxDepth + 1); // right end of marks+labels, from the column centre
  const ownReach = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const d = data.depth[i];
    if (d > limit) continue;
    const r = radius(i);
    ownReach[i] = r + labelGap + labelWidth(i);
    maxR[d] = Math.max(maxR[d], r);
    reach[d] = Math.max(reach[d], ownReach[i]);
  }
  const columns = [maxR[0]];
  for (let d = 1; d <= maxDepth; d++) {
    columns.push(columns[d - 1] + reach[d - 1] + linkGap + maxR[d]);
  }

  const root = buildHierarchy(data, limit);
  tree()
    .nodeSize([rowHeight, 1])
    .separation((a, b) => (a.parent === b.parent ? 1 : 1.25))(root);
  let top = Infinity;
  let bottom = -Infinity;
  root.each((node) => {
    if (node.data.row < 0) return;
    top = Math.min(top, node.x);
    bottom = Math.max(bottom, node.x);
  });
  root.each((node) => {
    const i = node.data.row;
    if (i < 0) return;
    y[i] = node.x - top + rowHeight / 2;
    x[i] = columns[data.depth[i]];
    linkStart[i] = x[i] + ownReach[i] + 4;
  });
  const width = columns[maxDepth] + reach[maxDepth];
  return { x, y, columns, linkStart, width, height: bottom - top + rowHeight };
}

/**
 * Icicle: root on the left, depth to the right, each node's vertical extent
 * proportional to its size (d3-hierarchy `partition`), one column of
 * `columnWidth` px per depth. Only an additive metric (`opts.additive`: an
 * inclusive sum, whose children's values fill their parent's) sizes the
 * nodes; otherwise, or without usable values, leaf counts do.
 *
 * @param {import("./data.js").CCTData} data
 * @param {object} [opts]
 * @param {Float32Array|Float64Array|null} [opts.values] size metric per row
 * @param {boolean} [opts.additive=false] whether `values` add up under a parent
 * @param {number} [opts.height=480] total height
 * @param {number} [opts.columnWidth=160] width of a depth column
 * @returns {{x0: Float64Array, x1: Float64Array, y0: Float64Array, y1: Float64Array,
 *   value: Float64Array, width: number, height: number, bySize: boolean}}
 */
export function icicleLayout(data, opts = {}) {
  const height = opts.height ?? 480;
  const columnWidth = opts.columnWidth ?? 160;
  const n = data.n;
  const x0 = new Float64Array(n);
  const x1 = new Float64Array(n);
  const y0 = new Float64Array(n);
  const y1 = new Float64Array(n);
  const value = new Float64Array(n);
  if (n === 0) return { x0, x1, y0, y1, value, width: 0, height: 0, bySize: false };

  const values = opts.additive ? opts.values ?? null : null;
  let own = ownValues(data, values);
  let bySize = Boolean(values);
  if (!(own.reduce((a, b) => a + b, 0) > 0)) {
    own = ownValues(data, null);
    bySize = false;
  }
  const root = buildHierarchy(data).sum((d) => (d.row < 0 ? 0 : own[d.row]));
  partition().size([height, 1]).round(false)(root);
  let maxDepth = 0;
  root.each((node) => {
    const i = node.data.row;
    if (i < 0) return;
    const d = data.depth[i];
    maxDepth = Math.max(maxDepth, d);
    y0[i] = node.x0;
    y1[i] = node.x1;
    x0[i] = d * columnWidth;
    x1[i] = (d + 1) * columnWidth;
    value[i] = node.value;
  });
  return { x0, x1, y0, y1, value, width: (maxDepth + 1) * columnWidth, height, bySize };
}
