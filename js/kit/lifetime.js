// What a view sets up and must undo when the notebook removes it (anywidget's
// cleanup): model listeners, DOM listeners, helpers with a destroy(). One list,
// undone in reverse order, so that no view keeps its own copy of the teardown.

/**
 * @returns {{
 *   model: (model: object, pairs: Array<[string, Function]>) => void,
 *   listen: (target: EventTarget, handlers: Object<string, Function>, options?: object) => void,
 *   own: <T>(helper: T) => T,
 *   defer: (undo: () => void) => void,
 *   dispose: () => void,
 * }}
 */
export function lifetime() {
  const undo = [];
  return {
    /** `model.on` each [event, callback]; `model.off` them at the end. */
    model(model, pairs) {
      for (const [ev, cb] of pairs) {
        model.on(ev, cb);
        undo.push(() => model.off(ev, cb));
      }
    },
    /** addEventListener each {event: handler} on `target`; removed at the end. */
    listen(target, handlers, options) {
      for (const [ev, cb] of Object.entries(handlers)) {
        target.addEventListener(ev, cb, options);
        undo.push(() => target.removeEventListener(ev, cb, options));
      }
    },
    /** A helper with `destroy()` (toolbar, tooltip, zoom, keys, resize watch). */
    own(helper) {
      undo.push(() => helper.destroy());
      return helper;
    },
    defer(fn) {
      undo.push(fn);
    },
    /** Undo everything, last first; an error in one step does not stop the rest. */
    dispose() {
      const errors = [];
      while (undo.length) {
        try {
          undo.pop()();
        } catch (e) {
          errors.push(e);
        }
      }
      if (errors.length) throw errors[0];
    },
  };
}
