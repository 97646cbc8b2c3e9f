// Entry of cctviz/static/cctviz-standalone.js (an IIFE bundle, global
// `cctvizStandalone`): the interactive view in a standalone HTML page, with
// no kernel. A local model stands in for the widget's: the same render code
// runs. A tree's collapse/expand/focus/search act on the exported rows
// (local.js); a Sankey's selections are local (tooltips, clicks), and
// nothing new can be expanded.

import "./kinds.js";
import { viewOf } from "./kit/registry.js";

export { plainModel } from "./kit/model.js";
export { localModel } from "./cct/local.js";
export { localSankeyModel } from "./sankey/local.js";

/**
 * Mount the interactive view of `payload` ({kind, data, state}) into `el`.
 *
 * @param {HTMLElement} el
 * @param {object} payload
 * @returns {() => void} cleanup
 */
export function mount(el, payload) {
  const kind = (payload && payload.kind) || "cct";
  const parts = viewOf(kind);
  if (!parts || !parts.mount) throw new Error(`cctviz: unknown view kind ${JSON.stringify(kind)}`);
  return parts.mount(el, payload);
}
