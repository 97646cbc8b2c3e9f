"""Collectives in the runtime: how many bytes a ``torch.distributed`` call moves.

Pure functions on duck-typed tensors (anything with ``numel()`` and
``element_size()``), so they are tested without a process group. What each
call is (:data:`COLLECTIVES`, its kind and byte rule), nccl-tests' bus
factors and dtype sizes are pure data shared with the Kineto reader: they
live in :mod:`cctviz.model.collectives` (the table of bytes and factors is
there) and are re-exported here.

``algbw = bytes / time`` and ``busbw = algbw x factor`` (nccl-tests'
definitions). The runtime stores the additive ``comm_bytes``, ``bus_bytes``
(bytes x factor) and ``comm_time``, so bandwidths of any subtree are ratios
of inclusive sums: see :func:`bandwidth`.

>>> class T:  # a 1000-element float32 tensor
...     def numel(self): return 1000
...     def element_size(self): return 4
>>> collective_bytes("all_reduce", (T(),), {})
4000
>>> bus_factor("all_reduce", 4)
1.5
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..model.collectives import (
    COLLECTIVES,
    DTYPE_SIZE,
    KINDS,
    bus_factor,
    collective_kind,
    dtype_size,
    nccl_tests_elements,
)
from ..model.collectives import NAME_PREFIX as _PREFIX  # noqa: F401 - its old private name

# the pure table, re-exported: ``cctviz.runtime.comm.bus_factor`` etc. keep working
from ..ops.comm import bandwidth  # noqa: F401 - public here since the runtime made it

__all__ = [
    "COLLECTIVES",
    "DTYPE_SIZE",
    "KINDS",
    "bandwidth",
    "bus_factor",
    "collective_bytes",
    "collective_kind",
    "dtype_size",
    "nccl_tests_elements",
    "tensor_bytes",
]

#: keyword names of the tensor arguments, by position, for calls made with keywords
_KW = {
    "arg0": ("tensor", "output_tensor", "output"),
    "arg1": ("input_tensor", "input", "input_list"),
    "list0": ("tensor_list", "tensors", "output_tensor_list"),
    "list1": ("input_list", "input_tensor_list"),
}


def tensor_bytes(t: Any) -> int:
    """numel x element size of a tensor (0 for anything else)."""
    try:
        return int(t.numel()) * int(t.element_size())
    except (AttributeError, TypeError):
        return 0


def _arg(args: Sequence[Any], kwargs: Mapping[str, Any], pos: int, names: Sequence[str]) -> Any:
    if len(args) > pos:
        return args[pos]
    for k in names:
        if k in kwargs:
            return kwargs[k]
    return None


def collective_bytes(
    fn_name: str, args: Sequence[Any], kwargs: Mapping[str, Any], group_size: int = 1
) -> int:
    """Bytes moved by the call ``torch.distributed.<fn_name>(*args, **kwargs)`` (see the table)."""
    mode = COLLECTIVES[fn_name][1]
    if mode == "none":
        return 0
    if mode == "arg0":
        return tensor_bytes(_arg(args, kwargs, 0, _KW["arg0"]))
    if mode == "arg1":
        return tensor_bytes(_arg(args, kwargs, 1, _KW["arg1"]))
    if mode in ("list0", "list1"):
        lst = _arg(args, kwargs, 0 if mode == "list0" else 1, _KW[mode])
        return sum(tensor_bytes(t) for t in lst or ())
    if mode == "nested0":
        lst = _arg(args, kwargs, 0, ("output_tensor_lists",))
        return sum(tensor_bytes(t) for sub in lst or () for t in sub)
    if mode == "coalesced":
        lst = _arg(args, kwargs, 1, ("tensors",))
        return sum(tensor_bytes(t) for t in lst or ())
    if mode in ("gather", "scatter"):
        # gather(tensor, gather_list, dst); scatter(tensor, scatter_list, src):
        # only the root has the list; the others count n x their tensor
        lst = _arg(args, kwargs, 1, ("gather_list", "scatter_list"))
        if lst:
            return sum(tensor_bytes(t) for t in lst)
        return group_size * tensor_bytes(_arg(args, kwargs, 0, ("tensor",)))
    raise ValueError(f"unknown byte rule {mode!r}")
