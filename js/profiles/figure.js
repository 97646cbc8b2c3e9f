// A ProfilesView figure from a view's state: the function behind
// `view.save()` (the exporter's embedded V8) and the live view's "SVG"
// button; both draw into shim.js and serialise with dom.js: the same bytes.

import { paperSettings, svgDocument } from "../paper.js";
import { shimContainer } from "../shim.js";
import { decodeProfiles } from "./data.js";
import { drawProfiles } from "./draw.js";
import { profilesScene } from "./scene.js";
import { profilesCSS } from "./style.js";

/**
 * Scene settings of an exported figure: the paper options (js/paper.js) and the
 * selection.
 *
 * @param {{selected_profiles?: number[]}} state
 * @param {object} [options]
 */
export function profilesExportSettings(state, options = {}) {
  return {
    ...paperSettings(options, profilesCSS),
    selection: Array.isArray(state.selected_profiles) ? state.selected_profiles.map(Number) : [],
  };
}

/**
 * The SVG document (text) of a ProfilesView's state.
 *
 * @param {object} rawData the `_data` trait (binary buffers or plain arrays)
 * @param {object} state the view's traits (`selected_profiles`)
 * @param {object} [options] paper options
 * @returns {string}
 */
export function profilesSVG(rawData, state, options = {}) {
  const settings = profilesExportSettings(state || {}, options);
  return svgDocument(drawProfiles(shimContainer(), profilesScene(decodeProfiles(rawData), settings)), settings.scheme);
}
