"""Profiles made by the real py-spy (the ``py-spy`` command of the test
environment) of a small Python program with a worker thread."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

PROGRAM = """\
import threading, time

def spin(n):
    s = 0
    for i in range(n):
        s += i * i
    return s

def sleeper():
    time.sleep(0.5)

t = threading.Thread(target=sleeper)
t.start()
t0 = time.time()
while time.time() - t0 < 0.5:
    spin(20000)
t.join()
"""


def pyspy_record(folder: Path, fmt: str, *extra: str) -> tuple[Path, int]:
    """Run the program under ``py-spy record --format fmt`` (``--idle``: the
    sleeping thread's samples too); the output file and the number of samples
    py-spy says it took."""
    exe = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    prog = folder / "work.py"
    prog.write_text(PROGRAM)
    out = folder / f"profile.{fmt}"
    cmd = [exe, "record", "--format", fmt, "--rate", "200", "--idle", "-o", str(out), *extra]
    res = subprocess.run(
        [*cmd, "--", sys.executable, str(prog)], capture_output=True, text=True, timeout=120
    )
    assert res.returncode == 0, res.stdout + res.stderr
    m = re.search(r"Samples: (\d+)", res.stdout + res.stderr)
    assert m, res.stdout + res.stderr
    return out, int(m.group(1))
