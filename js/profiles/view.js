// The ProfilesView widget (anywidget `render`): the scene (scene.js) drawn by
// draw.js, with the shared chrome (toolbar, tooltip, brush, keys) wired to
// the model's traits. Contract: cctviz/views/CONTRACT.md ("ProfilesView").
//
// Labels are untrusted: only ever set with textContent / setAttribute.

import { attachBrush } from "../chrome/brush.js";
import { attachKeys } from "../chrome/keyboard.js";
import { createToolbar, downloadText, fillSelect } from "../chrome/toolbar.js";
import { DOWNLOAD_OPTIONS } from "../paper.js";
import { createTooltip } from "../chrome/tooltip.js";
import { asLiveCanvas, watchResize } from "../chrome/size.js";
import { THEME_PALETTE } from "../kit/style.js";
import { h } from "../dom.js";
import { lifetime } from "../kit/lifetime.js";
import { decodeProfiles } from "./data.js";
import { drawProfiles } from "./draw.js";
import { profilesSVG } from "./figure.js";
import { profilesInRect, profilesScene, tooltipLines } from "./scene.js";
import { profilesCSS } from "./style.js";

/** Label size on screen, px. */
const FONT = 12;
/** The narrowest the figure is drawn, px (a narrower box scrolls). */
const MIN_WIDTH = 280;

/** The traits a figure depends on, as plain values (the export payload's `state`). */
export function stateOf(model) {
  const sel = model.get("selected_profiles");
  return {
    x: model.get("x") || "",
    y: model.get("y") || "",
    projection: model.get("projection") || "pca",
    color_by: model.get("color_by") || "",
    clusters: Number(model.get("clusters") ?? 3),
    selected_profiles: Array.isArray(sel) ? sel.map(Number) : [],
  };
}

/**
 * Render the ProfilesView into `el`.
 *
 * @param {{model: object, el: HTMLElement}} ctx anywidget render context
 * @param {{local?: boolean}} [opts] local: a page with no kernel (menus that need Python are hidden)
 * @returns {() => void} cleanup
 */
export function renderProfiles({ model, el }, opts = {}) {
  const doc = el.ownerDocument;
  const win = doc.defaultView;
  const state = { renders: 0, data: decodeProfiles(null), scene: null, svg: null, dotsG: null, brush: null, active: -1, width: 0 };

  const root = h(doc, "div", { class: "cctviz cctviz-profiles" });
  el.appendChild(root);
  const life = lifetime();
  life.defer(() => root.remove());
  root.appendChild(h(doc, "style", {}, profilesCSS(THEME_PALETTE, ".cctviz-live")));
  const tb = life.own(createToolbar(doc, "Profiles view controls"));
  root.appendChild(tb.element);
  const xSel = tb.select("x", { class: "cctviz-x", "aria-label": "x axis" });
  const ySel = tb.select("y", { class: "cctviz-y", "aria-label": "y axis" });
  const projButtons = tb.segmented("Projection", [["pca", "PCA"], ["mds", "MDS"]], "data-projection", "cctviz-projection");
  const colorSel = tb.select("Colour", { class: "cctviz-color", "aria-label": "Colour by" });
  const kInput = h(doc, "input", { type: "number", class: "cctviz-k", min: "1", max: "8", step: "1", "aria-label": "Number of clusters", title: "k of k-means" });
  const kField = h(doc, "label", { class: "cctviz-field" });
  kField.append(h(doc, "span", { class: "cctviz-field-label" }, "k"), kInput);
  tb.append(kField);
  const saveBtn = tb.button("SVG", { class: "cctviz-btn cctviz-download", title: "Download the figure as SVG (the same file as view.save)" });
  const status = h(doc, "span", { class: "cctviz-status", role: "status", "aria-live": "polite" });
  const counts = h(doc, "span", { class: "cctviz-counts" });
  counts.append(status);
  tb.append(counts);
  if (opts.local) for (const c of [xSel.parentNode, ySel.parentNode, projButtons.pca.parentNode, colorSel.parentNode, kField]) c.style.display = "none";
  const holder = h(doc, "div", { class: "cctviz-holder" });
  root.appendChild(holder);
  const tooltip = life.own(createTooltip(root));

  const selected = () => (Array.isArray(model.get("selected_profiles")) ? model.get("selected_profiles").map(Number) : []);
  const commit = (changes) => {
    for (const [k, v] of Object.entries(changes)) model.set(k, v);
    model.save_changes();
  };
  const select = (ids) => commit({ selected_profiles: [...new Set(ids)].sort((a, b) => a - b) });

  // ---- pointer ---------------------------------------------------------------
  const rowOfTarget = (t) => {
    const dot = t && t.closest ? t.closest(".cctviz-dot") : null;
    if (!dot) return -1;
    const row = state.data.rowOf.get(Number(dot.getAttribute("data-profile")));
    return row === undefined ? -1 : row;
  };
  function pick(row, shift) {
    const id = state.data.id[row];
    setActive(row, false);
    if (shift) {
      const ids = selected();
      select(ids.includes(id) ? ids.filter((x) => x !== id) : [...ids, id]);
    } else select([id]);
  }
  function onClick(ev) {
    if (state.brush && state.brush.moved()) return;
    if (!ev.target.closest || !ev.target.closest("svg")) return;
    const row = rowOfTarget(ev.target);
    if (row >= 0) return pick(row, ev.shiftKey);
    if (ev.target.closest(".cctviz-legend")) return;
    if (!ev.shiftKey && selected().length) select([]);
  }
  function onMove(ev) {
    if (ev.buttons) return tooltip.hide();
    const row = rowOfTarget(ev.target);
    if (row < 0) tooltip.hide();
    else tooltip.show(tooltipLines(state.data, row), String(state.data.id[row]), ev);
  }
  const onLeave = () => tooltip.hide();
  life.listen(holder, { click: onClick, mousemove: onMove, mouseleave: onLeave });

  // ---- keyboard: roving tabindex over the dots (listbox) -------------------------
  const dotOf = (row) => (state.dotsG && row >= 0 ? state.dotsG.querySelector(`.cctviz-dot[data-profile="${state.data.id[row]}"]`) : null);
  function setActive(row, focus) {
    const prev = dotOf(state.active);
    if (prev) prev.setAttribute("tabindex", "-1");
    state.active = row;
    const dot = dotOf(row);
    if (dot) {
      dot.setAttribute("tabindex", "0");
      if (focus) dot.focus({ preventScroll: true });
    }
  }
  const keys = attachKeys(holder, (key, ev) => {
    const d = state.data;
    if (!d.n || !ev.target.closest || !ev.target.closest(".cctviz-dots")) return false;
    const row = state.active >= 0 ? state.active : 0;
    const move = (r) => setActive(Math.max(0, Math.min(d.n - 1, r)), true);
    if (key === "ArrowRight" || key === "ArrowDown") move(row + 1);
    else if (key === "ArrowLeft" || key === "ArrowUp") move(row - 1);
    else if (key === "Home") move(0);
    else if (key === "End") move(d.n - 1);
    else if (key === "Enter" || key === " ") pick(row, ev.shiftKey);
    else if (key === "Escape") select([]);
    else return false;
    return true;
  });

  // ---- toolbar -----------------------------------------------------------------
  function updateMenus() {
    const columns = (model.get("columns") || []).map(String);
    const d = state.data;
    const proj = (model.get("projection") || "pca") === "mds" ? "MDS" : "PC";
    const numeric = d.numeric.filter((c) => columns.includes(c)); // what x and y may name
    fillSelect(xSel, numeric, model.get("x") || "", `${proj} 1`);
    fillSelect(ySel, numeric, model.get("y") || "", `${proj} 2`);
    fillSelect(colorSel, columns, model.get("color_by") || "", "none");
    for (const [v, b] of Object.entries(projButtons)) b.setAttribute("aria-pressed", String(v === (model.get("projection") || "pca")));
    const projected = !model.get("x") || !model.get("y");
    for (const b of Object.values(projButtons)) b.disabled = !projected;
    kInput.value = String(model.get("clusters") ?? 3);
    kField.style.display = opts.local || model.get("color_by") !== "cluster" ? "none" : "";
    const sel = selected().filter((id) => d.rowOf.has(id)).length;
    status.textContent = `${d.n} of ${d.profilesTotal} profiles${sel ? ` \u00b7 ${sel} selected` : ""}`;
  }
  xSel.addEventListener("change", () => commit({ x: xSel.value }));
  ySel.addEventListener("change", () => commit({ y: ySel.value }));
  colorSel.addEventListener("change", () => commit({ color_by: colorSel.value }));
  kInput.addEventListener("change", () => {
    const k = Math.max(1, Math.round(Number(kInput.value) || 1));
    if (k !== Number(model.get("clusters"))) commit({ clusters: k });
  });
  for (const [v, b] of Object.entries(projButtons)) b.addEventListener("click", () => v !== model.get("projection") && commit({ projection: v }));
  saveBtn.addEventListener("click", () => downloadText(doc, "cctviz-profiles.svg", profilesSVG(model.get("_data"), stateOf(model), DOWNLOAD_OPTIONS)));

  // ---- selection (no re-layout) -------------------------------------------------
  function applySelection() {
    const sel = new Set(selected());
    const any = sel.size > 0;
    if (state.dotsG) {
      const on = [];
      for (const dot of state.dotsG.children) {
        const s = sel.has(Number(dot.getAttribute("data-profile")));
        dot.setAttribute("aria-selected", String(s));
        dot.classList.toggle("selected", s);
        dot.classList.toggle("dim", any && !s);
        if (s) on.push(dot);
      }
      for (const dot of on) state.dotsG.appendChild(dot); // the selection on top
    }
    updateMenus();
  }

  // ---- render ----------------------------------------------------------------------
  function render() {
    tooltip.hide();
    const d = decodeProfiles(model.get("_data"));
    const keepActive = state.active >= 0 && state.active < state.data.n ? state.data.id[state.active] : null;
    state.data = d;
    state.width = Math.max(MIN_WIDTH, Math.round(holder.clientWidth || 760));
    const scene = profilesScene(d, { selection: selected(), fontSize: FONT, width: Math.min(state.width, 1100) });
    state.scene = scene;
    if (state.brush) state.brush.destroy();
    if (state.svg) state.svg.remove();
    const svg = asLiveCanvas(drawProfiles(holder, scene), scene);
    state.svg = svg;
    state.dotsG = svg.querySelector(".cctviz-dots");
    state.brush = attachBrush(svg, {
      starts: (ev) => !(ev.target.closest && (ev.target.closest(".cctviz-dot") || ev.target.closest(".cctviz-legend"))),
      onBrush: (r, union) => {
        const ids = profilesInRect(scene.points, r);
        select(union ? [...selected(), ...ids] : ids);
      },
    });
    for (const dot of state.dotsG.children) dot.setAttribute("tabindex", "-1");
    const row = keepActive !== null && d.rowOf.has(keepActive) ? d.rowOf.get(keepActive) : d.n ? 0 : -1;
    state.active = row;
    dotOf(row)?.setAttribute("tabindex", "0");
    applySelection();
    state.renders += 1;
    root.setAttribute("data-rendered", String(state.renders));
  }

  const onData = () => render();
  const onSelection = () => applySelection();
  const onMenus = () => updateMenus();
  const listeners = [
    ["change:_data", onData],
    ["change:selected_profiles", onSelection],
    ["change:columns", onMenus],
    ["change:x", onMenus],
    ["change:y", onMenus],
    ["change:projection", onMenus],
    ["change:color_by", onMenus],
    ["change:clusters", onMenus],
  ];
  life.model(model, listeners);
  life.own(keys);
  life.defer(() => state.brush && state.brush.destroy());

  // a new width re-renders: compared with the width drawn, so that a box that settles
  // after the first render (an HBox, a cell being laid out) is followed too
  life.own(watchResize(win, [holder], () => {
    const w = Math.round(holder.clientWidth);
    if (w > 0 && Math.abs(Math.max(MIN_WIDTH, w) - state.width) > 1) render();
  }));

  render();

  return () => life.dispose();
}
