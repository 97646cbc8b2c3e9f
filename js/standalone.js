// Entry of cctviz/static/cctviz-standalone.js (an IIFE bundle, global
// `cctvizStandalone`): the interactive view in a standalone HTML page, with
// no kernel. A local model stands in for the widget's: the same render code
// runs, and collapse/expand/focus/search act on the exported rows (local.js).

import { decodeData } from "./cct/data.js";
import { localData } from "./cct/local.js";
import { renderCCT } from "./cct/view.js";
import { mountProfiles } from "./profiles/local.js";

const LOCAL_TRAITS = new Set(["collapsed", "expanded", "focus", "search"]);

/** A model with the anywidget API (get/set/save_changes/on/off) over plain values. */
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
  const handlers = new Map();
  let pending = {};
  const fire = (name) => {
    for (const cb of handlers.get(`change:${name}`) || []) cb();
  };
  return {
    get: (k) => values[k],
    set: (k, v) => {
      pending[k] = v;
    },
    save_changes() {
      const changes = pending;
      pending = {};
      const changed = Object.keys(changes).filter((k) => JSON.stringify(values[k]) !== JSON.stringify(changes[k]));
      for (const k of changed) values[k] = changes[k];
      if (changed.some((k) => LOCAL_TRAITS.has(k))) {
        values._data = localData(full, payload.data, values);
        changed.push("_data");
      }
      for (const k of changed) fire(k);
    },
    on(ev, cb) {
      if (!handlers.has(ev)) handlers.set(ev, []);
      handlers.get(ev).push(cb);
    },
    off(ev, cb) {
      const list = handlers.get(ev) || [];
      const at = list.indexOf(cb);
      if (at >= 0) list.splice(at, 1);
    },
  };
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
  const model = localModel(payload);
  return renderCCT({ model, el });
}
