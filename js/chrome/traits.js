// Trait helpers for any view: read an id list, write changes in one save.

/**
 * @param {object} model the anywidget model
 * @returns {{getIds: (name: string) => number[], commit: (changes: object) => void}}
 */
export function traitHelpers(model) {
  return {
    getIds: (name) => (Array.isArray(model.get(name)) ? model.get(name).map(Number) : []),
    commit(changes) {
      for (const [k, v] of Object.entries(changes)) model.set(k, v);
      model.save_changes();
    },
  };
}
