// Layout of the ensemble Sankey: pure functions of the graph Python built
// (super nodes with columns, dummy nodes on the edges that span columns, links
// between adjacent columns). No DOM, no randomness: the same graph gives the
// same coordinates, whatever the order its links came in.
//
// Vertices 0..n-1 are super nodes, n..n+nDummy-1 dummies. Steps:
// 1. order within each column: by value (descending, ties by id), then
//    barycentre sweeps (left to right, right to left, weighted by link value),
//    an order kept only when it has fewer weighted crossings (`crossings`);
// 2. one vertical scale `ky` for every column (the fullest column fills the height);
// 3. y positions with a fixed gap, then a few relaxation passes that move nodes
//    towards the centres of their neighbours, order and gaps kept;
// 4. link ends stacked on each node (outgoing on its right edge, incoming on its
//    left edge, in the order of the other end's y): incoming links fill the target;
// 5. ribbons: one filled path per edge, cubic Bezier curves through its dummies.

import { r2 } from "../dom.js";

const num = (v) => (Number.isFinite(v) && v > 0 ? Number(v) : 0);

/**
 * The graph in canonical form: links sorted by (source, target, edge, value),
 * so that every sum below runs in one order whatever the input's link order.
 *
 * @param {object} g `{n, nDummy, column, value, dummyColumn, linkSource, linkTarget, linkValue, linkEdge?}`
 * @returns {{N: number, n: number, col: Int32Array, val: Float64Array, columns: number,
 *   links: {index: number, source: number, target: number, value: number, edge: number}[]}}
 */
export function canonicalGraph(g) {
  const n = g.n | 0;
  const N = n + (g.nDummy | 0);
  const col = new Int32Array(N);
  for (let i = 0; i < n; i++) col[i] = Math.max(0, g.column[i] | 0);
  for (let j = 0; j < N - n; j++) col[n + j] = Math.max(0, g.dummyColumn[j] | 0);
  const links = [];
  const m = g.linkSource ? g.linkSource.length : 0;
  for (let i = 0; i < m; i++) {
    const source = g.linkSource[i] | 0;
    const target = g.linkTarget[i] | 0;
    if (source < 0 || source >= N || target < 0 || target >= N || source === target) continue;
    const edge = g.linkEdge ? g.linkEdge[i] | 0 : -1 - i;
    links.push({ index: i, source, target, value: num(g.linkValue[i]), edge });
  }
  links.sort((a, b) => a.source - b.source || a.target - b.target || a.edge - b.edge || a.value - b.value || a.index - b.index);
  // a dummy's value is what passes through it
  const val = new Float64Array(N);
  for (let i = 0; i < n; i++) val[i] = num(g.value[i]);
  const inD = new Float64Array(N);
  const outD = new Float64Array(N);
  for (const l of links) {
    outD[l.source] += l.value;
    inD[l.target] += l.value;
  }
  for (let v = n; v < N; v++) val[v] = Math.max(inD[v], outD[v]);
  let columns = Number.isInteger(g.columns) ? g.columns : 0;
  for (let v = 0; v < N; v++) columns = Math.max(columns, col[v] + 1);
  return { N, n, col, val, columns, links };
}

/**
 * First order of each column: by value, descending; ties by id.
 *
 * @returns {number[][]} vertex ids per column, top first
 */
export function initialOrder(cg) {
  const order = Array.from({ length: cg.columns }, () => []);
  for (let v = 0; v < cg.N; v++) order[cg.col[v]].push(v);
  for (const list of order) list.sort((a, b) => cg.val[b] - cg.val[a] || a - b);
  return order;
}

/** Position (index in its column) of every vertex. */
function positions(order, N) {
  const pos = new Int32Array(N);
  for (const list of order) list.forEach((v, k) => (pos[v] = k));
  return pos;
}

/**
 * Weighted crossings of an order: two links between the same pair of columns
 * cross when their ends are in opposite orders; the pair weighs the product of
 * their values (`weighted`), or 1. Links that share an end never cross.
 * O(m log m) (a Fenwick tree per pair of columns).
 *
 * @param {number[][]} order vertex ids per column
 * @param {{source: number, target: number, value: number}[]} links
 * @param {{col: Int32Array|number[], N?: number}} cg the column of each vertex
 * @param {boolean} [weighted=true]
 * @returns {number}
 */
export function crossings(order, links, cg, weighted = true) {
  const N = cg.N ?? cg.col.length;
  const pos = positions(order, N);
  const groups = new Map();
  for (const l of links) {
    const key = `${cg.col[l.source]},${cg.col[l.target]}`;
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(l);
  }
  let total = 0;
  const keys = [...groups.keys()].sort();
  for (const key of keys) {
    const ls = groups.get(key).slice();
    // rank the target positions
    const tpos = [...new Set(ls.map((l) => pos[l.target]))].sort((a, b) => a - b);
    const rank = new Map(tpos.map((p, k) => [p, k + 1]));
    const K = tpos.length;
    const tree = new Float64Array(K + 1);
    let inserted = 0;
    const add = (k, w) => {
      for (; k <= K; k += k & -k) tree[k] += w;
    };
    const upTo = (k) => {
      let s = 0;
      for (; k > 0; k -= k & -k) s += tree[k];
      return s;
    };
    ls.sort((a, b) => pos[a.source] - pos[b.source] || pos[a.target] - pos[b.target]);
    let i = 0;
    while (i < ls.length) {
      let j = i;
      while (j < ls.length && pos[ls[j].source] === pos[ls[i].source]) j++;
      // links of earlier sources whose target lies strictly below this one's
      for (let k = i; k < j; k++) {
        const w = weighted ? ls[k].value : 1;
        const r = rank.get(pos[ls[k].target]);
        total += w * (inserted - upTo(r));
      }
      for (let k = i; k < j; k++) {
        const w = weighted ? ls[k].value : 1;
        add(rank.get(pos[ls[k].target]), w);
        inserted += w;
      }
      i = j;
    }
  }
  return total;
}

/** One barycentre sweep (dir +1: left to right, -1: right to left) of a copy of `order`. */
function sweep(order, cg, adj, dir) {
  const out = order.map((l) => l.slice());
  const pos = positions(out, cg.N);
  const C = out.length;
  const cols = [];
  if (dir > 0) for (let c = 1; c < C; c++) cols.push(c);
  else for (let c = C - 2; c >= 0; c--) cols.push(c);
  for (const c of cols) {
    const ref = c - dir;
    const bary = new Map();
    for (const v of out[c]) {
      let sw = 0;
      let s = 0;
      let cnt = 0;
      let s1 = 0;
      for (const [u, w] of adj[v]) {
        if (cg.col[u] !== ref) continue;
        sw += w;
        s += w * pos[u];
        cnt += 1;
        s1 += pos[u];
      }
      bary.set(v, sw > 0 ? s / sw : cnt > 0 ? s1 / cnt : pos[v]);
    }
    out[c].sort((a, b) => bary.get(a) - bary.get(b) || pos[a] - pos[b] || a - b);
    out[c].forEach((v, k) => (pos[v] = k));
  }
  return out;
}

/**
 * Order the vertices within their columns to reduce weighted crossings.
 *
 * @param {object} cg from {@link canonicalGraph}
 * @param {number} [iterations=6] down-and-up sweep pairs
 * @returns {{order: number[][], crossings: number, initial: number}}
 */
export function orderColumns(cg, iterations = 6) {
  const adj = Array.from({ length: cg.N }, () => []);
  for (const l of cg.links) {
    adj[l.source].push([l.target, l.value]);
    adj[l.target].push([l.source, l.value]);
  }
  let best = initialOrder(cg);
  const initial = crossings(best, cg.links, cg);
  let bestC = initial;
  let cur = best;
  for (let it = 0; it < iterations && bestC > 0; it++) {
    for (const dir of [1, -1]) {
      cur = sweep(cur, cg, adj, dir);
      const c = crossings(cur, cg.links, cg);
      if (c < bestC) {
        best = cur;
        bestC = c;
      }
    }
  }
  return { order: best, crossings: bestC, initial };
}

/**
 * One vertical scale for all columns: the largest `ky` such that every column
 * (its values times ky, a minimum height for tiny nodes, gaps between nodes)
 * fits in `height`. 0 when nothing has a value.
 */
export function verticalScale(cg, order, height, gap, minHeight) {
  let ky = Infinity;
  for (const list of order) {
    let sum = 0;
    for (const v of list) sum += cg.val[v];
    if (sum > 0) ky = Math.min(ky, Math.max(0, height - gap * (list.length - 1)) / sum);
  }
  if (!Number.isFinite(ky)) return 0;
  // nodes below the minimum height take more room than their value: shrink until all fit
  for (let it = 0; it < 8; it++) {
    let next = ky;
    for (const list of order) {
      let big = 0;
      let small = 0;
      for (const v of list) {
        if (cg.val[v] * ky >= minHeight) big += cg.val[v];
        else small += 1;
      }
      if (big > 0) next = Math.min(next, Math.max(0, height - gap * (list.length - 1) - small * minHeight) / big);
    }
    if (next >= ky) break;
    ky = next;
  }
  return ky;
}

/**
 * Lay the graph out.
 *
 * @param {object} g the decoded graph (see {@link canonicalGraph})
 * @param {object} opts
 * @param {number} opts.height height of the tallest column
 * @param {number} [opts.gap=8] vertical gap between nodes
 * @param {number} [opts.minHeight=1] the least height a node is drawn with
 * @param {number|number[]} [opts.nodeWidth=20] width of each super node (or one for all)
 * @param {number} [opts.dummyWidth] width of a column that holds dummies only (default: nodeWidth when one number, else 20)
 * @param {number} [opts.columnGap=80] horizontal room between columns (links)
 * @param {number} [opts.iterations=6] crossing-reduction sweep pairs
 * @param {number} [opts.relax=6] relaxation passes (0: columns stacked from the top)
 * @returns {object} `{N, n, ky, height, width, columns, order, col, x0, x1, y0, y1, h,
 *   colX, colW, links, edges, crossings, initialCrossings}`; `links[i]` (canonical order)
 *   has `index` (in the input), `source`, `target`, `value`, `width`, `sy`, `ty` (top of
 *   the ribbon at either end); `edges` are `{edge, links, d}` (one ribbon path each).
 */
export function sankeyLayout(g, opts = {}) {
  const gap = opts.gap ?? 8;
  const minH = opts.minHeight ?? 1;
  const H = Math.max(0, opts.height ?? 400);
  const colGap = opts.columnGap ?? 80;
  const cg = canonicalGraph(g);
  const { N, n, col, val } = cg;
  const { order, crossings: cr, initial } = orderColumns(cg, opts.iterations ?? 6);
  const ky = verticalScale(cg, order, H, gap, minH);
  const h = new Float64Array(N);
  for (let v = 0; v < N; v++) h[v] = Math.max(minH, val[v] * ky);

  // x: columns as wide as their widest node
  const perNode = Array.isArray(opts.nodeWidth) || ArrayBuffer.isView(opts.nodeWidth);
  const nw = (v) => (perNode ? opts.nodeWidth[v] ?? 20 : opts.nodeWidth ?? 20);
  const C = cg.columns;
  const colW = new Float64Array(C);
  for (let v = 0; v < n; v++) colW[col[v]] = Math.max(colW[col[v]], nw(v));
  // a column of dummies only is as wide as a plain node
  const plain = opts.dummyWidth ?? (perNode ? 20 : nw(0));
  for (let c = 0; c < C; c++) if (colW[c] === 0) colW[c] = plain;
  const colX = new Float64Array(C);
  for (let c = 1; c < C; c++) colX[c] = colX[c - 1] + colW[c - 1] + colGap;
  const x0 = new Float64Array(N);
  const x1 = new Float64Array(N);
  for (let v = 0; v < N; v++) {
    x0[v] = colX[col[v]];
    x1[v] = x0[v] + (v < n ? nw(v) : colW[col[v]]);
  }

  // y: stacked with gaps, then relaxed towards the neighbours' centres
  const y0 = new Float64Array(N);
  for (const list of order) {
    let y = 0;
    for (const v of list) {
      y0[v] = y;
      y += h[v] + gap;
    }
  }
  const ins = Array.from({ length: N }, () => []);
  const outs = Array.from({ length: N }, () => []);
  cg.links.forEach((l, k) => {
    outs[l.source].push(k);
    ins[l.target].push(k);
  });
  const extent = Math.max(H, ...order.map((list) => list.reduce((s, v) => s + h[v], 0) + gap * Math.max(0, list.length - 1)));
  const resolve = (list) => {
    let y = 0;
    for (const v of list) {
      if (y0[v] < y) y0[v] = y;
      y = y0[v] + h[v] + gap;
    }
    let bottom = extent;
    for (let k = list.length - 1; k >= 0; k--) {
      const v = list[k];
      if (y0[v] + h[v] > bottom) y0[v] = bottom - h[v];
      bottom = y0[v] - gap;
    }
    y = 0;
    for (const v of list) {
      if (y0[v] < y) y0[v] = y;
      y = y0[v] + h[v] + gap;
    }
  };
  const relax = opts.relax ?? 6;
  for (let it = 0; it < relax; it++) {
    const alpha = 0.9 ** it;
    for (const dir of [1, -1]) {
      const cols = [];
      if (dir > 0) for (let c = 1; c < C; c++) cols.push(c);
      else for (let c = C - 2; c >= 0; c--) cols.push(c);
      for (const c of cols) {
        for (const v of order[c]) {
          let s = 0;
          let w = 0;
          for (const k of dir > 0 ? ins[v] : outs[v]) {
            const l = cg.links[k];
            const u = dir > 0 ? l.source : l.target;
            const wt = l.value + 1e-12;
            s += wt * (y0[u] + h[u] / 2);
            w += wt;
          }
          if (w > 0) y0[v] += (s / w - (y0[v] + h[v] / 2)) * alpha;
        }
        resolve(order[c]);
      }
    }
  }
  // the top of the figure at 0
  let top = Infinity;
  let bottom = 0;
  for (let v = 0; v < N; v++) top = Math.min(top, y0[v]);
  if (!Number.isFinite(top)) top = 0;
  for (let v = 0; v < N; v++) {
    y0[v] -= top;
    bottom = Math.max(bottom, y0[v] + h[v]);
  }
  const y1 = new Float64Array(N);
  for (let v = 0; v < N; v++) y1[v] = y0[v] + h[v];

  // link ends: stacked in the order of the other end's y
  const links = cg.links.map((l) => ({ ...l, width: l.value * ky, sy: 0, ty: 0 }));
  for (let v = 0; v < N; v++) {
    const o = outs[v].slice().sort((a, b) => y0[links[a].target] - y0[links[b].target] || links[a].target - links[b].target || a - b);
    let y = y0[v];
    for (const k of o) {
      links[k].sy = y;
      y += links[k].width;
    }
    const i = ins[v].slice().sort((a, b) => y0[links[a].source] - y0[links[b].source] || links[a].source - links[b].source || a - b);
    y = y0[v];
    for (const k of i) {
      links[k].ty = y;
      y += links[k].width;
    }
  }

  // one ribbon per edge, through its dummies
  const byEdge = new Map();
  links.forEach((l, k) => {
    if (!byEdge.has(l.edge)) byEdge.set(l.edge, []);
    byEdge.get(l.edge).push(k);
  });
  const edges = [];
  for (const edge of [...byEdge.keys()].sort((a, b) => a - b)) {
    const chain = byEdge.get(edge).sort((a, b) => col[links[a].source] - col[links[b].source] || a - b);
    edges.push({ edge, links: chain, d: ribbonPath(chain.map((k) => links[k]), x0, x1) });
  }
  let width = 0;
  for (let c = 0; c < C; c++) width = Math.max(width, colX[c] + colW[c]);
  return {
    N,
    n,
    ky,
    height: bottom,
    width,
    columns: C,
    order,
    col,
    val,
    x0,
    x1,
    y0,
    y1,
    h,
    colX,
    colW,
    links,
    edges,
    crossings: cr,
    initialCrossings: initial,
  };
}

/**
 * A ribbon (a filled path) along consecutive links: each a cubic Bezier from
 * its source's right edge to its target's left edge, straight across the
 * dummies between them.
 *
 * @param {{source: number, target: number, width: number, sy: number, ty: number}[]} chain
 * @param {ArrayLike<number>} x0 left edge of each vertex
 * @param {ArrayLike<number>} x1 right edge of each vertex
 * @returns {string} SVG path data
 */
export function ribbonPath(chain, x0, x1) {
  if (!chain.length) return "";
  const P = (x, y) => `${r2(x)},${r2(y)}`;
  const curve = (xa, ya, xb, yb) => {
    const xm = (xa + xb) / 2;
    return `C${P(xm, ya)} ${P(xm, yb)} ${P(xb, yb)}`;
  };
  const top = [];
  const first = chain[0];
  top.push(`M${P(x1[first.source], first.sy)}`);
  chain.forEach((l, k) => {
    top.push(curve(x1[l.source], l.sy, x0[l.target], l.ty));
    if (k < chain.length - 1) top.push(`L${P(x1[l.target], chain[k + 1].sy)}`);
  });
  const bottom = [];
  const last = chain[chain.length - 1];
  bottom.push(`L${P(x0[last.target], last.ty + last.width)}`);
  for (let k = chain.length - 1; k >= 0; k--) {
    const l = chain[k];
    bottom.push(curve(x0[l.target], l.ty + l.width, x1[l.source], l.sy + l.width));
    if (k > 0) bottom.push(`L${P(x0[l.source], chain[k - 1].ty + chain[k - 1].width)}`);
  }
  return `${top.join("")}${bottom.join("")}Z`;
}
