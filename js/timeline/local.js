// The TimelineView in a standalone HTML page (no kernel): a local model over the
// exported payload. There is no Python to ask for detail, so zooming and panning
// re-bin what was exported (the rectangles and counter peaks of the exported
// window): the page shows that window, coarser where one zooms in past its bins.
// Selection and the brush are local.

import { plainModel } from "../kit/model.js";
import { formatValue } from "../format.js";
import { binTime, decodeTimeline } from "./data.js";
import { clampWindow, renderTimeline } from "./view.js";

/** The share of the steps' time the time outside them is drawn at most (Python's `OUTSIDE_SHARE`). */
export const OUTSIDE_SHARE = 0.15;

/**
 * The window `[a, b)` as segments of uniform bins, as Python's `step_segments`:
 * the steps (`[first, last)`) at their scale, the time before and after them each
 * compressed into a segment of its own where longer than `share` of the steps' time.
 *
 * @returns {{t0: number, t1: number, b0: number, b1: number}[]}
 */
export function stepSegments(a, b, first, last, bins, share = OUTSIDE_SHARE) {
  const whole = [{ t0: a, t1: b, b0: 0, b1: bins }];
  const lo = Math.max(a, first);
  const hi = Math.min(b, last);
  if (bins < 20 || !(hi > lo)) return whole;
  const cap = share * (hi - lo);
  const before = lo - a > cap;
  const after = b - hi > cap;
  if (!before && !after) return whole;
  const t0 = before ? lo : a;
  const t1 = after ? hi : b;
  const weights = [...(before ? [cap] : []), t1 - t0, ...(after ? [cap] : [])];
  const sum = weights.reduce((x, y) => x + y, 0);
  const n = weights.map((x) => Math.max(1, Math.round((bins * x) / sum)));
  const mid = before ? 1 : 0;
  n[mid] = bins - (n.reduce((x, y) => x + y, 0) - n[mid]);
  const edges = [...(before ? [a] : []), t0, t1, ...(after ? [b] : [])];
  const out = [];
  let at = 0;
  for (let k = 0; k < n.length; k++) {
    out.push({ t0: edges[k], t1: edges[k + 1], b0: at, b1: at + n[k] });
    at += n[k];
  }
  return out;
}

/** The steps' time `[first, last)` of an export whose window has segments: its densest segment. */
function stepsOf(d) {
  if (d.steps) return d.steps; // the span Python drew around
  if (d.segments.length < 2) return null; // older exports: the densest segment
  const density = (g) => (g.b1 - g.b0) / (g.t1 - g.t0);
  const g = d.segments.reduce((x, y) => (density(y) > density(x) ? y : x));
  return [g.t0, g.t1];
}

/**
 * The exported data `d` (decoded) seen through window `w` (inside `d.window`),
 * as a plain `_data`: each rectangle, communication run and counter bin moved to
 * the bins of `w` (a counter bin takes the highest peak that falls in it);
 * markers kept when inside. The time outside the steps stays compressed as
 * Python would draw it ({@link stepSegments}).
 *
 * @param {import("./data.js").TimelineData} d
 * @param {[number, number]} w
 * @returns {object} a `_data` object (plain arrays)
 */
export function rebin(d, w) {
  const [e0, e1] = d.window;
  const bins = d.bins;
  const steps = stepsOf(d);
  const segs = steps ? stepSegments(w[0], w[1], steps[0], steps[1], bins) : [{ t0: w[0], t1: w[1], b0: 0, b1: bins }];
  const to = (t) => {
    const g = segs.find((x) => t < x.t1) || segs[segs.length - 1];
    return g.b0 + ((t - g.t0) / (g.t1 - g.t0)) * (g.b1 - g.b0);
  };
  const binsOf = (b0, b1) => [Math.max(0, Math.floor(to(binTime(d, b0)) + 1e-9)), Math.min(bins, Math.ceil(to(binTime(d, b1)) - 1e-9))];
  const rects = { lane: [], level: [], b0: [], b1: [], node: [], cover: [], blocked: [] };
  for (let i = 0; i < d.n; i++) {
    const [a, b] = binsOf(d.b0[i], d.b1[i]);
    if (b <= a) continue;
    rects.lane.push(d.lane[i]);
    rects.level.push(d.level[i]);
    rects.b0.push(a);
    rects.b1.push(b);
    rects.node.push(d.node[i]);
    rects.cover.push(d.cover[i]);
    rects.blocked.push(d.blocked[i]);
  }
  const colls = { lane: [], level: [], b0: [], b1: [], node: [], calls: [], time: [], waited: [] };
  for (let j = 0; j < d.c; j++) {
    const [a, b] = binsOf(d.collB0[j], d.collB1[j]);
    if (b <= a && !(binTime(d, d.collB1[j]) > w[0] && binTime(d, d.collB0[j]) < w[1])) continue;
    colls.lane.push(d.collLane[j]);
    colls.level.push(d.collLevel[j]);
    colls.b0.push(Math.min(a, bins - 1));
    colls.b1.push(Math.max(b, Math.min(a, bins - 1) + 1));
    colls.node.push(d.collNode[j]);
    colls.calls.push(d.collCalls[j]);
    colls.time.push(d.collTime[j]);
    colls.waited.push(Number.isFinite(d.collWaited[j]) ? d.collWaited[j] : null);
  }
  const peak = new Array(d.k * bins).fill(null);
  for (let c = 0; c < d.k; c++) {
    for (let j = 0; j < bins; j++) {
      const v = d.counterPeak[c * bins + j];
      if (!Number.isFinite(v)) continue;
      const [a, b] = binsOf(j, j + 1);
      for (let k = a; k < b; k++) if (peak[c * bins + k] === null || v > peak[c * bins + k]) peak[c * bins + k] = v;
    }
  }
  const marks = [];
  for (let j = 0; j < d.m; j++) {
    const t = e0 + d.markX[j];
    if (t >= w[0] && t < w[1]) marks.push(j);
  }
  const pick = (col) => marks.map((j) => (Number.isFinite(col[j]) ? col[j] : null));
  const runs = [];
  for (let j = 0; j < d.p; j++) {
    const a = e0 + d.pathX0[j];
    const b = e0 + d.pathX1[j];
    if (b > w[0] && a < w[1]) runs.push(j);
  }
  return {
    n: rects.lane.length,
    bins,
    levels: d.levels,
    window: [w[0], w[1]],
    whole: [e0, e1],
    segments: segs.length > 1 ? segs.map((g) => [g.t0, g.t1, g.b1 - g.b0]) : [],
    lanes: d.lanes,
    lane_profile: Array.from(d.laneProfile),
    ...rects,
    node_id: Array.from(d.nodeId),
    names: d.names,
    node_kind: Array.from(d.nodeKind),
    kinds: d.kinds,
    node_role: Array.from(d.nodeRole),
    node_group: Array.from(d.nodeGroup),
    node_tint: Array.from(d.nodeTint),
    groups: d.groups,
    group_slot: d.groupSlot,
    c: colls.lane.length,
    coll_lane: colls.lane,
    coll_level: colls.level,
    coll_b0: colls.b0,
    coll_b1: colls.b1,
    coll_node: colls.node,
    coll_calls: colls.calls,
    coll_time: colls.time,
    coll_waited: colls.waited,
    m: marks.length,
    mark_x: marks.map((j) => e0 + d.markX[j] - w[0]),
    mark_lane: pick(d.markLane),
    mark_rank: pick(d.markRank),
    mark_node: pick(d.markNode),
    mark_last_by: pick(d.markLastBy),
    mark_waited: pick(d.markWaited),
    mark_ranks: pick(d.markRanks),
    mark_of: marks.map((j) => d.markOf[j] ?? ""),
    p: runs.length,
    path_x0: runs.map((j) => Math.max(e0 + d.pathX0[j], w[0]) - w[0]),
    path_x1: runs.map((j) => Math.min(e0 + d.pathX1[j], w[1]) - w[0]),
    path_lane: runs.map((j) => d.pathLane[j]),
    summary: d.summary,
    blocked_label: d.blockedLabel,
    k: d.k,
    tracks: d.tracks,
    track_units: d.trackUnits,
    counter_lane: Array.from(d.counterLane),
    counter_track: Array.from(d.counterTrack),
    counter_label: d.counterLabel,
    counter_peak: peak,
    note: `the exported detail (${formatValue(e0, "s")} \u2013 ${formatValue(e1, "s")}, ${d.bins} bins) re-binned in this page: no Python to ask for more`,
  };
}

/** The local model of a timeline's page: window changes re-bin the exported data. */
export function localTimelineModel(payload) {
  const st = payload.state || {};
  const list = (v) => (Array.isArray(v) ? v.map(Number) : []);
  const exported = decodeTimeline(payload.data);
  const values = {
    _kind: "timeline",
    _data: { ...payload.data, whole: exported.window },
    window: exported.window,
    depth: st.depth ?? exported.levels - 1,
    bins: exported.bins,
    selected_profiles: list(st.selected_profiles),
    selection: list(st.selection),
    brush: list(st.brush),
  };
  const after = (changed) => {
    if (!changed.includes("window")) return [];
    values.window = clampWindow(list(values.window), exported.window);
    values._data = rebin(exported, values.window);
    return ["_data"];
  };
  return plainModel(values, after, new Set(["_data", "depth", "bins", "selected_profiles"]));
}

/** Mount the interactive TimelineView of `payload` into `el`; returns the cleanup. */
export function mountTimeline(el, payload) {
  return renderTimeline({ model: localTimelineModel(payload), el }, { local: true });
}
