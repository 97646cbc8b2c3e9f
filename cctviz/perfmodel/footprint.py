"""Memory per rank by term: the model states a strategy leaves on each rank,
to the byte, from the model's parameter shapes.

:func:`model_states` gives, per rank, the parameters, gradients and optimizer
states as the tensors hold them: what the runtime measures after the first
optimizer step (``state_params``, ``state_grads``, ``state_optimizer`` in a
run's profiles; :mod:`cctviz.runtime.states`), so that the two can be compared
byte for byte. The optimizer's per-parameter state is given by its layout
(:class:`OptimizerLayout`: which states are shaped like the parameter, which
are scalars), as the runtime records it from the run, or by name.

Strategies (names as :class:`~.analytic.ParallelSpec`'s):

- ``"none"``, ``"ddp"``: every rank holds every parameter, its gradient and its
  states;
- ``"zero1"``: torch's ``ZeroRedundancyOptimizer``: parameters and gradients
  everywhere, each parameter's optimizer states on one rank (the largest
  parameters first, each to the rank with the fewest elements so far);
- ``"fsdp"`` (FSDP2, ``fully_shard``): each parameter's dim 0 in ``world_size``
  chunks of ``ceil(dim0 / world_size)`` rows. A rank's parameter is its chunk
  padded to that size, and so is its gradient (a view of the unit's padded
  reduce-scatter output); its optimizer states have the chunk's own rows (the
  last ranks' may have fewer, or none).

Others (``"zero2"``, ``"zero3"``, ``"fsdp1"``, tensor and pipeline parallel)
are refused by name: their layouts have not been measured here.

Example:
    >>> spec = ModelSpec.from_shapes({"lin.weight": (5, 3), "lin.bias": (5,)})
    >>> model_states(spec, "fsdp", 2)["params [B]"].tolist()  # 3 rows of 4 a rank
    [48, 48]
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..model.formats import STATE_FACTS
from ..model.tables import UnitTable, with_units
from .analytic import ModelSpec, _assign_units, fsdp_padded_numel, module_path

#: the strategies :func:`model_states` models to the byte
STRATEGIES = ("none", "ddp", "zero1", "fsdp")
#: the columns of :func:`model_states`, bytes
COLUMNS = ("params [B]", "grads [B]", "optimizer [B]", "total [B]")
#: a run's measured model states per rank (its profiles' columns: the runtime's)
STATE_COLUMNS = STATE_FACTS


@dataclass(frozen=True)
class OptimizerLayout:
    """An optimizer's state per parameter: ``like`` the names of the states
    shaped like the parameter (its dtype unless ``itemsize`` says), ``scalars``
    ``{name: bytes}`` of the others (Adam's ``step``: a float32 scalar, 4).

    >>> OptimizerLayout.named("adamw")
    OptimizerLayout(like=('exp_avg', 'exp_avg_sq'), scalars=(('step', 4),), itemsize=None)
    """

    like: tuple[str, ...] = ()
    scalars: tuple[tuple[str, int], ...] = ()
    itemsize: int | None = None

    @property
    def scalar_bytes(self) -> int:
        return sum(b for _, b in self.scalars)

    @classmethod
    def named(cls, name: str) -> OptimizerLayout:
        """torch's optimizers by name (case ignored): ``adam``/``adamw``
        (``exp_avg``, ``exp_avg_sq``, a float32 ``step``), ``sgd`` (none),
        ``sgd_momentum`` (``momentum_buffer``)."""
        known = {
            "adam": cls(("exp_avg", "exp_avg_sq"), (("step", 4),)),
            "adamw": cls(("exp_avg", "exp_avg_sq"), (("step", 4),)),
            "sgd": cls(),
            "sgd_momentum": cls(("momentum_buffer",)),
        }
        got = known.get(name.lower())
        if got is None:
            raise ValueError(
                f"optimizer {name!r}: give its layout (OptimizerLayout) or one of {sorted(known)}"
            )
        return got

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> OptimizerLayout:
        """From the runtime's record (``{state: "like"`` or bytes``}``)."""
        like = tuple(k for k, v in record.items() if v == "like")
        scalars = tuple((k, int(v)) for k, v in record.items() if v != "like")
        return cls(like, scalars)


def model_states(
    spec: ModelSpec,
    strategy: str,
    world_size: int = 1,
    optimizer: str | OptimizerLayout = "adamw",
) -> UnitTable:
    """Bytes of parameters, gradients and optimizer states on each rank (module
    docstring): one row per rank, :data:`COLUMNS`.

    Args:
        spec: the model (its ``parameters``: shapes, element sizes, trainable).
        strategy: one of :data:`STRATEGIES`.
        world_size: the data-parallel ranks.
        optimizer: an :class:`OptimizerLayout` or a name for
            :meth:`OptimizerLayout.named`.
    """
    if strategy not in STRATEGIES:
        raise ValueError(
            f"strategy {strategy!r}: model states are modelled for {STRATEGIES}; "
            "zero2, zero3, fsdp1, tensor and pipeline parallel are not"
        )
    if world_size < 1 or int(world_size) != world_size:
        raise ValueError(f"world_size must be a positive integer, not {world_size!r}")
    if not spec.parameters:
        raise ValueError("model_states needs the model's parameter shapes (ModelSpec.parameters)")
    layout = (
        optimizer if isinstance(optimizer, OptimizerLayout) else OptimizerLayout.named(optimizer)
    )
    shapes = [p.shape for p in spec.parameters]
    item = np.array([p.itemsize for p in spec.parameters], dtype=np.int64)
    train = np.array([p.trainable for p in spec.parameters], dtype=bool)
    n = int(world_size)
    if strategy == "fsdp":
        held, own = _fsdp_rows(shapes, n)  # (elements per rank: padded, own rows)
    else:
        numel = np.array([math.prod(s) for s in shapes], dtype=np.int64)
        held = own = np.broadcast_to(numel, (n, numel.size))
    params = (held * item).sum(axis=1)
    grads = (held * item * train).sum(axis=1)  # (FSDP2: views of the padded reduce-scatter output)
    opt_item = item if layout.itemsize is None else np.full_like(item, layout.itemsize)
    has_state = own * train > 0  # (a rank with no rows of a parameter keeps no state)
    per = has_state * (own * opt_item * len(layout.like) + layout.scalar_bytes)
    if strategy == "zero1":
        per = per * (_zero1_owner(shapes, n)[None, :] == np.arange(n)[:, None])
    optim = per.sum(axis=1)
    table = pd.DataFrame(
        {"params [B]": params, "grads [B]": grads, "optimizer [B]": optim},
        index=pd.RangeIndex(n, name="rank"),
    ).astype(np.int64)
    table["total [B]"] = table.sum(axis=1)
    return with_units(table, {c: "B" for c in COLUMNS})


def strategy_buffers(model: ModelSpec, strategy: str, units: Sequence[str] = ()) -> int:
    """The bytes a strategy holds beside the model states when a step peaks
    (as backward begins, every activation saved): DDP's reducer (``ddp``,
    ``zero1``) keeps a flat bucket buffer of every trainable gradient (its
    default, ``gradient_as_bucket_view=False``); FSDP2 (``fsdp``) holds the
    unsharded parameters of the root's own module (left gathered after
    forward) and of two units, the one backward runs in and the next one it
    prefetches (the largest unit, twice). ``units``: FSDP's wrapped module
    paths ("" the root).

    >>> spec = ModelSpec.from_shapes({"a.weight": (4, 4), "b.weight": (2, 4), "head": (3,)})
    >>> strategy_buffers(spec, "ddp"), strategy_buffers(spec, "fsdp", ["a", "b"])
    (108, 140)
    """
    if strategy in ("ddp", "zero1"):
        return int(sum(p.numel * p.itemsize for p in model.trainable))
    if strategy != "fsdp" or not model.parameters:
        return 0
    owner = np.array(_assign_units(model.parameters, [module_path(u) for u in units]))
    nbytes = np.array([p.numel * p.itemsize for p in model.parameters], dtype=np.int64)
    root = int(nbytes[owner == ""].sum())
    per_unit = [int(nbytes[owner == u].sum()) for u in set(owner.tolist()) - {""}]
    return root + 2 * max(per_unit, default=0)


def run_strategy(meta: Mapping[str, Any]) -> str:
    """The strategy (:data:`STRATEGIES`' names) of a runtime run from its meta:
    the wrapper the runtime saw (``DDP``, ``FSDP2``, ``FSDP``, ``none``) and the
    optimizer (``ZeroRedundancyOptimizer(...)``: ZeRO-1).

    >>> run_strategy({"strategy": "DDP", "optimizer": "ZeroRedundancyOptimizer(AdamW)"})
    'zero1'
    """
    wrapper = str(meta.get("strategy") or "none")
    if str(meta.get("optimizer", "")).startswith("ZeroRedundancyOptimizer("):
        return "zero1"
    names = {"DDP": "ddp", "FSDP2": "fsdp", "FSDP": "fsdp1", "none": "none"}
    if wrapper not in names:
        raise ValueError(f"the run's strategy {wrapper!r} is not one cctviz knows")
    return names[wrapper]


def states_of_run(ens: Any) -> UnitTable:
    """A runtime run's model states per rank, measured (the runtime's, after
    the first optimizer step) beside :func:`model_states` from the run's own
    record of the model, its strategy and its optimizer: per rank and term
    (``params``, ``grads``, ``optimizer``) ``measured [B]``, ``predicted [B]``
    and ``error [B]`` (predicted less measured).

    Raises ValueError naming what the run lacks (runs recorded before cctviz
    measured model states, or without the model's description)."""
    meta = ens.meta
    missing = [k for k in ("model_spec", "optimizer_layout") if not meta.get(k)]
    prof = ens.profiles
    missing += [k for k in STATE_COLUMNS if k not in prof.columns]
    if missing:
        raise ValueError(
            f"the run lacks {missing}: re-run it with this cctviz (`cctviz run`), whose "
            "runtime records the model and, after the first optimizer step, its states"
        )
    spec = ModelSpec.from_dict(meta["model_spec"])
    world = int(meta.get("world_size") or len(prof))
    layout = OptimizerLayout.from_record(meta["optimizer_layout"])
    predicted = model_states(spec, run_strategy(meta), world, layout)
    prof = prof.sort_values("rank")
    ranks = prof["rank"].to_numpy(dtype=np.int64)
    terms = ("params", "grads", "optimizer")
    want = predicted.loc[ranks, [f"{t} [B]" for t in terms]].to_numpy()
    table = pd.DataFrame({
        "rank": np.repeat(ranks, len(terms)),
        "term": np.tile(terms, ranks.size),
        "measured [B]": prof[list(STATE_COLUMNS)].to_numpy(dtype=np.float64).ravel(),
        "predicted [B]": want.ravel(),
    })  # fmt: skip
    table["error [B]"] = table["predicted [B]"] - table["measured [B]"]
    return with_units(table, {c: "B" for c in ("measured [B]", "predicted [B]", "error [B]")})


def _fsdp_rows(shapes: Sequence[Sequence[int]], n: int) -> tuple[np.ndarray, np.ndarray]:
    """Per rank and parameter: the elements of its padded chunk, and of the
    rows it owns (``torch.chunk`` of dim 0: ``ceil(dim0 / n)`` rows a chunk)."""
    dim0 = np.array([s[0] if len(s) else 1 for s in shapes], dtype=np.int64)
    numel = np.array([math.prod(s) for s in shapes], dtype=np.int64)
    rest = np.where(dim0 > 0, numel // np.maximum(dim0, 1), 0)
    chunk = -(-dim0 // n)
    start = np.arange(n, dtype=np.int64)[:, None] * chunk[None, :]
    rows = np.clip(dim0[None, :] - start, 0, chunk[None, :])
    held = fsdp_padded_numel(shapes, n) // n  # (the all-gather's padding, per rank)
    return np.broadcast_to(held, (n, dim0.size)), rows * rest[None, :]


def _zero1_owner(shapes: Sequence[Sequence[int]], n: int) -> np.ndarray:
    """The rank that holds each parameter's optimizer states under torch's
    ``ZeroRedundancyOptimizer``: the parameters by size, largest first (ties
    in their order), each to the rank with the fewest elements so far (the
    first such). A loop over the parameters (thousands, not millions)."""
    numel = [math.prod(s) for s in shapes]
    sizes = [0] * n
    owner = np.zeros(len(numel), dtype=np.int64)
    for k in sorted(range(len(numel)), key=numel.__getitem__, reverse=True):
        r = sizes.index(min(sizes))
        owner[k] = r
        sizes[r] += numel[k]
    return owner


__all__ = [
    "COLUMNS",
    "STRATEGIES",
    "OptimizerLayout",
    "model_states",
    "run_strategy",
    "states_of_run",
    "strategy_buffers",
]
