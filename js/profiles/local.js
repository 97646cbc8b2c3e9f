// The ProfilesView in a standalone HTML page (no kernel): a local model with
// anywidget's API over the exported payload. Selection (click, brush) works;
// the menus that need Python (axes, projection, colour) are hidden.

import { listeners } from "../events.js";
import { renderProfiles } from "./view.js";

/** A model with get/set/save_changes/on/off over the payload's data and state. */
export function profilesLocalModel(payload) {
  const st = payload.state || {};
  const values = {
    _data: payload.data || {},
    x: st.x || "",
    y: st.y || "",
    projection: st.projection || "pca",
    color_by: st.color_by || "",
    clusters: st.clusters ?? 3,
    columns: [],
    selected_profiles: Array.isArray(st.selected_profiles) ? st.selected_profiles.map(Number) : [],
  };
  const events = listeners();
  let pending = {};
  return {
    get: (k) => values[k],
    set: (k, v) => {
      pending[k] = v;
    },
    save_changes() {
      const changes = pending;
      pending = {};
      for (const [k, v] of Object.entries(changes)) {
        if (JSON.stringify(values[k]) === JSON.stringify(v)) continue;
        values[k] = v;
        events.fire(`change:${k}`);
      }
    },
    on: events.on,
    off: events.off,
  };
}

/** Mount the interactive ProfilesView of `payload` into `el`; returns the cleanup. */
export function mountProfiles(el, payload) {
  return renderProfiles({ model: profilesLocalModel(payload), el }, { local: true });
}
