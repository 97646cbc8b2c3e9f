// A CCT figure from a view's state: the one function behind `view.save()`
// (run by the exporter in an embedded V8) and the live view's "Download SVG"
// (run in the browser). Both draw into the same minimal DOM (shim.js) and
// serialise with the same function, so they give the same bytes.

import { EXPORT_DEFAULTS, paperSettings, svgDocument } from "../paper.js";
import { shimContainer } from "../shim.js";
import { decodeData } from "./data.js";
import { drawCCT } from "./draw.js";
import { cctScene } from "./scene.js";

export { EXPORT_DEFAULTS };

/**
 * Scene settings of an exported figure.
 *
 * @param {{chart?: string, color?: string|string[], size?: string, selection?: number[]}} state
 * @param {object} [options] see {@link EXPORT_DEFAULTS}
 */
export function exportSettings(state, options = {}) {
  return {
    chart: state.chart === "icicle" ? "icicle" : "tree",
    color: state.color ?? [],
    size: state.size ?? "",
    selection: Array.isArray(state.selection) ? state.selection.map(Number) : [],
    ...paperSettings(options),
  };
}

/**
 * The SVG document (text) of a CCT view's state.
 *
 * @param {object} rawData the `_data` trait (binary buffers or plain arrays)
 * @param {object} state the view's traits (`chart`, `color`, `size`, `selection`)
 * @param {object} [options] paper options ({@link EXPORT_DEFAULTS})
 * @returns {string}
 */
export function cctSVG(rawData, state, options = {}) {
  const settings = exportSettings(state, options);
  const scene = cctScene(decodeData(rawData), settings);
  return svgDocument(drawCCT(shimContainer(), scene), settings.scheme);
}
