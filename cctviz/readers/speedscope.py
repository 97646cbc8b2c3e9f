"""speedscope's JSON file format (https://www.speedscope.app/file-format-schema.json).

The format py-spy (``--format speedscope``), rbspy, pyinstrument's speedscope
renderer, Austin and others write, and the one speedscope.app imports:

- ``shared.frames``: a list of frames ``{"name", "file"?, "line"?, "col"?}``;
  profiles refer to frames by their index in this list.
- ``profiles``: a list; each is ``{"type": "sampled" | "evented", "name",
  "unit", "startValue", "endValue", ...}`` with ``unit`` one of ``none``,
  ``nanoseconds``, ``microseconds``, ``milliseconds``, ``seconds``, ``bytes``.
- A **sampled** profile has ``samples`` (each a stack of frame indices,
  outermost first) and ``weights`` (one number per sample): the weight of a
  sample is exclusive to its last frame.
- An **evented** profile has ``events``: ``{"type": "O" | "C", "at", "frame"}``
  (open/close of a frame at a time, in non-decreasing ``at`` order, closes
  matching the innermost open frame). The time between two events is
  exclusive to the innermost open frame; each open counts one call.

What cctviz makes of it:

- A node per call path (frames merged by frame index under the same parent);
  node columns ``file``, ``line`` (and ``col``) when the frames give them.
- Metric name by unit: ``time`` for the four time units (unit kept in
  ``meta["units"]`` as ``ns``/``us``/``ms``/``s``; profiles in different time
  units are converted to the first one's), ``bytes`` for ``bytes``,
  ``samples`` for ``none`` in a sampled profile (weights are sample counts),
  ``time`` (without a unit: the file does not say it) for ``none`` in an
  evented one, whose values are always spans of ``at``;
  ``metric=`` renames it. Evented profiles also give ``calls`` (opens).
- A sample with an empty stack (a thread caught without a frame) counts,
  under a root named ``(no frames)``, so that the weights add up to the
  file's.
  Every metric is a sum (``meta["aggregation"]``): weights and spans add up.
  The unit is the file's own (``unit``, required by the schema): nothing is
  assumed.
- A profile without samples or events (an idle thread) has no node: it is
  left out, named in a warning and in ``meta["empty_profiles"]``.
- One profile gives a Tree (``meta["profile_name"]``); several profiles (py-spy
  writes one per thread) give an Ensemble with one profile each, its
  ``profiles`` table holding ``profile_name``; a name made of ``key=value``
  pairs separated by ``, `` (what cctviz's writer puts there for an
  Ensemble) also gives one column per key.
- An evented profile whose frames are still open at the end is closed at
  ``endValue`` (or its last event), flagged: a warning, and the number of
  frames closed so per profile in ``meta["closed_at_end"]``; a close that
  does not match the innermost
  open frame, a time going backwards, a frame index outside ``shared.frames``
  is a :class:`~cctviz.ProfileError` naming the place.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import ProfileError
from ..model.build import NO_FRAMES, NestingError, nest_enter_leave, stacks_to_tree
from ..model.ensemble import Ensemble
from ..model.tree import Tree
from . import register
from ._json import expect, first_byte, load_json

SCHEMA = "https://www.speedscope.app/file-format-schema.json"
TIME_UNITS = {"nanoseconds": "ns", "microseconds": "us", "milliseconds": "ms", "seconds": "s"}
SECONDS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
UNITS = (*TIME_UNITS, "bytes", "none")
#: the frame key of samples with an empty stack (py-spy's samples of a thread
#: without Python frames): a root named ``(no frames)``
NO_FRAME = -1


def _sniff(path: Path, h: bytes) -> bool:
    if first_byte(h) != b"{":
        return False
    if b"speedscope.app/file-format-schema" in h:
        return True
    return b'"shared"' in h and b'"frames"' in h and b'"profiles"' in h


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and np.isfinite(v)


def _frames(path: Path, doc: dict) -> list[dict]:
    shared = doc.get("shared")
    expect(path, isinstance(shared, dict), "shared", "expected an object with 'frames'")
    frames = shared.get("frames")
    expect(path, isinstance(frames, list), "shared.frames", "expected a list of frames")
    for i, f in enumerate(frames):
        expect(
            path,
            isinstance(f, dict) and isinstance(f.get("name"), str),
            f"shared.frames[{i}]",
            "expected a frame {'name': string, 'file'?, 'line'?, 'col'?}",
        )
        for k in ("line", "col"):
            if f.get(k) is not None:
                expect(path, _is_num(f[k]), f"shared.frames[{i}].{k}", "expected a number")
    return frames


def _sampled(path: Path, prof: dict, where: str, nf: int) -> tuple[np.ndarray, list, dict]:
    samples, weights = prof.get("samples"), prof.get("weights")
    expect(path, isinstance(samples, list), f"{where}.samples", "expected a list of stacks")
    expect(path, isinstance(weights, list), f"{where}.weights", "expected a list of numbers")
    expect(
        path,
        len(weights) == len(samples),
        f"{where}.weights",
        f"{len(weights)} weights for {len(samples)} samples",
    )
    agg: dict[tuple, float] = {}
    for k, (s, w) in enumerate(zip(samples, weights)):
        if not isinstance(s, list) or not all(
            isinstance(x, int) and not isinstance(x, bool) and 0 <= x < nf for x in s
        ):
            raise ProfileError(
                path,
                f"expected a list of frame indices (0..{nf - 1})",
                where=f"{where}.samples[{k}]",
            )
        expect(path, _is_num(w), f"{where}.weights[{k}]", f"expected a number, got {w!r}")
        key = tuple(s)
        agg[key] = agg.get(key, 0.0) + float(w)
    parent, keys, w = stacks_to_tree(agg, list(agg.values()), empty=NO_FRAME)
    return parent, keys, {"value": w}


def _evented(path: Path, prof: dict, where: str, nf: int) -> tuple[np.ndarray, list, dict, int]:
    """Open/Close events -> call-path tree (the model's Enter/Leave builder):
    exclusive time (the time a frame is innermost) and calls per node; and how
    many frames were still open at the end (closed there)."""
    events = prof.get("events")
    expect(path, isinstance(events, list), f"{where}.events", "expected a list of events")
    for k, ev in enumerate(events):  # the JSON objects themselves; arrays from here on
        w = f"{where}.events[{k}]"
        expect(path, isinstance(ev, dict), w, "expected an event {'type', 'at', 'frame'}")
        typ, at, fr = ev.get("type"), ev.get("at"), ev.get("frame")
        expect(path, typ in ("O", "C"), f"{w}.type", f"expected 'O' or 'C', got {typ!r}")
        expect(path, _is_num(at), f"{w}.at", f"expected a number, got {at!r}")
        expect(
            path,
            isinstance(fr, int) and not isinstance(fr, bool) and 0 <= fr < nf,
            f"{w}.frame",
            f"expected a frame index (0..{nf - 1}), got {fr!r}",
        )
    at = np.asarray([ev["at"] for ev in events], dtype=np.float64)
    frame = np.asarray([ev["frame"] for ev in events], dtype=np.int64)
    opens = np.asarray([ev["type"] == "O" for ev in events], dtype=bool)
    back = np.flatnonzero(np.diff(at) < 0)
    if back.size:
        k = int(back[0]) + 1
        raise ProfileError(
            path,
            f"time goes backwards ({at[k]:g} after {at[k - 1]:g})",
            where=f"{where}.events[{k}].at",
        )
    end = prof.get("endValue")
    last = float(at[-1]) if at.size else 0.0
    close_at = float(end) if _is_num(end) and end > last else last
    try:
        nest = nest_enter_leave(np.where(opens, frame, -1 - frame), at, close_at)
    except NestingError as e:
        k = e.event
        raise ProfileError(
            path, f"closes frame {int(frame[k])}: {e}", where=f"{where}.events[{k}]"
        ) from None
    n_ctx = nest["ctx_parent"].shape[0]
    inclusive = np.bincount(nest["ctx"], weights=nest["inc"], minlength=n_ctx)
    children = np.bincount(nest["parent_ctx"], weights=nest["inc"], minlength=n_ctx)
    calls = np.bincount(nest["ctx"], minlength=n_ctx).astype(np.float64)
    # context 0 is the builder's root: the profile's top frames are roots here
    return (
        nest["ctx_parent"][1:] - 1,
        nest["ctx_region"][1:].tolist(),
        {"value": (inclusive - children)[1:], "calls": calls[1:]},
        int(nest["unclosed"]),
    )


_PAIR = re.compile(r"^([A-Za-z_][\w .-]*)=(.*)$")


def _name_columns(names: list[str]) -> pd.DataFrame:
    """``profile_name`` plus one column per ``key=value`` pair when every name is
    made of the same keys."""
    out = pd.DataFrame({"profile_name": names})
    parsed: list[dict[str, Any]] = []
    for n in names:
        d: dict[str, Any] = {}
        for part in n.split(", "):
            m = _PAIR.match(part)
            if not m:
                return out
            d[m.group(1)] = _coerce(m.group(2))
        parsed.append(d)
    if parsed and all(p.keys() == parsed[0].keys() for p in parsed):
        for key in parsed[0]:
            if key != "profile_name":
                out[key] = [p[key] for p in parsed]
    return out


def _coerce(v: str) -> Any:
    for t in (int, float):
        try:
            return t(v)
        except ValueError:
            pass
    return v


@register("speedscope", _sniff, "speedscope JSON (sampled and evented profiles; py-spy, rbspy)")
def read_speedscope(path: Path, metric: str | None = None) -> Tree | Ensemble:
    """Read a speedscope file: a Tree for one profile, an Ensemble for several.

    Args:
        path: the ``.speedscope.json`` file.
        metric: name of the weight metric (default by unit: ``time``,
            ``bytes`` or ``samples``).

    Example:
        >>> import cctviz, json, tempfile, os
        >>> doc = {"$schema": "https://www.speedscope.app/file-format-schema.json",
        ...   "shared": {"frames": [{"name": "main"}, {"name": "work", "file": "w.py", "line": 3}]},
        ...   "profiles": [{"type": "sampled", "name": "t", "unit": "seconds", "startValue": 0,
        ...                 "endValue": 4, "samples": [[0, 1], [0], [0, 1]], "weights": [1, 1, 2]}]}
        >>> p = os.path.join(tempfile.mkdtemp(), "p.speedscope.json")
        >>> _ = open(p, "w").write(json.dumps(doc))
        >>> t = cctviz.read(p)
        >>> t.metrics["time (inc)"].tolist(), t.units
        ([4.0, 3.0], {'time': 's'})
    """
    doc = load_json(path)
    expect(
        path, isinstance(doc, dict), "top level", "expected an object with 'shared' and 'profiles'"
    )
    frames = _frames(path, doc)
    profiles = doc.get("profiles")
    expect(path, isinstance(profiles, list) and profiles, "profiles", "expected a non-empty list")
    trees: list[Tree] = []
    names: list[str] = []
    empty: list[str] = []
    unclosed: dict[str, int] = {}  # evented profile -> frames closed at its end
    time_unit: str | None = None
    for j, prof in enumerate(profiles):
        where = f"profiles[{j}]"
        expect(path, isinstance(prof, dict), where, "expected a profile object")
        typ, unit = prof.get("type"), prof.get("unit", "none")
        expect(path, unit in UNITS, f"{where}.unit", f"expected one of {list(UNITS)}, got {unit!r}")
        pname = prof.get("name")
        pname = str(pname) if pname is not None else f"profile {j}"
        if typ == "sampled":
            parent, keys, vals = _sampled(path, prof, where, len(frames))
        elif typ == "evented":
            parent, keys, vals, still_open = _evented(path, prof, where, len(frames))
            if still_open:
                unclosed[pname] = still_open
        else:
            raise ProfileError(
                path, f"expected type 'sampled' or 'evented', got {typ!r}", where=f"{where}.type"
            )
        if not keys:  # a profile without samples or events (an idle thread)
            empty.append(pname)
            continue
        units: dict[str, str] = {}
        if unit in TIME_UNITS:
            u = TIME_UNITS[unit]
            time_unit = time_unit or u
            vals["value"] = vals["value"] * (SECONDS[u] / SECONDS[time_unit])
            name = metric or "time"
            units[name] = time_unit
        elif unit == "bytes":
            name = metric or "bytes"
            units[name] = "B"
        else:  # unit "none": sample counts, or times in a unit the file does not say
            name = metric or ("time" if typ == "evented" else "samples")
        data = {name: vals.pop("value"), **vals}
        fr = [frames[k] if k != NO_FRAME else {"name": NO_FRAMES} for k in keys]
        cols = {
            c: [f.get(c) for f in fr] for c in ("file", "line", "col") if any(c in f for f in fr)
        }
        meta: dict[str, Any] = {"profile_name": pname, "aggregation": dict.fromkeys(data, "sum")}
        if units:
            meta["units"] = units
        trees.append(
            Tree.from_parents(
                parent, [f["name"] for f in fr], data, columns=cols or None, meta=meta
            )
        )
        names.append(pname)
    expect(path, bool(trees), "profiles", "no profile holds a sample or an event")
    file_meta: dict[str, Any] = {
        k: doc[k] for k in ("name", "exporter") if isinstance(doc.get(k), str)
    }
    if unclosed:
        file_meta["closed_at_end"] = unclosed
        warnings.warn(
            f"{path}: frames still open at the end of an evented profile were closed at "
            "its endValue (or its last event): "
            + ", ".join(f"{n} in {p!r}" for p, n in list(unclosed.items())[:5]),
            stacklevel=3,
        )
    if empty:
        file_meta["empty_profiles"] = empty
        warnings.warn(
            f"{path}: profiles without a sample or an event are left out: "
            + ", ".join(repr(n) for n in empty[:5])
            + (f" and {len(empty) - 5} more" if len(empty) > 5 else ""),
            stacklevel=3,
        )
    if len(trees) == 1:
        t = trees[0]
        t.meta.update(file_meta)
        return t
    return Ensemble.from_trees(trees, profiles=_name_columns(names), meta=file_meta)
