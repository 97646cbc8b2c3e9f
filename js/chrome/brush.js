// Rectangle brushing on any view's SVG: shift + drag (or drag while brush
// mode is on) draws a rectangle; on release `onBrush(rect, union)` gets it in
// the SVG's coordinates.

import { pointer } from "d3-selection";
import { h, r2 } from "../dom.js";

/**
 * @param {SVGSVGElement} svg
 * @param {object} opts
 * @param {(ev: MouseEvent) => boolean} opts.starts whether a mousedown starts a brush
 * @param {(rect: {x0: number, y0: number, x1: number, y1: number}, union: boolean) => void} opts.onBrush
 * @returns {{destroy: () => void, moved: () => boolean}}
 */
export function attachBrush(svg, opts) {
  const doc = svg.ownerDocument;
  const win = doc.defaultView;
  const rect = h(doc, "svg:rect", { class: "cctviz-brush", display: "none" });
  svg.appendChild(rect);
  let justBrushed = false;
  function down(ev) {
    if (ev.button !== 0 || !opts.starts(ev)) return;
    ev.preventDefault();
    const union = ev.shiftKey;
    const p0 = pointer(ev, svg);
    let p1 = p0;
    let moved = false;
    const move = (e) => {
      p1 = pointer(e, svg);
      if (!moved && Math.hypot(p1[0] - p0[0], p1[1] - p0[1]) > 3) moved = true;
      if (moved) {
        rect.setAttribute("display", "inline");
        rect.setAttribute("x", r2(Math.min(p0[0], p1[0])));
        rect.setAttribute("y", r2(Math.min(p0[1], p1[1])));
        rect.setAttribute("width", r2(Math.abs(p1[0] - p0[0])));
        rect.setAttribute("height", r2(Math.abs(p1[1] - p0[1])));
      }
    };
    const up = (e) => {
      win.removeEventListener("mousemove", move, true);
      win.removeEventListener("mouseup", up, true);
      p1 = pointer(e, svg);
      rect.setAttribute("display", "none");
      if (!moved) return;
      justBrushed = true;
      win.setTimeout(() => {
        justBrushed = false;
      }, 0);
      opts.onBrush(
        { x0: Math.min(p0[0], p1[0]), x1: Math.max(p0[0], p1[0]), y0: Math.min(p0[1], p1[1]), y1: Math.max(p0[1], p1[1]) },
        union,
      );
    };
    win.addEventListener("mousemove", move, true);
    win.addEventListener("mouseup", up, true);
  }
  svg.addEventListener("mousedown", down);
  return {
    /** True right after a brush ended (the click that follows must not select). */
    moved: () => justBrushed,
    destroy() {
      svg.removeEventListener("mousedown", down);
      rect.remove();
    },
  };
}
