"""Bytes and bus factors of each collective (duck-typed tensors, no process group)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from cctviz.runtime.comm import COLLECTIVES, bandwidth, bus_factor, collective_bytes


def t(n: int, dtype=torch.float32) -> torch.Tensor:
    return torch.zeros(n, dtype=dtype)


@pytest.mark.parametrize(
    "fn,args,kwargs,want",
    [
        ("all_reduce", (t(10),), {}, 40),
        ("all_reduce", (), {"tensor": t(10, torch.float16)}, 20),
        ("broadcast", (t(3, torch.int64), 0), {}, 24),
        ("all_gather", ([t(5), t(5), t(5)], t(5)), {}, 60),
        ("all_gather_into_tensor", (t(20), t(5)), {}, 80),
        ("all_gather_single", (), {"output_tensor": t(20), "input_tensor": t(5)}, 80),
        ("reduce_scatter", (t(5), [t(5)] * 4), {}, 80),
        ("reduce_scatter_tensor", (t(5), t(20)), {}, 80),
        ("reduce_scatter_single", (), {"output": t(5), "input": t(20)}, 80),
        ("all_to_all_single", (t(8), t(8)), {}, 32),
        ("all_to_all", ([t(2)] * 4, [t(2)] * 4), {}, 32),
        ("send", (t(7, torch.uint8), 1), {}, 7),
        ("irecv", (t(7, torch.float64),), {"src": 0}, 56),
        ("barrier", (), {}, 0),
        ("_broadcast_coalesced", (None, [t(4), t(6)], 1024, 0), {}, 40),
        ("gather", (t(5), [t(5)] * 4), {}, 80),
        ("gather", (t(5),), {"gather_list": None}, 4 * 20),  # not the root: n x tensor
    ],
)
def test_collective_bytes(fn, args, kwargs, want):
    assert collective_bytes(fn, args, kwargs, group_size=4) == want


def test_every_collective_has_a_kind_and_a_rule():
    for fn, (kind, _mode) in COLLECTIVES.items():
        assert bus_factor(kind, 8) >= 0
        assert collective_bytes(fn, (), {}, 2) == 0  # missing arguments: 0 bytes, no error


@pytest.mark.parametrize(
    "kind,n,want",
    [
        ("all_reduce", 2, 1.0),
        ("all_reduce", 8, 1.75),
        ("all_gather", 4, 0.75),
        ("reduce_scatter", 4, 0.75),
        ("all_to_all", 2, 0.5),
        ("broadcast", 8, 1.0),
        ("send", 2, 1.0),
        ("barrier", 8, 0.0),
        ("all_reduce", 1, 0.0),
    ],
)
def test_bus_factor(kind, n, want):
    assert bus_factor(kind, n) == pytest.approx(want)


NS = {"comm_bytes": "B", "bus_bytes": "B", "comm_time": "ns"}


def test_bandwidth_nan_without_time():
    f = pd.DataFrame({"comm_bytes": [10.0, 0.0], "bus_bytes": [15.0, 0], "comm_time": [5.0, 0.0]})
    bw = bandwidth(f, inclusive=False, units=NS)
    assert bw["algbw"].iloc[0] == 2.0 and bw["busbw"].iloc[0] == 3.0
    assert np.isnan(bw["algbw"].iloc[1])


@pytest.mark.parametrize("unit,scale", [("ns", 1.0), ("us", 1e-3), ("ms", 1e-6), ("s", 1e-9)])
def test_bandwidth_reads_the_time_unit(unit, scale):
    """The same bytes and time give the same GB/s whatever unit the time is in."""
    f = pd.DataFrame({"comm_bytes": [8e9], "bus_bytes": [12e9], "comm_time": [4e9 * scale]})
    bw = bandwidth(f, inclusive=False, units={**NS, "comm_time": unit})
    assert bw["algbw"].iloc[0] == pytest.approx(2.0) and bw["busbw"].iloc[0] == pytest.approx(3.0)


def test_bandwidth_refuses_what_it_cannot_know():
    f = pd.DataFrame({"comm_bytes": [1.0], "bus_bytes": [1.0], "comm_time": [1.0]})
    with pytest.raises(ValueError, match="units="):
        bandwidth(f)
    with pytest.raises(ValueError, match="not a time"):
        bandwidth(f, inclusive=False, units={"comm_time": "B"})
