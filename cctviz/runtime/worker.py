"""``python -m cctviz.runtime.worker [options] script.py [args]``: one profiled rank.

Started by ``cctviz run`` through torchrun; see :func:`cctviz.runtime.launch.worker_main`.
"""

from .launch import worker_main

if __name__ == "__main__":
    worker_main()
