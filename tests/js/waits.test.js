// kit/waits.js: who the waiting at a collective waits for (the tree's and the
// Sankey's cue, label and tooltip), decoded from the sparse `waits` entry.
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { decodeWaits, waitCue, waitHeading, waitSentences } from "../../js/kit/waits.js";

/** A `waits` entry as Python sends it (typed columns as buffers). */
function entry(rows) {
  const col = (T, k) => new T(rows.map((r) => r[k])).buffer;
  return {
    row: col(Int32Array, "row"),
    calls: col(Int32Array, "calls"),
    late: col(Int32Array, "late"),
    late_calls: col(Int32Array, "lateCalls"),
    late_ranks: col(Int32Array, "lateRanks"),
    pure: col(Int32Array, "pure"),
    waited: col(Float32Array, "waited"),
    caused: col(Float32Array, "caused"),
    before_time: col(Float32Array, "beforeTime"),
    late_window: col(Float32Array, "lateWindow"),
    before: rows.map((r) => r.before),
    unit: "ns",
  };
}

const ROWS = [
  { row: 3, calls: 12, late: 2, lateCalls: 4, lateRanks: 3, pure: 1, waited: 2.41e9, caused: 8.19e8, beforeTime: 1.2e9, lateWindow: 1.21e9, before: "forward" },
  { row: 7, calls: 1, late: -1, lateCalls: 0, lateRanks: 0, pure: 1, waited: 0, caused: 0, beforeTime: 0, lateWindow: 0, before: "" },
  { row: 9, calls: 5, late: 0, lateCalls: 5, lateRanks: 1, pure: 0, waited: 5e6, caused: 5e6, beforeTime: 0, lateWindow: 2e6, before: "" },
  { row: 99, calls: 1, late: 1, lateCalls: 1, lateRanks: 1, pure: 1, waited: 1, caused: 1, beforeTime: 0, lateWindow: 0, before: "" },
];

describe("kit/waits", () => {
  const w = decodeWaits(entry(ROWS), 10);

  it("decodes the rows in range, keyed by row", () => {
    assert.deepEqual([...w.keys()], [3, 7, 9]); // row 99 is beyond the 10 rows
    assert.equal(w.get(3).late, 2);
    assert.equal(w.get(3).before, "forward");
    assert.equal(w.get(9).pure, false);
    assert.equal(decodeWaits(undefined, 10).size, 0);
  });

  it("names the late rank only on marks that are only collectives, and only if someone was late", () => {
    assert.equal(waitCue(w.get(3)), "late: rank 2");
    assert.equal(waitCue(w.get(7)), ""); // every call a tie
    assert.equal(waitCue(w.get(9)), ""); // a module holding collectives: told, not cued
    assert.equal(waitHeading(w.get(3)), "waiting, not working");
    assert.equal(waitHeading(w.get(9)), "the collectives inside");
  });

  it("says who waited how long, for whom, and what the late rank did, with units", () => {
    const s = waitSentences(w.get(3));
    assert.equal(s.length, 3);
    assert.match(s[0], /^others waited 2\.41 s for this collective in 12 calls$/);
    assert.match(s[1], /rank 2 at 4 of 12 calls .*819 ms; 3 ranks were last at some call/);
    assert.match(s[2], /the late ranks were in forward \(99(\.\d)?% of the time the others waited\)/);
    assert.equal(waitSentences(w.get(7)).length, 1); // nobody late, nothing before
    assert.deepEqual(waitSentences(undefined), []);
  });
});
