"""The collective/dtype/bus-factor table shared by the Kineto reader and the runtime."""

from __future__ import annotations

import pytest

import cctviz.runtime
import cctviz.runtime.comm as comm
from cctviz.model import collectives as C


def test_every_call_maps_to_a_kind():
    assert {kind for kind, _mode in C.COLLECTIVES.values()} == set(C.KINDS)


@pytest.mark.parametrize("fn", sorted(C.COLLECTIVES))
@pytest.mark.parametrize("prefix", ["", "nccl:", "gloo:", "c10d::"])
def test_collective_kind_of_every_call_name(fn, prefix):
    assert C.collective_kind(prefix + fn) == C.COLLECTIVES[fn][0]


@pytest.mark.parametrize(
    "name,kind",
    [
        ("c10d::allreduce_", "all_reduce"),
        ("ALLGATHER_INTO_TENSOR_COALESCED", "all_gather"),
        ("nccl:recvAnySource", "recv"),
        ("alltoallv", "all_to_all"),
        ("record_param_comms", None),
        ("wait", None),
    ],
)
def test_collective_kind_of_trace_names(name, kind):
    assert C.collective_kind(name) == kind


@pytest.mark.parametrize(
    "kind,n,want",
    [
        ("all_reduce", 8, 1.75),
        ("all_gather", 4, 0.75),
        ("broadcast", 4, 1.0),
        ("send", 1, 1.0),
        ("all_reduce", 1, 0.0),
        ("barrier", 8, 0.0),
    ],
)
def test_bus_factor(kind, n, want):
    assert C.bus_factor(kind, n) == want


def test_nccl_tests_elements_fills_the_missing_side():
    # Kineto may record only one side: the other is n x it for gathers and scatters
    assert C.nccl_tests_elements("all_gather", 10, 0, 4) == 40
    assert C.nccl_tests_elements("reduce_scatter", 0, 10, 4) == 40
    assert C.nccl_tests_elements("recv", 5, 0, 2) == 5
    assert C.nccl_tests_elements(None, 0, 7, None) == 7


def test_runtime_reexports_the_same_objects():
    # public names users import from the runtime keep working, and are not copies
    for name in ("COLLECTIVES", "KINDS", "DTYPE_SIZE", "bus_factor", "collective_kind"):
        assert getattr(comm, name) is getattr(C, name)
    assert comm.dtype_size is C.dtype_size and comm.nccl_tests_elements is C.nccl_tests_elements
    assert cctviz.runtime.bus_factor is C.bus_factor
    assert comm._PREFIX is C.NAME_PREFIX
