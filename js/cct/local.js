// The rows of a standalone page (no kernel): Python's level of detail is not
// there, so collapsing, expanding, focusing and searching act on the rows the
// page was exported with. Pure functions: no DOM.

import { plainModel } from "../kit/model.js";
import { FLAG_HAS_CHILDREN, FLAG_HIDDEN, FLAG_MATCH, decodeData, isOther } from "./data.js";

const ROW_COLUMNS = ["color", "color2", "size", "exclusive"];
const SPREAD_COLUMNS = ["min", "mean", "max", "std", "cost", "argmax"];

/**
 * A `_data` object (plain arrays, `names` as strings) for the state's
 * collapsed/expanded/focus/search, from the decoded rows of the export.
 *
 * @param {import("./data.js").CCTData} full decoded rows of the exported view
 * @param {object} raw the exported `_data` (domains, units, totals are kept)
 * @param {{collapsed?: number[], expanded?: number[], focus?: number, search?: string}} st
 * @returns {object}
 */
export function localData(full, raw, st) {
  const collapsed = new Set((st.collapsed || []).map(Number));
  const expanded = new Set((st.expanded || []).map(Number));
  const focus = Number(st.focus ?? -1);
  const needle = String(st.search || "").toLowerCase();
  const focusRow = focus >= 0 && full.rowOf.has(focus) ? full.rowOf.get(focus) : -1;
  const keep = [];
  const newRow = new Int32Array(full.n).fill(-1);
  const shut = new Uint8Array(full.n); // kept and collapsed: its children are not shown
  for (let i = 0; i < full.n; i++) {
    const p = full.parent[i];
    const underKept = p >= 0 && newRow[p] >= 0 && !shut[p];
    const inside = focusRow >= 0 ? i === focusRow || underKept : p < 0 || underKept;
    if (!inside) continue;
    newRow[i] = keep.length;
    keep.push(i);
    if (collapsed.has(full.id[i]) && !expanded.has(full.id[i])) shut[i] = 1;
  }
  const rows = keep.length;
  const out = { ...raw };
  delete out.name_bytes;
  delete out.name_offsets;
  out.n = rows;
  out.id = keep.map((i) => full.id[i]);
  out.parent = keep.map((i) => (full.parent[i] >= 0 ? newRow[full.parent[i]] : -1));
  out.depth = keep.map((i) => full.depth[i] - (focusRow >= 0 ? full.depth[focusRow] : 0));
  out.folded = keep.map((i) => full.folded[i]);
  out.names = keep.map((i) => full.names[i]);
  const matches = [];
  for (let i = 0; i < full.n; i++) if (needle && !isOther(full, i) && full.names[i].toLowerCase().includes(needle)) matches.push(full.id[i]);
  const matchSet = new Set(matches);
  out.flags = keep.map((i) => {
    let f = full.flags[i] & ~(FLAG_HIDDEN | FLAG_MATCH);
    if (full.flags[i] & FLAG_HIDDEN || (shut[i] && (full.children[i].length > 0 || f & FLAG_HAS_CHILDREN))) f |= FLAG_HIDDEN;
    if (matchSet.has(full.id[i])) f |= FLAG_MATCH;
    return f;
  });
  out.match_total = matches.length;
  out.match_ids = matches;
  const num = (v) => (Number.isFinite(v) ? v : null);
  for (const k of ROW_COLUMNS) if (full[k]) out[k] = keep.map((i) => num(full[k][i]));
  if (full.spread && raw.spread) {
    out.spread = { ...raw.spread };
    for (const k of SPREAD_COLUMNS) out.spread[k] = keep.map((i) => num(full.spread[k][i]));
  }
  out.focus_path = focusRow >= 0 ? [...full.focusPath, ...ancestorPath(full, focusRow)] : full.focusPath;
  return out;
}

function ancestorPath(full, row) {
  const out = [];
  for (let r = full.parent[row]; r >= 0; r = full.parent[r]) out.push(full.names[r]);
  return out.reverse();
}

const LOCAL_TRAITS = new Set(["collapsed", "expanded", "focus", "search"]);

/** The local model of a tree's page. */
export function localModel(payload) {
  const full = decodeData(payload.data);
  const st = payload.state || {};
  const values = {
    chart: st.chart === "icicle" ? "icicle" : "tree",
    color: st.color ?? [],
    size: st.size ?? "",
    selection: Array.isArray(st.selection) ? st.selection : [],
    collapsed: [],
    expanded: [],
    focus: -1,
    search: "",
    // only the metrics the page has values of
    metrics: [...new Set([...(Array.isArray(st.color) ? st.color : [st.color]), st.size].filter(Boolean))],
  };
  values._data = localData(full, payload.data, values);
  return plainModel(values, (changed) => {
    if (!changed.some((k) => LOCAL_TRAITS.has(k))) return [];
    values._data = localData(full, payload.data, values);
    return ["_data"];
  });
}
