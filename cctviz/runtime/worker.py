"""``python -m cctviz.runtime.worker [options] script.py [args]``: one profiled rank.

Started by ``cctviz run`` through torchrun (:mod:`cctviz.runtime.launch` builds the
command line): the script runs in this process under a
:class:`~cctviz.runtime.profiler.Profiler`, which writes the rank's file.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from .launch import parse_limit
from .live import DEFAULT_FLUSH


def worker_main(argv: Sequence[str] | None = None) -> None:
    """Entry of each worker process: profile ``script`` in-process, then let it run."""
    import runpy

    from .profiler import Profiler

    p = argparse.ArgumentParser(prog="cctviz.runtime.worker")
    p.add_argument("--out", required=True)
    p.add_argument("--mode", default="light", choices=("light", "detailed"))
    p.add_argument("--warmup", type=int, default=0)
    p.add_argument("--per-step", action="store_true")
    p.add_argument("--python-frames", action="store_true")
    p.add_argument("--act-bytes", action="store_true")
    p.add_argument("--mem-peak", action="store_true", default=None)  # None: the mode's default
    p.add_argument("--module", action="store_true")
    p.add_argument("--trace", default=None)
    p.add_argument("--timeline-limit", default=None)
    p.add_argument("--files", action="store_true", help="record the files opened")
    p.add_argument("--sample-hz", type=float, default=0.0)
    p.add_argument("--gpu-time", default=None, choices=("phase", "context"))
    p.add_argument("--flush", type=float, default=DEFAULT_FLUSH)
    p.add_argument("script")
    p.add_argument("args", nargs=argparse.REMAINDER)
    a = p.parse_args(argv)
    sys.argv = [a.script, *a.args]
    root = a.script if a.module else os.path.basename(a.script)
    if not a.module:
        sys.path[0] = os.path.dirname(os.path.abspath(a.script))
    prof = Profiler(
        a.out,
        mode=a.mode,
        warmup=a.warmup,
        per_step=a.per_step,
        python_frames=a.python_frames,
        act_bytes=a.act_bytes,
        mem_peak=a.mem_peak,
        root=root,
        trace=a.trace,
        timeline_limit=parse_limit(a.timeline_limit),
        files=a.files,
        sample_hz=a.sample_hz,
        gpu_time=a.gpu_time,
        flush=a.flush,
    )
    with prof:
        if a.module:
            runpy.run_module(a.script, run_name="__main__", alter_sys=True)
        else:
            runpy.run_path(a.script, run_name="__main__")


if __name__ == "__main__":
    worker_main()
