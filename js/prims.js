// Prims: SVG elements as plain data, {tag, attrs, text?, children?}, the
// output of every view's pure `scene` and the input of its `draw`.

/** A prim: an SVG element as data (`text` and `children` optional). */
export function P(tag, attrs, text, children) {
  const p = { tag, attrs };
  if (text !== undefined && text !== null) p.text = text;
  if (children) p.children = children;
  return p;
}
