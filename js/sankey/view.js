// The Sankey widget (anywidget `render`, `_kind == "sankey"`): the scene
// (scene.js) drawn by draw.js, plus the chrome (toolbar, tooltip, zoom,
// keys) wired to the traits of cctviz/views/CONTRACT.md ("SankeyView").
//
// Untrusted names are only ever set with textContent / setAttribute.

import { pointer } from "d3-selection";
import { zoomIdentity } from "d3-zoom";
import { h, r2 } from "../dom.js";
import { lifetime } from "../kit/lifetime.js";
import { attachKeys } from "../chrome/keyboard.js";
import { contentHeight, fitScale, givenHeight, watchResize } from "../chrome/size.js";
import { createToolbar, downloadText, fillSelect } from "../chrome/toolbar.js";
import { DOWNLOAD_OPTIONS } from "../paper.js";
import { createTooltip } from "../chrome/tooltip.js";
import { traitHelpers } from "../chrome/traits.js";
import { createZoom } from "../chrome/zoom.js";
import { THEME_PALETTE } from "../kit/style.js";
import { decodeSankey } from "./data.js";
import { drawSankey, figureClass } from "./draw.js";
import { sankeySVG, sankeyState } from "./figure.js";
import { edgeTooltipLines, outlierTooltipLines, sankeyScene, siteTooltipLines, tooltipLines } from "./scene.js";
import { sankeyCSS } from "./style.js";

const FONT = 12;
const MIN_HEIGHT = 300;
const MAX_HEIGHT = 760;

/** The traits a Sankey figure depends on, as the export payload's `state` names them. */
export function stateOf(model) {
  const get = (k, dflt) => model.get(k) ?? dflt;
  return {
    metric: get("metric", ""),
    group_by: get("group_by", ""),
    selected_groups: get("selected_groups", []),
    selection: get("selection", []),
    selected_profiles: get("selected_profiles", []),
    brush: get("brush", {}),
    expanded: get("expanded", []),
  };
}

const toggle = (list, x) => (list.includes(x) ? list.filter((y) => y !== x) : [...list, x]).sort((a, b) => a - b);

/**
 * Render the Sankey view into `el`.
 *
 * @param {{model: object, el: HTMLElement}} ctx anywidget render context
 * @returns {() => void} cleanup
 */
export function renderSankey({ model, el }) {
  const doc = el.ownerDocument;
  const win = doc.defaultView;
  const state = { fitKey: "", renders: 0, data: decodeSankey(null), scene: null, svg: null, nodesG: null, active: -1, width: 960, height: 400, justBrushed: false, drag: null };

  const root = h(doc, "div", { class: "cctviz cctviz-sankey" });
  el.appendChild(root);
  const life = lifetime();
  life.defer(() => root.remove());
  root.appendChild(h(doc, "style", {}, sankeyCSS(THEME_PALETTE, ".cctviz-live")));
  const tb = life.own(createToolbar(doc, "Ensemble Sankey controls"));
  root.appendChild(tb.element);
  const metricSel = tb.select("Metric", { class: "cctviz-metric", "aria-label": "Metric that sizes the nodes" });
  const fitBtn = tb.button("Fit", { class: "cctviz-btn cctviz-fit", title: "Show the whole graph (0)" });
  const saveBtn = tb.button("SVG", { class: "cctviz-btn cctviz-download", title: "Download the figure as SVG (the same file as view.save)" });
  const { info, status } = tb.counts();
  const holder = h(doc, "div", { class: "cctviz-holder" });
  root.appendChild(holder);
  const tooltip = life.own(createTooltip(root));

  // ---- trait helpers -----------------------------------------------------
  const { getIds, commit } = traitHelpers(model);

  // ---- zoom --------------------------------------------------------------
  const zoom = createZoom({
    blocked: (ev) => ev.type === "mousedown" && Boolean(ev.target.closest && ev.target.closest(".cctviz-dist")),
    onZoom: () => tooltip.hide(),
  });
  // scale the content to the view, keeping it below the legend band (which does not scale)
  function fitTransform() {
    const s = state.scene;
    const ox = s.content ? s.content.x : 0;
    const oy = s.content ? s.content.y : 0;
    const k = fitScale(s.width - ox, s.height - oy, state.width - ox, state.height - oy, FONT);
    return zoomIdentity.translate(ox * (1 - k), oy * (1 - k)).scale(k);
  }
  const fit = () => zoom.set(fitTransform());

  // ---- what is under the pointer -------------------------------------------
  const nodeOf = (t) => {
    const g = t && t.closest ? t.closest("[data-node]") : null;
    return g ? Number(g.getAttribute("data-node")) : -1;
  };
  function onClick(ev) {
    if (state.justBrushed || !ev.target.closest || !ev.target.closest("svg")) return;
    const t = ev.target;
    const outlier = t.closest(".cctviz-outlier");
    if (outlier) {
      const p = Number(outlier.getAttribute("data-profile"));
      commit({ selected_profiles: ev.shiftKey ? toggle(getIds("selected_profiles"), p) : [p] });
      return;
    }
    const site = t.closest(".cctviz-site");
    if (site) {
      const id = Number(site.getAttribute("data-id"));
      commit({ selection: ev.shiftKey ? toggle(getIds("selection"), id) : [id] });
      return;
    }
    const k = nodeOf(t);
    if (k >= 0) {
      setActive(k, false);
      commit({ selected_groups: ev.shiftKey ? toggle(getIds("selected_groups"), k) : [k] });
      return;
    }
    if (t.closest(".cctviz-legends")) return;
    if (!ev.shiftKey && (getIds("selected_groups").length || getIds("selection").length)) commit({ selected_groups: [], selection: [] });
  }
  function onDblClick(ev) {
    const k = nodeOf(ev.target);
    if (k < 0) return;
    ev.preventDefault();
    commit({ expanded: toggle(getIds("expanded"), k) });
  }
  function onMove(ev) {
    if (ev.buttons || state.drag) return tooltip.hide();
    const d = state.data;
    const t = ev.target;
    if (!t.closest) return tooltip.hide();
    const outlier = t.closest(".cctviz-outlier");
    if (outlier) {
      const p = outlier.getAttribute("data-profile");
      const k = nodeOf(outlier);
      const j = d.outliersOf[k]?.find((jj) => String(d.outlierProfile[jj]) === p);
      if (j !== undefined) return tooltip.show(outlierTooltipLines(d, j), `o${k}:${p}`, ev);
    }
    const site = t.closest(".cctviz-site");
    if (site) {
      const s = d.sitesOf.get(nodeOf(site));
      const i = s ? s.id.indexOf(Number(site.getAttribute("data-id"))) : -1;
      if (i >= 0) return tooltip.show(siteTooltipLines(d, s, i), `s${s.id[i]}`, ev);
    }
    const k = nodeOf(t);
    if (k >= 0 && k < d.n) return tooltip.show(tooltipLines(d, k), `n${k}`, ev);
    const flow = t.closest(".cctviz-flow");
    if (flow) {
      const e = Number(flow.getAttribute("data-edge"));
      return tooltip.show(edgeTooltipLines(d, e, Number(flow.getAttribute("data-value"))), `e${e}`, ev);
    }
    tooltip.hide();
  }
  const onLeave = () => tooltip.hide();

  // ---- brushing a node's distribution (horizontal drag) ------------------------
  function onDown(ev) {
    const g = ev.button === 0 && ev.target.closest ? ev.target.closest(".cctviz-dist") : null;
    if (!g) return;
    const k = Number(g.getAttribute("data-node"));
    const geo = state.scene.geom.dist[k];
    if (!geo) return;
    ev.preventDefault();
    const node = g.parentNode;
    const ox = state.scene.geom.layout.x0[k];
    const lx0 = geo.x0 - ox;
    const lx1 = geo.x1 - ox;
    const x0 = pointer(ev, node)[0];
    const rect = h(doc, "svg:rect", { class: "cctviz-brush-range cctviz-brushing", y: r2(geo.y0 - state.scene.geom.layout.y0[k]), height: r2(geo.y1 - geo.y0), width: 0, x: r2(x0) });
    g.appendChild(rect);
    state.drag = { k, moved: false };
    const clamp = (x) => Math.max(lx0, Math.min(lx1, x));
    const move = (e) => {
      const x = pointer(e, node)[0];
      if (Math.abs(x - x0) > 3) state.drag.moved = true;
      rect.setAttribute("x", r2(clamp(Math.min(x, x0))));
      rect.setAttribute("width", r2(Math.abs(clamp(x) - clamp(x0))));
    };
    const up = (e) => {
      win.removeEventListener("mousemove", move, true);
      win.removeEventListener("mouseup", up, true);
      const moved = state.drag.moved;
      state.drag = null;
      rect.remove();
      if (!moved) return;
      state.justBrushed = true;
      win.setTimeout(() => (state.justBrushed = false), 0);
      const x = pointer(e, node)[0];
      const val = (xx) => (lx1 > lx0 && geo.hi > geo.lo ? geo.lo + ((clamp(xx) - lx0) / (lx1 - lx0)) * (geo.hi - geo.lo) : geo.hi);
      const a = val(Math.min(x, x0));
      const b = val(Math.max(x, x0));
      commit({ brush: { node: k, lo: a, hi: b } });
    };
    win.addEventListener("mousemove", move, true);
    win.addEventListener("mouseup", up, true);
  }

  life.listen(holder, { click: onClick, dblclick: onDblClick, mousemove: onMove, mouseleave: onLeave, mousedown: onDown });

  // ---- keyboard: arrows move between nodes, Enter selects, Escape clears ------------
  function itemOf(k) {
    return state.nodesG ? state.nodesG.querySelector(`.cctviz-snode[data-node="${Number(k)}"]`) : null;
  }
  function setActive(k, moveFocus) {
    const prev = itemOf(state.active);
    if (prev) prev.setAttribute("tabindex", "-1");
    state.active = k;
    const item = itemOf(k);
    if (item) {
      item.setAttribute("tabindex", "0");
      if (moveFocus) item.focus({ preventScroll: true });
    }
  }
  /** The node next to k: up/down in its column, or the nearest in the next column left/right. */
  function neighbour(k, key) {
    const L = state.scene.geom.layout;
    const d = state.data;
    const cy = (v) => (L.y0[v] + L.y1[v]) / 2;
    const c = d.column[k];
    if (key === "ArrowUp" || key === "ArrowDown") {
      const col = L.order[c].filter((v) => v < d.n);
      const at = col.indexOf(k) + (key === "ArrowDown" ? 1 : -1);
      return at >= 0 && at < col.length ? col[at] : k;
    }
    for (let cc = c + (key === "ArrowRight" ? 1 : -1); cc >= 0 && cc < L.columns; cc += key === "ArrowRight" ? 1 : -1) {
      const col = L.order[cc].filter((v) => v < d.n);
      if (col.length) return col.reduce((best, v) => (Math.abs(cy(v) - cy(k)) < Math.abs(cy(best) - cy(k)) ? v : best), col[0]);
    }
    return k;
  }
  const keys = attachKeys(holder, (key, ev) => {
    const d = state.data;
    if (d.n === 0) return false;
    const k = state.active >= 0 && state.active < d.n ? state.active : 0;
    switch (key) {
      case "ArrowUp":
      case "ArrowDown":
      case "ArrowLeft":
      case "ArrowRight":
        setActive(neighbour(k, key), true);
        return true;
      case "Enter":
      case " ":
        commit({ selected_groups: ev.shiftKey ? toggle(getIds("selected_groups"), k) : [k] });
        return true;
      case "Escape":
        commit({ selected_groups: [], selection: [] });
        return true;
      case "0":
        fit();
        return true;
      default:
        return false;
    }
  });

  // ---- toolbar ---------------------------------------------------------------------------
  const updateMenus = () => fillSelect(metricSel, (model.get("metrics") || []).map(String), model.get("metric") || "");
  metricSel.addEventListener("change", () => commit({ metric: metricSel.value }));
  fitBtn.addEventListener("click", fit);
  saveBtn.addEventListener("click", () => downloadText(doc, "cctviz-sankey.svg", sankeySVG(model.get("_data"), stateOf(model), DOWNLOAD_OPTIONS)));

  // ---- selection (no re-layout) ----------------------------------------------------
  function applySelection() {
    if (!state.svg) return;
    const groups = new Set(getIds("selected_groups"));
    const sites = new Set(getIds("selection"));
    const profiles = new Set(getIds("selected_profiles"));
    for (const g of state.svg.querySelectorAll(".cctviz-snode")) {
      const on = groups.has(Number(g.getAttribute("data-node")));
      g.classList.toggle("selected", on);
      g.setAttribute("aria-selected", String(on));
    }
    for (const f of state.svg.querySelectorAll(".cctviz-flow")) {
      f.classList.toggle("selected", groups.has(Number(f.getAttribute("data-source"))) || groups.has(Number(f.getAttribute("data-target"))));
    }
    for (const s of state.svg.querySelectorAll(".cctviz-site")) s.classList.toggle("selected", sites.has(Number(s.getAttribute("data-id"))));
    for (const o of state.svg.querySelectorAll(".cctviz-outlier")) o.classList.toggle("selected", profiles.has(Number(o.getAttribute("data-profile"))));
    const parts = [];
    if (groups.size) parts.push(`${groups.size} group${groups.size === 1 ? "" : "s"} selected`);
    if (profiles.size) parts.push(`${profiles.size} profile${profiles.size === 1 ? "" : "s"} selected`);
    info.textContent = parts.join(" \u00b7 ");
  }

  // ---- render -----------------------------------------------------------------------------
  function render() {
    const hadFocus = state.svg ? state.svg.contains(doc.activeElement) : false;
    tooltip.hide();
    state.data = decodeSankey(model.get("_data"));
    const d = state.data;
    state.width = Math.max(320, Math.round(holder.clientWidth || 960));
    const fixed = givenHeight(el, [tb.element]);
    const settings = { ...sankeyState(stateOf(model)), fontSize: FONT, width: state.width, height: fixed || null };
    const scene = sankeyScene(d, settings);
    state.scene = scene;
    const band = scene.content ? scene.content.y : 0;
    const widthScale = (state.width - (scene.content ? scene.content.x : 0)) / Math.max(scene.width - (scene.content ? scene.content.x : 0), 1);
    state.height = fixed || contentHeight({ band, body: scene.height - band, widthScale, fontSize: FONT, min: MIN_HEIGHT, max: MAX_HEIGHT });
    if (state.svg) state.svg.remove();
    const svg = drawSankey(holder, scene);
    svg.setAttribute("class", figureClass(scene, "cctviz-live cctviz-canvas"));
    svg.setAttribute("width", String(state.width));
    svg.setAttribute("height", String(state.height));
    svg.setAttribute("viewBox", `0 0 ${state.width} ${state.height}`);
    state.svg = svg;
    state.nodesG = svg.querySelector(".cctviz-nodes");
    zoom.attach(svg, svg.querySelector(".cctviz-viewport"), state.width, state.height);
    // fit when the figure or the view changes size (first render, expand, resize),
    // not when a brush or a selection brings new data: the user's zoom stays
    const fitKey = `${state.width}x${state.height}:${r2(scene.width)}x${r2(scene.height)}`;
    if (fitKey !== state.fitKey) {
      state.fitKey = fitKey;
      fit();
    }
    for (const g of state.nodesG.children) g.setAttribute("tabindex", "-1");
    if (!(state.active >= 0 && state.active < d.n)) state.active = getIds("selected_groups").find((k) => k < d.n) ?? (d.n ? 0 : -1);
    if (state.active >= 0) itemOf(state.active)?.setAttribute("tabindex", "0");
    updateMenus();
    status.textContent = `${d.n} group${d.n === 1 ? "" : "s"} \u00b7 ${d.profiles} profile${d.profiles === 1 ? "" : "s"}${d.treeSize ? ` \u00b7 ${d.treeSize} call sites` : ""}`;
    applySelection();
    if (hadFocus && state.active >= 0) itemOf(state.active)?.focus({ preventScroll: true });
    state.renders += 1;
    root.setAttribute("data-rendered", String(state.renders));
  }

  const listeners = [
    ["change:_data", render],
    ["change:brush", render],
    ["change:selection", applySelection],
    ["change:selected_groups", applySelection],
    ["change:selected_profiles", applySelection],
    ["change:metrics", updateMenus],
    ["change:metric", updateMenus],
  ];
  life.model(model, listeners);
  life.own(zoom);
  life.own(keys);
  // a new width, or a new notebook-given height (view.layout.height), re-renders
  let lastH = 0;
  life.own(
    watchResize(win, [holder, el], () => {
      const w = Math.round(holder.clientWidth);
      const fh = givenHeight(el, [tb.element]);
      if ((w > 0 && Math.abs(Math.max(320, w) - state.width) > 1) || (fh && Math.abs(fh - lastH) > 1)) {
        lastH = fh;
        render();
      }
    }),
  );

  render();

  return () => life.dispose();
}
