"""What a first-time user tripped on at the command line (issue 20, section 5):
a missing optional package, --diff by a file's name, --diff-labels, `cctviz view`
of several profiles, and what the demo says of its own output."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

import cctviz
from cctviz.cli import main
from tests.conftest import DATA, ROOT

LULESH = sorted((DATA / "hatchet-tutorial" / "lulesh-scaling").glob("*.json"))
EIGHT = next(p for p in LULESH if p.name.endswith("-8cores.json"))
BIG = next(p for p in LULESH if p.name.endswith("-64cores.json"))


def _without(module: str, *args: str) -> subprocess.CompletedProcess:
    """``cctviz ARGS`` in a process where ``module`` cannot be imported."""
    code = (
        f"import sys; sys.modules[{module!r}] = None\n"
        "from cctviz.cli import main\n"
        "sys.exit(main(sys.argv[1:]))"
    )
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    ("module", "path"),
    [
        ("otf2", "pipit/ping-pong-otf2"),
        ("pycubexr", "scorep-cube/call_tree_test/call_tree_test.cubex"),
    ],
)
def test_a_missing_extra_is_a_message_not_a_traceback(module, path):
    run = _without(module, "tree", str(DATA / path))
    assert run.returncode == 2, run.stderr
    assert "Traceback" not in run.stderr
    assert (
        "pip install 'cctviz[scorep]'" in run.stderr
        and str(DATA / path).split("/")[-1] in run.stderr
    )


def _sankey_of_two(out) -> list[str]:
    """`cctviz export` of the 8- and 64-core LULESH runs as one Sankey by name."""
    return [
        "export",
        str(EIGHT),
        str(BIG),
        "-o",
        str(out),
        "--view",
        "sankey",
        "--group-by",
        "name",
    ]


def _labels(svg_path) -> str:
    root = ET.parse(svg_path).getroot()
    return " ".join(t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}text"))


@pytest.mark.parametrize("spell", ["path", "name", "stem"])
def test_diff_by_file_matches_the_path_its_name_or_its_stem(tmp_path, spell):
    a, b = {
        "path": (str(EIGHT), str(BIG)),
        "name": (EIGHT.name, BIG.name),
        "stem": (EIGHT.stem, BIG.stem),
    }[spell]
    out = tmp_path / "diff.svg"
    args = _sankey_of_two(out)
    assert main([*args, "--diff", f"file={a},{b}"]) == 0
    assert "cctviz-diff" in ET.parse(out).getroot().get("class")
    assert f"file={b}" in _labels(out)  # the default labels name the sides as typed


def test_diff_labels_name_the_two_sides(tmp_path, capsys):
    out = tmp_path / "diff.svg"
    args = _sankey_of_two(out)
    assert (
        main(
            [*args, "--diff", f"file={EIGHT.name},{BIG.name}", "--diff-labels", "8 cores,64 cores"]
        )
        == 0
    )
    text = _labels(out)
    assert "64 cores" in text and "8 cores" in text
    # a value no profile has: a message that lists what there is
    assert main([*args, "--diff", "file=nope.json,other.json"]) == 2
    err = capsys.readouterr().err
    assert "no profile has file=nope.json" in err and EIGHT.name in err
    # --diff-labels alone is for the Sankey's diff mode
    assert main(["export", str(EIGHT), "-o", str(tmp_path / "t.svg"), "--diff-labels", "a,b"]) == 2


def test_diff_by_strategy_as_the_metadata_names_it_or_in_another_case():
    a = cctviz.Tree.from_parents([-1, 0], ["main", "f"], {"time": [1.0, 2.0]})
    ens = cctviz.Ensemble.from_trees(
        [a, a, a, a], profiles={"strategy": ["DDP", "DDP", "FSDP2", "FSDP2"]}
    )
    from cctviz.cli import _diff, _diff_side

    sides = _diff("strategy=ddp,FSDP2")
    assert [
        list(_diff_side(ens, s)) if not isinstance(_diff_side(ens, s), dict) else _diff_side(ens, s)
        for s in sides
    ] == [
        [0, 1],
        {"strategy": "FSDP2"},
    ]


def test_view_takes_several_profiles_as_one_ensemble(tmp_path):
    page = tmp_path / "runs.html"
    assert (
        main(
            [
                "view",
                str(EIGHT),
                str(BIG),
                "-o",
                str(page),
                "--view",
                "sankey",
                "--group-by",
                "name",
            ]
        )
        == 0
    )
    html = page.read_text(encoding="utf-8")
    assert re.search(r'"profiles_total":\s*72\b', html) and "<script" in html  # 8 + 64 ranks
    help_text = subprocess.run(
        [sys.executable, "-m", "cctviz.cli", "view", "--help"],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "PROFILE [PROFILE ...]" in help_text


def test_tree_of_a_folder_of_runs_does_not_call_the_spread_imbalance(capsys):
    """`cctviz tree` of 8 LULESH runs (1,296 ranks): the header says the profiles are
    of 8 runs and the max/mean is a spread across runs, not a load imbalance."""
    assert main(["tree", str(DATA / "hatchet-tutorial" / "lulesh-scaling"), "-n", "4"]) == 0
    head = capsys.readouterr().out.splitlines()[:2]
    assert "mean over 1296 profiles of 8 runs" in head[0]
    assert "spread across runs" in head[1] and "imbalance max/mean" not in head[1]
    # one run's ranks: that is an imbalance
    assert (
        main(
            [
                "tree",
                str(DATA / "hatchet-tutorial" / "hpctoolkit-kripke-database-2589696"),
                "-n",
                "3",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert " runs" not in out.splitlines()[0]
