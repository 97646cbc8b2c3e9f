// Decoding of the ProfilesView's `_data` trait (cctviz/views/CONTRACT.md).
// Pure: no DOM. Columns arrive as DataViews (the widget) or plain arrays with
// null for NaN (export and standalone payloads).

import { column } from "../format.js";

/** A numeric column of length n from a binary buffer or a plain array; `fill` when absent. */
const numericColumn = (buf, dtype, n, fill = NaN) => column(buf, dtype, n, fill);

const str = (v, fallback = "") => (typeof v === "string" ? v : fallback);
const unit = (v) => (typeof v === "string" && v ? v : null);

/**
 * @typedef {object} ProfilesData
 * @property {number} n dots
 * @property {Int32Array} id profile ids
 * @property {Float32Array} x
 * @property {Float32Array} y
 * @property {string[]} label
 * @property {{name: string, unit: string|null, note: string, label: string}} xAxis
 * @property {{name: string, unit: string|null, note: string, label: string}} yAxis
 * @property {"numeric"|"category"|"none"} colorKind
 * @property {Float32Array|null} color numeric colour values
 * @property {Int32Array|null} category category index per dot (-1: missing)
 * @property {string[]} categories
 * @property {string} colorLabel
 * @property {string|null} colorUnit
 * @property {number[]|null} explained
 * @property {string[]} dead labels of profiles left out
 * @property {string[]} numeric the columns `x` and `y` may name
 * @property {number} profilesTotal
 * @property {Map<number, number>} rowOf profile id -> row
 */

/**
 * Decode `_data` (missing or empty: n = 0).
 *
 * @param {object|null|undefined} raw
 * @returns {ProfilesData}
 */
export function decodeProfiles(raw) {
  const d = raw && typeof raw === "object" ? raw : {};
  const n = Number.isInteger(d.n) && d.n > 0 ? d.n : 0;
  const id = numericColumn(d.id, "int32", n, -1);
  const axis = (k) => ({
    name: str(d[`${k}_name`], str(d[`${k}_label`])),
    unit: unit(d[`${k}_unit`]),
    note: str(d[`${k}_note`]),
    label: str(d[`${k}_label`]),
  });
  const kind = d.color_kind === "numeric" || d.color_kind === "category" ? d.color_kind : "none";
  const labels = Array.isArray(d.label) ? d.label : [];
  const rowOf = new Map();
  for (let i = 0; i < n; i++) rowOf.set(id[i], i);
  return {
    n,
    id,
    x: numericColumn(d.x, "float32", n),
    y: numericColumn(d.y, "float32", n),
    label: Array.from({ length: n }, (_, i) => String(labels[i] ?? `profile ${id[i]}`)),
    xAxis: axis("x"),
    yAxis: axis("y"),
    colorKind: kind,
    color: kind === "numeric" ? numericColumn(d.color, "float32", n) : null,
    category: kind === "category" ? numericColumn(d.category, "int32", n, -1) : null,
    categories: Array.isArray(d.categories) ? d.categories.map(String) : [],
    colorLabel: str(d.color_label),
    colorUnit: unit(d.color_unit),
    explained: Array.isArray(d.explained) ? d.explained.map(Number) : null,
    dead: Array.isArray(d.dead) ? d.dead.map(String) : [],
    numeric: Array.isArray(d.numeric) ? d.numeric.map(String) : [],
    profilesTotal: Number.isInteger(d.profiles_total) ? d.profiles_total : n,
    rowOf,
  };
}
