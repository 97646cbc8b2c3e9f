import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";

import {
  MISSING,
  canonicalUnit,
  formatMetric,
  formatPercent,
  formatRatio,
  formatValue,
  readColumn,
  toFixedExact,
  unitLabel,
} from "../../js/format.js";
import * as entry from "../../js/index.js";

const CASES = JSON.parse(readFileSync(new URL("./format_cases.json", import.meta.url), "utf8"));
/** "nan", "inf", "-inf" are strings in the JSON file. */
const caseValue = (v) => (typeof v === "string" ? Number(v.replace("inf", "Infinity")) : v);

describe("formatValue: the cases shared with Python (tests/js/format_cases.json)", () => {
  it("has the cases", () => {
    assert.ok(CASES.format_value.length >= 50);
    assert.ok(CASES.unit_label.length >= 10);
  });
  for (const [value, unit, expected] of CASES.format_value) {
    it(`${JSON.stringify(value)} ${JSON.stringify(unit)} -> ${expected}`, () => {
      assert.equal(formatValue(caseValue(value), unit), expected);
    });
  }
  for (const [metric, units, expected] of CASES.unit_label) {
    it(`unitLabel(${JSON.stringify(metric)}, ${JSON.stringify(units)}) -> ${expected}`, () => {
      assert.equal(unitLabel(metric, units), expected);
    });
  }
});

describe("formatValue: beyond the shared cases", () => {
  it("is the function formatMetric names too", () => {
    assert.equal(formatMetric, formatValue);
  });

  it("prints the issue's examples", () => {
    assert.equal(formatValue(1.317, "s"), "1.32 s");
    assert.equal(formatValue(75_300, "us"), "75.3 ms");
    assert.equal(formatValue(3_730_000, "bytes"), "3.73 MB");
    assert.equal(formatValue(2.1e9, "B/s"), "2.10 GB/s");
    assert.equal(formatValue(51.2e6), "51.2 M");
  });

  it("prints missing values as n/a and infinities as inf", () => {
    assert.equal(MISSING, "n/a");
    for (const unit of ["ns", "B", undefined, "calls"]) {
      assert.equal(formatValue(NaN, unit), "n/a");
      assert.equal(formatValue(null, unit), "n/a");
      assert.equal(formatValue(undefined, unit), "n/a");
    }
    assert.equal(formatValue(Infinity, "ms"), "inf");
    assert.equal(formatValue(-Infinity), "-inf");
  });

  it("rounds exact ties to even, as Python does (toFixed would not)", () => {
    assert.equal(toFixedExact(0.125, 2), "0.12");
    assert.equal(toFixedExact(0.375, 2), "0.38");
    assert.equal(toFixedExact(2.5, 0), "2");
    assert.equal(toFixedExact(3.5, 0), "4");
    assert.equal(toFixedExact(-2.5, 0), "-2");
    assert.equal(toFixedExact(1e21, 0), "1000000000000000000000");
    assert.equal(toFixedExact(0.1, 20), "0.10000000000000000555");
  });

  it("reads unit spellings", () => {
    assert.equal(canonicalUnit("usec"), "us");
    assert.equal(canonicalUnit(" Bytes "), "B");
    assert.equal(canonicalUnit(""), null);
    assert.equal(canonicalUnit(undefined), null);
    assert.equal(canonicalUnit("flop"), "flop");
    assert.equal(formatValue(2500, "\u03bcs"), "2.50 ms");
    assert.equal(formatValue(123_456n), "123 k");
  });

  it("formats ratios and shares", () => {
    assert.equal(formatRatio(2.345), "2.3\u00d7");
    assert.equal(formatRatio(64), "64\u00d7");
    assert.equal(formatRatio(NaN), "n/a");
    assert.equal(formatPercent(0.1234), "12.3%");
    assert.equal(formatPercent(1), "100%");
    assert.equal(formatPercent(0.0045), "0.45%");
    assert.equal(formatPercent(0.01), "1%");
    assert.equal(formatPercent(0.105), "10.5%");
    assert.equal(formatPercent(NaN), "n/a");
  });
});

describe("readColumn", () => {
  it("reads a float32 column from a DataView with a byteOffset", () => {
    const buf = new ArrayBuffer(32);
    const src = new Float32Array(buf, 8, 4);
    src.set([1.5, -2.25, 3.0e38, NaN]);
    const dv = new DataView(src.buffer, src.byteOffset, src.byteLength);
    assert.equal(dv.byteOffset, 8);

    const col = readColumn(dv, "float32", 4);
    assert.ok(col instanceof Float32Array);
    assert.equal(col.length, 4);
    assert.equal(col[0], 1.5);
    assert.equal(col[1], -2.25);
    assert.equal(col[2], Math.fround(3.0e38));
    assert.ok(Number.isNaN(col[3]));
  });

  it("returns a copy that does not alias the source buffer", () => {
    const src = new Float32Array([1, 2, 3]);
    const col = readColumn(new DataView(src.buffer), "float32", 3);
    src[0] = 99;
    assert.equal(col[0], 1);
    col[1] = -1;
    assert.equal(src[1], 2);
  });

  it("reads only `length` elements from a longer buffer", () => {
    const src = new Float32Array([10, 20, 30, 40, 50]);
    const col = readColumn(new DataView(src.buffer, 4), "float32", 2);
    assert.deepEqual(Array.from(col), [20, 30]);
  });

  it("defaults length to the number of whole elements in the view", () => {
    const src = new Float64Array([1.25, 2.5, 3.75]);
    // 25 bytes: three whole float64 plus one stray byte
    const bytes = new Uint8Array(25);
    bytes.set(new Uint8Array(src.buffer));
    const col = readColumn(new DataView(bytes.buffer), "float64");
    assert.deepEqual(Array.from(col), [1.25, 2.5, 3.75]);
  });

  it("reads float64 values at an unaligned byteOffset", () => {
    const values = [Math.PI, -1e-300, Number.MAX_VALUE];
    const buf = new ArrayBuffer(3 + 8 * values.length);
    const dv = new DataView(buf, 3);
    values.forEach((v, i) => dv.setFloat64(i * 8, v, true));
    const col = readColumn(dv, "float64", values.length);
    assert.ok(col instanceof Float64Array);
    assert.deepEqual(Array.from(col), values);
  });

  it("reads float32 values at an unaligned byteOffset (copied from a Float32Array)", () => {
    const src = new Float32Array([0.1, 1e-40, -7]);
    const buf = new ArrayBuffer(1 + src.byteLength);
    new Uint8Array(buf, 1).set(new Uint8Array(src.buffer));
    const col = readColumn(new DataView(buf, 1), "float32", 3);
    assert.deepEqual(Array.from(col), Array.from(src));
  });

  it("reads int32 values little-endian, including negatives and extremes", () => {
    const bytes = new Uint8Array([
      0x01, 0x00, 0x00, 0x00, // 1
      0xff, 0xff, 0xff, 0xff, // -1
      0x00, 0x00, 0x00, 0x80, // -2147483648
      0xff, 0xff, 0xff, 0x7f, // 2147483647
      0x00, 0x01, 0x00, 0x00, // 256 (would be 65536 if read big-endian)
    ]);
    const col = readColumn(new DataView(bytes.buffer), "int32", 5);
    assert.ok(col instanceof Int32Array);
    assert.deepEqual(Array.from(col), [1, -1, -2147483648, 2147483647, 256]);

    const shifted = new Uint8Array(2 + bytes.length);
    shifted.set(bytes, 2);
    const col2 = readColumn(new DataView(shifted.buffer, 2), "int32", 5);
    assert.deepEqual(Array.from(col2), [1, -1, -2147483648, 2147483647, 256]);
  });

  it("accepts numpy dtype strings and non-DataView buffers", () => {
    const src = new Int32Array([7, -8]);
    assert.deepEqual(Array.from(readColumn(new DataView(src.buffer), "<i4", 2)), [7, -8]);
    assert.deepEqual(Array.from(readColumn(src.buffer, "i4")), [7, -8]);
    assert.deepEqual(Array.from(readColumn(src, "int32")), [7, -8]);
    const f = new Float64Array([0.5]);
    assert.ok(readColumn(new DataView(f.buffer), "<f8", 1) instanceof Float64Array);
    assert.ok(readColumn(new DataView(new ArrayBuffer(4)), "f4", 1) instanceof Float32Array);
  });

  it("reads uint8 columns (flags) at any byteOffset", () => {
    const bytes = new Uint8Array([9, 1, 2, 255, 16]);
    const col = readColumn(new DataView(bytes.buffer, 1), "uint8", 4);
    assert.ok(col instanceof Uint8Array);
    assert.deepEqual(Array.from(col), [1, 2, 255, 16]);
    assert.deepEqual(Array.from(readColumn(bytes, "|u1")), [9, 1, 2, 255, 16]);
    bytes[1] = 7;
    assert.equal(col[0], 1, "a copy");
  });

  it("returns an empty array for length 0", () => {
    const col = readColumn(new DataView(new ArrayBuffer(0)), "float64", 0);
    assert.ok(col instanceof Float64Array);
    assert.equal(col.length, 0);
  });

  it("rejects lengths that do not fit the buffer", () => {
    const dv = new DataView(new ArrayBuffer(16), 4); // 12 bytes
    assert.deepEqual(Array.from(readColumn(dv, "float32", 3)), [0, 0, 0]);
    assert.throws(() => readColumn(dv, "float32", 4), RangeError);
    assert.throws(() => readColumn(dv, "float64", 2), RangeError);
    assert.throws(() => readColumn(dv, "float32", -1), RangeError);
    assert.throws(() => readColumn(dv, "float32", 1.5), RangeError);
  });

  it("rejects unknown dtypes and non-buffer inputs", () => {
    const dv = new DataView(new ArrayBuffer(8));
    assert.throws(() => readColumn(dv, "int64", 1), TypeError);
    assert.throws(() => readColumn(dv, "toString", 1), TypeError);
    assert.throws(() => readColumn([1, 2], "float32", 1), TypeError);
  });
});

describe("js/index.js entry", () => {
  it("re-exports the format helpers", () => {
    assert.equal(entry.formatMetric, formatMetric);
    assert.equal(entry.readColumn, readColumn);
    assert.equal(entry.MISSING, MISSING);
  });

  const bundleUrl = new URL("../../cctviz/static/cctviz.js", import.meta.url);
  it(
    "built bundle cctviz/static/cctviz.js loads as ESM and exports the helpers",
    { skip: existsSync(fileURLToPath(bundleUrl)) ? false : "bundle not built (run `npm run build`)" },
    async () => {
      const mod = await import(bundleUrl.href);
      assert.equal(typeof mod.formatMetric, "function");
      assert.equal(mod.formatValue(1536, "bytes"), "1.54 kB");
      assert.equal(mod.unitLabel("time (inc)", {}), "time (inc) [unit unknown]");
      const src = new Float32Array([4, 5]);
      assert.deepEqual(Array.from(mod.readColumn(new DataView(src.buffer), "float32", 2)), [4, 5]);
    },
  );
});
