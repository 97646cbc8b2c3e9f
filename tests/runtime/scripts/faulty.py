"""A small DDP loop where one rank fails on purpose (tests of the runtime's fault handling).

faulty.py --fail-rank 1 --fail-step 3 --how kill|term|raise|none [--steps N] [--step-ms MS]
"""

import argparse
import os
import signal
import time

import torch
import torch.distributed as dist
from torch import nn

p = argparse.ArgumentParser()
p.add_argument("--fail-rank", type=int, default=1)
p.add_argument("--fail-step", type=int, default=3)
p.add_argument("--how", choices=("kill", "term", "raise", "none"), default="kill")
p.add_argument("--steps", type=int, default=6)
p.add_argument("--step-ms", type=float, default=0.0, help="each step also sleeps this long")
a = p.parse_args()

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = nn.parallel.DistributedDataParallel(
    nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1))
)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(16, 32)
for step in range(a.steps):
    if rank == a.fail_rank and step == a.fail_step:
        if a.how == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        elif a.how == "term":
            os.kill(os.getpid(), signal.SIGTERM)
        elif a.how == "raise":
            raise RuntimeError("injected failure")
    opt.zero_grad()
    time.sleep(a.step_ms / 1e3)
    model(x).square().mean().backward()
    opt.step()
dist.destroy_process_group()
