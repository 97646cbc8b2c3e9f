// Decoding of the Sankey view's `_data` trait (cctviz/views/CONTRACT.md,
// "SankeyView"). Pure: no DOM. Binary buffers (DataViews) and plain arrays
// are both accepted wherever a numeric column is expected.

import { decodeWaits } from "../kit/waits.js";
import { column, columnLength, formatValue } from "../format.js";

const strings = (a, n) => Array.from({ length: n }, (_, i) => (Array.isArray(a) && a[i] !== undefined && a[i] !== null ? String(a[i]) : ""));
const int = (v, dflt = 0) => (Number.isFinite(Number(v)) ? Math.trunc(Number(v)) : dflt);
const numOrNull = (v) => (v !== null && v !== undefined && Number.isFinite(Number(v)) ? Number(v) : null);

/** A `[lo, hi]` pair of finite numbers, or null. */
function pair(v) {
  if (!Array.isArray(v) || v.length !== 2) return null;
  const a = Number(v[0]);
  const b = Number(v[1]);
  return Number.isFinite(a) && Number.isFinite(b) ? [a, b] : null;
}

/** One expanded super node's call sites (plain JSON arrays), checked. */
function decodeSites(s, n) {
  if (!s || typeof s !== "object") return null;
  const node = int(s.node, -1);
  if (node < 0 || node >= n) return null;
  const len = Array.isArray(s.id) ? s.id.length : 0;
  const k = Math.min(len, Number.isInteger(s.n) ? s.n : len);
  const arr = (a, dflt) => Array.from({ length: k }, (_, i) => (Array.isArray(a) && Number.isFinite(Number(a[i])) ? Number(a[i]) : dflt));
  const parent = arr(s.parent, -1).map((p, i) => (p >= 0 && p < i ? p : -1));
  const depth = parent.map(() => 0);
  for (let i = 0; i < k; i++) depth[i] = parent[i] < 0 ? 0 : depth[parent[i]] + 1;
  return { node, n: k, id: arr(s.id, -1), parent, depth, value: arr(s.value, 0), label: strings(s.label, k) };
}

/** The diff object, decoded; null outside diff mode. */
function decodeDiff(df, n, B) {
  if (!df || typeof df !== "object") return null;
  return {
    aLabel: String(df.a_label ?? "A"),
    bLabel: String(df.b_label ?? "B"),
    aProfiles: int(df.a_profiles),
    bProfiles: int(df.b_profiles),
    meanA: column(df.mean_a, "float32", n, NaN),
    meanB: column(df.mean_b, "float32", n, NaN),
    delta: column(df.delta, "float32", n, NaN),
    domain: pair(df.delta_domain),
    dhist: column(df.dhist, "int32", n * B, 0),
    dhistLo: column(df.dhist_lo, "float32", n, NaN),
    dhistHi: column(df.dhist_hi, "float32", n, NaN),
  };
}

/**
 * @typedef {object} SankeyData
 * @property {number} n super nodes
 * @property {number} nDummy dummy nodes
 * @property {number} m links
 * @property {number} B bins
 * @property {string[]} group full group names
 * @property {string[]} label short names
 * @property {object|null} diff
 * @property {object[]} sites one per expanded super node
 */

/**
 * Decode the `_data` trait. A missing or empty `_data` gives `n = 0`.
 *
 * @param {object|null|undefined} raw
 * @returns {SankeyData}
 */
export function decodeSankey(raw) {
  const d = raw && typeof raw === "object" ? raw : {};
  const n = Math.max(0, int(d.n));
  const nDummy = Math.max(0, int(d.n_dummy));
  const B = Math.max(0, int(d.bins));
  const f32 = (k, fill = NaN) => column(d[k], "float32", n, fill);
  const i32 = (k, fill = 0) => column(d[k], "int32", n, fill);
  const m = Math.min(columnLength(d.link_source, 4), columnLength(d.link_target, 4), columnLength(d.link_value, 4));
  const k = Math.min(columnLength(d.outlier_node, 4), columnLength(d.outlier_profile, 4), columnLength(d.outlier_value, 4));
  const e = Math.min(columnLength(d.edge_source, 4), columnLength(d.edge_target, 4));
  const sites = [];
  if (Array.isArray(d.sites)) {
    const seen = new Set();
    for (const s of d.sites) {
      const t = decodeSites(s, n);
      if (t && !seen.has(t.node)) {
        seen.add(t.node);
        sites.push(t);
      }
    }
  }
  const out = {
    n,
    nDummy,
    columns: Math.max(0, int(d.columns)),
    B,
    group: strings(d.group, n),
    label: strings(d.label, n),
    column: i32("column"),
    value: f32("value", 0),
    members: i32("members"),
    min: f32("min"),
    max: f32("max"),
    // the model's mean (cctviz.model.stats: absence rule, the same number as
    // ens.stats and the tree view); value is the height (flows add up)
    mean: d.mean ? f32("mean") : f32("value"),
    counted: i32("counted"),
    std: f32("std"),
    q1: f32("q1"),
    median: f32("median"),
    q3: f32("q3"),
    whiskerLo: f32("whisker_lo"),
    whiskerHi: f32("whisker_hi"),
    cost: f32("cost"),
    imbalance: f32("imbalance"),
    argmax: i32("argmax", -1),
    hist: column(d.hist, "int32", n * B, 0),
    histSel: d.hist_sel ? column(d.hist_sel, "int32", n * B, 0) : null,
    selMean: d.sel_mean ? column(d.sel_mean, "float32", n, NaN) : null,
    outlierNode: column(d.outlier_node, "int32", k, 0),
    outlierProfile: column(d.outlier_profile, "int32", k, 0),
    outlierValue: column(d.outlier_value, "float32", k, 0),
    outlierMore: i32("outlier_more"),
    m,
    linkSource: column(d.link_source, "int32", m, 0),
    linkTarget: column(d.link_target, "int32", m, 0),
    linkValue: column(d.link_value, "float32", m, 0),
    linkEdge: columnLength(d.link_edge, 4) >= m ? column(d.link_edge, "int32", m, 0) : null,
    edgeSource: column(d.edge_source, "int32", e, 0),
    edgeTarget: column(d.edge_target, "int32", e, 0),
    dummyColumn: column(d.dummy_column, "int32", nDummy, 0),
    backEdges: Math.max(0, int(d.back_edges)),
    metric: typeof d.metric === "string" ? d.metric : "",
    unit: typeof d.unit === "string" && d.unit ? d.unit : null,
    rule: typeof d.rule === "string" ? d.rule : "sum",
    profiles: Math.max(0, int(d.profiles)),
    failed: Math.max(0, int(d.failed)),
    profilesTotal: Math.max(0, int(d.profiles_total)),
    labels: d.labels && typeof d.labels === "object" ? d.labels : {},
    costThreshold: numOrNull(d.cost_threshold),
    sites,
    diff: decodeDiff(d.diff, n, B),
    waits: decodeWaits(d.waits, n),
    treeSize: Math.max(0, int(d.tree_size)),
  };
  out.outliersOf = Array.from({ length: n }, () => []);
  for (let j = 0; j < k; j++) {
    const v = out.outlierNode[j];
    if (v >= 0 && v < n) out.outliersOf[v].push(j);
  }
  out.sitesOf = new Map(sites.map((s) => [s.node, s]));
  return out;
}

/** A value in the metric's unit: "1.32 s". */
export function fmt(d, v) {
  return formatValue(v, d.unit);
}

/** The label of profile p ("rank 3"), or "profile p". */
export function profileLabel(d, p) {
  const s = d.labels[String(p)];
  return typeof s === "string" && s ? s : `profile ${p}`;
}

/** Whether node k gets the imbalance cue (`cost >= cost_threshold`, > 0); not
 *  a collective whose waiting is known (its cue names the most waited for rank instead). */
export function hasCue(d, k) {
  const w = waitOf(d, k);
  if (d.costThreshold === null || d.diff || (w && w.pure)) return false;
  const c = d.cost[k];
  return Number.isFinite(c) && c > 0 && c >= d.costThreshold;
}

/** Who the waiting at super node k waits for (kit/waits.js), or undefined. */
export function waitOf(d, k) {
  return d.waits && !d.diff ? d.waits.get(k) : undefined;
}

/** The range of node k's distribution as drawn: [min, max], or the differences' range in diff mode. */
export function distRange(d, k) {
  if (d.diff) return [d.diff.dhistLo[k], d.diff.dhistHi[k]];
  return [d.min[k], d.max[k]];
}

/** The counts drawn on node k (B bins): `hist`, or `dhist` in diff mode. */
export function binsOf(d, k) {
  const src = d.diff ? d.diff.dhist : d.hist;
  return src.subarray(k * d.B, (k + 1) * d.B);
}

/** Per-node columns of a decoded Sankey (arrays of length n), by field name. */
const NODE_FIELDS = ["group", "label", "column", "value", "members", "min", "max", "mean", "counted", "std", "q1", "median", "q3", "whiskerLo", "whiskerHi", "cost", "imbalance", "argmax", "outlierMore"];
const DIFF_NODE_FIELDS = ["meanA", "meanB", "delta", "dhistLo", "dhistHi"];

/** `a` at the indices `keep` (typed arrays stay typed). */
function pick(a, keep) {
  if (!a) return a;
  const out = Array.isArray(a) ? new Array(keep.length) : new a.constructor(keep.length);
  for (let j = 0; j < keep.length; j++) out[j] = a[keep[j]];
  return out;
}

/** `B` bins per node of the nodes `keep`. */
function pickBins(a, keep, B) {
  if (!a) return a;
  const out = new a.constructor(keep.length * B);
  for (let j = 0; j < keep.length; j++) out.set(a.subarray(keep[j] * B, (keep[j] + 1) * B), j * B);
  return out;
}

/**
 * The decoded Sankey cut to its first `columns` columns (what a figure of a
 * given width can hold at its font size): the super nodes, dummies, links and
 * edges that lie in them, renumbered; `kept[j]` is node j's id in `d`, `cut` the
 * nodes left out. A node's height is its inclusive value, so the time of the
 * groups left out is still in their callers' heights.
 *
 * @param {SankeyData} d
 * @param {number} columns
 * @returns {SankeyData & {kept: Int32Array, cut: number, cutColumns: number}}
 */
export function keepColumns(d, columns) {
  const keep = [];
  for (let k = 0; k < d.n; k++) if (d.column[k] < columns) keep.push(k);
  const keepDummy = [];
  for (let j = 0; j < d.nDummy; j++) if (d.dummyColumn[j] < columns) keepDummy.push(j);
  const vertex = new Int32Array(d.n + d.nDummy).fill(-1); // old vertex -> new
  keep.forEach((k, j) => (vertex[k] = j));
  keepDummy.forEach((k, j) => (vertex[d.n + k] = keep.length + j));
  // an edge stays when both its ends do; its links and dummies go with it otherwise
  const edgeMap = new Int32Array(d.edgeSource.length).fill(-1);
  const edges = [];
  for (let e = 0; e < d.edgeSource.length; e++) {
    if (vertex[d.edgeSource[e]] >= 0 && vertex[d.edgeTarget[e]] >= 0) {
      edgeMap[e] = edges.length;
      edges.push(e);
    }
  }
  const links = [];
  for (let i = 0; i < d.m; i++) {
    const s = vertex[d.linkSource[i]];
    const t = vertex[d.linkTarget[i]];
    const e = d.linkEdge ? d.linkEdge[i] : -1;
    if (s < 0 || t < 0 || (d.linkEdge && e >= 0 && edgeMap[e] < 0)) continue;
    links.push(i);
  }
  const out = { ...d, n: keep.length, nDummy: keepDummy.length, m: links.length };
  for (const f of NODE_FIELDS) out[f] = pick(d[f], keep);
  out.hist = pickBins(d.hist, keep, d.B);
  out.histSel = pickBins(d.histSel, keep, d.B);
  out.selMean = pick(d.selMean, keep);
  out.dummyColumn = pick(d.dummyColumn, keepDummy);
  out.linkSource = Int32Array.from(links, (i) => vertex[d.linkSource[i]]);
  out.linkTarget = Int32Array.from(links, (i) => vertex[d.linkTarget[i]]);
  out.linkValue = pick(d.linkValue, links);
  out.linkEdge = d.linkEdge ? Int32Array.from(links, (i) => (d.linkEdge[i] >= 0 ? edgeMap[d.linkEdge[i]] : d.linkEdge[i])) : null;
  out.edgeSource = Int32Array.from(edges, (e) => vertex[d.edgeSource[e]]);
  out.edgeTarget = Int32Array.from(edges, (e) => vertex[d.edgeTarget[e]]);
  const outl = [];
  for (let j = 0; j < d.outlierNode.length; j++) if (vertex[d.outlierNode[j]] >= 0 && d.outlierNode[j] < d.n) outl.push(j);
  out.outlierNode = Int32Array.from(outl, (j) => vertex[d.outlierNode[j]]);
  out.outlierProfile = pick(d.outlierProfile, outl);
  out.outlierValue = pick(d.outlierValue, outl);
  out.outliersOf = Array.from({ length: keep.length }, () => []);
  outl.forEach((j, jj) => out.outliersOf[out.outlierNode[jj]].push(jj));
  out.sites = d.sites.filter((s) => vertex[s.node] >= 0).map((s) => ({ ...s, node: vertex[s.node] }));
  out.sitesOf = new Map(out.sites.map((s) => [s.node, s]));
  if (d.diff) {
    out.diff = { ...d.diff, dhist: pickBins(d.diff.dhist, keep, d.B) };
    for (const f of DIFF_NODE_FIELDS) out.diff[f] = pick(d.diff[f], keep);
  }
  out.waits = new Map([...d.waits].filter(([k]) => vertex[k] >= 0).map(([k, w]) => [vertex[k], w]));
  out.columns = Math.min(d.columns, columns);
  out.kept = Int32Array.from(keep);
  out.cut = d.n - keep.length;
  let deepest = 0;
  for (let k = 0; k < d.n; k++) deepest = Math.max(deepest, d.column[k] + 1);
  out.cutColumns = Math.max(0, deepest - columns);
  return out;
}
