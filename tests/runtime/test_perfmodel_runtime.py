"""Predicted communication (cctviz.perfmodel.analytic) against real ``cctviz run``s of
examples/train.py on gloo CPU processes: equal bytes and calls per step, per context."""

from __future__ import annotations

import sys
import warnings

import pytest

import cctviz
from cctviz.perfmodel.analytic import ModelSpec, ParallelSpec, communication
from cctviz.perfmodel.compare import wait_transfer
from tests.table_units import assert_units

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


@pytest.fixture(scope="module")
def ddp4_run(tmp_path_factory):
    return example_run(
        tmp_path_factory.mktemp("ddp4") / "ddp4-run", "ddp", nproc=4, steps=3, warmup=1
    )


@pytest.fixture(scope="module")
def fsdp4_run(tmp_path_factory):
    return example_run(
        tmp_path_factory.mktemp("fsdp4") / "fsdp4-run", "fsdp", nproc=4, steps=3, warmup=1
    )


@pytest.mark.parametrize("fixture", ["ddp_run", "fsdp_run", "ddp4_run", "fsdp4_run"])
def test_annotate_a_run_folder_with_no_extra_input(fixture, request):
    """annotate(folder): predicted bytes per step equal the measured ones for every
    collective context of the profiled steps, as a table and as metrics on the tree."""
    import numpy as np

    from cctviz.perfmodel.compare import BYTES_PRED, annotate

    out, _ = request.getfixturevalue(fixture)
    a = annotate(out)
    t = a.table
    assert len(t) and (t["bytes_error"] == 0).all()
    assert (t["calls_mean"] == t["calls_pred"]).all()
    # units in the column names, times in seconds (as wait_transfer's table); the
    # measured values are means over the ranks (the rule of tables: tests/table_units.py)
    assert {"bytes_mean [B]", "bytes_pred [B]", "time_mean [s]", "time_pred [s]"} <= set(t.columns)
    assert_units(t, "annotate().table")
    assert_units(a.memory, "annotate().memory")
    assert_units(wait_transfer(cctviz.read(out)).table, "wait_transfer(run).table")
    kinds = set(t["kind"])
    ddp = fixture.startswith("ddp")
    assert kinds == ({"all_reduce"} if ddp else {"all_gather", "reduce_scatter"})
    ens = a.ensemble
    tree = ens.tree
    on_steps = [i for i in range(len(tree)) if tree.path(i)[1:2] == ("step",)]
    comm = [i for i in on_steps if tree.nodes["kind"].iat[i] == "comm"]
    assert comm and np.array_equal(ens.values("comm_bytes")[comm], ens.values(BYTES_PRED)[comm])
    assert tree.unit(BYTES_PRED) == "B" and tree.unit("comm_time_pred") == tree.unit("comm_time")
    # the bivariate view of measured against predicted builds on it
    view = cctviz.CCTView(ens, color=("comm_bytes (inc)", "comm_bytes_pred (inc)"))
    assert view._data["n"] > 0
    # memory of the model states per rank: fp32 parameters and gradients, Adam's two states
    params = ens.meta["params"]
    shard = 1 if ddp else ens.meta["world_size"]
    mem = a.memory["bytes"]
    assert mem["params"] == mem["grads"] == pytest.approx(4 * params / shard, rel=1e-3)
    # and on the tree: the step context's predicted peak, in bytes, a maximum
    step = next(i for i in range(len(tree)) if tree.path(i)[1:] == ("step",))
    assert (ens.values("mem_pred")[step] == mem["total"]).all() and tree.unit("mem_pred") == "B"
    assert tree.rule("mem_pred") == "max"
