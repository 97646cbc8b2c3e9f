// Decoding of the TimelineView's `_data` trait (cctviz/views/CONTRACT.md,
// "TimelineView"). Pure: no DOM. Columns arrive as DataViews (the widget) or
// plain arrays (export and standalone payloads).

import { column, columnLength } from "../format.js";

const strings = (v) => (Array.isArray(v) ? v.map((x) => String(x)) : []);
const count = (v) => (Number.isInteger(v) && v > 0 ? v : 0);
/** A column that may be left out (sent empty): `fill` where it is. */
const optional = (v, dtype, n, fill) => (n > 0 && columnLength(v, 4) >= n ? column(v, dtype, n, fill) : column(null, dtype, n, fill));
/** The window's segments from `[[t0, t1, bins], ...]` (bins adding up to `bins`, times in order), else the window whole. */
function segmentsOf(v, window, bins) {
  const whole = [{ t0: window[0], t1: window[1], b0: 0, b1: bins }];
  if (!Array.isArray(v) || v.length < 2) return whole;
  const out = [];
  let b = 0;
  for (const g of v) {
    if (!Array.isArray(g) || g.length !== 3 || !g.every(Number.isFinite) || !(g[1] > g[0]) || !(g[2] >= 1)) return whole;
    if (out.length && g[0] !== out[out.length - 1].t1) return whole;
    out.push({ t0: g[0], t1: g[1], b0: b, b1: b + g[2] });
    b += g[2];
  }
  return b === bins ? out : whole;
}
const pair = (v, fallback) => (Array.isArray(v) && v.length === 2 && v.every(Number.isFinite) && v[1] > v[0] ? [v[0], v[1]] : fallback);

/**
 * @typedef {object} TimelineData
 * @property {number} n rectangles
 * @property {number} bins pixel bins across the window
 * @property {number} levels levels drawn per lane (depth + 1)
 * @property {[number, number]} window seconds from the timeline's start
 * @property {[number, number]} whole the whole timeline, seconds
 * @property {{t0: number, t1: number, b0: number, b1: number}[]} segments the window's
 *   segments of uniform bins (seconds, bins `[b0, b1)`): one, or the time outside the
 *   steps (start-up, end) compressed into segments of its own
 * @property {string[]} lanes lane labels ("rank 3")
 * @property {Int32Array} laneProfile profile id of each lane (a group lane's: the rank it draws)
 * @property {Int32Array} laneMembers ranks each lane stands for (1, or a group's size)
 * @property {string[]} laneKey per lane, the key `expanded` takes ("" a lane of one rank)
 * @property {Int32Array} bandLane the group lanes with a band, in lane order
 * @property {number} bandBins band bins per band lane (each `bandStride` of the view's bins)
 * @property {number} bandStride
 * @property {Float32Array} bandLo per band lane x band bin: the least share of the bin in communication over the group's ranks
 * @property {Float32Array} bandMid the median
 * @property {Float32Array} bandHi the greatest
 * @property {Int32Array} lane
 * @property {Int32Array} level
 * @property {Int32Array} b0 first bin
 * @property {Int32Array} b1 bin past the last
 * @property {Int32Array} node index into `nodeId`/`names`/`nodeKind`
 * @property {Float32Array} cover share of the bins the node covers
 * @property {Int32Array} blocked 1 where the rectangle's context is one the workflow summary counts as blocked
 * @property {Int32Array} nodeId tree node id of each used node
 * @property {string[]} names
 * @property {Int32Array} nodeKind index into `kinds`
 * @property {string[]} kinds
 * @property {Int32Array} nodeRole per used node: 0 a context, 1 a frame (root, thread), 2 a step, 3 the start-up, 4 communication
 * @property {Int32Array} nodeGroup per used node: index into `groups` (-1: none)
 * @property {Int32Array} nodeTint per used node: 0 the group's colour, 1 or 2 lighter
 * @property {string[]} groups the contexts that give colours (phases, first levels)
 * @property {number[]} groupSlot per group: its colour slot (-1: grey)
 * @property {number} c communication runs (calls merged where their pixels overlap)
 * @property {Int32Array} collLane
 * @property {Int32Array} collLevel
 * @property {Int32Array} collB0
 * @property {Int32Array} collB1
 * @property {Int32Array} collNode index into `nodeId`/`names`
 * @property {Int32Array} collCalls
 * @property {Float32Array} collTime seconds in the calls (in the window)
 * @property {Float32Array} collWaited seconds of it spent waiting (NaN: not known)
 * @property {number} m markers
 * @property {Float32Array} markX seconds from the window's start
 * @property {Int32Array} markLane
 * @property {Int32Array} markRank
 * @property {Int32Array} markNode
 * @property {Float32Array} markLastBy seconds: the last arrival minus the second-to-last
 * @property {Float32Array} markWaited seconds: the longest wait of the others
 * @property {Int32Array} markRanks ranks in the call
 * @property {string[]} markOf the component the call's ranks share ("" none)
 * @property {number} p critical-path runs (a lane's stretch of the path), in time order
 * @property {Float32Array} pathX0 seconds from the window's start
 * @property {Float32Array} pathX1
 * @property {Int32Array} pathLane
 * @property {string} summary the workflow summary's verdict ("" none)
 * @property {string} blockedLabel the legend's text of the blocked hatching
 * @property {number} k counter bands (one per (lane, track))
 * @property {string[]} tracks counter track names
 * @property {string[]} trackUnits unit of each track ("" = none)
 * @property {Int32Array} counterLane lane of each band (its first, where folded)
 * @property {string[]} counterLabel name of each band ("sim (highest of 2)"; "" the lane's)
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
  const c = count(d.c);
  const segments = segmentsOf(d.segments, window, bins);
  const bandLane = column(d.band_lane, "int32", columnLength(d.band_lane, 4), 0);
  const nBand = bandLane.length * count(d.band_bins);
  return {
    n,
    bins,
    levels: count(d.levels) || 1,
    window,
    whole: pair(d.whole, window),
    segments,
    steps: Array.isArray(d.steps) && d.steps.length === 2 ? pair(d.steps, null) : null, // the steps' span (s), or null
    lanes,
    laneProfile: column(d.lane_profile, "int32", lanes.length, -1),
    laneMembers: optional(d.lane_members, "int32", lanes.length, 1),
    laneKey: Array.isArray(d.lane_key) && d.lane_key.length === lanes.length ? strings(d.lane_key) : lanes.map(() => ""),
    bandLane,
    bandBins: nBand ? count(d.band_bins) : 0,
    bandStride: count(d.band_stride) || 1,
    bandLo: column(d.band_lo, "float32", nBand, NaN),
    bandMid: column(d.band_mid, "float32", nBand, NaN),
    bandHi: column(d.band_hi, "float32", nBand, NaN),
    lane: column(d.lane, "int32", n, 0),
    level: column(d.level, "int32", n, 0),
    b0: column(d.b0, "int32", n, 0),
    b1: column(d.b1, "int32", n, 0),
    node: column(d.node, "int32", n, 0),
    cover: column(d.cover, "float32", n, 1),
    blocked: optional(d.blocked, "int32", n, 0),
    nodeId: column(d.node_id, "int32", names.length, -1),
    names,
    nodeKind: column(d.node_kind, "int32", names.length, 0),
    kinds: strings(d.kinds),
    nodeRole: optional(d.node_role, "int32", names.length, 0),
    nodeGroup: optional(d.node_group, "int32", names.length, -1),
    nodeTint: optional(d.node_tint, "int32", names.length, 0),
    groups: strings(d.groups),
    groupSlot: Array.isArray(d.group_slot) ? d.group_slot.map((v) => (Number.isInteger(v) ? v : -1)) : [],
    c,
    collLane: column(d.coll_lane, "int32", c, 0),
    collLevel: column(d.coll_level, "int32", c, 0),
    collB0: column(d.coll_b0, "int32", c, 0),
    collB1: column(d.coll_b1, "int32", c, 0),
    collNode: column(d.coll_node, "int32", c, 0),
    collCalls: column(d.coll_calls, "int32", c, 1),
    collTime: column(d.coll_time, "float32", c, 0),
    collWaited: column(d.coll_waited, "float32", c, NaN),
    m,
    markX: column(d.mark_x, "float32", m, 0),
    markLane: column(d.mark_lane, "int32", m, 0),
    markRank: column(d.mark_rank, "int32", m, -1),
    markNode: column(d.mark_node, "int32", m, 0),
    markLastBy: column(d.mark_last_by, "float32", m, 0),
    markWaited: optional(d.mark_waited, "float32", m, NaN),
    markRanks: optional(d.mark_ranks, "int32", m, 0),
    markOf: strings(d.mark_of),
    p: count(d.p),
    pathX0: column(d.path_x0, "float32", count(d.p), 0),
    pathX1: column(d.path_x1, "float32", count(d.p), 0),
    pathLane: column(d.path_lane, "int32", count(d.p), 0),
    summary: typeof d.summary === "string" ? d.summary : "",
    blockedLabel: typeof d.blocked_label === "string" ? d.blocked_label : "",
    k,
    tracks: strings(d.tracks),
    trackUnits: strings(d.track_units),
    counterLane: column(d.counter_lane, "int32", k, 0),
    counterTrack: column(d.counter_track, "int32", k, 0),
    counterLabel: strings(d.counter_label),
    counterPeak: column(d.counter_peak, "float32", k * bins, NaN),
    note: typeof d.note === "string" ? d.note : "",
    events: count(d.events),
    eventsTotal: count(d.events_total),
  };
}

/**
 * The time (seconds from the timeline's start) of bin edge `b` of `d`'s window:
 * bins are uniform within each segment (`d.segments`).
 *
 * @param {TimelineData} d
 * @param {number} b
 */
export function binTime(d, b) {
  const segs = d.segments;
  for (const g of segs) {
    if (b === g.b1) return g.t1;
    if (b >= g.b0 && b < g.b1) return b === g.b0 ? g.t0 : g.t0 + ((b - g.b0) * (g.t1 - g.t0)) / (g.b1 - g.b0);
  }
  return b <= 0 ? segs[0].t0 : segs[segs.length - 1].t1;
}
