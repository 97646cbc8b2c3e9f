"""A plain component of the workflow tests: writes snapshots into a staging
folder, one file per step, in a region per step (no torch, no distributed)."""

import os
import sys
import time
from pathlib import Path

import cctviz

steps, stage = int(sys.argv[1]), Path(sys.argv[2])
rank = int(os.environ.get("RANK", "0"))
stage.mkdir(parents=True, exist_ok=True)
for step in range(steps):
    with cctviz.region("compute"):
        time.sleep(0.02)
    with cctviz.region("write"):
        tmp = stage / f".{rank}-{step}.tmp"
        tmp.write_bytes(os.urandom(4096))
        tmp.rename(stage / f"snap-{rank}-{step}.bin")
