"""Units of metrics: what they are, converting between them, showing them to people.

A tree's ``meta["units"]`` maps a metric to its unit. Times are ``"s"``,
``"ms"``, ``"us"`` or ``"ns"``, bytes ``"B"``; other spellings a file may use
(``"usec"``, ``"µs"``, ``"seconds"``, ``"bytes"``...) are read by
:func:`canonical`. Raw values stay raw in DataFrames; :func:`format_value`
is for what a person reads ("1.32 s", "75.3 ms", "3.73 MB", "2.1 GB/s").

>>> format_value(1317177458, "ns"), format_value(3.73e6, "B"), format_value(2.1e9, "B/s")
('1.32 s', '3.73 MB', '2.10 GB/s')
>>> convert(1500.0, "us", "ms")
1.5
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

import numpy as np

# powers of ten of each unit: exact factors come from differences of exponents
_TIME_EXP = {"s": 0, "ms": -3, "us": -6, "ns": -9}
_BYTES_EXP = {"B": 0, "kB": 3, "MB": 6, "GB": 9, "TB": 12}
#: seconds per unit of time
TIME: dict[str, float] = {u: 10.0**e for u, e in _TIME_EXP.items()}
#: bytes per unit of size (decimal prefixes, as nccl-tests and network figures use)
BYTES: dict[str, float] = {u: 10.0**e for u, e in _BYTES_EXP.items()}

_ALIASES: dict[str, str] = {
    # counts, as profilers spell them (CUBE's "occ", OTF2/PAPI's "#")
    "#": "count",
    "occ": "count",
    "counts": "count",
    "occurrences": "count",
    "sec": "s",
    "secs": "s",
    "second": "s",
    "seconds": "s",
    "msec": "ms",
    "millisecond": "ms",
    "milliseconds": "ms",
    "µs": "us",
    "μs": "us",
    "usec": "us",
    "microsecond": "us",
    "microseconds": "us",
    "nsec": "ns",
    "nanosecond": "ns",
    "nanoseconds": "ns",
    "b": "B",
    "byte": "B",
    "bytes": "B",
    "kb": "kB",
    "mb": "MB",
    "gb": "GB",
    "tb": "TB",
}


def canonical(unit: Any) -> str | None:
    """The canonical spelling of a unit, or None for no unit.

    Unknown units are returned as given (stripped): they are shown, never converted.

    >>> canonical("usec"), canonical(" Bytes "), canonical(""), canonical("flop"), canonical("Mb")
    ('us', 'B', None, 'flop', 'Mb')
    """
    if unit is None:
        return None
    u = str(unit).strip()
    if not u:
        return None
    if u in TIME or u in BYTES:
        return u
    if u in _ALIASES:
        return _ALIASES[u]
    low = u.lower()  # "Seconds", "BYTES"; never "Mb" (megabits) for "MB"
    return _ALIASES[low] if len(low) > 2 and low in _ALIASES else u


def dimension(unit: Any) -> str | None:
    """``"time"``, ``"bytes"``, ``"bandwidth"`` (bytes per time), or None (no
    known dimension).

    >>> dimension("ms"), dimension("B"), dimension("GB/s"), dimension("flop")
    ('time', 'bytes', 'bandwidth', None)
    """
    u = canonical(unit)
    if u in TIME:
        return "time"
    if u in BYTES:
        return "bytes"
    if u and "/" in u:
        num, den = u.split("/", 1)
        if dimension(num) == "bytes" and dimension(den) == "time":
            return "bandwidth"
    return None


def factor(src: Any, dst: Any) -> float:
    """Multiply values in ``src`` by this to get them in ``dst``.

    Raises ``ValueError`` when the two units measure different things.

    >>> factor("ns", "s"), factor("MB", "B")
    (1e-09, 1000000.0)
    """
    a, b = canonical(src), canonical(dst)
    if a == b:
        return 1.0
    for table in (_TIME_EXP, _BYTES_EXP):
        if a in table and b in table:
            return float(10.0 ** (table[a] - table[b]))  # exact powers of ten
    if dimension(a) == dimension(b) == "bandwidth":
        an, ad = a.split("/", 1)  # type: ignore[union-attr]
        bn, bd = b.split("/", 1)  # type: ignore[union-attr]
        return factor(an, bn) / factor(ad, bd)
    raise ValueError(f"cannot convert {src!r} to {dst!r}")


#: binary prefixes, for sizes people give (memory per GPU: "80 GiB")
_BINARY = {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}


def bytes_of(value: Any, what: str = "size") -> float:
    """A size in bytes: a number (bytes), or text with its unit (``B``, ``kB``,
    ``MB``, ``GB``, ``TB`` or ``KiB``, ``MiB``, ``GiB``, ``TiB``). Anything else
    is refused, naming ``what`` was given.

    >>> bytes_of(1e9), bytes_of("16 GiB"), bytes_of("80GB")
    (1000000000.0, 17179869184.0, 80000000000.0)
    >>> bytes_of("16 s", "memory_limit")
    Traceback (most recent call last):
    ...
    ValueError: memory_limit: '16 s' is not a size: give bytes (a number) or text with a unit (B, kB, MB, GB, TB, KiB, MiB, GiB, TiB)
    """
    units = ", ".join([*BYTES, *_BINARY])
    problem = ValueError(
        f"{what}: {value!r} is not a size: give bytes (a number) or text with a unit ({units})"
    )
    if isinstance(value, bool):
        raise problem
    if isinstance(value, (int, float, np.integer, np.floating)):
        number, scale = float(value), 1.0
    elif isinstance(value, str):
        parts = re.fullmatch(r"\s*([-+0-9.eE]+)\s*([A-Za-z]+)\s*", value)
        try:
            number, unit = float(parts[1]), parts[2]  # type: ignore[index]
        except (TypeError, ValueError):
            raise problem from None
        if unit in _BINARY:
            scale = float(_BINARY[unit])
        elif canonical(unit) in BYTES:
            scale = BYTES[canonical(unit)]  # type: ignore[index]
        else:
            raise problem
    else:
        raise problem
    if not math.isfinite(number) or number <= 0:
        raise ValueError(f"{what}: {value!r} is not a positive size")
    return number * scale


def convert(values: Any, src: Any, dst: Any) -> Any:
    """``values`` (a number or an array) measured in ``src``, expressed in ``dst``."""
    f = factor(src, dst)
    if f == 1.0:
        return values
    return values * f if not isinstance(values, (list, tuple)) else np.asarray(values) * f


def finest(units: list[Any]) -> str | None:
    """Of several units of one dimension, the smallest (no precision is lost
    converting to it).

    >>> finest(["ms", "ns", "us"])
    'ns'
    """
    canon = [canonical(u) for u in units if canonical(u)]
    for table in (TIME, BYTES):
        if canon and all(u in table for u in canon):
            return min(canon, key=lambda u: table[u])
    return canon[0] if canon else None


#: derived ensemble statistics that keep their metric's unit
_STATS = ("max", "min", "std", "cost", "mean", "median")

_TIME_STEPS = (("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9))
_SI = (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3))


def _digits(x: float, digits: int) -> str:
    """``x`` with ``digits`` significant figures, no exponent."""
    if x == 0:
        return "0"
    mag = int(math.floor(math.log10(abs(x))))
    dec = max(digits - 1 - mag, 0)
    out = f"{x:.{dec}f}"
    if dec and abs(float(out)) >= 10.0 ** (mag + 1):  # rounded up to 10**(mag+1): one digit less
        out = f"{x:.{dec - 1}f}"
    return out


def format_value(value: Any, unit: Any = None, digits: int = 3) -> str:
    """A value as a person reads it: scaled, with its unit.

    Times pick s/ms/us/ns, bytes kB/MB/GB (decimal), bandwidths B/s..GB/s;
    values without a known unit get SI suffixes (k, M, G) and the unit as
    given after them. NaN is "n/a".

    >>> format_value(0.0753, "s"), format_value(93, "us"), format_value(51.2e6, None)
    ('75.3 ms', '93.0 us', '51.2 M')
    >>> format_value(-2.5e-3, "s"), format_value(12, "calls"), format_value(float("nan"), "s")
    ('-2.50 ms', '12 calls', 'n/a')
    >>> format_value(3.2e7, "calls"), format_value(0.125, None)
    ('32.0 M calls', '0.125')
    """
    try:
        v = float(value)
    except (TypeError, ValueError):
        return str(value)
    if math.isnan(v):
        return "n/a"
    if math.isinf(v):
        return ("-" if v < 0 else "") + "inf"
    u = canonical(unit)
    dim = dimension(u)
    a = abs(v)
    if dim == "time":
        secs = v * TIME[u]  # type: ignore[index]
        if secs == 0:
            return f"0 {u}"
        for name, scale in _TIME_STEPS:
            if abs(secs) >= scale * 0.9995 or name == "ns":
                return f"{_digits(secs / scale, digits)} {name}"
    if dim in ("bytes", "bandwidth"):
        per = ""
        base = v
        if dim == "bandwidth":
            num, den = u.split("/", 1)  # type: ignore[union-attr]
            base = v * factor(num, "B") / factor(den, "s")
            per = "/s"
        else:
            base = v * BYTES[u]  # type: ignore[index]
        for prefix, scale in _SI:
            if abs(base) >= scale * 0.9995:
                return f"{_digits(base / scale, digits)} {prefix}B{per}"
        return f"{_digits(base, digits) if base != int(base) else int(base)} B{per}"
    suffix = f" {u}" if u else ""
    for prefix, scale in _SI:
        if a >= scale * 0.9995:
            return f"{_digits(v / scale, digits)} {prefix}{suffix}"
    if v == int(v) and a < 1e15:
        return f"{int(v)}{suffix}"
    return f"{_digits(v, digits)}{suffix}"


def unit_label(metric: str, units: Mapping[str, Any]) -> str:
    """``"time (inc) [ms]"`` for a legend; ``"[unit unknown]"`` when the
    metric is a time or size whose unit no one stated.

    >>> unit_label("time (inc)", {"time": "ms"}), unit_label("calls", {})
    ('time (inc) [ms]', 'calls')
    >>> unit_label("time", {})
    'time [unit unknown]'
    >>> unit_label("time (inc) [cost]", {"time": "s"}), unit_label("time (inc) [imbalance]", {})
    ('time (inc) [cost] [s]', 'time (inc) [imbalance]')
    """
    name = metric
    for stat in _STATS:  # derived ensemble columns: "time (inc) [max]" is in time's unit
        if name.endswith(f" [{stat}]"):
            name = name[: -len(stat) - 3]
            break
    else:
        if name.endswith(" [imbalance]"):  # a ratio: no unit
            return metric
    base = name[: -len(" (inc)")] if name.endswith(" (inc)") else name
    u = next((canonical(units[k]) for k in (metric, name, base) if units.get(k)), None)
    if u:
        return f"{metric} [{u}]"
    if looks_measured(base):
        return f"{metric} [unit unknown]"
    return metric


#: words in a metric's name that say it is a time or a size
MEASURED = ("time", "duration", "bytes", "_ns", "_us", "latency", "mem")


def looks_measured(metric: str) -> bool:
    """Whether a metric's name says it is a time or a size (so a missing unit matters)."""
    m = metric.lower()
    return any(w in m for w in MEASURED)


def js_table() -> dict[str, Any]:
    """The unit tables the front end formats with (``js/units-table.js`` is made from
    this by ``scripts/units_table.py``): one definition, here.

    >>> js_table()["aliases"]["usec"], js_table()["time"]["ms"]
    ('us', 0.001)
    """
    return {
        "time": dict(TIME),
        "bytes": dict(BYTES),
        "aliases": dict(_ALIASES),
        "measured": list(MEASURED),
        "stats": list(_STATS),
    }


__all__ = [
    "TIME",
    "BYTES",
    "canonical",
    "dimension",
    "factor",
    "convert",
    "finest",
    "format_value",
    "unit_label",
    "looks_measured",
    "js_table",
]
