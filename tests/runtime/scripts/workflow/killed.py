"""A component killed mid-run (as the kernel's OOM killer would): SIGKILL, no
chance to write its profile."""

import os
import signal
import time

import cctviz

with cctviz.region("setup"):
    time.sleep(0.3)
os.kill(os.getpid(), signal.SIGKILL)
