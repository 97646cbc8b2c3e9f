"""What one measured run tells the performance models: the model's spec as the
runtime recorded it (issue 37).

:func:`plan` reads a ``cctviz run`` folder (or its Ensemble) and infers what
the memory and strategy models need: the model (its parameters, by module),
each module's input and output shapes in one step, the optimizer and its state
per parameter, the batch and sequence sizes, the world size and the strategy,
and the model states each rank measured beside the footprint model's. A run
recorded before cctviz kept these is refused, with what to re-run.

Example (a run of ``cctviz run --nproc-per-node 2 --out ddp-run
examples/train.py --strategy ddp``; tests/runtime/test_plan.py runs it)::

    p = cctviz.perfmodel.plan("ddp-run")
    p.spec["batch"], p.spec["seq"], p.spec["strategy"]  # (8, 64, 'ddp')
    p.modules.set_index("module").loc["blocks.0.attn", "inputs"]  # '[8x64x128] float32'
"""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np
import pandas as pd

from ..model.ensemble import Ensemble
from ..model.tables import UnitTable, with_units
from .analytic import ModelSpec
from .footprint import run_strategy, states_of_run

#: what a run must hold for a plan (the runtime's facts)
NEEDS = ("model_spec", "module_shapes", "optimizer_layout")


class Plan:
    """The spec of a measured run (module docstring); made by :func:`plan`.

    Attributes:
        spec: a Series of what was inferred: ``model``, ``params``,
            ``param_bytes [B]``, ``world_size``, ``strategy``, ``optimizer``,
            ``batch`` and ``seq`` (from the model's first input: a
            ``(batch, seq)`` of token ids, or ``(batch, seq, features)``; ``seq``
            None for ``(batch, features)``), ``steps`` measured (the fewest of
            any rank) and their median ``step_time [s]``.
        modules: one row per module context of the measured step: ``context``
            (its call path), ``module`` (its path in the model), ``params`` (the
            parameters it owns), ``inputs`` and ``outputs`` (tensor shapes and
            dtypes) and ``output_bytes [B]``.
        states: each rank's model states, measured beside predicted
            (:func:`~.footprint.states_of_run`).
        model: the :class:`~.analytic.ModelSpec`.
    """

    def __init__(self, ens: Ensemble) -> None:
        meta = ens.meta
        missing = [k for k in NEEDS if not meta.get(k)]
        if missing:
            raise ValueError(
                f"this run holds no {', '.join(missing)}: it was recorded before cctviz "
                "kept the model's spec, or its script never called the model in a "
                "measured step; re-run it with `cctviz run` (a step after --warmup)"
            )
        self.model = ModelSpec.from_dict(meta["model_spec"])
        self._shapes = meta["module_shapes"]
        self.modules = _modules(self._shapes, self.model)
        self.states = states_of_run(ens)
        self.spec = self._spec(ens)
        self._ens = ens

    def activations(self, batch: int | None = None, seq: int | None = None) -> UnitTable:
        """The bytes each module context saves for backward in a step, at
        ``batch`` and ``seq`` (default: the run's), from what the run measured
        (``act_bytes``, per step, the ranks' mean; needs ``--act-bytes``): the
        part in seq x seq tensors (``act_sq_bytes``: attention's scores) scales
        with batch x seq², the rest with batch x seq (the tokens).

        Returns one row per context: ``context``, ``measured [B]``, of it
        ``seq² [B]``, and ``predicted [B]``; the ``total`` row last."""
        b0, s0 = self.spec["batch"], self.spec["seq"]
        b = b0 if batch is None else int(batch)
        s = s0 if seq is None else int(seq)
        if b0 is None or (seq is not None and s0 is None):
            raise ValueError(
                f"the run's batch ({b0}) or sequence ({s0}) is not known from the "
                "model's first input: activations cannot be scaled to other sizes"
            )
        act = _per_step(self._ens, "act_bytes")
        if act is None:
            raise ValueError(
                "the run has no act_bytes: re-run it with `cctviz run --act-bytes` "
                "(or cctviz.profile(act_bytes=True))"
            )
        sq = _per_step(self._ens, "act_sq_bytes")
        sq = sq.reindex(act.index, fill_value=0.0) if sq is not None else act * 0.0
        tokens = (b / b0) * (s / s0 if s0 else 1.0)
        square = tokens * (s / s0 if s0 else 1.0)
        table = pd.DataFrame({
            "context": act.index, "measured [B]": act.to_numpy(), "seq² [B]": sq.to_numpy(),
        })  # fmt: skip
        table["predicted [B]"] = (act - sq).to_numpy() * tokens + sq.to_numpy() * square
        total = table.drop(columns="context").sum().to_frame().T.assign(context="total")
        table = pd.concat([table, total[table.columns]], ignore_index=True)
        return with_units(table, {c: "B" for c in table.columns if c.endswith("[B]")})

    def _spec(self, ens: Ensemble) -> pd.Series:
        meta = ens.meta
        batch, seq = _batch_and_seq(self._shapes)
        prof = ens.profiles
        step = prof["step_time_ns"].to_numpy(dtype=np.float64) if "step_time_ns" in prof else []
        return pd.Series(
            {
                "model": self.model.name,
                "params": self.model.params,
                "param_bytes [B]": self.model.weight_total,
                "world_size": int(meta.get("world_size") or len(prof)),
                "strategy": run_strategy(meta),
                "optimizer": meta.get("optimizer"),
                "batch": batch,
                "seq": seq,
                "steps": int(prof["steps"].min()) if "steps" in prof else None,
                "step_time [s]": float(np.nanmedian(step)) / 1e9 if len(step) else np.nan,
            },
            dtype=object,
        )

    def __repr__(self) -> str:
        s = self.spec
        return (
            f"<Plan: {s['model']}, {s['params']:,} parameters, {s['strategy']} on "
            f"{s['world_size']} rank(s), batch {s['batch']}, seq {s['seq']}>"
        )


def plan(run: Any) -> Plan:
    """The :class:`Plan` of a ``cctviz run`` folder (a path) or its Ensemble."""
    if isinstance(run, (str, os.PathLike)):
        from ..readers import read

        run = read(run)
    if not isinstance(run, Ensemble):
        raise TypeError(f"plan: expected a run folder or an Ensemble, got {type(run).__name__}")
    return Plan(run)


def _per_step(ens: Ensemble, metric: str) -> pd.Series | None:
    """``metric`` per step of each context of the measured steps (call path),
    the ranks' mean; None where the run did not record it."""
    rows = ens.exclusive_rows
    if metric not in rows.columns:
        return None
    steps = ens.profiles["steps"].to_numpy(dtype=np.float64)
    per = rows[metric].to_numpy(dtype=np.float64) / steps[rows["profile"].to_numpy()]
    paths = ens.tree.callpaths.to_numpy(dtype=object)[rows["node"].to_numpy()]
    frame = pd.DataFrame({"context": paths, "value": per})
    frame = frame[frame["context"].str.split("/").str[1] == "step"]
    by = frame.groupby("context", sort=False)["value"].sum() / len(ens.profiles)
    return by[by > 0]


def _modules(shapes: dict[str, dict[str, list]], model: ModelSpec) -> UnitTable:
    """The module contexts' rows (:attr:`Plan.modules`), in call order. A
    context's module path is its call path below the model's root context
    (the shortest), segments joined by dots."""
    paths = list(shapes)
    root = min(paths, key=lambda p: p.count("/"))
    owned = model.module_params()
    rows = []
    for path in paths:
        below = path[len(root) :].lstrip("/")
        module = below.replace("/", ".")
        ins, outs = shapes[path]["in"], shapes[path]["out"]
        rows.append({
            "context": path,
            "module": module,
            "params": owned.get(module, 0),
            "inputs": _shape_text(ins),
            "outputs": _shape_text(outs),
            "output_bytes [B]": sum(_nbytes(s, d) for s, d in outs),
        })  # fmt: skip
    return with_units(pd.DataFrame(rows), {"output_bytes [B]": "B"})


def _batch_and_seq(shapes: dict[str, dict[str, list]]) -> tuple[int | None, int | None]:
    """From the root module's first input: (batch, seq) of token ids or of
    ``(batch, seq, features)``; ``(batch, None)`` of ``(batch, features)``.

    >>> _batch_and_seq({"m/GPT": {"in": [[[8, 64], "int64"]]}, "m/GPT/wte": {"in": []}})
    (8, 64)
    >>> _batch_and_seq({"m/MLP": {"in": [[[16, 32], "float32"]]}})
    (16, None)
    """
    root = min(shapes, key=lambda p: p.count("/")) if shapes else None
    ins = shapes[root]["in"] if root is not None else []
    if not ins or not ins[0][0]:
        return None, None
    dims, dtype = ins[0]
    if len(dims) >= 3 or (len(dims) == 2 and "int" in dtype):
        return int(dims[0]), int(dims[1])
    return int(dims[0]), None


def _shape_text(shapes: list) -> str:
    """``[2x16] int64, [2x16x30] float32``: the tensors' shapes and dtypes."""
    return ", ".join(f"[{'x'.join(str(d) for d in s)}] {dtype}" for s, dtype in shapes)


def _nbytes(shape: list, dtype: str) -> int:
    """Bytes of a tensor of ``shape`` and torch ``dtype`` (its name)."""
    n = math.prod(int(d) for d in shape)
    size = _ITEMSIZE.get(dtype)
    if size is None:
        size = np.dtype(dtype).itemsize  # (the names numpy shares with torch)
    return n * size


#: bytes per element of torch's dtypes that numpy lacks
_ITEMSIZE = {"bfloat16": 2, "complex32": 4, "float8_e4m3fn": 1, "float8_e5m2": 1,
             "float8_e4m3fnuz": 1, "float8_e5m2fnuz": 1}  # fmt: skip


__all__ = ["NEEDS", "Plan", "plan"]
