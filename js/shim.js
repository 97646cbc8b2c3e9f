// A minimal DOM for `draw` outside a browser (the exporter in an embedded V8,
// and the node tests): elements with attributes, text and children, enough
// for dom.js's `h` and `serialize`. Nothing else of the DOM exists here, which
// keeps `draw` honest: no layout, no measuring, no events.

class ShimNode {
  constructor(doc) {
    this.ownerDocument = doc;
    this.parentNode = null;
    this.childNodes = [];
  }

  appendChild(child) {
    if (child.parentNode) child.parentNode.removeChild(child);
    child.parentNode = this;
    this.childNodes.push(child);
    return child;
  }

  append(...children) {
    for (const c of children) this.appendChild(typeof c === "string" ? this.ownerDocument.createTextNode(c) : c);
  }

  insertBefore(child, ref) {
    if (!ref) return this.appendChild(child);
    if (child.parentNode) child.parentNode.removeChild(child);
    const at = this.childNodes.indexOf(ref);
    child.parentNode = this;
    this.childNodes.splice(at < 0 ? this.childNodes.length : at, 0, child);
    return child;
  }

  removeChild(child) {
    const at = this.childNodes.indexOf(child);
    if (at >= 0) this.childNodes.splice(at, 1);
    child.parentNode = null;
    return child;
  }

  remove() {
    if (this.parentNode) this.parentNode.removeChild(this);
  }

  get firstChild() {
    return this.childNodes[0] ?? null;
  }

  get textContent() {
    return this.childNodes.map((c) => c.textContent).join("");
  }

  set textContent(text) {
    for (const c of this.childNodes) c.parentNode = null;
    this.childNodes = [];
    if (text !== "" && text !== null && text !== undefined) this.appendChild(this.ownerDocument.createTextNode(String(text)));
  }
}

class ShimText extends ShimNode {
  constructor(doc, data) {
    super(doc);
    this.nodeType = 3;
    this.data = data;
  }

  get textContent() {
    return this.data;
  }
}

class ShimElement extends ShimNode {
  constructor(doc, ns, tag) {
    super(doc);
    this.nodeType = 1;
    this.namespaceURI = ns;
    this.localName = tag;
    this.tagName = tag;
    this._attrs = new Map();
  }

  setAttribute(name, value) {
    this._attrs.set(String(name), String(value));
  }

  getAttribute(name) {
    return this._attrs.has(name) ? this._attrs.get(name) : null;
  }

  hasAttribute(name) {
    return this._attrs.has(name);
  }

  removeAttribute(name) {
    this._attrs.delete(name);
  }

  get attributes() {
    return Array.from(this._attrs, ([name, value]) => ({ name, value }));
  }

  get children() {
    return this.childNodes.filter((c) => c.nodeType === 1);
  }
}

/** A document that makes ShimElements: `createElementNS`, `createElement`, `createTextNode`. */
export class ShimDocument {
  createElementNS(ns, tag) {
    return new ShimElement(this, ns, tag);
  }

  createElement(tag) {
    return new ShimElement(this, "http://www.w3.org/1999/xhtml", tag);
  }

  createTextNode(text) {
    return new ShimText(this, String(text));
  }
}

/** A detached container element to draw into. */
export function shimContainer() {
  return new ShimDocument().createElement("div");
}
