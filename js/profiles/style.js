// The ProfilesView figure's stylesheet: the CCT figure's shared rules (text,
// title, legends) plus the scatter plot's own, for a palette of js/kit/style.js
// (the theme's variables in the notebook, fixed colours in export).

import { figureCSS } from "../kit/style.js";

/**
 * @param {object} p a palette (`PALETTES.light|dark` or `THEME_PALETTE`)
 * @param {string} scope selector of the figures the rules are for
 * @returns {string}
 */
export function profilesCSS(p, scope = ".cctviz-fig") {
  const f = scope;
  return [
    figureCSS(p, scope),
    `${f} .cctviz-grid{stroke:${p.rule};stroke-width:0.75}`,
    `${f} .cctviz-plot-frame{fill:none;stroke:${p.strong};stroke-width:0.75}`,
    `${f} .cctviz-tick{stroke:${p.strong};stroke-width:0.75}`,
    `${f} .cctviz-tick-label{fill:${p.muted}}`,
    `${f} .cctviz-note{fill:${p.muted};font-style:italic}`,
    `${f} .cctviz-dot{stroke:${p.bg};stroke-width:0.75;fill-opacity:0.9}`,
    `${f} .cctviz-dot.dim{fill-opacity:0.22;stroke-opacity:0.3}`,
    `${f} .cctviz-dot.selected{stroke:${p.fg};stroke-width:1.5;fill-opacity:1}`,
    `${f} .cctviz-legend-dot{stroke:${p.bg};stroke-width:0.75}`,
  ].join("\n");
}
