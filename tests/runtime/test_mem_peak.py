"""``mem_peak`` on CPU: torch's CPU allocator's peak per calling context, from
its profiler's memory events (issue 37; ``cctviz/runtime/mempeak.py``). The
oracle: a module that allocates a tensor of known size and frees it, beside
one that allocates nothing of note; and the attribution against a plain loop
over the events."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

import cctviz
from cctviz.runtime.mempeak import MemoryTracker, peaks_by_context

SPIKE = 8 << 20  # bytes the spike module allocates and frees in every call


class Spike(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scratch = torch.ones(SPIKE // 4)  # float32: SPIKE bytes, freed on return
        return self.lin(x) + scratch[:1]


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.spike = Spike()
        self.quiet = nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.quiet(self.spike(x))


def test_mem_peak_of_a_module_holds_what_it_allocated(tmp_path):
    torch.manual_seed(0)
    net = Net()
    opt = torch.optim.Adam(net.parameters())
    x = torch.randn(4, 16)
    with cctviz.profile(out=tmp_path, root="t", mem_peak=True) as prof:
        for _ in range(4):
            opt.zero_grad()
            net(x).square().mean().backward()
            opt.step()
    tree = cctviz.read(prof.path)
    peak = dict(zip(tree.callpaths, tree.metrics["mem_peak"], strict=True))
    spike, quiet = peak["t/step/forward/Net/spike"], peak["t/step/forward/Net/quiet"]
    # what the spike held beyond the quiet module next to it: its scratch tensor,
    # give or take the small outputs and gradients of a (4 x 16) batch
    assert abs((spike - quiet) - SPIKE) < 16 << 10, (spike, quiet)
    # the step held at least the model states: parameters and Adam's two states
    states = 3 * sum(p.numel() * 4 for p in net.parameters())
    assert quiet >= states
    assert tree.units["mem_peak"] == "B"
    # tracking stopped after the memory step: the profiler is free again
    with torch.profiler.profile() as own:
        net(x)
    assert own.events()


def test_a_job_running_its_own_torch_profiler_keeps_it(tmp_path, caplog):
    net = Net()
    with torch.profiler.profile(profile_memory=True) as own:
        with cctviz.profile(out=tmp_path, root="t", mem_peak=True) as prof:
            net(torch.randn(4, 16)).sum().backward()
    assert any(e.key.startswith("aten::") for e in own.key_averages())
    assert prof.path is not None and "no mem_peak" in caplog.text
    assert "mem_peak" not in cctviz.read(prof.path).metrics


def test_peaks_by_context_equals_a_loop_over_the_events():
    rng = np.random.default_rng(3)
    times = np.sort(rng.choice(10_000, 200, replace=False))
    contexts = np.concatenate([[-1], rng.integers(0, 12, 199)])
    stamps = rng.integers(0, 10_500, 3_000)
    nbytes = rng.integers(-500, 600, 3_000)
    got = dict(peaks_by_context(times, contexts, stamps, nbytes, baseline=1_000))

    order = np.argsort(stamps, kind="stable")
    events = [(int(stamps[i]), int(nbytes[i])) for i in order]
    want: dict[int, float] = {}
    for k in range(1, len(times)):
        held = 1_000 + sum(b for t, b in events if t <= times[k - 1])
        top = held  # what the interval begins with, then after each of its events
        for t, b in events:
            if times[k - 1] < t <= times[k]:
                held += b
                top = max(top, held)
        ctx = int(contexts[k])
        want[ctx] = max(want.get(ctx, -np.inf), top)
    assert got == pytest.approx(want)


class FakeEvents:
    """Allocator events per device, as torch's profiler gives them after it exits."""

    def __init__(self, by_device):
        self.by_device, self.entered, self.exited = by_device, 0, 0

    def __enter__(self):
        self.entered += 1

    def __exit__(self, *exc):
        self.exited += 1

    def events(self, device):
        stamps, nbytes = self.by_device[device]
        return np.asarray(stamps), np.asarray(nbytes)


def test_on_cuda_the_allocator_s_events_charge_each_context_from_its_baseline():
    """Detailed mode on CUDA: each context's peak from the CUDA allocator's
    events of the memory step, from what CUDA held when tracking began; no
    reading and resetting of the allocator's peak at every transition."""
    from cctviz.runtime.recorder import Recorder

    clock = [0]
    rec = Recorder("r", clock=lambda: clock[0])
    events = FakeEvents({"cuda": ([15, 25, 35], [4_000, -3_000, 500]), "cpu": ([15], [99])})
    tracker = MemoryTracker(
        rec, 0, device=lambda: "cuda", profiler=events, live_tensors=list,
        cuda_allocated=lambda: 10_000, clock=lambda: clock[0],
    )  # fmt: skip
    tracker.start()
    rec.listen(tracker.tick)
    fwd = rec.enter_phase("forward")  # ticks at 0: closes "(outside steps)"
    clock[0] = 20
    a = rec.enter_module("A", root=True)  # the forward phase held 10,000 + 4,000
    clock[0] = 30
    rec.pop(a)  # A: 14,000 at its start, 11,000 after its free
    clock[0] = 40
    rec.exit_phase(fwd)  # forward again: 11,500
    rec.end_step()
    tracker.step_end()
    assert events.exited == 1 and not tracker.tracking and tracker.baseline == 10_000
    forward = rec._key[(rec._key[(0, "step")], "forward")]
    module = rec._key[(forward, "A")]
    peaks = rec.extra["mem_peak"]
    assert peaks[forward] == peaks[module] == 14_000  # the baseline and A's allocation
    # before the forward (the step's start): the baseline alone; CPU events unread
    assert peaks[rec._key[(0, "step")]] == 10_000
    assert max(peaks.values()) == 14_000
    assert "mem_peak" in rec.max_metrics
