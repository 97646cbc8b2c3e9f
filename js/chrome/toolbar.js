// Toolbar controls shared by the views: buttons, segmented groups, labelled
// selects, a search box with match navigation, and a status line.

import { h } from "../dom.js";

/** A toolbar element with helpers that append labelled controls to it. */
export function createToolbar(doc, label) {
  const el = h(doc, "div", { class: "cctviz-toolbar", role: "toolbar", "aria-label": label });
  // Keys typed in the toolbar are ours, not the notebook's shortcuts.
  const stop = (ev) => ev.stopPropagation();
  el.addEventListener("keydown", stop);
  const tb = {
    element: el,
    button(text, attrs = {}) {
      const b = h(doc, "button", { type: "button", class: "cctviz-btn", ...attrs }, text);
      el.appendChild(b);
      return b;
    },
    segmented(label, options, attr, cls = "") {
      const group = h(doc, "div", { class: `cctviz-seg ${cls}`.trim(), role: "group", "aria-label": label });
      const buttons = {};
      for (const [value, text] of options) {
        const b = h(doc, "button", { type: "button", class: "cctviz-btn", [attr]: value, "aria-pressed": "false" }, text);
        buttons[value] = b;
        group.appendChild(b);
      }
      el.appendChild(group);
      return buttons;
    },
    select(label, attrs) {
      const lab = h(doc, "label", { class: "cctviz-field" });
      lab.appendChild(h(doc, "span", { class: "cctviz-field-label" }, label));
      const sel = h(doc, "select", attrs);
      lab.appendChild(sel);
      el.appendChild(lab);
      return sel;
    },
    /** The right-hand counts: an info text and a status (live region). */
    counts() {
      const info = h(doc, "span", { class: "cctviz-info" });
      const status = h(doc, "span", { class: "cctviz-status", role: "status", "aria-live": "polite" });
      const box = h(doc, "span", { class: "cctviz-counts" });
      box.append(info, status);
      el.appendChild(box);
      return { info, status };
    },
    append(...nodes) {
      el.append(...nodes);
    },
    destroy() {
      el.removeEventListener("keydown", stop);
      el.remove();
    },
  };
  return tb;
}

/**
 * Fill a <select> with options [value, text] (re-filled only when they change)
 * and select `current`.
 */
export function fillSelect(sel, metrics, current, noneText, labelOf = () => null) {
  const doc = sel.ownerDocument;
  const opts = [];
  if (noneText !== undefined) opts.push(["", noneText]);
  for (const m of metrics) opts.push([m, labelOf(m) ?? m]);
  if (current && !metrics.includes(current)) opts.push([current, current]);
  if (noneText === undefined && !current) opts.unshift(["", "\u2013"]);
  const key = JSON.stringify(opts);
  if (sel.getAttribute("data-options") !== key) {
    sel.replaceChildren(...opts.map(([v, t]) => h(doc, "option", { value: v }, t)));
    sel.setAttribute("data-options", key);
  }
  sel.value = current ?? "";
}

/** Offer `text` as a file download named `filename` (the browser's save dialog). */
export function downloadText(doc, filename, text, type = "image/svg+xml") {
  const win = doc.defaultView;
  const blob = new win.Blob([text], { type });
  const url = win.URL.createObjectURL(blob);
  const a = h(doc, "a", { href: url, download: filename });
  a.style.display = "none";
  doc.body.appendChild(a);
  a.click();
  a.remove();
  win.setTimeout(() => win.URL.revokeObjectURL(url), 1000);
}
