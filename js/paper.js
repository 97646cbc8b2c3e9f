// Paper options of an exported figure, the same for every view: the one
// place that reads `options` (a null or missing option takes its default),
// and the SVG document text around a drawn figure.

import { serialize } from "./dom.js";
import { PALETTES, figureCSS } from "./kit/style.js";

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
  notes: [], // what the exporter folded to fit (its caption's first sentences)
});

/** The options of a figure a live view's "SVG" button downloads: those `save()`
 *  takes by default (cctviz/export/payload.py DEFAULTS: 7 in wide, 10 pt), so the
 *  button and `view.save("x.svg")` give the same file. */
export const DOWNLOAD_OPTIONS = Object.freeze({ width: 504, fontSize: 10 });

/**
 * Scene settings from paper options: sizes, legends, highlight, title, the
 * background and the stylesheet of the scheme.
 *
 * @param {object} [options] see {@link EXPORT_DEFAULTS}
 * @param {(palette: object, scope: string) => string} [css] the view's stylesheet
 */
export function paperSettings(options = {}, css = figureCSS) {
  const o = { ...EXPORT_DEFAULTS };
  for (const [k, v] of Object.entries(options || {})) if (v !== null && v !== undefined && k in o) o[k] = v;
  const scheme = Object.prototype.hasOwnProperty.call(PALETTES, o.scheme) ? o.scheme : "light";
  const num = (v) => (Number.isFinite(Number(v)) && Number(v) > 0 ? Number(v) : null);
  return {
    fontSize: num(o.fontSize) ?? EXPORT_DEFAULTS.fontSize,
    width: num(o.width),
    height: num(o.height),
    fit: true,
    legends: Boolean(o.legends),
    highlight: Boolean(o.highlight),
    title: o.title ? String(o.title) : "",
    background: o.background === "transparent" ? null : PALETTES[scheme].bg,
    style: css(PALETTES[scheme], `.cctviz-export-${scheme}`),
    scheme,
    notes: Array.isArray(o.notes) ? o.notes.map(String) : [],
  };
}

/** The SVG document text of a figure drawn for export (its class names the scheme). */
export function svgDocument(svg, scheme, kindClass = "") {
  svg.setAttribute("class", `cctviz-fig${kindClass ? ` ${kindClass}` : ""} cctviz-export-${scheme}`);
  return `<?xml version="1.0" encoding="UTF-8"?>\n${serialize(svg)}\n`;
}
