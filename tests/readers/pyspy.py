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


#: a program of many distinct stacks: a recursion to depths 1 to 40, spinning at the bottom
RECURSION = """\
import time

def down(n):
    if n == 0:
        s = 0
        for i in range(3000):
            s += i * i
        return s
    return down(n - 1)

t0 = time.time()
k = 0
while time.time() - t0 < 0.6:
    down(1 + k % 40)
    k += 1
"""


def pyspy_record(folder: Path, fmt: str, *extra: str, program: str = PROGRAM) -> tuple[Path, int]:
    """Run ``program`` (default :data:`PROGRAM`) under ``py-spy record --format
    fmt`` (``--idle``: the sleeping thread's samples too); the output file and
    the number of samples py-spy says it took."""
    exe = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    prog = folder / "work.py"
    prog.write_text(program)
    out = folder / f"profile.{fmt}"
    cmd = [exe, "record", "--format", fmt, "--rate", "200", "--idle", "-o", str(out), *extra]
    res = subprocess.run(
        [*cmd, "--", sys.executable, str(prog)], capture_output=True, text=True, timeout=120
    )
    assert res.returncode == 0, res.stdout + res.stderr
    m = re.search(r"Samples: (\d+)", res.stdout + res.stderr)
    assert m, res.stdout + res.stderr
    return out, int(m.group(1))
