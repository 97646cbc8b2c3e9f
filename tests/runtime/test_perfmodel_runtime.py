"""Predicted communication (cctviz.perfmodel.analytic) against real ``cctviz run``s of
examples/train.py on gloo CPU processes: equal bytes and calls per step, per context."""

from __future__ import annotations

import sys
import warnings

import pytest

import cctviz
from cctviz.perfmodel.analytic import ModelSpec, ParallelSpec, communication

from .conftest import EXAMPLE, example_run


def example_gpt():
    """The GPT examples/train.py builds with its default arguments (same seed, config)."""
    sys.path.insert(0, str(EXAMPLE.parent))
    try:
        import torch
        from gpt import GPT, GPTConfig
    finally:
        sys.path.remove(str(EXAMPLE.parent))
    torch.manual_seed(0)
    return GPT(GPTConfig(vocab_size=512, block_size=64, n_layer=4, n_head=4, n_embd=128))


def measured_per_step(tree) -> dict[tuple[str, str], tuple[float, float]]:
    """``{(context, kind): (calls, bytes)}`` per profiled step, the context being the
    path below ``step`` without the collective's leaf."""
    f, m = tree.frame, tree.metrics
    steps = tree.meta["profile"]["steps"]
    out: dict[tuple[str, str], tuple[float, float]] = {}
    for i in f.index[f["kind"] == "comm"]:
        path = tree.path(i)
        if path[1] != "step" or f.loc[i, "name"] == "wait":
            continue
        key = ("/".join(path[2:-1]), str(f.loc[i, "name"]))
        c, b = out.get(key, (0.0, 0.0))
        out[key] = (c + m.loc[i, "calls"] / steps, b + m.loc[i, "comm_bytes"] / steps)
    return out


def predicted(df) -> dict[tuple[str, str], tuple[float, float]]:
    g = df.groupby(["context", "kind"])[["calls", "bytes"]].sum()
    return {k: (float(r.calls), float(r.bytes)) for k, r in g.iterrows()}


def read(out):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cctviz.read(out)


FSDP_UNITS = ("",) + tuple(f"blocks.{i}" for i in range(4))  # as wrap_model shards


@pytest.fixture(scope="module")
def fsdp3_run(tmp_path_factory):
    """3 ranks: the GPT's dims are multiples of 4, so only an odd world size pads."""
    return example_run(
        tmp_path_factory.mktemp("fsdp3") / "fsdp3-run", "fsdp", nproc=3, steps=3, warmup=1
    )


def test_ddp_predicted_all_reduce_equals_measured(ddp_run):
    out, timings = ddp_run
    ens = read(out)
    spec = ModelSpec.from_module(example_gpt())
    assert spec.params == ens.meta.get("params", timings[0]["params"])
    for r in range(len(timings)):
        tree = ens.profile(r)
        par = ParallelSpec(world_size=tree.meta["world_size"], strategy="ddp")
        assert measured_per_step(tree) == predicted(communication(spec, par))
        assert predicted(communication(spec, par)) == {
            ("backward", "all_reduce"): (2.0, float(timings[r]["grad_bytes"]))
        }


@pytest.mark.parametrize("fixture", ["fsdp_run", "fsdp3_run", "fsdp1_run"])
def test_fsdp_predicted_gathers_and_scatters_equal_measured(fixture, request):
    out, timings = request.getfixturevalue(fixture)
    ens = read(out)
    spec = ModelSpec.from_module(example_gpt())
    strategy = "fsdp1" if fixture == "fsdp1_run" else "fsdp"
    for r in range(len(timings)):
        tree = ens.profile(r)
        n = tree.meta["world_size"]
        df = communication(spec, ParallelSpec(n, strategy, fsdp_units=FSDP_UNITS))
        assert measured_per_step(tree) == predicted(df)
        # and the unit sizes train.py reads from the sharded parameters
        fwd = df[df.context.str.startswith("forward")]
        assert sorted(fwd.bytes) == sorted(u["unsharded_bytes"] for u in timings[r]["shard_units"])
