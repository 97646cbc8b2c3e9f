"""The JavaScript figure tests' payloads are what Python makes of the real profiles today."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_js_fixtures_are_current():
    r = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "js_fixtures.py"), "--check"],
        capture_output=True,
        timeout=600,  # an export that hangs at exit fails here, not the CI run
        text=True,
    )
    assert r.returncode == 0, r.stderr
