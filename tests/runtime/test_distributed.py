"""Acceptance tests of the runtime on 2-4 gloo processes (CPU), against figures taken outside it."""

from __future__ import annotations

import shutil
import warnings

import numpy as np
import pytest

import cctviz
from cctviz.readers.cctviz_run import run_to_dataset
from cctviz.runtime import bandwidth, bus_factor
from tests.dataset.test_dataset import assert_same_ensemble

from .conftest import CCTVIZ, SCRIPTS, run_job


def comm_rows(tree, kind_name: str, under: tuple[str, ...]):
    """Metrics of the comm nodes named ``kind_name`` whose path starts with ``under``."""
    f = tree.frame
    ids = [
        i
        for i in f.index[(f["kind"] == "comm") & (f["name"] == kind_name)]
        if tree.path(i)[1 : 1 + len(under)] == under
    ]
    return f.loc[ids]


def read_quiet(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cctviz.read(path)


# ------------------------------------------------------------------- DDP
def test_ddp_allreduce_bytes_equal_gradient_bytes_every_rank(ddp_run):
    out, timings = ddp_run
    ens = cctviz.read(out)
    assert list(ens.profiles["rank"]) == [0, 1]
    assert ens.profiles["ok"].all() and (ens.profiles["strategy"] == "DDP").all()
    for r, rec in enumerate(timings):
        tree = ens.profile(r)
        steps = tree.meta["profile"]["steps"]
        assert steps == 6  # 8 steps, 2 of them warm-up
        rows = comm_rows(tree, "all_reduce", ("step", "backward"))
        assert len(rows) == 1, "the bucket all-reduces are one leaf under step/backward"
        assert rows["comm_bytes"].iloc[0] == steps * rec["grad_bytes"]  # exact
        # no all-reduce anywhere else in the steps
        f = tree.frame
        step_ar = [i for i in f.index[f["name"] == "all_reduce"] if tree.path(i)[1] == "step"]
        assert step_ar == list(rows.index)
        # DDP's initial parameter broadcast happens before the first step
        bc = comm_rows(tree, "broadcast", ("(outside steps)",))
        assert bc["comm_bytes"].sum() == rec["grad_bytes"]


def test_ddp_bandwidths_follow_nccl_tests_formulas(ddp_run):
    out, _ = ddp_run
    tree = cctviz.read(out).profile(0)
    rows = comm_rows(tree, "all_reduce", ("step", "backward"))
    m = tree.metrics.loc[rows.index]
    n = 2
    assert m["bus_bytes"].iloc[0] == pytest.approx(m["comm_bytes"].iloc[0] * 2 * (n - 1) / n)
    bw = bandwidth(m, inclusive=False, units=tree.units)
    assert tree.units["comm_time"] == "ns"
    assert (m["comm_time"] > 0).all()
    algbw = m["comm_bytes"] / m["comm_time"]  # bytes per ns = GB/s
    np.testing.assert_allclose(bw["algbw"], algbw)
    np.testing.assert_allclose(bw["busbw"], algbw * bus_factor("all_reduce", n))


def test_step_time_within_5_percent_of_outside_measurement(ddp_run):
    out, timings = ddp_run
    ens = cctviz.read(out)
    for r, rec in enumerate(timings):
        tree = ens.profile(r)
        step = tree.frame.index[tree.frame["name"] == "step"][0]
        inside = tree.metrics.loc[step, "time (inc)"]
        outside = sum(rec["step_ns"][2:])  # the same steps: warm-up left out on both sides
        assert inside == pytest.approx(outside, rel=0.05)
        assert tree.metrics.loc[step, "calls"] == 6
        # per-step times recorded by the profiler cover the same steps
        assert sum(tree.meta["profile"]["step_ns"]) == pytest.approx(inside, rel=1e-9)


def test_ddp_tree_has_phases_and_module_paths(ddp_run):
    out, timings = ddp_run
    tree = cctviz.read(out).profile(1)
    paths = {tree.path(i)[1:] for i in range(len(tree))}
    for phase in ("data", "forward", "backward", "optimizer"):
        assert ("step", phase) in paths
    assert ("step", "forward", "GPT", "blocks.3", "attn", "c_attn") in paths
    assert ("step", "forward", "GPT", "lm_head") in paths
    assert tree.meta["params"] == timings[1]["params"]
    fwd = [i for i in range(len(tree)) if tree.path(i)[1:] == ("step", "forward")][0]
    gpt = [i for i in range(len(tree)) if tree.path(i)[1:] == ("step", "forward", "GPT")][0]
    inc = tree.metrics["time (inc)"]
    assert 0 < inc[gpt] < inc[fwd]  # the loss after the model's forward is forward time too


def test_ddp_run_metadata(ddp_run):
    out, timings = ddp_run
    ens = cctviz.read(out)
    meta = ens.meta
    assert meta["world_size"] == 2 and meta["backend"] == "gloo" and meta["strategy"] == "DDP"
    assert meta["params"] == timings[0]["params"]
    assert meta["torch_version"].startswith("2.")
    assert "train.py" in meta["command"] and meta["command"].startswith("cctviz run")


# ------------------------------------------------------------------- FSDP
@pytest.mark.parametrize("fixture", ["fsdp_run", "fsdp1_run"])
def test_fsdp_gather_and_scatter_bytes_match_shards(fixture, request):
    out, timings = request.getfixturevalue(fixture)
    ens = cctviz.read(out)
    assert set(ens.profiles["strategy"]) == {"FSDP2" if fixture == "fsdp_run" else "FSDP"}
    for r, rec in enumerate(timings):
        tree = ens.profile(r)
        steps = tree.meta["profile"]["steps"]
        units = rec["shard_units"]
        full = sum(u["unsharded_bytes"] for u in units)
        regathered = sum(u["unsharded_bytes"] for u in units if not u["root"])
        ag = comm_rows(tree, "all_gather", ("step",))
        rs = comm_rows(tree, "reduce_scatter", ("step",))
        assert ag["comm_bytes"].sum() == steps * (full + regathered)
        assert rs["comm_bytes"].sum() == steps * full
        # forward gathers every unit once, under the module that owns it
        fwd = comm_rows(tree, "all_gather", ("step", "forward"))
        assert fwd["comm_bytes"].sum() == steps * full
        blocks = {tree.path(i)[-2] for i in fwd.index}
        assert {"blocks.0", "blocks.3", "GPT"} <= blocks
        assert set(tree.path(i)[2] for i in rs.index) == {"backward"}
        n = rec["world_size"]
        assert rs["bus_bytes"].sum() == pytest.approx(rs["comm_bytes"].sum() * (n - 1) / n)


# ------------------------------------------------------------ collectives
N, M, K = 1000, 300, 50  # as in scripts/collectives.py


def test_each_collective_once_per_call_in_its_context(collectives_run):
    ens = cctviz.read(collectives_run)
    world = 4
    assert len(ens.profiles) == world and ens.profiles["ok"].all()
    for r in range(world):
        tree = ens.profile(r)
        steps = tree.meta["profile"]["steps"]
        assert steps == 3
        f = tree.frame
        comm = f[f["kind"] == "comm"]
        got = {
            tree.path(i)[1:]: (int(comm.loc[i, "calls"]), int(comm.loc[i, "comm_bytes"]))
            for i in comm.index
        }
        want = {
            ("step", "forward", "Net", "reducer", "all_reduce"): (steps, steps * N * 4),
            ("step", "gather", "all_gather"): (steps, steps * world * N * 4),
            ("step", "gather", "reduce_scatter"): (steps, steps * world * N * 4),
            ("step", "sync", "broadcast"): (steps, steps * M * 8),
            ("step", "sync", "barrier"): (steps, 0),
            ("step", "p2p", "send" if r % 2 == 0 else "recv"): (steps, steps * K * 8),
            ("step", "async", "all_reduce"): (steps, steps * N * 4),
            ("step", "later", "wait"): (steps, 0),
        }
        if r < 2:
            want[("step", "pair", "all_reduce (2 ranks)")] = (steps, steps * N * 4)
        assert got == want
        # bus bytes: nccl-tests factors with the group's size
        bus = {
            tree.path(i)[-1]: comm.loc[i, "bus_bytes"] / max(comm.loc[i, "comm_bytes"], 1)
            for i in comm.index
        }
        assert bus["all_gather"] == pytest.approx(3 / 4)
        assert bus["reduce_scatter"] == pytest.approx(3 / 4)
        assert bus["broadcast"] == 1.0
        assert bus["all_reduce"] == pytest.approx(2 * 3 / 4)
        if r < 2:
            assert bus["all_reduce (2 ranks)"] == pytest.approx(1.0)
        # the async all-reduce's comm_time spans issue -> wait, longer than the issue itself
        a = [i for i in comm.index if tree.path(i)[1:] == ("step", "async", "all_reduce")][0]
        assert comm.loc[a, "comm_time"] >= comm.loc[a, "time"] > 0


# ------------------------------------------------------------------ faults
def faulty_run(out, how: str, *more: str):
    """scripts/faulty.py under cctviz run, rank 1 failing at step 3 in the way ``how``."""
    cmd = [*CCTVIZ, "run", "--standalone", "--nproc-per-node", "2", "--out", str(out), *more]
    cmd += [str(SCRIPTS / "faulty.py"), "--how", how, "--fail-rank", "1", "--fail-step", "3"]
    return run_job(cmd, check=False)


def test_killed_rank_is_flagged_and_the_run_still_loads(tmp_path):
    out = tmp_path / "killed"
    p = faulty_run(out, "kill", "--dataset", str(tmp_path / "killed.dataset"))
    assert p.returncode != 0  # the job failed, as it should
    with pytest.warns(UserWarning, match="ranks not complete"):
        ens = cctviz.read(out)
    prof = ens.profiles.set_index("rank")
    assert prof.loc[1, "status"] == "missing" and not prof.loc[1, "ok"]
    # --dataset: the run converted when it ended; a rank at a time, the same; the dead
    # rank has no rows there either
    with pytest.warns(UserWarning, match="ranks not complete"):
        folder = run_to_dataset(out, tmp_path / "ds", chunk_ranks=1)
    written = ens.to_dataset(tmp_path / "written")  # and the round trip of the ensemble
    for where in (tmp_path / "killed.dataset", folder, written):
        ds = cctviz.open_dataset(where)
        assert ds.live.tolist() == ens.live.tolist() == [True, False]
        assert_same_ensemble(ds.to_ensemble(), ens)
    assert not prof.loc[0, "ok"]  # rank 0 lost its peer: exception or SIGTERM, but it wrote
    assert prof.loc[0, "status"].startswith(("exception", "signal SIGTERM"))
    assert ens.meta["flagged_ranks"] == [0, 1]
    assert (ens.exclusive_rows["profile"] == 1).sum() == 0  # no data for the dead rank
    t0 = ens.profile(0)
    assert t0.meta["profile"]["steps"] >= 3  # what rank 0 recorded before the failure is there
    # the dead rank was not measured: it does not drag min to 0 nor the imbalance up
    assert ens.live.tolist() == [True, False]
    st = ens.stats("time (inc)")
    step = int(np.flatnonzero(ens.tree.names == "step")[0])
    mine = t0.metrics["time (inc)"].to_numpy()[list(t0.names).index("step")]
    assert mine > 0 and st.loc[step, "n"] == 1
    assert st.loc[step, "min"] == pytest.approx(mine)
    assert st.loc[step, "imbalance"] == pytest.approx(1.0)
    assert ens.values("time (inc)")[step].min() == 0  # counting the dead rank as 0: wrong
    assert ens.tree.metrics["time (inc)"].iloc[step] == pytest.approx(mine)  # mean of live ranks
    view = cctviz.CCTView(ens)
    sp = view._data["spread"]
    rows = np.frombuffer(view._data["id"], dtype="<i4")
    k = int(np.flatnonzero(rows == step)[0])
    spread_min = np.frombuffer(sp["min"], dtype="<f4")[k]
    assert spread_min == pytest.approx(mine, rel=1e-6)


@pytest.mark.parametrize(
    "how,status",
    [("term", "signal SIGTERM"), ("raise", "exception: RuntimeError: injected failure")],
)
def test_rank_that_fails_still_writes(tmp_path, how, status):
    out = tmp_path / how
    faulty_run(out, how)
    ens = read_quiet(out)
    prof = ens.profiles.set_index("rank")
    assert prof.loc[1, "status"] == status
    assert ens.profile(1).meta["profile"]["steps"] == 3  # steps 0-2 finished before the failure


def test_truncated_rank_file_is_flagged(ddp_run, tmp_path):
    out, _ = ddp_run
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    f = copy / "rank-00001.cctviz"
    f.write_bytes(f.read_bytes()[: f.stat().st_size // 2])
    with pytest.warns(UserWarning, match="1 \\(unreadable\\)"):
        ens = cctviz.read(copy)
    prof = ens.profiles.set_index("rank")
    assert prof.loc[1, "status"] == "unreadable" and "ZIP" in prof.loc[1, "problem"]
    assert prof.loc[0, "ok"] and not prof.loc[1, "ok"]
    assert ens.n_profiles == 2 and (ens.exclusive_rows["profile"] == 1).sum() == 0


def test_runs_by_ranks_ensemble(ddp_run, fsdp_run):
    ens = cctviz.read_ensemble([ddp_run[0], fsdp_run[0]])
    assert ens.n_profiles == 4
    assert list(ens.profiles["rank"]) == [0, 1, 0, 1]
    assert ens.profiles["strategy"].tolist() == ["DDP", "DDP", "FSDP2", "FSDP2"]
    assert ens.profiles["run"].tolist() == ["ddp-run"] * 2 + ["fsdp-run"] * 2


def test_runtime_and_kineto_profiles_compose_in_one_unit(ddp_run):
    """The runtime records ns, Kineto us: together they are converted to one unit,
    and bandwidths come out the same in GB/s."""
    from tests.conftest import DATA

    trace = DATA / "kineto" / "hta_nccl_parser_config_nccl_data.json.gz"
    kin = cctviz.read(trace)
    assert kin.units["comm_time"] == "us"
    ens = cctviz.read_ensemble([ddp_run[0], trace])
    assert ens.tree.units["comm_time"] == "ns" and ens.tree.units["time"] == "ns"
    k = ens.n_profiles - 1  # the trace's profile
    assert ens.profiles["run"].nunique() == 2  # the DDP ranks are one run, the trace another
    back = ens.profile(k)
    total_us = kin.metrics["comm_time (inc)"].to_numpy()[kin.roots].sum()
    total_ns = back.metrics["comm_time (inc)"].to_numpy()[back.roots].sum()
    assert total_us > 0 and total_ns == pytest.approx(total_us * 1000)
    bw_us = bandwidth(kin)["algbw"].to_numpy()[kin.roots]
    bw_ns = bandwidth(back)["algbw"].to_numpy()[back.roots]
    np.testing.assert_allclose(np.sort(bw_ns), np.sort(bw_us), rtol=1e-12)


# ------------------------------------------------------------------- Sankey
def test_sankey_groups_runtime_profiles_by_module_path(fsdp_run, ddp_run):
    """The runtime's own output in the ensemble Sankey: call sites grouped by
    nn.Module path (two segments), FSDP2's collectives counted in the module
    that issued them, and DDP against FSDP2 in diff mode."""
    from cctviz.views.sankey import SankeyView

    ens = read_quiet(fsdp_run[0])
    view = SankeyView(ens)
    assert view.group_by == "nn.Module"
    nodes = view.nodes.set_index("group")
    blocks = [f"GPT.blocks.{k}" for k in range(4)]
    assert set(blocks) <= set(nodes.index) and {"forward", "backward", "GPT"} <= set(nodes.index)
    # a module's time per rank: its module contexts' inclusive time, summed (forward and, for
    # FSDP2's re-gathers, wherever the block runs again)
    tree = ens.tree
    paths = tree.callpaths.to_numpy()
    per = view.per_profile
    values = ens.values("time (inc)")
    for b in blocks:
        k = int(np.flatnonzero(view.graph.nodes["group"] == b)[0])
        idx = [i for i in range(len(tree)) if paths[i].endswith("/GPT/" + b.split(".", 1)[1])]
        assert idx and np.allclose(per.loc[k], values[idx].sum(axis=0), rtol=1e-9)
    # FSDP2 gathers each block's parameters inside it: the bytes flow through the blocks,
    # the same bytes on every rank (no imbalance)
    comm = SankeyView(ens, metric="comm_bytes (inc)").nodes.set_index("group")
    assert (comm.loc[blocks, "mean"] > 0).all()
    assert np.allclose(comm.loc[blocks, "max"], comm.loc[blocks, "min"])
    # DDP against FSDP2: a diff by strategy over one ensemble of both runs
    both = cctviz.read_ensemble([ddp_run[0], fsdp_run[0]])
    diff = SankeyView(both, diff=({"strategy": "DDP"}, {"strategy": "FSDP2"}))
    d = diff._data["diff"]
    assert (d["a_profiles"], d["b_profiles"]) == (2, 2) and d["a_label"] == "strategy=DDP"


def test_runs_record_the_model_for_the_performance_models(ddp_run, fsdp_run):
    """The model's parameters (shapes, dtypes, module paths), FSDP2 units, DDP's bucket."""
    from cctviz.perfmodel.analytic import ModelSpec

    ddp, fsdp = read_quiet(ddp_run[0]), read_quiet(fsdp_run[0])
    for ens in (ddp, fsdp):
        spec = ModelSpec.from_dict(ens.meta["model_spec"])
        assert (
            spec.params == ens.meta["params"] == sum(int(np.prod(p.shape)) for p in spec.parameters)
        )
        assert {p.module for p in spec.parameters} >= {"blocks.0.attn.c_attn", "wte", "lm_head"}
        assert spec.weight_bytes == spec.grad_bytes == 4  # fp32 weights and gradients, per element
    assert ddp.meta["bucket_bytes"] == 25 * 2**20  # DDP's default bucket_cap_mb
    units = ModelSpec.from_dict(fsdp.meta["model_spec"]).fsdp_units
    assert sorted(units) == ["", "blocks.0", "blocks.1", "blocks.2", "blocks.3"]  # per block + root
    assert not ModelSpec.from_dict(ddp.meta["model_spec"]).fsdp_units
