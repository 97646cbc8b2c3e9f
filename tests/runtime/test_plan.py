"""``cctviz.perfmodel.plan(run)``: the spec the runtime recorded of a real gloo
job (issue 37): what it infers equals what the job was run with."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import cctviz
from cctviz.perfmodel import plan
from tests.runtime.conftest import PLAN_ROUNDS, example_run

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"


@pytest.mark.parametrize(
    ("fixture", "strategy", "warmup"), [("ddp_run", "ddp", 2), ("fsdp_run", "fsdp", 1)]
)
def test_plan_infers_what_the_job_was_run_with(request, fixture, strategy, warmup):
    run, recs = request.getfixturevalue(fixture)
    p = plan(run)
    s = p.spec
    # examples/train.py's defaults: --batch-size 8 --seq-len 64, AdamW, 2 ranks
    assert (s["batch"], s["seq"], s["world_size"]) == (8, 64, 2)
    assert (s["strategy"], s["optimizer"]) == (strategy, "AdamW")
    assert s["params"] == recs[0]["params"]
    assert s["step_time [s]"] > 0 and s["steps"] == len(recs[0]["step_ns"]) - warmup
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


def test_activations_at_other_batch_and_seq_within_5_percent(tmp_path):
    """From one run (batch 4, seq 48; attention written out, so its seq x seq
    probabilities are saved), the bytes saved for backward at twice the batch
    and at twice the sequence, each against that configuration run and
    measured (issue 37: within 5%)."""
    model = ("--attention", "math", "--n-layer", "2", "--n-head", "8")

    def measured_plan(b: int, s: int):
        run, _ = example_run(
            tmp_path / f"b{b}-s{s}", "none", nproc=1, steps=2, warmup=1,
            extra=("--act-bytes",),
            script_args=(*model, "--batch-size", str(b), "--seq-len", str(s)),
        )  # fmt: skip
        return plan(run)

    base = measured_plan(4, 48)
    calibrated = base.activations()
    # seq x seq: a share that a model linear in the tokens would miss by over 5% at seq x 2
    assert calibrated["seq² [B]"].iloc[-1] > 0.1 * calibrated["measured [B]"].iloc[-1]
    for b, s in [(8, 48), (4, 96)]:
        want = measured_plan(b, s).activations()["measured [B]"].iloc[-1]
        got = base.activations(batch=b, seq=s)["predicted [B]"].iloc[-1]
        assert abs(got - want) <= 0.05 * want, (b, s, got, want)


def test_activations_of_a_run_without_act_bytes_are_refused(ddp_run):
    run, _ = ddp_run
    with pytest.raises(ValueError, match="--act-bytes"):
        plan(run).activations(batch=16)


#: what each configuration of tests/runtime/conftest.py's PLAN_CONFIGS asks of
#: the DDP run's plan (the FSDP2 step's collectives on the named gloo figures,
#: scaled to what the DDP run's took: a DDP run's own collectives, all alike in
#: size per call, do not pin a latency and a bandwidth apart)
ASKS = {
    "batch2": {"batch": 16},
    "seq2": {"seq": 128},
    "accum2": {"grad_accum": 2},
    "fsdp": {"strategy": "fsdp", "interconnect": "gloo-loopback"},
}


def test_predictions_against_the_configurations_run_and_measured(plan_runs):
    """Issue 37. Each configuration predicted from the DDP run just before it
    and compared with that configuration run and measured, in every round:

    - activations within 5% of its measured act_bytes (one micro-batch), model
      states to the byte (FSDP2: the local shards), bytes sent per step equal
      to its measured comm_bytes; the peak memory (states, activations, the
      strategy's buffers and the DDP run's unexplained rest, scaled with the
      tokens) against the measured ``mem_peak``, the smallest over the rounds:
      within 3%, FSDP2 within 8% (where it gathers its units decides);
    - step time (batch x2, sequence x2, 2 micro-batches; the runtime's step
      clock): the medians over the rounds within 10%, beyond half the spread
      of the same DDP run on this machine (a shared 2-core VM, where one run's
      speed moves by up to 50% within seconds; benchmarks/plan.py gives the
      figures over many rounds). FSDP2's step is not asserted: the model
      lacks its CPU overheads (docs/known-issues.md).

    One test, so that the runs are made once (xdist spreads tests over
    workers, each with its own session fixtures)."""
    bases = {n: [plan(plan_runs / f"ddp.{n}-{r}") for r in range(PLAN_ROUNDS)] for n in ASKS}
    steps = [b.spec["step_time [s]"] for runs in bases.values() for b in runs]
    noise = (max(steps) - min(steps)) / float(np.median(steps))
    for name, ask in ASKS.items():
        pairs = [
            (b.predict(**ask), plan(plan_runs / f"{name}-{r}").measured())
            for r, b in enumerate(bases[name])
        ]
        for predicted, measured in pairs:
            want = measured["activations [B]"]
            assert abs(predicted["activations [B]"] - want) <= 0.05 * want, name
            for term in ("model_states [B]", "comm [B]"):
                assert predicted[term] == measured[term], (name, term)
        # the peak, the smallest over the rounds: torch's profiler misses a free on a
        # thread it does not follow, and a rank's measured peak is then higher by a
        # gradient's size (DDP: about one rank-run in three here); FSDP2's peak holds
        # one to four units unsharded, as its gathers fall (docs/known-issues.md)
        got = min(p["memory [B]"] for p, _ in pairs)
        want = min(plan(plan_runs / f"{name}-{r}").memory().iloc[-1]["measured [B]"]
                   for r in range(PLAN_ROUNDS))  # fmt: skip
        assert abs(got - want) <= (0.08 if name == "fsdp" else 0.03) * want, (name, got, want)
        if name == "fsdp":
            continue
        got = np.median([p["step_time [s]"] for p, _ in pairs])
        want = np.median([m["step_time [s]"] for _, m in pairs])
        assert abs(got - want) <= (0.10 + noise / 2) * want, (name, got, want, noise)

    # of the DDP runs, the one whose peak is the smallest: one whose every rank missed a
    # free is a gradient's size higher throughout (its unexplained rest with it)
    peaks = [b.memory().iloc[-1]["measured [B]"] for b in bases["fsdp"]]
    r = int(np.argmin(peaks))
    base = bases["fsdp"][r]

    # the peak by term: the unexplained rest is a row of its own, the peak their sum
    table = base.memory().set_index("term")
    terms = table["measured [B]"].fillna(table["predicted [B]"]).iloc[:-1]  # buffers: modelled
    assert table.loc["peak", "measured [B]"] == pytest.approx(terms.sum())
    assert 0 < table.loc["unexplained", "measured [B]"] < 0.15 * table.loc["peak", "measured [B]"]
    predicted = base.memory(strategy="fsdp").set_index("term")["predicted [B]"]
    assert predicted["peak"] == pytest.approx(predicted.iloc[:-1].sum())
    assert predicted["buffers"] > 0 and predicted["grads"] == 0

    # per context: what each holds at its end, beside its measured peak; along the
    # forward, the states and the activations saved so far explain all but what the
    # context holds for itself (its outputs: at most 1.1 MB of 16-35 MB here)
    by_context = base.memory_by_context().set_index("context")
    forward = by_context[by_context["phase"] == "forward"]
    assert len(forward) > 10
    assert (forward["beyond [B]"].abs() <= 0.1 * forward["measured [B]"]).all()
    assert forward["activations [B]"].max() == pytest.approx(
        base.measured()["activations [B]"], rel=1e-9
    )
    # and on the tree, per rank (DDP: every rank the same)
    annotated = cctviz.perfmodel.annotate(plan_runs / f"ddp.fsdp-{r}").ensemble
    rows = [annotated.tree.callpaths.tolist().index(c) for c in forward.index]
    got = annotated.values("mem_pred")[rows]
    assert np.allclose(got, forward["predicted [B]"].to_numpy()[:, None])
    assert annotated.tree.rule("mem_pred") == "max" and annotated.tree.unit("mem_pred") == "B"

    # the plan's table: a limit between FSDP2's predicted memory and DDP's
    p = base
    m, fsdp = p.measured(), p.predict(**ASKS["fsdp"])
    limit = (fsdp["memory [B]"] + m["memory [B]"]) / 2
    table = p.table(["ddp", "fsdp", "zero3"], memory_limit=f"{limit / 2**20} MiB",
                    interconnect="gloo-loopback")  # fmt: skip
    rows = table.set_index("strategy")
    # ranked by predicted step time, the refused last
    assert set(table["strategy"].iloc[:2]) == {"ddp", "fsdp"}
    assert table["strategy"].iloc[-1] == "zero3"
    assert table["step_time [s]"].iloc[:2].is_monotonic_increasing
    assert rows.loc["fsdp", "fits"] and not rows.loc["ddp", "fits"]
    assert "not modelled" in rows.loc["zero3", "refused"]
    assert np.isnan(rows.loc["zero3", "step_time [s]"])
    # the run's own configuration is the default, its micro-batches included
    accum = plan(plan_runs / "accum2-0")
    assert accum.spec["grad_accum"] == 2
    own, measured = accum.predict(), accum.measured()
    assert own["step_time [s]"] == pytest.approx(measured["step_time [s]"])
    assert own["activations [B]"] == pytest.approx(measured["activations [B]"])


def test_bad_asks_are_refused_by_name(ddp_run):
    run, _ = ddp_run  # recorded without --act-bytes
    p = plan(run)
    for strategy in ("zero3", "tp", "fsdp1"):
        with pytest.raises(ValueError, match=rf"strategy '{strategy}' cannot be predicted"):
            p.predict(strategy=strategy)
    for bad in ({"batch": 0}, {"batch": True}, {"grad_accum": 1.5}, {"world_size": "2"}):
        with pytest.raises(ValueError, match="must be a positive integer"):
            p.predict(**bad)
    with pytest.raises(ValueError, match="batch must be a positive integer"):
        p.table(["ddp", "fsdp"], batch=0)  # what every row shares: refused once
    refused = p.table(["zero3", "tp"])
    assert refused["refused"].str.contains("cannot be predicted").all()
    assert refused["step_time [s]"].isna().all()
    with pytest.raises(ValueError, match="'none' runs on one rank"):
        p.predict(strategy="none")
    with pytest.raises(ValueError, match="interconnect 'infiniband' is not one of"):
        p.predict(strategy="fsdp", interconnect="infiniband")
    for limit in ("16 s", "16", -1, True, "16 Gb"):
        with pytest.raises(ValueError, match="memory_limit"):
            p.table(["ddp"], memory_limit=limit)
    # no activations measured: no memory, so no limit to hold it to
    assert np.isnan(p.predict()["memory [B]"])
    with pytest.raises(ValueError, match="--act-bytes"):
        p.table(["ddp"], memory_limit="1 GiB")
    with pytest.raises(ValueError, match=r"no act_bytes or mem_peak.*--act-bytes --mem-peak"):
        p.memory()
