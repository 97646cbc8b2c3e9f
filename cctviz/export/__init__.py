"""Figures of views with no browser: SVG, PDF, PNG and a standalone HTML page.

The front end's own ``scene`` + ``draw`` code runs in an embedded V8
(mini-racer) on a payload built from the view's Python-side state
(:func:`payload`), so an export never waits for the browser and gives the same
picture the notebook shows. PDF (typst) and PNG (resvg) need
``pip install 'cctviz[export]'``; SVG and HTML need nothing more.

Example:
    >>> import cctviz
    >>> t = cctviz.Tree.from_parents([-1, 0], ["main", "solve"], {"time": [1.0, 2.0]})
    >>> view = cctviz.CCTView(t)
    >>> import tempfile, pathlib
    >>> out = save(view, pathlib.Path(tempfile.mkdtemp()) / "fig.svg", width="3.5in", font_size=8)
    >>> out.read_text().count('width="252pt"')
    1
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Any

from ..errors import ExportError, ExportOptionError
from .engine import Engine, get_engine, render_svg
from .fonts import font_files
from .html import page, to_html
from .payload import ViewLike, drawing_options, parse_length, payload
from .svg import folded_note, svg_size, to_svg

__all__ = [
    "FORMATS",
    "Engine",
    "drawing_options",
    "export_bytes",
    "folded_note",
    "font_files",
    "get_engine",
    "page",
    "parse_length",
    "payload",
    "render_svg",
    "save",
    "svg_size",
    "to_html",
    "to_svg",
]

#: output formats by file suffix
FORMATS = {".svg": "svg", ".pdf": "pdf", ".png": "png", ".html": "html"}
#: options that only PNG takes (the rest are drawing options)
PNG_OPTIONS = ("scale", "dpi")


def _format_of(path: Path, format: str | None) -> str:
    by_suffix = FORMATS.get(path.suffix.lower())
    if format is not None:
        fmt = str(format).lower().lstrip(".")
        if fmt not in FORMATS.values():
            raise ExportOptionError(
                "format", f"expected one of {', '.join(FORMATS.values())}; got {format!r}"
            )
        if by_suffix is not None and by_suffix != fmt:
            raise ExportOptionError(
                "format", f"{fmt!r} does not match the file name {path.name!r} ({path.suffix})"
            )
        return fmt
    if by_suffix is None:
        raise ExportOptionError(
            "path",
            f"cannot tell the format of {path.name!r}: the file name must end in"
            f" {', '.join(FORMATS)}",
        )
    return by_suffix


def export_bytes(view: ViewLike, format: str, **options: Any) -> bytes:
    """The file contents of ``view`` exported as ``format`` (svg, pdf, png or html).

    ``options``: the drawing options (:func:`drawing_options`), and for PNG
    ``scale`` (pixels = 4/3 x scale per point, default 2) or ``dpi``.

    Example:
        >>> import cctviz
        >>> view = cctviz.CCTView(cctviz.Tree.from_parents([-1], ["main"], {"time": [1.0]}))
        >>> export_bytes(view, "svg", width=300)[:5]
        b'<?xml'
    """
    fmt = _format_of(Path(f"x.{format}"), format)
    png = {k: options.pop(k) for k in PNG_OPTIONS if k in options}
    if png and fmt != "png":
        k = next(iter(png))
        raise ExportOptionError(k, f"only a PNG takes {k}, not {fmt.upper()}")
    if fmt == "html":
        return to_html(view, **options).encode("utf-8")
    background = options.get("background", "white")
    svg = to_svg(view, **options)
    if fmt == "svg":
        return svg.encode("utf-8")
    if fmt == "pdf":
        from .pdf import to_pdf

        return to_pdf(svg, background=background)
    from .png import png_scale, to_png

    return to_png(svg, scale=png_scale(**png), background=background)


def write_atomic(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to ``path`` through a temporary file beside it and a rename,
    so a reader never sees half a file. Returns the path.

    Example:
        >>> import tempfile
        >>> d = tempfile.mkdtemp()
        >>> write_atomic(os.path.join(d, "a.txt"), b"hi").read_bytes()
        b'hi'
    """
    path = Path(path)
    folder = path.parent
    if not folder.is_dir():
        raise ExportError(f"{path}: the folder {folder} does not exist")
    tmp = folder / f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # mode: umask applies
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def save(
    view: ViewLike, path: str | os.PathLike[str], *, format: str | None = None, **options: Any
) -> Path:
    """Write ``view`` as it is now to ``path``; the format comes from the suffix.

    Suffixes: ``.svg``, ``.pdf``, ``.png``, ``.html`` (``format=`` overrides
    for another name). The file is written atomically (a temporary file and a
    rename). Options:

    - ``width``, ``height``: the figure's size, a number of points or a string
      with a unit (``"3.5in"``, ``"89mm"``, ``"8cm"``, ``"252pt"``, ``"600px"``);
      default a width of 7 in (a journal's two columns; ``None``: the content's
      natural width) and the height the content needs at that width;
    - ``font_size`` (pt, default 10): the size of the smallest text on the page.
      Nothing is scaled: a figure that cannot hold its content at that size
      folds what does not fit (deeper levels, small nodes), says so in a caption
      line under it and warns (:class:`~cctviz.errors.FigureFitWarning`);
    - ``title``, ``legends``, ``highlight``
      (the selection), ``background`` (``"white"``/``"transparent"``),
      ``scheme`` (``"light"``/``"dark"``);
    - PNG only: ``scale`` (default 2: 192 pixels per inch) or ``dpi``.

    Two saves of the same state give the same bytes (SVG, PDF and PNG).

    Example:
        >>> import cctviz, tempfile, pathlib
        >>> view = cctviz.CCTView(cctviz.Tree.from_parents([-1], ["main"], {"time": [1.0]}))
        >>> save(view, pathlib.Path(tempfile.mkdtemp()) / "fig.svg", width="89mm").suffix
        '.svg'
    """
    path = Path(path)
    fmt = _format_of(path, format)
    if not path.parent.is_dir():
        raise ExportError(f"{path}: the folder {path.parent} does not exist")
    return write_atomic(path, export_bytes(view, fmt, **options))
