// Entry of cctviz/static/cctviz-export.js (an IIFE bundle, global
// `cctvizExport`): the browser-free exporter that Python runs in an embedded
// V8 (mini-racer). No window, no document: figure.js draws into shim.js.

import { cctSVG } from "./cct/figure.js";
import { profilesSVG } from "./profiles/figure.js";
import { sankeySVG } from "./sankey/figure.js";

/** Figures by view kind. */
export const FIGURES = { cct: cctSVG, sankey: sankeySVG, profiles: profilesSVG };

/**
 * Render a payload (JSON text: {kind, data, state, options}) to SVG text.
 *
 * @param {string} payloadJSON
 * @returns {string}
 */
export function renderSVG(payloadJSON) {
  const p = typeof payloadJSON === "string" ? JSON.parse(payloadJSON) : payloadJSON;
  const kind = p.kind || "cct";
  if (!Object.prototype.hasOwnProperty.call(FIGURES, kind)) throw new Error(`cctviz export: unknown view kind ${JSON.stringify(kind)}`);
  return FIGURES[kind](p.data || {}, p.state || {}, p.options || {});
}
