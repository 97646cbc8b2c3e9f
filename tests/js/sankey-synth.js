// Synthetic Sankey payloads (`_data` as plain arrays, per
// cctviz/views/CONTRACT.md "SankeyView") for the tests and for looking at
// figures: a layered graph whose values conserve (a node's value is the sum
// of its incoming links), with per-profile values, their statistics,
// histograms and outliers. Deterministic for a seed.

/** A small seeded PRNG (mulberry32). */
export function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function quantile(sorted, p) {
  const h = (sorted.length - 1) * p;
  const lo = Math.floor(h);
  return sorted[lo] + (sorted[Math.min(lo + 1, sorted.length - 1)] - sorted[lo]) * (h - lo);
}

/** Statistics of one node's per-profile values, as Python sends them. */
function stats(vals, B) {
  const s = [...vals].sort((a, b) => a - b);
  const n = s.length;
  const mean = s.reduce((a, b) => a + b, 0) / n;
  const std = Math.sqrt(s.reduce((a, b) => a + (b - mean) ** 2, 0) / n);
  const q1 = quantile(s, 0.25);
  const q3 = quantile(s, 0.75);
  const iqr = q3 - q1;
  const inLo = s.filter((v) => v >= q1 - 1.5 * iqr);
  const inHi = s.filter((v) => v <= q3 + 1.5 * iqr);
  const min = s[0];
  const max = s[n - 1];
  const hist = new Array(B).fill(0);
  for (const v of vals) {
    const j = max > min ? Math.min(B - 1, Math.floor(((v - min) / (max - min)) * B)) : B - 1;
    hist[j] += 1;
  }
  return { mean, std, q1, q3, median: quantile(s, 0.5), min, max, wlo: inLo[0], whi: inHi[inHi.length - 1], hist, lim: [q1 - 1.5 * iqr, q3 + 1.5 * iqr] };
}

/**
 * @param {object} o
 * @param {number[]} o.perColumn super nodes in each column (the first is 1: the root)
 * @param {number} [o.seed]
 * @param {number} [o.profiles=16]
 * @param {number} [o.bins=12]
 * @param {boolean} [o.diff] add a diff object
 * @param {number} [o.skew] 0..1: how much the first child takes (a huge node)
 * @param {string[]} [o.names] labels to use (cycled)
 */
export function synthPayload(o) {
  const rand = prng(o.seed ?? 1);
  const P = o.profiles ?? 16;
  const B = o.bins ?? 12;
  const cols = o.perColumn;
  const col = [];
  cols.forEach((k, c) => {
    for (let i = 0; i < k; i++) col.push(c);
  });
  const n = col.length;
  const byCol = cols.map((_, c) => col.map((cc, i) => (cc === c ? i : -1)).filter((i) => i >= 0));
  // edges: each node after the root has a parent in the previous column, some a second one further back
  const edges = [];
  for (let v = 0; v < n; v++) {
    const c = col[v];
    if (c === 0) continue;
    const prev = byCol[c - 1];
    edges.push([prev[Math.floor(rand() * prev.length)], v]);
    if (c >= 2 && rand() < 0.3) {
      const cc = Math.floor(rand() * (c - 1));
      const far = byCol[cc];
      edges.push([far[Math.floor(rand() * far.length)], v]);
    }
  }
  // values top-down: a parent passes 85% of its value to its children, split by random weights
  const w = edges.map(() => 0.2 + rand());
  if (o.skew) {
    const firstOut = new Map();
    edges.forEach(([s], e) => {
      if (!firstOut.has(s)) firstOut.set(s, e);
    });
    for (const e of firstOut.values()) w[e] = (o.skew / (1 - o.skew)) * 10;
  }
  const value = new Array(n).fill(0);
  value[0] = 100;
  const ev = new Array(edges.length).fill(0);
  for (let c = 0; c < cols.length; c++) {
    for (const v of byCol[c]) {
      const outs = edges.map((e, i) => (e[0] === v ? i : -1)).filter((i) => i >= 0);
      const tw = outs.reduce((a, i) => a + w[i], 0);
      for (const i of outs) {
        ev[i] = (0.85 * value[v] * w[i]) / tw;
        value[edges[i][1]] += ev[i];
      }
    }
  }
  // links through dummies
  const linkS = [];
  const linkT = [];
  const linkV = [];
  const linkE = [];
  const dummyCol = [];
  edges.forEach(([s, t], e) => {
    let from = s;
    for (let c = col[s] + 1; c < col[t]; c++) {
      const dmy = n + dummyCol.length;
      dummyCol.push(c);
      linkS.push(from);
      linkT.push(dmy);
      linkV.push(ev[e]);
      linkE.push(e);
      from = dmy;
    }
    linkS.push(from);
    linkT.push(t);
    linkV.push(ev[e]);
    linkE.push(e);
  });
  // per-profile values: mean = value, some nodes imbalanced (one slow profile)
  const names = o.names ?? ["main.py", "solver/cg.py", "mpi4py/MPI.pyx", "torch/nn/linear.py", "io/hdf5.py", "kernels.cu", "comm.py", "model/attention.py"];
  const out = {
    n,
    n_dummy: dummyCol.length,
    columns: cols.length,
    bins: B,
    group: [],
    label: [],
    column: col,
    value: [],
    members: [],
    min: [],
    max: [],
    std: [],
    q1: [],
    median: [],
    q3: [],
    whisker_lo: [],
    whisker_hi: [],
    cost: [],
    imbalance: [],
    argmax: [],
    hist: [],
    outlier_node: [],
    outlier_profile: [],
    outlier_value: [],
    outlier_more: [],
    link_source: linkS,
    link_target: linkT,
    link_value: linkV,
    link_edge: linkE,
    edge_source: edges.map((e) => e[0]),
    edge_target: edges.map((e) => e[1]),
    dummy_column: dummyCol,
    back_edges: o.backEdges ?? 0,
    metric: "time (inc)",
    unit: "s",
    rule: "sum",
    profiles: P,
    failed: 0,
    profiles_total: P,
    labels: {},
    cost_threshold: 1,
    sites: [],
    diff: null,
    tree_size: n * 7,
  };
  for (let p = 0; p < P; p++) out.labels[String(p)] = `rank ${p}`;
  const samples = [];
  for (let v = 0; v < n; v++) {
    const nm = names[v % names.length];
    out.group.push(`/src/app/${nm}`);
    out.label.push(v < names.length ? nm : `${nm} (${Math.floor(v / names.length) + 1})`);
    out.members.push(1 + Math.floor(rand() * 9));
    const imb = rand() < 0.3;
    let vals = Array.from({ length: P }, (_, p) => 1 + 0.15 * (rand() - 0.5) + (imb && p === v % P ? 0.8 + rand() : 0));
    const mean0 = vals.reduce((a, b) => a + b, 0) / P;
    vals = vals.map((x) => (x / mean0) * value[v]);
    samples.push(vals);
    const s = stats(vals, B);
    out.value.push(value[v]);
    out.min.push(s.min);
    out.max.push(s.max);
    out.std.push(s.std);
    out.q1.push(s.q1);
    out.median.push(s.median);
    out.q3.push(s.q3);
    out.whisker_lo.push(s.wlo);
    out.whisker_hi.push(s.whi);
    out.cost.push(s.max - value[v]);
    out.imbalance.push(value[v] > 0 ? s.max / value[v] : NaN);
    out.argmax.push(vals.indexOf(s.max));
    out.hist.push(...s.hist);
    const outl = vals.map((x, p) => [x, p]).filter(([x]) => x < s.lim[0] || x > s.lim[1]);
    outl.sort((a, b) => Math.abs(b[0] - value[v]) - Math.abs(a[0] - value[v]) || a[1] - b[1]);
    for (const [x, p] of outl.slice(0, 8)) {
      out.outlier_node.push(v);
      out.outlier_profile.push(p);
      out.outlier_value.push(x);
    }
    out.outlier_more.push(Math.max(0, outl.length - 8));
  }
  if (o.diff) {
    const meanA = out.value.map((x) => x * (0.8 + 0.4 * rand()));
    const meanB = out.value;
    const delta = meanB.map((b, i) => b - meanA[i]);
    const d = Math.max(...delta.map(Math.abs));
    const dhist = [];
    const lo = [];
    const hi = [];
    for (let v = 0; v < n; v++) {
      const diffs = samples[v].map((x) => x - meanA[v]);
      const s = stats(diffs, B);
      dhist.push(...s.hist);
      lo.push(s.min);
      hi.push(s.max);
    }
    out.diff = { a_label: "run A (before)", b_label: "run B (after)", a_profiles: P, b_profiles: P, mean_a: meanA, mean_b: meanB, delta, delta_domain: [-d, d], dhist, dhist_lo: lo, dhist_hi: hi };
  }
  return out;
}
