// js/kit/lifetime.js: one teardown list for every view.
import { strict as assert } from "node:assert";
import { describe, it } from "node:test";
import { lifetime } from "../../js/kit/lifetime.js";

function fakeModel() {
  const handlers = [];
  return {
    handlers,
    on: (ev, cb) => handlers.push([ev, cb]),
    off: (ev, cb) => handlers.splice(handlers.findIndex(([e, c]) => e === ev && c === cb), 1),
  };
}

describe("lifetime", () => {
  it("undoes model and DOM listeners and destroys helpers, last first", () => {
    const life = lifetime();
    const model = fakeModel();
    const target = new EventTarget();
    let clicks = 0;
    const order = [];
    life.defer(() => order.push("first"));
    life.model(model, [["change:a", () => {}], ["change:b", () => {}]]);
    life.listen(target, { click: () => clicks++ });
    const helper = life.own({ destroy: () => order.push("helper") });
    assert.equal(typeof helper.destroy, "function");
    target.dispatchEvent(new Event("click"));
    assert.equal(clicks, 1);
    assert.equal(model.handlers.length, 2);
    life.dispose();
    target.dispatchEvent(new Event("click"));
    assert.equal(clicks, 1, "the listener is gone");
    assert.equal(model.handlers.length, 0);
    assert.deepEqual(order, ["helper", "first"]);
  });

  it("runs every step even when one throws, then reports it", () => {
    const life = lifetime();
    const done = [];
    life.defer(() => done.push("a"));
    life.defer(() => {
      throw new Error("boom");
    });
    life.defer(() => done.push("c"));
    assert.throws(() => life.dispose(), /boom/);
    assert.deepEqual(done, ["c", "a"]);
    life.dispose(); // nothing left: a second call is harmless
  });
});
