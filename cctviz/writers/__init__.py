"""Writers: the native format, Hatchet's JSON forms, speedscope, folded stacks, and
timelines as Kineto-style Chrome traces. One module per format."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..model.ensemble import Ensemble
from ..model.timeline import Timeline
from ..model.tree import Tree
from .chrome_trace import write_chrome_trace
from .folded import to_folded, write_folded
from .hatchet import to_hatchet_json, to_literal, write_hatchet_json, write_literal
from .native import write_native
from .speedscope import to_speedscope, write_speedscope

_WRITERS = {
    "cctviz": write_native,
    "hatchet-json": write_hatchet_json,
    "hatchet-literal": write_literal,
    "speedscope": write_speedscope,
    "folded": write_folded,
    "chrome-trace": write_chrome_trace,
}
#: the formats that write a Timeline (the others write a Tree or an Ensemble)
TIMELINE_FORMATS = ("chrome-trace",)


def write(
    obj: Tree | Ensemble | Timeline,
    path: str | os.PathLike,
    format: str | None = None,
    **kw: Any,
) -> Path:
    """Write ``obj`` to ``path``.

    The format defaults to the native one (``.cctviz``); ``format=
    "hatchet-json"`` writes Hatchet's ``to_json`` form and
    ``"hatchet-literal"`` the graph literal ``GraphFrame.from_literal`` takes;
    ``"speedscope"`` a speedscope JSON file (``metric=``, ``type="sampled" |
    "evented"``) and ``"folded"`` folded stacks (``metric=``, ``scale=``).
    A :class:`~cctviz.model.timeline.Timeline` writes as ``"chrome-trace"``
    (its default): Kineto-style Chrome trace JSON, one file per rank in the
    folder ``path`` (or the one file ``path`` ends in ``.json``/``.json.gz``),
    for Perfetto, HTA and cctviz's ``kineto`` reader
    (:func:`~cctviz.writers.chrome_trace.write_chrome_trace`).

    >>> import cctviz, tempfile, os
    >>> t = cctviz.Tree.from_parents([-1, 0], ["main", "f"], {"time": [1.0, 2.0]})
    >>> p = cctviz.write(t, os.path.join(tempfile.mkdtemp(), "t.cctviz"))
    >>> cctviz.read(p) == t
    True
    """
    p = Path(path)
    if format is None:
        format = "chrome-trace" if isinstance(obj, Timeline) else "cctviz"
    if format not in _WRITERS:
        raise ValueError(f"unknown format {format!r}; have {sorted(_WRITERS)}")
    if isinstance(obj, Timeline) != (format in TIMELINE_FORMATS):
        what = "a Timeline" if format in TIMELINE_FORMATS else "a Tree or an Ensemble"
        raise TypeError(
            f"format {format!r} writes {what}, not a {type(obj).__name__} "
            f"(a Timeline writes as {', '.join(TIMELINE_FORMATS)})"
        )
    _WRITERS[format](obj, p, **kw)
    return p


__all__ = [
    "write",
    "write_native",
    "to_literal",
    "to_hatchet_json",
    "to_speedscope",
    "write_speedscope",
    "to_folded",
    "write_folded",
    "write_chrome_trace",
]
