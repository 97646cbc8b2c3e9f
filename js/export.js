// Entry of cctviz/static/cctviz-export.js (an IIFE bundle, global
// `cctvizExport`): the browser-free exporter that Python runs in an embedded
// V8 (mini-racer). No window, no document: figure.js draws into shim.js.

import "./kinds.js";
import { viewKinds, viewOf } from "./kit/registry.js";

/** Figures by view kind (the registry's `figure` parts). */
export const FIGURES = Object.fromEntries(viewKinds().map((k) => [k, viewOf(k).figure]));

/**
 * Render a payload (JSON text: {kind, data, state, options}) to SVG text.
 *
 * @param {string} payloadJSON
 * @returns {string}
 */
export function renderSVG(payloadJSON) {
  const p = typeof payloadJSON === "string" ? JSON.parse(payloadJSON) : payloadJSON;
  const kind = p.kind || "cct";
  const figure = viewOf(kind)?.figure;
  if (!figure) throw new Error(`cctviz export: unknown view kind ${JSON.stringify(kind)}`);
  return figure(p.data || {}, p.state || {}, p.options || {});
}
