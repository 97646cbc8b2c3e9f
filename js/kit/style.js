// The figure's stylesheet, written once: the notebook fills the palette with
// the JupyterLab theme's variables, the exporter with fixed colours (a light
// or dark page) and puts the rules inside the SVG, scoped to `.cctviz-fig`.
// Only plain class and descendant selectors: what resvg, typst, Inkscape and
// Illustrator understand.

/** Fixed palettes for exported figures. */
export const PALETTES = Object.freeze({
  light: { fg: "#1f1f1f", muted: "#5f5f5f", bg: "#ffffff", line: "#a8a8a8", strong: "#8a8a8a", accent: "#1565c0", alert: "#c62828", match: "#e65100", rule: "#dddddd" },
  dark: { fg: "#e6e6e6", muted: "#a8a8a8", bg: "#111111", line: "#5c5c5c", strong: "#7a7a7a", accent: "#64b5f6", alert: "#ef5350", match: "#ffa726", rule: "#333333" },
});

/** The notebook's palette: JupyterLab theme variables with light fallbacks. */
export const THEME_PALETTE = Object.freeze({
  fg: "var(--cctviz-fg)",
  muted: "var(--cctviz-fg-muted)",
  bg: "var(--cctviz-bg)",
  line: "var(--cctviz-line)",
  strong: "var(--cctviz-line-strong)",
  accent: "var(--cctviz-accent)",
  alert: "var(--cctviz-alert)",
  match: "var(--cctviz-match)",
  rule: "var(--cctviz-rule)",
});

/**
 * CSS rules (colours and strokes) for the figure's classes; sizes are attributes.
 *
 * @param {object} p a palette ({@link PALETTES} or {@link THEME_PALETTE})
 * @param {string} scope the selector of the figures the rules are for (an exported
 *   figure's own class, so that figures on one page do not restyle each other)
 * @returns {string}
 */
export function figureCSS(p, scope = ".cctviz-fig") {
  const f = scope;
  return [
    `${f} text{fill:${p.fg};font-kerning:none;font-variant-ligatures:none}`,
    `${f} .cctviz-title{font-weight:700}`,
    `${f} .cctviz-link{fill:none;stroke:${p.line};stroke-width:1.2}`,
    `${f} .cctviz-link-other{stroke-dasharray:3 2}`,
    `${f} .cctviz-mark{stroke:${p.fg};stroke-opacity:0.55;stroke-width:0.75}`,
    `${f} rect.cctviz-mark{stroke:${p.bg};stroke-opacity:1;stroke-width:1}`,
    `${f} .cctviz-value{opacity:0.85}`,
    `${f} .cctviz-more{fill:${p.muted}}`,
    `${f} .other .cctviz-mark{stroke:${p.muted};stroke-opacity:1;stroke-width:1;stroke-dasharray:3 2;fill-opacity:0.55}`,
    `${f} .other .cctviz-label{font-style:italic;fill:${p.muted}}`,
    `${f} .collapsed circle.cctviz-mark{stroke:${p.fg};stroke-opacity:1;stroke-width:2}`,
    `${f} path.cctviz-hidden-mark{fill-opacity:0.75}`,
    `${f} path.cctviz-ink-dark{fill:#111111}`,
    `${f} path.cctviz-ink-light{fill:#ffffff}`,
    `${f} .cctviz-imbalance{font-weight:700;fill:${p.alert}}`,
    `${f} .cctviz-wait{font-weight:700;fill:${p.fg}}`,
    `${f} .cctviz-spread-track{stroke:${p.line};stroke-width:1}`,
    `${f} .cctviz-spread-range{stroke:${p.muted};stroke-width:2.5}`,
    `${f} .cctviz-spread-mean{stroke:${p.fg};stroke-width:1.5}`,
    `${f} .cctviz-spread-inset .cctviz-spread-track{stroke-opacity:0.3}`,
    `${f} .cctviz-spread-inset .cctviz-spread-range{stroke-opacity:0.75;stroke-width:2}`,
    `${f} .selected .cctviz-mark{stroke:${p.accent};stroke-opacity:1;stroke-width:3}`,
    `${f} .selected .cctviz-label{fill:${p.accent};text-decoration:underline}`,
    `${f} .match .cctviz-mark{stroke:${p.match};stroke-opacity:1;stroke-width:2.5}`,
    `${f} .match .cctviz-label{fill:${p.match}}`,
    `${f} .cctviz-sel{fill:none}`,
    `${f} .cctviz-sel-outer{stroke:${p.fg};stroke-width:3}`,
    `${f} .cctviz-sel-inner{stroke:${p.bg};stroke-width:1}`,
    `${f} .cctviz-band{fill:${p.bg}}`,
    `${f} .cctviz-band-rule{stroke:${p.rule}}`,
    `${f} .cctviz-legend-title{font-weight:700}`,
    `${f} .cctviz-legend-muted{fill:${p.muted}}`,
    `${f} .cctviz-legend-frame{fill:none;stroke:${p.strong};stroke-width:0.5}`,
    `${f} .cctviz-legend-tick{stroke:${p.muted}}`,
    `${f} .cctviz-legend-swatch{stroke:${p.strong};stroke-width:0.5}`,
    `${f} .cctviz-legend-circle{fill:none;stroke:${p.muted};stroke-width:1}`,
    `${f} .cctviz-empty{fill:${p.muted}}`,
    `${f} .cctviz-caption{fill:${p.muted};font-style:italic}`,
    `${f} text.cctviz-ink-dark{fill:#111111}`,
    `${f} text.cctviz-ink-light{fill:#ffffff}`,
    `${f} g.cctviz-ink-dark line{stroke:#111111}`,
    `${f} g.cctviz-ink-light line{stroke:#ffffff}`,
  ].join("\n");
}
