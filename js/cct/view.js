// The CCT widget (anywidget `render`): the scene (scene.js) drawn by draw.js,
// plus the chrome (toolbar, tooltip, zoom, brush, keyboard) wired to the
// model's traits. The contract with Python is cctviz/views/CONTRACT.md.
//
// Untrusted names are only ever set with textContent / setAttribute.

import { h } from "../dom.js";
import { lifetime } from "../kit/lifetime.js";
import { attachBrush } from "../chrome/brush.js";
import { attachKeys } from "../chrome/keyboard.js";
import { createToolbar, downloadText, fillSelect } from "../chrome/toolbar.js";
import { DOWNLOAD_OPTIONS } from "../paper.js";
import { createTooltip } from "../chrome/tooltip.js";
import { traitHelpers } from "../chrome/traits.js";
import { createZoom } from "../chrome/zoom.js";
import { contentHeight, fitScale, givenHeight, readableScale, watchResize } from "../chrome/size.js";
import { zoomIdentity } from "d3-zoom";
import { FLAG_MATCH, decodeData, isCollapsed, isExpandable, isOther, otherParentId } from "./data.js";
import { buildPrim, drawCCT } from "./draw.js";
import { cctSVG } from "./figure.js";
import { colorMetrics, cctScene, selectionOverlay, tooltipLines } from "./scene.js";
import { THEME_PALETTE, figureCSS } from "../kit/style.js";

const SEP = " \u203a ";
/** Label size on screen, px. */
const FONT = 12;
const MIN_HEIGHT = 240;
/** The height a view prefers not to pass while its tree fits it readably (size.js). */
const MAX_HEIGHT = 680;

/** The view's traits that a figure depends on, as plain values. */
export function stateOf(model) {
  const chart = model.get("chart") === "icicle" ? "icicle" : "tree";
  const sel = model.get("selection");
  return {
    chart,
    color: model.get("color"),
    size: model.get("size") || "",
    selection: Array.isArray(sel) ? sel.map(Number) : [],
  };
}

/**
 * Render the CCT view into `el`.
 *
 * @param {{model: object, el: HTMLElement}} ctx anywidget render context
 * @returns {() => void} cleanup
 */
export function renderCCT({ model, el }) {
  const doc = el.ownerDocument;
  const win = doc.defaultView;
  const state = {
    renders: 0,
    data: decodeData(null),
    scene: null,
    svg: null,
    viewport: null,
    nodesG: null,
    overlayG: null,
    brush: null,
    activeId: null,
    focusStack: [],
    brushMode: false,
    lastChart: null,
    lastFocus: null,
    userMoved: false,
    minHeight: 0,
    anchor: null,
    reveal: null,
    searchTimer: null,
    width: 960,
    height: 400,
    fit: null,
  };

  // ---- skeleton ----------------------------------------------------------
  const root = h(doc, "div", { class: "cctviz cctviz-cct" });
  el.appendChild(root);
  const life = lifetime();
  life.defer(() => root.remove());
  root.appendChild(h(doc, "style", {}, figureCSS(THEME_PALETTE, ".cctviz-live")));
  const tb = life.own(createToolbar(doc, "Calling context tree controls"));
  root.appendChild(tb.element);
  const chartButtons = tb.segmented("Chart", [["tree", "Tree"], ["icicle", "Icicle"]], "data-chart", "cctviz-chart");
  const colorSel = tb.select("Colour", { class: "cctviz-color", "aria-label": "Colour metric" });
  const color2Sel = tb.select("by", { class: "cctviz-color2", "aria-label": "Second colour metric (bivariate)" });
  const sizeSel = tb.select("Size", { class: "cctviz-size", "aria-label": "Size metric" });
  const searchInput = h(doc, "input", {
    type: "search",
    class: "cctviz-search",
    placeholder: "Search names",
    "aria-label": "Search node names",
    spellcheck: "false",
  });
  tb.append(searchInput);
  const prevBtn = tb.button("\u2039", { class: "cctviz-btn cctviz-prev", title: "Previous match", "aria-label": "Previous match" });
  const nextBtn = tb.button("\u203a", { class: "cctviz-btn cctviz-next", title: "Next match", "aria-label": "Next match" });
  const focusBtn = tb.button("Focus", { class: "cctviz-btn cctviz-focus", title: "Show the selected node as the root (f)" });
  const backBtn = tb.button("Back", { class: "cctviz-btn cctviz-back", title: "Back to the previous focus" });
  const brushBtn = tb.button("Brush", {
    class: "cctviz-btn cctviz-brush-toggle",
    "aria-pressed": "false",
    title: "Drag to select a rectangle (or shift+drag)",
  });
  const fitBtn = tb.button("Fit", { class: "cctviz-btn cctviz-fit", title: "Show the whole tree, fitted to the width and the height, text no smaller than 9 px (0)" });
  const saveBtn = tb.button("SVG", { class: "cctviz-btn cctviz-download", title: "Download the figure as SVG (the same file as view.save)" });
  const { info, status } = tb.counts();

  const pathLine = h(doc, "div", { class: "cctviz-path" });
  root.appendChild(pathLine);
  const holder = h(doc, "div", { class: "cctviz-holder" });
  root.appendChild(holder);
  const tooltip = life.own(createTooltip(root));

  // ---- trait helpers -----------------------------------------------------
  const { getIds, commit } = traitHelpers(model);
  const select1 = (ids) => commit({ selection: [...new Set(ids)].sort((a, b) => a - b) });

  function expandId(id) {
    const collapsed = getIds("collapsed").filter((x) => x !== id);
    const expanded = getIds("expanded");
    if (!expanded.includes(id)) expanded.push(id);
    commit({ collapsed, expanded: expanded.sort((a, b) => a - b) });
  }
  function collapseId(id) {
    const collapsed = getIds("collapsed");
    if (!collapsed.includes(id)) collapsed.push(id);
    const expanded = getIds("expanded").filter((x) => x !== id);
    commit({ collapsed: collapsed.sort((a, b) => a - b), expanded });
  }
  /** Remember where row's mark is on screen, so that the next render keeps it there. */
  function anchorRow(row) {
    const c = markCentre(row);
    if (c) state.anchor = { id: state.data.id[row], screen: zoom.apply(c) };
  }
  function expandRow(row) {
    anchorRow(row);
    if (isOther(state.data, row)) expandId(otherParentId(state.data, row));
    else expandId(state.data.id[row]);
  }
  function collapseRow(row) {
    anchorRow(row);
    collapseId(state.data.id[row]);
  }
  function focusRow(row) {
    const d = state.data;
    if (row < 0 || row >= d.n || isOther(d, row)) return;
    const cur = Number(model.get("focus") ?? -1);
    if (cur === d.id[row]) return;
    state.focusStack.push(cur);
    commit({ focus: d.id[row] });
    updateButtons();
  }
  function goBack() {
    const prev = state.focusStack.length ? state.focusStack.pop() : -1;
    commit({ focus: prev });
    updateButtons();
  }

  // ---- geometry ----------------------------------------------------------
  /** Centre of row's mark in viewport coordinates (content offset included). */
  function markCentre(row) {
    const s = state.scene;
    const g = s && s.geom;
    if (!g || row < 0 || row >= state.data.n) return null;
    const c = g.kind === "tree" ? [g.x[row], g.y[row]] : [g.x0[row] + Math.min(8, (g.x1[row] - g.x0[row]) / 2), (g.y0[row] + g.y1[row]) / 2];
    return [c[0] + s.content.x, c[1] + s.content.y];
  }
  const top = () => (state.scene ? state.scene.titleHeight + state.scene.band : 0);

  const zoom = createZoom({
    blocked: (ev) => ev.type === "mousedown" && (ev.shiftKey || state.brushMode),
    onZoom: (t) => {
      tooltip.hide();
      if (state.fit && (t.k !== state.fit.k || t.x !== state.fit.x || t.y !== state.fit.y)) state.userMoved = true;
    },
  });

  function ensureVisible(row) {
    const c = markCentre(row);
    if (!c) return;
    const [sx, sy] = zoom.apply(c);
    const pad = 40;
    let dx = 0;
    let dy = 0;
    if (sx < pad) dx = pad - sx;
    else if (sx > state.width - pad) dx = state.width - pad - sx;
    if (sy < top() + pad) dy = top() + pad - sy;
    else if (sy > state.height - pad / 2) dy = state.height - pad / 2 - sy;
    if (dx || dy) zoom.translateBy(dx, dy);
  }

  /** Scale that fits the content's width into the view's (never enlarged). */
  function widthScale() {
    const s = state.scene;
    return Math.min(1, (state.width - 2 * s.margin) / Math.max(s.width - 2 * s.margin, 1));
  }
  /** The opening transform: the content fitted in both directions (never enlarged, its
   *  top under the legends) but never below readable text (size.js); a root that would
   *  then be below the fold is brought to 40% of the height. */
  function fitTransform() {
    const s = state.scene;
    const ox = s.content.x;
    const oy = s.content.y;
    const k = fitScale(s.width - 2 * s.margin, s.height - oy - s.margin, state.width - 2 * s.margin, state.height - oy - s.margin, FONT);
    let t = zoomIdentity.translate(ox * (1 - k), oy * (1 - k)).scale(k);
    const d = state.data;
    if (d.n > 0 && s.geom.kind === "tree") {
      const rootY = t.apply([0, s.geom.y[d.roots[0]] + oy])[1];
      if (rootY > state.height - 30) t = t.translate(0, (state.height * 0.4 - rootY) / t.k);
    }
    return t;
  }
  function fit() {
    state.fit = fitTransform();
    zoom.set(state.fit);
    state.userMoved = false;
  }

  // ---- pointer interaction on nodes ------------------------------------------
  const rowOfTarget = (target) => {
    const item = target && target.closest ? target.closest('[role="treeitem"]') : null;
    if (!item) return -1;
    const row = state.data.rowOf.get(Number(item.getAttribute("data-id")));
    return row === undefined ? -1 : row;
  };
  function activate(row, shift) {
    const d = state.data;
    if (isOther(d, row)) {
      expandRow(row);
      return;
    }
    const id = d.id[row];
    setActive(id, false);
    if (shift) {
      const ids = getIds("selection");
      select1(ids.includes(id) ? ids.filter((x) => x !== id) : [...ids, id]);
    } else select1([id]);
  }
  function onClick(ev) {
    if (state.brush && state.brush.moved()) return;
    if (!ev.target.closest || !ev.target.closest("svg")) return;
    const row = rowOfTarget(ev.target);
    if (row < 0) {
      if (ev.target.closest(".cctviz-legends")) return;
      if (!ev.shiftKey && getIds("selection").length) select1([]);
      return;
    }
    activate(row, ev.shiftKey);
  }
  function onDblClick(ev) {
    const row = rowOfTarget(ev.target);
    if (row < 0) return;
    ev.preventDefault();
    const d = state.data;
    if (isOther(d, row) || (isExpandable(d, row) && isCollapsed(d, row))) expandRow(row);
    else if (isCut(row)) focusRow(row);
    else if (d.children[row].length) collapseRow(row);
  }
  /** Whether the level cut that fits the box hides row's children. */
  function isCut(row) {
    const g = state.scene && state.scene.geom;
    return Boolean(g && g.kind === "tree" && state.data.depth[row] === g.shownLevels - 1 && state.data.children[row].length);
  }
  function onPointerMove(ev) {
    if (ev.buttons) return tooltip.hide();
    const row = rowOfTarget(ev.target);
    if (row < 0) tooltip.hide();
    else tooltip.show(tooltipLines(state.data, stateOf(model), row), String(state.data.id[row]), ev);
  }
  const onLeave = () => tooltip.hide();
  life.listen(holder, { click: onClick, dblclick: onDblClick, mousemove: onPointerMove, mouseleave: onLeave });

  // ---- keyboard (WAI-ARIA tree pattern, roving tabindex) ----------------------
  function itemOf(id) {
    return state.nodesG ? state.nodesG.querySelector(`[role="treeitem"][data-id="${Number(id)}"]`) : null;
  }
  function setActive(id, moveFocus) {
    const prev = state.activeId === null ? null : itemOf(state.activeId);
    if (prev) prev.setAttribute("tabindex", "-1");
    state.activeId = id;
    const item = itemOf(id);
    if (item) {
      item.setAttribute("tabindex", "0");
      if (moveFocus) {
        ensureVisible(state.data.rowOf.get(id));
        item.focus({ preventScroll: true });
      }
    }
  }
  const keys = attachKeys(holder, (key, ev) => {
    const d = state.data;
    if (d.n === 0 || !ev.target.closest || !ev.target.closest('[role="tree"]')) return false;
    let row = d.rowOf.get(state.activeId);
    if (row === undefined) row = 0;
    const move = (r) => setActive(d.id[Math.max(0, Math.min(d.n - 1, r))], true);
    switch (key) {
      case "ArrowDown":
        move(row + 1);
        return true;
      case "ArrowUp":
        move(row - 1);
        return true;
      case "Home":
        move(0);
        return true;
      case "End":
        move(d.n - 1);
        return true;
      case "ArrowRight":
        if (isExpandable(d, row) && isCollapsed(d, row)) expandRow(row);
        else if (isCut(row)) focusRow(row);
        else if (d.children[row].length) move(d.children[row][0]);
        return true;
      case "ArrowLeft":
        if (!isOther(d, row) && d.children[row].length && !isCollapsed(d, row)) collapseRow(row);
        else if (d.parent[row] >= 0) move(d.parent[row]);
        return true;
      case "Enter":
      case " ":
        activate(row, ev.shiftKey);
        return true;
      case "f":
      case "F":
        focusRow(row);
        return true;
      case "0":
        fit();
        return true;
      case "Escape":
        select1([]);
        return true;
      default:
        return false;
    }
  });

  // ---- toolbar -----------------------------------------------------------------
  function updateMenus() {
    const metrics = (model.get("metrics") || []).map(String);
    const cm = colorMetrics(model.get("color"));
    // the icicle colours by the exclusive part of a metric that is also its height:
    // the menu says so, as the legend does
    const drawn = state.scene ? state.scene.colorShown : null;
    const shown = drawn && cm.length === 1 && drawn[0] !== cm[0] ? drawn[0] : null;
    fillSelect(colorSel, metrics, cm[0] ?? "", undefined, (m) => (shown && m === cm[0] ? `${m}: colour shows ${shown} (exclusive)` : null));
    fillSelect(color2Sel, metrics, cm[1] ?? "", "none");
    fillSelect(sizeSel, metrics, model.get("size") || "", "none");
    const chart = stateOf(model).chart;
    for (const [v, b] of Object.entries(chartButtons)) b.setAttribute("aria-pressed", String(v === chart));
  }
  function updateButtons() {
    const focus = Number(model.get("focus") ?? -1);
    backBtn.disabled = focus === -1 && state.focusStack.length === 0;
    brushBtn.setAttribute("aria-pressed", String(state.brushMode));
    root.classList.toggle("cctviz-brushing", state.brushMode);
    const hasMatches = state.data.matchIds.length > 0;
    prevBtn.disabled = !hasMatches;
    nextBtn.disabled = !hasMatches;
  }
  const writeColor = () => commit({ color: color2Sel.value ? [colorSel.value, color2Sel.value] : colorSel.value });
  const onSize = () => commit({ size: sizeSel.value });
  colorSel.addEventListener("change", writeColor);
  color2Sel.addEventListener("change", writeColor);
  sizeSel.addEventListener("change", onSize);
  for (const [v, b] of Object.entries(chartButtons)) {
    b.addEventListener("click", () => {
      if (stateOf(model).chart !== v) commit({ chart: v });
    });
  }
  searchInput.addEventListener("input", () => {
    win.clearTimeout(state.searchTimer);
    state.searchTimer = win.setTimeout(() => {
      state.searchTimer = null;
      if (model.get("search") !== searchInput.value) commit({ search: searchInput.value });
    }, 200);
  });
  /** Select the next (+1) or previous (-1) search match of the whole tree, in tree order. */
  function stepMatch(dir) {
    const ids = state.data.matchIds;
    if (!ids.length) return;
    const sel = getIds("selection");
    const cur = sel.length ? sel[sel.length - 1] : state.activeId ?? -1;
    let k = dir > 0 ? ids.findIndex((x) => x > cur) : ids.length - 1 - [...ids].reverse().findIndex((x) => x < cur);
    if (k < 0 || k >= ids.length) k = dir > 0 ? 0 : ids.length - 1;
    state.reveal = ids[k];
    select1([ids[k]]);
    if (state.data.rowOf.has(ids[k])) revealActive();
  }
  function revealActive() {
    const id = state.reveal;
    if (id === null || !state.data.rowOf.has(id)) return;
    state.reveal = null;
    setActive(id, false);
    ensureVisible(state.data.rowOf.get(id));
  }
  searchInput.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter") stepMatch(ev.shiftKey ? -1 : 1);
  });
  prevBtn.addEventListener("click", () => stepMatch(-1));
  nextBtn.addEventListener("click", () => stepMatch(1));
  focusBtn.addEventListener("click", () => {
    const d = state.data;
    const sel = getIds("selection");
    let row = sel.length === 1 ? d.rowOf.get(sel[0]) : undefined;
    if (row === undefined) row = d.rowOf.get(state.activeId);
    if (row !== undefined) focusRow(row);
  });
  backBtn.addEventListener("click", goBack);
  brushBtn.addEventListener("click", () => {
    state.brushMode = !state.brushMode;
    updateButtons();
  });
  fitBtn.addEventListener("click", fit);
  saveBtn.addEventListener("click", () => downloadText(doc, "cctviz-tree.svg", cctSVG(model.get("_data"), stateOf(model), DOWNLOAD_OPTIONS)));

  // ---- selection (no re-layout) -----------------------------------------------
  function applySelection() {
    const sel = new Set(getIds("selection"));
    const d = state.data;
    if (state.nodesG) {
      for (const item of state.nodesG.children) {
        const on = sel.has(Number(item.getAttribute("data-id")));
        item.classList.toggle("selected", on);
        item.setAttribute("aria-selected", String(on));
      }
    }
    if (state.overlayG) {
      state.overlayG.replaceChildren(...selectionOverlay(d, state.scene.geom, sel).map((p) => buildPrim(doc, p)));
    }
    const parts = [];
    if (model.get("search")) {
      const total = d.matchTotal;
      let shown = 0;
      for (let i = 0; i < d.n; i++) if (d.flags[i] & FLAG_MATCH) shown++;
      parts.push(`${total} match${total === 1 ? "" : "es"}${shown < total ? ` (${shown} shown)` : ""}`);
    }
    if (sel.size) parts.push(`${sel.size} selected`);
    info.textContent = parts.join(" \u00b7 ");
  }

  // ---- render ------------------------------------------------------------------------
  const fixedHeight = () => givenHeight(el, [tb.element, pathLine]);

  function render() {
    const hadFocus = state.svg ? state.svg.contains(doc.activeElement) : false;
    tooltip.hide();
    state.data = decodeData(model.get("_data"));
    const d = state.data;
    const st = stateOf(model);
    const focus = Number(model.get("focus") ?? -1);
    const reset = state.lastChart !== st.chart || state.lastFocus !== focus;
    if (reset) state.minHeight = 0;
    state.lastChart = st.chart;
    state.lastFocus = focus;
    state.width = Math.max(320, Math.round(holder.clientWidth || 960));

    // A tree fits the width of its box: shorter labels (the tooltip has the whole
    // name), the opening fit down to readable text, and the levels that still do
    // not fit are cut ("+N" on their parents; a double-click focuses one)
    const fitLevels = st.chart === "tree" ? (state.width - 2) / readableScale(FONT) : null;
    const scene = cctScene(d, { ...st, fontSize: FONT, width: state.width, fitLevels });
    state.scene = scene;
    if (state.brush) state.brush.destroy();
    if (state.svg) state.svg.remove();
    const svg = drawCCT(holder, scene);
    svg.setAttribute("class", "cctviz-fig cctviz-live cctviz-canvas");
    state.svg = svg;
    state.viewport = svg.querySelector(".cctviz-viewport");
    state.nodesG = svg.querySelector(".cctviz-nodes");
    state.overlayG = svg.querySelector(".cctviz-overlay");
    root.classList.toggle("cctviz-searching", Boolean(model.get("search")) && d.matchTotal > 0);

    // Height: the notebook's (view.layout.height), else the fitted content's, within bounds.
    const fixed = fixedHeight();
    if (fixed) state.height = fixed;
    else {
      const band = scene.content.y + scene.margin;
      const fitted = contentHeight({ band, body: scene.height - band, widthScale: widthScale(), fontSize: FONT, min: MIN_HEIGHT, max: MAX_HEIGHT });
      state.height = Math.max(state.minHeight, fitted);
      state.minHeight = state.height;
    }
    svg.setAttribute("width", String(state.width));
    svg.setAttribute("height", String(state.height));
    svg.setAttribute("viewBox", `0 0 ${state.width} ${state.height}`);
    // the fit depends on the height (a root below the fold): recompute with the final one
    state.fit = fitTransform();

    if (reset || !state.userMoved) {
      zoom.set(state.fit);
      state.userMoved = false;
    } else if (state.anchor) {
      const row = d.rowOf.get(state.anchor.id);
      if (row !== undefined) {
        const [sx, sy] = zoom.apply(markCentre(row));
        zoom.set(zoom.transform.translate((state.anchor.screen[0] - sx) / zoom.transform.k, (state.anchor.screen[1] - sy) / zoom.transform.k));
      }
    }
    state.anchor = null;
    zoom.attach(svg, state.viewport, state.width, state.height);
    state.brush = attachBrush(svg, {
      starts: (ev) => (ev.shiftKey || state.brushMode) && !(ev.target.closest && (ev.target.closest('[role="treeitem"]') || ev.target.closest(".cctviz-legends"))),
      onBrush: (r, union) => {
        const ids = union ? getIds("selection") : [];
        for (let i = 0; i < d.n; i++) {
          if (isOther(d, i)) continue;
          const [sx, sy] = zoom.apply(markCentre(i));
          if (sx >= r.x0 && sx <= r.x1 && sy >= r.y0 && sy <= r.y1) ids.push(d.id[i]);
        }
        select1(ids);
      },
    });

    // Roving tabindex: keep the active node, else the first selected, else the first row.
    const selSet = new Set(getIds("selection"));
    for (const item of state.nodesG.children) item.setAttribute("tabindex", "-1");
    let active = d.rowOf.has(state.activeId) ? state.activeId : null;
    if (active === null) for (const id of selSet) if (d.rowOf.has(id)) { active = id; break; }
    if (active === null && d.n > 0) active = d.id[0];
    state.activeId = active;
    if (active !== null) itemOf(active)?.setAttribute("tabindex", "0");

    updateMenus();
    updateButtons();
    status.textContent = `${d.n} of ${d.total} nodes`;
    if (focus !== -1 || d.focusPath.length) {
      const focusName = d.roots.length === 1 ? d.names[d.roots[0]] : "";
      const path = [...d.focusPath, focusName].filter((x) => x !== "");
      pathLine.textContent = `Focus: ${path.join(SEP)}`;
      pathLine.setAttribute("title", path.join(SEP));
      pathLine.style.display = "";
    } else {
      pathLine.textContent = "";
      pathLine.removeAttribute("title");
      pathLine.style.display = "none";
    }
    if (doc.activeElement !== searchInput && searchInput.value !== (model.get("search") || "") && state.searchTimer === null) {
      searchInput.value = model.get("search") || "";
    }
    applySelection();
    revealActive();
    if (hadFocus && active !== null) itemOf(active)?.focus({ preventScroll: true });

    state.renders += 1;
    root.setAttribute("data-rendered", String(state.renders));
  }

  // ---- model listeners ---------------------------------------------------------
  const onData = () => render();
  const onSelection = () => applySelection();
  const onMenus = () => updateMenus();
  const onFocus = () => updateButtons();
  const onSearch = () => {
    if (doc.activeElement !== searchInput && state.searchTimer === null) searchInput.value = model.get("search") || "";
  };
  const listeners = [
    ["change:_data", onData],
    ["change:chart", onData],
    ["change:selection", onSelection],
    ["change:metrics", onMenus],
    ["change:color", onMenus],
    ["change:size", onMenus],
    ["change:focus", onFocus],
    ["change:search", onSearch],
  ];
  life.model(model, listeners);
  life.own(zoom);
  life.own(keys);
  life.defer(() => {
    win.clearTimeout(state.searchTimer);
    if (state.brush) state.brush.destroy();
  });

  // A new width (or a new notebook-given height) re-renders; the svg's own size
  // never feeds back: it is 100% of the holder, whose border is outside it.
  let lastH = 0;
  life.own(watchResize(win, [holder, el], () => {
    const w = Math.round(holder.clientWidth);
    const fh = fixedHeight();
    if ((w > 0 && Math.abs(Math.max(320, w) - state.width) > 1) || (fh && Math.abs(fh - lastH) > 1)) {
      lastH = fh;
      // a new width fits other levels: the height follows them (it only holds
      // still while the user collapses and expands at one width)
      if (w > 0 && Math.abs(Math.max(320, w) - state.width) > 1) state.minHeight = 0;
      render();
    }
  }));

  render();

  return () => life.dispose();
}
