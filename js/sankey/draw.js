// Draw a Sankey scene (scene.js) as SVG, with `parent.ownerDocument` only:
// no window, no global document, no measuring, no listeners, no timers.

import { drawFigure } from "../dom.js";

/**
 * Append the SVG of `scene` to `parent` and return it.
 *
 * Structure: `svg.cctviz-fig[.cctviz-diff]` > [style] [rect.cctviz-bg]
 * g.cctviz-viewport > g.cctviz-content > (g.cctviz-links: the ribbons,
 * g.cctviz-nodes[role=listbox]: one g.cctviz-snode[role=option] per super node,
 * g.cctviz-overlay: labels of small nodes); then g.cctviz-legends.
 *
 * @param {Element} parent
 * @param {object} scene from `sankeyScene`
 * @returns {SVGSVGElement}
 */
export function drawSankey(parent, scene) {
  const svg = drawFigure(parent, scene, [
    [{ class: "cctviz-links", "aria-hidden": "true" }, scene.links],
    [{ class: "cctviz-nodes", role: "listbox", "aria-label": "Ensemble Sankey: groups of call sites", "aria-multiselectable": "true" }, scene.nodes],
    [{ class: "cctviz-overlay", "aria-hidden": "true" }, scene.overlay],
  ]);
  svg.setAttribute("class", figureClass(scene));
  return svg;
}

/** The svg's class: `cctviz-fig cctviz-sankey-fig`, plus `cctviz-diff` in diff mode. */
export function figureClass(scene, extra = "") {
  return ["cctviz-fig", "cctviz-sankey-fig", scene.diff ? "cctviz-diff" : "", extra].filter(Boolean).join(" ");
}
