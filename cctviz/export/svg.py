"""SVG: the drawing bundle's output as it is, plus reading its size back.

In the SVG, one user unit is one point: the root has ``width="{W}pt"
height="{H}pt"`` and a ``viewBox`` of the natural layout size. The PDF and PNG
writers take the page size from there.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import Any

from ..errors import ExportError
from .engine import render_svg
from .payload import LENGTH_UNITS, ViewLike, payload

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


def to_svg(view: ViewLike, **options: Any) -> str:
    """The SVG document of ``view`` as it is now.

    ``options``: the drawing options (:func:`cctviz.export.payload.drawing_options`).

    Example:
        >>> import cctviz
        >>> view = cctviz.CCTView(cctviz.Tree.from_parents([-1], ["main"], {"time": [1.0]}))
        >>> svg = to_svg(view, width="3.5in", font_size=8)
        >>> svg_size(svg)[0]
        252.0
    """
    return render_svg(payload(view, **options))
