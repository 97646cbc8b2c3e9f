import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";

import { MISSING, formatMetric, readColumn } from "../../js/format.js";
import * as entry from "../../js/index.js";

describe("formatMetric: time units", () => {
  it("keeps small values in their own unit with 3 significant digits", () => {
    assert.equal(formatMetric(1, "ns"), "1.00 ns");
    assert.equal(formatMetric(12.34, "ns"), "12.3 ns");
    assert.equal(formatMetric(999, "ns"), "999 ns");
    assert.equal(formatMetric(0.5, "ns"), "0.500 ns");
  });

  it("scales up through us, ms and s", () => {
    assert.equal(formatMetric(1000, "ns"), "1.00 us");
    assert.equal(formatMetric(1500, "us"), "1.50 ms");
    assert.equal(formatMetric(2_500_000, "ns"), "2.50 ms");
    assert.equal(formatMetric(1234, "ms"), "1.23 s");
    assert.equal(formatMetric(42, "s"), "42.0 s");
  });

  it("scales down from larger input units", () => {
    assert.equal(formatMetric(0.001, "s"), "1.00 ms");
    assert.equal(formatMetric(0.0025, "ms"), "2.50 us");
    assert.equal(formatMetric(1e-9, "s"), "1.00 ns");
  });

  it("moves to the next unit when rounding reaches 1000", () => {
    assert.equal(formatMetric(999.4, "ns"), "999 ns");
    assert.equal(formatMetric(999.7, "ns"), "1.00 us");
    assert.equal(formatMetric(999_999, "us"), "1.00 s");
  });

  it("stays in seconds beyond 1000 s", () => {
    assert.equal(formatMetric(3600, "s"), "3600 s");
  });

  it("accepts the micro sign and Greek mu as aliases of us", () => {
    assert.equal(formatMetric(2500, "\u00b5s"), "2.50 ms");
    assert.equal(formatMetric(2500, "\u03bcs"), "2.50 ms");
  });

  it("keeps the sign of negative values and formats zero plainly", () => {
    assert.equal(formatMetric(-1500, "us"), "-1.50 ms");
    assert.equal(formatMetric(0, "ms"), "0 ns");
    assert.equal(formatMetric(-0, "s"), "0 ns");
  });
});

describe("formatMetric: bytes", () => {
  it("prints whole byte counts below 1024 exactly", () => {
    assert.equal(formatMetric(0, "bytes"), "0 B");
    assert.equal(formatMetric(1, "bytes"), "1 B");
    assert.equal(formatMetric(512, "bytes"), "512 B");
    assert.equal(formatMetric(1023, "bytes"), "1023 B");
    assert.equal(formatMetric(1.5, "bytes"), "1.50 B");
  });

  it("uses binary prefixes (1 KiB = 1024 B)", () => {
    assert.equal(formatMetric(1024, "bytes"), "1.00 KiB");
    assert.equal(formatMetric(1536, "bytes"), "1.50 KiB");
    assert.equal(formatMetric(1000 * 1024, "bytes"), "1000 KiB");
    assert.equal(formatMetric(3 * 1024 ** 2, "bytes"), "3.00 MiB");
    assert.equal(formatMetric(80 * 1024 ** 3, "bytes"), "80.0 GiB");
  });

  it("moves to the next prefix when rounding reaches 1024", () => {
    assert.equal(formatMetric(1024 ** 2 - 1, "bytes"), "1.00 MiB");
  });

  it("caps at GiB", () => {
    assert.equal(formatMetric(1024 ** 4, "bytes"), "1024 GiB");
  });

  it("keeps the sign of negative sizes", () => {
    assert.equal(formatMetric(-2048, "bytes"), "-2.00 KiB");
  });
});

describe("formatMetric: plain numbers", () => {
  it("prints integers below 1000 exactly", () => {
    assert.equal(formatMetric(0), "0");
    assert.equal(formatMetric(42), "42");
    assert.equal(formatMetric(999), "999");
  });

  it("uses 3 significant digits and SI prefixes", () => {
    assert.equal(formatMetric(1000), "1.00k");
    assert.equal(formatMetric(1234), "1.23k");
    assert.equal(formatMetric(45_600_000), "45.6M");
    assert.equal(formatMetric(999_999), "1.00M");
    assert.equal(formatMetric(7.2e12), "7.20T");
    assert.equal(formatMetric(3.14159), "3.14");
    assert.equal(formatMetric(0.012345), "0.0123");
  });

  it("appends an unknown unit after a space, ignores empty ones", () => {
    assert.equal(formatMetric(1234, "calls"), "1.23k calls");
    assert.equal(formatMetric(-1234, "calls"), "-1.23k calls");
    assert.equal(formatMetric(5, ""), "5");
    assert.equal(formatMetric(5, null), "5");
  });

  it("converts BigInt values", () => {
    assert.equal(formatMetric(123_456n), "123k");
  });
});

describe("formatMetric: missing and infinite values", () => {
  it("prints NaN, null and undefined as an en dash", () => {
    assert.equal(MISSING, "\u2013");
    for (const unit of [undefined, "ns", "bytes", "calls"]) {
      assert.equal(formatMetric(NaN, unit), "\u2013");
      assert.equal(formatMetric(null, unit), "\u2013");
      assert.equal(formatMetric(undefined, unit), "\u2013");
    }
  });

  it("prints infinities as signed infinity signs", () => {
    assert.equal(formatMetric(Infinity, "ms"), "\u221e");
    assert.equal(formatMetric(-Infinity), "-\u221e");
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
      assert.equal(mod.formatMetric(1536, "bytes"), "1.50 KiB");
      const src = new Float32Array([4, 5]);
      assert.deepEqual(Array.from(mod.readColumn(new DataView(src.buffer), "float32", 2)), [4, 5]);
    },
  );
});
