"""Loading JSON profiles with errors that name the file and the place."""

from __future__ import annotations

import gc
import gzip
import json
import re
import sys
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ProfileError

try:  # a JSON decoder about 3x faster than the standard library's
    import orjson as _orjson
except ImportError:  # pragma: no cover - orjson is a dependency; a platform without its wheel
    _orjson = None


def loads(text: str | bytes) -> Any:
    """``json.loads``, by orjson where it is installed (about 3x faster).

    orjson refuses what strict JSON does not allow and the standard library
    takes (``NaN``, ``Infinity``, a byte-order mark, lone surrogates, numbers
    beyond a float): then the standard library decides, so the values and the
    errors are :mod:`json`'s. One difference is left: orjson reads an integer
    outside [-2**63, 2**64) as a float (no profile field holds one).

    >>> loads(b'{"time": [1.5, NaN], "n": 3}')
    {'time': [1.5, nan], 'n': 3}
    """
    if _orjson is not None:
        try:
            return _orjson.loads(text)
        except ValueError:  # orjson.JSONDecodeError
            pass
    return json.loads(text)


def value_key(value: Any) -> bytes | None:
    """A key for a decoded JSON value: equal keys, equal values of the same types
    (orjson's encoding: ``1``, ``1.0`` and ``true`` differ). None without orjson,
    for what it does not encode, and where the encoding holds ``null``: orjson
    writes NaN and the infinities (which the standard library's decoder gives)
    as ``null`` too.

    >>> value_key([{"a": 1}]) == value_key([{"a": 1}]) != value_key([{"a": 1.0}])
    True
    >>> value_key([float("nan")]), value_key([None])
    (None, None)
    """
    if _orjson is None:  # pragma: no cover - orjson is a dependency
        return None
    try:
        key = _orjson.dumps(value)
    except TypeError:  # orjson.JSONEncodeError: an integer beyond 64 bits
        return None
    return None if b"null" in key else key


_FIRST = re.compile(rb"\s*(\S)")


def first_byte(h: bytes) -> bytes:
    """The first byte of ``h`` that is not white space (``h.lstrip()[:1]`` without
    copying the whole head: detection calls it for every file).

    >>> first_byte(b"  {}"), first_byte(b" ")
    (b'{', b'')
    """
    m = _FIRST.match(h)
    return m.group(1) if m else b""


_LAST_SCAN: tuple[bytes | None, bytes, bool] = (None, b"", False)


def head_has(h: bytes, needle: bytes) -> bool:
    """``needle in h``, remembered for the last head asked: detection asks several
    sniffers whether one file's head (64 KiB) holds the same key (``"graph"``:
    Thicket's and Hatchet's), and each scan of a head that lacks it reads all of
    it. One (head, needle, answer) at a time, swapped whole (threads).

    >>> h = b'{"graph": []}'
    >>> head_has(h, b'"graph"'), head_has(h, b'"graph"'), head_has(h, b'"nodes"')
    (True, True, False)
    """
    global _LAST_SCAN
    last = _LAST_SCAN
    if last[0] is h and last[1] == needle:
        return last[2]
    found = needle in h
    _LAST_SCAN = (h, needle, found)
    return found


@contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic garbage collector paused (and restored as it was): decoded JSON
    holds no reference cycles, and while millions of its objects stay alive each
    collection would walk them all again for nothing.

    >>> with gc_paused():
    ...     gc.isenabled()
    False
    """
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


def file_bytes(path: Path) -> bytes:
    """The bytes of a file, un-gzipped when it is gzipped; a file that cannot be
    read (or a broken gzip stream) is a ProfileError naming it."""
    try:
        raw = path.read_bytes()
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
    except (OSError, EOFError, zlib.error) as e:
        raise ProfileError(path, f"cannot read the file: {e}") from None
    return raw


#: the deepest bracket nesting of a JSON file read (a tree nests two a level:
#: its list of children and the child; the decoders recurse per bracket)
MAX_DEPTH = 100_000


def nesting_depth(raw: bytes) -> int:
    """The deepest nesting of ``[`` and ``{`` in ``raw`` (brackets inside
    strings counted too: an upper bound).

    >>> nesting_depth(b'[{"a": [1, {"b": []}]}]')
    5
    """
    b = np.frombuffer(raw, dtype=np.uint8)
    step = (b == ord("[")).astype(np.int32) + (b == ord("{"))
    step -= (b == ord("]")).astype(np.int32) + (b == ord("}"))
    return int(np.cumsum(step).max(initial=0))


def load_json(path: Path, raw: bytes | None = None) -> Any:
    """Parse a (possibly gzipped) JSON file; syntax errors become ProfileError.
    A document nested deeper than Python's recursion limit allows (a deep
    recursion's tree: 5,000 levels) is decoded again with the limit raised for
    the call, up to :data:`MAX_DEPTH` levels; deeper, refused naming the depth.
    ``raw``: the file's bytes, where the caller has read them already."""
    raw = file_bytes(path) if raw is None else raw
    try:
        return _loads_deep(path, raw)
    except json.JSONDecodeError as e:
        raise ProfileError(
            path, f"invalid JSON: {e.msg}", where=f"line {e.lineno}, column {e.colno}"
        ) from None
    except UnicodeDecodeError as e:
        raise ProfileError(path, f"not UTF-8 text ({e.reason})", where=f"byte {e.start}") from None


def _loads_deep(path: Path, raw: bytes) -> Any:
    try:
        return loads(raw)
    except RecursionError:
        pass
    depth = nesting_depth(raw)
    if depth > MAX_DEPTH:
        raise ProfileError(
            path, f"its JSON nests {depth:,} brackets deep; cctviz reads up to {MAX_DEPTH:,}"
        ) from None
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 4 * depth + 1_000))
    try:
        return json.loads(raw)
    except RecursionError:
        raise ProfileError(
            path, f"its JSON nests {depth:,} brackets deep: too deep for this Python's decoder"
        ) from None
    finally:
        sys.setrecursionlimit(limit)


def expect(path: Path, cond: bool, where: str, problem: str) -> None:
    """Raise ProfileError(path, problem, where) unless ``cond``."""
    if not cond:
        raise ProfileError(path, problem, where=where)


def expect_rows(path: Path, bad: Any, values: Any, problem: str, where: str) -> None:
    """Raise a ProfileError at the first row flagged in the boolean Series ``bad``.

    ``problem`` and ``where`` are format strings given ``value`` (the row's value
    in ``values``) and ``k`` (the row number).
    """
    if bad.any():
        k = int(bad.to_numpy().nonzero()[0][0])
        raise ProfileError(path, problem.format(value=values.iloc[k], k=k), where=where.format(k=k))


def numeric(path: Path, values: Any, what: str, where: str) -> Any:
    """``values`` as numbers; a ProfileError at the first entry that is not one.

    ``what`` names the column in the message, ``where`` is a format string of ``k``.
    """
    import pandas as pd

    conv = pd.to_numeric(values, errors="coerce")
    expect_rows(
        path, conv.isna() & values.notna(), values, what + " holds {value!r}, not a number", where
    )
    return conv
