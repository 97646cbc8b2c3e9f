// Draw a CCT scene (scene.js) as SVG. Only `parent.ownerDocument` is used:
// no window, no global document, no measuring, no listeners, no timers, no
// transitions; the notebook and the exporter run this same function.

import { SVG_NS, h, r2 } from "../dom.js";

/** Build the element tree of a prim ({tag, attrs, text?, children?}) in `doc`. */
export function buildPrim(doc, prim) {
  const el = doc.createElementNS(SVG_NS, prim.tag);
  for (const [k, v] of Object.entries(prim.attrs || {})) if (v !== undefined && v !== null) el.setAttribute(k, String(v));
  if (prim.text !== undefined) el.appendChild(doc.createTextNode(String(prim.text)));
  if (prim.children) for (const c of prim.children) el.appendChild(buildPrim(doc, c));
  return el;
}

function group(doc, attrs, prims) {
  const g = h(doc, "svg:g", attrs);
  for (const p of prims) g.appendChild(buildPrim(doc, p));
  return g;
}

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
  const doc = parent.ownerDocument;
  const svg = h(doc, "svg:svg", {
    class: "cctviz-fig",
    width: scene.frame.width,
    height: scene.frame.height,
    viewBox: scene.frame.viewBox,
    "font-family": scene.fontFamily,
    "font-size": scene.fontSize,
  });
  if (scene.style) svg.appendChild(h(doc, "svg:style", {}, scene.style));
  if (scene.background) {
    svg.appendChild(h(doc, "svg:rect", { class: "cctviz-bg", x: 0, y: 0, width: "100%", height: "100%", fill: scene.background }));
  }
  const viewport = h(doc, "svg:g", { class: "cctviz-viewport" });
  const content = h(doc, "svg:g", { class: "cctviz-content", transform: `translate(${r2(scene.content.x)},${r2(scene.content.y)})` });
  content.appendChild(group(doc, { class: "cctviz-links", "aria-hidden": "true" }, scene.links));
  content.appendChild(
    group(doc, { class: "cctviz-nodes", role: "tree", "aria-label": "Calling context tree", "aria-multiselectable": "true" }, scene.nodes),
  );
  content.appendChild(group(doc, { class: "cctviz-overlay", "aria-hidden": "true" }, scene.overlay));
  viewport.appendChild(content);
  svg.appendChild(viewport);
  if (scene.band > 0 || scene.title) {
    const top = scene.titleHeight + scene.band;
    const legends = h(doc, "svg:g", { class: "cctviz-legends" });
    legends.appendChild(h(doc, "svg:rect", { class: "cctviz-band", x: 0, y: 0, width: "100%", height: r2(top) }));
    if (scene.band > 0) {
      const y = r2(top - 0.5);
      legends.appendChild(h(doc, "svg:line", { class: "cctviz-band-rule", x1: 0, x2: "100%", y1: y, y2: y }));
    }
    const placed = h(doc, "svg:g", { transform: `translate(0,${r2(scene.titleHeight)})` });
    for (const p of scene.legends) placed.appendChild(buildPrim(doc, p));
    legends.appendChild(placed);
    if (scene.title) legends.appendChild(buildPrim(doc, scene.title));
    svg.appendChild(legends);
  }
  if (scene.empty) svg.appendChild(buildPrim(doc, scene.empty));
  parent.appendChild(svg);
  return svg;
}
