// The TimelineView figure's stylesheet: the shared figure rules plus the
// timeline's own, for a palette of js/kit/style.js.

import { figureCSS } from "../kit/style.js";

/**
 * @param {object} p a palette (`PALETTES.light|dark` or `THEME_PALETTE`)
 * @param {string} scope selector of the figures the rules are for
 * @returns {string}
 */
export function timelineCSS(p, scope = ".cctviz-fig") {
  const f = scope;
  return [
    figureCSS(p, scope),
    `${f} .cctviz-lane-bg{fill:${p.rule};fill-opacity:0.35}`,
    `${f} .cctviz-lane-label{fill:${p.fg}}`,
    `${f} .cctviz-lane-group{cursor:pointer;font-weight:600}`,
    `${f} .cctviz-lane-sublabel{fill:${p.muted}}`,
    `${f} .cctviz-spread-bg{fill:${p.bg};fill-opacity:0.6}`,
    `${f} .cctviz-spread-range{fill:${p.fg};fill-opacity:0.22;stroke:none}`,
    `${f} .cctviz-spread-median{stroke:${p.fg};stroke-width:1}`,
    `${f} .cctviz-tick{stroke:${p.strong};stroke-width:0.75}`,
    `${f} .cctviz-tick-label{fill:${p.muted}}`,
    `${f} .cctviz-grid{stroke:${p.rule};stroke-width:0.75}`,
    `${f} .cctviz-break{fill:${p.bg}}`,
    `${f} .cctviz-span{stroke:${p.bg};stroke-width:0.5}`,
    `${f} .cctviz-role-frame{fill:${p.rule}}`,
    `${f} .cctviz-role-step{fill:${p.line}}`,
    `${f} .cctviz-role-startup{fill:${p.bg};stroke:${p.strong};stroke-width:0.75;stroke-dasharray:2 2}`,
    `${f} .cctviz-role-comm{fill:${p.bg}}`, // the calls are drawn over it: wait, then transfer
    `${f} .cctviz-span.selected{stroke:${p.accent};stroke-width:2}`,
    `${f} .cctviz-span-label{fill:${p.fg};pointer-events:none}`,
    `${f} .cctviz-coll-transfer{fill:${p.fg}}`,
    `${f} .cctviz-coll-call{fill:${p.fg};fill-opacity:0.6}`,
    `${f} .cctviz-coll-wait{fill:${p.fg};fill-opacity:0.22}`,
    `${f} .cctviz-coll.selected rect{stroke:${p.accent};stroke-width:2}`,
    `${f} .cctviz-coll-label{fill:${p.bg};pointer-events:none}`,
    `${f} .cctviz-hatch-line{stroke:${p.fg};stroke-width:1.1;stroke-opacity:0.7}`,
    `${f} .cctviz-hatch{pointer-events:none}`,
    `${f} .cctviz-blocked{pointer-events:none}`,
    `${f} .cctviz-blocked-swatch{fill:${p.line}}`,
    `${f} .cctviz-summary{fill:${p.fg}}`,
    `${f} .cctviz-late{fill:${p.alert};stroke:${p.bg};stroke-width:0.75}`,
    `${f} .cctviz-key-late{fill:${p.alert};stroke:${p.bg};stroke-width:0.75}`,
    `${f} .cctviz-critical{fill:none;stroke:${p.alert};stroke-width:2;stroke-linejoin:round;pointer-events:none}`,
    `${f} .cctviz-key-critical{stroke:${p.alert};stroke-width:2}`,
    `${f} .cctviz-brushed{fill:${p.accent};fill-opacity:0.12;stroke:${p.accent};stroke-width:1}`,
    `${f} .cctviz-legend-swatch{stroke:${p.bg};stroke-width:0.75}`,
    `${f} .cctviz-legend-swatch.cctviz-role-startup{stroke:${p.strong}}`,
    `${f} .cctviz-counter-bg{fill:${p.rule};fill-opacity:0.2}`,
    `${f} .cctviz-counter-area{fill:${p.accent};fill-opacity:0.35;stroke:${p.accent};stroke-width:1}`,
    `${f} .cctviz-counter-title{fill:${p.fg}}`,
    `${f} .cctviz-note{fill:${p.muted};font-style:italic}`,
  ].join("\n");
}
