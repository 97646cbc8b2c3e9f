"""examples/train.py under several configurations in one process group, each
profiled as a run of its own, the configurations taking turns (plan tests and
benchmarks/plan.py): on a machine whose speed drifts, a configuration and the
one it is predicted from run seconds apart.

    python -m torch.distributed.run --nproc-per-node 2 configs.py OUT ROUNDS STEPS \\
        NAME=ARGS [NAME=ARGS ...]

Each ``NAME=ARGS`` is a configuration (``ARGS``: train.py's options, spaces
between them, e.g. ``fsdp=--strategy fsdp``); round ``r`` of it is profiled
into ``OUT/NAME-r`` (``cctviz.profile``, warm-up 2, ``act_bytes``, ``mem_peak``), and the
script's own step times go to ``OUT/NAME-r-timings-RANK.json``.
"""

import gc
import shlex
import sys
from pathlib import Path

import torch.distributed as dist

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "examples"))

import train  # noqa: E402  (examples/train.py)

import cctviz  # noqa: E402

WARMUP = 2

out, rounds, steps = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
configs = [item.split("=", 1) for item in sys.argv[4:]]
rank, world_size, device = train.setup_distributed("cpu", "gloo")
try:
    for r in range(rounds):
        for name, options in configs:
            run = out / f"{name}-{r}"
            args = train.parse_args([
                *shlex.split(options), "--steps", str(steps),
                "--timings", f"{run}-timings-{{rank}}.json",
            ])  # fmt: skip
            gc.collect()  # the last run's model and optimizer: no memory of this one
            with cctviz.profile(out=run, warmup=WARMUP, act_bytes=True, mem_peak=True):
                train.train(args, rank, world_size, device)
            dist.barrier()
finally:
    dist.destroy_process_group()
