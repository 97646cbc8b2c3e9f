// The SankeyView in a standalone HTML page (no kernel): a local model over the
// exported payload. Selections and the brush are local; the data never change.

import { plainModel } from "../kit/model.js";

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
