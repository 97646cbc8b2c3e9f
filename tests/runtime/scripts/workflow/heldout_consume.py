"""Held-out style consumer: waits for each result file (polling), reads it and
does a little work; measures its own waiting; only ``cctviz.region`` from cctviz."""

import json
import sys
import time
from pathlib import Path

import cctviz

n, folder, stats = int(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
t0 = time.perf_counter()
waited = 0.0
for k in range(n):
    path = folder / f"result-{k}.txt"
    with cctviz.region("poll"):
        w = time.perf_counter()
        while not path.exists():
            time.sleep(0.005)
        waited += time.perf_counter() - w
    with cctviz.region("use"):
        int(path.read_text())
        sum(range(20000))
stats.write_text(json.dumps({"waited_s": waited, "wall_s": time.perf_counter() - t0}))
