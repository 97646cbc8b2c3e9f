"""Fixtures of the export tests: no browser on PATH, the drawing bundles, views.

Every test here runs with PATH cut down to a folder holding only the tools the
tests call (poppler's ``pdffonts`` and ``pdfinfo``) and the virtualenv's
``bin``: export must work where no Chromium exists.

The bundles tested are the real ones (``npm run build`` makes them; so does
``pip install -e .``).
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

import cctviz

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
STATIC = ROOT / "cctviz" / "static"
#: the PATH before the tests cut it down (the packaging test looks for git on it)
ORIGINAL_PATH = os.environ.get("PATH", "")
#: tools the tests run (poppler-utils: scripts/setup.sh installs them; pdftotext reads
#: word boxes)
TOOLS = ("pdffonts", "pdfinfo", "pdftotext")
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "chrome", "headless_shell")

#: names a profile may hold that must come out as text, never as markup
HOSTILE = [
    "<img src=x onerror=alert(1)>",
    "</script><script>alert(2)</script>",
    "a & b \"quoted\" 'single'",
    "résumé ✓ 計算",
]


@pytest.fixture(scope="session")
def tool_bin(tmp_path_factory) -> Path:
    """A folder with links to :data:`TOOLS` only."""
    folder = tmp_path_factory.mktemp("bin")
    for tool in TOOLS:
        found = shutil.which(tool)
        if found is None:
            pytest.fail(
                f"{tool} is missing: `apt-get install poppler-utils` (scripts/test.sh does it)"
            )
        (folder / tool).symlink_to(found)
    return folder


@pytest.fixture(autouse=True)
def no_browser(monkeypatch, tool_bin):
    """PATH without any browser (the venv's bin and the poppler tools only)."""
    monkeypatch.setenv("PATH", os.pathsep.join([str(tool_bin), str(Path(sys.executable).parent)]))
    monkeypatch.delenv("CCTVIZ_CHROMIUM", raising=False)
    for name in BROWSERS:
        assert shutil.which(name) is None, f"{name} is still on PATH"


@pytest.fixture
def hostile_view():
    """A small tree whose names try to break out of SVG and HTML."""
    t = cctviz.Tree.from_parents(
        [-1, 0, 0, 1, 0],
        ["main", *HOSTILE],
        {"time": [1.0, 2.0, 3.0, 4.0, 5.0], "bytes": [0.0, float("nan"), 2.0, 3.0, 1.0]},
    )
    return cctviz.CCTView(t)


@pytest.fixture
def view(hatchet_tree):
    """The Hatchet sample (24 nodes, two roots) in a node-link tree, one node selected."""
    return cctviz.CCTView(hatchet_tree, selection=[1])
