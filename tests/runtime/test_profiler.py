"""``cctviz.profile`` in this process (one rank, no process group), and the hooks' helpers."""

from __future__ import annotations

import importlib.util
import textwrap
from pathlib import Path

import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import cctviz
from cctviz.runtime.gpu import CudaTimer
from cctviz.runtime.hooks import module_class_name, relative_names, strategy_of
from cctviz.runtime.launch import LaunchError, split_command
from cctviz.runtime.recorder import Recorder


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(16, 1)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


def train(steps: int = 4, prof=None, region: bool = False):
    torch.manual_seed(0)
    net = Net()
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    data = DataLoader(TensorDataset(torch.randn(64, 8), torch.randn(64, 1)), batch_size=8)
    losses = []
    for k, (x, y) in enumerate(data):
        if k == steps:
            break
        if region:
            with prof.region("eval"):
                net(x)
        opt.zero_grad()
        loss = (net(x) - y).square().mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def node_paths(tree):
    return {tree.path(i)[1:]: i for i in range(len(tree))}


def test_profile_a_loop_automatic_steps(tmp_path):
    with cctviz.profile(out=tmp_path, warmup=1, root="loop") as prof:
        train(5, prof, region=True)
    tree = cctviz.read(prof.path)
    p = node_paths(tree)
    for path in [
        ("step", "data"),
        ("step", "forward", "Net", "fc1"),
        ("step", "backward"),
        ("step", "optimizer"),
        ("step", "eval", "Net", "fc2"),  # a region is a phase of its own
        ("(warm-up)", "forward", "Net"),
    ]:
        assert path in p, path
    assert tree.meta["steps"] == 4 and tree.meta["status"] == "complete"
    assert tree.meta["world_size"] == 1 and tree.meta["strategy"] == "none"
    assert tree.meta["params"] == sum(q.numel() for q in Net().parameters())
    assert tree.metrics.loc[p[("step", "forward", "Net", "fc1")], "calls"] == 4
    assert tree.metrics.loc[p[("step", "eval", "Net", "fc1")], "calls"] == 4
    # the run folder reads as a one-rank ensemble
    ens = cctviz.read(tmp_path)
    assert ens.n_profiles == 1 and ens.profiles["ok"].all()


def test_manual_steps(tmp_path):
    with cctviz.profile(out=tmp_path) as prof:
        for _ in range(3):
            with prof.region("work"):
                Net()(torch.randn(2, 8))
            prof.step()
    tree = cctviz.read(prof.path)
    p = node_paths(tree)
    assert tree.metrics.loc[p[("step",)], "calls"] == 3
    assert tree.metrics.loc[p[("step", "work", "Net")], "calls"] == 3


def test_regions_in_any_code(tmp_path):
    """``cctviz.region`` as a context manager and a decorator makes contexts of
    kind ``region`` (nested, timed, counted) where a profiler runs, and does
    nothing where none does."""
    import time

    @cctviz.region("prepare")
    def prepare():
        time.sleep(0.02)

    with cctviz.region("before"):  # no profiler yet: nothing, no error
        prepare()
    with cctviz.profile(out=tmp_path) as prof:
        for _ in range(2):
            with cctviz.region("load"):
                prepare()
                time.sleep(0.01)
    tree = cctviz.read(prof.path)
    p = node_paths(tree)
    load = next(k for k in p if k and k[-1] == "load")
    inner = p[(*load, "prepare")]
    assert tree.nodes.loc[p[load], "kind"] == "region" == tree.nodes.loc[inner, "kind"]
    assert tree.metrics.loc[p[load], "calls"] == 2 == tree.metrics.loc[inner, "calls"]
    inc = tree.metrics.loc[p[load], "time"] + tree.metrics.loc[inner, "time"]
    assert inc >= 2 * 0.03e9 and tree.metrics.loc[inner, "time"] >= 2 * 0.02e9
    assert not any("before" in k for k in p)
    with cctviz.region("after"):  # stopped: nothing again
        pass


def test_data_moved_through_channels_of_your_own(tmp_path):
    """``cctviz.moved`` records a ``data`` context per channel under the current
    context, with the calls and the bytes in and out (B, summed)."""
    cctviz.moved(10, "queue")  # no profiler: nothing
    with cctviz.profile(out=tmp_path) as prof:
        for _ in range(3):
            with cctviz.region("publish"):
                cctviz.moved(1000, "queue:snapshots")
        with cctviz.region("consume"):
            cctviz.moved(500, "queue:snapshots", direction="in")
    tree = cctviz.read(prof.path)
    p = node_paths(tree)
    pub = next(k for k in p if k and k[-1] == "publish")
    con = next(k for k in p if k and k[-1] == "consume")
    out, into = p[(*pub, "queue:snapshots")], p[(*con, "queue:snapshots")]
    assert tree.nodes.loc[out, "kind"] == "data"
    assert tree.metrics.loc[out, "calls"] == 3 and tree.metrics.loc[into, "calls"] == 1
    assert tree.metrics.loc[out, "data_out_bytes"] == 3000
    assert tree.metrics.loc[into, "data_in_bytes"] == 500
    assert tree.units["data_out_bytes"] == "B"
    with pytest.raises(ValueError, match="direction"):
        cctviz.moved(1, "x", direction="sideways")
    with pytest.raises(ValueError, match=">= 0"):
        cctviz.moved(-1, "x")


def test_files_opened_are_recorded_per_context(tmp_path):
    """``files=True``: every open of a regular file counts in a ``files``
    context under the current one (bytes read at open, bytes written when the
    profiler stops) and is listed with its path in the profile's metadata."""
    data = tmp_path / "data"
    data.mkdir()
    with cctviz.profile(out=tmp_path / "run", files=True) as prof:
        with cctviz.region("write"):
            for k in range(3):
                (data / f"snap-{k}.bin").write_bytes(b"x" * 100_000)
        with cctviz.region("read"):
            for k in range(2):
                assert len((data / f"snap-{k}.bin").read_bytes()) == 100_000
            (data / "snap-2.bin").unlink()  # consumed: its writer cannot count it
    with open(data / "after.txt", "w") as f:  # stopped: not recorded
        f.write("x")
    tree = cctviz.read(prof.path)
    p = node_paths(tree)
    w = p[(*next(k for k in p if k and k[-1] == "write"), "files")]
    r = p[(*next(k for k in p if k and k[-1] == "read"), "files")]
    assert tree.nodes.loc[w, "kind"] == "data" == tree.nodes.loc[r, "kind"]
    assert tree.metrics.loc[w, "calls"] == 3 and tree.metrics.loc[r, "calls"] == 2
    assert tree.metrics.loc[r, "data_in_bytes"] == 200_000
    assert tree.metrics.loc[w, "data_out_bytes"] == 200_000  # snap-2 was gone at the end
    opens = tree.meta["files"]
    assert [(Path(o[2]).name, o[3], o[4]) for o in opens] == [
        ("snap-0.bin", "w", 0), ("snap-1.bin", "w", 0), ("snap-2.bin", "w", 0),
        ("snap-0.bin", "r", 100_000), ("snap-1.bin", "r", 100_000),
    ]  # fmt: skip
    assert opens[0][1].endswith("/write") and opens[3][1].endswith("/read")
    assert [o[0] for o in opens] == sorted(o[0] for o in opens)
    assert not any(str(tmp_path / "run") in o[2] for o in opens)  # not its own files


def test_training_unchanged_and_hooks_removed(tmp_path):
    backward = torch.autograd.backward
    base = train(3)
    with cctviz.profile(out=tmp_path) as prof:
        assert torch.autograd.backward is not backward  # wrapped while running
        got = train(3, prof)
    assert got == base  # profiling changes no numbers
    assert torch.autograd.backward is backward
    assert not torch.nn.modules.module._global_forward_pre_hooks


def test_a_failing_profiler_never_kills_the_job(tmp_path, caplog):
    prof = cctviz.profile(out=tmp_path).start()

    def broken(*a, **k):
        raise RuntimeError("boom in the recorder")

    prof.rec.enter_module = broken
    losses = train(3)  # hooks now fail: training must go on
    prof.stop()
    assert losses == train(3)
    assert "profiler failed" in prof.status and "boom" in prof.status
    assert "disabled itself" in caplog.text
    tree = cctviz.read(prof.path)  # what was recorded before is written
    assert "profiler failed" in tree.meta["status"]
    with pytest.warns(UserWarning, match="profiler failed"):
        ens = cctviz.read(tmp_path)
    assert not ens.profiles["ok"].iloc[0]


def test_exception_in_the_loop_is_recorded(tmp_path):
    with pytest.raises(ZeroDivisionError):
        with cctviz.profile(out=tmp_path) as prof:
            train(2)
            1 / 0  # noqa: B018
    tree = cctviz.read(prof.path)
    assert tree.meta["status"] == "exception: ZeroDivisionError: division by zero"
    assert tree.meta["steps"] == 2


def test_detailed_mode_ops_and_backward_modules(tmp_path):
    with cctviz.profile(out=tmp_path, mode="detailed") as prof:
        train(3, prof)
    tree = cctviz.read(prof.path)
    p = node_paths(tree)
    assert ("step", "forward", "Net", "fc1", "aten::addmm") in p
    # backward time is attributed to modules through their outputs' grad_fn
    assert ("step", "backward", "Net", "fc2") in p
    assert ("step", "backward", "Net", "fc1") in p
    ops = tree.frame[tree.frame["kind"] == "op"]
    assert len(ops) > 5 and (ops["time"] > 0).all()


def test_python_frames(tmp_path):
    src = tmp_path / "userlib.py"
    src.write_text(
        textwrap.dedent(
            """
            def outer(net, x):
                return inner(net, x) + 1

            def inner(net, x):
                return net(x).sum()
            """
        )
    )
    spec = importlib.util.spec_from_file_location("userlib", src)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    net = Net()
    with cctviz.profile(out=tmp_path / "run", python_frames=True) as prof:
        for _ in range(2):
            with prof.region("r"):
                mod.outer(net, torch.randn(2, 8))
            prof.step()
    tree = cctviz.read(prof.path)
    p = node_paths(tree)
    fwd = f"Net.forward (test_profiler.py:{Net.forward.__code__.co_firstlineno})"
    want = ("step", "r", "outer (userlib.py:2)", "inner (userlib.py:5)", "Net", fwd, "fc1")
    assert want in p, sorted(p)
    # torch's own frames (Module._call_impl, F.linear) are not contexts
    assert not any("module.py" in "".join(k) for k in p)
    assert tree.metrics.loc[p[want[:3]], "calls"] == 2


class FakeCudaEvent:
    """A CUDA event's calls, on a clock the test moves (ns)."""

    def __init__(self, clock):
        self.clock, self.t = clock, None

    def record(self):
        self.t = self.clock[0]

    def synchronize(self):
        pass

    def elapsed_time(self, other):
        return (other.t - self.t) / 1e6  # ms


def test_cuda_timer_attributes_intervals_with_fake_events():
    gpu_clock = [0]
    peaks = iter([100, 300, 200, 50])
    resets = []
    rec = Recorder("r", clock=lambda: 0)
    timer = CudaTimer(
        rec,
        per_context=True,
        event_factory=lambda: FakeCudaEvent(gpu_clock),
        memory=(lambda: next(peaks), lambda: resets.append(1)),
    )
    rec.on_tick = timer.tick
    a = rec.enter_module("A", root=True)  # tick closes "(outside steps)"...
    gpu_clock[0] = 5_000  # A's kernels take 5 us
    b = rec.enter_module("B", root=False)
    gpu_clock[0] = 12_000  # B's take 7 us
    rec.pop(b)
    gpu_clock[0] = 13_000
    rec.pop(a)
    timer.resolve()
    ga = rec.extra["gpu_time"]
    ctx_a = rec._key[(rec._key[(rec._key[(0, "step")], "forward")], "A")]
    ctx_b = rec._key[(ctx_a, "B")]
    assert ga[ctx_b] == pytest.approx(7_000)
    assert ga[ctx_a] == pytest.approx(5_000 + 1_000)
    timer.phase(ctx_a)
    timer.phase(ctx_b)
    timer.phase(ctx_a)
    assert rec.extra["mem_peak"] == {ctx_a: 200, ctx_b: 300}  # reads 100, 300, 200: max per context
    assert len(resets) == 4  # once at start, then after every read


def test_cuda_timer_per_phase_charges_the_phase():
    """Light mode's GPU timer: no event at module transitions, one at each phase
    change, its interval charged to the phase the module on top runs in."""

    gpu_clock = [0]
    made = []
    rec = Recorder("r", clock=lambda: 0)

    def factory():
        made.append(FakeCudaEvent(gpu_clock))
        return made[-1]

    timer = CudaTimer(rec, event_factory=factory, memory=(lambda: 0, lambda: None))
    assert not timer.per_context
    rec.on_tick = timer.tick
    fwd = rec.enter_phase("forward")
    timer.phase(rec.stack[-1])  # the step's start, as the hooks call it
    a = rec.enter_module("A", root=True)
    b = rec.enter_module("B", root=False)
    inner = rec.stack[-1]  # B's context
    assert len(made) == 1  # module transitions record nothing
    gpu_clock[0] = 9_000
    timer.phase(inner)  # a phase change with B on top: charged to B's phase
    rec.pop(b)
    rec.pop(a)
    rec.exit_phase(fwd)
    timer.resolve()
    forward = rec._key[(rec._key[(0, "step")], "forward")]
    assert rec.extra["gpu_time"] == {forward: pytest.approx(9_000)}
    assert len(made) == 2


def test_split_command():
    t, o, s, a, m = split_command(
        [
            "--standalone",
            "--nproc_per_node=4",
            "--python-frames",
            "--warmup",
            "2",
            "-m",
            "pkg.train",
            "-x",
        ]
    )
    assert t == ["--standalone", "--nproc_per_node=4"] and s == "pkg.train" and m
    assert o == {"python_frames": True, "warmup": "2"} and a == ["-x"]
    with pytest.raises(LaunchError, match="unknown option"):
        split_command(["--nprocs", "2", "x.py"])
    with pytest.raises(LaunchError, match="no training script"):
        split_command(["--nproc-per-node", "2"])
    with pytest.raises(LaunchError, match="--no-python"):
        split_command(["--no-python", "x.sh"])


def test_cli_run_reports_bad_command_lines(capsys):
    from cctviz.cli import main

    assert main(["run", "--nproc-per-node", "2", "missing_script.py"]) == 2
    assert "missing_script.py: no such script" in capsys.readouterr().err


def test_module_names_behind_wrappers():
    DDP = type("DistributedDataParallel", (nn.Module,), {})
    net = Net()
    ddp = DDP()
    ddp.module = net
    assert module_class_name(ddp) == "Net" and strategy_of(ddp) == "DDP"
    names = relative_names(ddp)
    assert names[id(net)] == "" and names[id(net.fc1)] == "fc1"
    # FSDP1 keeps the wrapped module under _fsdp_wrapped_module
    FSDP = type("FullyShardedDataParallel", (nn.Module,), {})
    outer = nn.Module()
    w = FSDP()
    w._fsdp_wrapped_module = Net()
    outer.blocks = nn.ModuleList([w])
    names = relative_names(outer)
    assert names[id(w)] == "blocks.0" and names[id(w._fsdp_wrapped_module)] == "blocks.0"
    assert names[id(w._fsdp_wrapped_module.fc2)] == "blocks.0.fc2"
    # FSDP2 swaps the class for FSDP<cls>
    FSDPModule = type("FSDPModule", (), {})
    sharded = type("FSDPNet", (FSDPModule, Net), {})()
    assert module_class_name(sharded) == "Net" and strategy_of(sharded) == "FSDP2"
