"""DDP whose last rank to arrive changes with the step (the timeline tests).

    cctviz run --nproc-per-node 3 --trace DIR rotating_late.py STEPS SLEEP_MS [SCHEDULE]

Step k: rank ``k % world`` sleeps SLEEP_MS milliseconds before its backward, so it
arrives last at the step's gradient all-reduce and the others wait for it. Summed
per calling context every rank is last as often: only the per-call view names who.
SCHEDULE ("RANK:MS,RANK:MS,..."), where given, says instead who sleeps how long at
step k: its entry k modulo its length ("1:40,1:40,1:40,2:400": rank 1 is last most
often, rank 2 keeps the others waiting longest).
"""

import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

steps, sleep_ms = int(sys.argv[1]), float(sys.argv[2])
schedule = (
    [(int(r), float(ms)) for r, ms in (e.split(":") for e in sys.argv[3].split(","))]
    if len(sys.argv) > 3
    else []
)
dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)
model = DDP(torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1)))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(16, 32), torch.randn(16, 1)
for step in range(steps):
    loss = torch.nn.functional.mse_loss(model(x), y)
    late, ms = schedule[step % len(schedule)] if schedule else (step % world, sleep_ms)
    if rank == late:
        time.sleep(ms / 1000)
    loss.backward()
    opt.step()
    opt.zero_grad()
del model, opt  # DDP's reducer gone before the group (gloo's teardown)
dist.destroy_process_group()
