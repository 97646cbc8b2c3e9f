// DOM of the CCT view (anywidget `render`). The contract with the Python
// widget is cctviz/views/CONTRACT.md; pure parts live in data.js, layout.js
// and color.js.
//
// Untrusted names are only ever set with textContent / setAttribute.
// Rendering is deterministic (no transitions, no randomness): the same state
// gives the same SVG.

import { pointer, select } from "d3-selection";
import { zoom, zoomIdentity } from "d3-zoom";

import { formatPercent, formatRatio } from "../format.js";
import {
  FLAG_MATCH,
  ancestorNames,
  decodeData,
  formatMetricValue,
  hasImbalanceCue,
  imbalance,
  imbalanceCost,
  isAdditive,
  isCollapsed,
  isExpandable,
  isOther,
  metricLabel,
  metricName,
  otherParentId,
} from "./data.js";
import { estimateTextWidth, icicleLayout, treeLayout, truncateLabel } from "./layout.js";
import {
  BIVARIATE,
  MISSING_COLOR,
  NEUTRAL_COLOR,
  bivariateColor,
  sequentialScale,
  terciles,
  textColorOn,
  valueAt,
} from "./color.js";

const SVG_NS = "http://www.w3.org/2000/svg";
/** Label font size in px (CSS sets the same). */
const FONT = 12;
/** Small text (legends, cues) in px. */
const SMALL = 11;
/** Longest visible label in the tree layout, in characters. */
const LABEL_CHARS = 36;
/** Width of the spread whisker in the tree layout. */
const WHISKER = 40;
const MARGIN = 14;
const ICICLE_COLUMN_MIN = 130;
const ICICLE_COLUMN_MAX = 260;
const SEP = " \u203a "; // single right-pointing angle quotation mark
const TRIANGLE = "\u25b2";

/** Round to 2 decimals for compact, stable SVG attributes. */
const r2 = (v) => Math.round(v * 100) / 100;


/** Create an element with attributes (values set with setAttribute only). */
function h(tag, attrs = {}, text) {
  const el = tag.startsWith("svg:")
    ? document.createElementNS(SVG_NS, tag.slice(4))
    : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined && v !== null) el.setAttribute(k, String(v));
  if (text !== undefined) el.textContent = text;
  return el;
}

/** A text-width function measuring with a canvas in the font `getFamily()` names, or the estimate. */
function makeMeasure(getFamily) {
  let ctx = null;
  try {
    ctx = document.createElement("canvas").getContext("2d");
  } catch {
    ctx = null;
  }
  const cache = new Map();
  return (text, size = FONT, weight = "400") => {
    const fontFamily = getFamily();
    const key = `${fontFamily}|${size}|${weight}|${text}`;
    let w = cache.get(key);
    if (w === undefined) {
      if (ctx) {
        ctx.font = `${weight} ${size}px ${fontFamily}`;
        w = Math.ceil(ctx.measureText(text).width) + 1;
      } else w = estimateTextWidth(text, size);
      cache.set(key, w);
    }
    return w;
  };
}

/** Metric names of the `color` trait: [] , [a] or [a, b]. */
function colorMetrics(value) {
  if (Array.isArray(value)) return value.filter((m) => typeof m === "string" && m !== "").slice(0, 2);
  return typeof value === "string" && value !== "" ? [value] : [];
}

/**
 * Render the CCT view into `el`.
 *
 * @param {{model: object, el: HTMLElement}} ctx anywidget render context
 * @returns {() => void} cleanup
 */
export function renderCCT({ model, el }) {
  const state = {
    renders: 0,
    data: decodeData(null),
    layout: "tree",
    geom: null, // per-row mark centres and extents of the current render
    activeId: null,
    focusStack: [],
    brushMode: false,
    lastLayout: null,
    lastFocus: null,
    minHeight: 0,
    anchor: null,
    suppressClick: false,
    searchTimer: null,
    band: 0,
    width: 960,
    height: 400,
  };

  // ---- skeleton ----------------------------------------------------------
  const root = h("div", { class: "cctviz cctviz-cct" });
  el.appendChild(root);
  const toolbar = h("div", { class: "cctviz-toolbar", role: "toolbar", "aria-label": "Calling context tree controls" });
  root.appendChild(toolbar);

  const layoutGroup = h("div", { class: "cctviz-seg cctviz-layout", role: "group", "aria-label": "Layout" });
  const layoutButtons = {};
  for (const [value, text] of [["tree", "Tree"], ["icicle", "Icicle"]]) {
    const b = h("button", { type: "button", class: "cctviz-btn", "data-layout": value, "aria-pressed": "false" }, text);
    layoutButtons[value] = b;
    layoutGroup.appendChild(b);
  }
  toolbar.appendChild(layoutGroup);

  const labelled = (text, control) => {
    const lab = h("label", { class: "cctviz-field" });
    lab.appendChild(h("span", { class: "cctviz-field-label" }, text));
    lab.appendChild(control);
    toolbar.appendChild(lab);
    return control;
  };
  const colorSel = labelled("Colour", h("select", { class: "cctviz-color", "aria-label": "Colour metric" }));
  const color2Sel = labelled("by", h("select", { class: "cctviz-color2", "aria-label": "Second colour metric (bivariate)" }));
  const sizeSel = labelled("Size", h("select", { class: "cctviz-size", "aria-label": "Size metric" }));
  const searchInput = h("input", {
    type: "search",
    class: "cctviz-search",
    placeholder: "Search names",
    "aria-label": "Search node names",
    spellcheck: "false",
  });
  toolbar.appendChild(searchInput);
  const focusBtn = h("button", { type: "button", class: "cctviz-btn cctviz-focus", title: "Show the selected node as the root (f)" }, "Focus");
  const backBtn = h("button", { type: "button", class: "cctviz-btn cctviz-back", title: "Back to the previous focus" }, "Back");
  const brushBtn = h("button", {
    type: "button",
    class: "cctviz-btn cctviz-brush-toggle",
    "aria-pressed": "false",
    title: "Drag to select a rectangle (or shift+drag)",
  }, "Brush");
  toolbar.append(focusBtn, backBtn, brushBtn);
  const status = h("span", { class: "cctviz-status", role: "status", "aria-live": "polite" });
  const info = h("span", { class: "cctviz-info" });
  const counts = h("span", { class: "cctviz-counts" });
  counts.append(info, status);
  toolbar.appendChild(counts);

  const pathLine = h("div", { class: "cctviz-path" });
  root.appendChild(pathLine);

  const svgEl = h("svg:svg", { class: "cctviz cctviz-canvas", width: state.width, height: state.height });
  root.appendChild(svgEl);
  const svg = select(svgEl);
  const viewport = svg.append("g").attr("class", "cctviz-viewport");
  const content = viewport.append("g").attr("class", "cctviz-content");
  const linksG = content.append("g").attr("class", "cctviz-links").attr("aria-hidden", "true");
  const nodesG = content
    .append("g")
    .attr("class", "cctviz-nodes")
    .attr("role", "tree")
    .attr("aria-label", "Calling context tree")
    .attr("aria-multiselectable", "true");
  const overlayG = content.append("g").attr("class", "cctviz-overlay").attr("aria-hidden", "true");
  const bandG = svg.append("g").attr("class", "cctviz-legends");
  const brushRect = svg.append("rect").attr("class", "cctviz-brush").attr("display", "none");
  const emptyText = svg.append("text").attr("class", "cctviz-empty").attr("display", "none");

  const tooltip = h("div", { class: "cctviz-tooltip", role: "tooltip" });
  tooltip.style.display = "none";
  root.appendChild(tooltip);

  // The font is resolved again once the view is in the page (anywidget may
  // render into a detached element, where no theme font applies yet).
  let family = "";
  const measure = makeMeasure(() => {
    if (!family || family === "sans-serif") {
      family = (root.isConnected && typeof getComputedStyle === "function" && getComputedStyle(root).fontFamily) || "sans-serif";
    }
    return family;
  });

  // ---- trait helpers -----------------------------------------------------
  const getIds = (name) => (Array.isArray(model.get(name)) ? model.get(name).map(Number) : []);
  const commit = (changes) => {
    for (const [k, v] of Object.entries(changes)) model.set(k, v);
    model.save_changes();
  };
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
    const c = state.geom && markCentre(row);
    if (c) state.anchor = { id: state.data.id[row], screen: toScreen(c) };
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

  // ---- geometry helpers ----------------------------------------------------
  const offset = () => [MARGIN, state.band + MARGIN];
  function markCentre(row) {
    const g = state.geom;
    if (!g || row < 0 || row >= state.data.n) return null;
    if (g.kind === "tree") return [g.x[row], g.y[row]];
    return [g.x0[row] + Math.min(8, (g.x1[row] - g.x0[row]) / 2), (g.y0[row] + g.y1[row]) / 2];
  }
  function toScreen(c) {
    const t = svgEl.__zoom ?? zoomIdentity;
    const [ox, oy] = offset();
    return t.apply([c[0] + ox, c[1] + oy]);
  }

  // ---- zoom / pan ----------------------------------------------------------
  const zoomer = zoom()
    .scaleExtent([0.05, 8])
    .clickDistance(4)
    .filter((ev) => {
      if (ev.type === "dblclick") return false;
      // Plain wheel scrolls the notebook; Ctrl/Cmd + wheel (and trackpad pinch) zooms.
      if (ev.type === "wheel") return ev.ctrlKey || ev.metaKey;
      if (ev.ctrlKey || ev.button) return false;
      if (ev.type === "mousedown" && (ev.shiftKey || state.brushMode)) return false;
      return true;
    })
    .on("zoom", (ev) => {
      viewport.attr("transform", ev.transform.toString());
      hideTooltip();
    });
  svg.call(zoomer).on("dblclick.zoom", null);

  function ensureVisible(row) {
    const c = markCentre(row);
    if (!c) return;
    const [sx, sy] = toScreen(c);
    const pad = 40;
    let dx = 0;
    let dy = 0;
    if (sx < pad) dx = pad - sx;
    else if (sx > state.width - pad) dx = state.width - pad - sx;
    if (sy < state.band + pad) dy = state.band + pad - sy;
    else if (sy > state.height - pad / 2) dy = state.height - pad / 2 - sy;
    if (dx || dy) {
      const k = (svgEl.__zoom ?? zoomIdentity).k;
      zoomer.translateBy(svg, dx / k, dy / k);
    }
  }

  // ---- brush ---------------------------------------------------------------
  function onBrushStart(ev) {
    if (ev.button !== 0 || !(ev.shiftKey || state.brushMode)) return;
    if (ev.target.closest && (ev.target.closest('[role="treeitem"]') || ev.target.closest(".cctviz-legends"))) return;
    ev.preventDefault();
    const union = ev.shiftKey;
    const p0 = pointer(ev, svgEl);
    let moved = false;
    let p1 = p0;
    const win = svgEl.ownerDocument.defaultView;
    const move = (e) => {
      p1 = pointer(e, svgEl);
      if (!moved && Math.hypot(p1[0] - p0[0], p1[1] - p0[1]) > 3) moved = true;
      if (moved) {
        brushRect
          .attr("display", null)
          .attr("x", r2(Math.min(p0[0], p1[0])))
          .attr("y", r2(Math.min(p0[1], p1[1])))
          .attr("width", r2(Math.abs(p1[0] - p0[0])))
          .attr("height", r2(Math.abs(p1[1] - p0[1])));
      }
    };
    const up = (e) => {
      win.removeEventListener("mousemove", move, true);
      win.removeEventListener("mouseup", up, true);
      p1 = pointer(e, svgEl);
      brushRect.attr("display", "none");
      if (!moved) return;
      state.suppressClick = true;
      setTimeout(() => {
        state.suppressClick = false;
      }, 0);
      const [xa, xb] = [Math.min(p0[0], p1[0]), Math.max(p0[0], p1[0])];
      const [ya, yb] = [Math.min(p0[1], p1[1]), Math.max(p0[1], p1[1])];
      const d = state.data;
      const ids = union ? getIds("selection") : [];
      for (let i = 0; i < d.n; i++) {
        if (isOther(d, i)) continue;
        const [sx, sy] = toScreen(markCentre(i));
        if (sx >= xa && sx <= xb && sy >= ya && sy <= yb) ids.push(d.id[i]);
      }
      select1(ids);
    };
    win.addEventListener("mousemove", move, true);
    win.addEventListener("mouseup", up, true);
  }
  svgEl.addEventListener("mousedown", onBrushStart);

  // ---- pointer interaction on nodes ------------------------------------------
  const rowOfTarget = (target) => {
    const item = target && target.closest ? target.closest('[role="treeitem"]') : null;
    if (!item) return -1;
    const row = state.data.rowOf.get(Number(item.getAttribute("data-id")));
    return row === undefined ? -1 : row;
  };

  function onClick(ev) {
    if (state.suppressClick) {
      state.suppressClick = false;
      return;
    }
    const row = rowOfTarget(ev.target);
    if (row < 0) {
      if (ev.target.closest && ev.target.closest(".cctviz-legends")) return;
      if (!ev.shiftKey && getIds("selection").length) select1([]);
      return;
    }
    setActive(state.data.id[row], false);
    activate(row, ev.shiftKey);
  }
  /** Click or Enter on a row: an "other" row expands its parent; a node is
   * selected (`additive`: toggled in the selection). */
  function activate(row, additive) {
    const d = state.data;
    if (isOther(d, row)) {
      expandRow(row);
      return;
    }
    const id = d.id[row];
    if (additive) {
      const cur = getIds("selection");
      select1(cur.includes(id) ? cur.filter((x) => x !== id) : [...cur, id]);
    } else select1([id]);
  }
  function onDblClick(ev) {
    const row = rowOfTarget(ev.target);
    if (row < 0) return;
    ev.preventDefault();
    const d = state.data;
    if (isOther(d, row)) expandRow(row);
    else if (isExpandable(d, row)) {
      if (isCollapsed(d, row)) expandRow(row);
      else collapseRow(row);
    }
  }
  svgEl.addEventListener("click", onClick);
  svgEl.addEventListener("dblclick", onDblClick);

  // ---- tooltip ---------------------------------------------------------------
  function hideTooltip() {
    tooltip.style.display = "none";
    tooltip.removeAttribute("data-id");
  }
  function tooltipLines(row) {
    const d = state.data;
    const lines = [];
    lines.push({ cls: "cctviz-tip-path", text: [...d.focusPath, ...ancestorNames(d, row)].join(SEP) });
    const seen = new Set();
    const metrics = [];
    const cm = colorMetrics(model.get("color"));
    if (cm[0] && d.color) metrics.push([cm[0], d.color]);
    if (cm[1] && d.color2) metrics.push([cm[1], d.color2]);
    const sm = model.get("size");
    if (sm && d.size) metrics.push([sm, d.size]);
    for (const [m, col] of metrics) {
      if (seen.has(m)) continue;
      seen.add(m);
      lines.push({ text: `${metricName(d, m)}: ${formatMetricValue(d, m, col[row])}` });
    }
    // the first colour metric: its exclusive part and its share of the parent and of the whole
    if (cm[0] && d.color && !isOther(d, row)) {
      const m = cm[0];
      const v = d.color[row];
      if (d.exclusive && d.exclusiveMetric && !seen.has(d.exclusiveMetric)) {
        lines.push({ text: `${metricName(d, d.exclusiveMetric)} (exclusive): ${formatMetricValue(d, d.exclusiveMetric, d.exclusive[row])}` });
      }
      if (isAdditive(d, m) && Number.isFinite(v)) {
        const shares = [];
        const p = d.parent[row];
        if (p >= 0 && d.color[p] > 0) shares.push(`${formatPercent(v / d.color[p])} of parent`);
        if (d.colorTotal > 0) shares.push(`${formatPercent(v / d.colorTotal)} of total`);
        if (shares.length) lines.push({ text: shares.join(", ") });
      }
    }
    if (isOther(d, row)) {
      lines.push({ cls: "cctviz-tip-note", text: `stands for ${d.folded[row]} folded node${d.folded[row] === 1 ? "" : "s"}; click to show them` });
    } else if (d.folded[row] > 0) {
      lines.push({ cls: "cctviz-tip-note", text: `${d.folded[row]} hidden descendant${d.folded[row] === 1 ? "" : "s"}` });
    }
    const s = d.spread;
    if (s && !isOther(d, row)) {
      const f = (v) => formatMetricValue(d, s.metric, v);
      lines.push({ cls: "cctviz-tip-head", text: `${metricName(d, s.metric)} over ${profilesText(s)}` });
      lines.push({ text: `mean ${f(s.mean[row])}, std ${f(s.std[row])}` });
      lines.push({ text: `min ${f(s.min[row])}, max ${f(s.max[row])}` });
      const imb = imbalance(d, row);
      const cost = imbalanceCost(d, row);
      if (Number.isFinite(imb) || Number.isFinite(cost)) {
        const a = s.argmax[row];
        const who = a >= 0 ? s.labels[String(a)] ?? `profile ${a}` : "";
        const parts = [`imbalance (max/mean) ${formatRatio(imb)}`];
        if (Number.isFinite(cost)) parts.push(`costs ${f(cost)} (max \u2212 mean)`);
        if (who) parts.push(`max on ${who}`);
        lines.push({ cls: hasImbalanceCue(d, row) ? "cctviz-tip-alert" : undefined, text: parts.join(", ") });
      }
    }
    return lines;
  }
  /** "8 profiles", "7 profiles (1 failed, left out)". */
  function profilesText(s) {
    const live = `${s.profiles} profile${s.profiles === 1 ? "" : "s"}`;
    return s.failed > 0 ? `${live} (${s.failed} failed, left out)` : live;
  }
  /** The imbalance cue's text: what the imbalance costs ("▲ 3.14 ms"). */
  function cueText(i) {
    const d = state.data;
    return `${TRIANGLE} ${formatMetricValue(d, d.spread.metric, imbalanceCost(d, i))}`;
  }
  function showTooltip(row, ev) {
    const id = String(state.data.id[row]);
    if (tooltip.getAttribute("data-id") !== id) {
      tooltip.replaceChildren(
        ...tooltipLines(row).map((l) => h("div", l.cls ? { class: l.cls } : {}, l.text)),
      );
      tooltip.setAttribute("data-id", id);
    }
    tooltip.style.display = "block";
    const box = root.getBoundingClientRect();
    let x = ev.clientX - box.left + 14;
    const y = ev.clientY - box.top + 14;
    const w = tooltip.offsetWidth;
    if (x + w > box.width && ev.clientX - box.left - 14 - w >= 0) x = ev.clientX - box.left - 14 - w;
    tooltip.style.left = `${Math.round(x)}px`;
    tooltip.style.top = `${Math.round(y)}px`;
  }
  function onPointerMove(ev) {
    if (ev.buttons) return hideTooltip();
    const row = rowOfTarget(ev.target);
    if (row < 0) hideTooltip();
    else showTooltip(row, ev);
  }
  svgEl.addEventListener("mousemove", onPointerMove);
  svgEl.addEventListener("mouseleave", hideTooltip);

  // ---- keyboard (WAI-ARIA tree pattern, roving tabindex) ----------------------
  function itemOf(id) {
    return nodesG.node().querySelector(`[role="treeitem"][data-id="${Number(id)}"]`);
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
  function onKeyDown(ev) {
    const d = state.data;
    if (d.n === 0) return;
    let row = d.rowOf.get(state.activeId);
    if (row === undefined) row = 0;
    const move = (r) => setActive(d.id[Math.max(0, Math.min(d.n - 1, r))], true);
    switch (ev.key) {
      case "ArrowDown":
        move(row + 1);
        break;
      case "ArrowUp":
        move(row - 1);
        break;
      case "Home":
        move(0);
        break;
      case "End":
        move(d.n - 1);
        break;
      case "ArrowRight":
        if (isExpandable(d, row) && isCollapsed(d, row)) expandRow(row);
        else if (d.children[row].length) move(d.children[row][0]);
        break;
      case "ArrowLeft":
        if (!isOther(d, row) && d.children[row].length && !isCollapsed(d, row)) collapseRow(row);
        else if (d.parent[row] >= 0) move(d.parent[row]);
        break;
      case "Enter":
      case " ":
        activate(row, ev.shiftKey);
        break;
      case "f":
      case "F":
        focusRow(row);
        break;
      case "Escape":
        select1([]);
        break;
      default:
        // Keep other keys (but Tab) away from the notebook's shortcuts.
        if (ev.key !== "Tab") ev.stopPropagation();
        return;
    }
    ev.preventDefault();
    ev.stopPropagation();
  }
  nodesG.node().addEventListener("keydown", onKeyDown);

  // ---- toolbar -----------------------------------------------------------------
  function fillSelect(sel, metrics, current, noneText) {
    const opts = [];
    if (noneText !== undefined) opts.push(["", noneText]);
    for (const m of metrics) opts.push([m, m]);
    if (current && !metrics.includes(current)) opts.push([current, current]);
    if (noneText === undefined && !current) opts.unshift(["", "\u2013"]);
    const key = JSON.stringify(opts);
    if (sel.getAttribute("data-options") !== key) {
      sel.replaceChildren(...opts.map(([v, t]) => {
        const o = h("option", { value: v }, t);
        return o;
      }));
      sel.setAttribute("data-options", key);
    }
    sel.value = current ?? "";
  }
  function updateMenus() {
    const metrics = (model.get("metrics") || []).map(String);
    const cm = colorMetrics(model.get("color"));
    fillSelect(colorSel, metrics, cm[0] ?? "");
    fillSelect(color2Sel, metrics, cm[1] ?? "", "none");
    fillSelect(sizeSel, metrics, model.get("size") || "", "none");
    const layout = model.get("layout") === "icicle" ? "icicle" : "tree";
    for (const [v, b] of Object.entries(layoutButtons)) b.setAttribute("aria-pressed", String(v === layout));
  }
  function updateButtons() {
    const focus = Number(model.get("focus") ?? -1);
    backBtn.disabled = focus === -1 && state.focusStack.length === 0;
    brushBtn.setAttribute("aria-pressed", String(state.brushMode));
    root.classList.toggle("cctviz-brushing", state.brushMode);
  }
  function writeColor() {
    const a = colorSel.value;
    const b = color2Sel.value;
    commit({ color: b ? [a, b] : a });
  }
  const onColor = () => writeColor();
  const onSize = () => commit({ size: sizeSel.value });
  colorSel.addEventListener("change", onColor);
  color2Sel.addEventListener("change", onColor);
  sizeSel.addEventListener("change", onSize);
  for (const [v, b] of Object.entries(layoutButtons)) {
    b.addEventListener("click", () => {
      if (model.get("layout") !== v) commit({ layout: v });
    });
  }
  const onSearchInput = () => {
    clearTimeout(state.searchTimer);
    state.searchTimer = setTimeout(() => {
      state.searchTimer = null;
      if (model.get("search") !== searchInput.value) commit({ search: searchInput.value });
    }, 200);
  };
  searchInput.addEventListener("input", onSearchInput);
  // Keys typed in the toolbar are ours, not the notebook's shortcuts.
  toolbar.addEventListener("keydown", (ev) => ev.stopPropagation());
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

  // ---- selection (no re-layout) -----------------------------------------------
  function applySelection() {
    const sel = new Set(getIds("selection"));
    const d = state.data;
    for (const item of nodesG.node().children) {
      const on = sel.has(Number(item.getAttribute("data-id")));
      item.classList.toggle("selected", on);
      item.setAttribute("aria-selected", String(on));
    }
    overlayG.selectAll(".cctviz-sel").remove();
    if (state.geom && state.geom.kind === "icicle") {
      const g = state.geom;
      for (const id of sel) {
        const i = d.rowOf.get(id);
        if (i === undefined || g.y1[i] - g.y0[i] <= 0) continue;
        const attrs = { x: r2(g.x0[i] + 1), y: r2(g.y0[i] + 1), width: r2(g.x1[i] - g.x0[i] - 3), height: r2(Math.max(0, g.y1[i] - g.y0[i] - 2)) };
        overlayG.append("rect").attr("class", "cctviz-sel cctviz-sel-outer").call(setAll, attrs);
        overlayG.append("rect").attr("class", "cctviz-sel cctviz-sel-inner").call(setAll, attrs);
      }
    }
    const matches = countMatches(d);
    const parts = [];
    if (model.get("search")) parts.push(`${matches} match${matches === 1 ? "" : "es"} shown`);
    if (sel.size) parts.push(`${sel.size} selected`);
    info.textContent = parts.join(" \u00b7 ");
  }
  function countMatches(d) {
    let k = 0;
    for (let i = 0; i < d.n; i++) if (d.flags[i] & FLAG_MATCH) k++;
    return k;
  }

  // ---- legends --------------------------------------------------------------------
  function legendTitle(g, text) {
    g.append("text").attr("class", "cctviz-legend-title").attr("x", 0).attr("y", 0).attr("dy", "0.8em").text(text);
  }
  /** Build legends into bandG; returns the band height. */
  function drawLegends(enc) {
    bandG.selectAll("*").remove();
    const d = state.data;
    const items = [];
    const mk = () => bandG.append("g").attr("class", "cctviz-legend");
    if (d.n > 0 && enc.kind === "sequential") {
      const g = mk();
      const sc = enc.scale;
      const title = `Colour: ${metricLabel(d, enc.metrics[0])}${sc.log ? " (log scale)" : ""}`;
      legendTitle(g, truncateLabel(title, 64));
      const W = 180;
      const steps = 60;
      for (let k = 0; k < steps; k++) {
        g.append("rect")
          .attr("x", r2((k * W) / steps))
          .attr("y", 17)
          .attr("width", r2(W / steps + 0.4))
          .attr("height", 10)
          .attr("fill", sc.interpolator((k + 0.5) / steps));
      }
      g.append("rect").attr("class", "cctviz-legend-frame").attr("x", 0).attr("y", 17).attr("width", W).attr("height", 10);
      const ticks = sc.domain ? [0, 0.5, 1] : [];
      for (const t of ticks) {
        const v = valueAt(sc, t);
        g.append("line").attr("class", "cctviz-legend-tick").attr("x1", r2(t * W)).attr("x2", r2(t * W)).attr("y1", 27).attr("y2", 31);
        g.append("text")
          .attr("class", "cctviz-legend-text")
          .attr("x", r2(t * W))
          .attr("y", 33)
          .attr("dy", "0.8em")
          .attr("text-anchor", t === 0 ? "start" : t === 1 ? "end" : "middle")
          .text(t === 0.5 && sc.domain[0] === sc.domain[1] ? "" : formatMetricValue(d, enc.metrics[0], v));
      }
      // missing swatch
      g.append("rect").attr("x", W + 12).attr("y", 17).attr("width", 10).attr("height", 10).attr("fill", MISSING_COLOR).attr("class", "cctviz-legend-swatch");
      g.append("text").attr("class", "cctviz-legend-text").attr("x", W + 26).attr("y", 22).attr("dy", "0.35em").text("missing");
      items.push([g, Math.max(W + 26 + measure("missing", SMALL, "400"), measure(truncateLabel(title, 64), SMALL, "600")), 48]);
    } else if (d.n > 0 && enc.kind === "bivariate") {
      const g = mk();
      const [ma, mb] = enc.metrics;
      const title = `Colour: ${ma} \u00d7 ${mb} (terciles)`;
      legendTitle(g, truncateLabel(title, 64));
      const cell = 14;
      const gx = 0;
      const gy = 32;
      // Axis labels: metric B grows upwards (above the grid), metric A to the right (below it).
      g.append("text").attr("class", "cctviz-legend-text").attr("x", gx).attr("y", 17).attr("dy", "0.8em").text(`\u2191 ${truncateLabel(metricLabel(d, mb), 40)}`);
      for (let bb = 0; bb < 3; bb++) {
        for (let ba = 0; ba < 3; ba++) {
          g.append("rect")
            .attr("x", gx + ba * cell)
            .attr("y", gy + (2 - bb) * cell)
            .attr("width", cell)
            .attr("height", cell)
            .attr("fill", BIVARIATE[bb][ba]);
        }
      }
      g.append("text")
        .attr("class", "cctviz-legend-text")
        .attr("x", gx)
        .attr("y", gy + 3 * cell + 3)
        .attr("dy", "0.8em")
        .text(`${truncateLabel(metricLabel(d, ma), 40)} \u2192`);
      const fmtBreaks = (m, br) => (br ? `${formatMetricValue(d, m, br[0])} | ${formatMetricValue(d, m, br[1])}` : "\u2013");
      const tx = gx + 3 * cell + 10;
      const lineA = `\u2192 ${fmtBreaks(ma, enc.breaksA)}`;
      const lineB = `\u2191 ${fmtBreaks(mb, enc.breaksB)}`;
      g.append("text").attr("class", "cctviz-legend-text cctviz-legend-muted").attr("x", tx).attr("y", gy).attr("dy", "0.8em").text("tercile breaks");
      g.append("text").attr("class", "cctviz-legend-text").attr("x", tx).attr("y", gy + 14).attr("dy", "0.8em").text(lineA);
      g.append("text").attr("class", "cctviz-legend-text").attr("x", tx).attr("y", gy + 28).attr("dy", "0.8em").text(lineB);
      const w = Math.max(
        tx + Math.max(measure(lineA, SMALL), measure(lineB, SMALL), measure("tercile breaks", SMALL)),
        measure(`\u2191 ${truncateLabel(metricLabel(d, mb), 40)}`, SMALL),
        measure(`${truncateLabel(metricLabel(d, ma), 40)} \u2192`, SMALL),
      );
      items.push([g, Math.max(w, measure(truncateLabel(title, 64), SMALL, "600")), gy + 3 * cell + 17]);
    }
    if (d.n > 0 && state.layout === "tree" && enc.sizeMetric && d.size && enc.sizeMax > 0) {
      const g = mk();
      const title = truncateLabel(`Size (area): ${metricLabel(d, enc.sizeMetric)}`, 56);
      legendTitle(g, title);
      let x = 0;
      const rMax = enc.rMax;
      for (const f of [1, 0.25, 0.04]) {
        const v = enc.sizeMax * f;
        const r = enc.radiusOf(v);
        g.append("circle").attr("class", "cctviz-legend-circle").attr("cx", r2(x + r)).attr("cy", r2(17 + rMax)).attr("r", r2(r));
        const label = formatMetricValue(d, enc.sizeMetric, v);
        g.append("text").attr("class", "cctviz-legend-text").attr("x", r2(x + 2 * r + 4)).attr("y", r2(17 + rMax)).attr("dy", "0.35em").text(label);
        x += 2 * r + 8 + measure(label, SMALL, "400") + 10;
      }
      items.push([g, Math.max(x, measure(title, SMALL, "600")), 17 + 2 * rMax + 2]);
    } else if (d.n > 0 && state.layout === "icicle") {
      const g = mk();
      let text = "Height \u221d leaf count";
      if (state.geom && state.geom.bySize) text = `Height \u221d ${metricLabel(d, enc.sizeMetric)}`;
      else if (enc.sizeMetric && !isAdditive(d, enc.sizeMetric)) text += ` (${enc.sizeMetric} does not add up)`;
      text = truncateLabel(text, 72);
      legendTitle(g, text);
      items.push([g, measure(text, SMALL, "600"), 16]);
    }
    if (d.n > 0 && d.spread) {
      const g = mk();
      const s = d.spread;
      const title = truncateLabel(`Spread of ${metricLabel(d, s.metric)} over ${profilesText(s)}`, 72);
      legendTitle(g, title);
      const y = 24;
      g.append("line").attr("class", "cctviz-spread-track").attr("x1", 0).attr("x2", WHISKER).attr("y1", y).attr("y2", y);
      g.append("line").attr("class", "cctviz-spread-range").attr("x1", WHISKER * 0.3).attr("x2", WHISKER).attr("y1", y).attr("y2", y);
      g.append("line").attr("class", "cctviz-spread-mean").attr("x1", WHISKER * 0.6).attr("x2", WHISKER * 0.6).attr("y1", y - 4).attr("y2", y + 4);
      const t1 = "min\u2013max (to scale of max), | mean";
      g.append("text").attr("class", "cctviz-legend-text").attr("x", WHISKER + 6).attr("y", y).attr("dy", "0.35em").text(t1);
      let w = WHISKER + 6 + measure(t1, SMALL, "400");
      let hgt = y + 8;
      if (s.costThreshold !== null) {
        const share = s.cueShare > 0 ? ` (${formatPercent(s.cueShare)} of the total)` : "";
        const t2 = `imbalance costs max \u2212 mean \u2265 ${formatMetricValue(d, s.metric, s.costThreshold)}${share}`;
        g.append("text").attr("class", "cctviz-imbalance").attr("x", 0).attr("y", y + 15).attr("dy", "0.35em").text(TRIANGLE);
        g.append("text").attr("class", "cctviz-legend-text").attr("x", WHISKER + 6).attr("y", y + 15).attr("dy", "0.35em").text(t2);
        w = Math.max(w, WHISKER + 6 + measure(t2, SMALL, "400"));
        hgt = y + 22;
      }
      items.push([g, Math.max(w, measure(title, SMALL, "600")), hgt]);
    }
    // Flow the legends left to right, wrapping at the svg width.
    let x = MARGIN;
    let y = 8;
    let rowH = 0;
    for (const [g, est, hgt] of items) {
      // Once attached, the drawn width beats the canvas estimate (the font
      // the estimate used may not be the one the page resolves).
      const node = g.node();
      const drawn = node.isConnected && node.getBBox ? node.getBBox().width : 0;
      const w = Math.max(est, drawn);
      if (x > MARGIN && x + w > state.width - MARGIN) {
        x = MARGIN;
        y += rowH + 8;
        rowH = 0;
      }
      g.attr("transform", `translate(${r2(x)},${r2(y)})`);
      x += w + 28;
      rowH = Math.max(rowH, hgt);
    }
    const band = items.length ? y + rowH + 8 : 0;
    bandG.insert("rect", ":first-child").attr("class", "cctviz-band").attr("x", 0).attr("y", 0).attr("width", state.width).attr("height", band);
    if (band) {
      bandG.append("line").attr("class", "cctviz-band-rule").attr("x1", 0).attr("x2", state.width).attr("y1", band - 0.5).attr("y2", band - 0.5);
    }
    return band;
  }

  // ---- encodings -------------------------------------------------------------------
  function encodings() {
    const d = state.data;
    const metrics = colorMetrics(model.get("color"));
    const keep = (i) => !isOther(d, i);
    const enc = { kind: "none", metrics, fill: null };
    if (d.color && d.color2 && metrics.length === 2) {
      enc.kind = "bivariate";
      enc.breaksA = terciles(d.color, keep);
      enc.breaksB = terciles(d.color2, keep);
      enc.fill = (i) => bivariateColor(d.color[i], d.color2[i], enc.breaksA, enc.breaksB);
    } else if (d.color && metrics.length >= 1) {
      enc.kind = "sequential";
      enc.scale = sequentialScale(d.colorDomain);
      enc.fill = (i) => enc.scale.color(d.color[i]);
    } else enc.fill = () => NEUTRAL_COLOR;
    const sizeMetric = model.get("size") || "";
    enc.sizeMetric = sizeMetric;
    enc.sizeMax = d.size && d.sizeDomain ? Math.max(0, d.sizeDomain[1]) : 0;
    return enc;
  }

  // ---- render ------------------------------------------------------------------------
  function render() {
    const hadFocus = svgEl.contains(document.activeElement);
    hideTooltip();
    state.data = decodeData(model.get("_data"));
    const d = state.data;
    state.layout = model.get("layout") === "icicle" ? "icicle" : "tree";
    const focus = Number(model.get("focus") ?? -1);
    const resetZoom = state.lastLayout !== state.layout || state.lastFocus !== focus;
    if (resetZoom) state.minHeight = 0;
    state.lastLayout = state.layout;
    state.lastFocus = focus;
    state.width = Math.max(320, Math.round(root.clientWidth || svgEl.parentNode?.clientWidth || 960));

    const enc = encodings();
    const ensemble = Boolean(d.spread);
    const selSet = new Set(getIds("selection"));
    const searching = Boolean(model.get("search")) && countMatches(d) > 0;
    root.classList.toggle("cctviz-searching", searching);

    linksG.selectAll("*").remove();
    nodesG.selectAll("*").remove();
    overlayG.selectAll("*").remove();

    // Size encoding (tree: circle area).
    const rowHeight = ensemble ? 32 : 22;
    const rMax = enc.sizeMetric && d.size ? (ensemble ? 9 : 10) : 4.5;
    enc.rMax = rMax;
    enc.radiusOf = (v) => {
      if (!(enc.sizeMax > 0) || !Number.isFinite(v) || v <= 0) return 2.5;
      return Math.max(2, rMax * Math.sqrt(Math.min(1, v / enc.sizeMax)));
    };
    const radius = (i) => (enc.sizeMetric && d.size ? enc.radiusOf(d.size[i]) : 4.5);

    // Visible labels and their extra parts.
    const labels = d.names.map((nm) => truncateLabel(nm, LABEL_CHARS) || "\u2026");
    const more = new Array(d.n).fill("");
    for (let i = 0; i < d.n; i++) {
      if (!isOther(d, i) && isCollapsed(d, i) && isExpandable(d, i)) more[i] = d.folded[i] > 0 ? ` +${d.folded[i]}` : " +";
    }
    // the imbalance cue: nodes whose imbalance costs a real share of the whole (Python's threshold)
    const cue = new Array(d.n).fill("");
    for (let i = 0; i < d.n; i++) if (hasImbalanceCue(d, i)) cue[i] = cueText(i);

    let contentH;
    if (state.layout === "tree") {
      const lw = (i) => {
        let w = measure(labels[i] + more[i]);
        if (ensemble) w = Math.max(w, WHISKER + 6 + (cue[i] ? measure(cue[i], SMALL) : 0));
        return w;
      };
      const g = treeLayout(d, { rowHeight, radius, labelWidth: lw });
      state.geom = { kind: "tree", ...g };
      contentH = g.height;
      drawTree(enc, g, labels, more, cue, radius, ensemble);
    } else {
      let leaves = 0;
      for (let i = 0; i < d.n; i++) if (d.children[i].length === 0) leaves++;
      const height = Math.max(260, Math.min(560, leaves * 22));
      const g = icicleLayout(d, {
        values: enc.sizeMetric ? d.size : null,
        additive: isAdditive(d, enc.sizeMetric),
        height,
        columnWidth: icicleColumn(d),
      });
      state.geom = { kind: "icicle", ...g };
      contentH = g.height;
      drawIcicle(enc, g, cue, ensemble);
    }

    // Nodes: shared attributes (DOM contract).
    for (const item of nodesG.node().children) {
      const i = Number(item.getAttribute("data-row"));
      item.removeAttribute("data-row");
      const id = d.id[i];
      item.setAttribute("role", "treeitem");
      item.setAttribute("data-id", String(id));
      item.setAttribute("aria-level", String(d.depth[i] + 1));
      const sibs = d.parent[i] >= 0 ? d.children[d.parent[i]] : d.roots;
      item.setAttribute("aria-setsize", String(sibs.length));
      item.setAttribute("aria-posinset", String(sibs.indexOf(i) + 1));
      if (isExpandable(d, i)) item.setAttribute("aria-expanded", String(!isCollapsed(d, i)));
      item.setAttribute("aria-label", ariaLabel(i, enc));
      const sel = selSet.has(id);
      item.setAttribute("aria-selected", String(sel));
      item.setAttribute("tabindex", "-1");
      const cls = ["cctviz-node"];
      if (sel) cls.push("selected");
      if (d.flags[i] & FLAG_MATCH) cls.push("match");
      if (isOther(d, i)) cls.push("other");
      if (isCollapsed(d, i) && isExpandable(d, i) && !isOther(d, i)) cls.push("collapsed");
      if (cue[i]) cls.push("imbalanced");
      item.setAttribute("class", cls.join(" "));
    }

    // Roving tabindex: keep the active node, else the first selected, else the first row.
    let active = d.rowOf.has(state.activeId) ? state.activeId : null;
    if (active === null) for (const id of selSet) if (d.rowOf.has(id)) { active = id; break; }
    if (active === null && d.n > 0) active = d.id[0];
    state.activeId = active;
    if (active !== null) itemOf(active)?.setAttribute("tabindex", "0");

    state.enc = enc;
    state.contentH = contentH;
    frame(contentH);
    emptyText
      .attr("display", d.n ? "none" : null)
      .attr("x", MARGIN)
      .attr("y", state.band + MARGIN + 12)
      .text(d.n ? "" : "No nodes to show");

    if (resetZoom) {
      // A tree taller than the view starts with its first row centred vertically.
      let ty = 0;
      if (state.layout === "tree" && d.n > 0 && contentH > state.height - state.band - 2 * MARGIN) {
        const rootY = state.geom.y[0] + state.band + MARGIN;
        ty = Math.round(state.band + (state.height - state.band) / 2 - rootY);
      }
      zoomer.transform(svg, zoomIdentity.translate(0, ty));
    } else if (state.anchor) {
      const row = d.rowOf.get(state.anchor.id);
      if (row !== undefined) {
        const [sx, sy] = toScreen(markCentre(row));
        const t = svgEl.__zoom ?? zoomIdentity;
        const dx = state.anchor.screen[0] - sx;
        const dy = state.anchor.screen[1] - sy;
        if (dx || dy) zoomer.translateBy(svg, dx / t.k, dy / t.k);
      }
    }
    state.anchor = null;
    viewport.attr("transform", (svgEl.__zoom ?? zoomIdentity).toString());

    // Toolbar, status, breadcrumb.
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
    if (document.activeElement !== searchInput && searchInput.value !== (model.get("search") || "") && state.searchTimer === null) {
      searchInput.value = model.get("search") || "";
    }
    applySelection();

    if (hadFocus && active !== null) itemOf(active)?.focus({ preventScroll: true });

    state.renders += 1;
    root.setAttribute("data-rendered", String(state.renders));
  }

  /** Legends band, svg size and content offset for the current width. */
  function frame(contentH) {
    state.band = drawLegends(state.enc);
    const [ox, oy] = offset();
    content.attr("transform", `translate(${ox},${oy})`);
    const wanted = Math.round(state.band + 2 * MARGIN + contentH);
    state.height = Math.max(state.minHeight, Math.max(240, Math.min(680, wanted)));
    state.minHeight = state.height;
    svgEl.setAttribute("width", String(state.width));
    svgEl.setAttribute("height", String(state.height));
    svgEl.setAttribute("viewBox", `0 0 ${state.width} ${state.height}`);
    zoomer.extent([[0, 0], [state.width, state.height]]);
  }

  function ariaLabel(i, enc) {
    const d = state.data;
    const parts = [d.names[i]];
    const add = (m, col) => parts.push(`${metricName(d, m)} ${formatMetricValue(d, m, col[i])}`);
    if (enc.metrics[0] && d.color) add(enc.metrics[0], d.color);
    if (enc.metrics[1] && d.color2) add(enc.metrics[1], d.color2);
    if (enc.sizeMetric && d.size && enc.sizeMetric !== enc.metrics[0] && enc.sizeMetric !== enc.metrics[1]) {
      add(enc.sizeMetric, d.size);
    }
    if (isOther(d, i)) parts.push(`stands for ${d.folded[i]} folded nodes`);
    else if (d.folded[i] > 0) parts.push(`${d.folded[i]} hidden descendants`);
    const imb = imbalance(d, i);
    if (Number.isFinite(imb)) {
      const cost = imbalanceCost(d, i);
      const costs = Number.isFinite(cost) ? ` costing ${formatMetricValue(d, d.spread.metric, cost)}` : "";
      parts.push(`imbalance ${formatRatio(imb)}${costs}${hasImbalanceCue(d, i) ? " (flagged)" : ""}`);
    }
    return parts.join(", ");
  }

  /** Icicle column width: the svg width shared by the depths, within bounds. */
  function icicleColumn(d) {
    let levels = 1;
    for (let i = 0; i < d.n; i++) levels = Math.max(levels, d.depth[i] + 1);
    return Math.max(ICICLE_COLUMN_MIN, Math.min(ICICLE_COLUMN_MAX, Math.floor((state.width - 2 * MARGIN) / levels)));
  }

  function appendNode(i, x, y) {
    return nodesG
      .append("g")
      .attr("data-row", i)
      .attr("transform", `translate(${r2(x)},${r2(y)})`);
  }

  function drawSpread(g, i, x, y, w) {
    const s = state.data.spread;
    const max = s.max[i];
    const min = s.min[i];
    const mean = s.mean[i];
    if (!(Number.isFinite(max) && max > 0)) return;
    const pos = (v) => r2(x + w * Math.max(0, Math.min(1, v / max)));
    const sg = g.append("g").attr("class", "cctviz-spread");
    sg.append("line").attr("class", "cctviz-spread-track").attr("x1", r2(x)).attr("x2", r2(x + w)).attr("y1", r2(y)).attr("y2", r2(y));
    if (Number.isFinite(min)) {
      sg.append("line").attr("class", "cctviz-spread-range").attr("x1", pos(min)).attr("x2", pos(max)).attr("y1", r2(y)).attr("y2", r2(y));
    }
    if (Number.isFinite(mean)) {
      sg.append("line").attr("class", "cctviz-spread-mean").attr("x1", pos(mean)).attr("x2", pos(mean)).attr("y1", r2(y - 3.5)).attr("y2", r2(y + 3.5));
    }
    return sg;
  }

  function drawTree(enc, g, labels, more, cue, radius, ensemble) {
    const d = state.data;
    // Links: from the end of the parent's label to the child's mark.
    for (let i = 0; i < d.n; i++) {
      const p = d.parent[i];
      if (p < 0) continue;
      const sx = g.linkStart[p];
      const sy = g.y[p];
      const tx = g.x[i] - radius(i) - 1;
      const ty = g.y[i];
      const mx = (sx + tx) / 2;
      linksG
        .append("path")
        .attr("class", isOther(d, i) ? "cctviz-link cctviz-link-other" : "cctviz-link")
        .attr("d", `M${r2(sx)},${r2(sy)}C${r2(mx)},${r2(sy)} ${r2(mx)},${r2(ty)} ${r2(tx)},${r2(ty)}`);
    }
    for (let i = 0; i < d.n; i++) {
      const node = appendNode(i, g.x[i], g.y[i]);
      const r = radius(i);
      const fill = enc.fill(i);
      node.append("circle").attr("class", "cctviz-mark").attr("r", r2(r)).attr("fill", fill);
      const lx = r2(r + 6);
      const ly = ensemble ? -5 : 0;
      const t = node.append("text").attr("class", "cctviz-label").attr("x", lx).attr("y", ly).attr("dy", "0.35em").text(labels[i]);
      if (more[i]) t.append("tspan").attr("class", "cctviz-more").text(more[i]);
      if (ensemble && !isOther(d, i)) {
        drawSpread(node, i, r + 6, 8, WHISKER);
        if (cue[i]) {
          node.append("text")
            .attr("class", "cctviz-imbalance")
            .attr("x", r2(r + 6 + WHISKER + 6))
            .attr("y", 8)
            .attr("dy", "0.35em")
            .text(cue[i]);
        }
      }
    }
  }

  function drawIcicle(enc, g, cue, ensemble) {
    const d = state.data;
    for (let i = 0; i < d.n; i++) {
      const w = g.x1[i] - g.x0[i];
      const hgt = g.y1[i] - g.y0[i];
      const node = appendNode(i, g.x0[i], g.y0[i]);
      const fill = enc.fill(i);
      node.append("rect").attr("class", "cctviz-mark").attr("width", r2(w - 1)).attr("height", r2(Math.max(0, hgt))).attr("fill", fill);
      // Text on the fill: dark or light ink, whichever contrasts more.
      const ink = textColorOn(fill) === "#ffffff" ? "cctviz-ink-light" : "cctviz-ink-dark";
      const labelled = hgt >= 15;
      if (labelled) {
        const cueW = cue[i] ? measure(cue[i], SMALL) + 6 : 0;
        const avail = w - 12 - cueW;
        let label = d.names[i];
        let chars = Math.min(Array.from(label).length, Math.ceil(Math.max(0, avail) / 3));
        while (chars > 0 && measure(truncateLabel(label, chars)) > avail) chars--;
        label = truncateLabel(label, chars);
        const y = hgt >= 34 ? 11 : hgt / 2;
        if (label) {
          node.append("text").attr("class", `cctviz-label ${ink}`).attr("x", 5).attr("y", r2(y)).attr("dy", "0.35em").text(label);
        }
        if (cue[i] && avail > 0) {
          node.append("text").attr("class", `cctviz-imbalance ${ink}`).attr("x", r2(w - 6)).attr("y", r2(y)).attr("dy", "0.35em").attr("text-anchor", "end").text(cue[i]);
        }
        const col = d.color ?? d.size;
        const unitMetric = d.color ? enc.metrics[0] : enc.sizeMetric;
        if (hgt >= 34 && col && Number.isFinite(col[i])) {
          const v = formatMetricValue(d, unitMetric, col[i]);
          if (measure(v, SMALL, "400") <= w - 12) {
            node.append("text").attr("class", `cctviz-value ${ink}`).attr("x", 5).attr("y", 26).attr("dy", "0.35em").text(v);
          }
        }
      }
      // The spread bar sits at the bottom: only where it does not cross the label.
      if (ensemble && !isOther(d, i) && (labelled ? hgt >= 26 : hgt >= 12) && w >= 30) {
        const sg = drawSpread(node, i, 4, hgt - 4, w - 10);
        if (sg) sg.attr("class", `cctviz-spread cctviz-spread-inset ${ink}`);
      }
    }
  }

  // ---- model listeners ---------------------------------------------------------
  const onData = () => render();
  const onLayout = () => render();
  const onSelection = () => applySelection();
  const onMenus = () => updateMenus();
  const onFocus = () => updateButtons();
  const onSearch = () => {
    if (document.activeElement !== searchInput && state.searchTimer === null) searchInput.value = model.get("search") || "";
  };
  const listeners = [
    ["change:_data", onData],
    ["change:layout", onLayout],
    ["change:selection", onSelection],
    ["change:metrics", onMenus],
    ["change:color", onMenus],
    ["change:size", onMenus],
    ["change:focus", onFocus],
    ["change:search", onSearch],
  ];
  for (const [ev, cb] of listeners) model.on(ev, cb);

  let resizeObserver = null;
  if (typeof ResizeObserver === "function") {
    let lastW = 0;
    // A new width only re-flows the frame (legends, svg size): it is not a
    // render, so `data-rendered` does not change.
    resizeObserver = new ResizeObserver(() => {
      const w = Math.round(root.clientWidth);
      if (w > 0 && Math.abs(w - lastW) > 1 && Math.abs(w - state.width) > 1) {
        lastW = w;
        state.width = Math.max(320, w);
        if (state.enc) frame(state.contentH);
      }
    });
    resizeObserver.observe(root);
  }

  render();

  return () => {
    for (const [ev, cb] of listeners) model.off(ev, cb);
    clearTimeout(state.searchTimer);
    if (resizeObserver) resizeObserver.disconnect();
    svg.on(".zoom", null);
    svgEl.removeEventListener("mousedown", onBrushStart);
    root.remove();
  };
}

/** Apply an attribute map to a d3 selection. */
function setAll(sel, attrs) {
  for (const [k, v] of Object.entries(attrs)) sel.attr(k, v);
}
