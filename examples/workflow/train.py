"""A surrogate of the heat equation trained with DDP (gloo) on the snapshots a
simulation streams into a staging folder.

Rank ``r`` of the training takes the snapshots of simulation rank ``r`` in
order, waiting (polling) for each to appear, loads it, removes it (which frees
a slot of the simulation's in-flight budget) and trains a small network that
maps a patch of the field to its next state for ``--work`` steps. The time the
rank spent waiting for data is measured here, by the program itself, and
written with its wall time to ``STATS/train-{rank}.json``.

    python -m torch.distributed.run --standalone --nproc-per-node 2 train.py \
        --stage STAGE --stats STATS --snapshots 8
"""

from __future__ import annotations

import argparse
import gc
import json
import time
from contextlib import nullcontext
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

try:
    from cctviz import region
except ImportError:  # pragma: no cover

    def region(name):  # noqa: ARG001
        return nullcontext()


def patches(field: np.ndarray, k: int = 8) -> torch.Tensor:
    """Non-overlapping k x k patches of the field as rows of a batch."""
    h, w = (field.shape[0] // k) * k, (field.shape[1] // k) * k
    f = field[:h, :w].reshape(h // k, k, w // k, k).swapaxes(1, 2).reshape(-1, k * k)
    return torch.from_numpy(np.ascontiguousarray(f, dtype=np.float32))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--stage", type=Path, required=True)
    p.add_argument("--stats", type=Path, required=True)
    p.add_argument("--snapshots", type=int, default=8)
    p.add_argument("--work", type=int, default=5, help="optimizer steps per snapshot")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for data")
    a = p.parse_args()
    t0, start = time.perf_counter(), time.time()  # its wall time: all of its run
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(
        torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.Tanh(), torch.nn.Linear(256, 64))
    )
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    waited = 0.0
    waits: list[list[float]] = []  # each wait's start and end (wall clock, s)
    prev = None
    for n in range(a.snapshots):
        path = a.stage / f"snap-{n}-{rank}.npy"
        with region("wait for data"):
            w0, since = time.perf_counter(), time.time()
            while not path.exists():
                if time.perf_counter() - w0 > a.timeout:
                    raise TimeoutError(f"{path}: no snapshot after {a.timeout} s")
                time.sleep(0.005)
            waited += time.perf_counter() - w0
            waits.append([since, time.time()])
        with region("load snapshot"):
            field = np.load(path)
            path.unlink()
        x = patches(field)
        if prev is not None and prev.shape == x.shape:
            for _ in range(a.work):
                loss = torch.nn.functional.mse_loss(model(prev), x)
                loss.backward()
                opt.step()
                opt.zero_grad()
        prev = x
    wall = time.perf_counter() - t0
    a.stats.mkdir(parents=True, exist_ok=True)
    stats = {"waited_s": waited, "wall_s": wall, "start": start, "end": time.time()}
    stats["waits"] = waits
    (a.stats / f"train-{rank}.json").write_text(json.dumps(stats))
    # nothing may hold the group when it goes: a DDP model that outlives
    # destroy_process_group() sometimes aborts the process at exit (SIGABRT)
    del model, opt
    gc.collect()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
