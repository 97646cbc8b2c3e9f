"""PNG: the SVG rasterised by resvg, with the bundled font and no system font.

At ``scale`` 1 one point is 4/3 pixel (96 pixels per inch, as in a browser);
the default scale 2 gives 192 pixels per inch. The file states its resolution
(a ``pHYs`` chunk), so an office program places it at the figure's size.
Needs ``pip install 'cctviz[export]'``.
"""

from __future__ import annotations

import re
import struct
import zlib
from typing import Any

from ..errors import ExportError, ExportOptionError, MissingDependencyError
from .fonts import font_files
from .payload import positive_number
from .svg import ROOT_TAG, svg_size

_ROOT_SIZE = re.compile(r"(?<![\w:-])(width|height)\s*=\s*(\"[^\"]*\"|'[^']*')")


def _resvg() -> Any:
    try:
        import resvg_py
    except ImportError:
        raise MissingDependencyError(
            "PNG export needs the resvg-py package: pip install 'cctviz[export]'"
        ) from None
    return resvg_py


def png_scale(scale: Any = None, dpi: Any = None) -> float:
    """The pixel scale from the ``scale`` or ``dpi`` option (default scale 2).

    Example:
        >>> png_scale(), png_scale(scale=3), png_scale(dpi=300)
        (2.0, 3.0, 3.125)
    """
    if scale is not None and dpi is not None:
        raise ExportOptionError("dpi", "give scale or dpi, not both")
    if dpi is not None:
        return positive_number(dpi, "dpi") / 96.0
    return 2.0 if scale is None else positive_number(scale, "scale")


def _px_root(svg: str, w_pt: float, h_pt: float) -> str:
    # resvg-py refuses a root size in pt: state it in px (1 pt = 4/3 px)
    m = ROOT_TAG.search(svg)
    if m is None:
        raise ExportError("the drawing is not an SVG document")
    size = {"width": w_pt * 4 / 3, "height": h_pt * 4 / 3}
    tag = _ROOT_SIZE.sub(lambda a: f'{a.group(1)}="{size[a.group(1)]:.4f}"', m.group(0))
    return svg[: m.start()] + tag + svg[m.end() :]


def _with_phys(png: bytes, dpi: float) -> bytes:
    """``png`` with a pHYs chunk (pixels per metre) right after IHDR."""
    ppm = round(dpi / 0.0254)
    body = b"pHYs" + struct.pack(">IIB", ppm, ppm, 1)
    chunk = struct.pack(">I", 9) + body + struct.pack(">I", zlib.crc32(body))
    end_ihdr = 8 + 8 + 13 + 4  # signature, IHDR length+type, IHDR data, CRC
    if png[12:16] != b"IHDR" or b"pHYs" in png[:64]:
        return png
    return png[:end_ihdr] + chunk + png[end_ihdr:]


def to_png(svg: str, scale: float = 2.0, background: str = "white") -> bytes:
    """A PNG of ``svg``, ``scale`` x 4/3 pixels per point of its size.

    ``background``: ``"white"`` or ``"transparent"``.

    Example:
        >>> svg = '<svg xmlns="http://www.w3.org/2000/svg" width="72pt" height="36pt"/>'
        >>> png = to_png(svg, scale=2)
        >>> struct.unpack(">II", png[16:24])  # width, height in pixels
        (192, 96)
    """
    resvg = _resvg()
    w, h = svg_size(svg)
    width = max(1, round(w * 4 / 3 * scale))
    try:
        png = resvg.svg_to_bytes(
            svg_string=_px_root(svg, w, h),
            font_files=[str(f) for f in font_files()],
            skip_system_fonts=True,
            width=width,
            background="white" if background == "white" else None,
        )
    except ValueError as e:
        raise ExportError(f"resvg could not make the PNG: {e}") from e
    return _with_phys(bytes(png), 96.0 * scale)
