"""Loading JSON profiles with errors that name the file and the place."""

from __future__ import annotations

import gzip
import json
import zlib
from pathlib import Path
from typing import Any

from ..errors import ProfileError


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


def load_json(path: Path) -> Any:
    """Parse a (possibly gzipped) JSON file; syntax errors become ProfileError."""
    raw = file_bytes(path)
    try:
        return json.loads(raw)
    except json.JSONDecodeError as e:
        raise ProfileError(
            path, f"invalid JSON: {e.msg}", where=f"line {e.lineno}, column {e.colno}"
        ) from None
    except UnicodeDecodeError as e:
        raise ProfileError(path, f"not UTF-8 text ({e.reason})", where=f"byte {e.start}") from None


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
