// The TimelineView in a standalone HTML page (no kernel): a local model over the
// exported payload. There is no Python to ask for detail, so zooming and panning
// re-bin what was exported (the rectangles and counter peaks of the exported
// window): the page shows that window, coarser where one zooms in past its bins.
// Selection and the brush are local.

import { plainModel } from "../kit/model.js";
import { formatValue } from "../format.js";
import { decodeTimeline } from "./data.js";
import { clampWindow, renderTimeline } from "./view.js";

/**
 * The exported data `d` (decoded) seen through window `w` (inside `d.window`),
 * as a plain `_data`: each rectangle and counter bin moved to the bins of `w`
 * (a counter bin takes the highest peak that falls in it); markers kept when inside.
 *
 * @param {import("./data.js").TimelineData} d
 * @param {[number, number]} w
 * @returns {object} a `_data` object (plain arrays)
 */
export function rebin(d, w) {
  const [e0, e1] = d.window;
  const bins = d.bins;
  const old = (e1 - e0) / bins;
  const width = (w[1] - w[0]) / bins;
  const to = (t) => (t - w[0]) / width;
  const lane = [];
  const level = [];
  const b0 = [];
  const b1 = [];
  const node = [];
  const cover = [];
  for (let i = 0; i < d.n; i++) {
    const a = Math.max(0, Math.floor(to(e0 + d.b0[i] * old) + 1e-9));
    const b = Math.min(bins, Math.ceil(to(e0 + d.b1[i] * old) - 1e-9));
    if (b <= a) continue;
    lane.push(d.lane[i]);
    level.push(d.level[i]);
    b0.push(a);
    b1.push(b);
    node.push(d.node[i]);
    cover.push(d.cover[i]);
  }
  const peak = new Array(d.k * bins).fill(null);
  for (let c = 0; c < d.k; c++) {
    for (let j = 0; j < bins; j++) {
      const v = d.counterPeak[c * bins + j];
      if (!Number.isFinite(v)) continue;
      const a = Math.max(0, Math.floor(to(e0 + j * old) + 1e-9));
      const b = Math.min(bins, Math.ceil(to(e0 + (j + 1) * old) - 1e-9));
      for (let k = a; k < b; k++) if (peak[c * bins + k] === null || v > peak[c * bins + k]) peak[c * bins + k] = v;
    }
  }
  const marks = [];
  for (let j = 0; j < d.m; j++) {
    const t = e0 + d.markX[j];
    if (t >= w[0] && t < w[1]) marks.push(j);
  }
  const pick = (col) => marks.map((j) => col[j]);
  return {
    n: lane.length,
    bins,
    levels: d.levels,
    window: [w[0], w[1]],
    whole: [e0, e1],
    lanes: d.lanes,
    lane_profile: Array.from(d.laneProfile),
    lane,
    level,
    b0,
    b1,
    node,
    cover,
    node_id: Array.from(d.nodeId),
    names: d.names,
    node_kind: Array.from(d.nodeKind),
    kinds: d.kinds,
    m: marks.length,
    mark_x: marks.map((j) => e0 + d.markX[j] - w[0]),
    mark_lane: pick(d.markLane),
    mark_rank: pick(d.markRank),
    mark_node: pick(d.markNode),
    mark_late_by: pick(d.markLateBy),
    k: d.k,
    tracks: d.tracks,
    track_units: d.trackUnits,
    counter_lane: Array.from(d.counterLane),
    counter_track: Array.from(d.counterTrack),
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
