// The TimelineView widget (anywidget `render`): the scene (scene.js) drawn by
// draw.js on the shared chrome (toolbar, tooltip, brush, keys, size), wired to
// the model's traits. Contract: cctviz/views/CONTRACT.md ("TimelineView").
//
// Names are untrusted: only ever set with textContent / setAttribute.

import { attachBrush } from "../chrome/brush.js";
import { attachKeys } from "../chrome/keyboard.js";
import { asLiveCanvas, givenHeight, watchResize } from "../chrome/size.js";
import { createToolbar, downloadText, fillSelect } from "../chrome/toolbar.js";
import { DOWNLOAD_OPTIONS } from "../paper.js";
import { createTooltip } from "../chrome/tooltip.js";
import { buildPrim, h } from "../dom.js";
import { formatValue } from "../format.js";
import { lifetime } from "../kit/lifetime.js";
import { THEME_PALETTE } from "../kit/style.js";
import { decodeTimeline } from "./data.js";
import { drawTimeline } from "./draw.js";
import { timelineSVG } from "./figure.js";
import { collLines, counterLines, markLines, rectLines, spreadLines, timelineScene } from "./scene.js";
import { timelineCSS } from "./style.js";

/** Label size on screen, px. */
const FONT = 12;
/** The narrowest the figure is drawn, px (a narrower box scrolls). */
const MIN_WIDTH = 320;
/** Wheel zoom: the window scales by exp(deltaY * WHEEL) per event. */
const WHEEL = 0.0015;
/** Wheel zoom asks Python for the new window's detail this long after the last wheel event, ms. */
const WHEEL_WAIT = 150;

/** The traits a figure depends on, as plain values (the export payload's `state`). */
export function stateOf(model) {
  const listOf = (k) => (Array.isArray(model.get(k)) ? model.get(k) : []);
  const list = (k) => listOf(k).map(Number);
  return {
    window: list("window"),
    depth: Number(model.get("depth") ?? 3),
    bins: Number(model.get("bins") ?? 1000),
    selected_profiles: list("selected_profiles"),
    selection: list("selection"),
    brush: list("brush"),
    counter_bands: String(model.get("counter_bands") ?? "component"),
  };
}

/** The `counter_bands` modes and their names in the menu. */
const BAND_MODES = ["component", "lane", "none"];
const BAND_LABELS = { component: "per component", lane: "per lane", none: "none" };

/** Keys: a pan moves the window by this share of its span (shift: {@link PAN_BIG}). */
export const PAN = 0.1;
const PAN_BIG = 0.5;
/** Keys: "+" shows this share of the window (around its middle), "-" its inverse. */
export const ZOOM_STEP = 0.5;

/**
 * The window `w` moved inside `whole`: kept its span where it fits, else `whole`.
 *
 * @param {[number, number]} w
 * @param {[number, number]} whole
 */
export function clampWindow([a, b], [lo, hi]) {
  const span = b - a;
  if (!(span > 0) || span >= hi - lo) return [lo, hi];
  if (a < lo) return [lo, lo + span];
  if (b > hi) return [hi - span, hi];
  return [a, b];
}

/**
 * The window after key `key` (ArrowLeft/ArrowRight pan, "+"/"=" and "-"/"_" zoom
 * around the middle, or around time `at`: the plot's middle where the time axis
 * has segments), kept inside `whole`; null for any other key.
 *
 * @param {string} key
 * @param {[number, number]} w the window, seconds
 * @param {[number, number]} whole
 * @param {boolean} [big] shift held: a larger pan
 * @param {number|null} [at] the time zoomed around (default: the window's middle)
 * @returns {[number, number]|null}
 */
export function keyWindow(key, w, whole, big = false, at = null) {
  const span = w[1] - w[0];
  const step = span * (big ? PAN_BIG : PAN);
  const mid = Number.isFinite(at) && at >= w[0] && at <= w[1] ? at : (w[0] + w[1]) / 2;
  if (key === "ArrowLeft") return clampWindow([w[0] - step, w[1] - step], whole);
  if (key === "ArrowRight") return clampWindow([w[0] + step, w[1] + step], whole);
  if (key === "+" || key === "=") return clampWindow(zoomWindow(w, mid, ZOOM_STEP), whole);
  if (key === "-" || key === "_") return clampWindow(zoomWindow(w, mid, 1 / ZOOM_STEP), whole);
  return null;
}

/** The window `[t0, t1]` scaled by `factor` around time `at` (seconds). */
export function zoomWindow([t0, t1], at, factor) {
  const a = at - (at - t0) * factor;
  const b = at + (t1 - at) * factor;
  return b - a > 1e-12 ? [a, b] : [t0, t1];
}

/**
 * Render the TimelineView into `el`.
 *
 * @param {{model: object, el: HTMLElement}} ctx anywidget render context
 * @param {{local?: boolean}} [options] `local`: a standalone page (no Python: the
 *   depth menu, which needs it, is hidden)
 * @returns {() => void} cleanup
 */
export function renderTimeline({ model, el }, options = {}) {
  const doc = el.ownerDocument;
  const win = doc.defaultView;
  const state = { renders: 0, data: decodeTimeline(null), scene: null, svg: null, brush: null, width: 0, wheel: null, timer: 0 };

  const root = h(doc, "div", { class: "cctviz cctviz-timeline" });
  el.appendChild(root);
  const life = lifetime();
  life.defer(() => root.remove());
  root.appendChild(h(doc, "style", {}, timelineCSS(THEME_PALETTE, ".cctviz-live")));
  const tb = life.own(createToolbar(doc, "Timeline view controls"));
  root.appendChild(tb.element);
  const depthSel = tb.select("Depth", { class: "cctviz-depth", "aria-label": "Deepest level drawn" });
  if (options.local) depthSel.parentElement.style.display = "none"; // the depth needs Python
  const bandSel = tb.select("Counters", { class: "cctviz-counter-bands", "aria-label": "Counter bands: per component, per lane, or none" });
  if (options.local) bandSel.parentElement.style.display = "none"; // folding needs Python
  const zoomBtn = tb.button("Zoom to brush", { class: "cctviz-btn cctviz-zoom-brush", title: "Show the brushed window (drag along the lanes to brush)" });
  const wholeBtn = tb.button("Whole", { class: "cctviz-btn cctviz-whole", title: "Show the whole timeline" });
  const regroupBtn = tb.button("Regroup", { class: "cctviz-btn cctviz-regroup", title: "Fold the expanded groups of ranks again (a click on a group's label expands it)" });
  const saveBtn = tb.button("SVG", { class: "cctviz-btn cctviz-download", title: "Download the figure as SVG (the same file as view.save)" });
  const { status } = tb.counts();
  const holder = h(doc, "div", {
    class: "cctviz-holder",
    tabindex: "0",
    role: "group",
    "aria-label": "Timeline: arrow keys pan, + and - zoom, 0 shows the whole run, Escape clears the brush",
  });
  root.appendChild(holder);
  const tooltip = life.own(createTooltip(root));

  const listOf = (k) => (Array.isArray(model.get(k)) ? model.get(k) : []);
  const list = (k) => listOf(k).map(Number);
  const commit = (changes) => {
    for (const [k, v] of Object.entries(changes)) model.set(k, v);
    model.save_changes();
  };

  // ---- pointer: tooltips, clicks select a node, wheel zooms ----------------------
  const spanOf = (t) => (t && t.closest ? t.closest(".cctviz-span") : null);
  const markOf = (t) => (t && t.closest ? t.closest(".cctviz-late") : null);
  const collOf = (t) => (t && t.closest ? t.closest(".cctviz-coll") : null);
  const bandOf = (t) => (t && t.closest ? t.closest(".cctviz-counter") : null);
  const spreadOf = (t) => (t && t.closest ? t.closest(".cctviz-spread") : null);
  const groupOf = (t) => (t && t.closest ? t.closest(".cctviz-lane-group") : null);
  /** The bin under the pointer (figure x from the event), or -1. */
  function binAt(ev) {
    const sc = state.scene;
    const box = state.svg.getBoundingClientRect();
    const x = ((ev.clientX - box.left) / Math.max(box.width, 1)) * sc.width;
    return sc.time.binAt(x);
  }
  function onMove(ev) {
    if (ev.buttons) return tooltip.hide();
    const s = spanOf(ev.target);
    const m = markOf(ev.target);
    const c = collOf(ev.target);
    if (c) tooltip.show(collLines(state.data, state.scene.colls[Number(c.getAttribute("data-j"))]), `k${c.getAttribute("data-j")}`, ev);
    else if (s) tooltip.show(rectLines(state.data, Number(s.getAttribute("data-i"))), `r${s.getAttribute("data-i")}`, ev);
    else if (m) tooltip.show(markLines(state.data, Number(m.getAttribute("data-j"))), `m${m.getAttribute("data-j")}`, ev);
    else if (spreadOf(ev.target)) {
      const g = spreadOf(ev.target);
      const i = binAt(ev);
      if (i >= 0) tooltip.show(spreadLines(state.data, Number(g.getAttribute("data-b")), i), `b${g.getAttribute("data-b")}:${i}`, ev);
      else tooltip.hide();
    } else {
      const b = bandOf(ev.target);
      const i = b ? binAt(ev) : -1;
      if (i >= 0) tooltip.show(counterLines(state.data, Number(b.getAttribute("data-c")), i), `c${b.getAttribute("data-c")}:${i}`, ev);
      else tooltip.hide();
    }
  }
  function onClick(ev) {
    if (state.brush && state.brush.moved()) return;
    const g = groupOf(ev.target);
    if (g) return commit({ expanded: [...new Set([...listOf("expanded"), g.getAttribute("data-key")])] });
    const s = spanOf(ev.target) || collOf(ev.target);
    if (!s) return;
    const id = Number(s.getAttribute("data-node"));
    const sel = list("selection");
    if (ev.shiftKey) commit({ selection: sel.includes(id) ? sel.filter((x) => x !== id) : [...sel, id].sort((a, b) => a - b) });
    else commit({ selection: [id] });
  }
  function onWheel(ev) {
    const sc = state.scene;
    if (!sc || !state.svg) return;
    const box = state.svg.getBoundingClientRect();
    const x = ((ev.clientX - box.left) / Math.max(box.width, 1)) * sc.width;
    if (x < sc.plot.x || x > sc.plot.x + sc.plot.w) return;
    ev.preventDefault();
    const base = state.wheel || state.data.window;
    const at = sc.time.toT(x);
    const factor = Math.exp(ev.deltaY * WHEEL);
    const rel = (at - state.data.window[0]) / (state.data.window[1] - state.data.window[0]);
    const pivot = base[0] + rel * (base[1] - base[0]);
    state.wheel = zoomWindow(base, pivot, factor);
    win.clearTimeout(state.timer);
    state.timer = win.setTimeout(() => {
      const w = state.wheel;
      state.wheel = null;
      if (w) commit({ window: w });
    }, WHEEL_WAIT);
  }
  life.listen(holder, { mousemove: onMove, mouseleave: () => tooltip.hide(), click: onClick });
  life.listen(holder, { wheel: onWheel }, { passive: false });
  life.defer(() => win.clearTimeout(state.timer));

  const keys = life.own(
    attachKeys(holder, (key, ev) => {
      if (key === "Escape") commit({ brush: [] });
      else if (key === "0") commit({ window: state.data.whole, brush: [] });
      else {
        const w = list("window");
        const sc = state.scene;
        const at = sc && sc.time.segments.length > 1 ? sc.time.toT(sc.plot.x + sc.plot.w / 2) : null;
        const next = keyWindow(key, w.length === 2 ? w : state.data.window, state.data.whole, ev.shiftKey, at);
        if (!next) return false;
        if (next[0] !== w[0] || next[1] !== w[1]) commit({ window: next });
      }
      return true;
    }),
  );

  // ---- toolbar -----------------------------------------------------------------
  function updateMenus() {
    const d = state.data;
    const depth = Number(model.get("depth") ?? 3);
    const opts = Array.from({ length: Math.max(depth + 3, 8) }, (_, i) => String(i));
    fillSelect(depthSel, opts, String(depth), undefined, (v) => (v === "0" ? "0 (roots)" : null));
    const bands = String(model.get("counter_bands") ?? "component");
    fillSelect(bandSel, BAND_MODES, bands, undefined, (v) => BAND_LABELS[v] ?? null);
    if (!options.local) bandSel.parentElement.style.display = d.tracks.length ? "" : "none";
    const brush = list("brush");
    zoomBtn.disabled = brush.length !== 2;
    regroupBtn.disabled = listOf("expanded").length === 0;
    regroupBtn.style.display = regroupBtn.disabled && !d.laneKey.some(Boolean) ? "none" : "";
    const [t0, t1] = d.window;
    status.textContent = `${d.lanes.length} lanes${d.laneKey.some(Boolean) ? ` (${Array.from(d.laneMembers).reduce((a, b) => a + b, 0).toLocaleString("en-US")} ranks)` : ""} \u00b7 ${formatValue(t0, "s")} \u2013 ${formatValue(t1, "s")} \u00b7 ${d.n} rectangles${brush.length === 2 ? ` \u00b7 brushed ${formatValue(brush[1] - brush[0], "s")}` : ""}`;
  }
  depthSel.addEventListener("change", () => commit({ depth: Number(depthSel.value) }));
  bandSel.addEventListener("change", () => commit({ counter_bands: bandSel.value }));
  zoomBtn.addEventListener("click", () => {
    const b = list("brush");
    if (b.length === 2) commit({ window: b, brush: [] });
  });
  wholeBtn.addEventListener("click", () => commit({ window: state.data.whole }));
  regroupBtn.addEventListener("click", () => commit({ expanded: [] }));
  saveBtn.addEventListener("click", () => downloadText(doc, "cctviz-timeline.svg", timelineSVG(model.get("_data"), stateOf(model), DOWNLOAD_OPTIONS)));

  // ---- selection and brush (no re-layout) -------------------------------------------
  function applySelection() {
    if (!state.svg) return;
    const sel = new Set(list("selection"));
    for (const r of state.svg.querySelectorAll(".cctviz-span, .cctviz-coll")) r.classList.toggle("selected", sel.has(Number(r.getAttribute("data-node"))));
  }
  function applyBrush() {
    if (!state.svg) return;
    const layer = state.svg.querySelector(".cctviz-brush-layer");
    const sc = timelineScene(state.data, { fontSize: FONT, width: state.width, brush: list("brush"), legends: true });
    layer.replaceChildren(...(sc.brush ? [buildPrim(doc, sc.brush)] : []));
    updateMenus();
  }

  // ---- render ----------------------------------------------------------------------
  function render() {
    tooltip.hide();
    state.data = decodeTimeline(model.get("_data"));
    state.width = Math.max(MIN_WIDTH, Math.round(holder.clientWidth || 900));
    const scene = timelineScene(state.data, { selection: list("selection"), brush: list("brush"), fontSize: FONT, width: state.width });
    state.scene = scene;
    if (state.brush) state.brush.destroy();
    if (state.svg) state.svg.remove();
    const svg = asLiveCanvas(drawTimeline(holder, scene), scene);
    state.svg = svg;
    const given = givenHeight(el, [tb.element]);
    holder.style.maxHeight = given ? `${given}px` : "";
    holder.style.overflowY = given ? "auto" : "";
    // brush along x only: the rectangle's x extent is the window brushed
    state.brush = attachBrush(svg, {
      starts: (ev) => !(ev.target.closest && (ev.target.closest(".cctviz-legend") || ev.target.closest(".cctviz-late"))),
      onBrush: (r) => {
        const sc = state.scene;
        const [w0, w1] = state.data.window;
        const a = Math.max(w0, sc.time.toT(Math.max(r.x0, sc.plot.x)));
        const b = Math.min(w1, sc.time.toT(Math.min(r.x1, sc.plot.x + sc.plot.w)));
        if (b > a) commit({ brush: [a, b] });
      },
    });
    applySelection();
    updateMenus();
    state.renders += 1;
    root.setAttribute("data-rendered", String(state.renders));
    askForMarks();
  }

  // a large timeline's first view comes before its collective markers: once it
  // is drawn, ask Python for them (by the data's version; they replace `_data`)
  function askForMarks() {
    const raw = model.get("_data") || {};
    if (raw.marks_pending && Number.isInteger(raw.version) && model.get("_marks_wanted") !== raw.version) {
      model.set("_marks_wanted", raw.version);
      model.save_changes();
    }
  }

  life.model(model, [
    ["change:_data", () => render()],
    ["change:selection", () => applySelection()],
    ["change:brush", () => applyBrush()],
    ["change:depth", () => updateMenus()],
    ["change:counter_bands", () => updateMenus()],
    ["change:expanded", () => updateMenus()],
  ]);
  life.defer(() => state.brush && state.brush.destroy());
  life.own(
    watchResize(win, [holder], () => {
      const w = Math.round(holder.clientWidth);
      if (w > 0 && Math.abs(Math.max(MIN_WIDTH, w) - state.width) > 1) render();
    }),
  );

  render();
  return () => life.dispose();
}
