"""The README's Python tour runs as written (from the repository root)."""

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def block_with(marker: str) -> str:
    """The README's one Python block that contains ``marker``."""
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    found = [b for b in blocks if marker in b]
    assert len(found) == 1, f"{len(found)} python blocks of the README contain {marker!r}"
    return found[0]


def test_readme_tour_runs(tmp_path, monkeypatch):
    text = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert blocks, "README has no python block"
    monkeypatch.chdir(ROOT)
    code = blocks[0].replace('"lulesh.cctviz"', repr(str(tmp_path / "lulesh.cctviz")))
    ns: dict = {}
    exec(compile(code, "README.md", "exec"), ns)  # noqa: S102 - our own README
    exec(compile(blocks[1], "README.md", "exec"), ns)  # noqa: S102 - the view block
    rules: dict = {}
    exec(compile(blocks[2], "README.md", "exec"), rules)  # noqa: S102 - what the numbers mean
    t = rules["t"]
    assert t.metrics.loc[0, ["time (inc)", "mem_peak (inc)"]].tolist() == [14e6, 5e9]
    assert (
        rules["cctviz"].model.units.format_value(t.metrics.loc[0, "time (inc)"], "ns") == "14.0 ms"
    )
    exec(compile(blocks[3], "README.md", "exec"), ns)  # noqa: S102 - the runtime block
    assert ns["run"].profiles["steps"].tolist() == [4] and ns["run"].profiles["ok"].all()
    readers = blocks[4]
    for out in ("trace.speedscope.json", "trace.folded"):  # written to tmp_path, not the repo
        readers = readers.replace(f'"{out}"', repr(str(tmp_path / out)))
    exec(compile(readers, "README.md", "exec"), ns)  # noqa: S102 - the readers block
    assert ns["ranks"].profiles["rank"].tolist() == [0, 1]
    assert ns["back"].nodes["name"].tolist() == ns["trace"].nodes["name"].tolist()
    speed = ns["cctviz"].read(tmp_path / "trace.speedscope.json")
    assert speed.metrics["time"].sum() == ns["trace"].metrics["time"].sum()
    folded = ns["cctviz"].read(tmp_path / "trace.folded", format="folded")
    assert folded.metrics.iloc[:, 0].sum() > 0
    assert ns["kripke"].n_profiles == 64 and len(ns["runs"].profiles) == 5
    assert ns["again"].state == ns["imbalance"].state
    assert set(ns["view"].selected["name"]) == {
        n for n in ns["view"].tree.names if n.startswith("MPI_")
    }
    assert ns["cctviz"].read(tmp_path / "lulesh.cctviz") == ns["ens"]
    assert (
        len(ns["calc"]) > 3
        and len(ns["calc"] & ns["hot"]) > 0
        and ns["t"].query(ns["q"]) == ns["hot"]
    )


def test_readme_starts_with_the_two_commands():
    text = (ROOT / "README.md").read_text()
    first = re.search(r"```bash\n(.*?)```", text, re.S).group(1).strip().splitlines()
    assert [ln.split("#")[0].strip() for ln in first] == [
        "bash scripts/demo.sh",
        "bash scripts/test.sh",
    ]
    assert os.access(ROOT / ".ci" / "run", os.X_OK)


def test_readme_sankey_block_runs(monkeypatch):
    """The ensemble Sankey block: the slow ranks of the costliest module, linked, diffed."""
    monkeypatch.chdir(ROOT)
    sk: dict = {}
    exec(compile(block_with("cctviz.SankeyView(ens)"), "README.md", "exec"), sk)  # noqa: S102 - our own README
    slow = sk["slow"]
    assert 0 < len(slow) < 64 and sk["tree"].selected_profiles == slow
    assert sk["tree"]._data["spread"]["profiles"] == len(slow)
    assert sk["diff"]._data["diff"]["b_profiles"] == len(slow)


def test_readme_perfmodel_block_runs(monkeypatch):
    """The predicted-against-measured block: scaling models of the bundled runs, ZeRO-3."""
    monkeypatch.chdir(ROOT)
    pm: dict = {}
    exec(compile(block_with("ModelSpec(params=7_500_000_000)"), "README.md", "exec"), pm)  # noqa: S102 - our own README
    assert pm["top"].index[0] == 0  # main: the most time at 512 cores too
    assert round(pm["zero"].total / 1e9, 1) == 1.9  # the ZeRO paper's 7.5B example, 64 GPUs


@pytest.mark.slow
def test_readme_timeline_block_runs(tmp_path, monkeypatch):
    """The timeline block, on a run traced with `cctviz run --timeline` (2 ranks)."""
    import subprocess
    import sys

    from cctviz.demo import example_script

    run = tmp_path / "run"
    cmd = [sys.executable, "-m", "cctviz.cli", "run", "--standalone", "--nproc-per-node", "2",
           "--out", str(run), "--warmup", "0", "--timeline",
           str(example_script("rotating_late.py")), "3", "20"]  # fmt: skip
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    block = block_with("read_timeline")
    ns: dict = {}
    exec(compile(block.replace('"out/run-ddp"', repr(str(run))), "README.md", "exec"), ns)  # noqa: S102
    assert ns["tl"].n_profiles == 2 and len(ns["inst"]) > 0
    assert ns["last"]["last_calls"].sum() >= 3  # a last to arrive at every step
    assert ns["first_half"].n_profiles == 2


def test_readme_sampler_block_runs(tmp_path, monkeypatch):
    """The sampler block: its regions get their CPU share, bytes written and RSS peak."""
    monkeypatch.chdir(ROOT)
    block = block_with("runs/sampled").replace("runs/sampled", str(tmp_path / "sampled"))
    ns: dict = {}
    exec(compile(block, "README.md", "exec"), ns)  # noqa: S102 - our own README
    t = ns["used"]
    ids = {n: i for i, n in enumerate(t.names)}
    size = (tmp_path / "sampled" / "state.npy").stat().st_size
    assert t.metrics.loc[ids["write"], "io_write_bytes (inc)"] >= size
    assert (
        t.metrics.loc[ids["wait"], "cpu_util (inc)"] < t.metrics.loc[ids["solve"], "cpu_util (inc)"]
    )
    assert t.metrics.loc[ids["solve"], "rss_peak (inc)"] > 0


def test_readme_dataset_block_runs(tmp_path, monkeypatch):
    """The datasets block: composed to disk, statistics, groupby, prune, the views, one
    profile and a selection back in memory, equal to the in-memory ensemble's."""
    import cctviz

    monkeypatch.chdir(ROOT)
    block = block_with("open_dataset").replace('"study.dataset"', repr(str(tmp_path / "s")))
    ns: dict = {}
    exec(compile(block, "README.md", "exec"), ns)  # noqa: S102 - our own README
    ens = cctviz.read_ensemble(ns["files"], progress=False)
    assert ns["table"].equals(ens.stats("time (inc)", formatted=True))
    assert sorted(ns["by_run"]) == sorted(ens.profiles["run"].unique())
    assert ns["one"].meta["profile"]["rank"] == 3 and ns["ens"].n_profiles == 8
    assert all(v._data for v in ns["views"])


@pytest.mark.slow
def test_readme_replay_block_runs(tmp_path, monkeypatch):
    """The replay block, on a 2-rank DDP run of the example in which rank 1 sleeps."""
    import subprocess
    import sys

    run = tmp_path / "run"
    cmd = [sys.executable, "-m", "cctviz.cli", "run", "--standalone", "--nproc-per-node", "2",
           "--out", str(run), "--warmup", "1", "--timeline", str(ROOT / "examples" / "train.py"),
           "--strategy", "ddp", "--steps", "4", "--batch-size", "1", "--seq-len", "8",
           "--n-layer", "2", "--n-embd", "32", "--n-head", "2",
           "--sleep", "1:blocks.0.mlp:50,1:blocks.0.attn:5"]  # fmt: skip
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    ns: dict = {}
    block = block_with("replay(").replace('"out/run"', repr(str(run)))
    exec(compile(block, "README.md", "exec"), ns)  # noqa: S102 - our own README
    steps = ns["rp"].steps
    assert len(steps) == 3 and (steps["replayed [s]"] - steps["measured [s]"]).abs().max() < 1e-9
    mlp = [p for p in ns["cp"].by_context.index if p.endswith("blocks.0/mlp")]
    assert mlp and ns["cp"].by_context.loc[mlp[0], "time [s]"] > 3 * 0.045
