// A Sankey figure from a view's state: the one function behind
// `view.save()` (the exporter, kind "sankey") and the live view's "SVG"
// button; both draw into the minimal DOM (shim.js) and serialise with dom.js.

import { paperSettings, svgDocument } from "../paper.js";
import { shimContainer } from "../shim.js";
import { decodeSankey } from "./data.js";
import { drawSankey } from "./draw.js";
import { sankeyScene } from "./scene.js";
import { sankeyCSS } from "./style.js";

const ids = (v) => (Array.isArray(v) ? v.map(Number).filter(Number.isFinite) : []);

/** The scene settings of the view's traits (`selected_groups`, `selection`, `selected_profiles`, `brush`, `group_by`). */
export function sankeyState(state) {
  const st = state || {};
  const b = st.brush;
  return {
    groupBy: typeof st.group_by === "string" ? st.group_by : "",
    selectedGroups: ids(st.selected_groups),
    selection: ids(st.selection),
    selectedProfiles: ids(st.selected_profiles),
    brush: b && typeof b === "object" && Number.isInteger(Number(b.node)) && "lo" in b && "hi" in b ? { node: Number(b.node), lo: Number(b.lo), hi: Number(b.hi) } : null,
  };
}

/** Scene settings of an exported figure: the state's, with the paper options (see paper.js). */
export function sankeyExportSettings(state, options = {}) {
  return { ...sankeyState(state), ...paperSettings(options, sankeyCSS) };
}

/**
 * The SVG document (text) of a Sankey view's state.
 *
 * @param {object} rawData the `_data` trait (binary buffers or plain arrays)
 * @param {object} state the view's traits
 * @param {object} [options] paper options
 * @returns {string}
 */
export function sankeySVG(rawData, state, options = {}) {
  const settings = sankeyExportSettings(state, options);
  const scene = sankeyScene(decodeSankey(rawData), settings);
  const svg = drawSankey(shimContainer(), scene);
  return svgDocument(svg, settings.scheme, svg.getAttribute("class").replace(/^cctviz-fig ?/, ""));
}
