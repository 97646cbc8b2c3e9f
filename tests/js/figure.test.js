// Figures: scene + draw on the minimal DOM, as the exporter and the live
// view's "Download SVG" run them. Golden files: tests/js/fixtures/*.json are
// payloads of real profiles made by scripts/js_fixtures.py (checked against
// Python in tests/test_js_fixtures.py); *.svg next to them are the expected
// figures. Set UPDATE_GOLDEN=1 to rewrite the SVGs after an intended change.
// Each payload names its view's `kind` ("cct" when absent, "sankey"...):
// renderSVG dispatches on it, so a Sankey fixture needs nothing more here.

import assert from "node:assert/strict";
import { readFileSync, readdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";

import { decodeData, decodeUTF8, FLAG_HIDDEN, FLAG_MATCH } from "../../js/cct/data.js";
import { drawCCT } from "../../js/cct/draw.js";
import { EXPORT_DEFAULTS, cctSVG, exportSettings } from "../../js/cct/figure.js";
import { localData } from "../../js/cct/local.js";
import { cctScene, tooltipLines } from "../../js/cct/scene.js";
import { serialize } from "../../js/dom.js";
import { renderSVG } from "../../js/export.js";
import { measureText } from "../../js/measure.js";
import { ShimDocument, shimContainer } from "../../js/shim.js";

const HERE = dirname(fileURLToPath(import.meta.url));
const FIXTURES = join(HERE, "fixtures");
const JS = join(HERE, "..", "..", "js");

/** A `_data` with plain arrays from rows {id, parent, name, time, flags?} in pre-order. */
function tiny(rows, extra = {}) {
  const n = rows.length;
  return {
    n,
    total: n,
    id: rows.map((r) => r.id),
    parent: rows.map((r) => r.parent),
    depth: rows.map(() => 0),
    flags: rows.map((r) => r.flags ?? (rows.some((c) => c.parent === rows.indexOf(r)) ? 1 : 0)),
    folded: rows.map(() => 0),
    names: rows.map((r) => r.name),
    color: rows.map((r) => r.time),
    size: rows.map((r) => r.time),
    units: { "time (inc)": "s" },
    aggregation: { "time (inc)": "sum" },
    ...extra,
  };
}

const TREE = tiny([
  { id: 0, parent: -1, name: "main", time: 10 },
  { id: 1, parent: 0, name: "solve", time: 7 },
  { id: 2, parent: 1, name: "MPI_Allreduce", time: 4 },
  { id: 3, parent: 0, name: "io <&> \"x\"", time: 2 },
]);
const STATE = { chart: "tree", color: "time (inc)", size: "time (inc)", selection: [1] };

/** The same columns as DataViews at odd offsets (as ipywidgets delivers them in the browser). */
function asBuffers(data) {
  const out = { ...data };
  const put = (arr, Ctor) => {
    const typed = Ctor.from(arr, (v) => (v === null ? NaN : v));
    const bytes = new Uint8Array(typed.buffer);
    const buf = new ArrayBuffer(bytes.length + 1);
    new Uint8Array(buf, 1).set(bytes);
    return new DataView(buf, 1, bytes.length);
  };
  for (const k of ["id", "parent", "depth", "folded"]) out[k] = put(data[k], Int32Array);
  out.flags = put(data.flags, Uint8Array);
  for (const k of ["color", "size"]) out[k] = put(data[k], Float32Array);
  const enc = new TextEncoder();
  const parts = data.names.map((s) => enc.encode(s));
  const offsets = [0];
  for (const p of parts) offsets.push(offsets.at(-1) + p.length);
  const bytes = new Uint8Array(offsets.at(-1));
  parts.forEach((p, i) => bytes.set(p, offsets[i]));
  out.name_bytes = new DataView(bytes.buffer);
  out.name_offsets = put(offsets, Int32Array);
  delete out.names;
  return out;
}

describe("figure: SVG of a view's state", () => {
  it("keeps untrusted names as text, escaped, with no script or foreignObject", () => {
    const svg = cctSVG(TREE, STATE);
    assert.ok(svg.includes(">io &lt;&amp;&gt; \"x\"</text>"));
    assert.ok(!/<script|<foreignObject/i.test(svg));
    assert.match(svg, /<svg xmlns="http:\/\/www.w3.org\/2000\/svg" class="cctviz-fig cctviz-export-light" width="[\d.]+pt" height="[\d.]+pt"/);
    assert.ok(svg.includes("font-family=\"'Cctviz Sans', 'Liberation Sans', Arial, Helvetica, sans-serif\""));
  });

  it("is deterministic, and the browser's buffers give the exporter's bytes", () => {
    const a = cctSVG(TREE, STATE);
    assert.equal(cctSVG(TREE, STATE), a);
    assert.equal(cctSVG(asBuffers(TREE), STATE), a, "Download SVG (DataViews) == save() (arrays)");
    assert.equal(renderSVG(JSON.stringify({ kind: "cct", data: TREE, state: STATE, options: {} })), a);
  });

  it("draws the selection highlight only when asked", () => {
    const on = cctSVG(TREE, STATE);
    const off = cctSVG(TREE, STATE, { highlight: false });
    assert.match(on, /class="cctviz-node selected"[^>]*data-id="1"/);
    assert.ok(!off.includes("cctviz-node selected"));
  });

  it("fits an asked width in pt at the font size asked: never scaled, levels folded", () => {
    const natural = cctScene(decodeData(TREE), exportSettings(STATE, { fontSize: 10 }));
    const w = Math.floor(natural.width / 2);
    const s = cctScene(decodeData(TREE), exportSettings(STATE, { fontSize: 10, width: w }));
    assert.equal(s.scale, 1);
    assert.equal(s.frame.width, `${w}pt`);
    const [, , vw] = s.frame.viewBox.split(" ").map(Number);
    assert.equal(vw, w); // one figure unit is one point: the text is 10 pt on the page
    assert.ok(s.geom.width <= w, `content ${s.geom.width} in ${w}`);
    // what did not fit is said under the figure and in the root's data-folded
    if (s.geom.shownLevels < Infinity) assert.match(s.notes.join(" "), /deeper level/);
    const svg = cctSVG(TREE, STATE, { fontSize: 10, width: w });
    assert.equal(svg.includes("data-folded="), s.notes.length > 0);
    // wider than the content: the figure is as wide as asked, at scale 1
    const wide = cctScene(decodeData(TREE), exportSettings(STATE, { width: natural.width * 2 }));
    assert.equal(wide.scale, 1);
    assert.equal(wide.frame.width, `${Math.round(natural.width * 200) / 100}pt`);
  });

  it("lays labels out with the font table: a label's room is its measured width", () => {
    const s = cctScene(decodeData(TREE), exportSettings(STATE, { fontSize: 10 }));
    // the link from "solve" leaves after its label: x + r + gap + width(label) + 4
    const g = s.geom;
    const row = 1;
    const expected = g.x[row] + 0;
    assert.ok(g.linkStart[row] > expected + measureText("solve", 10));
  });

  it("says so when a metric has a single value instead of '0 B | 0 B'", () => {
    const data = { ...TREE, color2: [0, 0, 0, 0], units: { "time (inc)": "s", "bytes (inc)": "B" } };
    const svg = cctSVG(data, { ...STATE, color: ["time (inc)", "bytes (inc)"] });
    assert.ok(svg.includes("all 0 B (no spread)"), svg.slice(0, 200));
    assert.ok(!svg.includes("0 B | 0 B"));
  });

  it("colours the icicle by the exclusive part when the colour metric is also the height", () => {
    const data = { ...TREE, exclusive: [1, 3, 4, 2], exclusive_metric: "time", units: { "time (inc)": "s", time: "s" } };
    const svg = cctSVG(data, { ...STATE, chart: "icicle" });
    assert.ok(svg.includes("Colour: time ("), "legend names the exclusive metric");
    assert.ok(!svg.includes("Colour: time (inc)"));
    assert.ok(svg.includes("exclusive part; the height shows the inclusive value"));
    const tree = cctSVG(data, STATE);
    assert.ok(tree.includes("Colour: time (inc)"));
  });

  it("names metrics without the recorded unit over values that carry their own", () => {
    // the ticks say "1 s", "4 s": a "[ms]" recorded unit over them misled (issue 20)
    const data = { ...TREE, units: { "time (inc)": "ms", time: "ms" } };
    const svg = cctSVG(data, STATE);
    assert.ok(!svg.includes("[ms]"), "no recorded unit in the legend");
    assert.match(svg, /Colour: time \(inc\)/);
    // no unit known for a time metric: said
    const bare = cctSVG({ ...TREE, units: {} }, STATE);
    assert.ok(bare.includes("[unit unknown]"));
  });

  it("adds title and drops legends on request", () => {
    const svg = cctSVG(TREE, STATE, { title: "Figure 3", legends: false });
    assert.ok(svg.includes(">Figure 3</text>"));
    assert.ok(!svg.includes("cctviz-legend\""));
    assert.ok(!cctSVG(TREE, STATE, { background: "transparent" }).includes("cctviz-bg"));
  });

  it("has export defaults that a missing or null option takes", () => {
    assert.equal(cctSVG(TREE, STATE, { fontSize: null, width: undefined }), cctSVG(TREE, STATE));
    assert.equal(exportSettings(STATE, {}).fontSize, EXPORT_DEFAULTS.fontSize);
  });
});

describe("draw: only parent.ownerDocument", () => {
  it("builds the same SVG in any document", () => {
    const scene = cctScene(decodeData(TREE), exportSettings(STATE));
    const a = serialize(drawCCT(shimContainer(), scene));
    const b = serialize(drawCCT(new ShimDocument().createElement("div"), scene));
    assert.equal(a, b);
  });

  it("uses no window, global document, measuring, listeners, timers or transitions", () => {
    const files = ["cct/draw.js", "cct/scene.js", "cct/figure.js", "kit/style.js", "kit/color.js", "dom.js", "shim.js", "measure.js", "scene-kit.js", "paper.js"];
    files.push(...["layout.js", "scene.js", "draw.js", "figure.js", "style.js", "data.js"].map((f) => `sankey/${f}`));
    files.push(...["data.js", "scene.js", "draw.js", "figure.js", "style.js"].map((f) => `profiles/${f}`), "axis.js");
    for (const f of files) {
      const src = readFileSync(join(JS, f), "utf8").replace(/\/\/.*$/gm, "").replace(/\/\*[\s\S]*?\*\//g, "");
      for (const bad of ["window", "document.", "getBBox", "getComputedTextLength", "addEventListener", "setTimeout", "requestAnimationFrame", "transition(", "Math.random", "Date.now"]) {
        assert.ok(!src.includes(bad), `${f} uses ${bad}`);
      }
    }
  });
});

describe("tooltip lines", () => {
  it("give the exclusive value and the shares of parent and total", () => {
    const data = decodeData({ ...TREE, exclusive: [1, 3, 4, 2], exclusive_metric: "time", units: { "time (inc)": "s", time: "s" }, color_total: 10 });
    const lines = tooltipLines(data, STATE, 1).map((l) => l.text);
    assert.deepEqual(lines.slice(0, 4), ["main \u203a solve", "time (inc): 7.00 s", "time (exclusive): 3.00 s (42.9% of inclusive)", "70% of parent, 70% of total"]);
  });
});

describe("standalone page rows (no kernel)", () => {
  const full = decodeData(TREE);
  it("collapsing hides the descendants and marks the node", () => {
    const d = decodeData(localData(full, TREE, { collapsed: [1] }));
    assert.deepEqual(Array.from(d.id), [0, 1, 3]);
    assert.ok(d.flags[1] & FLAG_HIDDEN);
    const back = decodeData(localData(full, TREE, { collapsed: [1], expanded: [1] }));
    assert.deepEqual(Array.from(back.id), [0, 1, 2, 3]);
  });
  it("focus re-roots and search counts every match", () => {
    const d = decodeData(localData(full, TREE, { focus: 1, search: "m" }));
    assert.deepEqual(Array.from(d.id), [1, 2]);
    assert.deepEqual(Array.from(d.depth), [0, 1]);
    assert.deepEqual(d.focusPath, ["main"]);
    assert.equal(d.matchTotal, 2); // main, MPI_Allreduce (the whole page's rows)
    assert.ok(d.flags[1] & FLAG_MATCH);
  });
});

describe("UTF-8 without TextDecoder (the exporter's V8)", () => {
  it("decodes like TextDecoder, invalid bytes included", () => {
    const dec = new TextDecoder();
    let seed = 7;
    const rand = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
    const pool = [0x61, 0x80, 0xbf, 0xc2, 0xc3, 0xe0, 0xe2, 0xed, 0xf0, 0xf4, 0xff, 0xa0, 0x9f, 0x90, 0x82, 0xac];
    for (let t = 0; t < 5000; t++) {
      const b = Uint8Array.from({ length: 1 + Math.floor(rand() * 8) }, () => pool[Math.floor(rand() * pool.length)]);
      assert.equal(decodeUTF8(b), dec.decode(b), `bytes ${Array.from(b)}`);
    }
  });
});

describe("golden figures of real profiles", () => {
  const files = readdirSync(FIXTURES).filter((f) => f.endsWith(".json"));
  it("has fixtures", () => assert.ok(files.length >= 3, `fixtures: ${files}`));
  for (const f of files) {
    it(`renders ${f} as checked in`, () => {
      const payload = JSON.parse(readFileSync(join(FIXTURES, f), "utf8"));
      const svg = renderSVG(JSON.stringify(payload));
      const golden = join(FIXTURES, f.replace(/\.json$/, ".svg"));
      if (process.env.UPDATE_GOLDEN) writeFileSync(golden, svg);
      assert.equal(svg, readFileSync(golden, "utf8"));
      // a text's whole content, lines (tspans) joined: a name may be set on two lines
      // (a collapsed node's "+N" left out)
      const texts = new Set(
        [...svg.matchAll(/<text\b[^>]*>(.*?)<\/text>/g)].map((m) => m[1].replace(/<tspan class="cctviz-more">.*?<\/tspan>/g, "").replace(/<[^>]*>/g, "")),
      );
      for (const name of payload.expect_labels || []) assert.ok(texts.has(name), `label ${name}`);
    });
  }
});
