"""Every kind of collective in a known place, profiled in-process (runtime tests).

    python -m torch.distributed.run --nproc-per-node 4 collectives.py OUT STEPS [TRACE_DIR]

With TRACE_DIR, the profiler also writes an OTF2 trace there.

Per step, on every rank:
- forward of Net: its ``reducer`` submodule all-reduces N float32 elements;
- region "gather": all_gather_into_tensor (N in, world*N out), then
  reduce_scatter_tensor (world*N in, N out);
- region "sync": broadcast of M float64 elements, then a barrier;
- region "p2p": even ranks send K int64 elements to rank+1, odd ranks receive them;
- region "async": all_reduce of N float32 with async_op=True, waited in region "later";
- region "pair": all_reduce of N float32 in the group of ranks {0, 1} (those ranks only).
"""

import sys

import torch
import torch.distributed as dist
from torch import nn

import cctviz

N, M, K = 1000, 300, 50
out, steps = sys.argv[1], int(sys.argv[2])
trace = sys.argv[3] if len(sys.argv) > 3 else None
dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
pair = dist.new_group([0, 1])


class Reducer(nn.Module):
    def forward(self, x):
        dist.all_reduce(x)
        return x


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.reducer = Reducer()

    def forward(self, x):
        return self.reducer(x) * 2


net = Net()
with cctviz.profile(out=out, root="collectives", trace=trace) as prof:
    for _ in range(steps):
        net(torch.ones(N))
        with prof.region("gather"):
            full = torch.empty(world * N)
            dist.all_gather_into_tensor(full, torch.full((N,), float(rank)))
            part = torch.empty(N)
            dist.reduce_scatter_tensor(part, torch.ones(world * N))
        with prof.region("sync"):
            dist.broadcast(torch.zeros(M, dtype=torch.float64), src=0)
            dist.barrier()
        with prof.region("p2p"):
            buf = torch.zeros(K, dtype=torch.int64)
            if rank % 2 == 0:
                dist.send(buf, dst=rank + 1)
            else:
                dist.recv(buf, src=rank - 1)
        with prof.region("async"):
            work = dist.all_reduce(torch.ones(N), async_op=True)
        with prof.region("later"):
            work.wait()
        if rank < 2:
            with prof.region("pair"):
                dist.all_reduce(torch.ones(N), group=pair)
        prof.step()
dist.destroy_process_group()
