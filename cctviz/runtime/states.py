"""Model states per rank: the bytes of parameters, gradients and optimizer
states that this process holds, as the tensors hold them.

Measured once, after the first optimizer step (when the gradients and the
optimizer's states exist), from the tensors themselves:

- each storage once (views and tensors that share a storage count once);
- a storage's whole size (FSDP2's sharded parameters are views of padded
  shards: the padding counts);
- a DTensor's local tensor (this rank's shard under FSDP2), not its global size.

The parameters are the model's (the root module the hooks saw; else the
optimizer's), the optimizer's states those of the optimizer whose step ended
first: under ``ZeroRedundancyOptimizer`` its local optimizer, which holds this
rank's partition only. These are the measured side of
:func:`cctviz.perfmodel.memory.model_states`.

>>> import torch
>>> lin = torch.nn.Linear(3, 2)  # 6 + 2 float32 parameters
>>> opt = torch.optim.SGD(lin.parameters(), lr=0.1, momentum=0.9)
>>> lin(torch.ones(1, 3)).sum().backward(); opt.step()
>>> model_states(lin, opt)  # doctest: +NORMALIZE_WHITESPACE
{'state_params': 32, 'state_grads': 32, 'state_optimizer': 32, 'optimizer': 'SGD',
 'optimizer_layout': {'momentum_buffer': 'like'}}
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def model_states(module: Any, optimizer: Any) -> dict[str, Any]:
    """This rank's model states in bytes (module docstring): ``state_params``,
    ``state_grads``, ``state_optimizer``, and ``optimizer`` (its class name)."""
    params = _parameters(module, optimizer)
    seen: set[int] = set()
    return {
        "state_params": _storage_bytes(params, seen),
        "state_grads": _storage_bytes((p.grad for p in params), seen),
        "state_optimizer": _storage_bytes(_state_tensors(optimizer), seen),
        "optimizer": type(optimizer).__name__,
        "optimizer_layout": _layout(optimizer),
    }


def _layout(optimizer: Any) -> dict[str, Any]:
    """The optimizer's state of one parameter: each state ``"like"`` the
    parameter (its shape and dtype), or its bytes (a scalar such as Adam's
    ``step``). What :class:`cctviz.perfmodel.footprint.OptimizerLayout` reads."""
    for p, state in optimizer.state.items():
        out: dict[str, Any] = {}
        for k, v in state.items():
            if not hasattr(v, "untyped_storage"):
                continue
            like = tuple(v.shape) == tuple(p.shape) and v.dtype == p.dtype
            out[k] = "like" if like else int(v.numel() * v.element_size())
        return out
    return {}


def _parameters(module: Any, optimizer: Any) -> list[Any]:
    """The model's parameters, each once (the optimizer's where no module is known)."""
    if module is not None and hasattr(module, "parameters"):
        found = list(module.parameters())
    else:
        found = [p for g in optimizer.param_groups for p in g["params"]]
    return list({id(p): p for p in found}.values())


def _state_tensors(optimizer: Any) -> Iterable[Any]:
    """Every tensor in the optimizer's per-parameter states."""
    for state in optimizer.state.values():
        for value in state.values():
            if hasattr(value, "untyped_storage"):
                yield value


def _storage_bytes(tensors: Iterable[Any], seen: set[int]) -> int:
    """The bytes of the storages under ``tensors`` (local tensors of DTensors),
    each once across every call with the same ``seen``."""
    total = 0
    for t in tensors:
        if t is None:
            continue
        local = getattr(t, "_local_tensor", t)  # a DTensor: this rank's shard
        storage = local.untyped_storage()
        key = storage.data_ptr()
        if key == 0 or key in seen:  # (an empty storage has no address)
            continue
        seen.add(key)
        total += int(storage.nbytes())
    return total
