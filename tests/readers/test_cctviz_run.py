"""Run folders (``run.json`` + ``rank-N.cctviz``): ranks, flags, and the ranks' rules and units."""

import json
import warnings

import numpy as np
import pytest

import cctviz


def _rank(r, status="complete"):
    return cctviz.Tree.from_parents(
        [-1, 0, 0],
        ["step", "forward", "allreduce"],
        {"time": [1.0, 5.0 + r, 2.0], "calls": [1.0, 1.0, 2.0], "mem_peak": [3e6, 8e6 + r, 1e6]},
        kind=["region", "op", "comm"],
        meta={
            "aggregation": {"mem_peak": "max"},
            "units": {"time": "ns", "mem_peak": "B"},
            "status": status,
            "world_size": 3,
            "rank": r,
        },
    )


@pytest.fixture
def run_folder(tmp_path):
    for r in (0, 1):  # rank 2 died before writing
        cctviz.write(
            _rank(r, "complete" if r == 0 else "exception: boom"), tmp_path / f"rank-{r:05d}.cctviz"
        )
    (tmp_path / "run.json").write_text(json.dumps({"world_size": 3, "backend": "gloo"}))
    return tmp_path


def test_a_run_folder_keeps_the_ranks_rules_and_units(run_folder):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        ens = cctviz.read(run_folder)
    assert any("ranks not complete" in str(x.message) for x in w)
    assert ens.meta["format"] == "cctviz-run"
    # mem_peak is a peak: a max over the subtree and over ranks, never a sum
    assert ens.aggregation == {"time": "sum", "calls": "sum", "mem_peak": "max"}
    assert ens.tree.units == {"time": "ns", "mem_peak": "B"}
    assert ens.profiles["ok"].tolist() == [True, False, False]
    assert ens.live.tolist() == [True, True, False]
    p1 = ens.profile(rank=1)
    assert p1.aggregation["mem_peak"] == "max"
    assert p1.metrics["mem_peak (inc)"].iloc[0] == 8e6 + 1  # max of its subtree, not 12e6 + 1
    st = ens.stats("mem_peak (inc)")
    assert st["max"].iloc[0] == 8e6 + 1 and st["n"].iloc[0] == 2  # the dead rank left out
    assert np.isclose(ens.stats("time (inc)")["mean"].iloc[0], (8.0 + 9.0) / 2)


def test_a_run_folder_round_trips_through_the_native_format(run_folder, tmp_path_factory):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ens = cctviz.read(run_folder)
    p = tmp_path_factory.mktemp("out") / "run.cctviz"
    ens.save(p)
    back = cctviz.read(p)
    assert back == ens
    assert back.aggregation["mem_peak"] == "max"
    assert back.profiles["status"].tolist() == ens.profiles["status"].tolist()
    assert back.profiles["step_ns"].tolist() == [[], [], []]
