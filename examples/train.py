"""Train the small GPT from ``gpt.py`` on synthetic tokens, plainly or distributed.

Plain (one process)::

    python examples/train.py --steps 20

Distributed, 2 processes on CPU (gloo)::

    torchrun --nproc-per-node 2 examples/train.py --strategy ddp
    torchrun --nproc-per-node 2 examples/train.py --strategy zero1   # DDP + ZeroRedundancyOptimizer
    torchrun --nproc-per-node 2 examples/train.py --strategy fsdp    # FSDP2, fully_shard
    torchrun --nproc-per-node 2 examples/train.py --strategy fsdp1   # FullyShardedDataParallel

Pass ``--timings /tmp/t-{rank}.json`` to have each rank write its per-step wall times
(and the bytes it holds of parameters, gradients and optimizer states after step 1),
and ``--sleep 1:blocks.1.mlp:30`` to have rank 1 sleep 30 ms in every call of that
module (a straggler to replay, balance or delay: ``cctviz whatif``).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import gc
import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import torch
import torch.distributed as dist
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

# Import the model next to this script even when its directory is not on sys.path.
sys.path.insert(0, str(Path(__file__).resolve().parent))

from gpt import GPT, Block, GPTConfig  # noqa: E402

STRATEGIES = ("none", "ddp", "zero1", "fsdp", "fsdp1")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    distributed = int(os.environ.get("WORLD_SIZE", "1")) > 1
    defaults = GPTConfig()
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--strategy",
        choices=STRATEGIES,
        default="ddp" if distributed else "none",
        help="parallel wrapper (default: ddp under torchrun with WORLD_SIZE>1, else none)",
    )
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--batch-size", type=int, default=8, help="per-rank batch size")
    p.add_argument("--seq-len", type=int, default=64)
    p.add_argument(
        "--block-size",
        type=int,
        default=None,
        help="the model's longest sequence (its position embedding; default: --seq-len)",
    )
    p.add_argument(
        "--grad-accum",
        type=int,
        default=1,
        metavar="K",
        help="micro-batches of --batch-size per optimizer step (gradients synchronised"
        " once per step: DDP's no_sync, FSDP2's set_requires_gradient_sync)",
    )
    p.add_argument("--lr", type=float, default=3e-4)
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    p.add_argument(
        "--backend",
        choices=("auto", "nccl", "gloo"),
        default="auto",
        help="process group backend (auto: nccl on cuda, gloo on cpu; gloo on cuda puts"
        " several ranks on one GPU)",
    )
    p.add_argument(
        "--timings", metavar="PATH", help="write per-rank step times as JSON; {rank} is formatted"
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--count-saved",
        action="store_true",
        help="count the bytes autograd saves for backward each micro-batch (each storage once,"
        " parameters left out) with torch's saved-tensor hooks; into --timings as saved_bytes",
    )
    p.add_argument(
        "--sleep",
        metavar="RANK:MODULE:MS[,...]",
        default="",
        help="rank RANK sleeps MS milliseconds in every forward of the named module"
        " (a straggler inside one calling context); phases separated by '|' take turns"
        " every --sleep-block steps",
    )
    p.add_argument(
        "--sleep-block",
        type=int,
        default=0,
        metavar="K",
        help="with phases in --sleep: step s sleeps as phase (s // K) %% phases",
    )
    p.add_argument(
        "--leak",
        metavar="RANK:MODULE:MB",
        default="",
        help="rank RANK keeps MB megabytes more in every forward of the named module"
        " from step --leak-from on (a memory leak inside one calling context)",
    )
    p.add_argument("--leak-from", type=int, default=0, metavar="STEP")
    p.add_argument(
        "--torch-profiler",
        choices=("off", "default", "stack"),
        default="off",
        help="run the loop under torch.profiler (default activities, or with_stack=True)",
    )
    p.add_argument("--n-layer", type=int, default=defaults.n_layer)
    p.add_argument("--n-head", type=int, default=defaults.n_head)
    p.add_argument("--n-embd", type=int, default=defaults.n_embd)
    p.add_argument("--vocab-size", type=int, default=defaults.vocab_size)
    p.add_argument(
        "--attention",
        choices=("sdpa", "math"),
        default=defaults.attention,
        help="sdpa: torch's fused attention; math: softmax(q k^T) v written out (saves"
        " the seq x seq probabilities for backward)",
    )
    args = p.parse_args(argv)
    if args.steps < 1:
        p.error("--steps must be >= 1")
    if args.grad_accum < 1:
        p.error("--grad-accum must be >= 1")
    if args.block_size is None:
        args.block_size = args.seq_len
    if args.block_size < args.seq_len:
        p.error("--block-size must be >= --seq-len")
    if args.strategy != "none" and "WORLD_SIZE" not in os.environ:
        p.error(f"--strategy {args.strategy} needs a process group: launch under torchrun")
    return args


def setup_distributed(device_type: str, backend: str = "auto") -> tuple[int, int, torch.device]:
    """Initialise the process group from torchrun's env vars, if present."""
    if "WORLD_SIZE" not in os.environ:
        device = torch.device("cuda", 0) if device_type == "cuda" else torch.device("cpu")
        return 0, 1, device
    rank = int(os.environ["RANK"])
    world_size = int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if device_type == "cuda":
        device = torch.device("cuda", local_rank % torch.cuda.device_count())
        torch.cuda.set_device(device)
        if backend == "gloo":
            dist.init_process_group(backend="gloo")
        else:
            dist.init_process_group(backend="nccl", device_id=device)
    else:
        device = torch.device("cpu")
        dist.init_process_group(backend="gloo")
    return rank, world_size, device


def make_loader(args: argparse.Namespace, rank: int) -> DataLoader:
    """Synthetic tokens, different per rank (seed + rank), enough for ``args.steps``.

    Tokens follow a fixed Zipf-like unigram distribution rather than a uniform one, so
    there is something to learn and the loss visibly drops within a few steps.
    """
    gen = torch.Generator().manual_seed(args.seed + rank)
    n_samples = args.steps * args.grad_accum * args.batch_size
    weights = 1.0 / torch.arange(1, args.vocab_size + 1, dtype=torch.float)
    tokens = torch.multinomial(
        weights.expand(n_samples, -1), args.seq_len + 1, replacement=True, generator=gen
    )
    dataset = TensorDataset(tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous())
    return DataLoader(
        dataset, batch_size=args.batch_size, shuffle=False, num_workers=0, drop_last=True
    )


def parse_sleeps(spec: str) -> list[list[tuple[int, str, float]]]:
    """``"1:blocks.1.mlp:30,2:lm_head:5|"`` -> phases, each [(1, "blocks.1.mlp", 30.0), ...]."""
    phases = []
    for phase in spec.split("|"):
        out = []
        for part in filter(None, (p.strip() for p in phase.split(","))):
            rank, module, ms = part.split(":")
            out.append((int(rank), module, float(ms)))
        phases.append(out)
    return phases


#: the step the loop is in (the sleeps' phase follows it)
CURRENT_STEP = [0]


def add_sleeps(model: torch.nn.Module, spec: str, rank: int, block: int) -> None:
    """Make this rank sleep in every forward of the modules ``spec`` names for it
    (inside the module's call, so a profiler sees the time in its context); with
    several phases, step s sleeps as phase ``(s // block) % phases``."""
    modules = dict(model.named_modules())
    phases = parse_sleeps(spec)
    plan: dict[str, list[float]] = {}
    for k, phase in enumerate(phases):
        for r, name, ms in phase:
            if name not in modules:
                names = ", ".join(list(modules)[:12])
                raise SystemExit(f"--sleep: no module {name!r}; modules: {names}, ...")
            if r == rank:
                plan.setdefault(name, [0.0] * len(phases))[k] += ms / 1000
    for name, seconds in plan.items():
        mod = modules[name]

        def forward(*a, _inner=mod.forward, _s=seconds, **k):  # noqa: ANN002,ANN003,ANN202
            phase = (CURRENT_STEP[0] // block) % len(_s) if block > 0 else 0
            if _s[phase]:
                time.sleep(_s[phase])
            return _inner(*a, **k)

        mod.forward = forward


#: what --leak keeps (never freed)
LEAKED: list[bytearray] = []


def add_leak(model: torch.nn.Module, spec: str, rank: int, first: int) -> None:
    """Make rank ``r`` of ``spec`` (``r:module:MB``) keep MB megabytes, written
    (so they are resident), in every forward of the module from step ``first`` on."""
    r, name, mb = spec.split(":")
    modules = dict(model.named_modules())
    if name not in modules:
        raise SystemExit(f"--leak: no module {name!r}")
    if int(r) != rank:
        return
    mod, size = modules[name], int(float(mb) * 2**20)

    def forward(*a, _inner=mod.forward, **k):  # noqa: ANN002,ANN003,ANN202
        if CURRENT_STEP[0] >= first:
            LEAKED.append(bytearray(b"\x01") * size)
        return _inner(*a, **k)

    mod.forward = forward


def wrap_model(model: torch.nn.Module, strategy: str, device: torch.device) -> torch.nn.Module:
    if strategy == "none":
        return model
    if strategy in ("ddp", "zero1"):  # zero1: DDP with ZeroRedundancyOptimizer (make_optimizer)
        from torch.nn.parallel import DistributedDataParallel as DDP

        if device.type == "cuda":
            return DDP(model, device_ids=[device.index])
        return DDP(model)
    if strategy == "fsdp":
        from torch.distributed.fsdp import fully_shard

        for block in model.blocks:
            fully_shard(block)
        fully_shard(model)
        return model
    if strategy == "fsdp1":
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
        from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy

        policy = functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={Block})
        # device_id is needed on CPU too: without it FSDP1 looks for an accelerator.
        return FSDP(model, auto_wrap_policy=policy, use_orig_params=True, device_id=device)
    raise ValueError(f"unknown strategy {strategy!r}")


def make_optimizer(model: torch.nn.Module, strategy: str, lr: float) -> torch.optim.Optimizer:
    """AdamW; under ``zero1`` its states partitioned over the ranks (torch's
    ZeroRedundancyOptimizer, ZeRO stage 1)."""
    if strategy == "zero1":
        from torch.distributed.optim import ZeroRedundancyOptimizer

        return ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.AdamW, lr=lr)
    return torch.optim.AdamW(model.parameters(), lr=lr)


def shard_units(model: torch.nn.Module, strategy: str, world_size: int) -> list[dict]:
    """Each FSDP unit's unsharded (padded) parameter bytes, from the sharded parameters.

    What one all-gather of the unit moves: every rank's padded shard. FSDP
    shards dim 0 in ``world_size`` chunks of ``ceil(dim0 / world_size)`` rows.
    """
    units = []
    if strategy == "fsdp":
        from torch.distributed.fsdp import FSDPModule

        for name, mod in model.named_modules():
            if not isinstance(mod, FSDPModule):
                continue
            own = [
                p
                for n, p in mod.named_parameters()
                if not any(
                    n.startswith(sub + ".")
                    for sub, m in mod.named_modules()
                    if sub and isinstance(m, FSDPModule)
                )
            ]
            nbytes = 0
            for p in own:
                local = p.to_local()  # the shard on this rank (a DTensor's local tensor)
                rows = -(-p.shape[0] // world_size)  # ceil(dim0 / world)
                nbytes += rows * world_size * (p.numel() // p.shape[0]) * local.element_size()
            units.append({"unit": name or "<root>", "unsharded_bytes": nbytes, "root": not name})
    elif strategy == "fsdp1":
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

        for mod in FSDP.fsdp_modules(model):
            flat = mod._flat_param  # this rank's padded shard of the unit's flat parameter
            if flat is None:
                continue
            nbytes = flat.numel() * world_size * flat.element_size()
            units.append(
                {"unit": type(mod.module).__name__, "unsharded_bytes": nbytes, "root": mod is model}
            )
    return units


def held_bytes(model: torch.nn.Module, opt: torch.optim.Optimizer) -> dict[str, int]:
    """The bytes this rank holds of parameters, gradients and optimizer states:
    each storage once, its whole size, a DTensor's local shard (FSDP2)."""
    seen: set[int] = set()

    def total(tensors: Iterator[torch.Tensor | None]) -> int:
        out = 0
        for t in tensors:
            if t is None:
                continue
            if hasattr(t, "to_local"):  # a DTensor
                t = t.to_local()
            s = t.untyped_storage()
            if s.nbytes() and s.data_ptr() not in seen:
                seen.add(s.data_ptr())
                out += s.nbytes()
        return out

    params = list(dict.fromkeys(model.parameters()))
    states = (v for st in opt.state.values() for v in st.values() if torch.is_tensor(v))
    return {
        "params": total(iter(params)),
        "grads": total(p.grad for p in params),
        "optimizer": total(states),
    }


@contextlib.contextmanager
def gradient_sync(model: torch.nn.Module, on: bool) -> Iterator[None]:
    """Within: a backward that synchronises gradients across ranks only when
    ``on`` (the last micro-batch of a step): DDP's ``no_sync``, FSDP2's
    ``set_requires_gradient_sync``; a model of neither always synchronises."""
    if not on and hasattr(model, "no_sync"):
        with model.no_sync():
            yield
        return
    if hasattr(model, "set_requires_gradient_sync"):  # FSDP2
        model.set_requires_gradient_sync(on)
    yield


@contextlib.contextmanager
def counting_saved(on: bool) -> Iterator[dict[int, int]]:
    """Within: the storages autograd saves for backward and their bytes (each once;
    parameters and views of them left out), counted by torch's saved-tensor hooks."""
    saved: dict[int, int] = {}
    if not on:
        yield saved
        return

    def pack(t: torch.Tensor) -> torch.Tensor:
        if not isinstance(t, nn.Parameter) and not isinstance(t._base, nn.Parameter):
            storage = t.untyped_storage()
            saved[storage.data_ptr()] = storage.nbytes()
        return t.detach() if t.requires_grad else t  # (an output kept with its grad_fn: a cycle)

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        yield saved


def train(args: argparse.Namespace, rank: int, world_size: int, device: torch.device) -> None:
    # Same seed on every rank: identical initial weights (FSDP2 does not broadcast).
    torch.manual_seed(args.seed)
    config = GPTConfig(
        attention=args.attention,
        vocab_size=args.vocab_size,
        block_size=args.block_size,
        n_layer=args.n_layer,
        n_head=args.n_head,
        n_embd=args.n_embd,
    )
    model = GPT(config).to(device)
    if args.sleep:
        add_sleeps(model, args.sleep, rank, args.sleep_block)
    if args.leak:
        add_leak(model, args.leak, rank, args.leak_from)
    num_params = model.num_params()
    grad_bytes = sum(p.numel() * p.element_size() for p in model.parameters() if p.requires_grad)

    model = wrap_model(model, args.strategy, device)
    opt = make_optimizer(model, args.strategy, args.lr)
    loader = make_loader(args, rank)

    if rank == 0:
        print(
            f"strategy={args.strategy} world_size={world_size} device={device} "
            f"params={num_params:,} grad_bytes={grad_bytes:,}",
            flush=True,
        )

    model.train()
    step_ns: list[int] = []
    batches = iter(loader)
    tprof = None
    if args.torch_profiler != "off":  # a peer to compare against (benchmarks/runtime_overhead.py)
        tprof = torch.profiler.profile(with_stack=args.torch_profiler == "stack")
        tprof.__enter__()
    saved_bytes: list[int] = []
    for step in range(args.steps):
        CURRENT_STEP[0] = step
        t0 = time.perf_counter_ns()
        opt.zero_grad(set_to_none=True)
        for micro in range(args.grad_accum):
            x, y = next(batches)
            x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
            with gradient_sync(model, micro + 1 == args.grad_accum):
                with counting_saved(args.count_saved) as saved:
                    logits, loss = model(x, y)
                (loss / args.grad_accum).backward()
            if args.count_saved:
                saved_bytes.append(sum(saved.values()))
        opt.step()
        if step == 0:
            states = held_bytes(model, getattr(opt, "optim", opt))
        if device.type == "cuda":
            torch.cuda.synchronize()
        if tprof is not None:
            tprof.step()
        t1 = time.perf_counter_ns()
        step_ns.append(t1 - t0)
        if rank == 0 and ((step + 1) % 5 == 0 or step == 0 or step + 1 == args.steps):
            print(
                f"step {step + 1:4d}  loss {loss.item():.4f}  {(t1 - t0) / 1e6:8.2f} ms",
                flush=True,
            )

    if tprof is not None:
        tprof.__exit__(None, None, None)
    if rank == 0:
        total_s = sum(step_ns) / 1e9
        print(
            f"done: {len(step_ns)} steps in {total_s:.3f} s = {len(step_ns) / total_s:.2f} steps/s "
            f"(rank 0, {args.strategy}, world_size {world_size})",
            flush=True,
        )

    if args.timings:
        path = Path(args.timings.format(rank=rank))
        path.parent.mkdir(parents=True, exist_ok=True)
        record = {
            "rank": rank,
            "world_size": world_size,
            "strategy": args.strategy,
            "step_ns": step_ns,
            "params": num_params,
            "grad_bytes": grad_bytes,
            "shard_units": shard_units(model, args.strategy, world_size),
            "saved_bytes": saved_bytes,
            "model_states": states,
        }
        path.write_text(json.dumps(record) + "\n")


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    rank, world_size, device = setup_distributed(args.device, args.backend)
    try:
        train(args, rank, world_size, device)
    finally:
        if dist.is_available() and dist.is_initialized():
            # The wrapped model and optimizer died with train()'s frame; collect them
            # before tearing the group down. With FSDP1 on gloo, a model that outlives
            # destroy_process_group() sometimes aborts the process at interpreter exit
            # ("terminate called without an active exception", SIGABRT).
            gc.collect()
            dist.destroy_process_group()


if __name__ == "__main__":
    main()
