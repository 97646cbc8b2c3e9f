"""Collectives: the kinds of ``torch.distributed`` calls, dtype sizes, bus factors.

Pure data and functions on names and counts, shared by the Kineto reader
(:mod:`cctviz.readers.kineto`, which sees collectives in traces) and the
runtime (:mod:`cctviz.runtime.comm`, which counts the bytes of the tensors
it sees). Nothing here knows of torch or of tensors.

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
definitions).

>>> bus_factor("all_reduce", 4)
1.5
>>> collective_kind("nccl:all_reduce"), COLLECTIVES["all_gather_into_tensor"][0]
('all_reduce', 'all_gather')
"""

from __future__ import annotations

import re
from typing import Any

#: torch.distributed function name -> (kind, how its bytes are counted)
#: modes: "arg0" first tensor; "list0" sum of the list in argument 0;
#: "list1" sum of the list in argument 1; "arg1" second tensor;
#: "out0" first tensor (the whole output); "coalesced" list in argument 1;
#: "gather" the gather list (argument 1) or n x tensor; "none" no bytes.
#: The runtime applies the modes to tensors (:func:`cctviz.runtime.comm.collective_bytes`).
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


#: collectives with a root rank (its data is sent or received by it alone)
ROOTED = ("broadcast", "reduce", "gather", "scatter")
#: point-to-point kinds (never named after a group size)
POINT_TO_POINT = ("send", "recv")

#: OTF2's (and MPI's) collective operations -> the kind they are
OTF2_OPS = {
    "BARRIER": "barrier",
    "BCAST": "broadcast",
    "GATHER": "gather",
    "GATHERV": "gather",
    "SCATTER": "scatter",
    "SCATTERV": "scatter",
    "ALLGATHER": "all_gather",
    "ALLGATHERV": "all_gather",
    "ALLTOALL": "all_to_all",
    "ALLTOALLV": "all_to_all",
    "ALLTOALLW": "all_to_all",
    "ALLREDUCE": "all_reduce",
    "REDUCE": "reduce",
    "REDUCE_SCATTER": "reduce_scatter",
    "REDUCE_SCATTER_BLOCK": "reduce_scatter",
}
#: each collective kind -> the OTF2 operation written for it (the first spelling above)
OTF2_OP_OF = {kind: op for op, kind in reversed(list(OTF2_OPS.items()))}


def leaf_name(kind: str, n: int, world: int | None) -> str:
    """The context name of a collective over ``n`` of ``world`` ranks: the kind for
    the whole world (and for point-to-point), ``"kind (n ranks)"`` for a sub-group.
    The runtime's hooks, its OTF2 writer and the OTF2 reader all name leaves so.

    >>> leaf_name("all_reduce", 8, 8), leaf_name("all_reduce", 2, 8), leaf_name("send", 2, 8)
    ('all_reduce', 'all_reduce (2 ranks)', 'send')
    """
    if world is None or n == world or kind in POINT_TO_POINT:
        return kind
    return f"{kind} ({n} ranks)"


def kind_of_leaf(name: str) -> str | None:
    """The kind a context name of :func:`leaf_name` is of, or None.

    >>> kind_of_leaf("all_reduce (2 ranks)"), kind_of_leaf("GPT")
    ('all_reduce', None)
    """
    base = name.split(" (", 1)[0]
    return base if base in KINDS else None


# ---- names as profilers write them (Kineto traces): kinds, dtypes, buffers
#: the prefix of a collective's event name in a trace (``c10d::``, ``nccl:``...)
NAME_PREFIX = re.compile(r"^(?:c10d::|(?:nccl|gloo|mpi|ucc|xccl|hccl):)")
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
    """The collective (one of :data:`KINDS`) an event name or a
    ``Collective name`` stands for; None for anything else (``wait``...).

    >>> collective_kind("nccl:_all_gather_base"), collective_kind("c10d::allreduce_")
    ('all_gather', 'all_reduce')
    >>> collective_kind("reduce_scatter_tensor_coalesced"), collective_kind("wait")
    ('reduce_scatter', None)
    """
    s = NAME_PREFIX.sub("", name.strip().lower())
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
