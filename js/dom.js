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
