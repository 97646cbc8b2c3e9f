"""The context recorder: calling contexts and their metrics, without torch.

The runtime's hooks report *transitions* (a context is entered or left) and
*events* (a collective moved so many bytes). The recorder keeps the current
stack of contexts and charges the time between two transitions to the
context on top of the stack, so ``time`` is exclusive by construction and
nothing is sampled. Contexts are interned by ``(parent, name)``, so a
context that is entered a million times costs one dict lookup each time and
one node in the tree.

The stack always looks like::

    [root, step | "(warm-up)" | "(outside steps)", phase, module, module, ..., leaf]

Steps and phases follow a small state machine (see :meth:`Recorder.enter_phase`):

- Outside a step, time goes to ``(outside steps)``. A step starts at the
  first *step activity* (data loading, a forward of a root module, backward,
  the optimizer, a user region; in manual mode also a collective).
- A step ends at a boundary: :meth:`end_step`, called for ``prof.step()`` or,
  in automatic mode, after ``optimizer.step()``. What follows until the next
  activity (logging, checkpoints, teardown) is outside the steps again.
- Within a step the phase is *sticky*: ``forward`` begins with the first root
  module's forward and lasts until another phase begins (so the loss computed
  after the model returns counts as forward); time at step level that belongs
  to no phase goes to ``other``.
- A phase entered while a module is running (``backward`` inside a forward,
  for a gradient penalty) nests under that module instead of switching.

Everything here is plain Python on lists and dicts; the hot path is
:meth:`push`/:meth:`pop` (one clock read, one dict lookup).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

# the runtime tree's names and kinds, shared with its readers and views (model.formats)
from ..model.formats import (
    K_COMM,
    K_MODULE,
    K_PHASE,
    K_ROOT,
    K_STEP,
    OTHER,
    OUTSIDE,
    STEP,
    WARMUP,
)

_PHASE_LEVEL = 2


class Recorder:
    """Exclusive time, calls and event metrics per calling context.

    ``clock`` returns integer nanoseconds; ``on_tick(ctx)``, when given, is
    called at every transition with the context whose interval just ended
    (the GPU timer records a CUDA event there).

    Example:
        >>> t = iter(range(0, 1000, 10))
        >>> r = Recorder("train", clock=lambda: next(t))
        >>> d = r.enter_phase("forward")
        >>> m = r.push("GPT", "module"); r.pop(m)
        >>> r.end_step()
        >>> tree = r.to_tree()
        >>> tree.path(tree.query('MATCH (".", a) WHERE a."name" = "GPT"').ids[0])
        ('train', 'step', 'forward', 'GPT')
    """

    #: whether transitions are also logged as a trace (:class:`cctviz.runtime.trace.TracingRecorder`)
    tracing = False

    def __init__(
        self,
        root: str = "main",
        *,
        clock: Callable[[], int] = time.perf_counter_ns,
        warmup: int = 0,
        per_step: bool = False,
        manual: bool = False,
        on_tick: Callable[[int], None] | None = None,
    ) -> None:
        self._clock = clock
        self.warmup = int(warmup)
        self.per_step = bool(per_step)
        self.manual = bool(manual)
        self.on_tick = on_tick
        self._key: dict[tuple[int, str], int] = {}
        self.parent: list[int] = [-1]
        self.name: list[str] = [root]
        self.kind: list[str] = [K_ROOT]
        self.time: list[int] = [0]
        self.calls: list[int] = [1]
        #: sparse event metrics: metric -> {context: value}
        self.extra: dict[str, dict[int, float]] = {}
        #: metrics aggregated by max instead of sum (e.g. memory peaks)
        self.max_metrics: set[str] = set()
        self.outside = self.child(0, OUTSIDE, K_STEP)
        self.calls[self.outside] = 1
        self.stack: list[int] = [0, self.outside]
        self.in_step = False
        self.steps_started = 0
        #: (start_ns, end_ns, warm-up?) of every step ended by a boundary
        self.steps: list[tuple[int, int, bool]] = []
        #: at the end of each of :attr:`steps`: the time spent in collective
        #: contexts and their ``comm_time`` so far (ns; a live run's watch
        #: takes each step's share of waiting from them)
        self.step_comm: list[tuple[int, float]] = []
        self._comm_contexts: list[int] = []
        self._comm_done = 0
        self._comm_time = 0.0
        #: steps cut short by :meth:`finish` (no boundary: the job ended or failed)
        self.partial_steps = 0
        self._sticky = False
        self._step_start = 0
        self._ended_by_optimizer = False
        self._last = clock()
        self.started_ns = self._last

    # ------------------------------------------------------------ contexts
    def child(self, parent: int, name: str, kind: str) -> int:
        """The interned context ``name`` under ``parent`` (created on first use)."""
        k = (parent, name)
        c = self._key.get(k)
        if c is None:
            c = len(self.parent)
            self._key[k] = c
            self.parent.append(parent)
            self.name.append(name)
            self.kind.append(kind)
            self.time.append(0)
            self.calls.append(0)
            if kind == K_COMM:
                self._comm_contexts.append(c)
        return c

    def tick(self) -> int:
        """Charge the time since the last transition to the top context."""
        now = self._clock()
        top = self.stack[-1]
        self.time[top] += now - self._last
        self._last = now
        if self.on_tick is not None:
            self.on_tick(top)
        return now

    def listen(self, fn: Callable[[int], None]) -> None:
        """Call ``fn(ctx)`` at every transition too, after ``on_tick``'s."""
        first = self.on_tick
        if first is None:
            self.on_tick = fn
            return

        def both(ctx: int) -> None:
            first(ctx)
            fn(ctx)

        self.on_tick = both

    @property
    def top(self) -> int:
        return self.stack[-1]

    def push(self, name: str, kind: str) -> int:
        """Enter ``name`` under the current context; returns the depth to pop to."""
        depth = len(self.stack)
        self.tick()
        c = self.child(self.stack[-1], name, kind)
        self.calls[c] += 1
        self.stack.append(c)
        return depth

    def pop(self, depth: int) -> None:
        """Leave every context at ``depth`` and above (what :meth:`push` returned)."""
        if depth < len(self.stack) and depth >= _PHASE_LEVEL:
            self.tick()
            del self.stack[depth:]

    def enter_path(self, k: int, names: tuple[str, ...], kind: str = K_MODULE) -> None:
        """Keep the stack up to position ``k`` and push the chain ``names`` below it.

        Only the last context of the chain is counted as called (the others
        are its enclosing modules, already counted when backward reached
        them): detailed mode's module attribution inside backward.
        """
        self.tick()
        del self.stack[k + 1 :]
        c = self.stack[k]
        for nm in names:
            c = self.child(c, nm, kind)
            self.stack.append(c)
        self.calls[c] += 1

    def add(self, ctx: int, metric: str, value: float) -> None:
        """Add ``value`` to an event metric of ``ctx``."""
        d = self.extra.get(metric)
        if d is None:
            d = self.extra[metric] = {}
        d[ctx] = d.get(ctx, 0) + value
        if metric == "comm_time":
            self._comm_time += value

    def set_max(self, ctx: int, metric: str, value: float) -> None:
        """Keep the largest ``value`` seen for ``ctx`` (for peaks)."""
        self.max_metrics.add(metric)
        d = self.extra.get(metric)
        if d is None:
            d = self.extra[metric] = {}
        if value > d.get(ctx, float("-inf")):
            d[ctx] = value

    # --------------------------------------------------------------- steps
    def start_step(self) -> None:
        """Begin a step now (normally implicit: the first step activity begins one)."""
        if self.in_step:
            return
        now = self.tick()
        k = self.steps_started
        if k < self.warmup:
            name = WARMUP
        else:
            name = f"{STEP} {k - self.warmup}" if self.per_step else STEP
        c = self.child(0, name, K_STEP)
        self.calls[c] += 1
        self.stack[1:] = [c]
        self.in_step = True
        self._sticky = False
        self._step_start = now
        self._ended_by_optimizer = False
        self.steps_started += 1

    def end_step(self, *, by_optimizer: bool = False) -> None:
        """End the current step (``prof.step()``, or after ``optimizer.step()``)."""
        if not self.in_step:
            return
        now = self.tick()
        self.steps.append((self._step_start, now, self.steps_started <= self.warmup))
        self.step_comm.append(self.comm_so_far())
        if self.per_step:
            self._fold_comm()
        self.stack[1:] = [self.outside]
        self.calls[self.outside] += 1
        self.in_step = False
        self._ended_by_optimizer = by_optimizer

    def comm_so_far(self) -> tuple[int, float]:
        """Time in collective contexts and their ``comm_time``, so far (ns): a
        sum over the collective contexts still in use and running totals."""
        time = self.time
        return self._comm_done + sum(time[c] for c in self._comm_contexts), self._comm_time

    def _fold_comm(self) -> None:
        """With a node per step, the ended step's collective contexts take no
        more time: their sum goes into the running total (the sum at each
        step's end stays as long as one step's contexts)."""
        time = self.time
        self._comm_done += sum(time[c] for c in self._comm_contexts)
        self._comm_contexts.clear()

    def _activity(self) -> None:
        if not self.in_step:
            self.start_step()

    def _at_step_level(self) -> bool:
        n = len(self.stack)
        return self.in_step and (n == _PHASE_LEVEL or (n == _PHASE_LEVEL + 1 and self._sticky))

    def _switch_phase(self, name: str, sticky: bool, kind: str = K_PHASE) -> None:
        self.tick()
        del self.stack[_PHASE_LEVEL:]
        c = self.child(self.stack[1], name, kind)
        self.calls[c] += 1
        self.stack.append(c)
        self._sticky = sticky

    def enter_phase(self, name: str, kind: str = K_PHASE) -> int:
        """Enter a phase (data, backward, optimizer, ...); returns a token for :meth:`exit_phase`.

        At step level the phase replaces the current (sticky) one; inside a
        module it nests there. A user region (``kind="region"``) behaves the
        same way: at step level it is a phase of its own.
        """
        if name == "optimizer" and not self.in_step and self._ended_by_optimizer:
            self._reopen_step()
        self._activity()
        if self._at_step_level():
            self._switch_phase(name, sticky=False, kind=kind)
            return _PHASE_LEVEL
        return self.push(name, kind)

    def exit_phase(self, token: int) -> None:
        if token != _PHASE_LEVEL:
            self.pop(token)
        elif self.in_step and len(self.stack) > _PHASE_LEVEL:
            self._switch_phase(OTHER, sticky=True)

    def _reopen_step(self) -> None:
        # a second optimizer right after the first (GANs, several optimizers):
        # still the same step
        start, _end, _warm = self.steps.pop()
        self.step_comm.pop()
        self.steps_started -= 1
        self.calls[self.outside] -= 1
        self.start_step()
        self._step_start = start
        self.calls[self.stack[1]] -= 1

    def enter_module(self, name: str, root: bool) -> int:
        """Enter a module's forward; a root module at step level enters the forward phase."""
        if root:
            self._activity()
            if self._at_step_level() and self.name[self.stack[-1]] != "forward":
                self._switch_phase("forward", sticky=True)
        return self.push(name, K_MODULE)

    def enter_leaf(self, name: str, kind: str) -> int:
        """Enter a collective or op under the current context."""
        if self.manual and kind == K_COMM:
            self._activity()
        if self.in_step and len(self.stack) == _PHASE_LEVEL:
            self._switch_phase(OTHER, sticky=True)
        return self.push(name, kind)

    def leaf_here(self, name: str, kind: str) -> int:
        """The context ``name`` under the current one, counted, without a transition.

        For events reported from other threads (a comm hook on an autograd
        device thread): they get calls and metrics but no time.
        """
        c = self.child(self.stack[-1], name, kind)
        self.calls[c] += 1
        return c

    # --------------------------------------------------------------- output
    def finish(self) -> None:
        """Stop the clock; a running step is closed and counted in :attr:`partial_steps`."""
        self.tick()
        if self.in_step:
            self.stack[1:] = [self.outside]
            self.in_step = False
            self.partial_steps += 1

    def columns(self) -> dict[str, Any]:
        """Parent, name, kind and dense metric columns of every context."""
        n = len(self.parent)
        metrics: dict[str, list[float]] = {"time": list(self.time), "calls": list(self.calls)}
        for m, d in self.extra.items():
            col = [0.0] * n
            for c, v in d.items():
                col[c] = v
            metrics[m] = col
        return {"parent": self.parent, "name": self.name, "kind": self.kind, "metrics": metrics}

    def to_tree(self, meta: dict[str, Any] | None = None):
        """The recorded contexts as a :class:`cctviz.Tree` (call :meth:`finish` first)."""
        from ..model.tree import Tree

        cols = self.columns()
        meta = dict(meta or {})
        rules = {m: "max" for m in sorted(self.max_metrics)}  # peaks: max over a subtree
        if rules:
            meta["aggregation"] = {**meta.get("aggregation", {}), **rules}
        return Tree.from_parents(
            cols["parent"], cols["name"], cols["metrics"], kind=cols["kind"], meta=meta
        )
