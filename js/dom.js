// DOM helpers shared by every view's `draw` and by the exporter.
//
// Everything here takes the document from the node it is given
// (`parent.ownerDocument`), never from a global, so the same code builds the
// SVG in the notebook page and in the exporter's minimal DOM (shim.js).
// Untrusted text (profile names) is only ever set as text or attribute values.

export const SVG_NS = "http://www.w3.org/2000/svg";

/** Round to 2 decimals for compact, stable SVG attributes. */
export const r2 = (v) => Math.round(v * 100) / 100;

/**
 * Create an element in `doc` with attributes (set with setAttribute only) and
 * optional text. Tags prefixed "svg:" are created in the SVG namespace.
 *
 * @param {Document} doc
 * @param {string} tag e.g. "div" or "svg:rect"
 * @param {Object<string, string|number|null|undefined>} [attrs]
 * @param {string} [text]
 */
export function h(doc, tag, attrs = {}, text) {
  const el = tag.startsWith("svg:") ? doc.createElementNS(SVG_NS, tag.slice(4)) : doc.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined && v !== null) el.setAttribute(k, String(v));
  if (text !== undefined) el.textContent = text;
  return el;
}

const escText = (s) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
const escAttr = (s) => escText(s).replace(/"/g, "&quot;").replace(/\n/g, "&#10;").replace(/\t/g, "&#9;");

/**
 * Serialise an element to XML text, deterministically: attributes in the
 * order they were set, `<x/>` for an element without children, the SVG
 * namespace declared on the outermost element only. The browser's "Download
 * SVG" and the exporter both run it on the same (shim) DOM, so they give the
 * same bytes.
 *
 * @param {Element} el
 * @returns {string}
 */
export function serialize(el) {
  const out = [];
  const walk = (node, top) => {
    if (node.nodeType === 3) {
      out.push(escText(String(node.data ?? node.nodeValue ?? "")));
      return;
    }
    if (node.nodeType !== 1) return;
    const tag = node.localName || node.tagName;
    out.push(`<${tag}`);
    if (top && node.namespaceURI === SVG_NS) out.push(` xmlns="${SVG_NS}"`);
    for (const a of Array.from(node.attributes)) {
      if (a.name === "xmlns") continue;
      out.push(` ${a.name}="${escAttr(String(a.value))}"`);
    }
    const kids = Array.from(node.childNodes);
    if (kids.length === 0) {
      out.push("/>");
      return;
    }
    out.push(">");
    for (const c of kids) walk(c, false);
    out.push(`</${tag}>`);
  };
  walk(el, true);
  return out.join("");
}

/** Build the element tree of a prim ({tag, attrs, text?, children?}) in `doc` (SVG namespace). */
export function buildPrim(doc, prim) {
  const el = doc.createElementNS(SVG_NS, prim.tag);
  for (const [k, v] of Object.entries(prim.attrs || {})) if (v !== undefined && v !== null) el.setAttribute(k, String(v));
  if (prim.text !== undefined) el.appendChild(doc.createTextNode(String(prim.text)));
  if (prim.children) for (const c of prim.children) el.appendChild(buildPrim(doc, c));
  return el;
}

/**
 * Append a view's figure to `parent` and return the svg: `svg.cctviz-fig` >
 * [style] [rect.cctviz-bg] g.cctviz-viewport > g.cctviz-content > (one group per
 * layer); then g.cctviz-legends (the band above the content, with the title)
 * and the empty note. The scene gives `frame`, `fontFamily`, `fontSize`,
 * `style`, `background`, `content`, `titleHeight`, `band`, `legends`, `title`, `empty`.
 *
 * @param {Element} parent
 * @param {object} scene
 * @param {[object, object[]][]} layers [group attributes, prims] in drawing order
 * @returns {SVGSVGElement}
 */
/**
 * Append a flat figure (no zoomable viewport: the profiles view, the timeline) to
 * `parent`: the svg root of `scene.frame`, its style and background, then `parts`
 * (prims) in order. Returns the svg.
 */
export function drawFlat(parent, scene, parts) {
  const head = [];
  if (scene.style) head.push({ tag: "style", attrs: {}, text: scene.style });
  if (scene.background) head.push({ tag: "rect", attrs: { class: "cctviz-bg", x: 0, y: 0, width: "100%", height: "100%", fill: scene.background } });
  const { width, height, viewBox } = scene.frame;
  const attrs = { class: "cctviz-fig", width, height, viewBox, "font-family": scene.fontFamily, "font-size": scene.fontSize };
  const svg = buildPrim(parent.ownerDocument, { tag: "svg", attrs, children: [...head, ...parts] });
  markFolded(svg, scene);
  parent.appendChild(svg);
  return svg;
}

export function drawFigure(parent, scene, layers) {
  const doc = parent.ownerDocument;
  const svg = h(doc, "svg:svg", {
    class: "cctviz-fig",
    width: scene.frame.width,
    height: scene.frame.height,
    viewBox: scene.frame.viewBox,
    "font-family": scene.fontFamily,
    "font-size": scene.fontSize,
  });
  if (scene.style) svg.appendChild(h(doc, "svg:style", {}, scene.style));
  if (scene.background) {
    svg.appendChild(h(doc, "svg:rect", { class: "cctviz-bg", x: 0, y: 0, width: "100%", height: "100%", fill: scene.background }));
  }
  const viewport = h(doc, "svg:g", { class: "cctviz-viewport" });
  const content = h(doc, "svg:g", { class: "cctviz-content", transform: `translate(${r2(scene.content.x)},${r2(scene.content.y)})` });
  for (const [attrs, prims] of layers) {
    const g = h(doc, "svg:g", attrs);
    for (const p of prims) g.appendChild(buildPrim(doc, p));
    content.appendChild(g);
  }
  viewport.appendChild(content);
  svg.appendChild(viewport);
  if (scene.band > 0 || scene.title) {
    const top = scene.titleHeight + scene.band;
    const legends = h(doc, "svg:g", { class: "cctviz-legends" });
    legends.appendChild(h(doc, "svg:rect", { class: "cctviz-band", x: 0, y: 0, width: "100%", height: r2(top) }));
    if (scene.band > 0) {
      const y = r2(top - 0.5);
      legends.appendChild(h(doc, "svg:line", { class: "cctviz-band-rule", x1: 0, x2: "100%", y1: y, y2: y }));
    }
    const placed = h(doc, "svg:g", { transform: `translate(0,${r2(scene.titleHeight)})` });
    for (const p of scene.legends) placed.appendChild(buildPrim(doc, p));
    legends.appendChild(placed);
    if (scene.title) legends.appendChild(buildPrim(doc, scene.title));
    svg.appendChild(legends);
  }
  if (scene.empty) svg.appendChild(buildPrim(doc, scene.empty));
  markFolded(svg, scene);
  parent.appendChild(svg);
  return svg;
}

/**
 * The caption of what an export could not hold at its font size (a scene's
 * `caption` prim and `notes`), drawn under the figure and kept in the root's
 * `data-folded` attribute, which the exporter turns into a warning.
 */
export function markFolded(svg, scene) {
  const doc = svg.ownerDocument;
  if (scene.caption) svg.appendChild(buildPrim(doc, scene.caption));
  if (scene.notes && scene.notes.length) svg.setAttribute("data-folded", scene.notes.join("; "));
  if (scene.taller) svg.setAttribute("data-taller", "true"); // taller than the height asked
}
