"""Held-out style producer: computes (a CPU loop) and writes results into a
folder; its only cctviz call is ``cctviz.region``."""

import sys
import time
from pathlib import Path

import cctviz

n, folder, seconds = int(sys.argv[1]), Path(sys.argv[2]), float(sys.argv[3])
folder.mkdir(parents=True, exist_ok=True)
for k in range(n):
    with cctviz.region("compute"):
        t = time.perf_counter()
        x = 0
        while time.perf_counter() - t < seconds:
            x += 1
    with cctviz.region("publish"):
        (folder / f".r{k}").write_text(str(x))
        (folder / f".r{k}").rename(folder / f"result-{k}.txt")
