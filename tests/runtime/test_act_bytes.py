"""``act_bytes``: the bytes autograd saves for backward, per calling context
(issue 37). The oracle is torch's own hook in a run of its own (hooks nest and
only the innermost pair runs, so it cannot count beside the profiler's): every
tensor saved for backward, each storage once per forward pass, parameters and
their views left out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from torch import nn

import cctviz
from tests.runtime.conftest import EXAMPLE, TORCHRUN, example_run, run_job


class Block(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(width, 4 * width)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(4 * width, width)
        self.norm = nn.LayerNorm(width)

    def forward(self, x):
        return self.norm(x + self.fc2(self.act(self.fc1(x))))


def make(width: int = 32, depth: int = 3) -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(*[Block(width) for _ in range(depth)], nn.Linear(width, 1))


def step(net: nn.Module, opt, x: torch.Tensor, y: torch.Tensor) -> None:
    opt.zero_grad()
    loss = (net(x) - y).square().mean()
    loss.backward()
    opt.step()


def batches(n: int, batch: int = 16, width: int = 32):
    g = torch.Generator().manual_seed(1)
    return [
        (torch.randn(batch, width, generator=g), torch.randn(batch, 1, generator=g))
        for _ in range(n)
    ]


def saved_bytes_per_step(net: nn.Module, data) -> float:
    """The oracle: unique storages saved per forward pass, parameters left out."""
    params = {p.untyped_storage().data_ptr() for p in net.parameters()}
    per_step = []
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    for x, y in data:
        seen: dict[int, int] = {}

        def pack(t, seen=seen):
            st = t.untyped_storage()
            if st.data_ptr() not in params:
                seen[st.data_ptr()] = st.nbytes()
            return t.detach() if t.requires_grad else t

        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            step(net, opt, x, y)
        per_step.append(sum(seen.values()))
    assert len(set(per_step)) == 1, per_step  # the same every step
    return float(per_step[0])


def test_act_bytes_per_step_is_what_autograd_saved(tmp_path):
    data = batches(6)
    want = saved_bytes_per_step(make(), data)
    net = make()
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    with cctviz.profile(out=tmp_path, warmup=1, root="train", act_bytes=True) as prof:
        for x, y in data:
            step(net, opt, x, y)
    tree = cctviz.read(prof.path)
    steps = tree.meta["steps"]
    paths = [tree.path(i) for i in range(len(tree))]
    in_steps = [i for i, p in enumerate(paths) if len(p) > 1 and p[1] == "step"]
    got = tree.metrics["act_bytes"].iloc[in_steps].sum() / steps
    assert steps == 5 and got == want, (got, want)  # the same count, in one process
    assert tree.units["act_bytes"] == "B"
    # where: a Linear saves its input, the first one the batch itself (16 x 32 float32)
    fc1 = paths.index(("train", "step", "forward", "Sequential", "0", "fc1"))
    assert tree.metrics["act_bytes"].iloc[fc1] == steps * 16 * 32 * 4


def test_the_job_s_own_saved_tensor_hooks_are_left_alone(tmp_path):
    """Started inside the job's own hooks (activation offloading), the profiler
    installs none: the job's pack runs for every saved tensor, as without it."""
    calls = []

    def pack(t):
        calls.append(1)
        return t.detach() if t.requires_grad else t

    data = batches(3)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        net = make(depth=1)
        opt = torch.optim.SGD(net.parameters(), lr=0.01)
        with cctviz.profile(out=tmp_path, warmup=0, act_bytes=True) as prof:
            for x, y in data:
                step(net, opt, x, y)
        assert (
            torch._C._autograd._top_saved_tensors_default_hooks(True)[0] is pack
        )  # still the job's
    assert calls
    tree = cctviz.read(prof.path)
    assert "act_bytes" not in tree.metrics or tree.metrics["act_bytes"].fillna(0).sum() == 0


def _per_step_act_bytes(run: Path, rank: int) -> float:
    tree = cctviz.read(run).profile(rank)
    paths = [tree.path(i) for i in range(len(tree))]
    in_steps = [i for i, p in enumerate(paths) if len(p) > 1 and p[1] == "step"]
    return float(tree.metrics["act_bytes"].iloc[in_steps].sum()) / tree.meta["profile"]["steps"]


@pytest.mark.slow
@pytest.mark.parametrize("strategy", ["ddp", "fsdp"])
def test_gloo_jobs_act_bytes_match_the_script_s_own_count(strategy, tmp_path):
    """Real gloo jobs (DDP, FSDP2; 2 ranks): ``act_bytes`` per step of each rank
    within 2% of what the training script counts with torch's saved-tensor hooks
    in a run of its own (examples/train.py --count-saved)."""
    run, _ = example_run(tmp_path / "run", strategy, steps=4, warmup=1, extra=("--act-bytes",))
    timings = tmp_path / "own-{rank}.json"
    run_job([*TORCHRUN, "--standalone", "--nproc-per-node", "2", str(EXAMPLE),
             "--strategy", strategy, "--steps", "3", "--count-saved", "--timings", str(timings)])  # fmt: skip
    for rank in range(2):
        own = json.loads(Path(str(timings).format(rank=rank)).read_text())["saved_bytes"]
        assert len(set(own)) == 1 and own[0] > 0, own  # the same every step
        got = _per_step_act_bytes(run, rank)
        assert abs(got - own[0]) <= 0.02 * own[0], (strategy, rank, got, own[0])


def test_profile_leaves_no_hooks_behind_and_torch_func_runs(tmp_path):
    """With act_bytes the profiler's saved-tensor hooks are gone when it stops;
    without (the default) it pushes none, so torch.func's transforms, which
    refuse to run under such hooks, work while profiling."""
    top = torch._C._autograd._top_saved_tensors_default_hooks
    net = make(depth=1)
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    with cctviz.profile(out=tmp_path / "a", warmup=0, act_bytes=True):
        assert top(True) is not None
        step(net, opt, *batches(1)[0])
    assert top(True) is None
    with cctviz.profile(out=tmp_path / "b", warmup=0):
        assert top(True) is None
        g = torch.func.grad(lambda w: (w * w).sum())(torch.ones(3))
    assert g.tolist() == [2.0, 2.0, 2.0]


def test_a_saved_output_is_not_kept_alive_by_its_own_history(tmp_path):
    """An op's output saved for backward (exp saves its result) and dropped
    without backward is freed: the pack hook keeps it without its grad_fn, so
    no reference cycle holds the graph."""
    import weakref

    with cctviz.profile(out=tmp_path, warmup=0, act_bytes=True):
        x = torch.ones(1000, requires_grad=True)
        y = x.exp()
        ref = weakref.ref(y)
        del y
        assert ref() is None
