// Entry point of the cctviz front-end bundle.
//
// esbuild bundles this file (and everything it imports, d3-* modules included)
// into cctviz/static/cctviz.js as a single ES module that the Python widgets
// load as their anywidget `_esm`; nothing is ever fetched from a CDN.
// The default export is the anywidget render module; it dispatches on the
// widget's `_kind` trait (see cctviz/views/CONTRACT.md).

import "./kinds.js";
import { viewKinds, viewOf } from "./kit/registry.js";

export {
  MISSING,
  canonicalUnit,
  formatMetric,
  formatPercent,
  formatRatio,
  formatValue,
  readColumn,
  unitLabel,
} from "./format.js";
export { renderCCT } from "./cct/view.js";
export { renderProfiles } from "./profiles/view.js";
export { renderSankey } from "./sankey/view.js";

/** Views by `_kind` (the registry's `render` parts). */
export const VIEWS = Object.fromEntries(viewKinds().map((k) => [k, viewOf(k).render]));

/**
 * anywidget entry: render the view named by `model.get("_kind")` into `el`.
 * Returns the view's cleanup function.
 *
 * @param {{model: object, el: HTMLElement}} ctx
 */
function render({ model, el }) {
  const kind = model.get("_kind");
  const view = viewOf(kind)?.render ?? null;
  if (!view) {
    const msg = document.createElement("div");
    msg.className = "cctviz cctviz-error";
    msg.textContent = `cctviz: unknown view kind ${JSON.stringify(kind)}`;
    el.appendChild(msg);
    return () => msg.remove();
  }
  return view({ model, el });
}

export default { render };
