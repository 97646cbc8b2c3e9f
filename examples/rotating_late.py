"""DDP whose late rank changes with the step (the timeline tests).

    cctviz run --nproc-per-node 3 --trace DIR rotating_late.py STEPS SLEEP_MS

Step k: rank ``k % world`` sleeps SLEEP_MS milliseconds before its backward, so it
arrives last at the step's gradient all-reduce and the others wait for it. Summed
per calling context every rank is late as often: only the per-call view names who.
"""

import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

steps, sleep_ms = int(sys.argv[1]), float(sys.argv[2])
dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)
model = DDP(torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1)))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(16, 32), torch.randn(16, 1)
for step in range(steps):
    loss = torch.nn.functional.mse_loss(model(x), y)
    if rank == step % world:
        time.sleep(sleep_ms / 1000)
    loss.backward()
    opt.step()
    opt.zero_grad()
dist.destroy_process_group()
