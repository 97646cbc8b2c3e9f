// Small pure helpers shared by the cctviz views (no DOM, no d3 needed).
//
// The number formatting here is a port of Python's `cctviz.model.units`
// (`format_value`, `unit_label`, `canonical`): both sides must print the same
// strings ("1.32 s", "75.3 ms", "3.73 MB", "2.10 GB/s", "51.2 M"). The shared
// cases in tests/js/format_cases.json are checked by a node test and by a
// Python test (tests/views/test_format_cases.py).

/** Shown for missing values (NaN, null, undefined), as Python's `format_value`. */
export const MISSING = "n/a";

// The unit tables are Python's (cctviz/model/units.py), generated into units-table.js.
import { ALIASES, BYTES, MEASURED, STATS, TIME } from "./units-table.js";

export { BYTES, TIME };
const TIME_STEPS = [["s", 1.0], ["ms", 1e-3], ["us", 1e-6], ["ns", 1e-9]];
const SI = [["T", 1e12], ["G", 1e9], ["M", 1e6], ["k", 1e3]];

const has = (obj, key) => typeof key === "string" && Object.prototype.hasOwnProperty.call(obj, key);

/**
 * The canonical spelling of a unit ("usec" -> "us", "bytes" -> "B"), or null
 * for no unit. Unknown units come back as given (trimmed).
 *
 * @param {*} unit
 * @returns {string|null}
 */
export function canonicalUnit(unit) {
  if (unit === null || unit === undefined) return null;
  const u = String(unit).trim();
  if (!u) return null;
  if (has(TIME, u) || has(BYTES, u)) return u;
  if (has(ALIASES, u)) return ALIASES[u];
  const low = u.toLowerCase(); // "Seconds", "BYTES"; never "Mb" (megabits) for "MB"
  if (low.length > 2 && has(ALIASES, low)) return ALIASES[low];
  return u;
}

/**
 * "time", "bytes", "bandwidth" (bytes per time) or null.
 *
 * @param {*} unit
 * @returns {"time"|"bytes"|"bandwidth"|null}
 */
export function unitDimension(unit) {
  const u = canonicalUnit(unit);
  if (has(TIME, u)) return "time";
  if (has(BYTES, u)) return "bytes";
  if (u && u.includes("/")) {
    const k = u.indexOf("/");
    if (unitDimension(u.slice(0, k)) === "bytes" && unitDimension(u.slice(k + 1)) === "time") return "bandwidth";
  }
  return null;
}

/** Multiply values in `src` by this to get them in `dst` (same dimension). */
function factor(src, dst) {
  const a = canonicalUnit(src);
  const b = canonicalUnit(dst);
  if (a === b) return 1.0;
  for (const table of [TIME, BYTES]) if (has(table, a) && has(table, b)) return table[a] / table[b];
  throw new RangeError(`cannot convert ${a} to ${b}`);
}

/** A finite non-negative double as an exact [mantissa, exponent] pair: x = m * 2**e. */
function decompose(x) {
  const dv = new DataView(new ArrayBuffer(8));
  dv.setFloat64(0, x);
  const hi = dv.getUint32(0);
  const lo = dv.getUint32(4);
  const expBits = (hi >>> 20) & 0x7ff;
  let m = (BigInt(hi & 0xfffff) << 32n) | BigInt(lo);
  if (expBits === 0) return [m, -1074];
  m |= 1n << 52n;
  return [m, expBits - 1075];
}

/**
 * `x` with `dec` digits after the point, rounded exactly (half to even), as
 * Python's `f"{x:.{dec}f}"` prints it (JavaScript's `toFixed` rounds exact
 * ties away from zero and switches to exponents from 1e21 on).
 */
export function toFixedExact(x, dec) {
  const neg = x < 0 || Object.is(x, -0);
  const [m, e] = decompose(Math.abs(x));
  let num = m * 10n ** BigInt(dec);
  let den = 1n;
  if (e >= 0) num <<= BigInt(e);
  else den <<= BigInt(-e);
  let q = num / den;
  const r2 = 2n * (num % den);
  if (r2 > den || (r2 === den && (q & 1n) === 1n)) q += 1n;
  let s = q.toString();
  if (dec > 0) {
    s = s.padStart(dec + 1, "0");
    s = `${s.slice(0, s.length - dec)}.${s.slice(s.length - dec)}`;
  }
  return (neg ? "-" : "") + s;
}

/** `x` with `digits` significant figures, no exponent (Python's `_digits`). */
function sigDigits(x, digits) {
  if (x === 0) return "0";
  const mag = Math.floor(Math.log10(Math.abs(x)));
  const dec = Math.max(digits - 1 - mag, 0);
  const out = toFixedExact(x, dec);
  // rounded up to 10 ** (mag + 1): one digit less, as Python's `_digits`
  if (dec > 0 && Math.abs(Number(out)) >= 10 ** (mag + 1)) return toFixedExact(x, dec - 1);
  return out;
}

/**
 * The display unit of values up to `maxAbs` in `unit`, as {@link formatValue}
 * picks it for a time (s..ns), a size (B..TB) or a bandwidth (B/s..TB/s), and
 * the factor that takes the values there; null for other units (counts...).
 *
 * @param {number} maxAbs
 * @param {string|null} unit
 * @returns {{factor: number, unit: string}|null}
 */
export function displayUnit(maxAbs, unit) {
  const u = canonicalUnit(unit);
  const dim = unitDimension(u);
  const a = Number.isFinite(maxAbs) ? Math.abs(maxAbs) : 0;
  if (dim === "time") {
    const secs = a * TIME[u];
    for (const [name, scale] of TIME_STEPS) {
      if (secs >= scale * 0.9995 || name === "ns") return { factor: TIME[u] / scale, unit: name };
    }
  }
  if (dim === "bytes" || dim === "bandwidth") {
    const k = u.indexOf("/");
    const toBase = dim === "bandwidth" ? factor(u.slice(0, k), "B") / factor(u.slice(k + 1), "s") : BYTES[u];
    const per = dim === "bandwidth" ? "/s" : "";
    for (const [prefix, scale] of SI) if (a * toBase >= scale * 0.9995) return { factor: toBase / scale, unit: `${prefix}B${per}` };
    return { factor: toBase, unit: `B${per}` };
  }
  return null;
}

/**
 * A value as a person reads it: scaled, with its unit (the same strings as
 * Python's `cctviz.model.units.format_value`).
 *
 * - Times pick s/ms/us/ns: `formatValue(0.0753, "s")` -> `"75.3 ms"`.
 * - Bytes take decimal prefixes: `formatValue(3.73e6, "B")` -> `"3.73 MB"`;
 *   bandwidths too: `formatValue(2.1e9, "B/s")` -> `"2.10 GB/s"`.
 * - Anything else (no unit, or an unknown one) gets SI suffixes and the unit
 *   after them: `formatValue(51.2e6)` -> `"51.2 M"`, `formatValue(12, "calls")`
 *   -> `"12 calls"`.
 * - NaN, null, undefined -> `"n/a"`; infinities `"inf"` / `"-inf"`.
 *
 * @param {number|bigint|null|undefined} value
 * @param {string|null} [unit]
 * @param {number} [digits=3] significant digits
 * @returns {string}
 */
export function formatValue(value, unit, digits = 3) {
  if (value === null || value === undefined) return MISSING;
  const v = Number(value);
  if (Number.isNaN(v)) return typeof value === "string" && value.trim().toLowerCase() !== "nan" ? value : MISSING;
  if (!Number.isFinite(v)) return v < 0 ? "-inf" : "inf";
  const u = canonicalUnit(unit);
  const dim = unitDimension(u);
  const a = Math.abs(v);
  if (dim === "time") {
    const secs = v * TIME[u];
    if (secs === 0) return `0 ${u}`;
    for (const [name, scale] of TIME_STEPS) {
      if (Math.abs(secs) >= scale * 0.9995 || name === "ns") return `${sigDigits(secs / scale, digits)} ${name}`;
    }
  }
  if (dim === "bytes" || dim === "bandwidth") {
    let per = "";
    let base;
    if (dim === "bandwidth") {
      const k = u.indexOf("/");
      base = (v * factor(u.slice(0, k), "B")) / factor(u.slice(k + 1), "s");
      per = "/s";
    } else base = v * BYTES[u];
    for (const [prefix, scale] of SI) {
      if (Math.abs(base) >= scale * 0.9995) return `${sigDigits(base / scale, digits)} ${prefix}B${per}`;
    }
    return `${Number.isInteger(base) ? String(base) : sigDigits(base, digits)} B${per}`;
  }
  const suffix = u ? ` ${u}` : "";
  for (const [prefix, scale] of SI) {
    if (a >= scale * 0.9995) return `${sigDigits(v / scale, digits)} ${prefix}${suffix}`;
  }
  if (Number.isInteger(v) && a < 1e15) return `${String(v)}${suffix}`;
  return `${sigDigits(v, digits)}${suffix}`;
}

/** Former name of {@link formatValue}. */
export const formatMetric = formatValue;

/** Whether a metric's name says it is a time or a size (so a missing unit matters). */
export function looksMeasured(metric) {
  const m = String(metric).toLowerCase();
  return MEASURED.some((w) => m.includes(w));
}

/**
 * A metric's name with its unit, for legends (Python's `unit_label`):
 * `"time (inc) [ms]"`; `"time [unit unknown]"` for a time or size metric
 * whose unit no one stated; the plain name otherwise.
 *
 * @param {string} metric
 * @param {Object<string,string>} units metric (without " (inc)") -> unit
 * @returns {string}
 */
export function unitLabel(metric, units) {
  const full = String(metric);
  let name = full;
  const stat = STATS.find((s) => name.endsWith(` [${s}]`));
  if (stat) name = name.slice(0, -(stat.length + 3));
  else if (name.endsWith(" [imbalance]")) return full; // a ratio: no unit
  const base = name.endsWith(" (inc)") ? name.slice(0, -" (inc)".length) : name;
  const key = [full, name, base].find((k) => units && has(units, k) && units[k]);
  const u = canonicalUnit(key === undefined ? null : units[key]);
  if (u) return `${full} [${u}]`;
  if (looksMeasured(base)) return `${full} [unit unknown]`;
  return full;
}

/** A ratio such as an imbalance (max/mean): "2.3×", "64×"; "n/a" when missing. */
export function formatRatio(v) {
  if (v === null || v === undefined || Number.isNaN(Number(v))) return MISSING;
  const x = Number(v);
  if (!Number.isFinite(x)) return x < 0 ? "-inf" : "inf";
  return `${Math.abs(x) >= 10 ? toFixedExact(x, 0) : toFixedExact(x, 1)}\u00d7`;
}

/**
 * A fraction as a percentage with at most 3 significant digits, trailing
 * zeros dropped: 0.1234 -> "12.3%", 0.01 -> "1%", 0.0045 -> "0.45%"; "n/a" when missing.
 */
export function formatPercent(f) {
  if (f === null || f === undefined || !Number.isFinite(Number(f))) return MISSING;
  let s = sigDigits(Number(f) * 100, 3);
  if (s.includes(".")) s = s.replace(/0+$/, "").replace(/\.$/, "");
  return `${s}%`;
}

/** Supported dtypes: element size in bytes, typed-array class, DataView getter. */
const DTYPES = {
  float32: { size: 4, Array: Float32Array, get: "getFloat32" },
  float64: { size: 8, Array: Float64Array, get: "getFloat64" },
  int32: { size: 4, Array: Int32Array, get: "getInt32" },
  uint8: { size: 1, Array: Uint8Array, get: "getUint8" },
};
const DTYPE_ALIASES = {
  "<f4": "float32", f4: "float32", "<f8": "float64", f8: "float64", "<i4": "int32", i4: "int32",
  "|u1": "uint8", u1: "uint8",
};

/** True when the host stores multi-byte numbers little-endian (every browser we target). */
const HOST_LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/**
 * Read a little-endian numeric column out of a binary buffer into a fresh
 * typed array.
 *
 * Binary traitlets (numpy buffers sent by the Python side) arrive in an
 * anywidget front end as `DataView`s that may start at any `byteOffset` of a
 * larger message buffer, so the data is not guaranteed to be aligned for a
 * direct typed-array view. This helper always copies: aligned data on a
 * little-endian host via one bulk `slice()`, anything else element by element
 * with explicit little-endian reads.
 *
 * @param {DataView|ArrayBuffer|ArrayBufferView} dataView the raw bytes; a
 *   typed array or ArrayBuffer is accepted too and read as bytes
 * @param {"float32"|"float64"|"int32"|"uint8"|"<f4"|"<f8"|"<i4"|"f4"|"f8"|"i4"|"|u1"|"u1"} dtype element type
 * @param {number} [length] number of elements to read; defaults to as many
 *   whole elements as fit in the buffer
 * @returns {Float32Array|Float64Array|Int32Array|Uint8Array} a new array owning its memory
 * @throws {TypeError} on an unknown dtype or an unsupported buffer type
 * @throws {RangeError} if `length` is negative, not an integer, or needs more
 *   bytes than the buffer holds
 */
export function readColumn(dataView, dtype, length) {
  const name = DTYPE_ALIASES[dtype] ?? dtype;
  const spec = Object.prototype.hasOwnProperty.call(DTYPES, name) ? DTYPES[name] : undefined;
  if (!spec) throw new TypeError(`readColumn: unsupported dtype ${JSON.stringify(dtype)}`);

  let dv;
  if (dataView instanceof DataView) dv = dataView;
  else if (dataView instanceof ArrayBuffer) dv = new DataView(dataView);
  else if (ArrayBuffer.isView(dataView)) {
    dv = new DataView(dataView.buffer, dataView.byteOffset, dataView.byteLength);
  } else throw new TypeError("readColumn: expected a DataView, ArrayBuffer or typed array");

  const n = length === undefined ? Math.floor(dv.byteLength / spec.size) : length;
  if (!Number.isInteger(n) || n < 0) {
    throw new RangeError(`readColumn: length must be a non-negative integer, got ${length}`);
  }
  if (n * spec.size > dv.byteLength) {
    throw new RangeError(
      `readColumn: ${n} x ${name} needs ${n * spec.size} bytes, buffer has ${dv.byteLength}`,
    );
  }

  if (HOST_LITTLE_ENDIAN && dv.byteOffset % spec.size === 0) {
    return new spec.Array(dv.buffer, dv.byteOffset, n).slice();
  }
  const out = new spec.Array(n);
  const get = spec.get;
  for (let i = 0; i < n; i++) out[i] = dv[get](i * spec.size, true);
  return out;
}

const TYPED = { float32: Float32Array, int32: Int32Array, uint8: Uint8Array };

/**
 * Read an optional column of `_data`: a binary buffer (with {@link readColumn})
 * or a plain array (JSON; `null` reads as NaN); when absent, `n` times `fill`,
 * or null when `fill` is null.
 *
 * @param {DataView|ArrayBuffer|ArrayBufferView|number[]|undefined|null} buf
 * @param {"float32"|"int32"|"uint8"} dtype
 * @param {number} n
 * @param {number|null} [fill]
 */
export function column(buf, dtype, n, fill = null) {
  if (buf instanceof ArrayBuffer || ArrayBuffer.isView(buf)) return readColumn(buf, dtype, n);
  if (Array.isArray(buf)) return TYPED[dtype].from(buf.slice(0, n), (v) => (v === null ? NaN : v));
  if (fill === null) return null;
  return new TYPED[dtype](n).fill(fill);
}

/** Number of entries of a column that has a length of its own (not one per row): bytes / `size`, or the array's length. */
export function columnLength(buf, size) {
  if (Array.isArray(buf)) return buf.length;
  if (buf instanceof ArrayBuffer || ArrayBuffer.isView(buf)) return Math.floor(buf.byteLength / size);
  return 0;
}
