"""Analytical performance models: communication, time and memory per rank per step.

A model is described by a :class:`ModelSpec` (parameter count and element
sizes, optionally every parameter's shape and module path, transformer
dimensions when known) and a parallel layout by a :class:`ParallelSpec`
(world size, dp/tp/pp, ZeRO stage or FSDP, DDP bucket size). From them:

- :func:`communication`: collectives per rank per step, by kind and by the
  code context that issues them, in the runtime's units (``bytes`` = what
  the collective's tensors hold, per rank, as
  :mod:`cctviz.model.collectives` counts them; ``bus_bytes`` = bytes x
  nccl-tests' bus factor);
- :func:`collective_time`, :class:`Interconnect`, :func:`fit_alpha_beta`:
  the alpha-beta (Hockney) time of those collectives;
- :func:`model_state_memory`, :func:`activation_memory`, :func:`memory`:
  bytes per rank of parameters, gradients, optimizer states (ZeRO) and
  activations (Korthikanti et al.).

Sources (each function's docstring names the one its formula follows):

- ZeRO: Rajbhandari et al., "ZeRO: Memory Optimizations Toward Training
  Trillion Parameter Models", SC20, arXiv:1910.02054 (sections 3.1, 5, 7);
- PyTorch FSDP: Zhao et al., "PyTorch FSDP: Experiences on Scaling Fully
  Sharded Data Parallel", VLDB 2023, arXiv:2304.11277; FSDP2
  (``fully_shard``) as implemented in torch 2.13
  (``torch/distributed/fsdp/_fully_shard``: dim-0 sharding padded to a
  multiple of the world size, one all-gather/reduce-scatter per unit);
- PyTorch DDP: Li et al., "PyTorch Distributed", VLDB 2020, arXiv:2006.15704
  (gradient bucketing), and torch 2.13's reducer (first bucket 1 MiB, then
  ``bucket_cap_mb``, rebuilt in gradient-ready order after the first step);
- Megatron-LM: Shoeybi et al. 2019, arXiv:1909.08053 (tensor parallel: two
  all-reduces in forward, two in backward, per transformer layer);
  Narayanan et al., SC21, arXiv:2104.04473 (pipeline and 3D parallelism);
- activations: Korthikanti et al., "Reducing Activation Recomputation in
  Large Transformer Models", 2022, arXiv:2205.05198 (section 4, Table 2);
- bus bandwidth: nccl-tests ``doc/PERFORMANCE.md`` (factors in
  :func:`cctviz.model.collectives.bus_factor`);
- time: Hockney, "The communication challenge for MPP", Parallel Computing
  20 (1994): ``t = alpha + n / beta``.

Pure numpy/pandas: a torch module is read duck-typed
(``.named_parameters()``, ``.numel()``, ``.element_size()``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from ..model.collectives import bus_factor
from ..model.tables import UnitTable, with_units

__all__ = [
    "DDP_BUCKET_BYTES",
    "DDP_FIRST_BUCKET_BYTES",
    "INTERCONNECTS",
    "Interconnect",
    "MemoryEstimate",
    "ModelSpec",
    "ParallelSpec",
    "activation_memory",
    "collective_time",
    "communication",
    "ddp_buckets",
    "fit_alpha_beta",
    "fsdp_padded_numel",
    "memory",
    "model_state_memory",
    "module_path",
    "optimizer_state_factor",
]

MiB = 1 << 20
#: DDP's default ``bucket_cap_mb`` (25 MiB) and its first bucket (``dist._DEFAULT_FIRST_BUCKET_BYTES``)
DDP_BUCKET_BYTES = 25 * MiB
DDP_FIRST_BUCKET_BYTES = 1 * MiB

#: attribute segments of a parameter name that name a wrapper, not a part of
#: the model (as the runtime's module paths leave them out: runtime/hooks.py)
WRAPPER_SEGMENTS = frozenset({"_fsdp_wrapped_module", "_checkpoint_wrapped_module", "_orig_mod"})
_DDP_NAMES = ("DistributedDataParallel", "DataParallel")
_FSDP_BASES = ("FSDPModule", "FullyShardedDataParallel")


# --------------------------------------------------------------- descriptions
@dataclass(frozen=True)
class ParamInfo:
    """One parameter: its module path (runtime naming), name, shape, element size."""

    module: str
    name: str
    shape: tuple[int, ...]
    itemsize: int = 4
    trainable: bool = True

    @property
    def numel(self) -> int:
        return math.prod(self.shape)


def module_path(name: str, *, ddp: bool = False) -> str:
    """A parameter's or module's dotted name with wrapper segments left out, as
    the runtime names module contexts (``cctviz/runtime/hooks.py``,
    ``relative_names``): ``_fsdp_wrapped_module``, ``_checkpoint_wrapped_module``,
    ``_orig_mod`` anywhere, and DDP's leading ``module`` when ``ddp``.

    >>> module_path("module.blocks.0._fsdp_wrapped_module.attn.c_attn.weight", ddp=True)
    'blocks.0.attn.c_attn.weight'
    """
    segs = name.split(".") if name else []
    if ddp and segs and segs[0] == "module":
        segs = segs[1:]
    return ".".join(s for s in segs if s not in WRAPPER_SEGMENTS)


def unwrap_once(m: Any) -> Any:
    """The module one DDP/FSDP1/torch.compile wrapper inside ``m`` (``m`` if none).
    Duck-typed (no torch import); the runtime uses it too."""
    name = type(m).__name__
    if name in _DDP_NAMES and hasattr(m, "module"):
        return m.module
    if hasattr(m, "_fsdp_wrapped_module"):
        return m._fsdp_wrapped_module
    if name == "OptimizedModule" and hasattr(m, "_orig_mod"):
        return m._orig_mod
    return m


def inner_module(m: Any) -> Any:
    """The user's module behind DDP/FSDP1/torch.compile wrappers."""
    for _ in range(8):
        inner = unwrap_once(m)
        if inner is m:
            break
        m = inner
    return m


def module_class_name(m: Any) -> str:
    """Class name of the user's module (FSDP2's ``FSDPGPT`` -> ``GPT``)."""
    cls = type(inner_module(m))
    bases = [b.__name__ for b in cls.__bases__]
    if "FSDPModule" in bases:
        return next(b for b in bases if b != "FSDPModule")
    return cls.__name__


def _is_fsdp_unit(m: Any) -> bool:
    return any(b.__name__ in _FSDP_BASES for b in type(m).__mro__)


@dataclass(frozen=True)
class ModelSpec:
    """What a model is, for the models here.

    ``params``: parameter count (elements); ``weight_bytes``/``grad_bytes``:
    bytes per element of the weights and gradients as communicated (4 for
    fp32, 2 for fp16/bf16); ``parameters``: every parameter (optional; gives
    per-module contexts and FSDP's padding); ``fsdp_units``: module paths
    wrapped by FSDP ("" is the root); transformer dimensions when known.

    >>> ModelSpec(params=1000).grad_total
    4000
    """

    params: int
    weight_bytes: int = 4
    grad_bytes: int = 4
    name: str = "model"
    parameters: tuple[ParamInfo, ...] = ()
    fsdp_units: tuple[str, ...] | None = None
    layers: int | None = None
    hidden: int | None = None
    heads: int | None = None
    seq: int | None = None
    micro_batch: int | None = None
    vocab: int | None = None

    # ---------------------------------------------------------- derived
    @property
    def trainable(self) -> tuple[ParamInfo, ...]:
        return tuple(p for p in self.parameters if p.trainable)

    @property
    def grad_total(self) -> int:
        """Gradient bytes (trainable parameters x their element size)."""
        if self.parameters:
            return sum(p.numel * p.itemsize for p in self.trainable)
        return self.params * self.grad_bytes

    @property
    def weight_total(self) -> int:
        """Parameter bytes."""
        if self.parameters:
            return sum(p.numel * p.itemsize for p in self.parameters)
        return self.params * self.weight_bytes

    @property
    def n_tensors(self) -> int:
        """Trainable parameter tensors (0 when not known)."""
        return len(self.trainable)

    def module_params(self) -> dict[str, int]:
        """``{module path: parameters it owns directly}`` ("" is the root).

        >>> ModelSpec.from_shapes({"a.weight": (2, 3), "a.bias": (2,), "w": (4,)}).module_params()
        {'a': 8, '': 4}
        """
        out: dict[str, int] = {}
        for p in self.parameters:
            out[p.module] = out.get(p.module, 0) + p.numel
        return out

    # ---------------------------------------------------------- builders
    @classmethod
    def from_shapes(
        cls, shapes: Mapping[str, Sequence[int]], itemsize: int = 4, **kw: Any
    ) -> ModelSpec:
        """From ``{parameter name: shape}`` (dotted names, wrappers left out).

        >>> ModelSpec.from_shapes({"lin.weight": (3, 2)}).params
        6
        """
        ps = tuple(
            ParamInfo(
                n.rpartition(".")[0], n.rpartition(".")[2], tuple(int(d) for d in s), itemsize
            )
            for n, s in shapes.items()
        )
        return cls(
            params=sum(p.numel for p in ps),
            weight_bytes=itemsize,
            grad_bytes=itemsize,
            parameters=ps,
            **kw,
        )

    @classmethod
    def from_module(cls, module: Any, **kw: Any) -> ModelSpec:
        """Read an ``nn.Module`` duck-typed: ``named_parameters()`` (shared
        parameters once), each one's ``shape``, ``element_size()`` and
        ``requires_grad``; module paths in the runtime's naming (wrapper
        segments left out); FSDP units (modules whose class derives from
        ``FSDPModule`` or ``FullyShardedDataParallel``) when the module is
        sharded already. FSDP2's DTensor parameters report their global
        shape, so a ``fully_shard``-ed model reads like the plain one; FSDP1's
        flat parameters do not: read the model before wrapping it in FSDP1.
        ``kw`` sets the other fields (``seq``, ``micro_batch``...).

        >>> class P:  # a duck-typed parameter and module
        ...     def __init__(self, *shape): self.shape = shape; self.requires_grad = True
        ...     def element_size(self): return 4
        >>> class M:
        ...     def named_parameters(self): return [("lin.weight", P(3, 2)), ("lin.bias", P(3))]
        >>> spec = ModelSpec.from_module(M())
        >>> spec.params, spec.name, spec.module_params()
        (9, 'M', {'lin': 9})
        """
        ddp = type(module).__name__ in _DDP_NAMES
        seen: set[int] = set()
        ps: list[ParamInfo] = []
        for name, p in module.named_parameters():
            if id(p) in seen:
                continue
            seen.add(id(p))
            path = module_path(name, ddp=ddp)
            mod, _, leaf = path.rpartition(".")
            size = getattr(p, "element_size", None)
            itemsize = int(size()) if callable(size) else int(p.dtype.itemsize)
            shape = tuple(int(d) for d in p.shape)
            ps.append(
                ParamInfo(mod, leaf, shape, itemsize, bool(getattr(p, "requires_grad", True)))
            )
        units = None
        if hasattr(module, "named_modules"):
            found = [module_path(n, ddp=ddp) for n, m in module.named_modules() if _is_fsdp_unit(m)]
            units = tuple(dict.fromkeys(found)) or None
        item = ps[0].itemsize if ps else 4
        fields = dict(
            params=sum(p.numel for p in ps),
            weight_bytes=item,
            grad_bytes=item,
            name=module_class_name(module),
            parameters=tuple(ps),
            fsdp_units=units,
        )
        fields.update(kw)
        return cls(**fields)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready facts (for a run's metadata); :meth:`from_dict` reads them back.

        >>> s = ModelSpec.from_shapes({"w": (2, 2)}, name="M")
        >>> ModelSpec.from_dict(s.to_dict()) == s
        True
        """
        d: dict[str, Any] = {
            k: getattr(self, k)
            for k in ("params", "weight_bytes", "grad_bytes", "name", "layers", "hidden")
            + ("heads", "seq", "micro_batch", "vocab")
        }
        d["fsdp_units"] = list(self.fsdp_units) if self.fsdp_units is not None else None
        d["parameters"] = [
            [p.module, p.name, list(p.shape), p.itemsize, p.trainable] for p in self.parameters
        ]
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ModelSpec:
        """The inverse of :meth:`to_dict`."""
        kw = dict(d)
        kw["parameters"] = tuple(
            ParamInfo(m, n, tuple(s), int(i), bool(t)) for m, n, s, i, t in kw.get("parameters", [])
        )
        if kw.get("fsdp_units") is not None:
            kw["fsdp_units"] = tuple(kw["fsdp_units"])
        return cls(**kw)


@dataclass(frozen=True)
class ParallelSpec:
    """The parallel layout.

    ``strategy``: ``"ddp"``, ``"zero1"``, ``"zero2"``, ``"zero3"`` (flat
    partitions as in ZeRO/DeepSpeed), ``"fsdp"`` (FSDP2 ``fully_shard``:
    per-parameter dim-0 shards), ``"fsdp1"`` (flat parameter per unit) or
    ``"none"``; ``dp``: data-parallel degree (default ``world_size / (tp*pp)``);
    ``bucket_bytes``: DDP's ``bucket_cap_mb`` (or ZeRO's bucket) in bytes;
    ``micro_batches``: per step (pipeline micro-batches, or gradient
    accumulation steps: gradients are reduced once per step, parameters
    gathered once per micro-batch); ``act_bytes``: bytes per activation element
    (TP/PP); ``stage``: the pipeline stage whose traffic is counted (default: a
    middle one); ``fsdp_units``: module paths wrapped by FSDP (overrides the
    model's); ``reshard_root``: whether FSDP's root unit is re-gathered in
    backward (FSDP2's default: no).

    >>> ParallelSpec(world_size=8, tp=2).dp
    4
    """

    world_size: int = 1
    strategy: str = "ddp"
    tp: int = 1
    pp: int = 1
    dp_size: int | None = None
    bucket_bytes: int = DDP_BUCKET_BYTES
    first_bucket_bytes: int = DDP_FIRST_BUCKET_BYTES
    micro_batches: int = 1
    sequence_parallel: bool = False
    act_bytes: int = 2
    stage: int | None = None
    fsdp_units: tuple[str, ...] | None = None
    reshard_root: bool = False

    def __post_init__(self) -> None:
        if self.strategy not in ("none", "ddp", "zero1", "zero2", "zero3", "fsdp", "fsdp1"):
            raise ValueError(f"unknown strategy {self.strategy!r}")
        if self.world_size % (self.tp * self.pp) != 0:
            raise ValueError(f"world_size {self.world_size} is not a multiple of tp*pp")

    @classmethod
    def from_meta(cls, meta: Mapping[str, Any], **kw: Any) -> ParallelSpec:
        """From a runtime run's metadata (``world_size``, ``strategy`` as the
        runtime names it: ``DDP``, ``FSDP`` (FSDP1), ``FSDP2``, ``none``;
        ``bucket_bytes``/``fsdp_units`` when recorded); ``kw`` overrides.

        >>> ParallelSpec.from_meta({"world_size": 2, "strategy": "FSDP2"}).strategy
        'fsdp'
        """
        names = {"DDP": "ddp", "FSDP": "fsdp1", "FSDP2": "fsdp", "none": "none"}
        fields: dict[str, Any] = {
            "world_size": int(meta.get("world_size") or 1),
            "strategy": names.get(str(meta.get("strategy", "none")), "none"),
        }
        if meta.get("bucket_bytes"):
            fields["bucket_bytes"] = int(meta["bucket_bytes"])
        if meta.get("fsdp_units") is not None:
            fields["fsdp_units"] = tuple(meta["fsdp_units"])
        fields.update(kw)
        return cls(**fields)

    @property
    def dp(self) -> int:
        return self.dp_size or self.world_size // (self.tp * self.pp)

    @property
    def zero(self) -> int | str:
        """The ZeRO stage the strategy shards like (0-3) or ``"fsdp"``."""
        return {"none": 0, "ddp": 0, "zero1": 1, "zero2": 2, "zero3": 3}.get(self.strategy, "fsdp")


# ------------------------------------------------------------ communication
_PHASE_ORDER = {"forward": 0, "backward": 1, "optimizer": 2}
_COLUMNS = ["context", "kind", "calls", "bytes", "bus_bytes", "ranks", "what"]
_COMM_UNITS = {"bytes": "B", "bus_bytes": "B"}


def _row(context: str, kind: str, calls: int, nbytes: int, n: int, what: str) -> dict[str, Any]:
    return dict(
        context=context,
        kind=kind,
        calls=int(calls),
        bytes=int(nbytes),
        bus_bytes=float(nbytes) * bus_factor(kind, n),
        ranks=int(n),
        what=what,
    )


def ddp_buckets(
    sizes: Iterable[int],
    bucket_bytes: int = DDP_BUCKET_BYTES,
    first_bucket_bytes: int = DDP_FIRST_BUCKET_BYTES,
) -> list[int]:
    """Bytes of each DDP gradient bucket, greedily filled in the order given
    (pass gradients in the order they become ready: reverse parameter order).

    torch's reducer (``compute_bucket_assignment_by_size``, Li et al. VLDB
    2020 section 3.2.3) adds tensors to the open bucket and closes it when its
    size reaches the limit: ``first_bucket_bytes`` for the first bucket, then
    ``bucket_bytes``. In torch >= 2.x the first iteration uses one bucket
    (no unused parameters to find) and the buckets are rebuilt in
    gradient-ready order after it: this is the steady state. One dtype only:
    call once per dtype.

    >>> ddp_buckets([600_000, 600_000, 2_000_000], bucket_bytes=25 << 20, first_bucket_bytes=1 << 20)
    [1200000, 2000000]
    """
    out: list[int] = []
    cur = 0
    for s in sizes:
        cur += int(s)
        limit = first_bucket_bytes if not out else bucket_bytes
        if cur >= limit:
            out.append(cur)
            cur = 0
    if cur:
        out.append(cur)
    return out


def fsdp_padded_numel(shapes: Sequence[Sequence[int]], n: int) -> np.ndarray:
    """Elements of each parameter once FSDP2 pads it to ``n`` equal dim-0 shards:
    ``ceil(dim0 / n) * n * (numel / dim0)`` (torch 2.13,
    ``_fsdp_param.FSDPParam._init_sharded_param``: ``torch.chunk`` on dim 0,
    every shard padded to the size of the first); the all-gather output and
    the reduce-scatter input hold the sum of these (Zhao et al. 2023 describe
    FSDP1's flat-parameter padding; FSDP2 pads per parameter). Vectorised.

    >>> fsdp_padded_numel([(5, 3), (4,), (1,)], 4).tolist()
    [24, 4, 4]
    """
    if not len(shapes):
        return np.zeros(0, dtype=np.int64)
    dim0 = np.array([s[0] if len(s) else 1 for s in shapes], dtype=np.int64)
    numel = np.array([math.prod(s) for s in shapes], dtype=np.int64)
    rest = np.where(dim0 > 0, numel // np.maximum(dim0, 1), 0)
    return -(-dim0 // n) * n * rest


def _split_context(root: str, unit: str) -> str:
    """A unit's module path as the runtime nests module contexts: one context
    per called module, a ``ModuleList`` index kept with its list's name
    (``blocks.0.attn`` -> ``blocks.0/attn``). A heuristic: a module that is a
    container but not called and not indexed by a number reads wrong."""
    if not unit:
        return root
    segs = unit.split(".")
    parts: list[str] = []
    for s in segs:
        if s.isdigit() and parts:
            parts[-1] += "." + s
        else:
            parts.append(s)
    return "/".join([root, *parts])


def _assign_units(params: Sequence[ParamInfo], units: Sequence[str]) -> list[str]:
    """The FSDP unit each parameter belongs to: the deepest unit path that is a
    prefix of its module path ("" is the root)."""
    us = sorted(set(units) | {""}, key=lambda u: -len(u))
    out = []
    for p in params:
        for u in us:
            if not u or p.module == u or p.module.startswith(u + "."):
                out.append(u)
                break
    return out


def _sharded_comm(model: ModelSpec, par: ParallelSpec) -> list[dict[str, Any]]:
    """ZeRO-3 and FSDP: per unit, all-gather of parameters in forward, re-gather
    in backward (units resharded after forward), reduce-scatter of gradients.

    Source: ZeRO section 7.2.2 (3 x Psi on the wire: the parameter all-gather
    twice and the gradient reduce-scatter); Zhao et al. 2023 section 3.2
    (FSDP units, ``reshard_after_forward``); FSDP2's per-parameter padding
    (:func:`fsdp_padded_numel`); FSDP1 and ZeRO-3 pad the flat buffer of a unit
    to a multiple of the group size.
    """
    n = par.dp
    units = par.fsdp_units if par.fsdp_units is not None else (model.fsdp_units or ("",))
    units = tuple(module_path(u) for u in units)
    mb = par.micro_batches
    rows: list[dict[str, Any]] = []
    if model.parameters:
        params = model.parameters
        owner = _assign_units(params, units)
        if par.strategy == "fsdp":
            padded = fsdp_padded_numel([p.shape for p in params], n)
        else:
            padded = np.array([p.numel for p in params], dtype=np.int64)
        item = np.array([p.itemsize for p in params], dtype=np.int64)
        train = np.array([p.trainable for p in params], dtype=bool)
        own = np.array(owner)
        per_unit = []
        for u in dict.fromkeys(["", *units]):
            sel = own == u
            if not sel.any():
                continue
            w = int((padded[sel] * item[sel]).sum())
            g = int((padded[sel & train] * item[sel & train]).sum())
            if par.strategy != "fsdp":  # one flat buffer: pad the total
                w = _pad_bytes(w, n, int(item[sel][0]))
                g = _pad_bytes(g, n, int(item[sel][0])) if g else 0
            per_unit.append((u, w, g))
    else:
        w = _pad_bytes(model.params * model.weight_bytes, n, model.weight_bytes)
        g = _pad_bytes(model.params * model.grad_bytes, n, model.grad_bytes)
        per_unit = [("", w, g)]
    for u, w, g in per_unit:
        ctx = _split_context(f"forward/{model.name}", u)
        rows.append(_row(ctx, "all_gather", mb, mb * w, n, "parameters"))
        if u or par.reshard_root or par.strategy == "zero3":
            rows.append(_row("backward", "all_gather", mb, mb * w, n, "parameters (re-gather)"))
        if g:
            rows.append(_row("backward", "reduce_scatter", 1, g, n, "gradients"))
    return rows


def _pad_bytes(nbytes: int, n: int, item: int) -> int:
    """A flat buffer of ``nbytes`` padded to a multiple of ``n`` elements."""
    el = -(-nbytes // item)
    return -(-el // n) * n * item


def _dp_comm(model: ModelSpec, par: ParallelSpec) -> list[dict[str, Any]]:
    n = par.dp
    if n <= 1 or par.strategy == "none":
        return []
    share = par.tp * par.pp  # each rank holds ~1/(tp*pp) of the parameters
    if par.strategy == "ddp":
        if model.parameters:
            by_dtype: dict[int, list[int]] = {}
            for p in reversed(model.trainable):  # gradients are ready in reverse order
                by_dtype.setdefault(p.itemsize, []).append(p.numel * p.itemsize // share)
            calls = total = 0
            for sizes in by_dtype.values():
                b = ddp_buckets(sizes, par.bucket_bytes, par.first_bucket_bytes)
                calls, total = calls + len(b), total + sum(b)
        else:  # tensor sizes unknown: buckets filled exactly to their limits
            total = model.grad_total // share
            rest = max(0, total - par.first_bucket_bytes)
            calls = 1 + -(-rest // par.bucket_bytes)
        rows = [_row("backward", "all_reduce", calls, total, n, "gradients")]
        return rows
    if par.strategy in ("zero1", "zero2"):
        g = _pad_bytes(model.grad_total // share, n, model.grad_bytes)
        w = _pad_bytes(model.weight_total // share, n, model.weight_bytes)
        return [
            _row(
                "backward", "reduce_scatter", max(1, -(-g // par.bucket_bytes)), g, n, "gradients"
            ),
            _row("optimizer", "all_gather", max(1, -(-w // par.bucket_bytes)), w, n, "parameters"),
        ]
    if share > 1:
        model = replace(model, params=model.params // share, parameters=())
    return _sharded_comm(model, par)


def _tp_comm(model: ModelSpec, par: ParallelSpec) -> list[dict[str, Any]]:
    """Megatron tensor parallel (Shoeybi et al. 2019, section 3, Figure 4): per
    transformer layer and micro-batch, ``g`` (all-reduce) after attention and
    after the MLP in forward, ``f`` (all-reduce) before each in backward: 4
    all-reduces of ``b*s*h`` elements; with sequence parallelism (Korthikanti
    et al. 2022, section 4.2.2) each becomes an all-gather plus a
    reduce-scatter of ``b*s*h`` (the same bytes on the wire)."""
    t = par.tp
    if t <= 1:
        return []
    L, b, s, h = _dims(model, "tensor parallel")
    L_stage = -(-L // par.pp)
    nbytes = b * s * h * par.act_bytes
    calls = 2 * L_stage * par.micro_batches
    rows = []
    for phase in ("forward", "backward"):
        if par.sequence_parallel:
            rows.append(_row(phase, "all_gather", calls, calls * nbytes, t, "activations (SP)"))
            rows.append(_row(phase, "reduce_scatter", calls, calls * nbytes, t, "activations (SP)"))
        else:
            rows.append(_row(phase, "all_reduce", calls, calls * nbytes, t, "activations"))
    return rows


def _pp_comm(model: ModelSpec, par: ParallelSpec) -> list[dict[str, Any]]:
    """Pipeline parallel (Narayanan et al. SC21, section 2.2): each micro-batch
    sends its ``b*s*h`` activations to the next stage in forward and their
    gradient back in backward; with tensor parallelism and the scatter/gather
    optimisation (section 4.1) ``b*s*h/t`` per rank. A middle stage sends and
    receives both ways; the first and the last only one way each."""
    p = par.pp
    if p <= 1:
        return []
    _, b, s, h = _dims(model, "pipeline parallel")
    stage = par.stage if par.stage is not None else p // 2
    nbytes = b * s * h * par.act_bytes // par.tp
    m = par.micro_batches
    rows = []
    if stage < p - 1:
        rows.append(_row("forward", "send", m, m * nbytes, 2, "activations"))
        rows.append(_row("backward", "recv", m, m * nbytes, 2, "activation gradients"))
    if stage > 0:
        rows.append(_row("forward", "recv", m, m * nbytes, 2, "activations"))
        rows.append(_row("backward", "send", m, m * nbytes, 2, "activation gradients"))
    return rows


def _dims(model: ModelSpec, what: str) -> tuple[int, int, int, int]:
    missing = [k for k in ("layers", "micro_batch", "seq", "hidden") if getattr(model, k) is None]
    if missing:
        raise ValueError(f"{what} needs the model's {', '.join(missing)}")
    return model.layers, model.micro_batch, model.seq, model.hidden  # type: ignore[return-value]


def communication(model: ModelSpec, par: ParallelSpec) -> UnitTable:
    """Collectives per rank per (steady-state) step, by context and kind.

    Columns: ``context`` (the phase below the step, then module paths as the
    runtime names them: ``forward/GPT/blocks.0``; ``backward`` for what runs
    in backward, which the runtime's light mode does not split by module),
    ``kind`` (:data:`cctviz.model.collectives.KINDS`), ``calls``, ``bytes``
    (per rank, what the collective's tensors hold, as the runtime counts
    them: the tensor for an all-reduce, the whole output of an all-gather,
    the whole input of a reduce-scatter), ``bus_bytes`` (``bytes x
    bus_factor(kind, ranks)``: nccl-tests), ``ranks`` (the group size),
    ``what``; bytes in B (``attrs["units"]``).

    With ``m`` the gradient bytes, bytes on the wire (bus bytes) per step are
    ``2m(n-1)/n`` for DDP's all-reduce (Li et al. 2020) and ZeRO-1/2's
    reduce-scatter plus all-gather (ZeRO section 7.2.1), ``3m(n-1)/n`` for
    ZeRO-3/FSDP (ZeRO section 7.2.2; Zhao et al. 2023); tensor and pipeline
    parallel traffic follow :func:`_tp_comm` and :func:`_pp_comm`.

    >>> df = communication(ModelSpec(params=1_000_000), ParallelSpec(world_size=4, strategy="zero3"))
    >>> df[["context", "kind", "bytes"]].values.tolist()
    [['forward/model', 'all_gather', 4000000], ['backward', 'all_gather', 4000000], ['backward', 'reduce_scatter', 4000000]]
    >>> float(df.bus_bytes.sum()) / 4e6  # 3m (n-1)/n
    2.25
    """
    if par.strategy == "none" and par.tp == 1 and par.pp == 1:
        return with_units(pd.DataFrame(columns=_COLUMNS), _COMM_UNITS)
    if par.strategy in ("zero3", "fsdp", "fsdp1") and par.dp > 1 and par.tp * par.pp == 1:
        rows = _sharded_comm(model, par)
    else:
        rows = _dp_comm(model, par)
    rows += _tp_comm(model, par) + _pp_comm(model, par)
    df = pd.DataFrame(rows, columns=_COLUMNS)
    if len(df):
        df = df.groupby(["context", "kind", "ranks", "what"], sort=False, as_index=False).sum()
        order = df["context"].str.split("/").str[0].map(_PHASE_ORDER).fillna(9)
        df = df.assign(_o=order).sort_values("_o", kind="stable")[_COLUMNS]
    return with_units(df.reset_index(drop=True), _COMM_UNITS)


# ---------------------------------------------------------------------- time
@dataclass(frozen=True)
class Interconnect:
    """Alpha-beta figures of a network: ``alpha`` (s per call) and
    ``bandwidth`` (bus bandwidth, bytes/s, as nccl-tests reports busbw).

    >>> Interconnect("x", alpha=1e-5, bandwidth=1e9).time("all_reduce", 1e6, 2)
    0.00101
    """

    name: str
    alpha: float
    bandwidth: float
    source: str = ""

    def time(self, kind: str, nbytes: float, n: int, calls: float = 1) -> float:
        """Seconds of ``calls`` collectives moving ``nbytes`` in all (see :func:`collective_time`)."""
        return calls * self.alpha + bus_factor(kind, n) * nbytes / self.bandwidth


#: rough, labelled defaults: orders of magnitude, not measurements of your machine
INTERCONNECTS: dict[str, Interconnect] = {
    i.name: i
    for i in (
        Interconnect(
            "nvlink4",
            alpha=10e-6,
            bandwidth=360e9,
            source="NVLink 4 (H100 SXM, 8 GPUs, NVSwitch): 450 GB/s per direction nominal; "
            "nccl-tests all_reduce busbw of about 360 GB/s at large sizes; ~10 us latency. Rough.",
        ),
        Interconnect(
            "ib-ndr400",
            alpha=20e-6,
            bandwidth=45e9,
            source="InfiniBand NDR 400 Gb/s, one NIC per GPU: 50 GB/s line rate, "
            "~45 GB/s busbw assumed (90%); ~20 us latency across nodes. Rough.",
        ),
        Interconnect(
            "ethernet-100g",
            alpha=50e-6,
            bandwidth=10e9,
            source="100 GbE (RoCE or TCP): 12.5 GB/s line rate, ~10 GB/s busbw assumed; "
            "~50 us latency. Rough.",
        ),
        Interconnect(
            "gloo-loopback",
            alpha=1e-3,
            bandwidth=2e9,
            source="gloo on CPU processes of one host (TCP loopback): ~2 GB/s busbw; per-call "
            "times of 0.5-2 MB collectives were 2-7 ms on a 16-core VM (2 ranks, examples/train.py), "
            "much of it ranks waiting for each other, so alpha ~1 ms here. Varies a lot with "
            "the host: fit it (fit_alpha_beta). Rough.",
        ),
    )
}


def collective_time(comm: pd.DataFrame, net: Interconnect | str = "nvlink4") -> pd.Series:
    """Seconds per step of each row of :func:`communication` under the
    alpha-beta (Hockney 1994) model with nccl-tests' bus bandwidth:

        t = calls * alpha + bus_bytes / busbw,  bus_bytes = bytes * bus_factor(kind, n)

    i.e. per call ``t = alpha + F(kind, n) * S / B`` with ``S`` the algorithm
    bytes (nccl-tests' size), ``F`` the bus factor (``2(n-1)/n`` for an
    all-reduce, ``(n-1)/n`` for all-gather/reduce-scatter, 1 for
    send/recv/broadcast) and ``B`` the bus bandwidth, which nccl-tests'
    PERFORMANCE.md defines so that it does not depend on ``n`` for ring
    algorithms.

    >>> df = pd.DataFrame({"calls": [2], "bus_bytes": [1e9]})
    >>> float(collective_time(df, Interconnect("x", 1e-3, 1e9)).iloc[0])
    1.002
    """
    if isinstance(net, str):
        net = INTERCONNECTS[net]
    return comm["calls"] * net.alpha + comm["bus_bytes"] / net.bandwidth


def fit_alpha_beta(
    sizes: Sequence[float],
    times: Sequence[float],
    kinds: str | Sequence[str] = "all_reduce",
    n: int | Sequence[int] = 2,
    calls: Sequence[float] | None = None,
    name: str = "fitted",
) -> Interconnect:
    """Fit ``alpha`` (s) and the bus bandwidth (B/s) of :func:`collective_time`
    to measured collectives: non-negative least squares on

        time_i = calls_i * alpha + F(kind_i, n_i) * size_i / B

    (Hockney 1994; ``size`` in algorithm bytes as the runtime records
    ``comm_bytes``, ``time`` in seconds, ``calls`` per measurement: 1 by
    default). Needs at least 2 distinct sizes.

    >>> net = fit_alpha_beta([1e3, 1e6, 1e7], [1e-5 + 1e3 / 1e9, 1e-5 + 1e6 / 1e9, 1e-5 + 1e7 / 1e9], "all_gather", 2)
    >>> round(net.alpha * 1e6, 6), round(net.bandwidth / 1e9, 6)  # F = 1/2 for 2 ranks
    (10.0, 0.5)
    """
    s = np.asarray(sizes, dtype=float)
    t = np.asarray(times, dtype=float)
    if s.shape != t.shape or s.ndim != 1:
        raise ValueError("sizes and times must be 1-D and of the same length")
    if len(np.unique(s[np.isfinite(s)])) < 2:
        raise ValueError(
            "fit_alpha_beta needs collectives of at least 2 distinct sizes "
            f"(got {len(np.unique(s))}): alpha and bandwidth cannot be told apart"
        )
    k = [kinds] * len(s) if isinstance(kinds, str) else list(kinds)
    ns = [n] * len(s) if isinstance(n, (int, np.integer)) else list(n)
    c = np.ones_like(s) if calls is None else np.asarray(calls, dtype=float)
    f = np.array([bus_factor(a, int(b)) for a, b in zip(k, ns, strict=True)])
    X = np.column_stack([c, f * s])
    coef = _nnls2(X, t)
    alpha, inv_bw = coef
    if inv_bw <= 0:
        raise ValueError("the fitted bandwidth is infinite: times do not grow with size")
    return Interconnect(name, alpha=float(alpha), bandwidth=float(1 / inv_bw), source="fit")


def _nnls2(X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Non-negative least squares with 2 unknowns: the unconstrained solution
    if non-negative, else the best of the two one-variable fits."""
    coef, *_ = np.linalg.lstsq(X, y, rcond=None)
    if (coef >= 0).all():
        return coef
    best, err = np.zeros(2), float(np.sum(y**2))
    for j in (0, 1):
        x = X[:, j]
        d = float(x @ x)
        if d <= 0:
            continue
        c = max(0.0, float(x @ y) / d)
        e = float(np.sum((y - c * x) ** 2))
        if e < err:
            best, err = np.eye(2)[j] * c, e
    return best


# -------------------------------------------------------------------- memory
def optimizer_state_factor(optimizer: str, precision: str = "fp32") -> int:
    """Bytes of optimizer state per parameter, ``K`` in the ZeRO paper
    (section 3.1): Adam keeps two fp32 states (momentum, variance: 8 bytes),
    SGD with momentum one (4), plain SGD none; mixed precision adds the fp32
    master copy of the parameters (4): Adam's ``K = 12``.

    >>> optimizer_state_factor("adam", "mixed"), optimizer_state_factor("sgd_momentum"), optimizer_state_factor("sgd")
    (12, 4, 0)
    """
    states = {"adam": 2, "adamw": 2, "sgd_momentum": 1, "sgd": 0}
    if optimizer not in states:
        raise ValueError(f"unknown optimizer {optimizer!r}: one of {sorted(states)}")
    if precision not in ("fp32", "mixed"):
        raise ValueError(f"precision must be 'fp32' or 'mixed', not {precision!r}")
    return 4 * states[optimizer] + (4 if precision == "mixed" else 0)


@dataclass(frozen=True)
class MemoryEstimate:
    """Bytes per rank by what they hold; ``total`` sums them.

    >>> MemoryEstimate(params=2, grads=2, optimizer=12).total
    16
    """

    params: float = 0
    grads: float = 0
    optimizer: float = 0
    activations: float = 0
    extra: dict[str, float] = field(default_factory=dict)

    @property
    def total(self) -> float:
        return (
            self.params + self.grads + self.optimizer + self.activations + sum(self.extra.values())
        )

    def frame(self) -> UnitTable:
        """One row per part and a ``total`` row, in bytes and GB (1e9)."""
        parts = {
            "params": self.params,
            "grads": self.grads,
            "optimizer": self.optimizer,
            "activations": self.activations,
            **self.extra,
            "total": self.total,
        }
        df = pd.DataFrame({"bytes": pd.Series(parts, dtype=float)})
        df["GB"] = df["bytes"] / 1e9
        return with_units(df, {"bytes": "B", "GB": "GB"})


def model_state_memory(
    params: int,
    optimizer: str = "adam",
    precision: str = "fp32",
    zero: int | str = 0,
    dp: int = 1,
    n_tensors: int = 0,
    step_bytes: int = 4,
) -> MemoryEstimate:
    """Model states per rank: parameters, gradients, optimizer states.

    ZeRO (Rajbhandari et al. SC20, section 5 and Figure 1), with ``Psi``
    parameters, ``N_d`` data-parallel ranks and ``K`` from
    :func:`optimizer_state_factor`, ``w``/``g`` bytes per weight/gradient (2
    and 2 in mixed precision, 4 and 4 in fp32):

    - baseline (DDP): ``(w + g + K) Psi``
    - ZeRO-1 (P_os): ``(w + g) Psi + K Psi / N_d``
    - ZeRO-2 (P_os+g): ``w Psi + (g + K) Psi / N_d``
    - ZeRO-3 / FSDP (P_os+g+p): ``(w + g + K) Psi / N_d``

    ``n_tensors`` x ``step_bytes`` adds torch's Adam ``step`` counter, a
    float32 scalar tensor per parameter tensor (``torch.optim.Adam`` since 1.12;
    not in the paper), so the total equals what the tensors of a real
    optimizer occupy.

    >>> m = model_state_memory(7_500_000_000, "adam", "mixed", zero=1, dp=64)
    >>> round(m.total / 1e9, 1)
    31.4
    """
    w = g = 2 if precision == "mixed" else 4
    K = optimizer_state_factor(optimizer, precision)
    stage = 3 if zero == "fsdp" else int(zero)
    if stage not in (0, 1, 2, 3):
        raise ValueError(f"zero stage must be 0-3 or 'fsdp', not {zero!r}")
    steps = n_tensors * step_bytes if optimizer in ("adam", "adamw") else 0
    opt = K * params / (dp if stage >= 1 else 1) + steps
    grads = g * params / (dp if stage >= 2 else 1)
    p = w * params / (dp if stage >= 3 else 1)
    return MemoryEstimate(params=p, grads=grads, optimizer=opt)


def activation_memory(
    seq: int,
    micro_batch: int,
    hidden: int,
    heads: int,
    layers: int = 1,
    tp: int = 1,
    sequence_parallel: bool = False,
    recompute: str = "none",
) -> float:
    """Activation bytes of ``layers`` transformer layers on one rank, 16-bit
    activations, Korthikanti et al. 2022 (arXiv:2205.05198), section 4,
    Table 2, per layer with ``s`` sequence, ``b`` micro-batch, ``h`` hidden,
    ``a`` heads, ``t`` tensor-parallel size:

    ============================================ =======================
    no parallelism (eq. 1)                       ``sbh (34 + 5as/h)``
    tensor parallel (eq. 2)                      ``sbh (10 + 24/t + 5as/(ht))``
    tensor + sequence parallel (eq. 4)           ``sbh (34/t + 5as/(ht))``
    tensor parallel + selective recompute        ``sbh (10 + 24/t)``
    tensor + sequence parallel + selective       ``sbh 34/t``
    full recompute (section 5)                   ``2 sbh`` (the layer's input)
    ============================================ =======================

    ``recompute``: ``"none"``, ``"selective"`` (the attention's ``5as/h``
    term recomputed) or ``"full"``. Embeddings, the output layer and pipeline
    schedules (section 4.3) are left out.

    >>> activation_memory(2048, 1, 12288, 96) / (2048 * 12288)  # GPT-3: 34 + 80
    114.0
    """
    s, b, h, a, t = seq, micro_batch, hidden, heads, tp
    sbh = s * b * h
    if recompute == "full":
        per = 2 * sbh / (t if sequence_parallel else 1)  # with SP the input is split over t
    elif recompute in ("none", "selective"):
        attn = 0.0 if recompute == "selective" else 5 * a * s / (h * t)
        if sequence_parallel:
            per = sbh * (34 / t + attn)
        else:
            per = sbh * (10 + 24 / t + attn)
    else:
        raise ValueError(f"recompute must be 'none', 'selective' or 'full', not {recompute!r}")
    return per * layers


def memory(
    model: ModelSpec,
    par: ParallelSpec | None = None,
    optimizer: str = "adam",
    precision: str = "fp32",
    recompute: str = "none",
    step_counters: bool = True,
) -> MemoryEstimate:
    """Memory per rank: model states (:func:`model_state_memory`, divided by
    ``tp * pp`` for tensor/pipeline parallelism, Narayanan et al. SC21) and,
    when the model's transformer dimensions are known, activations
    (:func:`activation_memory` over the stage's layers).

    >>> memory(ModelSpec(params=1000), optimizer="sgd").total
    8000.0
    """
    par = par or ParallelSpec()
    share = par.tp * par.pp
    n_tensors = model.n_tensors if step_counters else 0
    m = model_state_memory(
        model.params // share,
        optimizer,
        precision,
        zero=par.zero,
        dp=par.dp,
        n_tensors=n_tensors,
    )
    act = 0.0
    dims = (model.seq, model.micro_batch, model.hidden, model.heads, model.layers)
    if all(d is not None for d in dims):
        act = activation_memory(
            model.seq,  # type: ignore[arg-type]
            model.micro_batch,  # type: ignore[arg-type]
            model.hidden,  # type: ignore[arg-type]
            model.heads,  # type: ignore[arg-type]
            layers=-(-model.layers // par.pp),  # type: ignore[operator]
            tp=par.tp,
            sequence_parallel=par.sequence_parallel,
            recompute=recompute,
        )
    return replace(m, activations=act)
