// Draw a TimelineView scene (scene.js) as SVG. Only `parent.ownerDocument` is
// used: no window, no global document, no measuring, no listeners, no timers.

import { drawFlat } from "../dom.js";
import { P } from "../scene-kit.js";

/**
 * Append the SVG of `scene` to `parent` and return it. Structure (the widget
 * relies on it): `svg.cctviz-fig` > [style] [rect.cctviz-bg] defs (the hatch) [title]
 * [g.cctviz-legend > g.cctviz-legend-item] [g.cctviz-summary-lines]
 * g.cctviz-grid-lines, g.cctviz-lanes, g.cctviz-spreads > g.cctviz-spread[data-b] (a group lane's band), g.cctviz-spans > rect.cctviz-span,
 * g.cctviz-blocked-layer > rect.cctviz-blocked, g.cctviz-colls > g.cctviz-coll[data-j] > rect (wait, transfer) [text],
 * g.cctviz-span-labels > text.cctviz-span-label,
 * g.cctviz-counters > g.cctviz-counter > [text.cctviz-counter-title, rect.cctviz-counter-bg, path.cctviz-counter-area],
 * g.cctviz-critical-layer > path.cctviz-critical, g.cctviz-marks > path.cctviz-late, g.cctviz-brush-layer, g.cctviz-axes, g.cctviz-notes [empty]
 * [g.cctviz-caption-band] (an export's note of what it could not hold; `data-folded` on the root).
 *
 * @param {Element} parent
 * @param {object} scene from `timelineScene`
 * @returns {SVGSVGElement}
 */
export function drawTimeline(parent, scene) {
  const parts = [];
  if (scene.defs) parts.push(scene.defs);
  for (const p of [scene.title, scene.legend]) if (p) parts.push(p);
  if (scene.summary && scene.summary.length) parts.push(P("g", { class: "cctviz-summary-lines" }, null, scene.summary));
  parts.push(P("g", { class: "cctviz-grid-lines", "aria-hidden": "true" }, null, scene.grid));
  parts.push(P("g", { class: "cctviz-lanes", role: "list", "aria-label": "Lanes: one per profile" }, null, scene.lanes));
  parts.push(P("g", { class: "cctviz-spreads" }, null, scene.spreads || []));
  parts.push(P("g", { class: "cctviz-spans", role: "img", "aria-label": "Intervals per lane over time" }, null, scene.spans));
  parts.push(P("g", { class: "cctviz-blocked-layer", "aria-hidden": "true" }, null, scene.blockedPrims || []));
  parts.push(P("g", { class: "cctviz-colls", role: "img", "aria-label": "Communication: waiting, then transfer" }, null, scene.collPrims || []));
  parts.push(P("g", { class: "cctviz-span-labels", "aria-hidden": "true" }, null, scene.labels || []));
  parts.push(P("g", { class: "cctviz-counters", role: "img", "aria-label": "Counters: the peak per pixel over time" }, null, scene.counters || []));
  parts.push(P("g", { class: "cctviz-critical-layer", "aria-label": "The critical path" }, null, scene.critical || []));
  parts.push(P("g", { class: "cctviz-marks" }, null, scene.marks));
  parts.push(P("g", { class: "cctviz-brush-layer" }, null, scene.brush ? [scene.brush] : []));
  parts.push(P("g", { class: "cctviz-axes", "aria-hidden": "true" }, null, scene.axes));
  parts.push(P("g", { class: "cctviz-notes" }, null, scene.footer || []));
  if (scene.empty) parts.push(scene.empty);
  return drawFlat(parent, scene, parts);
}
