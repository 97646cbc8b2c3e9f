// Who the waiting at a collective waits for (a Timeline's wait causes, computed
// in Python by cctviz.ops.collectives.wait_causes and sent sparse): shared by
// the tree and the Sankey, which name the late rank on collective contexts
// instead of flagging the waiters' imbalance. Pure: no DOM.

import { column, columnLength, formatPercent, formatValue } from "../format.js";

/** The class of the cue that names whom a collective waits for. */
export const WAIT_CLASS = "cctviz-wait";

/**
 * Decode the `waits` entry of a view's `_data`: row -> {calls, late (rank, -1:
 * nobody was late), lateCalls, lateRanks, waited, caused, before (a node name,
 * "" if none), beforeTime, lateWindow, pure (the mark is only collectives; else
 * the waits are those of the collectives inside it), unit}.
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
  const ints = ["calls", "late", "late_calls", "late_ranks", "pure"].map((k) => column(w[k], "int32", m, -1));
  const floats = ["waited", "caused", "before_time", "late_window"].map((k) => column(w[k], "float32", m, NaN));
  const before = Array.isArray(w.before) ? w.before : [];
  const unit = typeof w.unit === "string" ? w.unit : "";
  for (let k = 0; k < m; k++) {
    if (row[k] < 0 || row[k] >= n) continue;
    out.set(row[k], {
      calls: ints[0][k],
      late: ints[1][k],
      lateCalls: ints[2][k],
      lateRanks: ints[3][k],
      waited: floats[0][k],
      caused: floats[1][k],
      before: String(before[k] ?? ""),
      beforeTime: floats[2][k],
      lateWindow: floats[3][k],
      pure: ints[4][k] !== 0, // the mark is only collectives: the late rank is its cue
      unit,
    });
  }
  return out;
}

/** The cue naming the late rank ("late: rank 2"), "" where nobody was late or
 *  the mark holds more than collectives. */
export function waitCue(w) {
  return w && w.pure && w.late >= 0 ? `late: rank ${w.late}` : "";
}

/** The tooltip's heading over {@link waitSentences}. */
export function waitHeading(w) {
  return w.pure ? "waiting, not working" : "the collectives inside";
}

/**
 * The wait as sentences (accessible label, tooltip): "others waited 2.41 s for
 * this collective in 12 calls", "last to arrive: rank 2 at 4 of 12 calls (its
 * lateness cost the others 819 ms; 3 ranks were last at some call)", "before
 * arriving, the late ranks were in forward (99% of the time the others waited)".
 */
export function waitSentences(w) {
  if (!w) return [];
  const f = (v) => formatValue(v, w.unit);
  const out = [`others waited ${f(w.waited)} for this collective in ${w.calls} call${w.calls === 1 ? "" : "s"}`];
  if (w.late >= 0) {
    const others = w.lateRanks > 1 ? `; ${w.lateRanks} ranks were last at some call` : "";
    out.push(`last to arrive: rank ${w.late} at ${w.lateCalls} of ${w.calls} calls (its lateness cost the others ${f(w.caused)}${others})`);
  }
  if (w.before && w.lateWindow > 0) {
    const who = w.lateRanks > 1 ? "the late ranks were" : "the late rank was";
    out.push(`before arriving, ${who} in ${w.before} (${formatPercent(w.beforeTime / w.lateWindow)} of the time the others waited)`);
  }
  return out;
}
