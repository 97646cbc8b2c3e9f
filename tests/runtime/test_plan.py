"""``cctviz.perfmodel.plan(run)``: the spec the runtime recorded of a real gloo
job (issue 37): what it infers equals what the job was run with."""

from __future__ import annotations

from pathlib import Path

import pytest

import cctviz
from cctviz.perfmodel import plan

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"


@pytest.mark.parametrize(("fixture", "strategy"), [("ddp_run", "ddp"), ("fsdp_run", "fsdp")])
def test_plan_infers_what_the_job_was_run_with(request, fixture, strategy):
    run, recs = request.getfixturevalue(fixture)
    p = plan(run)
    s = p.spec
    # examples/train.py's defaults: --batch-size 8 --seq-len 64, AdamW, 2 ranks
    assert (s["batch"], s["seq"], s["world_size"]) == (8, 64, 2)
    assert (s["strategy"], s["optimizer"]) == (strategy, "AdamW")
    assert s["params"] == recs[0]["params"]
    assert s["step_time [s]"] > 0
    m = p.modules.set_index("module")
    assert (m["params"].sum(), m.index[0]) == (p.model.params, "")  # the root first
    # every module's owned parameters, and the model's output: logits and the loss
    assert m.loc["blocks.0.attn.c_attn", "params"] == 128 * 3 * 128 + 3 * 128
    assert m.loc["", "output_bytes [B]"] == 8 * 64 * 512 * 4 + 4
    assert m.loc["blocks.0.attn", "inputs"] == "[8x64x128] float32"
    assert all("/step/" in c for c in p.modules["context"])  # a measured step's
    assert (p.states["error [B]"] == 0).all()


def test_a_profile_without_the_spec_is_refused_with_what_to_rerun():
    ens = cctviz.read(DATA / "hatchet" / "hpctoolkit-cpi-database")
    with pytest.raises(ValueError, match=r"no model_spec, module_shapes.*re-run it with"):
        plan(ens)
    with pytest.raises(TypeError, match="run folder or an Ensemble"):
        plan(42)
