"""The replay, the critical path and what-if predictions on real gloo jobs (issue 36).

One job per strategy (3-rank DDP, 2-rank FSDP2) of the example training, tiny model,
under ``cctviz run --timeline``: every rank sleeps 200 ms in ``wte`` (a wait that
does not compete for the CPU, like reading data), and three phases take turns
every ``BLOCK`` steps:

- A, the straggler: rank 1 also sleeps 200 ms in ``blocks.0.mlp``;
- B, balanced: nobody else sleeps (what ``Balance("mlp")`` of A predicts);
- C, delayed: A, and rank 1 sleeps 120 ms more in ``blocks.0.attn`` (what
  ``Delay("blocks.0/attn$", 0.12, ranks=[1])`` of A predicts).

The phases take turns within one job so that the machine's load, which moves
(tests run beside it), is the same for what is replayed and what is measured.
The prediction, replayed from the A steps' trace, is compared with the B and C
steps timed by the script's own clock (``--timings``), each the median over its
steps (but the first of each block: the one that carries the previous phase's
end) of the mean over the ranks. Within 5% (or, where the machine's load
spreads the phase's own steps more than that, within twice their interquartile
spread over the median); the unchanged replay within 2% of the trace.
"""

from __future__ import annotations

import numpy as np
import pytest

from cctviz.model.timeline import profile_ranks
from cctviz.perfmodel import Balance, Delay, replay

from .conftest import example_run

BLOCK = 4
WARMUP = 2
CYCLES = 2
#: the sleeps (ms): long beside the tiny model's computation (about 25 ms a step
#: with 3 ranks on 2 cores), whose speed the machine's load moves by a third
EVERYONE_MS, STRAGGLER_MS, DELAY_MS = 200, 200, 120
TINY = ("--batch-size", "1", "--seq-len", "8", "--n-layer", "2", "--n-embd", "32", "--n-head", "2")


def phases(nproc: int) -> str:
    everyone = ",".join(f"{r}:wte:{EVERYONE_MS}" for r in range(nproc))
    straggler = f"{everyone},1:blocks.0.mlp:{STRAGGLER_MS}"
    return f"{straggler}|{everyone}|{straggler},1:blocks.0.attn:{DELAY_MS}"


@pytest.fixture(scope="module", params=[("ddp", 3), ("fsdp", 2)], ids=["ddp3", "fsdp2"])
def turns(request, tmp_path_factory):
    strategy, nproc = request.param
    out = tmp_path_factory.mktemp(f"replay-{strategy}") / "run"
    steps = WARMUP + 3 * BLOCK * CYCLES
    run, recs = example_run(
        out, strategy, nproc=nproc, steps=steps, warmup=WARMUP, extra=("--timeline",),
        script_args=(*TINY, "--sleep", phases(nproc), "--sleep-block", str(BLOCK)),
    )  # fmt: skip
    script = np.array([r["step_ns"] for r in recs], dtype=np.float64).mean(axis=0) / 1e9
    phase = (np.arange(steps) // BLOCK) % 3
    inner = (np.arange(steps) % BLOCK != 0) & (np.arange(steps) >= WARMUP)
    return run, script, phase, inner


def steps_of(phase: np.ndarray, inner: np.ndarray, p: int) -> np.ndarray:
    """The trace's step numbers (the warm-up is not a step there) of phase ``p``."""
    return np.flatnonzero((phase == p) & inner) - WARMUP


def test_replay_reproduces_the_measured_steps(turns):
    run, _, _, _ = turns
    rp = replay(run)
    s = rp.steps
    assert len(s) == 3 * BLOCK * CYCLES
    err = (s["replayed [s]"] / s["measured [s]"] - 1).abs()
    assert err.median() <= 0.02, s
    # the path spans each step across the ranks
    for k in (0, len(s) - 1):
        cp = rp.critical_path(k)
        assert cp.length == pytest.approx(s.loc[k, "span [s]"], rel=0.01)


def test_the_sleep_is_on_the_critical_path(turns):
    run, _, phase, inner = turns
    rp = replay(run)
    k = int(steps_of(phase, inner, 0)[0])
    cp = rp.critical_path(k)
    top = cp.by_context
    mlp = [p for p in top.index if p.endswith("blocks.0/mlp")]
    assert mlp and top.loc[mlp[0], "time [s]"] >= 0.9 * STRAGGLER_MS / 1000, top.head()
    on = cp.segments[cp.segments["path"] == mlp[0]]
    assert set(on["rank"]) == {1}  # the path crosses to the sleeper for its sleep
    assert set(cp.segments["kind"]) <= {"compute", "comm", "wait", "idle", "launch", "gpu"}
    ens = cp.ensemble()
    crit = ens.values("critical")
    node = int(np.flatnonzero(ens.tree.callpaths.to_numpy() == mlp[0])[0])
    assert profile_ranks(ens.profiles)[crit[node].argmax()] == 1


@pytest.mark.parametrize(
    "change, measured_phase",
    [(Balance("mlp"), 1), (Delay("blocks.0/attn$", DELAY_MS / 1000, ranks=[1]), 2)],
    ids=["balance", "delay"],
)
def test_what_if_predicts_the_run_with_the_change(turns, change, measured_phase):
    run, script, phase, inner = turns
    rp = replay(run)
    a = steps_of(phase, inner, 0)
    predicted = rp.what_if(change).steps["replayed [s]"].loc[a].median()
    measured = np.median(script[(phase == measured_phase) & inner])
    base = np.median(script[(phase == 0) & inner])

    # within 5%, or within twice the run's own step-to-step spread where the
    # machine's load makes that wider (the steps of one phase are the same work):
    # the measured phase's and the replayed phase's, as both medians carry it
    def spread(p: int) -> float:
        steps = script[(phase == p) & inner]
        return (np.percentile(steps, 75) - np.percentile(steps, 25)) / np.median(steps)

    tolerance = max(0.05, 2 * (spread(measured_phase) + spread(0)))
    assert abs(predicted / measured - 1) <= tolerance, (predicted, measured, base, tolerance)
    # the change changed the step by more than the error allowed
    assert abs(measured / base - 1) > 0.1


def test_opportunities_name_the_straggler(turns):
    run, _, _, _ = turns
    rp = replay(run)
    op = rp.opportunities(top=5)
    assert list(op.columns) == ["path", "kind", "change", "on path [s]", "saving [s]", "share"]
    assert op["saving [s]"].is_monotonic_decreasing
    # balancing the straggler's context (or one that holds it) saves at least half
    # of its sleep, which two steps of three have
    paths = rp.timeline.tree.callpaths
    mlp = next(p for p in paths if p.endswith("step/forward/GPT/blocks.0/mlp"))
    holds = op["path"].map(lambda p: mlp == p or mlp.startswith(p + "/"))
    balance = op[op["change"].str.startswith("balance") & holds]
    assert not balance.empty and balance.index[0] < 3, op
    assert balance["saving [s]"].iloc[0] >= 0.5 * (2 / 3) * STRAGGLER_MS / 1000, op
