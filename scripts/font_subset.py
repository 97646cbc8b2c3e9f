"""Subset Liberation Sans 2.x (Regular, Bold) into the fonts cctviz ships.

    python scripts/font_subset.py [--src DIR] [--out DIR]

Source: Liberation Sans 2.x, licensed under the SIL Open Font License 1.1 (Debian:
`apt-get install fonts-liberation2`, files in /usr/share/fonts/truetype/liberation2;
or `apt-get download fonts-liberation2 && dpkg-deb -x fonts-liberation2_*.deb x` and
pass `--src x/usr/share/fonts/truetype/liberation2`). Liberation 1.x (Debian's
`fonts-liberation`, /usr/share/fonts/truetype/liberation) is under a GPL-2 based
licence instead and is refused.

What the subset keeps and drops:
- the characters of BLOCKS and SYMBOLS below (Latin, Greek, punctuation, arrows and the few
  symbols the front end draws), and .notdef;
- no layout tables (GSUB, GPOS, GDEF, kern): no kerning and no ligatures, in any
  renderer (browser, resvg, typst), so a string's width is the sum of the advance
  widths in hmtx, which is what js/font-metrics.js tabulates;
- no hinting (instructions, fpgm, prep, cvt, hdmx, ...): smaller files;
- the name table, with the family renamed to FAMILY. The copyright holders reserve
  the font name "Liberation" (OFL condition 3: no Modified Version, and a subset is
  one, may use a Reserved Font Name as its primary name). The copyright notice, the
  licence fields and the credits stay; a description says what the font derives from.

The output is byte-reproducible: the same source files give the same bytes (head's
modification time is kept from the source).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from fontTools import subset
from fontTools.ttLib import TTFont

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SRC = Path("/usr/share/fonts/truetype/liberation2")
DEFAULT_OUT = ROOT / "cctviz" / "fonts"

#: family name of the subset fonts (js/measure.js FONT_FAMILY names it first)
FAMILY = "Cctviz Sans"
STYLES = {"Regular": "LiberationSans-Regular.ttf", "Bold": "LiberationSans-Bold.ttf"}

#: Unicode blocks to keep (a block's holes in the font are normal and left out)
BLOCKS: list[tuple[int, int]] = [
    (0x0020, 0x007E),  # Basic Latin (printable)
    (0x00A0, 0x00FF),  # Latin-1 Supplement
    (0x0100, 0x017F),  # Latin Extended-A
    (0x0370, 0x03FF),  # Greek and Coptic
    (0x2000, 0x206F),  # General Punctuation
    (0x20A0, 0x20CF),  # Currency Symbols (€)
    (0x2100, 0x214F),  # Letterlike Symbols (™)
    (0x2190, 0x21FF),  # Arrows
]
#: single characters the front end draws (js/); one the font lacks is reported
SYMBOLS = "\u00b5\u00b7\u00d7\u03bc\u2013\u2026\u203a\u2191\u2192\u2212\u221d\u2264\u2265\u25b2"


def wanted() -> list[int]:
    cps = {cp for lo, hi in BLOCKS for cp in range(lo, hi + 1)} | {ord(c) for c in SYMBOLS}
    return sorted(cps)


def check_source(font: TTFont, path: Path) -> None:
    licence = font["name"].getDebugName(13) or ""
    if "Open Font License" not in licence:
        raise SystemExit(
            f"{path}: not under the SIL Open Font License ({licence!r}); "
            "use Liberation 2.x (Debian: fonts-liberation2)"
        )


def rename(font: TTFont, style: str, source_version: str) -> None:
    """Primary names -> FAMILY; keeps copyright, trademark, credits and licence."""
    name = font["name"]
    ps_family = FAMILY.replace(" ", "")
    full = FAMILY if style == "Regular" else f"{FAMILY} {style}"
    new = {
        1: FAMILY,
        2: style,
        3: f"{ps_family}-{style} {source_version}",
        4: full,
        6: f"{ps_family}-{style}",
        10: (
            f"Subset of Liberation Sans {style} {source_version} made for cctviz by "
            "scripts/font_subset.py (fewer characters, no hinting, no layout tables), "
            "renamed as the SIL Open Font License 1.1 requires of a Modified Version."
        ),
    }
    for rec in list(name.names):
        if rec.nameID in (16, 17, 18, 21, 22):  # typographic names: would name the source
            name.removeNames(nameID=rec.nameID)
    for name_id, text in new.items():
        name.removeNames(nameID=name_id)
        name.setName(text, name_id, 3, 1, 0x409)  # Windows, Unicode BMP, en-US
        name.setName(text, name_id, 1, 0, 0)  # Macintosh, Roman, English


def subset_one(src: Path, dst: Path, style: str) -> list[int]:
    """Write the subset of `src` to `dst`; returns the wanted code points it lacks."""
    font = TTFont(src, recalcTimestamp=False)
    check_source(font, src)
    version = (font["name"].getDebugName(5) or "").replace("Version ", "")
    cmap = font.getBestCmap()
    keep = [cp for cp in wanted() if cp in cmap]
    lacks = [cp for cp in wanted() if cp not in cmap]

    options = subset.Options()
    options.layout_features = []
    options.drop_tables += ["GSUB", "GPOS", "GDEF", "kern", "FFTM", "DSIG"]
    options.hinting = False
    options.name_IDs = ["*"]
    options.name_languages = ["*"]
    options.name_legacy = True
    options.notdef_outline = True
    options.glyph_names = False
    options.recalc_timestamp = False
    subsetter = subset.Subsetter(options=options)
    subsetter.populate(unicodes=keep)
    subsetter.subset(font)
    rename(font, style, version)
    dst.parent.mkdir(parents=True, exist_ok=True)
    font.save(dst)
    return lacks


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--src", type=Path, default=DEFAULT_SRC, help="Liberation 2.x folder")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = ap.parse_args(argv)
    for style, filename in STYLES.items():
        src = args.src / f"LiberationSans-{style}.ttf"
        dst = args.out / filename
        lacks = subset_one(src, dst, style)
        lacking = [f"U+{ord(c):04X} {c}" for c in SYMBOLS if ord(c) in lacks]
        shown = dst.relative_to(ROOT) if dst.is_relative_to(ROOT) else dst
        print(
            f"{shown}: {dst.stat().st_size} bytes; lacks {len(lacks)} code points of "
            f"BLOCKS/SYMBOLS; of SYMBOLS: {', '.join(lacking) or 'none'}"
        )


if __name__ == "__main__":
    main()
