"""What-if changes to a replayed trace (:meth:`Replay.what_if`), and the
opportunities they rank (:meth:`Replay.opportunities`).

A change says what the counterfactual run does differently; the replay
recomputes every start, end and wait from the dependency graph:

- :class:`Scale` ``(where, factor, ranks=None)``: the matched contexts (and
  everything they call) take ``factor`` x their time;
- :class:`Delay` ``(where, seconds, ranks=None)``: every call of a matched
  context takes ``seconds`` longer (a collective call: its transfer, after the
  last arrival; an asynchronous one completes that much later);
- :class:`Balance` ``(where=None)``: on each rank the matched contexts take, in
  each step, the median over the ranks of their time in that step (the
  stragglers removed; of an even number of ranks the lower median, so that of
  two ranks the straggler is removed, not halved; None: every context's
  computation);
- :class:`Bandwidth` ``(factor, collective=None, where=None)``: the transfer
  of the collective calls (of that name, under ``where``) takes 1/``factor`` of
  its time; waits follow.

``where`` is a regular expression that matches node names whole (``"mlp"``,
``"MPI_.*"``; searched in the call paths, names joined by ``/``, where it holds a
``/``: ``"blocks.0/attn$"``), a
query in Hatchet's string dialect (``MATCH ("*")->(a) WHERE a."name" = "mlp"``:
the contexts at the ends of the paths it matches), a
:class:`~cctviz.model.nodeset.NodeSet` or node ids. A ``where`` that matches
nothing is an error that names it.

Example:
    >>> Scale("blocks\\\\.1", 0.5), Balance()
    (Scale(where='blocks\\\\.1', factor=0.5, ranks=None), Balance(where=None))
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..model.nodeset import NodeSet
from ..model.tables import UnitTable, with_units
from .graph import COLL, ISSUE, K_COMM, K_IDLE

if TYPE_CHECKING:
    from .replay import Replay


@dataclass(frozen=True)
class Scale:
    """Matched contexts take ``factor`` x their time (on ``ranks``; None: all)."""

    where: Any
    factor: float
    ranks: Sequence[int] | None = None


@dataclass(frozen=True)
class Delay:
    """Every call of a matched context takes ``seconds`` longer (on ``ranks``)."""

    where: Any
    seconds: float
    ranks: Sequence[int] | None = None


@dataclass(frozen=True)
class Balance:
    """On each rank, matched contexts take the median over ranks of their time
    in each step (None: every context's computation)."""

    where: Any = None


@dataclass(frozen=True)
class Bandwidth:
    """Collective transfers take 1/``factor`` of their time (only calls named
    ``collective``, only under ``where``, where given)."""

    factor: float
    collective: str | None = None
    where: Any = None


def describe(change: Any) -> str:
    """A change as text, with its where as a call path where it is node ids."""
    where = getattr(change, "where", None)
    if isinstance(where, NodeSet):
        where = ", ".join("/".join(p) for p in where.paths())
    name = type(change).__name__
    if isinstance(change, Scale):
        return f"scale {where} by {change.factor:g}"
    if isinstance(change, Delay):
        return f"delay {where} by {change.seconds:g} s"
    if isinstance(change, Balance):
        return f"balance {where or 'every context'} across ranks"
    if isinstance(change, Bandwidth):
        what = change.collective or "collective"
        under = f" under {where}" if where is not None else ""
        return f"{change.factor:g}x bandwidth of {what}{under}"
    return name


def matched(tree: Any, where: Any) -> np.ndarray:
    """Node mask: the nodes ``where`` matches and everything below them."""
    n = len(tree)
    if isinstance(where, NodeSet):
        ids = np.asarray(where.on(tree).ids, dtype=np.int64)
    elif isinstance(where, str) and where.lstrip().upper().startswith("MATCH"):
        ids = _last_terms(tree, np.asarray(tree.query(where).ids, dtype=np.int64))
    elif isinstance(where, str):
        try:
            rx = re.compile(where)
        except re.error as e:
            raise ValueError(f"where={where!r}: not a regular expression ({e})") from None
        if "/" in where:  # searched in the call paths
            hit = tree.callpaths.map(lambda s: rx.search(s) is not None)
        else:  # a name matches whole: "mlp" is not "c_mlp"
            hit = tree.nodes["name"].astype(str).map(lambda s: rx.fullmatch(s) is not None)
        ids = np.flatnonzero(hit.to_numpy(dtype=bool))
    else:
        ids = np.asarray(list(where), dtype=np.int64)
        if ids.size and (ids.min() < 0 or ids.max() >= n):
            raise ValueError(f"where: node ids must be in [0, {n})")
    if not ids.size:
        raise ValueError(f"where={where!r} matches no context of the trace")
    diff = np.zeros(n + 1, dtype=np.int64)
    np.add.at(diff, ids, 1)
    np.add.at(diff, np.asarray(tree.end)[ids], -1)
    return np.cumsum(diff[:-1]) > 0


def _last_terms(tree: Any, ids: np.ndarray) -> np.ndarray:
    """A query's nodes without those above another of them: a query gives every
    node of the paths it matches; a change is about the contexts at their ends."""
    ids = np.sort(ids)
    if ids.size < 2:
        return ids
    above = ids[1:] < np.asarray(tree.end)[ids[:-1]]
    return ids[~np.r_[above, False]]


def apply_changes(rp: Replay, changes: Sequence[Any]) -> tuple[np.ndarray, np.ndarray]:
    """Piece durations and chunk transfers after ``changes``, in order."""
    dur = rp._dur.copy()
    transfer = rp._transfer.copy()
    for change in changes:
        if isinstance(change, Scale):
            _scale(rp, dur, transfer, change)
        elif isinstance(change, Delay):
            _delay(rp, dur, transfer, change)
        elif isinstance(change, Balance):
            _balance(rp, dur, change)
        elif isinstance(change, Bandwidth):
            _bandwidth(rp, transfer, change)
        else:
            raise TypeError(f"what_if: not a change: {change!r} (Scale, Delay, Balance, Bandwidth)")
    return dur, transfer


def _on_ranks(rp: Replay, lanes: np.ndarray, ranks: Sequence[int] | None) -> np.ndarray:
    if ranks is None:
        return np.ones(lanes.shape[0], dtype=bool)
    return np.isin(rp._g.lane_rank[lanes], np.asarray(list(ranks), dtype=np.int64))


def _comm_chunks(rp: Replay) -> np.ndarray:
    g = rp._g
    return np.flatnonzero((g.c_type == COLL) | (g.c_type == ISSUE))


def _scale(rp: Replay, dur: np.ndarray, transfer: np.ndarray, ch: Scale) -> None:
    if not ch.factor >= 0:
        raise ValueError(f"Scale: factor must be >= 0, got {ch.factor}")
    g = rp._g
    mask = matched(g.timeline.tree, ch.where)
    hit = (g.node >= 0) & mask[np.maximum(g.node, 0)] & _on_ranks(rp, g.lane, ch.ranks)
    dur[hit] *= ch.factor
    cc = _comm_chunks(rp)
    node = g.node[g.c_first[cc]]
    on = mask[np.maximum(node, 0)] & _on_ranks(rp, g.c_lane[cc], ch.ranks)
    transfer[cc[on]] *= ch.factor


def _delay(rp: Replay, dur: np.ndarray, transfer: np.ndarray, ch: Delay) -> None:
    g = rp._g
    tree = g.timeline.tree
    mask = matched(tree, ch.where)
    parent = np.asarray(tree.parent)
    top = mask & ~np.where(parent >= 0, mask[np.maximum(parent, 0)], False)
    ev = g.timeline.events
    events = np.flatnonzero(top[ev["node"].to_numpy()] & (g.ev_last >= 0))
    last = g.ev_last[events]
    last = last[_on_ranks(rp, g.lane_of(g.owner[last]), ch.ranks)]
    add = float(ch.seconds) * 1e9
    # a collective call's extra time is in its transfer (after the last arrival);
    # anything else's in its own time
    coll = np.isin(g.c_type[g.chunk_of(last)], (COLL, ISSUE))
    np.add.at(dur, last[~coll], add)
    np.add.at(transfer, g.chunk_of(last[coll]), add)


def _balance(rp: Replay, dur: np.ndarray, ch: Balance) -> None:
    g = rp._g
    tl = g.timeline
    compute = (g.node >= 0) & (g.kind != K_COMM) & (g.kind != K_IDLE)
    if ch.where is not None:
        compute &= matched(tl.tree, ch.where)[np.maximum(g.node, 0)]
    p_step = rp.piece_steps()
    sel = np.flatnonzero(compute & (p_step >= 0))
    if not sel.size:
        return
    frame = pd.DataFrame({"step": p_step[sel], "rank": g.lane_rank[g.lane[sel]], "d": dur[sel]})
    per = frame.groupby(["step", "rank"])["d"].sum()
    median = per.groupby(level="step").transform(_lower_median)
    factor = (median / per).where(per > 0, 1.0)
    key = pd.MultiIndex.from_arrays([frame["step"], frame["rank"]])
    dur[sel] *= factor.reindex(key).to_numpy()


def _lower_median(values: pd.Series) -> float:
    """The middle value; of an even count the lower one (of 2 ranks: the faster,
    where the mean would keep half the straggler)."""
    v = np.sort(values.to_numpy())
    return float(v[(v.size - 1) // 2]) if v.size else np.nan


def _bandwidth(rp: Replay, transfer: np.ndarray, ch: Bandwidth) -> None:
    if not ch.factor > 0:
        raise ValueError(f"Bandwidth: factor must be > 0, got {ch.factor}")
    g = rp._g
    tree = g.timeline.tree
    cc = _comm_chunks(rp)
    node = g.node[g.c_first[cc]]
    ok = np.ones(cc.shape[0], dtype=bool)
    if ch.collective is not None:
        names = tree.nodes["name"].astype(str).to_numpy()
        ok &= names[node] == ch.collective
        if not ok.any():
            raise ValueError(f"Bandwidth: no collective call named {ch.collective!r} in the trace")
    if ch.where is not None:
        ok &= matched(tree, ch.where)[node]
    transfer[cc[ok]] /= ch.factor


def opportunities(rp: Replay, top: int = 10) -> UnitTable:
    """:meth:`Replay.opportunities`."""
    path = rp.critical_path().segments
    path = path[path["node"] >= 0]
    t = (
        (path["end [s]"] - path["start [s]"])
        .groupby(path["node"])
        .sum()
        .sort_values(ascending=False)
    )
    base = float(rp.steps["replayed [s]"].mean())
    tree = rp.timeline.tree
    paths = tree.callpaths
    kinds = tree.nodes["kind"].astype(str) if "kind" in tree.nodes else None
    rows = []
    for node in t.index[: max(2 * top, top)]:
        where = tree.select([int(node)])
        changes: list[Any] = [Balance(where), Scale(where, 0.5)]
        has_comm = _has_collectives(rp, int(node))
        if has_comm:
            changes.append(Bandwidth(2.0, where=where))
        for change in changes:
            pred = float(rp.what_if(change).steps["replayed [s]"].mean())
            rows.append({
                "path": paths.iat[int(node)],
                "kind": kinds.iat[int(node)] if kinds is not None else "",
                "change": describe(change),
                "on path [s]": float(t.loc[node]) / max(len(rp.steps), 1),
                "saving [s]": base - pred,
                "share": (base - pred) / base if base > 0 else np.nan,
            })  # fmt: skip
    table = pd.DataFrame(
        rows, columns=["path", "kind", "change", "on path [s]", "saving [s]", "share"]
    )
    table = table.sort_values("saving [s]", ascending=False, kind="stable").head(top)
    table = table.reset_index(drop=True)
    return with_units(table, {"on path [s]": "s", "saving [s]": "s"})


def _has_collectives(rp: Replay, node: int) -> bool:
    g = rp._g
    end = int(np.asarray(g.timeline.tree.end)[node])
    cc = _comm_chunks(rp)
    n = g.node[g.c_first[cc]]
    return bool(((n >= node) & (n < end)).any())


__all__ = ["Balance", "Bandwidth", "Delay", "Scale", "apply_changes", "matched", "opportunities"]
