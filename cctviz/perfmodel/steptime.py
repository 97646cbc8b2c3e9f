"""Step time of another configuration, from one measured run (issue 37).

:meth:`~.plan.Plan.predict` calls :func:`step_terms`. Each context of the
measured steps keeps its measured time, scaled to the new configuration term
by term:

- **forward modules**: each module context's measured time grows in
  proportion to its work: a call's matrix products (``flops``: 2 x tokens x
  the module's own weight matrices) and output ``bytes`` with the tokens,
  attention's seq x seq work (``s2``: 4 x batch x seq² x width, for modules
  whose class is an attention) with batch x seq². How much of a context's
  time is ``s2`` comes from a flop's and a byte's cost, fitted (non-negative
  least squares) across the run's own module contexts. An FSDP unit's own
  context (its hooks: gathering, resharding) keeps its measured time.
- **backward**: as the forward modules together (the runtime's light mode
  keeps backward as one context).
- **optimizer**: with the optimizer states the rank holds (the footprint
  model's), once per step.
- **data**: per sample; **other** step-level work: constant.
- **communication**: bytes by :func:`~.analytic.communication`, times by an
  alpha-beta :class:`~.analytic.Interconnect` (fitted to the run's own
  collectives, or named) scaled so that the run's own collectives take what
  they took (:func:`calibrated`). On CPU the collectives' work takes cores
  from the computation, so the time an asynchronous collective ran beside
  backward counts as communication, and every collective as exposed. On a
  GPU, the run's own collectives keep the share of their time it waited for;
  under another strategy, the gradient all-reduce of DDP's reducer (DDP,
  ZeRO-1) overlaps the last micro-batch's backward except its last bucket, and
  every other collective is exposed.

Forward, backward and data run once per micro-batch (``grad_accum``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd

from ..model import units as _units
from ..model.ensemble import Ensemble
from .analytic import (
    INTERCONNECTS,
    Interconnect,
    ModelSpec,
    ParallelSpec,
    _row,
    collective_time,
    communication,
    ddp_buckets,
    module_path,
)

#: phases of a runtime step (``<script>/step/<phase>/...``) and what scales them
PHASES = ("forward", "backward", "optimizer", "data")
#: module classes whose calls do attention's seq x seq work
ATTENTION = re.compile(r"attn|attention", re.IGNORECASE)
#: the fitted costs: seconds per flop (matrix products and attention's seq x
#: seq work alike) and per output byte
TERMS = ("flops", "bytes")


@dataclass(frozen=True)
class Config:
    """One configuration: the data-parallel ``strategy`` on ``world_size``
    ranks, a micro-batch of ``batch`` x ``seq`` per rank, ``grad_accum``
    micro-batches per step."""

    strategy: str
    world_size: int
    batch: int
    seq: int | None
    grad_accum: int = 1


def per_step(ens: Ensemble, metric: str) -> np.ndarray:
    """``metric`` of each node per measured step, the mean over the live ranks
    (absent counts 0); zeros where the run lacks the metric."""
    if metric not in ens.exc_metrics:
        return np.zeros(len(ens.tree))
    steps = pd.to_numeric(ens.profiles["steps"], errors="coerce").to_numpy(dtype=np.float64)
    live = np.asarray(ens.live, dtype=bool) & (steps > 0)
    if not live.any():
        raise ValueError("the run has no rank with measured steps")
    values = np.nan_to_num(ens.values(metric)[:, live]) / steps[live]
    return values.mean(axis=1)


def step_contexts(ens: Ensemble) -> pd.DataFrame:
    """The contexts of the measured steps: ``context`` (call path), ``phase``
    (forward, backward, optimizer, data or other; ``comm`` for collectives),
    ``time [s]`` and ``calls`` per step (the ranks' mean), and ``hidden [s]``:
    how long the context's asynchronous collectives ran beyond the time the
    rank spent in it (``comm_time`` less ``time``)."""
    tree = ens.tree
    paths = tree.callpaths.to_numpy(dtype=object)
    parts = [p.split("/") for p in paths]
    in_step = np.array([len(p) > 2 and p[1] == "step" for p in parts])
    kinds = tree.nodes["kind"].astype(str).to_numpy() if "kind" in tree.nodes else None
    phase = np.array([p[2] if len(p) > 2 and p[2] in PHASES else "other" for p in parts])
    if kinds is not None:
        phase = np.where(kinds == "comm", "comm", phase)
    to_s = _units.factor(tree.unit("time") or "ns", "s")
    time = per_step(ens, "time") * to_s
    ran = per_step(ens, "comm_time") * _units.factor(tree.unit("comm_time") or "ns", "s")
    frame = pd.DataFrame({
        "node": np.arange(len(tree)), "context": paths, "phase": phase, "time [s]": time,
        "calls": per_step(ens, "calls"), "hidden [s]": np.maximum(ran - time, 0.0),
    })  # fmt: skip
    return frame[in_step & (frame["time [s]"] > 0)].reset_index(drop=True)


def module_work(shapes: Mapping[str, Mapping[str, Any]], model: ModelSpec) -> pd.DataFrame:
    """Per module context (:attr:`Plan.modules`' order), the work of one call at
    the run's sizes: ``flops`` (matrix products), ``bytes`` (outputs), ``s2``
    (attention's seq x seq work).

    >>> from cctviz.perfmodel.analytic import ModelSpec
    >>> spec = ModelSpec.from_shapes({"fc.weight": (4, 3)}, name="M")
    >>> call = {"in": [[[2, 5, 3], "float32"]], "out": [[[2, 5, 4], "float32"]]}
    >>> work = module_work({"t/M": {**call, "class": "M"}, "t/M/fc": {**call, "class": "Linear"}}, spec)
    >>> work[["flops", "bytes", "s2"]].to_numpy().tolist()  # fc: 2 x 10 tokens x 12 weights
    [[0.0, 160.0, 0.0], [240.0, 160.0, 0.0]]
    """
    matrices: dict[str, int] = {}
    for p in model.parameters:
        if len(p.shape) >= 2:
            matrices[p.module] = matrices.get(p.module, 0) + p.numel
    root = root_context(shapes)
    rows = []
    for context, rec in shapes.items():
        ins = rec.get("in") or []
        dims, dtype = (ins[0][0], ins[0][1]) if ins else ([], "")
        token_ids = "int" in dtype
        tokens = math.prod(dims) if token_ids else math.prod(dims[:-1]) if dims else 0
        flops = 0.0 if token_ids else 2.0 * tokens * matrices.get(module_of(context, root), 0)
        s2 = 0.0
        if ATTENTION.search(str(rec.get("class", ""))) and len(dims) == 3:
            b, s, width = dims
            s2 = 4.0 * b * s * s * width
        out = float(sum(tensor_bytes(s, d) for s, d in rec.get("out") or []))
        rows.append({"context": context, "module": module_of(context, root), "flops": flops,
                     "bytes": out, "s2": s2})  # fmt: skip
    return pd.DataFrame(rows, columns=["context", "module", "flops", "bytes", "s2"])


def root_context(shapes: Mapping[str, Any]) -> str:
    """The model's root module context among ``module_shapes``' call paths: the
    shortest.

    >>> root_context({"t/step/forward/GPT/wte": {}, "t/step/forward/GPT": {}})
    't/step/forward/GPT'
    """
    return min(shapes, key=lambda c: c.count("/"))


def module_of(context: str, root: str) -> str:
    """A module context's path in the model: its call path below the model's
    root context, segments joined by dots (the root: "").

    >>> module_of("t/step/forward/GPT/blocks.0/attn", "t/step/forward/GPT")
    'blocks.0.attn'
    """
    return context[len(root) :].lstrip("/").replace("/", ".")


def tensor_bytes(shape: list, dtype: str) -> int:
    """Bytes of a tensor of ``shape`` and torch ``dtype`` (its name).

    >>> tensor_bytes([8, 64], "int64"), tensor_bytes([2, 3], "bfloat16")
    (4096, 12)
    """
    n = math.prod(int(d) for d in shape)
    size = _ITEMSIZE.get(dtype)
    if size is None:
        size = np.dtype(dtype).itemsize  # (the names numpy shares with torch)
    return n * size


#: bytes per element of torch's dtypes that numpy lacks
_ITEMSIZE = {"bfloat16": 2, "complex32": 4, "float8_e4m3fn": 1, "float8_e5m2": 1,
             "float8_e4m3fnuz": 1, "float8_e5m2fnuz": 1}  # fmt: skip


def repeated_blocks(model: ModelSpec) -> tuple[str, ...]:
    """The model's repeated blocks (the modules at the first numbered level of
    its parameters' paths: ``blocks.0``, ``blocks.1``...), what FSDP wraps
    one by one; () where there are none.

    >>> from cctviz.perfmodel.analytic import ModelSpec
    >>> repeated_blocks(ModelSpec.from_shapes({"h.0.fc.weight": (2, 2), "h.1.fc.weight": (2, 2),
    ...                                         "head.weight": (2, 2)}))
    ('h.0', 'h.1')
    """
    found: dict[str, None] = {}
    for p in model.parameters:
        parts = p.module.split(".")
        for k, part in enumerate(parts):
            if part.isdigit():
                found[".".join(parts[: k + 1])] = None
                break
    depth = min((u.count(".") for u in found), default=0)
    return tuple(u for u in found if u.count(".") == depth)


def fit_costs(work: pd.DataFrame) -> pd.Series:
    """Seconds per unit of each of :data:`TERMS`, fitted to the module
    contexts' measured time per step (``work`` joined with
    :func:`step_contexts`: ``time [s]``, ``calls``), non-negative least squares
    on columns scaled to their largest value: what a flop and a byte cost on
    the run's machine, by the run's own contexts. They split each context's
    time into the part that grows with the tokens and the part that grows with
    batch x seq² (:func:`forward_ratio`)."""
    from scipy.optimize import nnls

    if work.empty:
        return pd.Series(0.0, index=list(TERMS))  # (no context to scale: nothing grows)
    calls = work["calls"].to_numpy(dtype=np.float64)
    flops = (work["flops"] + work["s2"]).to_numpy(dtype=np.float64)
    design = np.column_stack([calls * flops, calls * work["bytes"].to_numpy(np.float64)])
    scale = np.abs(design).max(axis=0)
    scale[scale == 0] = 1.0
    coef, _ = nnls(design / scale, work["time [s]"].to_numpy(dtype=np.float64))
    return pd.Series(coef / scale, index=list(TERMS))


def scaled_forward(work: pd.DataFrame, cost: pd.Series, tokens: float, longer: float) -> float:
    """The module contexts' time per step (``work``: :func:`module_work` joined
    with :func:`step_contexts`) at ``tokens`` x the run's tokens and ``longer``
    x its sequence: each context's measured time in proportion to its work,
    its seq x seq share (``s2``, by ``cost``) growing by ``tokens x longer``.

    >>> work = pd.DataFrame({"flops": [4.0, 0.0], "bytes": [0.0, 2.0], "s2": [0.0, 2.0],
    ...                      "time [s]": [1.0, 1.0], "calls": [1.0, 1.0]})
    >>> scaled_forward(work, pd.Series({"flops": 1.0, "bytes": 1.0}), 2.0, 2.0)  # 2 + 2 x (1 + 1/2)
    5.0
    """
    flops = cost["flops"] * work["s2"].to_numpy(dtype=np.float64)
    whole = (cost["flops"] * (work["flops"] + work["s2"]) + cost["bytes"] * work["bytes"]).to_numpy(
        dtype=np.float64
    )
    share = np.divide(flops, whole, out=np.zeros_like(whole), where=whole > 0)
    t = work["time [s]"].to_numpy(dtype=np.float64)
    return float((t * tokens * (1.0 + share * (longer - 1.0))).sum())


def resolve_interconnect(ens: Ensemble, interconnect: Any) -> Interconnect:
    """``interconnect`` as an :class:`~.analytic.Interconnect`: one given, a
    name of :data:`~.analytic.INTERCONNECTS`, or (None) fitted to the run's
    own collectives (:func:`~.compare.fit_interconnect`)."""
    if isinstance(interconnect, Interconnect):
        return interconnect
    if isinstance(interconnect, str):
        if interconnect not in INTERCONNECTS:
            raise ValueError(
                f"interconnect {interconnect!r} is not one of {sorted(INTERCONNECTS)}: name "
                "one, pass an Interconnect(name, alpha, bandwidth), or None to fit the run's"
            )
        return INTERCONNECTS[interconnect]
    if interconnect is not None:
        raise TypeError(
            f"interconnect: a name or an Interconnect, not {type(interconnect).__name__}"
        )
    from .compare import fit_interconnect

    try:
        return fit_interconnect(ens)
    except ValueError as e:
        raise ValueError(
            f"the run's collectives give no interconnect to predict with ({e}): pass "
            f"interconnect= one of {sorted(INTERCONNECTS)} or an Interconnect"
        ) from None


def calibrated(
    net: Interconnect, model: ModelSpec, par: ParallelSpec, measured_s: float
) -> Interconnect:
    """``net`` with the bandwidth that makes the run's own collectives (``par``)
    take the ``measured_s`` they took per step, its latency kept (a DDP run's
    calls are all alike: they cannot tell the two apart); where even the
    latency alone is more than was measured, latency and bandwidth scaled
    alike. ``net`` itself where the run has no collectives.

    >>> from cctviz.perfmodel.analytic import ModelSpec, ParallelSpec
    >>> spec = ModelSpec.from_shapes({"w": (250_000,)})  # 1 MB of gradients
    >>> net = calibrated(Interconnect("x", 1e-3, 1e9), spec, ParallelSpec(2), 0.003)
    >>> net.name, net.bandwidth  # 1 ms + 1 MB / bandwidth = 3 ms
    ('x (bandwidth from the run)', 500000000.0)
    """
    comm = comm_seconds(model, par, net)
    predicted = float(comm["time [s]"].sum())
    if predicted <= 0 or measured_s <= 0:
        return net
    latency = float(comm["calls"].sum()) * net.alpha
    bus = float(comm["bus_bytes"].sum())
    if measured_s > latency and bus > 0:
        return Interconnect(
            f"{net.name} (bandwidth from the run)", net.alpha, bus / (measured_s - latency)
        )
    k = measured_s / predicted
    return Interconnect(f"{net.name} (x{k:.3g}, from the run)", net.alpha * k, net.bandwidth / k)


def collectives(model: ModelSpec, par: ParallelSpec) -> pd.DataFrame:
    """The collectives of a step (:func:`~.analytic.communication`'s rows); ZeRO-1
    as torch's ``ZeroRedundancyOptimizer`` does it (the strategy the runtime
    and the footprint model call ``zero1``): DDP's all-reduce of the gradients,
    then each parameter broadcast by the rank that updated it, one call each.

    >>> from cctviz.perfmodel.analytic import ModelSpec, ParallelSpec
    >>> spec = ModelSpec.from_shapes({"a.w": (4, 4), "b.w": (4,)})
    >>> collectives(spec, ParallelSpec(2, "zero1"))[["context", "kind", "calls"]]
         context        kind  calls
    0   backward  all_reduce      1
    1  optimizer   broadcast      2
    """
    if par.strategy != "zero1":
        return communication(model, par)
    rows = communication(model, replace(par, strategy="ddp"))
    if par.dp <= 1:
        return rows
    weights = [p.numel * p.itemsize for p in model.trainable]
    cast = _row("optimizer", "broadcast", len(weights), sum(weights), par.dp,
                "parameters (from their owners)")  # fmt: skip
    return pd.concat([rows, pd.DataFrame([cast])], ignore_index=True)


def comm_seconds(model: ModelSpec, par: ParallelSpec, net: Interconnect) -> pd.DataFrame:
    """:func:`collectives` of ``par`` with each row's ``time [s]``."""
    comm = collectives(model, par).copy()
    comm["time [s]"] = collective_time(comm, net).to_numpy(dtype=np.float64)
    return comm


def exposed_comm(
    model: ModelSpec,
    par: ParallelSpec,
    net: Interconnect,
    comm: pd.DataFrame,
    backward_s: float,
) -> float:
    """Seconds of ``par``'s collectives (``comm``, :func:`comm_seconds`) a
    step waits for on a GPU under a strategy the run did not measure: the
    gradient all-reduce of DDP's reducer (DDP and ZeRO-1) overlaps the last
    micro-batch's backward (``backward_s`` / micro-batches) except its last
    bucket; every other collective is exposed."""
    total = float(comm["time [s]"].sum())
    reducer = (comm["kind"] == "all_reduce") & (comm["context"] == "backward")
    if par.strategy not in ("ddp", "zero1") or not reducer.any():
        return total
    sizes = [p.numel * p.itemsize for p in reversed(model.trainable)]
    last = ddp_buckets(sizes, par.bucket_bytes, par.first_bucket_bytes)[-1] if sizes else 0
    last_s = net.time("all_reduce", last, par.dp)
    overlapped = float(comm.loc[reducer, "time [s]"].sum())
    window = backward_s / max(par.micro_batches, 1)
    return total - overlapped + last_s + max(0.0, overlapped - last_s - window)


def parallel_of(
    config: Config, model: ModelSpec, meta: Mapping[str, Any], units: Any = None
) -> ParallelSpec:
    """The :class:`~.analytic.ParallelSpec` of ``config`` (the run's DDP bucket
    size, :meth:`~.analytic.ParallelSpec.from_meta`); FSDP's units: ``units``,
    else the run's, else the model's, else its repeated blocks."""
    kw: dict[str, Any] = {"micro_batches": config.grad_accum}
    if units is None and config.strategy in ("fsdp", "fsdp1"):
        units = meta.get("fsdp_units") or model.fsdp_units or repeated_blocks(model) or None
    if units is not None:
        kw["fsdp_units"] = tuple(units)
    return ParallelSpec.from_meta(
        meta, world_size=config.world_size, strategy=config.strategy, **kw
    )


@dataclass(frozen=True)
class Measured:
    """What :func:`step_terms` predicts from: the run, its module contexts'
    shapes (the runtime's ``module_shapes``), its model, its configuration
    and its median step time."""

    ens: Ensemble
    shapes: Mapping[str, Mapping[str, Any]]
    model: ModelSpec
    config: Config
    step_s: float

    @cached_property
    def contexts(self) -> pd.DataFrame:
        """:func:`step_contexts` of the run, made once for every prediction."""
        return step_contexts(self.ens)


def fsdp_units(run: Measured) -> tuple[str, ...]:
    """The modules FSDP wraps in ``run`` (their paths; "" the root), () where
    it ran without FSDP."""
    if run.config.strategy not in ("fsdp", "fsdp1"):
        return ()
    par = parallel_of(run.config, run.model, run.ens.meta)
    return tuple(module_path(u) for u in par.fsdp_units or ())


def step_terms(
    run: Measured,
    new: Config,
    interconnect: Any = None,
    *,
    units: Any = None,
    optimizer_scale: float = 1.0,
) -> tuple[dict[str, float], pd.DataFrame]:
    """The terms of one rank's step at ``new`` (seconds: forward, backward,
    optimizer, data, other, exposed communication) and ``new``'s collectives
    (:func:`comm_seconds`), from ``run`` as the module docstring says.
    ``optimizer_scale``: the optimizer states the rank holds at ``new`` over
    those it held."""
    base = run.config
    ctx = run.contexts
    time = ctx.groupby("phase")["time [s]"].sum()
    longer = new.seq / base.seq if base.seq else 1.0
    tokens = new.batch / base.batch * longer
    micro = new.grad_accum / base.grad_accum

    work = module_work(run.shapes, run.model).merge(ctx, on="context")
    modules = float(work["time [s]"].sum())
    # an FSDP unit's own time is mostly its hooks (gathering, resharding): as measured
    hooks = work["module"].isin(fsdp_units(run)).to_numpy()
    kept = float(work["time [s]"][hooks].sum())
    grown = scaled_forward(work[~hooks], fit_costs(work[~hooks]), tokens, longer) + kept
    ratio = grown / modules if modules > 0 else tokens
    extra = grown - modules

    meta = run.ens.meta
    par_new = parallel_of(new, run.model, meta, units)
    par_base = parallel_of(base, run.model, meta)  # as the run ran
    same = collectives(run.model, par_new).equals(collectives(run.model, par_base))
    # the run's own collectives, as they ran, need no interconnect
    net = None if same and interconnect is None else resolve_interconnect(run.ens, interconnect)
    comm_new = comm_seconds(run.model, par_new, net) if net else collectives(run.model, par_new)
    exposed = float(time.get("comm", 0.0))
    backward = float(time.get("backward", 0.0))
    # backward's asynchronous collectives (DDP's buckets) ran longer than the rank
    # waited in them (comm_time less time): beside the computation
    under = (ctx["phase"] == "comm") & ctx["context"].str.contains("/backward/", regex=False)
    hidden = min(float(ctx.loc[under, "hidden [s]"].sum()), 0.5 * backward)
    serial = str(meta.get("device", "")) == "cpu"
    if serial:
        # on CPU the collectives' threads take the cores from the computation:
        # the time they ran beside backward was spent by it (at most half of it)
        backward -= hidden
        exposed += hidden
    backward *= micro * ratio
    if net is None:
        comm = exposed
    else:
        # the interconnect as the run's collectives ran: their whole time
        net = calibrated(net, run.model, par_base, exposed + (0.0 if serial else hidden))
        comm_new = comm_seconds(run.model, par_new, net)
        predicted = float(comm_new["time [s]"].sum())
        if serial:
            comm = predicted
        elif (new.strategy, new.world_size) == (base.strategy, base.world_size):
            ran = float(comm_seconds(run.model, par_base, net)["time [s]"].sum())
            comm = exposed * (predicted / ran if ran else 1.0)
        else:
            comm = exposed_comm(run.model, par_new, net, comm_new, backward)
    terms = {
        "forward [s]": micro * (float(time.get("forward", 0.0)) + extra),
        "backward [s]": backward,
        "optimizer [s]": float(time.get("optimizer", 0.0)) * optimizer_scale,
        "data [s]": float(time.get("data", 0.0)) * micro * new.batch / base.batch,
        "other [s]": float(time.get("other", 0.0)) + (run.step_s - float(time.sum())),
        "comm_exposed [s]": comm,
    }
    return terms, comm_new


__all__ = [
    "ATTENTION",
    "Config",
    "Measured",
    "PHASES",
    "TERMS",
    "calibrated",
    "collectives",
    "comm_seconds",
    "exposed_comm",
    "fit_costs",
    "fsdp_units",
    "module_work",
    "parallel_of",
    "module_of",
    "per_step",
    "repeated_blocks",
    "resolve_interconnect",
    "root_context",
    "scaled_forward",
    "step_contexts",
    "step_terms",
    "tensor_bytes",
]
