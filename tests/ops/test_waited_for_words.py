"""One meaning per word (issue 35, item 4): whom the others waited for at a
collective is named per call (``last_to_arrive``), per rank (``stragglers``) and
per context (``most_waited_for``, ``most_often_last``), each computed once in
``cctviz.ops.collectives``; the per-call table of ``wait_transfer``, the tree's cue
and its tooltip give the same numbers under the same names (docs/architecture.md
section 2). On the HTA team's two-rank Kineto trace, and by construction where
the two per-context words part. A runtime run: tests/runtime/test_waited_for_runtime.py."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

import cctviz
from cctviz.model.timeline import Timeline
from cctviz.ops.collectives import instances, stragglers, wait_causes
from cctviz.perfmodel import wait_transfer
from tests.conftest import DATA

KINETO = sorted((DATA / "kineto").glob("hta_trace_filter_sampled_rank-*.json.gz"))
#: the words of the module, and the one they replace
WORDS = ("last_to_arrive", "most_waited_for", "most_often_last")
OLD = re.compile(r"\blate\b|late_rank|late_by|late_share|late_ranks|late_calls|late_window")


def by_hand(inst: pd.DataFrame) -> pd.DataFrame:
    """The per-context words from the per-call rows, as their definitions read
    (not the module's code): whom the others waited for most, summed; who was
    last most often, and its share of the calls of two ranks or more."""
    multi = inst[inst["ranks"] > 1]
    rows = {}
    for node, calls in multi.groupby("node"):
        last = calls.drop_duplicates("instance")
        last = last[last["last_to_arrive"] >= 0]
        cost = calls[calls["last_to_arrive"] >= 0].groupby("last_to_arrive")["wait"].sum()
        often = last["last_to_arrive"].value_counts()
        n = calls["instance"].nunique()
        top_often = int(often.index[often.to_numpy() == often.max()].min()) if len(often) else -1
        top_cost = int(cost.index[cost.to_numpy() == cost.max()].min()) if len(cost) else -1
        rows[node] = {
            "calls": n,
            "most_waited_for": top_cost,
            "most_waited_for_wait_total": int(cost.max()) if len(cost) else 0,
            "most_often_last": top_often,
            "most_often_last_share": (often.max() / n) if len(often) else 0.0,
            "ranks_ever_last": int(len(often)),
        }
    return pd.DataFrame.from_dict(rows, orient="index")


def check_one_meaning(tl: Timeline) -> pd.DataFrame:
    """The per-call rows, the per-rank and per-context tables, the per-call table
    of wait_transfer and the tree's cue agree, by definition; returns the causes."""
    inst = instances(tl)
    causes = wait_causes(tl, inst)
    assert len(causes), "no collective of two ranks"
    # the per-context words are what their definitions say of the per-call rows
    want = by_hand(inst).loc[causes.index]
    for col in want.columns:
        np.testing.assert_allclose(
            causes[col].to_numpy(float), want[col].to_numpy(float), err_msg=col
        )
    # per rank: the same counts over every context
    per_rank = stragglers(inst)
    last = inst[(inst["ranks"] > 1) & (inst["last_to_arrive"] >= 0)]
    assert (
        per_rank["last_calls"].to_dict()
        == last.drop_duplicates("instance")["last_to_arrive"].value_counts().to_dict()
    )
    # wait_transfer of the timeline: the same numbers, under the same names
    table = wait_transfer(tl).table.set_index("node").loc[causes.index]
    for word in ("most_waited_for", "most_often_last"):
        assert table[word].tolist() == [f"rank {r}" if r >= 0 else None for r in causes[word]]
    for col in ("calls", "most_waited_for_calls", "most_often_last_share", "ranks_ever_last"):
        assert table[col].tolist() == causes[col].tolist(), col
    np.testing.assert_allclose(
        table["most_waited_for_wait_total [s]"], causes["most_waited_for_wait_total"] / 1e9
    )
    # each word names one thing: no table says "late" any more
    tables = [inst, causes, per_rank, wait_transfer(tl).table]
    if "comm_time" in tl.ensemble().exc_metrics:  # an aggregate's: who waited least
        tables.append(wait_transfer(tl.ensemble()).table)
        assert "waited_least" in tables[-1].columns
    for t in tables:
        assert not [c for c in t.columns if OLD.search(str(c))], list(t.columns)
    return causes


def test_the_words_agree_on_a_real_two_rank_trace(tmp_path):
    tl = cctviz.read_timeline(KINETO)
    causes = check_one_meaning(tl)
    # the tree's cue and tooltip: the same rank, the same words, with units
    view = cctviz.CCTView(tl, collapsed=[])
    payload = view._data["waits"]
    rows = (
        np.frombuffer(payload["row"], dtype=np.int32)
        if isinstance(payload["row"], (bytes, bytearray, memoryview))
        else np.asarray(payload["row"])
    )
    assert len(rows) == len(causes)
    with pytest.warns(Warning):  # the deep tree does not fit: folded, and said so
        svg = view.save(tmp_path / "tree.svg").read_text()
    told = 0
    for node, row in causes.iterrows():
        m = re.search(rf'<g [^>]*data-id="{node}"[^>]*aria-label="([^"]*)"', svg)
        if not m:  # folded away at this size
            continue
        told += 1
        label = m.group(1)
        assert f"most waited for: rank {row['most_waited_for']}, last to arrive at" in label
        assert "most often last:" in label and not OLD.search(label), label
    assert told >= 1
    assert re.search(r"waited for: rank \d</text>", svg) and not re.search(r"late: rank", svg)


def _two_kinds_of_lateness() -> Timeline:
    """3 ranks, 8 calls: rank 1 comes 10 ns late at six calls, rank 2 comes
    100 ns late at two: rank 1 is the most often last, rank 2 the most waited for."""
    tree = cctviz.Tree.from_parents([-1, 0], ["step", "all_reduce"], kind=["step", "comm"])
    rows = []
    for k in range(8):
        t0 = 1000 * k
        late, by = (2, 100) if k % 4 == 3 else (1, 10)
        for r in range(3):
            arrive = t0 + (by if r == late else 0)
            rows.append((r, 1, arrive, t0 + by + 5))
    ev = pd.DataFrame(rows, columns=["profile", "node", "start", "end"])
    return Timeline(tree, ev, profiles=pd.DataFrame({"rank": [0, 1, 2]}))


def test_most_waited_for_and_most_often_last_are_two_things():
    tl = _two_kinds_of_lateness()
    causes = check_one_meaning(tl)
    row = causes.loc[1]
    assert row["most_often_last"] == 1 and row["most_often_last_calls"] == 6
    assert row["most_often_last_share"] == pytest.approx(6 / 8)
    assert row["most_waited_for"] == 2 and row["most_waited_for_calls"] == 2
    assert row["most_waited_for_wait_total"] == 2 * 2 * 100  # two calls, two waiters each
    assert row["ranks_ever_last"] == 2
    inst = instances(tl)
    assert inst.drop_duplicates("instance")["last_to_arrive"].tolist() == [1, 1, 1, 2] * 2


def test_nobody_is_last_at_a_tie_or_alone():
    """A call of one rank, or whose last two arrive together, has no last to
    arrive (-1): no rank is counted, marked or cued for it."""
    tree = cctviz.Tree.from_parents([-1, 0], ["step", "all_reduce"], kind=["step", "comm"])
    ev = pd.DataFrame(
        [(0, 1, 0, 20), (1, 1, 10, 20), (2, 1, 10, 20), (0, 1, 100, 120)],
        columns=["profile", "node", "start", "end"],
    )
    tl = Timeline(tree, ev, profiles=pd.DataFrame({"rank": [0, 1, 2]}))
    inst = instances(tl)
    assert (inst["last_to_arrive"] == -1).all() and (inst["last_by"] == 0).all()
    causes = wait_causes(tl, inst)
    assert causes.loc[1, ["most_waited_for", "most_often_last", "ranks_ever_last"]].tolist() == [
        -1,
        -1,
        0,
    ]
    assert stragglers(inst).empty
