// ProfilesView figure: pure scene (determinism, axes, hit test), draw on the
// minimal DOM, the exporter's entry, untrusted labels.

import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { axisUnit, linearAxis } from "../../js/axis.js";
import { serialize } from "../../js/dom.js";
import { renderSVG } from "../../js/export.js";
import { decodeProfiles } from "../../js/profiles/data.js";
import { drawProfiles } from "../../js/profiles/draw.js";
import { profilesExportSettings, profilesSVG } from "../../js/profiles/figure.js";
import { CATEGORY_COLORS, OTHER_COLOR, colorEncoding, dotLabel, profilesInRect, profilesScene, tooltipLines } from "../../js/profiles/scene.js";
import { ShimDocument, shimContainer } from "../../js/shim.js";

const EVIL = "<img src=x onerror=alert(1)>";

const DATA = {
  n: 5,
  id: [0, 1, 2, 4, 5],
  x: [0.001, 0.002, 0.0035, -0.001, 0.0],
  y: [10, 20, 30, 40, null],
  label: ["rank 0", EVIL, "rank 2", "rank 4", "rank 5"],
  x_name: "PC1 of time (inc)",
  x_unit: "s",
  x_note: "61.0% of variance",
  x_label: "PC1 of time (inc) [s] (61.0% of variance)",
  y_name: "bytes (inc)",
  y_unit: "B",
  y_note: "",
  color_kind: "category",
  category: [0, 1, 0, 1, -1],
  categories: ["run a", "run b"],
  color_label: "run",
  dead: ["rank 3"],
  explained: [0.61, 0.2],
  profiles_total: 6,
  numeric: ["rank", "time (inc)"],
};

const settings = (extra = {}) => ({ ...profilesExportSettings({ selected_profiles: [2] }, {}), ...extra });

describe("profiles scene", () => {
  it("is deterministic: the same data and state give the same SVG bytes", () => {
    const a = profilesSVG(DATA, { selected_profiles: [2] }, { width: 300 });
    const b = profilesSVG(structuredClone(DATA), { selected_profiles: [2] }, { width: 300 });
    assert.equal(a, b);
    assert.ok(a.startsWith("<?xml"));
    assert.equal(renderSVG(JSON.stringify({ kind: "profiles", data: DATA, state: { selected_profiles: [2] }, options: { width: 300 } })), a);
  });

  it("builds the same SVG in any document", () => {
    const scene = profilesScene(decodeProfiles(DATA), settings());
    assert.equal(serialize(drawProfiles(shimContainer(), scene)), serialize(drawProfiles(new ShimDocument().createElement("div"), scene)));
  });

  it("draws one dot per profile with a position, with the DOM contract", () => {
    const svg = profilesSVG(DATA, { selected_profiles: [2] });
    const dots = [...svg.matchAll(/<circle class="cctviz-dot[^"]*"[^>]*>/g)].map((m) => m[0]);
    assert.equal(dots.length, 4); // rank 5 has no y value
    assert.ok(svg.includes("1 profile without a value on an axis"));
    assert.ok(svg.includes("Not shown, no data: rank 3"));
    const sel = dots.filter((d) => d.includes('aria-selected="true"'));
    assert.equal(sel.length, 1);
    assert.ok(sel[0].includes('data-profile="2"') && sel[0].includes("cctviz-dot selected"));
    assert.ok(dots.filter((d) => d.includes(" dim")).length === 3);
    assert.ok(dots[0].includes('aria-label="rank 0, PC1 of time (inc) 1.00 ms, bytes (inc) 10 B, run run a"'));
    // the selection is drawn last (on top)
    assert.ok(dots.at(-1).includes('data-profile="2"'));
  });

  it("escapes untrusted labels", () => {
    const svg = profilesSVG(DATA, {});
    assert.ok(!svg.includes("<img"));
    assert.ok(svg.includes("&lt;img src=x onerror=alert(1)&gt;"));
    const d = decodeProfiles(DATA);
    assert.ok(dotLabel(d, 1).startsWith(EVIL));
    assert.equal(tooltipLines(d, 1)[0].text, EVIL);
  });

  it("labels the axes with one unit each and the projection's share of variance", () => {
    const svg = profilesSVG(DATA, {});
    assert.ok(svg.includes("PC1 of time (inc) [ms] \u00b7 61.0% of variance"));
    assert.ok(svg.includes(">bytes (inc) [B]<"));
    const d = decodeProfiles(DATA);
    const scene = profilesScene(d, settings());
    const xt = scene.axisX.ticks.map((t) => t.text);
    assert.deepEqual(xt, ["-1", "0", "1", "2", "3"]);
    for (const t of scene.axisX.ticks) assert.ok(t.pos >= scene.plot.x - 1e-9 && t.pos <= scene.plot.x + scene.plot.w + 1e-9);
    // ticks increase along x, decrease (upwards) along y
    const yp = scene.axisY.ticks.map((t) => t.pos);
    assert.ok(yp.every((p, i) => i === 0 || p < yp[i - 1]));
  });

  it("legend: categories with counts, past the palette grouped", () => {
    const svg = profilesSVG(DATA, {});
    assert.ok(svg.includes(">run a<") && svg.includes(">(2)<") && svg.includes(">n/a<"));
    const many = { ...DATA, n: 10, id: [...Array(10).keys()], x: [...Array(10).keys()], y: [...Array(10).keys()], label: [...Array(10).keys()].map(String), category: [...Array(10).keys()], categories: [...Array(10).keys()].map((i) => `c${i}`) };
    const enc = colorEncoding(decodeProfiles(many));
    assert.equal(enc.fill(0), CATEGORY_COLORS[0]);
    assert.equal(enc.fill(9), OTHER_COLOR);
    assert.ok(profilesSVG(many, {}).includes(">2 more<"));
    const numeric = { ...DATA, color_kind: "numeric", color: [1, 2, 3, 4, 5], color_label: "time (inc)", color_unit: "s" };
    const ns = profilesSVG(numeric, {});
    assert.ok(ns.includes(">1.00 s<") && ns.includes(">5.00 s<"));
  });

  it("empty data draws a note, no dots", () => {
    const svg = profilesSVG({ n: 0 }, {});
    assert.ok(svg.includes("No profiles to show") && !svg.includes("<circle class=\"cctviz-dot"));
  });
});

describe("brush hit test", () => {
  it("selects the ids of the dots inside the rectangle, either corner order", () => {
    const pts = { id: [7, 8, 9, 10], x: [0, 5, 10, NaN], y: [0, 5, 10, 5] };
    assert.deepEqual(profilesInRect(pts, { x0: -1, y0: -1, x1: 6, y1: 6 }), [7, 8]);
    assert.deepEqual(profilesInRect(pts, { x0: 11, y0: 11, x1: 4, y1: 4 }), [8, 9]);
    assert.deepEqual(profilesInRect(pts, { x0: 1, y0: 1, x1: 2, y1: 2 }), []);
  });

  it("agrees with the drawn positions", () => {
    const scene = profilesScene(decodeProfiles(DATA), settings());
    const i = scene.points.id.indexOf(2);
    const [x, y] = [scene.points.x[i], scene.points.y[i]];
    assert.deepEqual(profilesInRect(scene.points, { x0: x - 1, y0: y - 1, x1: x + 1, y1: y + 1 }), [2]);
    const dot = scene.dots.find((p) => p.attrs["data-profile"] === "2");
    assert.equal(Number(dot.attrs.cx), Math.round(x * 100) / 100);
  });
});

describe("axis", () => {
  it("picks one unit for the whole axis", () => {
    assert.deepEqual(axisUnit(0.0753, "s"), { factor: 1000, unit: "ms" });
    assert.deepEqual(axisUnit(3.7e6, "B"), { factor: 1e-6, unit: "MB" });
    assert.deepEqual(axisUnit(5e6, null), { factor: 1e-6, unit: "M" });
    assert.deepEqual(axisUnit(12, null), { factor: 1, unit: "" });
  });

  it("handles a constant and an empty column", () => {
    const a = linearAxis([3, 3], [100, 0]);
    assert.ok(a.domain[0] < 3 && a.domain[1] > 3 && a.ticks.length > 1);
    const e = linearAxis([NaN], [0, 100]);
    assert.deepEqual(e.domain, [-0.04, 1.04]);
  });
});
