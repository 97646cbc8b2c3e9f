"""The recorder's state machine and time accounting, with a fake clock (no torch)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cctviz.model.formats import OUTSIDE, WARMUP
from cctviz.runtime.recorder import Recorder
from tests.hypothesis_profiles import examples


class Clock:
    """Advances by ``dt`` on every read."""

    def __init__(self, dt: int = 10) -> None:
        self.t, self.dt = 0, dt

    def __call__(self) -> int:
        self.t += self.dt
        return self.t


def paths(rec: Recorder) -> dict[tuple[str, ...], int]:
    """path -> exclusive time of every context."""
    out = {}
    for c in range(len(rec.parent)):
        p, x = [], c
        while x >= 0:
            p.append(rec.name[x])
            x = rec.parent[x]
        out[tuple(reversed(p))[1:]] = rec.time[c]
    return out


def iteration(rec: Recorder, *, by_optimizer: bool = True) -> None:
    d = rec.enter_phase("data")
    rec.exit_phase(d)
    m = rec.enter_module("Net", root=True)
    c = rec.enter_module("fc", root=False)
    rec.pop(c)
    rec.pop(m)
    b = rec.enter_phase("backward")
    leaf = rec.enter_leaf("all_reduce", "comm")
    rec.add(rec.top, "comm_bytes", 100)
    rec.pop(leaf)
    rec.exit_phase(b)
    o = rec.enter_phase("optimizer")
    rec.exit_phase(o)
    rec.end_step(by_optimizer=by_optimizer)


def test_contexts_of_a_training_step():
    rec = Recorder("train", clock=Clock())
    for _ in range(3):
        iteration(rec)
    rec.finish()
    p = paths(rec)
    assert ("step", "forward", "Net", "fc") in p
    assert ("step", "backward", "all_reduce") in p
    assert ("step", "other") in p  # between data and forward, after backward
    tree = rec.to_tree()
    node = {tree.path(i)[1:]: i for i in range(len(tree))}
    assert tree.metrics.loc[node[("step",)], "calls"] == 3
    assert tree.metrics.loc[node[("step", "backward", "all_reduce")], "comm_bytes"] == 300
    assert len(rec.steps) == 3 and all(not w for *_, w in rec.steps)


def test_time_is_conserved_and_steps_add_up():
    clock = Clock(dt=7)
    rec = Recorder("train", clock=clock)
    start = rec.started_ns
    for _ in range(4):
        iteration(rec)
    rec.finish()
    assert sum(rec.time) == clock.t - start  # every nanosecond charged exactly once
    tree = rec.to_tree()
    step = next(i for i in range(len(tree)) if tree.path(i)[1:] == ("step",))
    assert tree.metrics.loc[step, "time (inc)"] == sum(b - a for a, b, _ in rec.steps)


def test_forward_is_sticky_until_the_next_phase():
    rec = Recorder("r", clock=Clock())
    m = rec.enter_module("Net", root=True)
    rec.pop(m)
    # loss computed after the model returned: still forward
    assert rec.name[rec.top] == "forward"
    leaf = rec.enter_leaf("all_reduce", "comm")
    assert [rec.name[c] for c in rec.stack] == ["r", "step", "forward", "all_reduce"]
    rec.pop(leaf)
    b = rec.enter_phase("backward")
    assert [rec.name[c] for c in rec.stack] == ["r", "step", "backward"]
    rec.exit_phase(b)
    assert [rec.name[c] for c in rec.stack] == ["r", "step", "other"]


def test_phase_inside_a_module_nests_there():
    rec = Recorder("r", clock=Clock())
    m = rec.enter_module("Net", root=True)
    b = rec.enter_phase("backward")  # e.g. a gradient penalty inside forward
    assert [rec.name[c] for c in rec.stack] == ["r", "step", "forward", "Net", "backward"]
    rec.exit_phase(b)
    assert [rec.name[c] for c in rec.stack] == ["r", "step", "forward", "Net"]
    rec.pop(m)


def test_outside_steps_and_warmup_and_per_step():
    rec = Recorder("r", clock=Clock(), warmup=1, per_step=True)
    leaf = rec.enter_leaf("broadcast", "comm")  # setup: no step yet (automatic mode)
    rec.pop(leaf)
    for _ in range(3):
        iteration(rec)
    p = paths(rec)
    assert (OUTSIDE, "broadcast") in p
    assert (WARMUP, "forward", "Net") in p
    assert ("step 0", "forward", "Net") in p and ("step 1", "forward", "Net") in p
    assert ("step 2",) not in p
    assert [w for *_, w in rec.steps] == [True, False, False]


def test_manual_mode_collectives_start_steps():
    rec = Recorder("r", clock=Clock(), manual=True)
    leaf = rec.enter_leaf("all_reduce", "comm")
    rec.pop(leaf)
    rec.end_step()
    assert ("step", "other", "all_reduce") in paths(rec)


def test_two_optimizers_make_one_step():
    rec = Recorder("r", clock=Clock())
    m = rec.enter_module("G", root=True)
    rec.pop(m)
    o = rec.enter_phase("optimizer")
    rec.exit_phase(o)
    rec.end_step(by_optimizer=True)
    o = rec.enter_phase("optimizer")  # the discriminator's optimizer, right after
    rec.exit_phase(o)
    rec.end_step(by_optimizer=True)
    assert len(rec.steps) == 1
    step = rec._key[(0, "step")]
    assert rec.calls[step] == 1
    assert rec.calls[rec._key[(step, "optimizer")]] == 2


def test_finish_closes_a_partial_step():
    rec = Recorder("r", clock=Clock())
    iteration(rec)
    rec.enter_module("Net", root=True)
    rec.finish()
    assert len(rec.steps) == 1 and rec.partial_steps == 1 and not rec.in_step
    assert rec.calls[rec._key[(0, "step")]] == 2  # its time is in the step node


def test_set_max_keeps_peaks():
    rec = Recorder("r", clock=Clock())
    rec.set_max(0, "mem_peak", 5)
    rec.set_max(0, "mem_peak", 3)
    rec.set_max(0, "mem_peak", 9)
    assert rec.extra["mem_peak"][0] == 9 and "mem_peak" in rec.max_metrics


def test_peaks_are_a_max_in_the_tree():
    """A peak's inclusive value is the largest peak of the subtree, never a sum."""
    rec = Recorder("r", clock=Clock())
    iteration(rec)
    rec.finish()
    cols = rec.columns()
    names = list(cols["name"])
    for k, name in enumerate(names):
        rec.set_max(k, "mem_peak", 100 + 10 * k if name != "step" else 50)
    t = rec.to_tree({"units": {"mem_peak": "B"}})
    assert t.aggregation["mem_peak"] == "max"
    inc, exc = t.metrics["mem_peak (inc)"], t.metrics["mem_peak"]
    for i in range(len(t)):
        sub = exc.iloc[i : int(t.end[i])]
        assert inc.iloc[i] == sub.max()
    assert inc.iloc[0] < exc.sum()  # a sum would be far larger


OPS = st.lists(
    st.sampled_from(["data", "backward", "optimizer", "mod", "pop", "leaf", "step", "region"]),
    max_size=60,
)


@settings(max_examples=examples(150), deadline=None)
@given(OPS, st.integers(0, 2), st.booleans())
def test_random_transitions_keep_invariants(ops, warmup, manual):
    clock = Clock(dt=3)
    rec = Recorder("r", clock=clock, warmup=warmup, manual=manual)
    start = rec.started_ns
    tokens: list[int] = []
    for op in ops:
        if op in ("data", "backward", "optimizer", "region"):
            tok = rec.enter_phase(op, "region" if op == "region" else "phase")
            rec.exit_phase(tok)
        elif op == "mod":
            tokens.append(rec.enter_module("M", root=len(rec.stack) <= 3))
        elif op == "pop" and tokens:
            rec.pop(tokens.pop())
        elif op == "leaf":
            rec.pop(rec.enter_leaf("all_reduce", "comm"))
        elif op == "step":
            rec.end_step()
        # the stack is a path of the context tree, rooted at the root
        assert rec.stack[0] == 0
        for a, b in zip(rec.stack, rec.stack[1:]):
            assert rec.parent[b] == a
    rec.finish()
    assert sum(rec.time) == clock.t - start
    assert min(rec.calls) >= 0
    tree = rec.to_tree()
    assert tree.metrics["time (inc)"].iloc[0] == pytest.approx(clock.t - start)
    starts = [a for a, _, _ in rec.steps]
    assert starts == sorted(starts)
