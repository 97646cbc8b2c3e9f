"""One rank arrives late at every all-reduce (runtime and wait-vs-transfer tests).

    python -m torch.distributed.run --nproc-per-node 3 late_rank.py OUT STEPS LATE SLEEP_MS [TRACE]

Per step, in region "exchange": rank LATE sleeps SLEEP_MS milliseconds, then
every rank all-reduces N float32 elements; the other ranks wait for it inside
the all-reduce. Region "quiet": an all-reduce nobody is late for. TRACE: an
OTF2 trace of the job into that folder too.
"""

import sys
import time

import torch
import torch.distributed as dist

import cctviz

N = 10_000
out, steps, late, sleep_ms = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
trace = sys.argv[5] if len(sys.argv) > 5 else None
dist.init_process_group("gloo")
rank = dist.get_rank()
with cctviz.profile(out=out, root="late", trace=trace) as prof:
    for _ in range(steps):
        with prof.region("exchange"):
            if rank == late:
                time.sleep(sleep_ms / 1000)
            dist.all_reduce(torch.ones(N))
        with prof.region("quiet"):
            dist.barrier()
            dist.all_reduce(torch.ones(N))
        prof.step()
dist.destroy_process_group()
