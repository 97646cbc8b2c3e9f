// Who the waiting at a collective waits for (a Timeline's wait causes, computed
// in Python by cctviz.ops.collectives.wait_causes and sent sparse): shared by
// the tree and the Sankey, which name the most waited for rank on collective
// contexts instead of flagging the waiters' imbalance. Pure: no DOM.

import { column, columnLength, formatPercent, formatValue } from "../format.js";

/** The class of the cue that names whom a collective waits for. */
export const WAIT_CLASS = "cctviz-wait";

/**
 * Decode the `waits` entry of a view's `_data` (the columns of wait_causes, whose
 * words docs/architecture.md section 2 defines): row -> {calls, waitTotal,
 * mostWaitedFor (the rank whose last arrivals cost the others the most waiting,
 * summed over the calls; -1: no call had a last to arrive), mostWaitedForCalls,
 * mostWaitedForWait (that waiting), mostOftenLast (the rank last to arrive at the
 * most calls), mostOftenLastCalls, ranksEverLast, before (a node name, "" if
 * none), beforeTime, arrivalSpread, pure (the mark is only collectives; else the
 * waits are those of the collectives inside it), unit}.
 *
 * @param {object|undefined} w the `waits` entry
 * @param {number} n rows (or super nodes) of the view
 * @returns {Map<number, object>}
 */
export function decodeWaits(w, n) {
  const out = new Map();
  if (!w || typeof w !== "object") return out;
  const m = columnLength(w.row, 4);
  const row = column(w.row, "int32", m, -1);
  const intKeys = ["calls", "most_waited_for", "most_waited_for_calls", "most_often_last", "most_often_last_calls", "ranks_ever_last", "pure"];
  const ints = intKeys.map((k) => column(w[k], "int32", m, -1));
  const floatKeys = ["wait_total", "most_waited_for_wait_total", "before_time_total", "arrival_spread_total"];
  const floats = floatKeys.map((k) => column(w[k], "float32", m, NaN));
  const before = Array.isArray(w.before) ? w.before : [];
  const unit = typeof w.unit === "string" ? w.unit : "";
  for (let k = 0; k < m; k++) {
    if (row[k] < 0 || row[k] >= n) continue;
    out.set(row[k], {
      calls: ints[0][k],
      mostWaitedFor: ints[1][k],
      mostWaitedForCalls: ints[2][k],
      mostOftenLast: ints[3][k],
      mostOftenLastCalls: ints[4][k],
      ranksEverLast: ints[5][k],
      waitTotal: floats[0][k],
      mostWaitedForWait: floats[1][k],
      before: String(before[k] ?? ""),
      beforeTime: floats[2][k],
      arrivalSpread: floats[3][k],
      pure: ints[6][k] !== 0, // the mark is only collectives: the rank waited for is its cue
      unit,
    });
  }
  return out;
}

/** The cue's words: the rank the others waited for most ("waited for: rank 2"). */
export const WAIT_CUE = "waited for:";

/** The cue naming the most waited for rank ("waited for: rank 2"), "" where no
 *  call had a last to arrive or the mark holds more than collectives. */
export function waitCue(w) {
  return w && w.pure && w.mostWaitedFor >= 0 ? `${WAIT_CUE} rank ${w.mostWaitedFor}` : "";
}

/** The tooltip's heading over {@link waitSentences}. */
export function waitHeading(w) {
  return w.pure ? "waiting, not working" : "the collectives inside";
}

/**
 * The wait as sentences (accessible label, tooltip), each word as defined once:
 * "others waited 2.41 s for this collective in 12 calls", "most waited for:
 * rank 2, last to arrive at 4 of 12 calls (its last arrivals cost the others
 * 819 ms)", "most often last: rank 0, at 5 of 12 calls; 3 ranks were last to
 * arrive at some call", "before arriving, the last to arrive were in forward
 * (99% of the time the others waited)".
 */
export function waitSentences(w) {
  if (!w) return [];
  const f = (v) => formatValue(v, w.unit);
  const of = (k) => `${k} of ${w.calls} call${w.calls === 1 ? "" : "s"}`;
  const out = [`others waited ${f(w.waitTotal)} for this collective in ${w.calls} call${w.calls === 1 ? "" : "s"}`];
  if (w.mostWaitedFor >= 0) {
    out.push(`most waited for: rank ${w.mostWaitedFor}, last to arrive at ${of(w.mostWaitedForCalls)} (its last arrivals cost the others ${f(w.mostWaitedForWait)})`);
  }
  if (w.mostOftenLast >= 0) {
    const others = w.ranksEverLast > 1 ? `; ${w.ranksEverLast} ranks were last to arrive at some call` : "";
    const who = w.mostOftenLast === w.mostWaitedFor ? "the same rank" : `rank ${w.mostOftenLast}`;
    out.push(`most often last: ${who}, at ${of(w.mostOftenLastCalls)}${others}`);
  }
  if (w.before && w.arrivalSpread > 0) {
    const who = w.ranksEverLast > 1 ? "the last to arrive were" : "the last to arrive was";
    out.push(`before arriving, ${who} in ${w.before} (${formatPercent(w.beforeTime / w.arrivalSpread)} of the time the others waited)`);
  }
  return out;
}
