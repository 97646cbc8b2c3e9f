"""The font the exported figures are set in: Cctviz Sans, a subset of Liberation
Sans 2.1.5 (SIL OFL 1.1; renamed as the licence asks of a modified version,
see cctviz/fonts/LICENSE and scripts/font_subset.py).

The SVG names ``'Cctviz Sans', 'Liberation Sans', Arial, Helvetica, sans-serif``
(Liberation Sans and Arial have the same advance widths); the PDF and
PNG renderers get the font files explicitly and never look at the system's
fonts, so a figure comes out the same on every machine (and resvg, finding no
font, would drop the text without a word).
"""

from __future__ import annotations

from pathlib import Path

from ..errors import ExportError

#: the fonts shipped with cctviz (subset to the characters the views draw)
FONT_DIR = Path(__file__).resolve().parent.parent / "fonts"
FONT_NAMES = ("LiberationSans-Regular.ttf", "LiberationSans-Bold.ttf")


def font_files() -> list[Path]:
    """The regular and bold font files, from ``cctviz/fonts``.

    Example:
        >>> [p.name for p in font_files()]
        ['LiberationSans-Regular.ttf', 'LiberationSans-Bold.ttf']
    """
    files = [FONT_DIR / n for n in FONT_NAMES]
    if all(f.is_file() for f in files):
        return files
    raise ExportError(
        f"the export font is missing: {', '.join(FONT_NAMES)} are not in {FONT_DIR}"
        " (reinstall cctviz)"
    )


def font_dirs() -> list[Path]:
    """Folders holding :func:`font_files` (typst takes folders, not files)."""
    return sorted({f.parent for f in font_files()})
