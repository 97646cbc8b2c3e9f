"""A torch.distributed component of the workflow tests: DDP over gloo on the
snapshots the producers wrote (read once there, or random data)."""

import sys
from pathlib import Path

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

steps, stage = int(sys.argv[1]), Path(sys.argv[2])
dist.init_process_group("gloo")
torch.manual_seed(0)
model = DDP(torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for _ in range(steps):
    snaps = sorted(stage.glob("snap-*.bin"))
    x = (
        torch.frombuffer(bytearray(snaps[0].read_bytes()[:64]), dtype=torch.float32)
        if snaps
        else None
    )
    x = torch.randn(8, 16) if x is None else x.view(1, 16).nan_to_num().clamp(-1, 1).repeat(8, 1)
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
dist.destroy_process_group()
