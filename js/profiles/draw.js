// Draw a ProfilesView scene (scene.js) as SVG. Only `parent.ownerDocument`
// is used: no window, no global document, no measuring, no listeners, no
// timers; the notebook and the exporter run this same function.

import { drawFlat } from "../dom.js";
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
  parts.push(P("g", { class: "cctviz-grid-lines", "aria-hidden": "true" }, null, scene.grid));
  parts.push(P("g", { class: "cctviz-axes", "aria-hidden": "true" }, null, scene.axes));
  parts.push(P("g", { class: "cctviz-dots", role: "listbox", "aria-label": "Profiles", "aria-multiselectable": "true" }, null, scene.dots));
  for (const p of [scene.legend, scene.title]) if (p) parts.push(p);
  parts.push(P("g", { class: "cctviz-notes" }, null, scene.notes));
  if (scene.empty) parts.push(scene.empty);
  return drawFlat(parent, scene, parts);
}
