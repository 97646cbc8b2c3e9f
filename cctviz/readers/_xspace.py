"""XSpace, the protobuf of an XPlane file (``*.xplane.pb``), decoded into columns.

The schema (``tsl/profiler/protobuf/xplane.proto``; field numbers as there):

- ``XSpace``: planes 1, errors 2, warnings 3, hostnames 4;
- ``XPlane``: id 1, name 2, lines 3, event_metadata 4 (map id -> XEventMetadata),
  stat_metadata 5 (map id -> XStatMetadata), stats 6;
- ``XLine``: id 1, name 2, timestamp_ns 3 (epoch ns), events 4, duration_ps 9,
  display_id 10, display_name 11;
- ``XEvent``: metadata_id 1, offset_ps 2 (from the line's timestamp_ns) or
  num_occurrences 5 (an aggregated event), duration_ps 3, stats 4;
- ``XStat``: metadata_id 1, and one of double 2, uint64 3, int64 4, str 5,
  bytes 6, ref 7 (the name of the stat metadata of that id);
- ``XEventMetadata``: id 1, name 2, metadata 3, display_name 4, stats 5, child_id 6;
- ``XStatMetadata``: id 1, name 2, description 3.

Fields of another number (a newer schema) are skipped and counted per message
in :attr:`Space.unknown`, so that the reader can say what it left out.

>>> path = "tests/data/jax-xplane/collectives-2cpu.xplane.pb"
>>> space = decode(open(path, "rb").read())
>>> [p.name for p in space.planes][:2]
['/host:metadata', '/host:CPU']
"""

from __future__ import annotations

from array import array
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._protobuf import I64, LEN, VARINT, WireError, double, fields, signed, varint


@dataclass
class Line:
    """One timeline of a plane: its events as columns (``stats``: per stat name,
    the events that carry it and the values)."""

    id: int = 0
    name: str = ""
    display_name: str = ""
    timestamp_ns: int = 0
    duration_ps: int = 0
    metadata_id: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    offset_ps: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    duration: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))  # ps
    stats: dict[str, tuple[list[int], list[Any]]] = field(default_factory=dict)


@dataclass
class EventMetadata:
    id: int = 0
    name: str = ""
    display_name: str = ""
    stats: dict[str, Any] = field(default_factory=dict)


@dataclass
class Plane:
    id: int = 0
    name: str = ""
    lines: list[Line] = field(default_factory=list)
    event_metadata: dict[int, EventMetadata] = field(default_factory=dict)
    stats: dict[str, Any] = field(default_factory=dict)
    #: the plane's events as one table, made once by the reader that asks
    #: (:func:`cctviz.readers.xplane.plane_events`)
    events: Any = field(default=None, repr=False, compare=False)


@dataclass
class Space:
    planes: list[Plane] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    hostnames: list[str] = field(default_factory=list)
    #: (message, field number) -> how often a field this schema does not know was seen
    unknown: Counter = field(default_factory=Counter)


def _text(raw: Any) -> str:
    return bytes(raw).decode("utf-8", "replace")


def decode(buf: bytes) -> Space:
    """The XSpace in ``buf``. Raises :class:`~cctviz.readers._protobuf.WireError`
    for bytes that are not a protobuf message, ValueError for one whose fields
    have the wrong wire type for the schema."""
    mv = memoryview(buf)
    space = Space()
    raw_planes = []
    for f, wt, v in fields(mv):
        if f == 1 and wt == LEN:
            raw_planes.append(v)
        elif f in (2, 3, 4) and wt == LEN:
            (space.errors, space.warnings, space.hostnames)[f - 2].append(_text(v))
        else:
            space.unknown["XSpace", f] += 1
    space.planes = [_plane(v, space.unknown) for v in raw_planes]
    return space


def _map_entry(raw: Any, unknown: Counter, what: str) -> tuple[int, Any]:
    key, value = 0, b""
    for f, wt, v in fields(raw):
        if f == 1 and wt == VARINT:
            key = signed(v)
        elif f == 2 and wt == LEN:
            value = v
        else:
            unknown[what, f] += 1
    return key, value


def _plane(raw: Any, unknown: Counter) -> Plane:
    plane = Plane()
    lines, stats, stat_names = [], [], {}
    metas = []
    for f, wt, v in fields(raw):
        if f == 1 and wt == VARINT:
            plane.id = signed(v)
        elif f == 2 and wt == LEN:
            plane.name = _text(v)
        elif f == 3 and wt == LEN:
            lines.append(v)
        elif f == 4 and wt == LEN:
            metas.append(_map_entry(v, unknown, "XPlane.event_metadata")[1])
        elif f == 5 and wt == LEN:
            key, value = _map_entry(v, unknown, "XPlane.stat_metadata")
            stat_names[key] = _stat_metadata_name(value, unknown)
        elif f == 6 and wt == LEN:
            stats.append(v)
        else:
            unknown["XPlane", f] += 1
    plane.stats = dict(_stat(s, stat_names, unknown) for s in stats)
    for m in metas:
        em = _event_metadata(m, stat_names, unknown)
        plane.event_metadata[em.id] = em
    plane.lines = [_line(v, stat_names, unknown) for v in lines]
    return plane


def _stat_metadata_name(raw: Any, unknown: Counter) -> str:
    name = ""
    for f, wt, v in fields(raw):
        if f == 2 and wt == LEN:
            name = _text(v)
        elif f not in (1, 3):
            unknown["XStatMetadata", f] += 1
    return name


def _event_metadata(raw: Any, stat_names: dict[int, str], unknown: Counter) -> EventMetadata:
    em = EventMetadata()
    for f, wt, v in fields(raw):
        if f == 1 and wt == VARINT:
            em.id = signed(v)
        elif f == 2 and wt == LEN:
            em.name = _text(v)
        elif f == 4 and wt == LEN:
            em.display_name = _text(v)
        elif f == 5 and wt == LEN:
            k, val = _stat(v, stat_names, unknown)
            em.stats[k] = val
        elif f not in (3, 6):  # metadata (serialized, tool-specific), child_id
            unknown["XEventMetadata", f] += 1
    return em


def _stat(raw: Any, stat_names: dict[int, str], unknown: Counter) -> tuple[str, Any]:
    """(name, value) of an XStat; a ``ref`` value is the name it refers to,
    ``bytes`` stay bytes."""
    sid, value = 0, None
    for f, wt, v in fields(raw):
        if f == 1 and wt == VARINT:
            sid = v
        elif f == 2 and wt == I64:
            value = double(v)
        elif f == 3 and wt == VARINT:
            value = v
        elif f == 4 and wt == VARINT:
            value = signed(v)
        elif f == 5 and wt == LEN:
            value = _text(v)
        elif f == 6 and wt == LEN:
            value = bytes(v)
        elif f == 7 and wt == VARINT:
            value = stat_names.get(v, "")
        else:
            unknown["XStat", f] += 1
    return stat_names.get(sid, f"stat {sid}"), value


def _line(raw: Any, stat_names: dict[int, str], unknown: Counter) -> Line:
    line = Line()
    meta, offset, dur = array("q"), array("q"), array("q")
    stats: dict[str, tuple[list[int], list[Any]]] = {}
    for f, wt, v in fields(raw):
        if f == 4 and wt == LEN:
            _event(v, len(meta), meta, offset, dur, stats, stat_names, unknown)
        elif f == 1 and wt == VARINT:
            line.id = signed(v)
        elif f == 2 and wt == LEN:
            line.name = _text(v)
        elif f == 3 and wt == VARINT:
            line.timestamp_ns = signed(v)
        elif f == 9 and wt == VARINT:
            line.duration_ps = signed(v)
        elif f == 10 and wt == VARINT:
            pass  # display_id
        elif f == 11 and wt == LEN:
            line.display_name = _text(v)
        else:
            unknown["XLine", f] += 1
    line.metadata_id = np.frombuffer(meta, np.int64) if len(meta) else np.empty(0, np.int64)
    line.offset_ps = np.frombuffer(offset, np.int64) if len(offset) else np.empty(0, np.int64)
    line.duration = np.frombuffer(dur, np.int64) if len(dur) else np.empty(0, np.int64)
    line.stats = stats
    return line


def _event(
    raw: Any,
    k: int,
    meta: array,
    offset: array,
    dur: array,
    stats: dict[str, tuple[list[int], list[Any]]],
    stat_names: dict[int, str],
    unknown: Counter,
) -> None:
    """One XEvent appended to the line's columns (an aggregated event, with
    ``num_occurrences`` and no offset, gets offset -1)."""
    m, off, d = 0, -1, 0
    pos, end = 0, len(raw)
    while pos < end:  # the hot loop: fields read inline
        try:
            key, pos = varint(raw, pos)
            wt = key & 7
            if wt == VARINT:
                v, pos = varint(raw, pos)
                f = key >> 3
                if f == 1:
                    m = v
                elif f == 2:
                    off = signed(v)
                elif f == 3:
                    d = signed(v)
                elif f != 5:
                    unknown["XEvent", f] += 1
            elif wt == LEN:
                n, pos = varint(raw, pos)
                if pos + n > end:
                    raise WireError(f"a field of {n} bytes runs past the event's end")
                if key >> 3 == 4:
                    name, value = _stat(raw[pos : pos + n], stat_names, unknown)
                    at, vals = stats.setdefault(name, ([], []))
                    at.append(k)
                    vals.append(value)
                else:
                    unknown["XEvent", key >> 3] += 1
                pos += n
            elif wt == I64:
                pos += 8
                unknown["XEvent", key >> 3] += 1
            elif wt == 5:
                pos += 4
                unknown["XEvent", key >> 3] += 1
            else:
                raise WireError(f"wire type {wt} in an event")
        except IndexError:
            raise WireError("the bytes end inside an event") from None
    meta.append(m)
    offset.append(off)
    dur.append(d)


__all__ = ["EventMetadata", "Line", "Plane", "Space", "decode"]
