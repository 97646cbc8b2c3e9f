"""Model states per rank (issue 37): the bytes of parameters, gradients and
optimizer states each rank holds after its first optimizer step, as the runtime
measures them, as the training script counts them itself (examples/train.py's
``held_bytes``, into ``--timings``), and as the footprint model predicts them
from the run's own record of the model (parameter shapes), its strategy and its
optimizer's layout: all three equal to the byte, on real gloo jobs."""

from __future__ import annotations

import numpy as np
import pytest

import cctviz
from cctviz.perfmodel.footprint import states_of_run
from tests.runtime.conftest import example_run

#: a small GPT whose dims do not divide by 3 (FSDP2's shards and ZeRO's
#: partition come out uneven)
SMALL = ("--n-layer", "2", "--n-head", "2", "--n-embd", "30", "--vocab-size", "101",
         "--seq-len", "16", "--batch-size", "2")  # fmt: skip
TERMS = {"params": "params", "grads": "grads", "optimizer": "optimizer"}


def _check(run, recs) -> cctviz.Ensemble:
    ens = cctviz.read(run)
    table = states_of_run(ens)
    own = {(r["rank"], term): r["model_states"][key] for r in recs for term, key in TERMS.items()}
    got = {(int(r), t): m for r, t, m in table[["rank", "term", "measured [B]"]].to_numpy()}
    assert got == own  # the runtime's measure is the script's own count
    assert (table["error [B]"] == 0).all(), table  # and the model's, to the byte
    assert (table["measured [B]"] > 0).all()
    return ens


@pytest.mark.parametrize("strategy", ["zero1", "fsdp"])
def test_three_ranks_states_equal_the_script_count_and_the_model(tmp_path, strategy):
    """Three ranks: FSDP2's last rank owns fewer rows of each odd-sized
    dimension, ZeroRedundancyOptimizer puts each parameter's states on one rank."""
    run, recs = example_run(
        tmp_path / strategy, strategy, nproc=3, steps=3, warmup=1, script_args=SMALL
    )
    ens = _check(run, recs)
    optim = ens.profiles.sort_values("rank")["state_optimizer"].to_numpy()
    assert len(set(optim.tolist())) > 1, optim  # uneven: the test sees the layout
    if strategy == "zero1":
        assert ens.meta["optimizer"] == "ZeroRedundancyOptimizer(AdamW)"
        full = ens.profiles["state_params"].to_numpy()
        assert optim.sum() < 1.01 * 2 * full[0]  # every state once across the ranks
    # the local optimizer's step is inside the wrapper's: one optimizer phase a step
    opt = [p for p in ens.tree.callpaths if p.rsplit("/", 1)[-1] == "optimizer"]
    assert sorted(opt) == ["train.py/(warm-up)/optimizer", "train.py/step/optimizer"], opt


@pytest.mark.parametrize("fixture", ["ddp_run", "fsdp_run"])
def test_two_ranks_states_equal_the_script_count_and_the_model(request, fixture):
    run, recs = request.getfixturevalue(fixture)
    ens = _check(run, recs)
    prof = ens.profiles
    assert np.all(prof["state_params"] == prof["state_grads"])  # fp32 weights and grads
