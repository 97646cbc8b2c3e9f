"""The footprint model's model states (issue 37): invariants across strategies
and the refusals. Its figures against measured runs: tests/runtime/test_model_states.py."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import cctviz
from cctviz.perfmodel.analytic import ModelSpec
from cctviz.perfmodel.footprint import OptimizerLayout, model_states, states_of_run

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
#: a transformer block's shapes, none of whose dims divides by 3 or 7
SHAPES = {"wte.weight": (101, 30), "attn.weight": (90, 30), "attn.bias": (90,),
          "mlp.weight": (121, 30), "ln.weight": (30,), "ln.bias": (30,)}  # fmt: skip


@pytest.mark.parametrize("n", [1, 2, 3, 7])
def test_sharded_states_add_up_to_the_replicated_ones(n):
    """FSDP2's and ZeRO-1's optimizer states, summed over the ranks, are DDP's
    on one rank (each row's states on exactly one rank; each scalar once per
    rank that holds rows); FSDP2's parameters are DDP's padded to n chunks."""
    spec = ModelSpec.from_shapes(SHAPES)
    ddp = model_states(spec, "ddp", n)
    for strategy in ("fsdp", "zero1"):
        s = model_states(spec, strategy, n)
        like = s["optimizer [B]"].sum() - _scalars(spec, strategy, n)
        assert like == ddp["optimizer [B]"].iloc[0] - 4 * len(SHAPES)
    fsdp = model_states(spec, "fsdp", n)
    padded = sum(-(-s[0] // n) * n * int(np.prod(s[1:])) for s in SHAPES.values()) * 4
    assert (fsdp["params [B]"] * n == padded).all()
    assert (fsdp["params [B]"] * n >= ddp["params [B]"]).all()


def _scalars(spec: ModelSpec, strategy: str, n: int) -> int:
    """Adam's step counters: one per parameter on every rank that holds rows of it."""
    if strategy == "zero1":
        return 4 * len(SHAPES)
    return 4 * sum(min(n, -(-s[0] // -(-s[0] // n))) for s in SHAPES.values())


def test_a_frozen_parameter_has_no_gradient_and_no_state():
    spec = ModelSpec.from_shapes({"w": (4, 4)})
    frozen = ModelSpec.from_dict({**spec.to_dict(), "parameters": [["", "w", [4, 4], 4, False]]})
    s = model_states(frozen, "ddp", 2, "adam")
    assert s["grads [B]"].tolist() == [0, 0] and s["optimizer [B]"].tolist() == [0, 0]
    assert s["params [B]"].tolist() == [64, 64]


def test_a_recorded_layout_and_a_named_one_agree():
    spec = ModelSpec.from_shapes(SHAPES)
    rec = OptimizerLayout.from_record({"step": 4, "exp_avg": "like", "exp_avg_sq": "like"})
    assert model_states(spec, "fsdp", 3, rec).equals(model_states(spec, "fsdp", 3, "AdamW"))
    sgd = model_states(spec, "ddp", 1, "sgd_momentum")
    assert sgd["optimizer [B]"].iloc[0] == sgd["params [B]"].iloc[0]


@pytest.mark.parametrize(
    ("kw", "says"),
    [
        ({"strategy": "zero2"}, "zero2"),
        ({"strategy": "tp"}, "'tp'"),
        ({"strategy": "ddp", "world_size": 0}, "world_size"),
        ({"strategy": "ddp", "optimizer": "lion"}, "lion"),
    ],
)
def test_what_it_cannot_model_is_refused_by_name(kw, says):
    with pytest.raises(ValueError, match=says):
        model_states(ModelSpec.from_shapes(SHAPES), **kw)


def test_a_model_without_shapes_is_refused():
    with pytest.raises(ValueError, match="parameter shapes"):
        model_states(ModelSpec(params=1000), "ddp", 2)


def test_a_run_without_states_is_refused_with_what_to_rerun():
    """A profile that is not a cctviz run (no model, no states): refused, naming
    what it lacks and how to get it."""
    ens = cctviz.read(DATA / "hatchet" / "hpctoolkit-cpi-database")
    with pytest.raises(ValueError, match=r"lacks \['model_spec'.*re-run it"):
        states_of_run(ens)
