"""A JSON document read piecewise: one big top-level list streamed, the rest kept.

:class:`JsonStream` reads a (gzipped) UTF-8 JSON file whose top level is an
object holding one large list (Kineto's ``traceEvents``) and other, small keys.
It yields the list's elements one by one and collects the other keys in a dict,
holding only a few MiB of text at a time: the file is read in ``CHUNK``-character
pieces (4 MiB), and the elements are decoded about ``BATCH`` characters
(64 KiB) of elements per call of ``_json.loads`` (orjson, about 3x faster than
:mod:`json`, whose rules it keeps: ``_json.loads``; keys are then shared among
the elements of a batch, where ``JSONDecoder.scan_once`` would make new key
strings per element). A batch ends
at a ``},``; one that is not between two elements leaves brackets open and
fails, and that stretch is then read one element at a time. Where less than a
batch of text is left in the piece, the next piece is read first (else the
piece's tail, which ends inside an element, finds no cut). Errors are
:class:`~cctviz.errors.ProfileError` naming the file and the place
(``traceEvents[12]``, ``character 345``): invalid JSON, a truncated file, a
broken gzip stream, text that is not UTF-8.

Decoding alone, measured on 35 MB Kineto samples and a 31 MB synthetic trace of
200k events: ``json.loads`` of the whole file 0.53-1.08 s, holding 126-178 MB
of Python objects; ``ijson.items(f, "traceEvents.item")`` (yajl2_c backend)
0.23-0.53 s streaming, but it cannot give the other top-level keys in the same
pass; these batches 0.22-0.50 s (the whole Kineto parse). Batch size, decoding
a 22 MB synthetic trace of 98k events (CPU seconds, best of 7, 2026-11-27):
one element per call 0.30 s, 1 MiB batches 0.27 s, 64 KiB and 8 KiB batches
0.24 s (the objects of a smaller batch stay in the CPU caches).

>>> import json, tempfile, pathlib
>>> p = pathlib.Path(tempfile.mkdtemp()) / "t.json"
>>> _ = p.write_text(json.dumps({"a": 1, "items": [{"x": 1}, {"x": 2}], "b": [3]}))
>>> st = JsonStream(p)
>>> meta = {}
>>> [e["x"] for e in st.items(meta, "items")], meta
([1, 2], {'a': 1, 'b': [3]})
>>> st.close()
"""

from __future__ import annotations

import codecs
import gzip
import json
import re
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import ProfileError
from . import _json

_WS = re.compile(r"[ \t\n\r]*")
CHUNK = 1 << 22  # characters read at a time
BATCH = 1 << 16  # characters of list elements parsed in one json.loads call
_NUMBER_TAIL = 8  # a number read this close to the end of the text may be cut


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


class JsonStream:
    """A JSON document read piecewise: (gzipped) bytes -> text -> values."""

    def __init__(self, path: Path, chunk: int = CHUNK) -> None:
        self.path = path
        self.chunk = chunk
        #: a list read with ``open_end`` ended without its "]"
        self.unterminated = False
        try:
            self.raw = open(path, "rb")
        except OSError as e:
            raise ProfileError(path, f"cannot read the file: {e}") from None
        magic = self.raw.read(2)
        self.raw.seek(0)
        self.f: Any = (
            gzip.GzipFile(fileobj=self.raw, mode="rb") if magic == b"\x1f\x8b" else self.raw
        )
        self.dec = codecs.getincrementaldecoder("utf-8")()
        self.buf = ""
        self.pos = 0
        self.base = 0  # characters dropped before buf
        self.eof = False
        self.scan = json.JSONDecoder().scan_once

    def close(self) -> None:
        self.raw.close()

    def more(self) -> bool:
        """Append the next piece of text (geometric growth); False at the end."""
        if self.eof:
            return False
        want = max(self.chunk, len(self.buf) - self.pos)
        try:
            data = self.f.read(want)
            text = self.dec.decode(data, final=not data)
        except (OSError, EOFError, zlib.error) as e:
            raise ProfileError(self.path, f"cannot read the file (broken gzip?): {e}") from None
        except UnicodeDecodeError as e:
            raise ProfileError(
                self.path,
                f"not UTF-8 text ({e.reason})",
                where=f"near character {self.base + len(self.buf)}",
            ) from None
        if not data:
            self.eof = True
        self.base += self.pos
        self.buf = self.buf[self.pos :] + text
        self.pos = 0
        return bool(text) or not self.eof

    def fail(self, problem: str, pos: int | None = None, where: str | None = None) -> ProfileError:
        at = self.base + (self.pos if pos is None else pos)
        return ProfileError(
            self.path, problem, where=f"{where}, character {at}" if where else f"character {at}"
        )

    def skip_ws(self) -> str:
        """Skip whitespace; the next character ("" at the end of the text)."""
        while True:
            self.pos = _WS.match(self.buf, self.pos).end()
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self.more():
                return ""

    def value(self, where: str) -> Any:
        """Parse the JSON value at the current position."""
        while True:
            if not self.skip_ws():
                raise self.fail("the file ends early (truncated JSON)", where=where)
            try:
                obj, end = self.scan(self.buf, self.pos)
            except RecursionError:
                raise self.fail("JSON nested too deeply", where=where) from None
            except StopIteration as e:
                err, msg = e.value, "Expecting value"
            except json.JSONDecodeError as e:
                err, msg = e.pos, e.msg
            else:
                # a number near the end of the piece may go on ("1." + "5", "2e" + "3")
                if self.eof or end + _NUMBER_TAIL < len(self.buf) or not _is_number(obj):
                    self.pos = end
                    return obj
                self.more()
                continue
            if self._need_more(err, msg):
                continue
            raise self.fail(self._problem(err, msg), err, where)

    def _problem(self, err: int, msg: str) -> str:
        if self.eof and (err >= len(self.buf) - 8 or msg.startswith("Unterminated string")):
            return f"the file ends early (truncated JSON: {msg})"
        return f"invalid JSON: {msg}"

    def _need_more(self, err: int, msg: str) -> bool:
        if self.eof:
            return False
        if err >= len(self.buf) - 8 or msg.startswith("Unterminated string"):
            self.more()
            return True
        return False

    def items(
        self,
        meta: dict[str, Any],
        list_key: str,
        what: str = "the expected document",
        array_ok: bool = False,
    ) -> Iterator[Any]:
        """The elements of every top-level list ``list_key`` (the key may repeat);
        the other top-level keys go to ``meta``. ``what`` names the expected
        document in error messages (``"a Kineto trace"``). ``array_ok``: a
        top-level list is the list itself (a Chrome trace's JSON Array form)."""
        for batch in self.batches(meta, list_key, what, array_ok):
            yield from batch

    def batches(
        self,
        meta: dict[str, Any],
        list_key: str,
        what: str = "the expected document",
        array_ok: bool = False,
    ) -> Iterator[list[Any]]:
        """:meth:`items` as lists of consecutive elements (those decoded by one
        ``json.loads`` call, or one element where a stretch is read one at a
        time: here the last element, after the last ``},``), for a caller that
        loops over them itself: one generator step per batch instead of per
        element.

        >>> import json, tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "t.json"
        >>> _ = p.write_text(json.dumps({"items": [{"x": 1}, {"x": 2}], "b": 3}))
        >>> st = JsonStream(p)
        >>> meta = {}
        >>> [[e["x"] for e in b] for b in st.batches(meta, "items")], meta
        ([[1], [2]], {'b': 3})
        >>> st.close()
        """
        if array_ok and self.skip_ws() == "[":
            self.pos += 1
            # the trace-event format's array form may end without its "]" (a
            # process that crashed): the elements up to the end are the list
            yield from self._elements(list_key, open_end=True)
            if self.skip_ws():
                raise self.fail("extra data after the JSON list")
            return
        if self.skip_ws() != "{":
            raise self.fail(f"expected a JSON object with {list_key!r} ({what})")
        self.pos += 1
        seen_list = False
        first = True
        while True:
            c = self.skip_ws()
            if c == "}" and first:
                self.pos += 1
                break
            if c != '"':
                raise self.fail("expected a key (a string) in the top-level object")
            key = self.value("top level")
            if self.skip_ws() != ":":
                raise self.fail(f"expected ':' after the key {key!r}")
            self.pos += 1
            if key == list_key:
                if self.skip_ws() != "[":
                    raise self.fail("expected a list", where=list_key)
                self.pos += 1
                seen_list = True
                yield from self._elements(list_key)
            else:
                meta[key] = self.value(key)
            first = False
            c = self.skip_ws()
            if c == ",":
                self.pos += 1
                continue
            if c == "}":
                self.pos += 1
                break
            raise self.fail("expected ',' or '}' in the top-level object")
        if self.skip_ws():
            raise self.fail("extra data after the JSON object")
        if not seen_list:
            raise ProfileError(self.path, f"no {list_key!r} list (not {what})", "top level")

    def _elements(self, key: str, open_end: bool = False) -> Iterator[list[Any]]:
        """The elements of the list at the current position, in batches;
        ``open_end``: the text may end after an element (or its comma) without
        the list's ``]`` (then :attr:`unterminated` is True)."""
        scan = self.scan
        ws = _WS.match
        buf, pos, n = self.buf, self.pos, len(self.buf)
        k = 0
        after = False  # just read an element: expect ',' or ']'
        loads = _json.loads
        base = self.base
        no_batch = -1  # no batch before this absolute position (a cut there failed)
        while True:
            pos = ws(buf, pos).end()
            if pos >= n:
                self.pos = pos
                if not self.more():
                    if open_end and k:
                        self.unterminated = True
                        return
                    raise self.fail("the file ends early (truncated JSON)", where=f"{key}[{k}]")
                buf, pos, n, base = self.buf, self.pos, len(self.buf), self.base
                continue
            c = buf[pos]
            if after:
                if c == ",":
                    pos += 1
                    after = False
                    continue
                if c == "]":
                    self.pos = pos + 1
                    return
                self.pos = pos
                raise self.fail("expected ',' or ']' after an element", where=f"{key}[{k - 1}]")
            if c == "]" and k == 0:
                self.pos = pos + 1
                return
            if base + pos > no_batch:
                if n - pos < BATCH and not self.eof:
                    # a whole batch's text first: else the piece's tail (less than
                    # one element) finds no cut, and a batch's worth of elements
                    # would be read one at a time
                    self.pos = pos
                    self.more()
                    buf, pos, n, base = self.buf, self.pos, len(self.buf), self.base
                    continue
                # many elements in one call: json.loads shares the keys among them
                # (scan_once makes new key strings per call). A cut at a "}," that
                # is not between two elements leaves brackets open and fails.
                cut = buf.rfind("},", pos, pos + BATCH)
                if cut <= pos:
                    no_batch = base + pos + BATCH
                else:
                    try:
                        batch = loads("[" + buf[pos : cut + 1] + "]")
                    except (ValueError, RecursionError):
                        no_batch = base + cut
                    else:
                        k += len(batch)
                        yield batch
                        del batch
                        pos = cut + 1
                        after = True
                        continue
            try:
                ev, pos = scan(buf, pos)
            except RecursionError:
                self.pos = pos
                raise self.fail("JSON nested too deeply", where=f"{key}[{k}]") from None
            except (StopIteration, json.JSONDecodeError) as e:
                err, msg = (
                    (e.value, "Expecting value") if isinstance(e, StopIteration) else (e.pos, e.msg)  # type: ignore[union-attr]
                )
                self.pos = pos
                if self._need_more(err, msg):
                    buf, pos, n, base = self.buf, self.pos, len(self.buf), self.base
                    continue
                raise self.fail(self._problem(err, msg), err, f"{key}[{k}]") from None
            k += 1
            after = True
            yield [ev]
