// Decoding of the TimelineView's `_data` trait (cctviz/views/CONTRACT.md,
// "TimelineView"). Pure: no DOM. Columns arrive as DataViews (the widget) or
// plain arrays (export and standalone payloads).

import { column } from "../format.js";

const strings = (v) => (Array.isArray(v) ? v.map((x) => String(x)) : []);
const count = (v) => (Number.isInteger(v) && v > 0 ? v : 0);
const pair = (v, fallback) => (Array.isArray(v) && v.length === 2 && v.every(Number.isFinite) && v[1] > v[0] ? [v[0], v[1]] : fallback);

/**
 * @typedef {object} TimelineData
 * @property {number} n rectangles
 * @property {number} bins pixel bins across the window
 * @property {number} levels levels drawn per lane (depth + 1)
 * @property {[number, number]} window seconds from the timeline's start
 * @property {[number, number]} whole the whole timeline, seconds
 * @property {string[]} lanes lane labels ("rank 3")
 * @property {Int32Array} laneProfile profile id of each lane
 * @property {Int32Array} lane
 * @property {Int32Array} level
 * @property {Int32Array} b0 first bin
 * @property {Int32Array} b1 bin past the last
 * @property {Int32Array} node index into `nodeId`/`names`/`nodeKind`
 * @property {Float32Array} cover share of the bins the node covers
 * @property {Int32Array} nodeId tree node id of each used node
 * @property {string[]} names
 * @property {Int32Array} nodeKind index into `kinds`
 * @property {string[]} kinds
 * @property {number} m markers
 * @property {Float32Array} markX seconds from the window's start
 * @property {Int32Array} markLane
 * @property {Int32Array} markRank
 * @property {Int32Array} markNode
 * @property {Float32Array} markLateBy seconds
 * @property {number} k counter bands (one per (lane, track))
 * @property {string[]} tracks counter track names
 * @property {string[]} trackUnits unit of each track ("" = none)
 * @property {Int32Array} counterLane lane of each band
 * @property {Int32Array} counterTrack index into `tracks`
 * @property {Float32Array} counterPeak k x bins: the highest value per bin (NaN: none yet)
 * @property {string} note replaces the events line under the axis when set (a page zoomed locally)
 * @property {number} events events in the window
 * @property {number} eventsTotal
 */

/**
 * Decode `_data` (missing or empty: no lanes).
 *
 * @param {object|null|undefined} raw
 * @returns {TimelineData}
 */
export function decodeTimeline(raw) {
  const d = raw && typeof raw === "object" ? raw : {};
  const n = count(d.n);
  const m = count(d.m);
  const names = strings(d.names);
  const lanes = strings(d.lanes);
  const window = pair(d.window, [0, 1]);
  const bins = count(d.bins) || 1;
  const k = count(d.k);
  return {
    n,
    bins,
    levels: count(d.levels) || 1,
    window,
    whole: pair(d.whole, window),
    lanes,
    laneProfile: column(d.lane_profile, "int32", lanes.length, -1),
    lane: column(d.lane, "int32", n, 0),
    level: column(d.level, "int32", n, 0),
    b0: column(d.b0, "int32", n, 0),
    b1: column(d.b1, "int32", n, 0),
    node: column(d.node, "int32", n, 0),
    cover: column(d.cover, "float32", n, 1),
    nodeId: column(d.node_id, "int32", names.length, -1),
    names,
    nodeKind: column(d.node_kind, "int32", names.length, 0),
    kinds: strings(d.kinds),
    m,
    markX: column(d.mark_x, "float32", m, 0),
    markLane: column(d.mark_lane, "int32", m, 0),
    markRank: column(d.mark_rank, "int32", m, -1),
    markNode: column(d.mark_node, "int32", m, 0),
    markLateBy: column(d.mark_late_by, "float32", m, 0),
    k,
    tracks: strings(d.tracks),
    trackUnits: strings(d.track_units),
    counterLane: column(d.counter_lane, "int32", k, 0),
    counterTrack: column(d.counter_track, "int32", k, 0),
    counterPeak: column(d.counter_peak, "float32", k * bins, NaN),
    note: typeof d.note === "string" ? d.note : "",
    events: count(d.events),
    eventsTotal: count(d.events_total),
  };
}
