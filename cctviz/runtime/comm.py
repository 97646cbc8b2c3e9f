"""Collectives: what each ``torch.distributed`` call is, and how many bytes it moves.

Pure functions on duck-typed tensors (anything with ``numel()`` and
``element_size()``), so they are tested without a process group.

Bytes follow nccl-tests' "size": the buffer a collective is about, per rank:

============== ======================================= ===================
kind           bytes                                   bus factor
============== ======================================= ===================
all_reduce     the tensor                              2(n-1)/n
all_gather     the whole output (n x the input)        (n-1)/n
reduce_scatter the whole input (n x the output)        (n-1)/n
all_to_all     the whole input                         (n-1)/n
gather         the whole gathered buffer               (n-1)/n
scatter        the whole scattered buffer              (n-1)/n
broadcast      the tensor                              1
reduce         the tensor                              1
send, recv     the tensor                              1
barrier        0                                       0
============== ======================================= ===================

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

import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

#: torch.distributed function name -> (kind, how its bytes are counted)
#: modes: "arg0" first tensor; "list0" sum of the list in argument 0;
#: "list1" sum of the list in argument 1; "arg1" second tensor;
#: "out0" first tensor (the whole output); "coalesced" list in argument 1;
#: "gather" the gather list (argument 1) or n x tensor; "none" no bytes.
COLLECTIVES: dict[str, tuple[str, str]] = {
    "all_reduce": ("all_reduce", "arg0"),
    "all_reduce_coalesced": ("all_reduce", "list0"),
    "all_gather": ("all_gather", "list0"),
    "all_gather_single": ("all_gather", "arg0"),
    "all_gather_into_tensor": ("all_gather", "arg0"),
    "_all_gather_base": ("all_gather", "arg0"),
    "all_gather_coalesced": ("all_gather", "nested0"),
    "reduce_scatter": ("reduce_scatter", "list1"),
    "reduce_scatter_single": ("reduce_scatter", "arg1"),
    "reduce_scatter_tensor": ("reduce_scatter", "arg1"),
    "_reduce_scatter_base": ("reduce_scatter", "arg1"),
    "all_to_all": ("all_to_all", "list1"),
    "all_to_all_single": ("all_to_all", "arg1"),
    "broadcast": ("broadcast", "arg0"),
    "_broadcast_coalesced": ("broadcast", "coalesced"),
    "reduce": ("reduce", "arg0"),
    "gather": ("gather", "gather"),
    "scatter": ("scatter", "scatter"),
    "send": ("send", "arg0"),
    "recv": ("recv", "arg0"),
    "isend": ("send", "arg0"),
    "irecv": ("recv", "arg0"),
    "barrier": ("barrier", "none"),
    "monitored_barrier": ("barrier", "none"),
}

#: keyword names of the tensor arguments, by position, for calls made with keywords
_KW = {
    "arg0": ("tensor", "output_tensor", "output"),
    "arg1": ("input_tensor", "input", "input_list"),
    "list0": ("tensor_list", "tensors", "output_tensor_list"),
    "list1": ("input_list", "input_tensor_list"),
}

KINDS = (
    "all_reduce",
    "all_gather",
    "reduce_scatter",
    "all_to_all",
    "broadcast",
    "reduce",
    "gather",
    "scatter",
    "send",
    "recv",
    "barrier",
)


# ---- names as profilers write them (Kineto traces): kinds, dtypes, buffers
_PREFIX = re.compile(r"^(?:c10d::|(?:nccl|gloo|mpi|ucc|xccl|hccl):)")
_ALIASES = {k.replace("_", ""): k for k in KINDS}
_ALIASES.update(recvanysource="recv", monitoredbarrier="barrier", alltoallv="all_to_all")
_SUFFIXES = ("coalesced", "base", "intotensor", "tensor", "single")

#: element sizes of PyTorch dtype names, both spellings: ScalarType names of
#: ``record_param_comms``'s ``dtype`` ("Float", "BFloat16") and the C++ type
#: names of ``Input type`` ("float", "c10::BFloat16", "unsigned char"),
#: looked up lower case without "c10::".
DTYPE_SIZE: dict[str, int] = {
    **dict.fromkeys(("float", "float32"), 4),
    **dict.fromkeys(("double", "float64"), 8),
    **dict.fromkeys(("half", "float16", "bfloat16"), 2),
    **dict.fromkeys(("int", "int32", "unsigned int", "uint32"), 4),
    **dict.fromkeys(("long", "long int", "int64", "long long", "long long int"), 8),
    **dict.fromkeys(("unsigned long", "long unsigned int", "unsigned long int", "uint64"), 8),
    **dict.fromkeys(("short", "short int", "int16", "unsigned short", "uint16"), 2),
    **dict.fromkeys(("char", "signed char", "int8", "byte", "unsigned char", "uint8"), 1),
    **dict.fromkeys(("bool", "qint8", "quint8", "quint4x2", "quint2x4"), 1),
    **dict.fromkeys(("qint32",), 4),
    **dict.fromkeys(("complexhalf", "complex<half>"), 4),
    **dict.fromkeys(("complexfloat", "complex<float>"), 8),
    **dict.fromkeys(("complexdouble", "complex<double>"), 16),
    **dict.fromkeys(
        ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu"),
        1,
    ),
}


def dtype_size(name: Any) -> int | None:
    """Element size in bytes of a PyTorch dtype name as Kineto writes it; None if unknown.

    >>> dtype_size("Float"), dtype_size("c10::BFloat16"), dtype_size("unsigned char")
    (4, 2, 1)
    >>> dtype_size("Scalar") is None
    True
    """
    if not isinstance(name, str):
        return None
    return DTYPE_SIZE.get(name.lower().replace("c10::", "").strip())


def collective_kind(name: str) -> str | None:
    """The collective (one of :data:`cctviz.runtime.comm.KINDS`) an event name or
    a ``Collective name`` stands for; None for anything else (``wait``...).

    >>> collective_kind("nccl:_all_gather_base"), collective_kind("c10d::allreduce_")
    ('all_gather', 'all_reduce')
    >>> collective_kind("reduce_scatter_tensor_coalesced"), collective_kind("wait")
    ('reduce_scatter', None)
    """
    s = _PREFIX.sub("", name.strip().lower())
    if s in COLLECTIVES:
        return COLLECTIVES[s][0]
    s = s.strip("_")
    if s in COLLECTIVES:
        return COLLECTIVES[s][0]
    t = s.replace("_", "")
    changed = True
    while changed:
        changed = False
        for suf in _SUFFIXES:
            if t.endswith(suf) and len(t) > len(suf):
                t, changed = t[: -len(suf)], True
    return _ALIASES.get(t)


def nccl_tests_elements(kind: str | None, n_in: int, n_out: int, group: int | None) -> int:
    """The element count nccl-tests counts for ``kind`` from a call's input and
    output element counts (the whole gathered or scattered buffer; a recv's
    output), as profilers record them (Kineto's ``In/Out msg nelems``).

    >>> nccl_tests_elements("all_gather", 100, 400, 4), nccl_tests_elements("all_reduce", 100, 100, 4)
    (400, 100)
    """
    if kind in ("all_gather", "gather"):
        return n_out or n_in * (group or 1)
    if kind in ("reduce_scatter", "scatter"):
        return n_in or n_out * (group or 1)
    if kind == "recv":
        return n_out or n_in
    return n_in or n_out


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


def bus_factor(kind: str, n: int) -> float:
    """nccl-tests' bus bandwidth factor of a collective over ``n`` ranks."""
    if kind == "barrier":
        return 0.0
    if n <= 1:
        return 0.0 if kind not in ("send", "recv") else 1.0
    if kind == "all_reduce":
        return 2.0 * (n - 1) / n
    if kind in ("all_gather", "reduce_scatter", "all_to_all", "gather", "scatter"):
        return (n - 1) / n
    return 1.0


def bandwidth(frame: pd.DataFrame, inclusive: bool = True) -> pd.DataFrame:
    """``algbw`` and ``busbw`` in GB/s (1e9 bytes/s) from a tree's metrics.

    ``frame`` is ``tree.metrics`` (or ``tree.frame``) of a profile written by
    the runtime; with ``inclusive`` the subtree sums are used, so a module's
    figures average over every collective it issued. NaN where no
    communication time was recorded.

    >>> import cctviz
    >>> t = cctviz.Tree.from_parents([-1, 0], ["step", "all_reduce"],
    ...     {"comm_bytes": [0, 8e9], "bus_bytes": [0, 12e9], "comm_time": [0, 4e9]})
    >>> bandwidth(t.metrics).round(1).to_dict("list")
    {'algbw': [2.0, 2.0], 'busbw': [3.0, 3.0]}
    """
    sfx = " (inc)" if inclusive else ""
    t = frame[f"comm_time{sfx}"].to_numpy(dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        alg = np.where(t > 0, frame[f"comm_bytes{sfx}"].to_numpy(dtype=float) / t, np.nan)
        bus = np.where(t > 0, frame[f"bus_bytes{sfx}"].to_numpy(dtype=float) / t, np.nan)
    # bytes per ns = GB/s
    return pd.DataFrame({"algbw": alg, "busbw": bus}, index=frame.index)
