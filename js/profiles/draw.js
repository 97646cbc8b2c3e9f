// Draw a ProfilesView scene (scene.js) as SVG. Only `parent.ownerDocument`
// is used: no window, no global document, no measuring, no listeners, no
// timers; the notebook and the exporter run this same function.

import { buildPrim } from "../cct/draw.js";
import { P } from "../scene-kit.js";

/**
 * Append the SVG of `scene` to `parent` and return it. Structure (the
 * widget relies on it): `svg.cctviz-fig` > [style] [rect.cctviz-bg]
 * g.cctviz-grid-lines, g.cctviz-axes, g.cctviz-dots[role=listbox] > circle.cctviz-dot,
 * [g.cctviz-legend] [title] g.cctviz-notes [empty].
 *
 * @param {Element} parent
 * @param {object} scene from `profilesScene`
 * @returns {SVGSVGElement}
 */
export function drawProfiles(parent, scene) {
  const parts = [];
  if (scene.style) parts.push(P("style", {}, scene.style));
  if (scene.background) parts.push(P("rect", { class: "cctviz-bg", x: 0, y: 0, width: "100%", height: "100%", fill: scene.background }));
  parts.push(P("g", { class: "cctviz-grid-lines", "aria-hidden": "true" }, null, scene.grid));
  parts.push(P("g", { class: "cctviz-axes", "aria-hidden": "true" }, null, scene.axes));
  parts.push(P("g", { class: "cctviz-dots", role: "listbox", "aria-label": "Profiles", "aria-multiselectable": "true" }, null, scene.dots));
  for (const p of [scene.legend, scene.title]) if (p) parts.push(p);
  parts.push(P("g", { class: "cctviz-notes" }, null, scene.notes));
  if (scene.empty) parts.push(scene.empty);
  const { width, height, viewBox } = scene.frame;
  const attrs = { class: "cctviz-fig", width, height, viewBox, "font-family": scene.fontFamily, "font-size": scene.fontSize };
  const svg = buildPrim(parent.ownerDocument, P("svg", attrs, null, parts));
  parent.appendChild(svg);
  return svg;
}
