"""PDF: the SVG placed on one page of exactly its size, through typst.

Typst (a pip wheel) keeps text as text and embeds the bundled font as a
subset; it is given no system font, and a fixed timestamp, so the same figure
gives the same bytes on every machine. Needs ``pip install 'cctviz[export]'``.
"""

from __future__ import annotations

import functools
import warnings
from typing import Any

from ..errors import ExportError, MissingDependencyError
from .fonts import font_dirs
from .svg import svg_size

#: Acrobat's largest page side (200 in)
MAX_PAGE_PT = 14400.0

_SOURCE = """#set page(width: {w:.4f}pt, height: {h:.4f}pt, margin: 0pt, fill: {fill})
#image(bytes(sys.inputs.svg), format: "svg", width: 100%, height: 100%)
"""


def _typst() -> Any:
    try:
        import typst
    except ImportError:
        raise MissingDependencyError(
            "PDF export needs the typst package: pip install 'cctviz[export]'"
        ) from None
    return typst


@functools.cache
def _fonts() -> Any:
    typst = _typst()
    dirs = [str(d) for d in font_dirs()]
    return typst.Fonts(include_system_fonts=False, include_embedded_fonts=False, font_paths=dirs)


def to_pdf(svg: str, background: str = "white") -> bytes:
    """A one-page PDF of ``svg``; the page is the SVG's size (its root's width/height).

    ``background``: ``"white"`` fills the page, ``"transparent"`` leaves it empty.

    Example:
        >>> svg = ('<svg xmlns="http://www.w3.org/2000/svg" width="72pt" height="36pt">'
        ...        '<text x="4" y="20" font-family="Liberation Sans">main</text></svg>')
        >>> to_pdf(svg)[:5]
        b'%PDF-'
    """
    typst = _typst()
    w, h = svg_size(svg)
    if max(w, h) > MAX_PAGE_PT:
        warnings.warn(
            f"the PDF page is {w:.0f} x {h:.0f} pt; Acrobat shows at most {MAX_PAGE_PT:.0f} pt a"
            " side: give a smaller width (and height)",
            stacklevel=3,
        )
    source = _SOURCE.format(w=w, h=h, fill="white" if background == "white" else "none")
    try:
        return typst.compile(
            source.encode(),
            format="pdf",
            font_paths=_fonts(),
            ignore_system_fonts=True,
            sys_inputs={"svg": svg},
            timestamp=0,
            pdf_tags=False,  # an untagged figure: poppler misreads typst's tag tree
        )
    except typst.TypstError as e:
        raise ExportError(f"typst could not make the PDF: {e.message}") from e
