// The Sankey figure's stylesheet: the CCT figure's rules (text, legends,
// band, ink on fills) plus the Sankey's own, for the same palettes (the
// notebook's theme variables or an export's fixed light/dark colours).
// Colours that depend on a node's fill (the ink of its histogram and box
// plot) are attributes set by the scene, not rules.

import { figureCSS } from "../kit/style.js";

/**
 * @param {object} p a palette (PALETTES.light|dark or THEME_PALETTE)
 * @param {string} scope the figures' selector
 * @returns {string}
 */
export function sankeyCSS(p, scope = ".cctviz-fig") {
  const f = scope;
  return [
    figureCSS(p, scope),
    `${f} .cctviz-flow{fill:${p.line};fill-opacity:0.45;stroke:none}`,
    `${f} .cctviz-flow.selected{fill:${p.accent};fill-opacity:0.4}`,
    `${f} .cctviz-smark{stroke:${p.fg};stroke-opacity:0.55;stroke-width:0.6}`,
    `${f} .selected .cctviz-smark{stroke:${p.accent};stroke-opacity:1;stroke-width:2.5}`,
    `${f} .cctviz-mean{stroke-width:1;stroke-dasharray:2 1.5}`,
    `${f} .cctviz-zero{stroke-width:1;stroke-opacity:0.8}`,
    `${f} .cctviz-whisker{stroke-width:1}`,
    `${f} .cctviz-box{stroke-width:1}`,
    `${f} .cctviz-median{stroke-width:2}`,
    `${f} .cctviz-hist-sel{fill:${p.accent};fill-opacity:0.9}`,
    `${f} .cctviz-sel-mean{stroke:${p.accent};stroke-width:2}`,
    `${f} circle.selected{fill:${p.accent};stroke:${p.bg};stroke-width:1}`,
    `${f} .cctviz-brush-range{fill:${p.accent};fill-opacity:0.18;stroke:${p.accent};stroke-width:1}`,
    `${f} .cctviz-cue{font-weight:700;fill:${p.alert}}`,
    `${f} .cctviz-site-cell{fill:${p.bg};fill-opacity:0.9;stroke:${p.strong};stroke-width:0.5}`,
    `${f} .cctviz-site-label{fill:${p.fg}}`,
    `${f} .selected .cctviz-site-cell{stroke:${p.accent};stroke-width:2}`,
    `${f} .selected text.cctviz-ink-light{fill:#ffffff;text-decoration:none}`,
    `${f} .selected text.cctviz-ink-dark{fill:#111111;text-decoration:none}`,
    `${f} .cctviz-halo{paint-order:stroke;stroke:${p.bg};stroke-width:3;stroke-linejoin:round}`,
    `${f} .cctviz-legend-hist{fill:${p.muted};stroke:${p.fg}}`,
    `${f} .cctviz-leader{fill:none;stroke:${p.muted};stroke-width:0.75}`,
    `${f} .cctviz-num{font-weight:700}`,
    `${f} .cctviz-key-num{font-weight:700}`,
    `${f} .cctviz-legend-hist .cctviz-box{fill:${p.bg}}`,
  ].join("\n");
}
