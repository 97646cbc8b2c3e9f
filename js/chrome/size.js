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
