import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { ASCENT, DESCENT, FAMILY, UNITS_PER_EM, WIDTHS } from "../../js/font-metrics.js";
import { ELLIPSIS, FONT_FAMILY, TABLE_MEASURE, distinctCutter, measureText, truncateToWidth } from "../../js/measure.js";

/** The table decoded the plain way (independent of measure.js's decoder). */
function table(weight) {
  const map = new Map();
  for (const [first, digits] of WIDTHS[weight]) {
    assert.equal(digits.length % 3, 0);
    for (let i = 0; i < digits.length / 3; i++) {
      map.set(first + i, Number.parseInt(digits.slice(3 * i, 3 * i + 3), 36));
    }
  }
  return map;
}
const REGULAR = table("400");
const BOLD = table("700");

/** Sum of the table's widths, every code point of `text` in the table. */
function tableWidth(text, size, map) {
  let units = 0;
  for (const ch of text) {
    assert.ok(map.has(ch.codePointAt(0)), `U+${ch.codePointAt(0).toString(16)} in the table`);
    units += map.get(ch.codePointAt(0));
  }
  return (units * size) / UNITS_PER_EM;
}

describe("font-metrics.js", () => {
  it("has the font's constants", () => {
    assert.equal(UNITS_PER_EM, 2048);
    assert.ok(ASCENT > 0 && DESCENT > 0 && ASCENT + DESCENT > UNITS_PER_EM);
    assert.equal(FAMILY, "Cctviz Sans");
    assert.ok(FONT_FAMILY.startsWith(`'${FAMILY}', `));
    assert.ok(FONT_FAMILY.endsWith("sans-serif"));
  });

  it("covers printable ASCII and the Latin-1 letters in both weights, same code points", () => {
    for (let cp = 0x20; cp <= 0x7e; cp++) assert.ok(REGULAR.has(cp) && BOLD.has(cp), cp);
    for (let cp = 0xc0; cp <= 0xff; cp++) assert.ok(REGULAR.has(cp) && BOLD.has(cp), cp);
    assert.deepEqual([...REGULAR.keys()], [...BOLD.keys()]);
  });

  it("has Arial's metrics (Liberation Sans is metric-compatible)", () => {
    // Arial: digits 1139, space 569, "W" 1933, "i" 455 (units of 2048)
    for (const d of "0123456789") assert.equal(REGULAR.get(d.codePointAt(0)), 1139);
    assert.equal(REGULAR.get(0x20), 569);
    assert.equal(REGULAR.get(0x57), 1933);
    assert.equal(REGULAR.get(0x69), 455);
  });
});

describe("measureText", () => {
  const strings = [
    "Hello, world",
    "torch.nn.modules.linear.Linear.forward",
    "MPI_Allreduce",
    "Größe über Ähnlichkeit",
    "naïve façade — déjà vu",
    "ΣΔ μs 12.5 × 3 − 1 → 2 … ›",
    "",
  ];
  for (const s of strings) {
    it(`${JSON.stringify(s)} is the sum of the table's widths`, () => {
      assert.equal(measureText(s, 12), tableWidth(s, 12, REGULAR));
      assert.equal(measureText(s, 10, 700), tableWidth(s, 10, BOLD));
      assert.equal(measureText(s, 9.5, "bold"), tableWidth(s, 9.5, BOLD));
    });
  }

  it("scales with the font size", () => {
    assert.equal(measureText("abc", 24), 2 * measureText("abc", 12));
    assert.equal(measureText("abc", 0), 0);
  });

  it("uses the Bold table from weight 600 on", () => {
    const s = "Bold is wider than Regular";
    assert.ok(measureText(s, 12, 700) > measureText(s, 12, 400));
    assert.equal(measureText(s, 12, 600), measureText(s, 12, 700));
    assert.equal(measureText(s, 12, "700"), measureText(s, 12, 700));
    assert.equal(measureText(s, 12, 500), measureText(s, 12, 400));
    assert.equal(measureText(s, 12, "normal"), measureText(s, 12, 400));
  });

  it("counts East Asian wide characters 1 em", () => {
    assert.equal(measureText("漢字", 10), 20);
    assert.equal(measureText("カタカナ", 10, 700), 40);
    assert.equal(measureText("한국어", 12), 36);
    assert.equal(measureText("ＡＢ", 12), 24); // fullwidth forms
    assert.equal(measureText("x漢", 10), tableWidth("x", 10, REGULAR) + 10);
  });

  it("errs wide on other code points the font lacks", () => {
    const w = tableWidth("W", 10, REGULAR);
    assert.equal(measureText("Ж", 10), w); // Cyrillic: the width of "W"
    assert.ok(measureText("Жук", 10) >= measureText("Wuk", 10));
    assert.equal(measureText("\u221d", 10), 10); // ∝: the font lacks it
    assert.equal(measureText("\u2603", 10), 12.5); // emoji: 1.25 em
  });

  it("counts invisible format characters 0", () => {
    assert.equal(measureText("a\u200db\ufe0f\ufeff", 10), tableWidth("ab", 10, REGULAR));
  });

  it("iterates code points: a surrogate pair is one character", () => {
    assert.equal(measureText("😀", 10), 12.5); // U+1F600, one emoji, not two halves
    assert.equal(measureText("𝐀", 10), 10); // U+1D400 (1 em) from U+1100 on
    assert.equal(measureText("a😀b", 10), tableWidth("ab", 10, REGULAR) + 12.5);
    // a lone surrogate is one code point the font lacks (U+D800-U+DFFF: 1 em)
    assert.equal(measureText("\ud83d", 10), 10);
    assert.equal(measureText("\ude00x", 10), 10 + tableWidth("x", 10, REGULAR));
  });

  it("is deterministic and accepts non-strings", () => {
    assert.equal(measureText(12345, 10), measureText("12345", 10));
    assert.equal(measureText("abc", 11), measureText("abc", 11));
  });
});

describe("truncateToWidth", () => {
  const texts = [
    "torch.nn.modules.linear.Linear.forward",
    "Größe über Ähnlichkeit",
    "a😀b😀c😀d😀e😀f",
    "漢字かなカナ",
    "iiiiiiiiiiWWWWWWWWWW",
  ];

  it("returns the text when it fits", () => {
    const s = texts[0];
    assert.equal(truncateToWidth(s, measureText(s, 12), 12), s);
    assert.equal(truncateToWidth(s, 1e9, 12, 700), s);
    assert.equal(truncateToWidth("", 0, 12), "");
  });

  it("returns '' when not even the ellipsis fits", () => {
    const e = measureText(ELLIPSIS, 12);
    assert.equal(truncateToWidth("abc", e - 1e-9, 12), "");
    assert.equal(truncateToWidth("abc", -1, 12), "");
    assert.equal(truncateToWidth("abc", Number.NaN, 12), "");
    assert.equal(truncateToWidth("WWW", e, 12), ELLIPSIS);
  });

  for (const weight of [400, 700]) {
    for (const s of texts) {
      it(`fits and is maximal: ${JSON.stringify(s)} weight ${weight}`, () => {
        const cps = [...s];
        const full = measureText(s, 11, weight);
        for (let max = 0; max <= full + 2; max += 0.37) {
          const out = truncateToWidth(s, max, 11, weight);
          assert.ok(measureText(out, 11, weight) <= max, `${JSON.stringify(out)} fits ${max}`);
          if (out === s) {
            assert.ok(full <= max);
            continue;
          }
          assert.ok(full > max);
          if (out === "") {
            assert.ok(measureText(ELLIPSIS, 11, weight) > max);
            continue;
          }
          assert.ok(out.endsWith(ELLIPSIS));
          const prefix = [...out.slice(0, -1)];
          assert.deepEqual(prefix, cps.slice(0, prefix.length), "a prefix of whole code points");
          const longer = cps.slice(0, prefix.length + 1).join("") + ELLIPSIS;
          assert.ok(measureText(longer, 11, weight) > max, `${JSON.stringify(longer)} too wide`);
        }
      });
    }
  }

  it("never splits a surrogate pair", () => {
    const s = "😀😀😀😀";
    for (let max = 0; max < measureText(s, 10); max += 0.5) {
      const out = truncateToWidth(s, max, 10);
      assert.ok(!/[\ud800-\udbff](?![\udc00-\udfff])/.test(out), JSON.stringify(out));
    }
    assert.equal(truncateToWidth(s, 12.5 + 10, 10), `😀${ELLIPSIS}`); // "…" is 1 em
  });
});

describe("distinctCutter: different names never read alike", () => {
  const names = ["CalcMonotonicQGradientsForElems", "CalcMonotonicQRegionForElems", "LagrangeLeapFrog", "LagrangeNodal", "LagrangeElements", "main"];
  const cut = distinctCutter(names, TABLE_MEASURE, 10);

  it("keeps names that fit and cuts the others apart, at any width", () => {
    assert.equal(cut("main", 200), "main");
    for (const w of [30, 40, 55, 70, 90, 120]) {
      const labels = names.map((n) => cut(n, w));
      const shown = labels.filter((l) => l);
      assert.equal(new Set(shown).size, shown.length, `width ${w}: ${labels.join(" | ")}`);
      for (const l of shown) assert.ok(TABLE_MEASURE.text(l, 10) <= w + 1e-9, `${l} fits ${w}`);
    }
    // where it differs is what shows: the Q-gradients and the Q-region
    const [a, b] = [cut(names[0], 70), cut(names[1], 70)];
    assert.ok(a.includes("Gr") && b.includes("Re"), `${a} / ${b}`);
  });

  it("cuts at the end when that already tells names apart, and the same name alike", () => {
    const c = distinctCutter(["alpha_long_name", "beta_long_name", "alpha_long_name"], TABLE_MEASURE, 10);
    assert.equal(c("alpha_long_name", 40), TABLE_MEASURE.truncate("alpha_long_name", 40, 10));
  });
});
