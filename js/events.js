// Change listeners for local models (a page with no kernel): anywidget's
// `on`/`off` and a `fire` that calls the listeners of one event.

/** @returns {{on: Function, off: Function, fire: (ev: string) => void}} */
export function listeners() {
  const handlers = new Map();
  return {
    on(ev, cb) {
      if (!handlers.has(ev)) handlers.set(ev, []);
      handlers.get(ev).push(cb);
    },
    off(ev, cb) {
      const list = handlers.get(ev) || [];
      const at = list.indexOf(cb);
      if (at >= 0) list.splice(at, 1);
    },
    fire(ev) {
      for (const cb of [...(handlers.get(ev) || [])]) cb();
    },
  };
}
