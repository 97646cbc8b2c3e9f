"""A recorder driven through every kind of transition it has (no torch, no
job): for the runtime's trace tests and the live trace decoder's."""

from __future__ import annotations

from cctviz.runtime.recorder import Recorder


def _drive(rec: Recorder) -> None:
    """Every kind of transition the recorder has, in one made-up job."""
    d = rec.enter_phase("data")
    rec.exit_phase(d)
    m = rec.enter_module("GPT", root=True)
    b = rec.push("blocks.0", "module")
    rec.pop(b)
    rec.pop(m)
    tok = rec.enter_phase("backward")
    # detailed mode's backward: the outer module's output is reached first
    rec.enter_path(2, ("GPT",))
    rec.enter_path(2, ("GPT", "blocks.1"))
    rec.enter_path(2, ("GPT", "blocks.0"))
    rec.enter_path(2, ("GPT",))  # the same module again: a call more
    c = rec.enter_leaf("all_reduce", "comm")
    rec.pop(c)
    rec.exit_phase(tok)
    o = rec.enter_phase("optimizer")
    rec.exit_phase(o)
    rec.end_step(by_optimizer=True)
    o = rec.enter_phase("optimizer")  # a second optimizer: the step re-opens
    rec.exit_phase(o)
    rec.end_step(by_optimizer=True)
    rec.leaf_here("barrier", "comm")
    rec.enter_phase("data")
    rec.finish()  # inside a step: a partial step
