// A CCT figure from a view's state: the one function behind `view.save()`
// (run by the exporter in an embedded V8) and the live view's "Download SVG"
// (run in the browser). Both draw into the same minimal DOM (shim.js) and
// serialise with the same function, so they give the same bytes.

import { serialize } from "../dom.js";
import { shimContainer } from "../shim.js";
import { decodeData } from "./data.js";
import { drawCCT } from "./draw.js";
import { cctScene } from "./scene.js";
import { PALETTES, figureCSS } from "./style.js";

/** Export options and their defaults (a null or missing option takes its default). */
export const EXPORT_DEFAULTS = Object.freeze({
  width: null, // pt; null: the figure's natural width
  height: null, // pt; null: natural
  fontSize: 10, // pt
  title: "",
  legends: true,
  highlight: true,
  background: "white", // "white" (the scheme's page colour) or "transparent"
  scheme: "light", // "light" or "dark"
});

/**
 * Scene settings of an exported figure.
 *
 * @param {{chart?: string, color?: string|string[], size?: string, selection?: number[]}} state
 * @param {object} [options] see {@link EXPORT_DEFAULTS}
 */
export function exportSettings(state, options = {}) {
  const o = { ...EXPORT_DEFAULTS };
  for (const [k, v] of Object.entries(options || {})) if (v !== null && v !== undefined && k in o) o[k] = v;
  const scheme = Object.prototype.hasOwnProperty.call(PALETTES, o.scheme) ? o.scheme : "light";
  const num = (v) => (Number.isFinite(Number(v)) && Number(v) > 0 ? Number(v) : null);
  return {
    chart: state.chart === "icicle" ? "icicle" : "tree",
    color: state.color ?? [],
    size: state.size ?? "",
    selection: Array.isArray(state.selection) ? state.selection.map(Number) : [],
    fontSize: num(o.fontSize) ?? EXPORT_DEFAULTS.fontSize,
    width: num(o.width),
    height: num(o.height),
    fit: true,
    legends: Boolean(o.legends),
    highlight: Boolean(o.highlight),
    title: o.title ? String(o.title) : "",
    background: o.background === "transparent" ? null : PALETTES[scheme].bg,
    style: figureCSS(PALETTES[scheme], `.cctviz-export-${scheme}`),
    scheme,
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
  const svg = drawCCT(shimContainer(), scene);
  svg.setAttribute("class", `cctviz-fig cctviz-export-${settings.scheme}`);
  return `<?xml version="1.0" encoding="UTF-8"?>\n${serialize(svg)}\n`;
}
