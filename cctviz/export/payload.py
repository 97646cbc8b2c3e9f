"""The export payload: a view's state as one JSON object for the drawing bundle.

The exporter never asks a live view for its picture (the kernel does not
handle widget messages while a cell runs). It reads the Python side instead:
the ``_data`` trait (already computed for the view's current state, whether or
not the view was ever displayed), the state traits and the drawing options.
The object is the contract of ``cctvizExport.renderSVG`` and of
``cctvizStandalone.mount`` (``export-contract.md``)::

    {"kind": "cct", "data": {...}, "state": {...}, "options": {...}}

``data`` is ``_data`` with every binary buffer turned into a JSON array
(NaN -> null; ``name_bytes`` as byte values).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any, Protocol

import numpy as np

from ..errors import ExportOptionError

#: points per unit of the lengths an option accepts (``px``: CSS pixels, 96 per inch)
LENGTH_UNITS = {"pt": 1.0, "in": 72.0, "mm": 72.0 / 25.4, "cm": 72.0 / 2.54, "px": 0.75}
#: drawing options and their defaults (``None`` width/height: the content's natural size)
#: the default width of a figure: a journal's two-column width (7 in), in points
DEFAULT_WIDTH = 504.0
DEFAULTS: dict[str, Any] = {
    "width": DEFAULT_WIDTH,
    "height": None,
    "font_size": 10.0,
    "title": None,
    "legends": True,
    "highlight": True,
    "background": "white",
    "scheme": "light",
}
BACKGROUNDS = ("white", "transparent")
SCHEMES = ("light", "dark")
CHARTS = ("tree", "icicle")

_LENGTH = re.compile(r"^\s*([-+]?[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([a-zA-Z]*)\s*$")


class ViewLike(Protocol):
    """What the exporter reads from a view (any :class:`cctviz.views.base.View`)."""

    _data: dict[str, Any]
    _kind: str

    def figure_state(self) -> dict[str, Any]: ...


def parse_length(value: Any, option: str = "width") -> float:
    """A length in points from a number (points) or a string with a unit.

    Units: ``pt``, ``in``, ``mm``, ``cm``, ``px`` (CSS pixels, 0.75 pt); a bare
    number (or a string without a unit) is in points.

    Example:
        >>> parse_length("3.5in"), parse_length("600px"), parse_length(252)
        (252.0, 450.0, 252.0)
        >>> round(parse_length("89mm"), 2)
        252.28
        >>> parse_length("wide")
        Traceback (most recent call last):
        ...
        cctviz.errors.ExportOptionError: width: expected a length such as 252, '3.5in', '89mm', '8cm', '252pt' or '600px', got 'wide'
    """
    expected = "a length such as 252, '3.5in', '89mm', '8cm', '252pt' or '600px'"
    if isinstance(value, bool):
        raise ExportOptionError(option, f"expected {expected}, got {value!r}")
    if isinstance(value, (int, float, np.integer, np.floating)):
        pt = float(value)
    elif isinstance(value, str):
        m = _LENGTH.match(value)
        if not m or m.group(2).lower() not in ("", *LENGTH_UNITS):
            raise ExportOptionError(option, f"expected {expected}, got {value!r}")
        pt = float(m.group(1)) * LENGTH_UNITS.get(m.group(2).lower(), 1.0)
    else:
        raise ExportOptionError(option, f"expected {expected}, got {value!r}")
    if not math.isfinite(pt) or pt <= 0:
        raise ExportOptionError(option, f"must be a positive length, got {value!r}")
    return pt


def positive_number(value: Any, option: str) -> float:
    """``value`` as a positive finite float, or an error naming ``option``.

    Example:
        >>> positive_number(2, "scale")
        2.0
    """
    if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
        v = float(value)
        if math.isfinite(v) and v > 0:
            return v
    raise ExportOptionError(option, f"expected a positive number, got {value!r}")


def _choice(value: Any, option: str, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise ExportOptionError(option, f"expected one of {', '.join(choices)}; got {value!r}")
    return value


def _flag(value: Any, option: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise ExportOptionError(option, f"expected True or False, got {value!r}")
    return bool(value)


def drawing_options(**options: Any) -> dict[str, Any]:
    """The ``options`` object of the payload from keyword options (checked).

    Accepted: ``width``, ``height`` (lengths, see :func:`parse_length`; default
    width 7 in, height None: what the content needs; a width of None or
    ``"natural"``: the content's own),
    ``font_size`` (the smallest text's size on the page, in pt, or a length),
    ``title`` (str or None), ``legends``, ``highlight`` (bool), ``background``
    (``"white"`` or ``"transparent"``), ``scheme`` (``"light"`` or ``"dark"``).
    Anything else raises :class:`~cctviz.errors.ExportOptionError`.

    Example:
        >>> drawing_options(width="3.5in", font_size=8)["width"]
        252.0
        >>> drawing_options(colour="red")
        Traceback (most recent call last):
        ...
        cctviz.errors.ExportOptionError: colour: unknown option; expected one of width, height, font_size, title, legends, highlight, background, scheme
    """
    for k in options:
        if k not in DEFAULTS:
            raise ExportOptionError(k, f"unknown option; expected one of {', '.join(DEFAULTS)}")
    o = {**DEFAULTS, **options}
    title = o["title"]
    if title is not None and not isinstance(title, str):
        raise ExportOptionError("title", f"expected a string or None, got {title!r}")
    return {
        "width": None if _natural(o["width"]) else parse_length(o["width"], "width"),
        "height": None if o["height"] is None else parse_length(o["height"], "height"),
        "fontSize": parse_length(o["font_size"], "font_size"),
        "title": title or None,
        "legends": _flag(o["legends"], "legends"),
        "highlight": _flag(o["highlight"], "highlight"),
        "background": _choice(o["background"], "background", BACKGROUNDS),
        "scheme": _choice(o["scheme"], "scheme", SCHEMES),
    }


def _natural(width: Any) -> bool:
    """A width of None or ``"natural"``: the content's own width."""
    return width is None or (isinstance(width, str) and width.strip().lower() == "natural")


def plain(value: Any) -> Any:
    """``value`` with binary buffers as lists and NaN as None (JSON-ready).

    Example:
        >>> plain({"v": memoryview(np.array([1.5, np.nan], dtype="<f4")), "n": 2})
        {'v': [1.5, None], 'n': 2}
    """
    if isinstance(value, (memoryview, bytes, bytearray, np.ndarray)):
        a = np.asarray(value)
        if a.dtype.kind == "f":
            out = a.astype(np.float64).astype(object)
            out[np.isnan(a)] = None
            return out.tolist()
        return a.tolist()
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, (np.generic,)):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def view_state(view: ViewLike) -> dict[str, Any]:
    """The payload's ``state``: the view's own :meth:`figure_state` (its state as
    plain JSON values; see ``cctviz/views/CONTRACT.md``), checked where the
    exporter relies on it.

    Example:
        >>> import cctviz
        >>> t = cctviz.Tree.from_parents([-1, 0], ["main", "solve"], {"time": [1.0, 2.0]})
        >>> view_state(cctviz.CCTView(t, selection=[1]))["selection"]
        [1]
    """
    st = view.figure_state()
    if "chart" in st:
        _choice(st["chart"], "chart", CHARTS)
    return st


def payload(view: ViewLike, *, notes: list[str] | None = None, **options: Any) -> dict[str, Any]:
    """The JSON payload that draws ``view`` as it is now (see the module doc).

    Works for a view that was never displayed: its ``_data`` is computed in
    Python. ``options`` are the drawing options of :func:`drawing_options`;
    ``notes``, what the exporter folded to fit (sentences the figure's caption
    adds to its own).

    Example:
        >>> import json, cctviz
        >>> t = cctviz.Tree.from_parents([-1, 0], ["main", "solve"], {"time": [1.0, 2.0]})
        >>> p = payload(cctviz.CCTView(t), width="3.5in")
        >>> p["kind"], p["state"]["chart"], p["options"]["width"], p["data"]["n"]
        ('cct', 'tree', 252.0, 2)
        >>> bytes(p["data"]["name_bytes"])
        b'mainsolve'
        >>> _ = json.dumps(p, allow_nan=False)
    """
    opts = drawing_options(**options)
    if notes:
        opts["notes"] = [str(n) for n in notes]
    complete = getattr(view, "complete_data", None)
    if complete is not None:  # what a view sends after its first paint
        complete()
    data = getattr(view, "_data", None)
    if not data:
        raise ValueError(f"{type(view).__name__} has no data to draw (its _data trait is empty)")
    return {
        "kind": view._kind,
        "data": plain(data),
        "state": view_state(view),
        "options": opts,
    }
