// A model with the anywidget API (get/set/save_changes/on/off) over plain values:
// what a view runs on in a standalone page, with no kernel.

import { listeners } from "../events.js";

/**
 * `after(changed)` may update values after a save and returns more changed names
 * (fired too); traits in `frozen` ignore `set`.
 */
export function plainModel(values, after = () => [], frozen = new Set()) {
  const events = listeners();
  let pending = {};
  const fire = (name) => events.fire(`change:${name}`);
  return {
    get: (k) => values[k],
    set: (k, v) => {
      if (!frozen.has(k)) pending[k] = v;
    },
    save_changes() {
      const changes = pending;
      pending = {};
      const changed = Object.keys(changes).filter((k) => JSON.stringify(values[k]) !== JSON.stringify(changes[k]));
      for (const k of changed) values[k] = changes[k];
      changed.push(...after(changed));
      for (const k of changed) fire(k);
    },
    on: events.on,
    off: events.off,
  };
}
