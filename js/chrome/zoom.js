// Pan and zoom for any view's SVG (d3-zoom): plain wheel scrolls the page,
// Ctrl/Cmd + wheel or a pinch zooms, drag pans; "fit" shows the whole content
// scaled to the view's width (never enlarged), top left.

import { select } from "d3-selection";
import { zoom, zoomIdentity } from "d3-zoom";

/**
 * @param {object} opts
 * @param {(ev: Event) => boolean} [opts.blocked] events that must not pan (brushing)
 * @param {(t: object) => void} [opts.onZoom] called with the new transform
 */
export function createZoom(opts = {}) {
  let svg = null;
  let viewport = null;
  let current = zoomIdentity;
  const behavior = zoom()
    .scaleExtent([0.05, 8])
    .clickDistance(4)
    .filter((ev) => {
      if (ev.type === "dblclick") return false;
      if (ev.type === "wheel") return ev.ctrlKey || ev.metaKey;
      if (ev.ctrlKey || ev.button) return false;
      if (opts.blocked && opts.blocked(ev)) return false;
      return true;
    })
    .on("zoom", (ev) => {
      current = ev.transform;
      if (viewport) viewport.setAttribute("transform", current.toString());
      if (opts.onZoom) opts.onZoom(current);
    });
  return {
    /** Attach to a (new) svg and its viewport group, keeping the transform. */
    attach(svgEl, viewportEl, width, height) {
      if (svg && svg !== svgEl) select(svg).on(".zoom", null);
      svg = svgEl;
      viewport = viewportEl;
      behavior.extent([[0, 0], [width, height]]);
      select(svg).call(behavior).on("dblclick.zoom", null);
      behavior.transform(select(svg), current);
    },
    set(t) {
      current = t;
      if (svg) behavior.transform(select(svg), t);
      else if (viewport) viewport.setAttribute("transform", t.toString());
    },
    translateBy(dx, dy) {
      if (svg) behavior.translateBy(select(svg), dx / current.k, dy / current.k);
    },
    get transform() {
      return current;
    },
    /** Screen position of a point in viewport coordinates. */
    apply(p) {
      return current.apply(p);
    },
    destroy() {
      if (svg) select(svg).on(".zoom", null);
      svg = null;
      viewport = null;
    },
  };
}
