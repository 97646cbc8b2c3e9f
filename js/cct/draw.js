// Draw a CCT scene (scene.js) as SVG. Only `parent.ownerDocument` is used:
// no window, no global document, no measuring, no listeners, no timers, no
// transitions; the notebook and the exporter run this same function.

import { buildPrim, drawFigure } from "../dom.js";

export { buildPrim };

/**
 * Append the SVG of `scene` to `parent` and return it.
 *
 * Structure (the widget's chrome relies on it): `svg.cctviz-fig` >
 * [style] [rect.cctviz-bg] g.cctviz-viewport > g.cctviz-content >
 * (g.cctviz-links, g.cctviz-nodes[role=tree], g.cctviz-overlay); then
 * g.cctviz-legends (the band, above the content), the title and the empty note.
 *
 * @param {Element} parent
 * @param {object} scene from `cctScene`
 * @returns {SVGSVGElement}
 */
export function drawCCT(parent, scene) {
  return drawFigure(parent, scene, [
    [{ class: "cctviz-links", "aria-hidden": "true" }, scene.links],
    [{ class: "cctviz-nodes", role: "tree", "aria-label": "Calling context tree", "aria-multiselectable": "true" }, scene.nodes],
    [{ class: "cctviz-overlay", "aria-hidden": "true" }, scene.overlay],
  ]);
}
