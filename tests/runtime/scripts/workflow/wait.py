"""A component that would run for a minute (the launcher stops it): waits in a region."""

import time

import cctviz

with cctviz.region("wait"):
    for _ in range(600):
        time.sleep(0.1)
