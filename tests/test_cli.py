import json
import subprocess
import sys

import pandas as pd
import pytest

import cctviz
from cctviz.cli import main
from tests.conftest import DATA, HATCHET_JSON


def test_tree_command(capsys):
    assert main(["tree", str(HATCHET_JSON), "--depth", "2"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1] == "135.000 foo"
    assert len(out) == 1 + 4 + 2  # header, foo and its 3 children... plus the second root and child


def test_info_command_json(capsys):
    f = DATA / "hatchet/caliper-lulesh-json/lulesh-annotation-profile.json"
    assert main(["info", str(f), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["format"] == "caliper-json"
    assert info["profiles"] == 8 and info["nodes"] == 24
    assert info["metrics"] == ["time"]


def test_errors_are_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2")
    assert main(["tree", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("cctviz: ") and str(bad) in err and "Traceback" not in err


def test_demo_profiles_the_example_training(tmp_path):
    r = subprocess.run(
        [sys.executable, "-m", "cctviz.cli", "demo", "--out", str(tmp_path), "--steps", "6"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "Communication per step by context, DDP" in r.stdout
    runs = cctviz.read(tmp_path / "runs.cctviz")
    assert runs.n_profiles == 4  # 2 runs x 2 ranks
    assert sorted(set(runs.profiles["strategy"])) == ["DDP", "FSDP2"]
    comm = pd.read_csv(tmp_path / "comm-fsdp.csv")
    # FSDP2 gathers the root and every block in forward, under the module that owns it
    fwd = comm[comm["context"].str.startswith("forward") & (comm["kind"] == "all_gather")]
    assert {"forward/GPT", "forward/GPT/blocks.0", "forward/GPT/blocks.3"} <= set(fwd["context"])
    ddp = pd.read_csv(tmp_path / "comm-ddp.csv")
    params = cctviz.read(tmp_path / "run-ddp").meta["params"]
    assert ddp["kind"].tolist() == ["all_reduce"]
    assert ddp["MB"].iloc[0] == pytest.approx(params * 4 / 1e6, rel=1e-9)  # fp32 gradients
    assert (tmp_path / "tree-ddp.txt").read_text().count("blocks.") >= 4


def test_lulesh_demo_writes_outputs(tmp_path):
    r = subprocess.run(
        [sys.executable, "-m", "cctviz.cli", "demo", "--lulesh", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "Most imbalanced contexts" in r.stdout
    ens = cctviz.read(tmp_path / "lulesh-scaling.cctviz")
    assert ens.n_profiles == 1 + 8 + 27 + 64
    assert (tmp_path / "scaling.csv").read_text().startswith("cores,")
