"""pyinstrument's JSON output, in its two forms.

- **Rendered JSON** (``pyinstrument -r json``, ``Profiler.output(JSONRenderer())``):
  ``{"start_time", "duration", "sample_count", "program" (pyinstrument < 4) or
  "target_description", "cpu_time", "root_frame": frame}`` where a frame is
  ``{"function", "file_path_short", "file_path", "line_no", "time",
  "is_application_code", "children": [frames], "group_id"?, "class_name"?,
  "await_time"?}``. ``time`` is **inclusive** (seconds): exclusive time is
  ``time`` minus the children's ``time``, as Hatchet's reader computes it.
  pyinstrument's renderer has already processed the tree (library frames
  grouped, ``[self]`` frames for self time, ...): nodes are taken as they are.
- **Saved session** (``Session.save``, ``.pyisession``, ``pyinstrument -r
  session``): ``{"frame_records": [[stack, seconds], ...], "start_time",
  "duration", "sample_count", "start_call_stack", ...}``; a stack is a list of
  frame strings ``function\\x00file\\x00line`` (optionally followed by
  ``\\x01``-separated attributes such as ``c<class name>`` and ``l<line>``,
  which are invocation details and not part of the frame's identity), and the
  seconds are exclusive to the stack's last frame. Here the tree is the raw
  call-path tree of the records (no pyinstrument processing).
- **The HTML page** (``pyinstrument -r html``, ``Profiler.output_html()``) holds
  ``{"session": {...}, "frame_tree": frame}`` in a script (``const sessionData
  = ...``; this JSON is also read alone): a frame is ``{"identifier":
  "function\\x00file\\x00line", "time", "attributes", "children"}``, ``time``
  inclusive, the tree processed as the rendered JSON's is.

Nodes: ``name`` = function, columns ``file`` (the full path), ``file_short``
(rendered form only), ``line``, ``is_application_code``/``group_id``/
``class_name`` when present. Metric ``time`` (and ``await_time``, the time
spent awaiting, when the frames have it: inclusive too), in seconds (the
file states no unit: ``meta["units_assumed"]`` says so), sums. Session-level
numbers (``duration``, ``sample_count``, ``cpu_time``, ``start_time``) and
the program (``program``) go to ``meta``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ProfileError
from ..model.build import stacks_to_tree
from ..model.tree import Tree
from . import register
from ._json import expect, file_bytes, first_byte, load_json

META_KEYS = ("start_time", "duration", "sample_count", "cpu_time", "min_interval", "max_interval")


#: what pyinstrument's HTML page holds: its renderer, and the session's data
HTML_MARK, HTML_DATA = b"pyinstrumentHTMLRenderer", "const sessionData = "


def _sniff(path: Path, h: bytes) -> bool:
    if h.lstrip()[:15].lower() == b"<!doctype html>":
        return HTML_MARK in h
    if first_byte(h) != b"{":
        return False
    if b'"root_frame"' in h and b'"function"' in h and b'"file_path' in h:
        return True
    if b'"frame_tree"' in h and b'"identifier"' in h:
        return True
    return b'"frame_records"' in h and (b'"start_call_stack"' in h or b'"sample_count"' in h)


def _num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and np.isfinite(v)


SECONDS_REASON = (
    "pyinstrument's JSON states no unit; its frame times, like its session's duration, are seconds"
)


def _meta(doc: dict, metrics: tuple[str, ...] = ("time",)) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "units": dict.fromkeys(metrics, "s"),
        "units_assumed": dict.fromkeys(metrics, SECONDS_REASON),
        "aggregation": dict.fromkeys(metrics, "sum"),
    }
    for k in META_KEYS:
        if _num(doc.get(k)):
            meta[k] = doc[k]
    prog = doc.get("target_description", doc.get("program"))
    if isinstance(prog, str):
        meta["program"] = prog
    return meta


def _rendered(path: Path, doc: dict) -> Tree:
    root = doc["root_frame"]
    expect(
        path,
        isinstance(root, dict),
        "root_frame",
        "expected a frame object (the session is empty?)",
    )
    parent: list[int] = []
    rows: list[dict[str, Any]] = []
    stack: list[tuple[dict, int, str]] = [(root, -1, "root_frame")]
    while stack:
        fr, par, where = stack.pop()
        expect(path, isinstance(fr, dict), where, "expected a frame object")
        expect(path, isinstance(fr.get("function"), str), f"{where}.function", "expected a string")
        expect(
            path,
            _num(fr.get("time")),
            f"{where}.time",
            f"expected a number, got {fr.get('time')!r}",
        )
        kids = fr.get("children", [])
        expect(path, isinstance(kids, list), f"{where}.children", "expected a list of frames")
        me = len(parent)
        parent.append(par)
        rows.append(fr)
        for j in range(len(kids) - 1, -1, -1):
            stack.append((kids[j], me, f"{where}.children[{j}]"))
    inc = {"time": np.array([float(f["time"]) for f in rows])}
    if any("await_time" in f for f in rows):  # pyinstrument >= 4: time spent awaiting
        for k, f in enumerate(rows):
            if "await_time" in f:
                expect(
                    path,
                    _num(f["await_time"]),
                    f"frame {k}.await_time",
                    f"expected a number, got {f['await_time']!r}",
                )
        inc["await_time"] = np.array([float(f.get("await_time", 0.0)) for f in rows])
    cols: dict[str, list] = {
        "file": [f.get("file_path") for f in rows],
        "file_short": [f.get("file_path_short") for f in rows],
        "line": [f.get("line_no") for f in rows],
    }
    for c in ("is_application_code", "group_id", "class_name"):
        if any(c in f for f in rows):
            cols[c] = [f.get(c) for f in rows]
    return Tree.from_parents(
        parent,
        [f["function"] for f in rows],
        None,
        columns=cols,
        meta=_meta(doc, tuple(inc)),
        inclusive=inc,
    )


def _frame_key(info: str) -> str:
    return info.split("\x01", 1)[0]


def _session(path: Path, doc: dict) -> Tree:
    recs = doc["frame_records"]
    expect(path, isinstance(recs, list), "frame_records", "expected a list of [stack, time]")
    agg: dict[tuple[str, ...], float] = {}
    for k, r in enumerate(recs):
        ok = (
            isinstance(r, list)
            and len(r) == 2
            and isinstance(r[0], list)
            and all(isinstance(s, str) for s in r[0])
            and _num(r[1])
        )
        expect(path, ok, f"frame_records[{k}]", "expected [[frame strings...], seconds]")
        key = tuple(_frame_key(s) for s in r[0])
        agg[key] = agg.get(key, 0.0) + float(r[1])
    expect(path, bool(agg), "frame_records", "no records: the session is empty")
    parent, keys, w = stacks_to_tree(agg, list(agg.values()))
    names, files, lines = [], [], []
    for k in keys:
        parts = str(k).split("\x00")
        names.append(parts[0])
        files.append(parts[1] if len(parts) > 1 else None)
        ln = parts[2] if len(parts) > 2 else ""
        lines.append(int(ln) if ln.lstrip("-").isdigit() else None)
    return Tree.from_parents(
        parent, names, {"time": w}, columns={"file": files, "line": lines}, meta=_meta(doc)
    )


def _frame_tree(path: Path, doc: dict) -> Tree:
    """The HTML renderer's ``{"session": ..., "frame_tree": frame}``: a frame is
    ``{"identifier": "function\\x00file\\x00line", "time", "attributes",
    "children"}`` (``time`` inclusive, the tree as pyinstrument processed it:
    ``[self]`` frames for self time); read as the rendered JSON is."""
    session = doc.get("session")
    expect(path, isinstance(session, dict), "session", "expected the session's object")
    root = doc.get("frame_tree")
    expect(path, isinstance(root, dict), "frame_tree", "expected a frame (the session is empty?)")
    out: dict[str, Any] = {}
    stack: list[tuple[Any, dict, str]] = [(root, out, "frame_tree")]
    while stack:  # iteratively: a deep recursion's tree is deep
        fr, into, where = stack.pop()
        expect(path, isinstance(fr, dict), where, "expected a frame object")
        ident = fr.get("identifier")
        expect(path, isinstance(ident, str), f"{where}.identifier", "expected a string")
        parts = ident.split("\x00")
        line = parts[2] if len(parts) > 2 else ""
        into.update(function=parts[0], time=fr.get("time"),
                    file_path=parts[1] if len(parts) > 1 else None,
                    line_no=int(line) if line.lstrip("-").isdigit() else None)  # fmt: skip
        kids = fr.get("children", [])
        expect(path, isinstance(kids, list), f"{where}.children", "expected a list of frames")
        into["children"] = [{} for _ in kids]
        stack += [(k, into["children"][j], f"{where}.children[{j}]") for j, k in enumerate(kids)]
    return _rendered(path, {**session, "root_frame": out})


def _load(path: Path) -> Any:
    """The file's JSON: the document, or the session data an HTML page holds."""
    raw = file_bytes(path)
    if not raw.lstrip()[:15].lower() == b"<!doctype html>":
        return load_json(path, raw)
    text = raw.decode("utf-8", errors="replace")
    at = text.find(HTML_DATA)
    if at < 0:
        raise ProfileError(path, "a pyinstrument HTML page without its session data")
    try:
        doc, _ = json.JSONDecoder().raw_decode(text, at + len(HTML_DATA))
    except json.JSONDecodeError as e:
        raise ProfileError(path, f"invalid session data in the page: {e.msg}",
                           where=f"character {e.pos}") from None  # fmt: skip
    return doc


@register(
    "pyinstrument",
    _sniff,
    "pyinstrument JSON (rendered frame tree, saved session, or the HTML page's data)",
)
def read_pyinstrument(path: Path) -> Tree:
    """Read pyinstrument's JSON renderer output, a saved ``.pyisession``, or its
    HTML page (``pyinstrument -r html``: the session and frame tree it holds).

    Example:
        >>> import cctviz
        >>> t = cctviz.read("../shared/data/hatchet/pyinstrument-hatchet-json/"
        ...                 "pyinstrument-hatchet-profile.json")
        >>> len(t), t.meta["program"], t.units
        (111, 'examples.py', {'time': 's'})
        >>> round(float(t.metrics["time (inc)"].iloc[0]), 6)
        0.47815
    """
    doc = _load(path)
    expect(
        path,
        isinstance(doc, dict),
        "top level",
        "expected an object with 'root_frame', 'frame_records' or 'frame_tree'",
    )
    if "root_frame" in doc:
        return _rendered(path, doc)
    if "frame_records" in doc:
        return _session(path, doc)
    if "frame_tree" in doc:
        return _frame_tree(path, doc)
    raise ProfileError(
        path,
        "expected 'root_frame' (rendered JSON), 'frame_records' (a session) or "
        "'frame_tree' (the HTML page's data)",
        where="top level",
    )
