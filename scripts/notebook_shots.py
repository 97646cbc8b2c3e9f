"""Screenshots of every notebook run in a real JupyterLab, light and dark: what a
user sees, to look at before a release (issue 35). Not a test: it asserts only
that every cell runs.

    .venv/bin/python scripts/notebook_shots.py [--out shots] [--only 04 08] [--themes light dark]

Each notebook runs top to bottom in a page 1280 px wide; the notebook's cells are
photographed one by one (JupyterLab scrolls its panel, so a page screenshot shows
only what is in view) and stacked into `<out>/<notebook>-<theme>-<k>.png`, pages of
at most 2,400 px. Uses the browser tests' JupyterLab (tests/ui/lab.py) on Debian's
Chromium.
"""

from __future__ import annotations

import argparse
import io
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

THEMES = {"light": "JupyterLab Light", "dark": "JupyterLab Dark"}
PAGE_PX = 2400


def shoot_notebook(lab, path: Path, theme: str, out: Path) -> list[Path]:
    """Run `path` in `lab` in `theme` and write its cells' pictures; returns the files."""
    from PIL import Image

    with lab.open_notebook(path) as nb:
        nb.page.set_viewport_size({"width": 1280, "height": 1400})
        nb.page.evaluate(
            "async () => { const app = window.jupyterapp;"
            " if (!app.shell.leftCollapsed) await app.commands.execute('application:toggle-left-area'); }"
        )
        if theme != "light":
            nb.set_theme(THEMES[theme])
        try:
            nb.run_all(timeout=600_000)
            nb.page.wait_for_timeout(2000)  # widgets settle in their boxes
            cells = nb.page.locator(".jp-Notebook .jp-Cell")
            shots = []
            for k in range(cells.count()):
                cell = cells.nth(k)
                cell.scroll_into_view_if_needed()
                nb.page.wait_for_timeout(150)
                shots.append(Image.open(io.BytesIO(cell.screenshot())))
        finally:
            if theme != "light":
                nb.set_theme(THEMES["light"])
    pages: list[list] = [[]]
    for im in shots:
        if pages[-1] and sum(i.height for i in pages[-1]) + im.height > PAGE_PX:
            pages.append([])
        pages[-1].append(im)
    files = []
    for n, group in enumerate(pages, 1):
        sheet = Image.new(
            "RGB", (max(i.width for i in group), sum(i.height for i in group)), "white"
        )
        y = 0
        for im in group:
            sheet.paste(im, (0, y))
            y += im.height
        files.append(out / f"{path.stem}-{theme}-{n}.png")
        sheet.save(files[-1])
    return files


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="shots", type=Path)
    ap.add_argument("--only", nargs="*", default=[], help="notebook name prefixes (e.g. 04 08)")
    ap.add_argument("--themes", nargs="*", default=list(THEMES), choices=list(THEMES))
    a = ap.parse_args(argv)
    from playwright.sync_api import sync_playwright

    from tests.ui.harness import launch_browser
    from tests.ui.lab import JupyterLab

    a.out.mkdir(parents=True, exist_ok=True)
    notebooks = sorted((ROOT / "notebooks").glob("*.ipynb"))
    notebooks = [p for p in notebooks if not a.only or any(p.name.startswith(o) for o in a.only)]
    with sync_playwright() as pw:
        browser = launch_browser(pw)
        lab = JupyterLab(browser)
        try:
            for path in notebooks:
                copy = lab.root / path.name  # run beside nothing of the checkout
                shutil.copy(path, copy)
                for theme in a.themes:
                    for f in shoot_notebook(lab, copy, theme, a.out):
                        print(f)
        finally:
            lab.close()
            browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
