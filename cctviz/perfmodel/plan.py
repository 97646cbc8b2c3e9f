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

import functools
import os
from typing import Any

import numpy as np
import pandas as pd

from ..model import units as _units
from ..model.ensemble import Ensemble
from ..model.tables import UnitTable, with_units
from .analytic import ModelSpec
from .footprint import (
    STRATEGIES,
    OptimizerLayout,
    model_states,
    run_strategy,
    states_of_run,
    strategy_buffers,
)
from .steptime import (
    Config,
    Measured,
    module_of,
    parallel_of,
    per_step,
    root_context,
    step_contexts,
    step_terms,
    tensor_bytes,
)

#: what a run must hold for a plan (the runtime's facts)
NEEDS = ("model_spec", "module_shapes", "optimizer_layout")


class Plan:
    """The spec of a measured run (module docstring); made by :func:`plan`.

    Attributes:
        spec: a Series of what was inferred: ``model``, ``params``,
            ``param_bytes [B]``, ``world_size``, ``strategy``, ``optimizer``,
            ``batch`` and ``seq`` (from the model's first input: a
            ``(batch, seq)`` of token ids, or ``(batch, seq, features)``; ``seq``
            None for ``(batch, features)``), ``grad_accum`` (micro-batches per
            step: the model's calls per step), ``steps`` measured (the fewest
            of any rank) and their median ``step_time [s]``.
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
        """The bytes each module context saves for backward in a step (all its
        micro-batches; :meth:`predict` gives one micro-batch's), at
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

    def predict(
        self,
        strategy: str | None = None,
        world_size: int | None = None,
        batch: int | None = None,
        seq: int | None = None,
        grad_accum: int | None = None,
        interconnect: Any = None,
        units: Any = None,
    ) -> pd.Series:
        """One rank's step at another configuration (default: the run's), from
        this run (:mod:`~.steptime` says how each term scales).

        Args:
            strategy: ``"ddp"``, ``"zero1"``, ``"fsdp"`` (FSDP2) or ``"none"``;
                others are refused by name.
            world_size: data-parallel ranks; ``batch`` and ``seq``: one
                micro-batch per rank; ``grad_accum``: micro-batches per step
                (each, where not given, the run's).
            interconnect: a name of :data:`~.analytic.INTERCONNECTS`, an
                :class:`~.analytic.Interconnect`, or None: fitted to the run's
                collectives.
            units: FSDP's wrapped modules (default: the run's, else the
                model's repeated blocks).

        Returns:
            a Series: ``step_time [s]`` and its terms (``forward [s]``,
            ``backward [s]``, ``optimizer [s]``, ``data [s]``, ``other [s]``,
            ``comm_exposed [s]``); ``memory [B]`` = ``model_states [B]`` (the
            largest rank's: ``params [B]``, ``grads [B]``, ``optimizer [B]``)
            + ``activations [B]`` (one micro-batch's; NaN for a run without
            ``--act-bytes``); ``comm [B]`` per rank per step.

        Example (the run of the module docstring)::

            p.predict(strategy="fsdp")["step_time [s]"]
            p.predict(batch=16, grad_accum=2)[["step_time [s]", "memory [B]"]]
        """
        new = self._config(strategy, world_size, batch, seq, grad_accum)
        base = self._base_config()
        states_new, states_base = self._states(new), self._states(base)
        held = states_base["optimizer [B]"]
        terms, comm = step_terms(
            self._measured,
            new,
            interconnect,
            units=units,
            optimizer_scale=states_new["optimizer [B]"] / held if held else 1.0,
        )
        return _step_series(
            _describe(new),
            terms,
            [float(states_new[f"{t} [B]"]) for t in STATE_TERMS],
            self._peak_terms(new, units),
            float(comm["bytes"].sum()),
        )

    def measured(self) -> pd.Series:
        """What the run measured, in :meth:`predict`'s terms: the median
        ``step_time [s]`` split as predict splits it (on CPU, the time
        asynchronous collectives ran beside backward counts as communication),
        the largest rank's measured ``model_states [B]``, the ``activations
        [B]`` one micro-batch saved (NaN without ``--act-bytes``), ``comm
        [B]`` per rank per step."""
        base = self._base_config()
        terms, _ = step_terms(self._measured, base)
        largest = self._largest_states()
        sent = _per_step(self._ens, "comm_bytes")
        peak = self._peak_terms(base, measured=True)
        peak["peak"] = self._measured_peak()  # the largest rank's, as measured
        return _step_series(
            f"measured: {_describe(base)}",
            terms,
            [float(largest[t]) for t in STATE_TERMS],
            peak,
            float(sent.sum()) if sent is not None else 0.0,
        )

    def memory(
        self,
        strategy: str | None = None,
        world_size: int | None = None,
        batch: int | None = None,
        seq: int | None = None,
        grad_accum: int | None = None,
        units: Any = None,
    ) -> UnitTable:
        """One rank's memory at its peak, term by term, at a configuration
        (:meth:`predict`'s arguments; default: the run's).

        A step holds the most as its (last) backward begins: every activation
        saved and no gradient made yet. The terms then: ``params`` and
        ``optimizer`` (the largest rank's model states), ``grads`` (only those
        accumulated over earlier micro-batches: with ``grad_accum`` > 1, the
        model states' gradients), ``activations`` (one micro-batch's, from the
        run's ``act_bytes``), ``buffers`` (the strategy's own:
        :func:`~.footprint.strategy_buffers`) and ``unexplained``: what the
        run's measured peak (``mem_peak``, ``cctviz run --mem-peak``) holds
        beyond the other terms, its own row, never spread over them, scaled
        with the tokens of a micro-batch (on the example GPT it grows with
        them: the gradients of the model's output and of its loss as backward
        begins); ``peak`` sums them.

        Returns rows ``params``, ``grads``, ``optimizer``, ``activations``,
        ``buffers``, ``unexplained``, ``peak`` with ``predicted [B]``, and at
        the run's own configuration ``measured [B]`` beside it: the peak and
        model states of the rank whose peak holds the least beyond the
        modelled terms (a free torch's profiler misses only ever adds to a
        rank's peak), the activations as measured, the buffers not measured
        apart. The unexplained bytes come from that rank.

        Example::

            p.memory()                                  # the run's, measured beside
            p.memory(strategy="fsdp")["predicted [B]"]  # FSDP2's peak by term
        """
        lacks = [f"--{m.replace('_', '-')}" for m in ("act_bytes", "mem_peak")
                 if m not in self._ens.exc_metrics]  # fmt: skip
        if lacks:
            raise ValueError(
                f"the run has no {' or '.join(x[2:].replace('-', '_') for x in lacks)}: its "
                f"peak cannot be split by term; re-run it with `cctviz run {' '.join(lacks)}`"
            )
        config = self._config(strategy, world_size, batch, seq, grad_accum)
        predicted = self._peak_terms(config, units)
        table = pd.DataFrame({"term": list(predicted), "predicted [B]": list(predicted.values())})
        if config == self._base_config():
            measured = self._peak_terms(config, units, measured=True)
            table["measured [B]"] = [measured[t] for t in predicted]
        return with_units(table, {c: "B" for c in table.columns if c.endswith("[B]")})

    def table(
        self,
        strategies: Any = ("ddp", "zero1", "fsdp"),
        world_sizes: Any = None,
        memory_limit: Any = None,
        **kw: Any,
    ) -> UnitTable:
        """:meth:`predict` for every strategy and world size (default: the
        run's), ranked by predicted step time; a configuration the model cannot
        express is a row of its own, last, with its ``refused`` reason.

        ``memory_limit``: bytes per rank (a number, or text with a unit:
        ``"16 GiB"``, ``"80 GB"``); each row's ``fits`` says whether its
        predicted memory stays under it. ``kw`` go to :meth:`predict` (batch,
        seq, grad_accum, interconnect, units).

        Example::

            p.table(["ddp", "fsdp"], [2, 4], memory_limit="24 MiB")
        """
        limit = None if memory_limit is None else _units.bytes_of(memory_limit, "memory_limit")
        if limit is not None and "act_bytes" not in self._ens.exc_metrics:
            raise ValueError(
                "memory_limit: the run's memory per rank is unknown (no act_bytes): re-run it "
                "with `cctviz run --act-bytes`"
            )
        sizes = self.spec["world_size"] if world_sizes is None else world_sizes
        sizes = [sizes] if np.ndim(sizes) == 0 else list(sizes)
        names = [strategies] if isinstance(strategies, str) else list(strategies)
        sizes_kw = {k: kw.get(k) for k in ("batch", "seq", "grad_accum")}
        self._config(None, None, **sizes_kw)  # what every row shares: refused once, here
        rows = []
        for strategy in names:
            for size in sizes:
                row: dict[str, Any] = {"strategy": strategy, "world_size": size}
                try:
                    row.update(self.predict(strategy=strategy, world_size=size, **kw).to_dict())
                except ValueError as e:
                    row["refused"] = str(e)
                rows.append(row)
        table = pd.DataFrame(rows)
        if "refused" not in table:
            table["refused"] = None
        if "step_time [s]" not in table:  # every row refused
            table["step_time [s]"] = np.nan
        if limit is not None:
            memory = table.get("memory [B]", pd.Series(np.nan, index=table.index))
            fits = (memory <= limit).astype("boolean")  # NA where unknown: masks as False
            table["fits"] = fits.mask(memory.isna())
        table = table.sort_values("step_time [s]", na_position="last", kind="stable")
        table = table.reset_index(drop=True)
        return with_units(table, {c: c[c.index("[") + 1 : -1] for c in table if c.endswith("]")})

    @functools.cached_property
    def _measured(self) -> Measured:
        """The run as :func:`~.steptime.step_terms` predicts from (its step
        contexts made once)."""
        step_s = float(self.spec["step_time [s]"])
        return Measured(self._ens, self._shapes, self.model, self._base_config(), step_s)

    def _config(
        self,
        strategy: str | None,
        world_size: int | None,
        batch: int | None,
        seq: int | None,
        grad_accum: int | None,
    ) -> Config:
        """The configuration asked for, the run's where not given; refused by name
        where the models cannot express it."""
        base = self._base_config()
        strategy = base.strategy if strategy is None else str(strategy)
        if strategy not in STRATEGIES:
            raise ValueError(
                f"strategy {strategy!r} cannot be predicted: the plan models {STRATEGIES} "
                "(zero2, zero3, fsdp1, tensor and pipeline parallel are not modelled)"
            )
        asked = {"world_size": world_size, "batch": batch, "seq": seq, "grad_accum": grad_accum}
        for name, value in asked.items():
            if value is None:
                continue
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
                raise ValueError(f"{name} must be a positive integer, not {value!r}")
            if value < 1:
                raise ValueError(f"{name} must be a positive integer, not {value!r}")
        if base.batch is None:
            raise ValueError(
                "the run's batch is not known (the model's first input is no tensor of "
                "(batch, ...)): its step cannot be scaled"
            )
        if seq is not None and base.seq is None:
            raise ValueError("the run's model has no sequence dimension: seq cannot change")
        if not np.isfinite(float(self.spec["step_time [s]"])):
            raise ValueError("the run has no measured step time (step_time_ns): nothing to scale")
        size = base.world_size if world_size is None else int(world_size)
        if strategy == "none" and size != 1:
            raise ValueError(f"strategy 'none' runs on one rank, not world_size={size}")
        return Config(
            strategy,
            size,
            int(base.batch if batch is None else batch),
            base.seq if seq is None else int(seq),
            int(base.grad_accum if grad_accum is None else grad_accum),
        )

    def _base_config(self) -> Config:
        s = self.spec
        return Config(s["strategy"], s["world_size"], s["batch"], s["seq"], s["grad_accum"])

    def _state_table(self, config: Config) -> UnitTable:
        """:func:`~.footprint.model_states` of every rank under ``config``."""
        layout = OptimizerLayout.from_record(self._ens.meta["optimizer_layout"])
        return model_states(self.model, config.strategy, config.world_size, layout)

    def _states(self, config: Config) -> pd.Series:
        """The model states of the largest rank under ``config``."""
        table = self._state_table(config)
        return table.loc[table["total [B]"].idxmax()]

    def memory_by_context(self) -> UnitTable:
        """The bytes each context of the measured steps is predicted to hold
        at its end, beside its measured ``mem_peak`` (of the rank
        :meth:`memory` measures: the one holding least beyond its terms; NaN
        without ``--mem-peak``): the largest rank's model states
        and the strategy's buffers (:meth:`memory`), and the activations saved
        by then. A forward module context holds those its call and every
        module called before it saved (the modules in call order, one
        micro-batch); backward begins with them all; the optimizer holds the
        gradients instead; the data and other contexts the states alone.
        What a context measured beyond its prediction is what it held for
        itself (its outputs, its temporaries): the ``beyond [B]`` column.

        Returns one row per context: ``context``, ``phase``, ``activations
        [B]`` held, ``predicted [B]``, ``measured [B]``, ``beyond [B]``."""
        if "act_bytes" not in self._ens.exc_metrics:
            raise ValueError(
                "the run has no act_bytes: re-run it with `cctviz run --act-bytes --mem-peak`"
            )
        frame = self._context_frame()
        largest = self._states(self._base_config())
        states = np.array([float(largest[f"{t} [B]"]) for t in STATE_TERMS])
        frame["predicted [B]"] = self._held(frame, states[None, :])[:, 0]
        measured = np.full(len(frame), np.nan)
        rank = self._peak_rank[0]
        if rank is not None:  # the rank memory() takes: a missed free only adds to a peak
            column = int(np.flatnonzero(self._ens.profiles["rank"].to_numpy() == rank)[0])
            measured = self._ens.values("mem_peak")[frame["node"].to_numpy(), column]
        frame["measured [B]"] = measured
        frame["beyond [B]"] = frame["measured [B]"] - frame["predicted [B]"]
        table = frame[["context", "phase", "activations [B]", "predicted [B]", "measured [B]",
                       "beyond [B]"]].reset_index(drop=True)  # fmt: skip
        return with_units(table, {c: "B" for c in table.columns if c.endswith("[B]")})

    def context_memory(self) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`memory_by_context`'s prediction per rank: the tree's node ids
        and a (contexts x profiles) array of bytes, each rank's own model
        states (:func:`~.footprint.model_states` of its rank)."""
        frame = self._context_frame()
        table = self._state_table(self._base_config())
        ranks = pd.to_numeric(self._ens.profiles["rank"], errors="coerce").fillna(0).astype(int)
        per_rank = table.loc[ranks.clip(0, len(table) - 1), [f"{t} [B]" for t in STATE_TERMS]]
        return frame["node"].to_numpy(), self._held(frame, per_rank.to_numpy(dtype=np.float64))

    def _held(self, frame: pd.DataFrame, states: np.ndarray) -> np.ndarray:
        """(contexts x ranks) bytes held: the states each context holds of each
        rank's (``states``: ranks x :data:`STATE_TERMS`), its activations and
        the strategy's buffers."""
        holds = frame[list(STATE_TERMS)].to_numpy(dtype=np.float64)
        rest = frame["activations [B]"].to_numpy() + self._buffers(self._base_config(), None)
        return holds @ states.T + rest[:, None]

    def _context_frame(self) -> pd.DataFrame:
        """Per context of the measured steps: ``node``, ``context``, ``phase``,
        which model states it holds (``params``, ``grads``, ``optimizer``: 1 or
        0) and the ``activations [B]`` held at its end."""
        contexts = step_contexts(self._ens)
        contexts = contexts[contexts["phase"] != "comm"].reset_index(drop=True)
        act = _per_step(self._ens, "act_bytes")
        act = act if act is not None else pd.Series(dtype=np.float64)
        accum = max(int(self.spec["grad_accum"]), 1)
        order = [c for c in self._shapes if c in set(contexts["context"])]
        saved = act.reindex(order, fill_value=0.0).to_numpy() / accum
        ends = _last_descendants(order)
        by_module = dict(zip(order, np.cumsum(saved)[ends], strict=True))
        total = float(act.sum()) / accum
        phase = contexts["phase"].to_numpy()
        held = np.array([by_module.get(c, np.nan) for c in contexts["context"]])
        is_phase = contexts["context"].str.count("/").to_numpy() == 2
        held = np.where(phase == "forward", np.where(is_phase, total, held), held)
        held = np.where(phase == "backward", total, held)
        held = np.where(np.isin(phase, ("optimizer", "data", "other")), 0.0, held)
        grads_held = 1.0 if accum > 1 else 0.0
        frame = pd.DataFrame({
            "node": contexts["node"], "context": contexts["context"], "phase": phase,
            "params": 1.0, "grads": np.where(phase == "optimizer", 1.0, grads_held),
            "optimizer": 1.0, "activations [B]": held,
        })  # fmt: skip
        return frame[np.isfinite(frame["activations [B]"])].reset_index(drop=True)

    @functools.cached_property
    def _measured_states(self) -> pd.DataFrame:
        """Each rank's measured model states: one row per rank, a column per
        term of :data:`STATE_TERMS`."""
        return self.states.pivot(index="rank", columns="term", values="measured [B]")

    def _largest_states(self) -> pd.Series:
        """The measured model states (:data:`STATE_TERMS`) of the rank that
        holds the most."""
        by_rank = self._measured_states
        return by_rank.loc[by_rank.sum(axis=1).idxmax()]

    def _peak_terms(
        self, config: Config, units: Any = None, *, measured: bool = False
    ) -> dict[str, float]:
        """:meth:`memory`'s terms at ``config``: predicted (the largest rank's
        states), or as measured at the run's own configuration, on the rank
        :meth:`_peak_rank` picks (NaN for the buffers, not measured apart)."""
        rank, peak, residue = self._peak_rank
        if measured:
            held = self._rank_states(rank)
        else:
            held = self._states(config).rename(lambda k: k.removesuffix(" [B]"))
            residue *= _tokens(config) / _tokens(self._base_config())
        grads = float(held["grads"]) if config.grad_accum > 1 else 0.0
        activations = self._activation_total(config, measured=measured)
        buffers = float(self._buffers(config, units))
        known = float(held["params"]) + grads + float(held["optimizer"]) + activations
        return {
            "params": float(held["params"]),
            "grads": grads,
            "optimizer": float(held["optimizer"]),
            "activations": activations,
            "buffers": float("nan") if measured else buffers,
            "unexplained": residue,
            "peak": peak if measured else known + buffers + np.nan_to_num(residue),
        }

    def _rank_states(self, rank: Any) -> pd.Series:
        """The measured model states of ``rank`` (the largest rank's: None)."""
        if rank is None:
            return self._largest_states()
        return self._measured_states.loc[rank]

    @functools.cached_property
    def _peak_rank(self) -> tuple[Any, float, float]:
        """``(rank, its peak, unexplained)``: of the ranks' measured peaks
        (:meth:`_rank_peaks`), the one that holds the least beyond its
        modelled terms (its states, the activations, the strategy's buffers):
        torch's profiler misses a free on a thread it does not follow, which
        only ever adds to a rank's peak (docs/known-issues.md). ``(None, NaN,
        NaN)`` for a run recorded without ``--mem-peak``."""
        peaks = self._rank_peaks()
        if peaks is None:
            return None, float("nan"), float("nan")
        base = self._base_config()
        held = self._measured_states.reindex(self._ens.profiles["rank"].to_numpy())
        known = held["params"] + held["optimizer"] + (held["grads"] if base.grad_accum > 1 else 0)
        rest = peaks - known.to_numpy(dtype=np.float64)
        rest -= self._activation_total(base, measured=True) + self._buffers(base, None)
        rest = np.where(np.isfinite(peaks) & np.isfinite(rest), rest, np.inf)
        if not np.isfinite(rest).any():
            return None, float("nan"), float("nan")
        k = int(np.argmin(rest))
        return held.index[k], float(peaks[k]), float(rest[k])

    def _buffers(self, config: Config, units: Any) -> int:
        """:func:`~.footprint.strategy_buffers` at ``config`` (FSDP's units: as
        the step time model takes them)."""
        par = parallel_of(config, self.model, self._ens.meta, units)
        return strategy_buffers(self.model, config.strategy, par.fsdp_units or ())

    def _rank_peaks(self) -> np.ndarray | None:
        """Each profile's most bytes held in a measured step (``mem_peak``;
        -inf for a dead rank or one without it); None for a run recorded
        without ``--mem-peak``."""
        if "mem_peak" not in self._ens.exc_metrics:
            return None
        values = self._ens.values("mem_peak")[_in_steps(self._ens)]
        peaks = np.where(np.isnan(values), -np.inf, values).max(axis=0, initial=-np.inf)
        return np.where(np.asarray(self._ens.live, dtype=bool), peaks, -np.inf)

    def _measured_peak(self) -> float:
        """The most bytes any rank held in a measured step; NaN without
        ``--mem-peak``."""
        peaks = self._rank_peaks()
        return float(peaks.max()) if peaks is not None and np.isfinite(peaks).any() else np.nan

    def _activation_total(self, config: Config, *, measured: bool = False) -> float:
        """Bytes saved for backward by one micro-batch at ``config``'s sizes (or
        as measured; NaN for a run without act_bytes)."""
        if "act_bytes" not in self._ens.exc_metrics:
            return float("nan")
        table = self.activations(batch=config.batch, seq=config.seq)
        column = "measured [B]" if measured else "predicted [B]"
        return float(table[column].iloc[-1]) / self.spec["grad_accum"]

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
                "grad_accum": self._grad_accum(ens),
                "steps": int(prof["steps"].min()) if "steps" in prof else None,
                "step_time [s]": float(np.nanmedian(step)) / 1e9 if len(step) else np.nan,
            },
            dtype=object,
        )

    def _grad_accum(self, ens: Ensemble) -> int:
        """Micro-batches per step: the calls of the model's root context per step."""
        root = root_context(self._shapes)
        paths = ens.tree.callpaths.to_numpy(dtype=object)
        calls = per_step(ens, "calls")[paths == root]
        return max(1, int(round(float(calls.sum())))) if calls.size else 1

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
    if metric not in ens.exc_metrics:
        return None
    by = pd.Series(per_step(ens, metric), index=ens.tree.callpaths.to_numpy(dtype=object))
    by = by[_in_steps(ens)]
    return by[by > 0]


def _last_descendants(order: list[str]) -> np.ndarray:
    """For call paths in pre-order, the index of each one's last descendant
    (itself where it has none).

    >>> _last_descendants(["m/a", "m/a/b", "m/a/b/c", "m/d"]).tolist()
    [2, 2, 2, 3]
    """
    out = np.arange(len(order))
    stack: list[int] = []
    for k, path in enumerate(order):
        while stack and not path.startswith(order[stack[-1]] + "/"):
            stack.pop()
        for j in stack:
            out[j] = k
        stack.append(k)
    return out


def _in_steps(ens: Ensemble) -> np.ndarray:
    """Which contexts are in the measured steps (``<root>/step/...``)."""
    paths = ens.tree.callpaths.to_numpy(dtype=object)
    return np.array([p.split("/")[1:2] == ["step"] for p in paths], dtype=bool)


def _modules(shapes: dict[str, dict[str, list]], model: ModelSpec) -> UnitTable:
    """The module contexts' rows (:attr:`Plan.modules`), in call order. A
    context's module path is its call path below the model's root context
    (the shortest), segments joined by dots."""
    paths = list(shapes)
    root = root_context(shapes)
    owned = model.module_params()
    rows = []
    for path in paths:
        module = module_of(path, root)
        ins, outs = shapes[path]["in"], shapes[path]["out"]
        rows.append({
            "context": path,
            "module": module,
            "params": owned.get(module, 0),
            "inputs": _shape_text(ins),
            "outputs": _shape_text(outs),
            "output_bytes [B]": sum(tensor_bytes(s, d) for s, d in outs),
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
    root = root_context(shapes) if shapes else None
    ins = shapes[root]["in"] if root is not None else []
    if not ins or not ins[0][0]:
        return None, None
    dims, dtype = ins[0]
    if len(dims) >= 3 or (len(dims) == 2 and "int" in dtype):
        return int(dims[0]), int(dims[1])
    return int(dims[0]), None


#: the model states' terms, as :func:`~.footprint.model_states` names them
STATE_TERMS = ("params", "grads", "optimizer")


def _tokens(config: Config) -> int:
    """The tokens of one micro-batch (its samples where there is no sequence)."""
    return config.batch * (config.seq or 1)


def _step_series(
    name: str,
    terms: dict[str, float],
    states: list[float],
    peak: dict[str, float],
    comm: float,
) -> pd.Series:
    """:meth:`Plan.predict`'s Series: the step time and its terms, memory at
    its peak and the terms of :meth:`Plan.memory` (``states``:
    :data:`STATE_TERMS` of the largest rank, as held after the optimizer
    step), communication; its units in ``attrs["units"]``."""
    out = pd.Series(
        {
            "step_time [s]": sum(terms.values()),
            **terms,
            "memory [B]": peak["peak"],
            "model_states [B]": sum(states),
            **{f"{t} [B]": b for t, b in zip(STATE_TERMS, states, strict=True)},
            "activations [B]": peak["activations"],
            "buffers [B]": peak["buffers"],
            "unexplained [B]": peak["unexplained"],
            "comm [B]": comm,
        },
        name=name,
        dtype=np.float64,
    )
    out.attrs["units"] = {k: k[k.index("[") + 1 : -1] for k in out.index}
    return out


def _describe(config: Config) -> str:
    """``fsdp on 2 ranks, batch 8, seq 64, 2 micro-batches``."""
    text = f"{config.strategy} on {config.world_size} rank(s), batch {config.batch}"
    text += f", seq {config.seq}" if config.seq else ""
    return text + (f", {config.grad_accum} micro-batches" if config.grad_accum > 1 else "")


def _shape_text(shapes: list) -> str:
    """``[2x16] int64, [2x16x30] float32``: the tensors' shapes and dtypes."""
    return ", ".join(f"[{'x'.join(str(d) for d in s)}] {dtype}" for s, dtype in shapes)


__all__ = ["NEEDS", "Plan", "plan"]
