"""Write js/units-table.js from cctviz.model.units (the one definition of units).

The front end formats numbers with the tables Python uses: the units of time and
size, the other spellings of units, the words that mark a measured metric and the
statistics that keep their metric's unit. ``--check`` fails when the file is stale
(tests/test_units_table.py runs it).

Usage: python scripts/units_table.py [--check]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cctviz.model.units import js_table  # noqa: E402

TARGET = ROOT / "js" / "units-table.js"


def text() -> str:
    t = js_table()
    lines = [
        "// Generated from cctviz/model/units.py by scripts/units_table.py: do not edit.",
        "// The front end formats with Python's tables (docs/architecture.md, section 3).",
        "",
        "/** Seconds per unit of time. */",
        f"export const TIME = {json.dumps(t['time'])};",
        "/** Bytes per unit of size (decimal prefixes). */",
        f"export const BYTES = {json.dumps(t['bytes'])};",
        "/** Other spellings of units (matched as given, then lower-cased). */",
        f"export const ALIASES = {json.dumps(t['aliases'], ensure_ascii=False)};",
        "/** Words in a metric name that say it is a time or a size. */",
        f"export const MEASURED = {json.dumps(t['measured'])};",
        "/** Statistics columns (`x [max]`) that keep their metric's unit. */",
        f"export const STATS = {json.dumps(t['stats'])};",
        "",
    ]
    return "\n".join(lines)


def main() -> int:
    want = text()
    if "--check" in sys.argv[1:]:
        have = TARGET.read_text(encoding="utf-8") if TARGET.exists() else ""
        if have != want:
            print(f"{TARGET} is stale: run python scripts/units_table.py", file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(want, encoding="utf-8")
    print(TARGET)
    return 0


if __name__ == "__main__":
    sys.exit(main())
