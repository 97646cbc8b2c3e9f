"""The font the exported figures are set in: Liberation Sans (SIL OFL 1.1).

The SVG names ``'Liberation Sans', Arial, Helvetica, sans-serif``; the PDF and
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
#: where Debian's fonts-liberation keeps the same files; used only while the
#: package's own copies are missing (a checkout before they were added)
SYSTEM_FONT_DIR = Path("/usr/share/fonts/truetype/liberation")


def font_files() -> list[Path]:
    """The regular and bold font files, from ``cctviz/fonts``.

    Example:
        >>> [p.name for p in font_files()]
        ['LiberationSans-Regular.ttf', 'LiberationSans-Bold.ttf']
    """
    for folder in (FONT_DIR, SYSTEM_FONT_DIR):
        files = [folder / n for n in FONT_NAMES]
        if all(f.is_file() for f in files):
            return files
    raise ExportError(
        f"the export font is missing: {', '.join(FONT_NAMES)} are not in {FONT_DIR}"
        " (reinstall cctviz)"
    )


def font_dirs() -> list[Path]:
    """Folders holding :func:`font_files` (typst takes folders, not files)."""
    return sorted({f.parent for f in font_files()})
