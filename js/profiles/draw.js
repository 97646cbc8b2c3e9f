// Draw a ProfilesView scene (scene.js) as SVG. Only `parent.ownerDocument`
// is used: no window, no global document, no measuring, no listeners, no
// timers; the notebook and the exporter run this same function.

import { buildPrim } from "../cct/draw.js";
import { SVG_NS, h } from "../dom.js";

function group(doc, attrs, prims) {
  const g = h(doc, "svg:g", attrs);
  for (const p of prims) g.appendChild(buildPrim(doc, p));
  return g;
}

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
  const doc = parent.ownerDocument;
  const svg = doc.createElementNS(SVG_NS, "svg");
  const attrs = {
    class: "cctviz-fig",
    width: scene.frame.width,
    height: scene.frame.height,
    viewBox: scene.frame.viewBox,
    "font-family": scene.fontFamily,
    "font-size": scene.fontSize,
  };
  for (const [k, v] of Object.entries(attrs)) svg.setAttribute(k, String(v));
  if (scene.style) svg.appendChild(h(doc, "svg:style", {}, scene.style));
  if (scene.background) {
    svg.appendChild(h(doc, "svg:rect", { class: "cctviz-bg", x: 0, y: 0, width: "100%", height: "100%", fill: scene.background }));
  }
  svg.appendChild(group(doc, { class: "cctviz-grid-lines", "aria-hidden": "true" }, scene.grid));
  svg.appendChild(group(doc, { class: "cctviz-axes", "aria-hidden": "true" }, scene.axes));
  svg.appendChild(group(doc, { class: "cctviz-dots", role: "listbox", "aria-label": "Profiles", "aria-multiselectable": "true" }, scene.dots));
  if (scene.legend) svg.appendChild(buildPrim(doc, scene.legend));
  if (scene.title) svg.appendChild(buildPrim(doc, scene.title));
  svg.appendChild(group(doc, { class: "cctviz-notes" }, scene.notes));
  if (scene.empty) svg.appendChild(buildPrim(doc, scene.empty));
  parent.appendChild(svg);
  return svg;
}
