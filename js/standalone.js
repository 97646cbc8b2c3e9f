// Entry of cctviz/static/cctviz-standalone.js (an IIFE bundle, global
// `cctvizStandalone`): the interactive view in a standalone HTML page, with
// no kernel. A local model stands in for the widget's: the same render code
// runs. A tree's collapse/expand/focus/search act on the exported rows
// (local.js); a Sankey's selections are local (tooltips, clicks), and
// nothing new can be expanded.

import { decodeData } from "./cct/data.js";
import { listeners } from "./events.js";
import { localData } from "./cct/local.js";
import { renderCCT } from "./cct/view.js";
import { mountProfiles } from "./profiles/local.js";
import { renderSankey } from "./sankey/view.js";

const LOCAL_TRAITS = new Set(["collapsed", "expanded", "focus", "search"]);

/**
 * A model with the anywidget API (get/set/save_changes/on/off) over plain
 * values. `after(changed)` may update values after a save and returns more
 * changed names (fired too).
 */
export function plainModel(values, after = () => [], frozen = new Set()) {
  const events = listeners();
  let pending = {};
  const fire = (name) => events.fire(`change:${name}`);
  return {
    get: (k) => values[k],
    set: (k, v) => {
      if (!frozen.has(k)) pending[k] = v;
    },
    save_changes() {
      const changes = pending;
      pending = {};
      const changed = Object.keys(changes).filter((k) => JSON.stringify(values[k]) !== JSON.stringify(changes[k]));
      for (const k of changed) values[k] = changes[k];
      changed.push(...after(changed));
      for (const k of changed) fire(k);
    },
    on: events.on,
    off: events.off,
  };
}

/** The local model of a tree's page. */
export function localModel(payload) {
  const full = decodeData(payload.data);
  const st = payload.state || {};
  const values = {
    chart: st.chart === "icicle" ? "icicle" : "tree",
    color: st.color ?? [],
    size: st.size ?? "",
    selection: Array.isArray(st.selection) ? st.selection : [],
    collapsed: [],
    expanded: [],
    focus: -1,
    search: "",
    // only the metrics the page has values of
    metrics: [...new Set([...(Array.isArray(st.color) ? st.color : [st.color]), st.size].filter(Boolean))],
  };
  values._data = localData(full, payload.data, values);
  return plainModel(values, (changed) => {
    if (!changed.some((k) => LOCAL_TRAITS.has(k))) return [];
    values._data = localData(full, payload.data, values);
    return ["_data"];
  });
}

/** The local model of a Sankey's page: selections and the brush are local; the data never change. */
export function localSankeyModel(payload) {
  const st = payload.state || {};
  const list = (v) => (Array.isArray(v) ? v : []);
  const values = {
    _kind: "sankey",
    _data: payload.data,
    metric: st.metric ?? "",
    metrics: st.metric ? [st.metric] : [],
    group_by: st.group_by ?? "",
    selection: list(st.selection),
    selected_groups: list(st.selected_groups),
    selected_profiles: list(st.selected_profiles),
    brush: st.brush && typeof st.brush === "object" ? st.brush : {},
    expanded: list(st.expanded),
  };
  return plainModel(values, () => [], new Set(["expanded", "metric", "_data"]));
}

/**
 * Mount the interactive view of `payload` ({kind, data, state}) into `el`.
 *
 * @param {HTMLElement} el
 * @param {object} payload
 * @returns {() => void} cleanup
 */
export function mount(el, payload) {
  if (payload && payload.kind === "profiles") return mountProfiles(el, payload);
  if (payload && payload.kind === "sankey") return renderSankey({ model: localSankeyModel(payload), el });
  return renderCCT({ model: localModel(payload), el });
}
