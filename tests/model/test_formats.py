"""The names and rules of cctviz's own files, shared by readers, writers and the runtime."""

from __future__ import annotations

import json
import warnings

import pytest

import cctviz
from cctviz.model import formats as F
from cctviz.runtime.runfolder import update_run_file


@pytest.mark.parametrize("rank", [0, 7, 12345, 123456])
def test_rank_file_names_round_trip(rank, tmp_path):
    name = F.rank_file_name(rank)
    assert F.rank_of(name) == rank
    assert F.rank_file(tmp_path, rank) == tmp_path / name
    assert F.rank_file(tmp_path, rank).match(F.RANK_GLOB)


@pytest.mark.parametrize(
    "name", ["rank-.cctviz", "rank-1.cctviz.tmp", "xrank-1.cctviz", "rank-1.json", "run.json"]
)
def test_other_names_are_no_rank_files(name):
    assert F.rank_of(name) is None


def test_merge_keeps_only_the_keys_asked_for():
    old = {"command": "cctviz run t.py", "mode": "light", "nnodes": "1"}
    new = {"command": "t.py", "mode": "detailed", "world_size": 2}
    assert F.merge_run_facts(old, new) == {**old, **new}
    kept = F.merge_run_facts(old, new, keep=("command",))
    assert kept == {
        "command": "cctviz run t.py",
        "mode": "detailed",
        "nnodes": "1",
        "world_size": 2,
    }
    # a kept key the old facts lack is taken from the new ones
    assert F.merge_run_facts({}, new, keep=("command",))["command"] == "t.py"
    assert old["mode"] == "light"  # the inputs are left alone


def test_rank0_facts_are_the_listed_ones():
    meta = {"world_size": 4, "backend": "gloo", "status": "complete", "rank": 0, "command": "t.py"}
    facts = F.rank0_facts(meta, finished="2026-01-01T00:00:00")
    assert facts == {
        "world_size": 4,
        "backend": "gloo",
        "command": "t.py",
        "finished": "2026-01-01T00:00:00",
    }


@pytest.mark.parametrize(
    "info,ranks,want",
    [
        ({"world_size": 4, "expected_world_size": 8}, [0], 4),  # rank 0's count wins
        ({"expected_world_size": 8}, [0, 1], 8),  # else the launcher's
        ({"world_size": 2}, [0, 5], 6),  # a rank file beyond it still counts
        ({"world_size": "4"}, [], 0),  # not a count: unknown
        ({}, [], 0),
    ],
)
def test_world_size(info, ranks, want):
    assert F.world_size(info, ranks) == want


def test_what_the_runtime_writes_the_reader_reads(tmp_path):
    """Launcher facts, then rank 0's merged over them, then rank files: read back as a run."""
    update_run_file(tmp_path, {"command": "cctviz run t.py", "expected_world_size": 3})
    meta = {"world_size": 3, "backend": "gloo", "command": "t.py", "status": "complete"}
    update_run_file(tmp_path, F.rank0_facts(meta, finished="now"), keep=F.LAUNCHER_KEEPS)
    info = json.loads((tmp_path / F.RUN_FILE).read_text())
    assert info["command"] == "cctviz run t.py" and info["world_size"] == 3
    for r in (0, 2):  # rank 1 died before writing
        t = cctviz.Tree.from_parents([-1], ["main"], {"time": [1.0 + r]})
        t.meta.update(status="complete", rank=r)
        cctviz.write(t, F.rank_file(tmp_path, r))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        ens = cctviz.read(tmp_path)
    assert "1 (missing)" in str(w[0].message)
    assert ens.profiles["rank"].tolist() == [0, 1, 2]
    assert ens.profiles["status"].tolist() == ["complete", "missing", "complete"]
    assert ens.profiles["file"].tolist() == [str(F.rank_file(tmp_path, r)) for r in range(3)]
    assert ens.meta["command"] == "cctviz run t.py" and ens.meta["backend"] == "gloo"
