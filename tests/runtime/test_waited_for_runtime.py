"""One meaning per word (issue 35, item 4) on a real job traced by ``cctviz run
--timeline``: 3 gloo ranks of DDP where rank 1 arrives last at the gradient
all-reduce by a little at most steps and rank 2 by a lot at every fourth
(``examples/rotating_late.py`` with a schedule). Per call the last to arrive is the sleeper;
per context rank 1 is the most often last and rank 2 the most waited for; the
per-call table of ``wait_transfer``, ``wait_causes`` and the tree's cue say the
same, each under its own name."""

from __future__ import annotations

import re

import numpy as np
import pytest

import cctviz
from cctviz.demo import example_script
from cctviz.ops.collectives import instances, wait_causes
from cctviz.perfmodel import wait_transfer
from tests.ops.test_waited_for_words import OLD, check_one_meaning

from .conftest import CCTVIZ, run_job

STEPS, SHORT_MS, LONG_MS = 8, 40, 400  # rank 1: 6 x 40 ms, rank 2: 2 x 400 ms


@pytest.fixture(scope="module")
def two_kinds(tmp_path_factory):
    run = tmp_path_factory.mktemp("two-kinds") / "run"
    run_job(
        [
            *CCTVIZ,
            "run",
            "--standalone",
            "--nproc-per-node",
            "3",
            "--out",
            str(run),
            "--warmup",
            "0",
            "--timeline",
            str(example_script("rotating_late.py")),
            str(STEPS),
            str(SHORT_MS),
            # rank 1 sleeps a little at three steps of four, rank 2 a lot at the fourth
            f"1:{SHORT_MS},1:{SHORT_MS},1:{SHORT_MS},2:{LONG_MS}",
        ]  # fmt: skip
    )
    return run


def _gradient_all_reduce(tl):
    inst = instances(tl)
    grads = inst[(inst["collective"] == "all_reduce") & (inst["step"] >= 0)]
    assert grads["node"].nunique() == 1
    return inst, grads, int(grads["node"].iloc[0])


def test_per_call_the_sleeper_is_the_last_to_arrive(two_kinds):
    tl = cctviz.read_timeline(two_kinds)
    _, grads, _ = _gradient_all_reduce(tl)
    calls = grads.drop_duplicates("instance")
    assert len(calls) >= STEPS
    slept = np.where(calls["step"] % 4 == 3, 2, 1)
    assert (calls["last_to_arrive"].to_numpy() == slept).mean() >= 0.9, calls


def test_per_context_two_words_two_ranks_one_answer_everywhere(two_kinds, tmp_path):
    tl = cctviz.read_timeline(two_kinds)
    causes = check_one_meaning(tl)  # tables agree by definition (tests/ops)
    inst, _, node = _gradient_all_reduce(tl)
    row = wait_causes(tl, inst).loc[node]
    assert row["most_often_last"] == 1 and row["most_waited_for"] == 2, row
    assert row["most_often_last_share"] > 0.5 and row["ranks_ever_last"] >= 2
    # wait_transfer's per-call table: the same two ranks, named the same way
    table = wait_transfer(tl).table.set_index("node").loc[node]
    assert table["most_often_last"] == "rank 1" and table["most_waited_for"] == "rank 2"
    assert table["most_often_last_share"] == causes.loc[node, "most_often_last_share"]
    # the tree: the cue names the most waited for, the tooltip both words
    view = cctviz.CCTView(tl, collapsed=[])
    svg = view.save(tmp_path / "tree.svg", width="20in").read_text()  # wide: nothing folded
    m = re.search(rf'<g [^>]*data-id="{node}"[^>]*aria-label="([^"]*)"', svg)
    assert m, "the all-reduce is drawn"
    label = m.group(1)
    assert "most waited for: rank 2, last to arrive at" in label, label
    assert "most often last: rank 1, at" in label and not OLD.search(label), label
    assert "waited for: rank 2</text>" in svg
    # an aggregate has no calls: it names who waited least, not one of the words above
    agg = wait_transfer(cctviz.read(two_kinds)).table.set_index("kind").loc["all_reduce"]
    assert agg["waited_least"].startswith("rank ")
    assert not set(agg.index) & {"most_waited_for", "most_often_last", "last_to_arrive"}
