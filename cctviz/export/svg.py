"""SVG: the drawing bundle's output as it is, plus reading its size back.

In the SVG, one user unit is one point: the root has ``width="{W}pt"
height="{H}pt"`` and a ``viewBox`` of the natural layout size. The PDF and PNG
writers take the page size from there.
"""

from __future__ import annotations

import html
import pathlib
import re
import xml.etree.ElementTree as ET
from typing import Any

from ..errors import ExportError, FigureFitWarning
from .engine import render_svg
from .payload import DEFAULTS, LENGTH_UNITS, ViewLike, payload

_SIZE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(pt|px|in|mm|cm)?\s*$")
#: the root start tag (attribute values may hold ">")
ROOT_TAG = re.compile(r"<svg\b(?:[^>\"']|\"[^\"]*\"|'[^']*')*>")


def svg_size(svg: str) -> tuple[float, float]:
    """Width and height of an SVG document in points, from its root element.

    Example:
        >>> svg_size('<svg xmlns="http://www.w3.org/2000/svg" width="252pt" height="90pt"/>')
        (252.0, 90.0)
    """
    parser = ET.XMLPullParser(events=("start",))
    root = None
    try:
        for i in range(0, len(svg), 4096):
            parser.feed(svg[i : i + 4096])
            for _, el in parser.read_events():
                root = el
                break
            if root is not None:
                break
    except ET.ParseError as e:
        raise ExportError(f"the drawing is not valid SVG: {e}") from None
    if root is None or root.tag.rpartition("}")[2] != "svg":
        raise ExportError("the drawing is not an SVG document")
    out = []
    for attr in ("width", "height"):
        m = _SIZE.match(root.get(attr, ""))
        if not m:
            raise ExportError(f"the drawing's root has no usable {attr} ({root.get(attr)!r})")
        out.append(float(m.group(1)) * LENGTH_UNITS[m.group(2) or "px"])
    return out[0], out[1]


#: the root attribute where a figure says what it could not hold at its font size
FOLDED_ATTR = "data-folded"
#: the root attribute of a figure taller than the height asked
TALLER_ATTR = "data-taller"


def root_attribute(svg: str, name: str) -> str | None:
    """The value of attribute ``name`` of an SVG document's root, or None.

    Example:
        >>> root_attribute('<svg xmlns="http://www.w3.org/2000/svg" data-taller="true"/>', "data-taller")
        'true'
    """
    m = ROOT_TAG.search(svg)
    found = re.search(rf'\s{re.escape(name)}="([^"]*)"', m.group(0)) if m else None
    return html.unescape(found.group(1)) if found else None


def folded_note(svg: str) -> str:
    """What an exported figure could not hold at its font size (its caption, in
    the root's ``data-folded``: folded levels or nodes, a figure wider or taller
    than asked), or "" when it holds everything.

    Example:
        >>> folded_note('<svg xmlns="http://www.w3.org/2000/svg" data-folded="2 deeper levels"/>')
        '2 deeper levels'
        >>> folded_note('<svg xmlns="http://www.w3.org/2000/svg"/>')
        ''
    """
    return root_attribute(svg, FOLDED_ATTR) or ""


def is_taller(svg: str) -> bool:
    """Whether the figure is taller than the height it was asked for.

    Example:
        >>> is_taller('<svg xmlns="http://www.w3.org/2000/svg" data-taller="true"/>')
        True
    """
    return root_attribute(svg, TALLER_ATTR) is not None


def to_svg(view: ViewLike, **options: Any) -> str:
    """The SVG document of ``view`` as it is now.

    ``options``: the drawing options (:func:`cctviz.export.payload.drawing_options`).
    Given a ``height`` its content does not fit at the font size, a view with a
    node budget (``FIGURE_BUDGET``: the CCT view's ``max_nodes``) is drawn with the
    largest budget that fits (small siblings folded into ``(other)`` by the
    view's level of detail, every metric by its rule), the caption says so;
    where none fits, the figure is taller than asked and says that.

    Example:
        >>> import cctviz
        >>> view = cctviz.CCTView(cctviz.Tree.from_parents([-1], ["main"], {"time": [1.0]}))
        >>> svg = to_svg(view, width="3.5in", font_size=8)
        >>> svg_size(svg)[0]
        252.0
    """
    svg = render_svg(payload(view, **options))
    budget = getattr(view, "FIGURE_BUDGET", None)
    if options.get("height") is not None and budget and is_taller(svg):
        svg = _fit_height(view, budget, options) or svg
    _warn_folded(view, svg, options)
    return svg


def _fit_height(view: ViewLike, budget: str, options: dict[str, Any]) -> str | None:
    """The SVG of ``view`` with the largest node budget (the trait ``budget``)
    whose figure fits the asked height, or None where even the least does not
    (bisection; the view's trait is put back, its front end sent nothing new)."""
    was = int(getattr(view, budget))
    best = None
    sent = int(view._data.get("n", was))  # the rows drawn now: fewer must fit
    lo, hi = 1, min(was, sent) - 1  # budgets that may fit
    with view.hold_sync():
        try:
            while lo <= hi:
                mid = (lo + hi) // 2
                setattr(view, budget, mid)
                svg = render_svg(payload(view, **options, notes=[_folded_to(mid, was)]))
                if is_taller(svg):
                    hi = mid - 1
                else:
                    best, lo = svg, mid + 1
        finally:
            setattr(view, budget, was)
    return best


def _warn_folded(view: ViewLike, svg: str, options: dict[str, Any]) -> None:
    """Warn (:class:`~cctviz.errors.FigureFitWarning`) where the figure could not
    hold everything at its font size; the figure's caption says the same."""
    note = folded_note(svg)
    if note:
        import warnings

        size = options.get("font_size", DEFAULTS["font_size"])
        warnings.warn(
            f"{type(view).__name__} at {size} pt: not drawn at this size: {note}. The text keeps"
            " its size; focus, collapse or filter the view, or give a larger width, to show more.",
            FigureFitWarning,
            stacklevel=_caller_level(),
        )


def _caller_level() -> int:
    """The ``stacklevel`` of the first frame outside cctviz (the user's call)."""
    import sys

    package = str(pathlib.Path(__file__).resolve().parents[1])
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(package):
        frame, level = frame.f_back, level + 1
    return level


def _folded_to(budget: int, was: int) -> str:
    return f"at most {budget} nodes, not {was}: smaller ones are folded into (other) nodes"
