"""The analytical models against worked examples from their sources, and against real tensors."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from cctviz.model.collectives import bus_factor
from cctviz.perfmodel.analytic import (
    INTERCONNECTS,
    Interconnect,
    ModelSpec,
    ParallelSpec,
    activation_memory,
    collective_time,
    communication,
    ddp_buckets,
    fit_alpha_beta,
    fsdp_padded_numel,
    memory,
    model_state_memory,
    module_path,
    optimizer_state_factor,
)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def small_gpt(**cfg):
    sys.path.insert(0, str(EXAMPLES))
    try:
        from gpt import GPT, GPTConfig
    finally:
        sys.path.remove(str(EXAMPLES))
    torch.manual_seed(0)
    return GPT(GPTConfig(**cfg))


# ------------------------------------------------------------------ memory
@pytest.mark.parametrize(
    "stage,gb",
    [(0, 120.0), (1, 31.4), (2, 16.6), (3, 1.9)],
)
def test_zero_paper_7_5b_example(stage, gb):
    """ZeRO (Rajbhandari et al. SC20), Figure 1: Psi = 7.5B, N_d = 64, K = 12."""
    m = model_state_memory(7_500_000_000, "adam", "mixed", zero=stage, dp=64)
    assert round(m.total / 1e9, 1) == gb


def test_zero_formulas_exactly():
    psi, nd = 7.5e9, 64
    exact = {
        0: (2 + 2 + 12) * psi,
        1: (2 + 2) * psi + 12 * psi / nd,
        2: 2 * psi + (2 + 12) * psi / nd,
        3: (2 + 2 + 12) * psi / nd,
    }
    for stage, want in exact.items():
        assert model_state_memory(int(psi), "adam", "mixed", stage, nd).total == pytest.approx(want)
    assert model_state_memory(int(psi), "adam", "mixed", "fsdp", nd).total == pytest.approx(
        exact[3]
    )


def test_optimizer_state_factors():
    assert optimizer_state_factor("adam", "fp32") == 8
    assert optimizer_state_factor("adam", "mixed") == 12  # the paper's K
    assert optimizer_state_factor("sgd_momentum", "mixed") == 8
    assert optimizer_state_factor("sgd", "mixed") == 4  # the fp32 master copy
    with pytest.raises(ValueError, match="optimizer"):
        optimizer_state_factor("lion")


GPT3 = dict(seq=2048, hidden=12288, heads=96)  # GPT-3 175B (Korthikanti et al. Table 3)
MTNLG = dict(seq=2048, hidden=20480, heads=128)  # MT-NLG 530B


def test_activation_formula_gpt3_like():
    """Korthikanti et al. 2022: per layer sbh(34 + 5as/h) bytes; for GPT-3 5as/h = 80."""
    s, h, a = GPT3["seq"], GPT3["hidden"], GPT3["heads"]
    b = 1
    per = activation_memory(s, b, h, a)
    assert per == s * b * h * (34 + 5 * a * s / h)
    assert 5 * a * s / h == 80
    assert per / 2**30 == pytest.approx(2.6719, abs=1e-4)  # 2.67 GiB per layer, b = 1


@pytest.mark.parametrize("cfg,saving", [(GPT3, 0.70), (MTNLG, 0.65)])
def test_selective_recomputation_saves_what_the_paper_says(cfg, saving):
    """Section 5: selective recomputation saves 70% of the activation memory of GPT-3
    and 65% of MT-NLG's (the 5as/h term out of 34 + 5as/h), for any t with SP."""
    for t in (1, 8):
        full = activation_memory(**cfg, micro_batch=1, tp=t, sequence_parallel=True)
        sel = activation_memory(
            **cfg, micro_batch=1, tp=t, sequence_parallel=True, recompute="selective"
        )
        assert 1 - sel / full == pytest.approx(saving, abs=0.005)


def test_activation_table_2_variants():
    s, b, h, a, t, L = 2048, 4, 6144, 64, 8, 48  # the 22B configuration of Table 3
    sbh = s * b * h
    assert activation_memory(s, b, h, a, L, tp=t) == pytest.approx(
        L * sbh * (10 + 24 / t + 5 * a * s / (h * t))
    )
    assert activation_memory(s, b, h, a, L, tp=t, sequence_parallel=True) == pytest.approx(
        L * sbh * (34 / t + 5 * a * s / (h * t))
    )
    assert activation_memory(s, b, h, a, L, tp=t, recompute="selective") == pytest.approx(
        L * sbh * (10 + 24 / t)
    )
    assert activation_memory(
        s, b, h, a, L, tp=t, sequence_parallel=True, recompute="selective"
    ) == pytest.approx(L * sbh * 34 / t)
    assert activation_memory(s, b, h, a, L, recompute="full") == L * 2 * sbh
    # t = 1: tensor-parallel forms reduce to the unparallel one
    assert activation_memory(s, b, h, a, tp=1) == activation_memory(
        s, b, h, a, tp=1, sequence_parallel=True
    )


@pytest.mark.parametrize(
    "opt_name,make",
    [
        ("adam", lambda ps: torch.optim.Adam(ps, lr=1e-3)),
        ("adamw", lambda ps: torch.optim.AdamW(ps, lr=1e-3)),
        ("sgd_momentum", lambda ps: torch.optim.SGD(ps, lr=1e-3, momentum=0.9)),
        ("sgd", lambda ps: torch.optim.SGD(ps, lr=1e-3)),
    ],
)
def test_model_states_equal_the_tensors_after_one_step(opt_name, make):
    model = small_gpt(n_layer=2, n_embd=64, vocab_size=128, block_size=16)
    opt = make(model.parameters())
    x = torch.randint(0, 128, (2, 16))
    _, loss = model(x, x)
    loss.backward()
    opt.step()

    def nbytes(ts):
        return sum(t.numel() * t.element_size() for t in ts if torch.is_tensor(t))

    params = nbytes(model.parameters())
    grads = nbytes(p.grad for p in model.parameters())
    states = nbytes(v for st in opt.state.values() for v in st.values())
    pred = memory(ModelSpec.from_module(model), optimizer=opt_name)
    assert (pred.params, pred.grads, pred.optimizer) == (params, grads, states)
    assert pred.total == params + grads + states


def test_memory_frame_has_a_total():
    df = model_state_memory(1000, "adam").frame()
    assert df.loc["total", "bytes"] == 16000 and df.loc["params", "GB"] == 4e-6


# ------------------------------------------------------------ the description
def test_from_module_reads_paths_like_the_runtime():
    model = small_gpt()
    spec = ModelSpec.from_module(model)
    assert spec.name == "GPT" and spec.params == model.num_params()
    assert spec.grad_total == 4 * model.num_params()
    per = spec.module_params()
    assert per["blocks.0.attn.c_attn"] == sum(
        p.numel() for p in model.blocks[0].attn.c_attn.parameters()
    )
    assert sum(per.values()) == spec.params
    assert spec.fsdp_units is None
    # a DDP-like wrapper's "module." and FSDP1's segments are left out
    assert (
        module_path("module.blocks.0.attn.c_attn.weight", ddp=True) == "blocks.0.attn.c_attn.weight"
    )
    assert module_path("_orig_mod.blocks.0._checkpoint_wrapped_module.ln_1") == "blocks.0.ln_1"


def test_from_module_finds_fsdp_units_duck_typed():
    class FSDPModule:  # what FSDP2's fully_shard mixes into a module's class
        pass

    root = small_gpt(n_layer=2)
    for blk in root.blocks:
        blk.__class__ = type("FSDPBlock", (FSDPModule, type(blk)), {})
    root.__class__ = type("FSDPGPT", (FSDPModule, type(root)), {})
    spec = ModelSpec.from_module(root)
    assert spec.name == "GPT"
    assert spec.fsdp_units == ("", "blocks.0", "blocks.1")


def test_to_dict_round_trip():
    spec = ModelSpec.from_module(small_gpt(n_layer=1), seq=64, micro_batch=8)
    import json

    assert ModelSpec.from_dict(json.loads(json.dumps(spec.to_dict()))) == spec


# ----------------------------------------------------------- communication
def test_ddp_all_reduce_is_the_gradient_bytes_in_buckets():
    model = small_gpt()
    spec = ModelSpec.from_module(model)
    df = communication(spec, ParallelSpec(world_size=2, strategy="ddp"))
    assert len(df) == 1
    row = df.iloc[0]
    assert (row.context, row.kind) == ("backward", "all_reduce")
    assert row.bytes == 4 * model.num_params()  # fp32 gradients
    # greedy in reverse parameter order: the first bucket closes at >= 1 MiB
    sizes = [p.numel() * 4 for p in reversed(list(model.parameters()))]
    first = next(k for k in range(len(sizes)) if sum(sizes[: k + 1]) >= 1 << 20)
    assert row.calls == 2 and sum(sizes[: first + 1]) >= 1 << 20
    assert row.bus_bytes == pytest.approx(row.bytes * 2 * (2 - 1) / 2)
    # a smaller cap gives more buckets, the same bytes
    small = communication(spec, ParallelSpec(2, "ddp", bucket_bytes=1 << 20)).iloc[0]
    assert small.bytes == row.bytes and small.calls == len(ddp_buckets(sizes, 1 << 20, 1 << 20)) > 2


def test_ddp_buckets_from_the_parameter_count_alone():
    df = communication(ModelSpec(params=100 << 20), ParallelSpec(8, "ddp"))  # 400 MiB
    assert df.calls.iloc[0] == 1 + math.ceil((400 - 1) / 25)
    assert df.bytes.iloc[0] == 400 << 20


@pytest.mark.parametrize("n", [2, 4, 8, 64])
def test_bytes_on_the_wire_2m_ddp_zero12_and_3m_zero3_fsdp(n):
    """docs/architecture.md section 10 / ZeRO section 7: DDP and ZeRO-1/2 ~2m, ZeRO-3/FSDP ~3m (x (n-1)/n)."""
    m_params = 10_000 * n  # divisible by n: no padding
    spec = ModelSpec(params=m_params)
    m = 4 * m_params
    wire = {
        s: communication(spec, ParallelSpec(n, s)).bus_bytes.sum()
        for s in ("ddp", "zero1", "zero2", "zero3", "fsdp")
    }
    for s in ("ddp", "zero1", "zero2"):
        assert wire[s] == pytest.approx(2 * m * (n - 1) / n)
    assert wire["zero3"] == pytest.approx(3 * m * (n - 1) / n)
    # FSDP's root unit is not re-gathered in backward: 2m with one unit, 3m with
    # every parameter in a non-root unit
    assert wire["fsdp"] == pytest.approx(2 * m * (n - 1) / n)
    units = ModelSpec.from_shapes({"blk.w": (n * 100, 100)})
    w = communication(units, ParallelSpec(n, "fsdp", fsdp_units=("blk",))).bus_bytes.sum()
    assert w == pytest.approx(3 * 4 * n * 100 * 100 * (n - 1) / n)


def test_fsdp_contexts_and_padding():
    spec = ModelSpec.from_shapes(
        {"emb.weight": (5, 3), "blocks.0.lin.weight": (7, 2), "blocks.0.lin.bias": (7,)},
        name="Net",
    )
    df = communication(spec, ParallelSpec(4, "fsdp", fsdp_units=("", "blocks.0")))
    got = {(r.context, r.kind): (r.calls, r.bytes) for r in df.itertuples()}
    root = 8 * 3 * 4  # 5 rows padded to 8
    blk = (8 * 2 + 8) * 4  # 7 rows padded to 8
    assert got == {
        ("forward/Net", "all_gather"): (1, root),
        ("forward/Net/blocks.0", "all_gather"): (1, blk),
        ("backward", "all_gather"): (1, blk),  # the root stays gathered
        ("backward", "reduce_scatter"): (2, root + blk),
    }
    assert fsdp_padded_numel([(3,), (2, 5)], 4).tolist() == [4, 20]
    # ZeRO-3 pads the flat buffer instead, and re-gathers everything
    z = communication(ModelSpec(params=10), ParallelSpec(4, "zero3"))
    assert z.bytes.tolist() == [48, 48, 48]


def test_tensor_parallel_four_all_reduces_per_layer_per_micro_batch():
    L, b, s, h = 24, 2, 1024, 2048
    spec = ModelSpec(params=10**9, layers=L, micro_batch=b, seq=s, hidden=h)
    df = communication(spec, ParallelSpec(world_size=8, strategy="none", tp=8, micro_batches=3))
    ar = df[df.kind == "all_reduce"]
    assert ar.calls.sum() == 4 * L * 3
    assert set(ar.context) == {"forward", "backward"}
    assert ar.bytes.sum() == 4 * L * 3 * b * s * h * 2  # fp16 activations
    assert (ar.ranks == 8).all()
    sp = communication(spec, ParallelSpec(8, "none", tp=8, micro_batches=3, sequence_parallel=True))
    assert set(sp.kind) == {"all_gather", "reduce_scatter"}
    assert sp.bus_bytes.sum() == pytest.approx(ar.bus_bytes.sum())  # same bytes on the wire


def test_pipeline_activations_at_stage_boundaries():
    spec = ModelSpec(params=10**9, layers=8, micro_batch=1, seq=512, hidden=1024)
    act = 512 * 1024 * 2
    mid = communication(spec, ParallelSpec(4, "none", pp=4, micro_batches=6, stage=1))
    assert sorted(zip(mid.context, mid.kind, mid.bytes)) == [
        ("backward", "recv", 6 * act),
        ("backward", "send", 6 * act),
        ("forward", "recv", 6 * act),
        ("forward", "send", 6 * act),
    ]
    first = communication(spec, ParallelSpec(4, "none", pp=4, micro_batches=6, stage=0))
    assert sorted(zip(first.context, first.kind)) == [("backward", "recv"), ("forward", "send")]


def test_3d_parallel_data_parallel_share():
    spec = ModelSpec(params=8 << 20, layers=4, micro_batch=1, seq=128, hidden=256)
    df = communication(spec, ParallelSpec(16, "ddp", tp=2, pp=2))
    dp = df[(df.kind == "all_reduce") & (df.ranks == 4)]
    assert dp.bytes.sum() == 4 * (8 << 20) // 4


def test_tp_needs_the_dimensions():
    with pytest.raises(ValueError, match="hidden"):
        communication(ModelSpec(params=10), ParallelSpec(2, "none", tp=2))


# -------------------------------------------------------------------- time
def test_alpha_beta_time_uses_bus_factors():
    net = Interconnect("x", alpha=5e-6, bandwidth=100e9)
    df = communication(ModelSpec(params=1 << 20), ParallelSpec(8, "zero3"))
    t = collective_time(df, net)
    want = df.calls * 5e-6 + df.bytes * bus_factor("all_gather", 8) / 100e9
    np.testing.assert_allclose(t, want)
    assert set(INTERCONNECTS) >= {"nvlink4", "ib-ndr400", "ethernet-100g", "gloo-loopback"}
    assert all(i.source for i in INTERCONNECTS.values())


@pytest.mark.parametrize("kind,n", [("all_reduce", 8), ("all_gather", 4), ("send", 2)])
def test_fit_alpha_beta_recovers_alpha_and_bandwidth(kind, n):
    rng = np.random.default_rng(0)
    alpha, bw = 12e-6, 40e9
    sizes = np.geomspace(1e3, 1e9, 25)
    times = alpha + bus_factor(kind, n) * sizes / bw
    net = fit_alpha_beta(sizes, times, kind, n)
    assert net.alpha == pytest.approx(alpha, rel=1e-6)
    assert net.bandwidth == pytest.approx(bw, rel=1e-6)
    noisy = fit_alpha_beta(sizes, times * rng.normal(1, 0.01, len(sizes)), kind, n)
    assert noisy.bandwidth == pytest.approx(bw, rel=0.05)
    # round trip through collective_time
    df = pd.DataFrame({"calls": [1], "bus_bytes": [bus_factor(kind, n) * 1e8]})
    assert collective_time(df, net).iloc[0] == pytest.approx(alpha + bus_factor(kind, n) * 1e8 / bw)


def test_fit_alpha_beta_is_non_negative_and_needs_two_sizes():
    with pytest.raises(ValueError, match="2 distinct sizes"):
        fit_alpha_beta([1e6, 1e6, 1e6], [1e-3, 1.1e-3, 0.9e-3])
    # times that would give a negative alpha: alpha is clamped to 0
    net = fit_alpha_beta([1e6, 2e6, 3e6], [0.9e-3, 2e-3, 3.1e-3], "send", 2)
    assert net.alpha == 0 and net.bandwidth > 0


def test_parallel_spec_from_runtime_metadata():
    meta = {"world_size": 4, "strategy": "DDP", "params": 10}
    assert ParallelSpec.from_meta(meta) == ParallelSpec(4, "ddp")
    assert ParallelSpec.from_meta({"world_size": 2, "strategy": "FSDP"}).strategy == "fsdp1"
    assert ParallelSpec.from_meta({}, micro_batches=2) == ParallelSpec(1, "none", micro_batches=2)
