// The registry of view kinds: each js/<kind>/index.js registers its parts, and
// js/kinds.js (one line per view) imports them. The widget entry (index.js), the
// exporter (export.js) and the standalone page (standalone.js) look views up here
// by the kind Python sends (the `_kind` trait, the payload's `kind`).

const KINDS = new Map();

/**
 * Register (or add parts to) view `kind`.
 *
 * @param {string} kind
 * @param {{render?: Function, figure?: Function, mount?: Function}} parts
 *   render({model, el}) -> cleanup: the live widget; figure(data, state, options)
 *   -> SVG text: export; mount(el, payload) -> cleanup: the standalone page
 */
export function registerView(kind, parts) {
  KINDS.set(kind, { ...(KINDS.get(kind) || {}), ...parts });
}

/** The parts of view `kind`, or null. */
export function viewOf(kind) {
  return typeof kind === "string" && KINDS.has(kind) ? KINDS.get(kind) : null;
}

/** The registered kinds. */
export function viewKinds() {
  return [...KINDS.keys()];
}
