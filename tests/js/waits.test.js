// kit/waits.js: who the waiting at a collective waits for (the tree's and the
// Sankey's cue, label and tooltip), decoded from the sparse `waits` entry.
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { decodeWaits, waitCue, waitHeading, waitSentences } from "../../js/kit/waits.js";

/** A `waits` entry as Python sends it (typed columns as buffers; wait_causes' names). */
function entry(rows) {
  const col = (T, k) => new T(rows.map((r) => r[k])).buffer;
  return {
    row: col(Int32Array, "row"),
    calls: col(Int32Array, "calls"),
    most_waited_for: col(Int32Array, "mostWaitedFor"),
    most_waited_for_calls: col(Int32Array, "mostWaitedForCalls"),
    most_often_last: col(Int32Array, "mostOftenLast"),
    most_often_last_calls: col(Int32Array, "mostOftenLastCalls"),
    ranks_ever_last: col(Int32Array, "ranksEverLast"),
    pure: col(Int32Array, "pure"),
    wait_total: col(Float32Array, "waitTotal"),
    most_waited_for_wait_total: col(Float32Array, "mostWaitedForWait"),
    before_time_total: col(Float32Array, "beforeTime"),
    arrival_spread_total: col(Float32Array, "arrivalSpread"),
    before: rows.map((r) => r.before),
    unit: "ns",
  };
}

const NOBODY = { mostWaitedFor: -1, mostWaitedForCalls: 0, mostOftenLast: -1, mostOftenLastCalls: 0, ranksEverLast: 0 };
const ROWS = [
  { row: 3, calls: 12, mostWaitedFor: 2, mostWaitedForCalls: 4, mostOftenLast: 0, mostOftenLastCalls: 5, ranksEverLast: 3, pure: 1, waitTotal: 2.41e9, mostWaitedForWait: 8.19e8, beforeTime: 1.2e9, arrivalSpread: 1.21e9, before: "forward" },
  { row: 7, calls: 1, ...NOBODY, pure: 1, waitTotal: 0, mostWaitedForWait: 0, beforeTime: 0, arrivalSpread: 0, before: "" },
  { row: 9, calls: 5, mostWaitedFor: 0, mostWaitedForCalls: 5, mostOftenLast: 0, mostOftenLastCalls: 5, ranksEverLast: 1, pure: 0, waitTotal: 5e6, mostWaitedForWait: 5e6, beforeTime: 0, arrivalSpread: 2e6, before: "" },
  { row: 99, calls: 1, mostWaitedFor: 1, mostWaitedForCalls: 1, mostOftenLast: 1, mostOftenLastCalls: 1, ranksEverLast: 1, pure: 1, waitTotal: 1, mostWaitedForWait: 1, beforeTime: 0, arrivalSpread: 0, before: "" },
];

describe("kit/waits", () => {
  const w = decodeWaits(entry(ROWS), 10);

  it("decodes the rows in range, keyed by row", () => {
    assert.deepEqual([...w.keys()], [3, 7, 9]); // row 99 is beyond the 10 rows
    assert.equal(w.get(3).mostWaitedFor, 2);
    assert.equal(w.get(3).mostOftenLast, 0);
    assert.equal(w.get(3).before, "forward");
    assert.equal(w.get(9).pure, false);
    assert.equal(decodeWaits(undefined, 10).size, 0);
  });

  it("cues the most waited for rank only on marks that are only collectives, and only if a call had a last to arrive", () => {
    assert.equal(waitCue(w.get(3)), "waited for: rank 2");
    assert.equal(waitCue(w.get(7)), ""); // every call a tie
    assert.equal(waitCue(w.get(9)), ""); // a module holding collectives: told, not cued
    assert.equal(waitHeading(w.get(3)), "waiting, not working");
    assert.equal(waitHeading(w.get(9)), "the collectives inside");
  });

  it("names the most waited for and the most often last apart, with units, and what the last to arrive did", () => {
    const s = waitSentences(w.get(3));
    assert.equal(s.length, 4);
    assert.match(s[0], /^others waited 2\.41 s for this collective in 12 calls$/);
    assert.equal(s[1], "most waited for: rank 2, last to arrive at 4 of 12 calls (its last arrivals cost the others 819 ms)");
    assert.equal(s[2], "most often last: rank 0, at 5 of 12 calls; 3 ranks were last to arrive at some call");
    assert.match(s[3], /the last to arrive were in forward \(99(\.\d)?% of the time the others waited\)/);
    assert.equal(waitSentences(w.get(9))[2], "most often last: the same rank, at 5 of 5 calls");
    assert.equal(waitSentences(w.get(7)).length, 1); // nobody last alone, nothing before
    assert.deepEqual(waitSentences(undefined), []);
    for (const text of [...s, waitCue(w.get(3))]) assert.doesNotMatch(text, /\blate\b/); // one word, one meaning
  });
});
