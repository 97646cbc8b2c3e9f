"""Every collective call matched across the ranks of its group (a Timeline's).

A call of a collective is an *instance*: the ranks that take part each enter it
once. Without a recorded sequence number, instances are matched by the order of
calls: the k-th call of a calling context (a ``comm`` node of the unified tree)
on one rank meets the k-th call of the same context on the others (SPMD
programs call their collectives in the same order on every rank).

Per (instance, rank): ``arrival`` (the rank's start), ``end``, ``wait`` (the last
rank's arrival minus this rank's: time spent waiting for the others), ``transfer``
(end minus the last arrival: the part every rank spends once all are there),
``bytes``, the ``late`` rank (the last to arrive) and its ``late_by`` (last minus
second-to-last arrival), and the ``step``. Times in ns.

Point-to-point calls (send, recv) are left out by default: a send pairs with
the peer's receive, which needs the peer and tag the readers do not keep yet.

Example:
    >>> import pandas as pd
    >>> from cctviz.model.timeline import Timeline
    >>> from cctviz.model.tree import Tree
    >>> tree = Tree.from_parents([-1, 0], ["step", "all_reduce"], kind=["step", "comm"])
    >>> ev = pd.DataFrame({"profile": [0, 1, 0, 1], "node": [1, 1, 1, 1],
    ...                    "start": [10, 40, 100, 105], "end": [50, 50, 130, 130]})
    >>> inst = instances(Timeline(tree, ev))
    >>> inst[["instance", "rank", "wait", "transfer", "late"]].values.tolist()
    [[0, 0, 30, 10, 1], [0, 1, 0, 10, 1], [1, 0, 5, 25, 1], [1, 1, 0, 25, 1]]
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..model.timeline import Timeline, profile_ranks

#: columns of :func:`instances`
COLUMNS = (
    "instance", "node", "collective", "seq", "profile", "arrival", "end", "wait",
    "transfer", "bytes", "late", "late_by", "ranks", "step",
)  # fmt: skip


def instances(timeline: Timeline, *, include_p2p: bool = False) -> pd.DataFrame:
    """One row per (collective instance, rank) of ``timeline`` (module docstring).

    Args:
        timeline: a :class:`~cctviz.model.timeline.Timeline`.
        include_p2p: also match point-to-point calls (send, recv), by their order
            like the others (not by message: see the module docstring).

    Returns:
        a DataFrame with :data:`COLUMNS`; ``attrs["unit"]`` is ``"ns"``.
    """
    ev = timeline.events
    tree = timeline.tree
    names = tree.nodes["name"].to_numpy()
    # which nodes are calls to match: decided once per node, then looked up per event
    wanted = tree.nodes["kind"].to_numpy() == "comm"
    if not include_p2p:
        wanted &= ~np.isin(_base_names(names), ("send", "recv", "isend", "irecv"))
    comm = wanted[ev["node"].to_numpy()]
    if "comm_bytes" in ev.columns:  # the call itself, not the ops nested in it (Kineto)
        comm &= np.isfinite(ev["comm_bytes"].to_numpy(dtype=np.float64))
    e = ev[comm & ev["counted"].to_numpy(dtype=bool)]
    if not len(e):
        return _empty()
    node = e["node"].to_numpy()
    prof = e["profile"].to_numpy()
    start = e["start"].to_numpy()
    end = e["end"].to_numpy()
    # the k-th call of a context on a rank: rank order within (profile, node) by start
    order = np.lexsort((start, node, prof))
    grp = prof[order] * (len(tree) + 1) + node[order]
    first = np.r_[True, grp[1:] != grp[:-1]]
    run_start = np.maximum.accumulate(np.where(first, np.arange(len(grp)), 0))
    seq = np.empty(len(grp), dtype=np.int64)
    seq[order] = np.arange(len(grp)) - run_start
    inst_id, _ = pd.factorize(node * (int(seq.max()) + 1) + seq)  # by (node, seq)
    n_inst = int(inst_id.max()) + 1
    last = np.full(n_inst, np.iinfo(np.int64).min)
    np.maximum.at(last, inst_id, start)
    ranks = np.bincount(inst_id, minlength=n_inst)
    # the late rank and how late: the last and the second-to-last arrival
    by_arrival = np.lexsort((start, inst_id))
    pos_last = np.r_[np.flatnonzero(np.diff(inst_id[by_arrival]) != 0), len(by_arrival) - 1]
    late_row = by_arrival[pos_last]
    late_inst = inst_id[late_row]
    late_rank = np.full(n_inst, -1, dtype=np.int64)
    late_rank[late_inst] = prof[late_row]
    second = np.full(n_inst, np.iinfo(np.int64).min)
    has_two = ranks[late_inst] > 1
    second[late_inst[has_two]] = start[by_arrival[pos_last[has_two] - 1]]
    late_by = np.where(ranks > 1, last - second, 0)
    rank_of = profile_ranks(timeline.profiles)
    out = pd.DataFrame(
        {
            "instance": inst_id,
            "node": node,
            "collective": _base_names(names)[node],
            "seq": seq,
            "profile": prof,
            "rank": rank_of[prof],
            "arrival": start,
            "end": end,
            "wait": last[inst_id] - start,
            "transfer": np.maximum(end - last[inst_id], 0),
            "bytes": e["comm_bytes"].to_numpy(dtype=np.float64)
            if "comm_bytes" in e.columns
            else np.nan,
            "late": rank_of[late_rank[inst_id]],
            "late_by": late_by[inst_id],
            "ranks": ranks[inst_id],
            "step": e["step"].to_numpy() if "step" in e.columns else -1,
        }
    )
    out = out.sort_values(["instance", "profile"], kind="stable").reset_index(drop=True)
    out.attrs["unit"] = "ns"
    return out


def stragglers(inst: pd.DataFrame) -> pd.DataFrame:
    """How often and by how much each rank is the last to arrive, over the
    instances with at least two ranks (as HTA and TraceLens rank stragglers; a
    call where the last two arrive together has no late rank):
    ``last`` (instances it was last at), ``share`` of all instances,
    ``late_by`` (total ns it made the second-to-last wait), ``caused_wait``
    (total ns the others waited for it)."""
    multi = inst[inst["ranks"] > 1]
    per = multi.drop_duplicates("instance")
    n = len(per)
    per = per[per["late_by"] > 0]  # a tie has no late rank
    caused = multi.groupby("late")["wait"].sum()
    table = per.groupby("late").agg(last=("instance", "size"), late_by=("late_by", "sum"))
    table["share"] = table["last"] / n if n else np.nan
    table["caused_wait"] = caused.reindex(table.index).fillna(0)
    table.index.name = "rank"
    table.attrs["unit"] = "ns"
    return table.sort_values("last", ascending=False)


def message_sizes(timeline: Timeline, by: str = "collective") -> pd.DataFrame:
    """How big the messages are: calls and bytes per power-of-two size bin, per
    collective kind (``by="collective"``) or per calling context (``"context"``),
    point-to-point calls included (many small messages are a finding in
    themselves). Bins are ``[lo, hi)`` bytes; a call of 0 bytes has ``lo = hi = 0``.

    >>> import cctviz
    >>> tl = cctviz.read_timeline("../shared/data/pipit/ping-pong-otf2/traces.otf2")
    >>> sizes = message_sizes(tl)
    >>> sizes[["collective", "lo", "hi", "calls"]].head(2).values.tolist()
    [['recv', 16384, 32768, 2], ['recv', 32768, 65536, 2]]
    """
    if by not in ("collective", "context"):
        raise ValueError(f"by: 'collective' or 'context', not {by!r}")
    ev = timeline.events
    tree = timeline.tree
    if "comm_bytes" not in ev.columns:
        raise ValueError("message_sizes: this timeline records no bytes (no comm_bytes)")
    is_comm = (tree.nodes["kind"].to_numpy() == "comm")[ev["node"].to_numpy()]
    b = ev["comm_bytes"].to_numpy(dtype=np.float64)
    keep = is_comm & ev["counted"].to_numpy(dtype=bool) & np.isfinite(b)
    node = ev["node"].to_numpy()[keep]
    b = b[keep]
    lo = np.where(b >= 1, 2.0 ** np.floor(np.log2(np.maximum(b, 1))), 0).astype(np.int64)
    hi = np.where(b >= 1, lo * 2, 0)
    names = tree.nodes["name"].to_numpy()
    if by == "collective":
        group = _base_names(names)[node]
    else:
        group = tree.callpaths.to_numpy()[node]
    table = (
        pd.DataFrame({by: group, "lo": lo, "hi": hi, "bytes": b})
        .groupby([by, "lo", "hi"], sort=True)
        .agg(calls=("bytes", "size"), bytes=("bytes", "sum"))
        .reset_index()
    )
    table.attrs["unit"] = "B"
    return table


def _base_names(names: np.ndarray) -> np.ndarray:
    """A collective's kind from its node's name ("all_reduce (2 ranks)" -> "all_reduce"),
    once per tree node (events index it)."""
    return np.asarray([str(n).split(" (")[0] for n in names], dtype=object)


def _empty() -> pd.DataFrame:
    out = pd.DataFrame({c: pd.Series(dtype=object) for c in (*COLUMNS, "rank")})
    out.attrs["unit"] = "ns"
    return out


__all__ = ["COLUMNS", "instances", "message_sizes", "stragglers"]
