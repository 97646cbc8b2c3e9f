// Keyboard handling for any view: a map from keys to handlers on an element;
// handled keys do not reach the notebook's shortcuts, Tab moves on.

/**
 * @param {Element} el
 * @param {(key: string, ev: KeyboardEvent) => boolean} handle returns true when it handled the key
 * @returns {{destroy: () => void}}
 */
export function attachKeys(el, handle) {
  function onKey(ev) {
    if (handle(ev.key, ev)) {
      ev.preventDefault();
      ev.stopPropagation();
    } else if (ev.key !== "Tab") ev.stopPropagation();
  }
  el.addEventListener("keydown", onKey);
  return { destroy: () => el.removeEventListener("keydown", onKey) };
}
