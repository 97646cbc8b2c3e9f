"""A component that fails: a region, then exit status 3."""

import sys
import time

import cctviz

with cctviz.region("setup"):
    time.sleep(0.05)
sys.exit(3)
