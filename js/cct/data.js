// Decoding of the CCT view's `_data` trait (see cctviz/views/CONTRACT.md).
// Pure functions: no DOM, no d3.

import { column, columnLength, formatRatio, formatValue, unitLabel } from "../format.js";
import { decodeWaits } from "../kit/waits.js";

/** Flag bits of `_data.flags`. */
export const FLAG_HAS_CHILDREN = 1;
export const FLAG_HIDDEN = 2;
export const FLAG_USER_COLLAPSED = 4;
export const FLAG_MATCH = 8;
export const FLAG_OTHER = 16;

// An embedded V8 (the exporter) has no TextDecoder: decode by hand there.
const decoder = typeof TextDecoder === "function" ? new TextDecoder("utf-8") : { decode: decodeUTF8 };

/** UTF-8 bytes to a string; an invalid sequence becomes U+FFFD (as TextDecoder does, per maximal subpart). */
export function decodeUTF8(bytes) {
  let out = "";
  let i = 0;
  const n = bytes.length;
  while (i < n) {
    const b = bytes[i];
    let cp = 0xfffd;
    let len = 1;
    if (b < 0x80) cp = b;
    else {
      const need = b >= 0xf0 && b <= 0xf4 ? 3 : b >= 0xe0 ? (b <= 0xef ? 2 : 0) : b >= 0xc2 ? 1 : 0;
      if (need) {
        const lo = b === 0xe0 ? 0xa0 : b === 0xf0 ? 0x90 : 0x80;
        const hi = b === 0xed ? 0x9f : b === 0xf4 ? 0x8f : 0xbf;
        let v = b & (0x3f >> need);
        let k = 1;
        for (; k <= need && i + k < n; k++) {
          const c = bytes[i + k];
          if (c < (k === 1 ? lo : 0x80) || c > (k === 1 ? hi : 0xbf)) break;
          v = (v << 6) | (c & 0x3f);
        }
        if (k === need + 1) cp = v;
        len = k;
      }
    }
    out += String.fromCodePoint(cp);
    i += len;
  }
  return out;
}

/** View any binary buffer (DataView, typed array, ArrayBuffer) as bytes without copying. */
function bytesOf(buf) {
  if (Array.isArray(buf)) return Uint8Array.from(buf);
  if (buf instanceof ArrayBuffer) return new Uint8Array(buf);
  if (ArrayBuffer.isView(buf)) return new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength);
  return new Uint8Array(0);
}

/**
 * Decode the names: name i is `bytes[offsets[i]:offsets[i+1]]` as UTF-8.
 * Invalid UTF-8 becomes U+FFFD; offsets are clamped to the buffer.
 *
 * @param {DataView|ArrayBufferView|ArrayBuffer} nameBytes
 * @param {DataView|ArrayBufferView|ArrayBuffer|number[]} nameOffsets int32[n+1]
 * @param {number} n
 * @returns {string[]}
 */
export function decodeNames(nameBytes, nameOffsets, n) {
  const bytes = bytesOf(nameBytes);
  const offsets = column(nameOffsets, "int32", n + 1, 0);
  const names = new Array(n);
  for (let i = 0; i < n; i++) {
    const a = Math.max(0, Math.min(bytes.length, offsets[i]));
    const b = Math.max(a, Math.min(bytes.length, offsets[i + 1]));
    names[i] = decoder.decode(bytes.subarray(a, b));
  }
  return names;
}

/** [min, max] of the finite values of `values` at rows where `keep(i)`; null if none. */
export function finiteExtent(values, keep = () => true) {
  if (!values) return null;
  let lo = Infinity;
  let hi = -Infinity;
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (Number.isFinite(v) && keep(i)) {
      if (v < lo) lo = v;
      if (v > hi) hi = v;
    }
  }
  return lo <= hi ? [lo, hi] : null;
}

/** A `[min, max]` JSON pair if valid, else null. */
function domainOf(pair) {
  if (!Array.isArray(pair) || pair.length !== 2) return null;
  const lo = Number(pair[0]);
  const hi = Number(pair[1]);
  return Number.isFinite(lo) && Number.isFinite(hi) && lo <= hi ? [lo, hi] : null;
}

const RULES = new Set(["sum", "max", "min", "none"]);

/** The `aggregation` map; unknown rules read as "none". */
function aggregationOf(d) {
  const out = {};
  if (d.aggregation && typeof d.aggregation === "object") {
    for (const [m, r] of Object.entries(d.aggregation)) out[m] = RULES.has(r) ? r : "none";
  }
  return out;
}

/**
 * @typedef {object} CCTData
 * @property {number} n visible rows
 * @property {number} total nodes in the full tree
 * @property {Int32Array} id
 * @property {Int32Array} parent row of the parent, -1 for top rows
 * @property {Int32Array} depth
 * @property {Uint8Array} flags
 * @property {Int32Array} folded
 * @property {string[]} names
 * @property {Float32Array|null} color
 * @property {Float32Array|null} color2
 * @property {Float32Array|null} size
 * @property {[number,number]|null} colorDomain
 * @property {[number,number]|null} color2Domain
 * @property {[number,number]|null} sizeDomain
 * @property {Object<string,string>} units canonical unit of each metric (none for ratios)
 * @property {Object<string,string>} aggregation rule of each metric: "sum" (additive),
 *   "max", "min" or "none" (how values of whole subtrees combine)
 * @property {Float32Array|null} exclusive exclusive values behind the first colour metric
 * @property {string} exclusiveMetric name of the exclusive metric ("" when none)
 * @property {number|null} colorTotal the whole tree's value of an additive colour metric
 * @property {string[]} focusPath
 * @property {number} matchTotal search matches in the whole tree (not only the rows shown)
 * @property {number[]} matchIds their node ids in tree order (at most Python's cap)
 * @property {object|null} spread
 * @property {Map<number,object>} waits who the waiting at collective rows waits for (kit/waits.js decodeWaits)
 * @property {number[][]} children row indices of each row's children, in order
 * @property {number[]} roots top rows, in order
 * @property {Map<number,number>} rowOf id -> row
 */

/**
 * Decode the `_data` trait into typed arrays and plain objects.
 * A missing or empty `_data` gives `n = 0`.
 *
 * @param {object|null|undefined} raw the `_data` trait
 * @returns {CCTData}
 */
export function decodeData(raw) {
  const d = raw && typeof raw === "object" ? raw : {};
  const n = Number.isInteger(d.n) && d.n > 0 ? d.n : 0;
  const id = column(d.id, "int32", n, 0);
  const parent = column(d.parent, "int32", n, -1);
  const depth = column(d.depth, "int32", n, 0);
  const flags = column(d.flags, "uint8", n, 0);
  const folded = column(d.folded, "int32", n, 0);
  const names = Array.isArray(d.names)
    ? Array.from({ length: n }, (_, i) => String(d.names[i] ?? ""))
    : d.name_bytes !== undefined || d.name_offsets !== undefined
    ? decodeNames(d.name_bytes ?? new ArrayBuffer(0), d.name_offsets ?? [], n)
    : new Array(n).fill("");
  const color = column(d.color, "float32", n);
  const color2 = column(d.color2, "float32", n);
  const size = column(d.size, "float32", n);
  const notOther = (i) => (flags[i] & FLAG_OTHER) === 0;

  const children = Array.from({ length: n }, () => []);
  const roots = [];
  const rowOf = new Map();
  for (let i = 0; i < n; i++) {
    const p = parent[i];
    // A parent must come before its child (pre-order); anything else is a top row.
    if (p >= 0 && p < i) children[p].push(i);
    else {
      parent[i] = -1;
      roots.push(i);
    }
    rowOf.set(id[i], i);
  }
  // Depth from the parent links (robust against an inconsistent `depth` column).
  for (let i = 0; i < n; i++) depth[i] = parent[i] < 0 ? 0 : depth[parent[i]] + 1;

  let spread = null;
  const s = d.spread;
  if (s && typeof s === "object") {
    spread = {
      metric: typeof s.metric === "string" ? s.metric : "",
      profiles: Number.isFinite(s.profiles) ? s.profiles : 0,
      min: column(s.min, "float32", n, NaN),
      mean: column(s.mean, "float32", n, NaN),
      max: column(s.max, "float32", n, NaN),
      std: column(s.std, "float32", n, NaN),
      cost: column(s.cost, "float32", n, NaN),
      costThreshold: Number.isFinite(s.cost_threshold) ? s.cost_threshold : null,
      cueShare: Number.isFinite(s.cue_share) ? s.cue_share : null,
      // what the share is of: an additive metric's total, else its largest mean
      cueBasis: typeof s.cue_basis === "string" && s.cue_basis ? s.cue_basis : "the total",
      failed: Number.isFinite(s.failed) ? s.failed : 0,
      argmax: column(s.argmax, "int32", n, -1),
      labels: s.labels && typeof s.labels === "object" ? s.labels : {},
    };
  }

  return {
    n,
    total: Number.isFinite(d.total) ? d.total : n,
    id,
    parent,
    depth,
    flags,
    folded,
    names,
    color,
    color2,
    size,
    colorDomain: domainOf(d.color_domain) ?? finiteExtent(color, notOther),
    color2Domain: domainOf(d.color2_domain) ?? finiteExtent(color2, notOther),
    sizeDomain: domainOf(d.size_domain) ?? finiteExtent(size, notOther),
    units: d.units && typeof d.units === "object" ? d.units : {},
    aggregation: aggregationOf(d),
    exclusive: column(d.exclusive, "float32", n),
    exclusiveMetric: typeof d.exclusive_metric === "string" ? d.exclusive_metric : "",
    colorTotal: Number.isFinite(d.color_total) ? d.color_total : null,
    focusPath: Array.isArray(d.focus_path) ? d.focus_path.map(String) : [],
    matchTotal: Number.isFinite(d.match_total) ? d.match_total : 0,
    matchIds: d.match_ids !== undefined && d.match_ids !== null ? Array.from(column(d.match_ids, "int32", columnLength(d.match_ids, 4))) : [],
    spread,
    waits: decodeWaits(d.waits, n),
    children,
    roots,
    rowOf,
  };
}

/** Who the waiting at row i waits for (kit/waits.js), or undefined. */
export function waitOf(data, i) {
  return data.waits ? data.waits.get(i) : undefined;
}

/** True for an "other" node (folded siblings). */
export function isOther(data, i) {
  return (data.flags[i] & FLAG_OTHER) !== 0 || data.id[i] < 0;
}

/** Whether row i has children in the full tree (or is an "other" node, which can be expanded). */
export function isExpandable(data, i) {
  return (data.flags[i] & FLAG_HAS_CHILDREN) !== 0 || isOther(data, i);
}

/** Whether row i is shown collapsed (its children are hidden). */
export function isCollapsed(data, i) {
  return isOther(data, i) || (data.flags[i] & FLAG_HIDDEN) !== 0;
}

/** Id of the node whose children an "other" node stands for (`id = -2 - parent_id`). */
export function otherParentId(data, i) {
  const p = data.parent[i];
  return p >= 0 ? data.id[p] : -2 - data.id[i];
}

/** Names from the top row down to row i (inclusive). */
export function ancestorNames(data, i) {
  const out = [];
  for (let r = i; r >= 0; r = data.parent[r]) out.push(data.names[r]);
  return out.reverse();
}

/** Whether the values of `metric` add up under a parent (an inclusive sum): only those size an icicle. */
export function isAdditive(data, metric) {
  return Boolean(metric) && Object.prototype.hasOwnProperty.call(data.aggregation, metric) && data.aggregation[metric] === "sum";
}

/** What the imbalance of row i costs (max - mean over the profiles), NaN when unknown. */
export function imbalanceCost(data, i) {
  const s = data.spread;
  if (!s || !s.cost) return NaN;
  const c = s.cost[i];
  return Number.isFinite(c) ? c : NaN;
}

/**
 * Whether row i gets the imbalance cue: its imbalance costs at least the
 * threshold Python sent (a share of the whole tree's mean value).
 */
export function hasImbalanceCue(data, i) {
  const s = data.spread;
  if (!s || s.costThreshold === null || isOther(data, i)) return false;
  const w = waitOf(data, i);
  if (w && w.pure) return false; // the waiter is not the cause: the wait cue names it
  const c = imbalanceCost(data, i);
  return c > 0 && c >= s.costThreshold;
}

/** Imbalance (max / mean) of row i, NaN when unknown. */
export function imbalance(data, i) {
  const s = data.spread;
  if (!s) return NaN;
  const mean = s.mean[i];
  const max = s.max[i];
  if (!Number.isFinite(mean) || !Number.isFinite(max) || mean <= 0) return NaN;
  return max / mean;
}

/** Whether `metric` is a ratio without unit (an ensemble's `"<m> [imbalance]"`, max/mean). */
export function isRatioMetric(metric) {
  return String(metric).endsWith(" [imbalance]");
}

/** The unit of `metric` (canonical, from `_data.units`), or null. */
export function unitOf(data, metric) {
  return Object.prototype.hasOwnProperty.call(data.units, metric) ? data.units[metric] : null;
}

/**
 * A metric's name with its unit, for legends: "time (inc) [ms]",
 * "time (inc) [cost] [ms]", "time [unit unknown]" (a time or size metric with
 * no stated unit, as Python's `unit_label`), "time (inc) [imbalance] (max/mean)".
 */
export function metricLabel(data, metric) {
  if (isRatioMetric(metric)) return `${metric} (max/mean)`;
  const base = metric.endsWith(" (inc)") ? metric.slice(0, -" (inc)".length) : metric;
  return unitLabel(metric, { [base]: unitOf(data, metric) });
}

/**
 * A metric's name for a tooltip or an aria-label line, where the value shows
 * its own unit: the plain name, or the name with "[unit unknown]".
 */
export function metricName(data, metric) {
  return unitOf(data, metric) || isRatioMetric(metric) ? metric : metricLabel(data, metric);
}

/**
 * A metric's name above values that carry their own units (legends' ticks, labels):
 * "time (inc)" over "57.9 us … 9.63 s", not "time (inc) [us]" (the recorded unit, which
 * the values do not use); "[unit unknown]" where no unit is known; a ratio says
 * "(max/mean)".
 */
export function legendName(data, metric) {
  return isRatioMetric(metric) ? metricLabel(data, metric) : metricName(data, metric);
}

/** A value of `metric` as a person reads it: "75.3 ms", "3.73 MB", "2.3×", "n/a". */
export function formatMetricValue(data, metric, v) {
  return isRatioMetric(metric) ? formatRatio(v) : formatValue(v, unitOf(data, metric));
}
