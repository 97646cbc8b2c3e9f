// Small pure helpers shared by the cctviz views (no DOM, no d3 needed).

/** Shown for missing values (NaN, null, undefined). U+2013 EN DASH. */
export const MISSING = "\u2013";

/** Nanoseconds per time unit accepted by {@link formatMetric}. */
const TIME_FACTORS = { ns: 1, us: 1e3, ms: 1e6, s: 1e9 };
/** Alternative spellings of the time units, mapped to their canonical names. */
const TIME_ALIASES = { "\u00b5s": "us", "\u03bcs": "us" }; // micro sign, Greek mu
/** Output time units, smallest first. */
const TIME_UNITS = ["ns", "us", "ms", "s"];
/** Output byte units (binary prefixes), smallest first. */
const BYTE_UNITS = ["B", "KiB", "MiB", "GiB"];
/** SI prefixes for plain (unitless or unknown-unit) numbers, smallest first. */
const SI_PREFIXES = ["", "k", "M", "G", "T", "P", "E"];

/**
 * Format a non-negative finite number to 3 significant digits without
 * exponent notation (except for magnitudes below 1e-6, where JavaScript's
 * `toPrecision` switches to it).
 *
 * 123.4 -> "123", 12.34 -> "12.3", 1.234 -> "1.23", 0.01234 -> "0.0123".
 * Numbers >= 1000 keep all their integer digits ("1234").
 *
 * @param {number} x non-negative finite number
 * @returns {string}
 */
function sig3(x) {
  if (x >= 100) return x.toFixed(0);
  if (x >= 10) return x.toFixed(1);
  if (x >= 1) return x.toFixed(2);
  return x.toPrecision(3);
}

/**
 * Scale `magnitude` (>= 0, finite) through a ladder of units that are `base`
 * apart and format it with 3 significant digits. The largest unit whose size
 * does not exceed the magnitude is chosen; if rounding pushes the mantissa up
 * to `base` (e.g. 999.7 -> "1000") the next unit is used instead, so that
 * 999.7 ns prints as "1.00 us" rather than "1000 ns".
 *
 * @param {number} magnitude value in units of `units[0]`
 * @param {string[]} units unit labels, smallest first
 * @param {number} base ratio between consecutive units
 * @param {boolean} exactIntegers print integers below `base` in the first unit exactly
 * @returns {[string, string]} [mantissa, unit]
 */
function scale(magnitude, units, base, exactIntegers) {
  let i = 0;
  while (i < units.length - 1 && magnitude >= base ** (i + 1)) i++;
  for (;;) {
    const scaled = magnitude / base ** i;
    const text = i === 0 && exactIntegers && Number.isInteger(scaled) ? String(scaled) : sig3(scaled);
    if (i < units.length - 1 && Number(text) >= base) {
      i++;
      continue;
    }
    return [text, units[i]];
  }
}

/**
 * Format a metric value compactly for tables, tooltips and axis labels.
 *
 * - Time units (`unit` is `"ns"`, `"us"`, `"ms"` or `"s"`; `"µs"` is accepted
 *   as an alias of `"us"`): `value` is interpreted in that unit and shown in
 *   the largest of ns/us/ms/s that keeps the mantissa >= 1, e.g.
 *   `formatMetric(1500, "us")` -> `"1.50 ms"`. Values beyond seconds stay in
 *   seconds (`"3600 s"`).
 * - `unit === "bytes"`: binary prefixes B/KiB/MiB/GiB (1 KiB = 1024 B), e.g.
 *   `formatMetric(1536, "bytes")` -> `"1.50 KiB"`; whole byte counts below
 *   1024 print exactly (`"512 B"`).
 * - Anything else (`undefined`, `null`, `""`, or another unit string such as
 *   `"calls"`): 3 significant digits with SI prefixes k/M/G/T/P/E for
 *   magnitudes >= 1000 (`"1.23k"`, `"45.6M"`); integers below 1000 print
 *   exactly (`"42"`). A non-empty unit string is appended after a space
 *   (`"1.23k calls"`).
 *
 * Negative values keep their sign (`"-1.50 ms"`); zero prints as `"0"` plus
 * the smallest unit (`"0 ns"`, `"0 B"`, `"0"`); ±Infinity prints as `"∞"` /
 * `"-∞"`; NaN, `null` and `undefined` print as `"–"` (en dash, {@link MISSING}).
 * BigInt values are converted to Number.
 *
 * @param {number|bigint|null|undefined} value the metric value
 * @param {string} [unit] `"ns"|"us"|"ms"|"s"`, `"bytes"`, or any other label
 * @returns {string}
 */
export function formatMetric(value, unit) {
  if (value === null || value === undefined) return MISSING;
  const v = Number(value);
  if (Number.isNaN(v)) return MISSING;
  if (!Number.isFinite(v)) return v > 0 ? "\u221e" : "-\u221e";
  const sign = v < 0 ? "-" : "";
  const mag = Math.abs(v);

  const timeUnit = TIME_ALIASES[unit] ?? unit;
  if (Object.prototype.hasOwnProperty.call(TIME_FACTORS, timeUnit)) {
    if (mag === 0) return "0 ns";
    const [text, u] = scale(mag * TIME_FACTORS[timeUnit], TIME_UNITS, 1000, false);
    return `${sign}${text} ${u}`;
  }
  if (unit === "bytes") {
    if (mag === 0) return "0 B";
    const [text, u] = scale(mag, BYTE_UNITS, 1024, true);
    return `${sign}${text} ${u}`;
  }
  const suffix = typeof unit === "string" && unit !== "" ? ` ${unit}` : "";
  if (mag === 0) return `0${suffix}`;
  const [text, prefix] = scale(mag, SI_PREFIXES, 1000, true);
  return `${sign}${text}${prefix}${suffix}`;
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
