// A TimelineView figure from a view's state: the function behind `view.save()`
// (the exporter's embedded V8) and the live view's "SVG" button; both draw into
// shim.js and serialise with dom.js: the same bytes.

import { paperSettings, svgDocument } from "../paper.js";
import { shimContainer } from "../shim.js";
import { decodeTimeline } from "./data.js";
import { drawTimeline } from "./draw.js";
import { timelineScene } from "./scene.js";
import { timelineCSS } from "./style.js";

/**
 * Scene settings of an exported figure: the paper options and the state drawn
 * (selection outlined, the brushed window).
 *
 * @param {{selection?: number[], brush?: number[]}} state
 * @param {object} [options]
 */
export function timelineExportSettings(state, options = {}) {
  return {
    ...paperSettings(options, timelineCSS),
    selection: Array.isArray(state.selection) ? state.selection.map(Number) : [],
    brush: Array.isArray(state.brush) && state.brush.length === 2 ? state.brush.map(Number) : [],
  };
}

/**
 * The SVG document (text) of a TimelineView's state.
 *
 * @param {object} rawData the `_data` trait (binary buffers or plain arrays)
 * @param {object} state the view's traits (`selection`, `brush`)
 * @param {object} [options] paper options
 * @returns {string}
 */
export function timelineSVG(rawData, state, options = {}) {
  const settings = timelineExportSettings(state || {}, options);
  return svgDocument(drawTimeline(shimContainer(), timelineScene(decodeTimeline(rawData), settings)), settings.scheme);
}
