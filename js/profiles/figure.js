// A ProfilesView figure from a view's state: the function behind
// `view.save()` (the exporter's embedded V8) and the live view's "SVG"
// button; both draw into shim.js and serialise with dom.js: the same bytes.

import { exportSettings } from "../cct/figure.js";
import { serialize } from "../dom.js";
import { shimContainer } from "../shim.js";
import { PALETTES } from "../cct/style.js";
import { decodeProfiles } from "./data.js";
import { drawProfiles } from "./draw.js";
import { profilesScene } from "./scene.js";
import { profilesCSS } from "./style.js";

/**
 * Scene settings of an exported figure (the paper options of
 * `EXPORT_DEFAULTS` in js/cct/figure.js).
 *
 * @param {{selected_profiles?: number[]}} state
 * @param {object} [options]
 */
export function profilesExportSettings(state, options = {}) {
  const base = exportSettings({}, options);
  return {
    selection: Array.isArray(state.selected_profiles) ? state.selected_profiles.map(Number) : [],
    fontSize: base.fontSize,
    width: base.width,
    height: base.height,
    fit: true,
    legends: base.legends,
    highlight: base.highlight,
    title: base.title,
    background: base.background,
    style: profilesCSS(PALETTES[base.scheme], `.cctviz-export-${base.scheme}`),
    scheme: base.scheme,
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
  const svg = drawProfiles(shimContainer(), profilesScene(decodeProfiles(rawData), settings));
  svg.setAttribute("class", `cctviz-fig cctviz-export-${settings.scheme}`);
  return `<?xml version="1.0" encoding="UTF-8"?>\n${serialize(svg)}\n`;
}
