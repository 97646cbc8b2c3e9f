// Generated from cctviz/model/units.py by scripts/units_table.py: do not edit.
// The front end formats with Python's tables (docs/architecture.md, section 3).

/** Seconds per unit of time. */
export const TIME = {"s": 1.0, "ms": 0.001, "us": 1e-06, "ns": 1e-09};
/** Bytes per unit of size (decimal prefixes). */
export const BYTES = {"B": 1.0, "kB": 1000.0, "MB": 1000000.0, "GB": 1000000000.0, "TB": 1000000000000.0};
/** Other spellings of units (matched as given, then lower-cased). */
export const ALIASES = {"#": "count", "occ": "count", "counts": "count", "occurrences": "count", "sec": "s", "secs": "s", "second": "s", "seconds": "s", "msec": "ms", "millisecond": "ms", "milliseconds": "ms", "µs": "us", "μs": "us", "usec": "us", "microsecond": "us", "microseconds": "us", "nsec": "ns", "nanosecond": "ns", "nanoseconds": "ns", "b": "B", "byte": "B", "bytes": "B", "kb": "kB", "mb": "MB", "gb": "GB", "tb": "TB"};
/** Words in a metric name that say it is a time or a size. */
export const MEASURED = ["time", "duration", "bytes", "_ns", "_us", "latency", "mem"];
/** Statistics columns (`x [max]`) that keep their metric's unit. */
export const STATS = ["max", "min", "std", "cost", "mean", "median"];
