// The size a view is given: the notebook's height (`view.layout.height`) and
// a resize watch on the view's elements.

/**
 * The height the notebook gave the widget `el` (`view.layout.height`) less the
 * elements above the figure, or 0 when the widget follows its content.
 *
 * @param {HTMLElement} el the widget's element
 * @param {HTMLElement[]} above toolbar and other rows above the figure
 */
export function givenHeight(el, above) {
  const hs = el.style && el.style.height;
  if (!hs || hs === "auto") return 0;
  const taken = above.reduce((a, e) => a + e.offsetHeight, 0);
  return Math.max(120, Math.round(el.clientHeight - taken - 2));
}

/**
 * Call `cb` when any of `els` changes size (nothing where ResizeObserver is missing).
 *
 * @returns {{destroy: () => void}}
 */
export function watchResize(win, els, cb) {
  if (typeof win.ResizeObserver !== "function") return { destroy() {} };
  const ro = new win.ResizeObserver(cb);
  for (const e of els) ro.observe(e);
  return { destroy: () => ro.disconnect() };
}

/** A fit never draws text smaller than this, px at 100% zoom: what does not fit then is
 *  panned to (or collapsed by the level of detail), never shrunk further. */
export const READABLE_PX = 9;
/** The tallest a view makes itself to keep its content readable, px; beyond it the user
 *  pans (or sets `view.layout.height`). */
export const TALLEST = 1400;

/**
 * The smallest scale a fit may use for text of `fontSize` px.
 *
 * @param {number} fontSize the text size at scale 1, px
 */
export function readableScale(fontSize) {
  return Math.min(1, READABLE_PX / fontSize);
}

/**
 * The height of a view that follows its content (no `view.layout.height`): a fixed
 * band (legends, not scaled) plus the body at the scale that fits the width. A body
 * taller than `max` at that scale is shrunk to fit `max`, but never below readable
 * text: then the view grows (up to {@link TALLEST}) instead, so a view given a narrow
 * box uses its height rather than shrinking its text.
 *
 * @param {{band: number, body: number, widthScale: number, fontSize: number, min: number, max: number}} o
 *   `band` and `body` in px at scale 1; `widthScale` the scale fitting the width (< 1
 *   where the content is wider than the view)
 * @returns {number} px
 */
export function contentHeight({ band, body, widthScale, fontSize, min, max }) {
  const readable = readableScale(fontSize);
  const atWidth = band + body * Math.max(readable, Math.min(1, widthScale));
  const h = atWidth <= max ? atWidth : Math.max(max, Math.min(TALLEST, band + body * readable));
  return Math.max(min, Math.round(h));
}

/**
 * The scale that shows `w` x `h` px of content in `W` x `H` px, never enlarged and never
 * below readable text (then part of it is panned to).
 */
export function fitScale(w, h, W, H, fontSize) {
  return Math.max(readableScale(fontSize), Math.min(1, W / Math.max(w, 1), H / Math.max(h, 1)));
}

/**
 * Make a flat figure's svg (profiles, timeline) a live canvas at the scene's own
 * size: one figure unit per pixel (the notebook's text at its font size).
 */
export function asLiveCanvas(svg, scene) {
  const w = String(Math.round(scene.width));
  const h = String(Math.round(scene.height));
  svg.setAttribute("class", "cctviz-fig cctviz-live cctviz-canvas");
  svg.setAttribute("width", w);
  svg.setAttribute("height", h);
  svg.setAttribute("viewBox", `0 0 ${w} ${h}`);
  return svg;
}
