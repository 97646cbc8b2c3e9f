"""A 2-D heat equation decomposed over the ranks of a torch.distributed job
(gloo), streaming snapshots of its field to a staging folder for a training job.

Each rank owns a band of rows and exchanges one halo row with each neighbour per
step (``dist.send``/``dist.recv``). Every ``--every`` steps it writes its band
(``snap-{n}-{rank}.npy``: written to a temporary name, then renamed) unless
``--in-flight`` of its snapshots are still unread in the folder: then it waits
(polls) until the consumer has taken one. ``--work`` repeats the stencil per
step (how costly the simulation is). The time the rank spent waiting (for the
consumer, and in the halo exchange's blocking send/recv for its neighbours) is
measured here, by the program itself, and written with its wall time to
``STATS/sim-{rank}.json``: the workflow tests hold cctviz's analysis against it.

    python -m torch.distributed.run --standalone --nproc-per-node 2 sim.py \
        --stage STAGE --stats STATS --snapshots 8

It does not need cctviz; where cctviz profiles it, its regions show up.
"""

from __future__ import annotations

import argparse
import json
import time
from contextlib import nullcontext
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist

try:  # profiled under cctviz: name the phases; plain runs need nothing
    from cctviz import region
except ImportError:  # pragma: no cover - the example runs without cctviz too

    def region(name):  # noqa: ARG001
        return nullcontext()


def stencil(u: np.ndarray, alpha: float = 0.1) -> np.ndarray:
    """One explicit step of the heat equation on the interior (halo rows kept)."""
    out = u.copy()
    out[1:-1, 1:-1] += alpha * (
        u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4 * u[1:-1, 1:-1]
    )
    return out


def exchange(u: np.ndarray, rank: int, world: int) -> None:
    """Swap halo rows with the neighbours (rank order: even ranks send first)."""
    up, down = rank - 1, rank + 1
    pairs = []
    if up >= 0:
        pairs.append((up, 1, 0))  # send my first row, receive into halo 0
    if down < world:
        pairs.append((down, -2, -1))
    for peer, mine, halo in pairs:
        send = torch.from_numpy(np.ascontiguousarray(u[mine]))
        recv = torch.empty_like(send)
        if rank % 2 == 0:
            dist.send(send, peer)
            dist.recv(recv, peer)
        else:
            dist.recv(recv, peer)
            dist.send(send, peer)
        u[halo] = recv.numpy()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--stage", type=Path, required=True)
    p.add_argument("--stats", type=Path, required=True)
    p.add_argument("--snapshots", type=int, default=8)
    p.add_argument("--every", type=int, default=4, help="steps between snapshots")
    p.add_argument("--size", type=int, default=192, help="grid points per side")
    p.add_argument("--work", type=int, default=20, help="stencil sweeps per step")
    p.add_argument("--in-flight", type=int, default=2, help="unread snapshots allowed")
    a = p.parse_args()
    t0, start = time.perf_counter(), time.time()  # its wall time: all of its run
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    rows = a.size // world
    rng = np.random.default_rng(rank)
    u = rng.random((rows + 2, a.size))
    a.stage.mkdir(parents=True, exist_ok=True)
    waited = 0.0
    waits: list[list[float]] = []  # each wait's start and end (wall clock, s)
    for n in range(a.snapshots):
        for _ in range(a.every):
            with region("stencil"):
                for _ in range(a.work):
                    u = stencil(u)
            with region("halo exchange"):
                w0, since = time.perf_counter(), time.time()
                exchange(u, rank, world)  # blocking send/recv: waits for the neighbours
                waited += time.perf_counter() - w0
                waits.append([since, time.time()])
        with region("wait for the consumer"):
            w0, since = time.perf_counter(), time.time()
            while len(list(a.stage.glob(f"snap-*-{rank}.npy"))) >= a.in_flight:
                time.sleep(0.005)
            waited += time.perf_counter() - w0
            waits.append([since, time.time()])
        with region("write snapshot"):
            tmp = a.stage / f".snap-{n}-{rank}.tmp"
            with open(tmp, "wb") as f:
                np.save(f, u[1:-1])
            tmp.rename(a.stage / f"snap-{n}-{rank}.npy")
    wall = time.perf_counter() - t0
    a.stats.mkdir(parents=True, exist_ok=True)
    stats = {"waited_s": waited, "wall_s": wall, "start": start, "end": time.time()}
    stats["waits"] = waits
    (a.stats / f"sim-{rank}.json").write_text(json.dumps(stats))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
