// A tooltip for any view: lines of text ({text, cls?}) next to the pointer,
// kept inside the view. Text only (never HTML).

import { h } from "../dom.js";

/**
 * @param {HTMLElement} root the view's positioned root element
 * @returns {{show: (lines: {text: string, cls?: string}[], key: string, ev: MouseEvent) => void,
 *   hide: () => void, element: HTMLElement, destroy: () => void}}
 */
export function createTooltip(root) {
  const doc = root.ownerDocument;
  const el = h(doc, "div", { class: "cctviz-tooltip", role: "tooltip" });
  el.style.display = "none";
  root.appendChild(el);
  let key = null;
  return {
    element: el,
    show(lines, k, ev) {
      if (key !== k) {
        el.replaceChildren(...lines.map((l) => h(doc, "div", l.cls ? { class: l.cls } : {}, l.text)));
        el.setAttribute("data-id", k);
        key = k;
      }
      el.style.display = "block";
      const box = root.getBoundingClientRect();
      let x = ev.clientX - box.left + 14;
      const y = ev.clientY - box.top + 14;
      const w = el.offsetWidth;
      if (x + w > box.width && ev.clientX - box.left - 14 - w >= 0) x = ev.clientX - box.left - 14 - w;
      el.style.left = `${Math.round(x)}px`;
      el.style.top = `${Math.round(y)}px`;
    },
    hide() {
      el.style.display = "none";
    },
    destroy() {
      el.remove();
    },
  };
}
