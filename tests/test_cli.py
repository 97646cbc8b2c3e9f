import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

import pandas as pd
import pytest

import cctviz
from cctviz.cli import main
from tests.conftest import DATA, HATCHET_JSON

KRIPKE = DATA / "hatchet-tutorial" / "hpctoolkit-kripke-database-2589696"
RESNET = DATA / "kineto" / "kineto_tb_resnet50_2021.json.gz"
GLYPH = re.compile(r"[├└]─ ")


def names_of(out: str) -> list[str]:
    """The node names of a `cctviz tree` output (right of the value columns)."""
    lines = [ln for ln in out.splitlines() if not ln.startswith("#")]
    base = min(m.start() for ln in lines if (m := GLYPH.search(ln)))
    return [GLYPH.split(ln[base:])[-1].strip() for ln in lines]


def test_tree_command(capsys):
    assert main(["tree", str(HATCHET_JSON), "--depth", "2"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "# time (inc) [unit unknown]; 24 nodes, 6 shown"
    assert out[1] == "135  foo"
    assert len(out) == 1 + 4 + 2 + 2  # header, foo and its 3 children, the second root and
    # child, what was not shown and how to see more: in the words of the command line
    assert out[-2:] == ["# not shown: 18 nodes deeper than depth 2", "# more: --depth 4"]


def test_tree_options(capsys):
    assert main(["tree", str(KRIPKE), "--max-nodes", "7"]) == 0
    out = capsys.readouterr().out
    assert len(names_of(out)) == 7
    more = out.splitlines()[-1]
    assert more.startswith("# more: --max-nodes ") and "--threshold 0.0001" in more
    assert "max_nodes=" not in out and "threshold=" not in out
    assert main(["tree", str(KRIPKE), "-n", "0", "--threshold", "0.01", "--width", "12"]) == 0
    out = capsys.readouterr().out
    names = names_of(out)
    assert 10 < len(names) < 60 and max(len(n) for n in names) == 12
    assert "SweepSolver" in names and "Kerne…tering" in names
    assert "below 1% of the root" in out
    assert main(["tree", str(KRIPKE), "--threshold", "0", "--max-nodes", "0"]) == 0
    out = capsys.readouterr().out
    assert "MPI_Init  (10 zero-valued nodes below, folded)" in out
    assert "PMPI_Init" not in out  # the rest of the zero chain is folded
    assert (
        main(["tree", str(RESNET), "-n", "5", "-m", "gpu_time (inc)", "--second", "calls (inc)"])
        == 0
    )
    out = capsys.readouterr().out
    assert out.startswith(
        "# gpu_time (inc), each value with its unit (recorded in us) (calls (inc) in brackets);"
    )
    assert re.search(r"^ *\d\S* ms \(\d\S*( k)?\)  process$", out, re.M)
    assert main(["tree", str(RESNET), "-n", "5"]) == 0
    assert "--metric 'gpu_time (inc)'" in capsys.readouterr().out
    assert main(["tree", str(HATCHET_JSON), "--metric", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("cctviz: no metric 'nope'") and len(err.splitlines()) == 1


def test_tree_of_a_cctviz_run_shows_times_with_units(tmp_path, capsys):
    """A `cctviz run` folder (here cctviz.profile in this process, one rank):
    nanoseconds are read as times, never as 10-digit integers."""
    import torch

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with cctviz.profile(out=tmp_path / "run", warmup=1) as prof:
        for _ in range(4):
            model(torch.randn(8, 16)).square().mean().backward()
            opt.step()
            opt.zero_grad()
    assert cctviz.read(prof.out).tree.units["time"] == "ns"
    assert main(["tree", str(prof.out), "--threshold", "0"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(
        "# time (inc), each value with its unit (recorded in ns), mean over 1 profile;"
    )
    body = [ln for ln in out.splitlines() if not ln.startswith("#")]
    assert len(body) >= 8 and "step" in names_of(out)
    for ln in body:
        assert re.match(r"^ *\d+(\.\d+)? (s|ms|us|ns)  ", ln), ln
    assert not re.search(r"\d{5,}", out)  # no raw nanoseconds anywhere
    assert main(["info", str(prof.out)]) == 0
    info = capsys.readouterr().out
    assert re.search(r"^time +ns +sum +\d+(\.\d+)? (s|ms)$", info, re.M)
    assert "profiles: 1 in 1 run" in info


def test_info_command_text(capsys):
    assert main(["info", str(KRIPKE)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == str(KRIPKE)
    assert out[1] == "Ensemble (hpctoolkit): 1492 nodes, 1 root, depth 28"
    assert out[2] == "profiles: 64 in 1 run, 26550 (node, profile) rows"
    assert ["metric  unit  rule  total", "time    us    sum   192 s"] == out[4:6]
    assert main(["info", str(RESNET)]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^gpu_time +us +sum +604 ms$", out, re.M)
    assert re.search(r"^comm_bytes +B +sum +0 B$", out, re.M)


def test_info_command_json(capsys):
    f = DATA / "hatchet/caliper-lulesh-json/lulesh-annotation-profile.json"
    assert main(["info", str(f), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["format"] == "caliper-json"
    assert info["profiles"] == 8 and info["nodes"] == 24
    assert info["metrics"] == ["time"]
    # Caliper's file states no unit: the timer's microseconds are assumed, and said so
    assert info["aggregation"] == {"time": "sum"} and info["units"] == {"time": "us"}
    assert info["runs"] == {"": 8} and info["live profiles"] == 8
    assert info["totals"]["time"] == pytest.approx(5889901.5)


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
    # the strategy as the metadata names it, so `--diff strategy=DDP,FSDP2` works as printed
    assert "Communication per step by context, FSDP2" in r.stdout
    # what the tree's collective time, the table's ms and (outside steps) are, said where shown
    assert "comm_time, from the issue to the end of the transfer" in r.stdout
    assert re.search(r"\(outside steps\) holds \d+% to \d+% of each rank's time", r.stdout)
    # the closing hint is a command that runs as printed (the virtualenv's cctviz, the --out folder)
    hint = r.stdout.strip().splitlines()[-1]
    command = hint.removeprefix("open them with: ").split("   or")[0].split()
    assert command[-1] == str(tmp_path / "run-ddp")
    assert subprocess.run(command, capture_output=True, text=True).returncode == 0, hint
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
    assert ddp["MB_mean"].iloc[0] == pytest.approx(params * 4 / 1e6, rel=1e-9)  # fp32 gradients
    assert (tmp_path / "tree-ddp.txt").read_text().count("blocks.") >= 4
    # the figures: vector, with the tree's names as text, 7 in wide
    svg = ET.parse(tmp_path / "tree-ddp.svg").getroot()
    texts = {t.text for t in svg.iter("{http://www.w3.org/2000/svg}text")}
    assert "step" in texts and "forward" in texts and svg.get("width") == "504pt"
    assert (tmp_path / "tree-ddp.pdf").read_bytes().startswith(b"%PDF-")
    comm_svg = (tmp_path / "comm-ddp.svg").read_text()
    assert "time \u00d7 comm_time" in comm_svg
    # most nodes move nothing: the zeros are the low class and the nodes that
    # communicate the high one ("0 | > 0", not "0 ns | 0 ns"), so the all_reduce,
    # the one node that communicates, takes a colour of the legend's top row (its
    # time's class, the column, depends on the machine's speed that run)
    assert re.search(r"\u2191 0 \| (&gt;|>) 0<", comm_svg), "comm_time collapsed"
    column, row = legend_cell(comm_svg, "all_reduce")
    assert row == "top", (column, row)
    # the ensemble Sankeys of the step: modules by nn.Module path, and FSDP2 against DDP
    sankey = (tmp_path / "sankey-ddp.svg").read_text()
    assert 'aria-label="GPT.blocks.0' in sankey and "mean over 2 profiles" in sankey
    diff = ET.parse(tmp_path / "sankey-fsdp-vs-ddp.svg").getroot()
    assert "cctviz-diff" in diff.get("class") and diff.get("width") == "504pt"
    # what the demo and `cctviz tree` print of its run: times with units, never raw ns
    tree = subprocess.run(
        [sys.executable, "-m", "cctviz.cli", "tree", str(tmp_path / "run-ddp")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    for out in (r.stdout.split("Communication per step")[0], tree):
        assert not re.search(r"\d{6,}", out.replace(str(tmp_path), ""))
        assert re.search(r"\d (s|ms|us) ", out)
    # the communication table converts the run's ns to ms and GB/s
    alg = ddp["MB_mean"].iloc[0] * 1e6 / (ddp["ms_mean"].iloc[0] * 1e-3) / 1e9
    assert ddp["algbw GB/s"].iloc[0] == pytest.approx(alg, rel=1e-9)


def test_lulesh_demo_writes_outputs(tmp_path):
    r = subprocess.run(
        [sys.executable, "-m", "cctviz.cli", "demo", "--lulesh", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "Contexts where imbalance costs most" in r.stdout
    ens = cctviz.read(tmp_path / "lulesh-scaling.cctviz")
    assert ens.n_profiles == 1 + 8 + 27 + 64
    assert (tmp_path / "scaling.csv").read_text().startswith("cores,")


def legend_cell(svg_text: str, name: str) -> tuple[int, str]:
    """The bivariate legend's cell whose fill the node ``name``'s mark has: its
    column (0: the first metric's low class) and whether it is the grid's top row
    (high on the second metric) ("top", else "lower")."""
    ns = "{http://www.w3.org/2000/svg}"
    root = ET.fromstring(svg_text)
    legend = next(
        g
        for g in root.iter(f"{ns}g")
        if "cctviz-legend" in (g.get("class") or "").split()
        and any("tercile" in (t.text or "") for t in g.iter(f"{ns}text"))
    )
    cells = [r for r in legend.findall(f"{ns}rect") if r.get("fill", "").startswith("#")]
    node = next(
        g for g in root.iter(f"{ns}g") if (g.get("aria-label") or "").startswith(f"{name},")
    )
    fill = node.find(f"{ns}circle").get("fill")
    mine = [r for r in cells if r.get("fill") == fill]
    assert mine, f"{name}'s fill {fill} is no legend cell"
    xs = sorted({float(r.get("x")) for r in cells})
    top = min(float(r.get("y")) for r in cells)
    return xs.index(float(mine[0].get("x"))), "top" if float(mine[0].get("y")) == top else "lower"
