"""The protocol-buffer wire format, read without a schema compiler.

Readers of protobuf files (XPlane) name the fields they know by number; this
module only splits a message into its fields. A message is a sequence of
``(key, value)`` where ``key = field_number << 3 | wire_type``:

==== ============ =========================================
type name         value
==== ============ =========================================
0    varint       an integer (7 bits a byte, low first)
1    i64          8 bytes (fixed64, sfixed64, double)
2    len          a varint length, then that many bytes
5    i32          4 bytes (fixed32, sfixed32, float)
==== ============ =========================================

Wire types 3 and 4 (groups) are obsolete and refused. Negative ``int64``
values are varints of their two's complement (10 bytes): :func:`signed`.

>>> msg = bytes([0x08, 0x96, 0x01, 0x12, 0x02, 0x68, 0x69])  # 1: 150, 2: "hi"
>>> [(f, w, v) for f, w, v in fields(msg)]
[(1, 0, 150), (2, 2, b'hi')]
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

#: wire types
VARINT, I64, LEN, I32 = 0, 1, 2, 5


class WireError(ValueError):
    """Bytes that are not a protocol-buffer message (cut, or an unknown wire type)."""


def varint(buf: bytes, pos: int) -> tuple[int, int]:
    """The varint at ``pos`` and the position after it."""
    b = buf[pos]
    if b < 0x80:
        return b, pos + 1
    result, shift = b & 0x7F, 7
    while True:
        pos += 1
        b = buf[pos]
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos + 1
        shift += 7
        if shift > 63:
            raise WireError("a varint longer than 10 bytes")


def signed(v: int) -> int:
    """An ``int64`` from its varint (two's complement of 64 bits)."""
    return v - (1 << 64) if v >= 1 << 63 else v


def fields(buf: bytes, start: int = 0, end: int | None = None) -> Iterator[tuple[int, int, object]]:
    """The fields of the message in ``buf[start:end]``: ``(number, wire type,
    value)``, the value an int (varint), ``bytes`` (len) or the 8 or 4 raw bytes
    (i64, i32; :func:`double`). Raises :class:`WireError` where the bytes end
    inside a field or use an unknown wire type."""
    pos = start
    stop = len(buf) if end is None else end
    try:
        while pos < stop:
            key, pos = varint(buf, pos)
            wt = key & 7
            if wt == VARINT:
                v, pos = varint(buf, pos)
                yield key >> 3, wt, v
            elif wt == LEN:
                n, pos = varint(buf, pos)
                if pos + n > stop:
                    raise WireError(f"a field of {n} bytes runs past the message's end")
                yield key >> 3, wt, buf[pos : pos + n]
                pos += n
            elif wt == I64:
                if pos + 8 > stop:
                    raise WireError("a fixed64 field runs past the message's end")
                yield key >> 3, wt, buf[pos : pos + 8]
                pos += 8
            elif wt == I32:
                if pos + 4 > stop:
                    raise WireError("a fixed32 field runs past the message's end")
                yield key >> 3, wt, buf[pos : pos + 4]
                pos += 4
            else:
                raise WireError(f"wire type {wt} (field {key >> 3}) is not one of 0, 1, 2, 5")
    except IndexError:
        raise WireError("the bytes end inside a varint") from None


def double(raw: bytes) -> float:
    """The ``double`` of an i64 field."""
    return struct.unpack("<d", raw)[0]


def packed_varints(raw: bytes) -> list[int]:
    """A packed repeated varint field (``repeated int64`` in proto3)."""
    out, pos = [], 0
    try:
        while pos < len(raw):
            v, pos = varint(raw, pos)
            out.append(v)
    except IndexError:
        raise WireError("the bytes end inside a varint") from None
    return out


__all__ = [
    "I32",
    "I64",
    "LEN",
    "VARINT",
    "WireError",
    "double",
    "fields",
    "packed_varints",
    "signed",
    "varint",
]
