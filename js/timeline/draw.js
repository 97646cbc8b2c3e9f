// Draw a TimelineView scene (scene.js) as SVG. Only `parent.ownerDocument` is
// used: no window, no global document, no measuring, no listeners, no timers.

import { buildPrim } from "../dom.js";
import { P } from "../scene-kit.js";

/**
 * Append the SVG of `scene` to `parent` and return it. Structure (the widget
 * relies on it): `svg.cctviz-fig` > [style] [rect.cctviz-bg] [title] [g.cctviz-legend]
 * g.cctviz-grid-lines, g.cctviz-lanes, g.cctviz-spans > rect.cctviz-span,
 * g.cctviz-marks > path.cctviz-late, g.cctviz-brush-layer, g.cctviz-axes, g.cctviz-notes [empty].
 *
 * @param {Element} parent
 * @param {object} scene from `timelineScene`
 * @returns {SVGSVGElement}
 */
export function drawTimeline(parent, scene) {
  const parts = [];
  if (scene.style) parts.push(P("style", {}, scene.style));
  if (scene.background) parts.push(P("rect", { class: "cctviz-bg", x: 0, y: 0, width: "100%", height: "100%", fill: scene.background }));
  for (const p of [scene.title, scene.legend]) if (p) parts.push(p);
  parts.push(P("g", { class: "cctviz-grid-lines", "aria-hidden": "true" }, null, scene.grid));
  parts.push(P("g", { class: "cctviz-lanes" }, null, scene.lanes));
  parts.push(P("g", { class: "cctviz-spans", role: "img", "aria-label": "Intervals per lane over time" }, null, scene.spans));
  parts.push(P("g", { class: "cctviz-marks" }, null, scene.marks));
  parts.push(P("g", { class: "cctviz-brush-layer" }, null, scene.brush ? [scene.brush] : []));
  parts.push(P("g", { class: "cctviz-axes", "aria-hidden": "true" }, null, scene.axes));
  parts.push(P("g", { class: "cctviz-notes" }, null, scene.notes));
  if (scene.empty) parts.push(scene.empty);
  const { width, height, viewBox } = scene.frame;
  const attrs = { class: "cctviz-fig", width, height, viewBox, "font-family": scene.fontFamily, "font-size": scene.fontSize };
  const svg = buildPrim(parent.ownerDocument, P("svg", attrs, null, parts));
  parent.appendChild(svg);
  return svg;
}
