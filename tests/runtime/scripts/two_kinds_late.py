"""DDP whose last to arrive is one rank by a little and another by a lot.

    cctviz run --nproc-per-node 3 --timeline two_kinds_late.py STEPS SHORT_MS LONG_MS

Step k: rank 2 sleeps LONG_MS before its backward when ``k % 4 == 3``, else rank 1
sleeps SHORT_MS; so at the gradient all-reduce rank 1 is the last to arrive most
often and rank 2 the one the others wait for most (tests/runtime/test_waited_for_runtime.py).
"""

import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

steps, short_ms, long_ms = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = DDP(torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1)))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(16, 32), torch.randn(16, 1)
for step in range(steps):
    loss = torch.nn.functional.mse_loss(model(x), y)
    late, ms = (2, long_ms) if step % 4 == 3 else (1, short_ms)
    if rank == late:
        time.sleep(ms / 1000)
    loss.backward()
    opt.step()
    opt.zero_grad()
del model, opt
dist.destroy_process_group()
