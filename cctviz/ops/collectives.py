"""Every collective call matched across the ranks of its group (a Timeline's).

A call of a collective is an *instance*: the ranks that take part each enter it
once. How the calls of the ranks are matched (the ``matched`` column says which
rule matched each call):

- ``"seq"``: where the trace records the call's process group and its sequence
  number on that group (the events' ``group`` and ``seq`` columns; Kineto's
  ``record_param_comms`` of NCCL in PyTorch >= 2.4), calls with the same
  (group, point-to-point or not, seq) are one instance, whatever their context.
- ``"order"``: otherwise the k-th call of a calling context (a ``comm`` node of
  the unified tree; the same call path on another thread of the process is the
  same context, as a worker pool runs each call on any of its threads) on one
  rank meets the k-th call of the same context on the others (SPMD programs
  call their collectives in the same order on every rank), where that is
  consistent: every rank that calls the context calls it as often,
  and the k-th calls move the same bytes on every rank (for the collectives whose
  size is the same on every rank, :data:`SAME_SIZE`: not all_to_all, gather,
  scatter, whose per-rank sizes may differ).
- ``"aligned"``: where it is not (traces whose windows start at different calls,
  or sampled traces that keep some calls only), each rank's sequence of calls of
  the context is aligned to the reference rank's (the rank with the most calls;
  the lowest on a tie) by a shift: call ``i`` meets the reference's call ``i +
  s``. The shift chosen is the one that pairs the most calls whose bytes agree
  (:data:`SAME_SIZE` kinds; for the others, the most calls), then the one whose
  paired calls' ends are closest (median absolute difference: ranks leave a
  blocking collective together), then the smallest. Shifts tried: 0 and those
  that pair calls with their nearest call in time on the reference (up to 16,
  the most frequent). Pairs whose bytes disagree are not matched: such calls, and
  calls with no partner on the reference, are instances of their own (one rank).
  A call that the reference lacks is not matched with the other ranks' calls.

Per (instance, rank): ``arrival`` (the rank's start), ``end``, ``wait`` (the last
rank's arrival minus this rank's: time spent waiting for the others), ``transfer``
(end minus the last arrival: the part every rank spends once all are there),
``bytes``, ``last_to_arrive`` and ``last_by`` (below), the ``step``, and the
call's ``event`` (its position among the timeline's events). Times in ns, bytes
in B (``attrs["units"]``: the table shows them with their units).

Whom the others wait for, named once each (``docs/architecture.md`` section 2);
the words are never used for one another:

- per call, **last_to_arrive**: the rank that arrived last, alone (-1 where the
  call has one rank (its streams and threads are one rank: ``ranks`` counts
  ranks), the last two ranks arrived at the same time, or the last rank is not
  known: nobody kept the others waiting alone); **last_by**: its arrival minus
  the latest arrival of another rank (0 where there is no last_to_arrive). Here,
  :func:`instances`.
- per rank, over calls: the calls it was last_to_arrive at, and the waiting
  that cost the others (the others' ``wait`` at those calls, summed:
  **caused wait**). :func:`stragglers`, and per context :func:`wait_causes`:
- per context, **most_waited_for**: the rank whose last arrivals cost the
  others the most waiting (caused wait, summed over the context's calls), and
  **most_often_last**: the rank that was last_to_arrive at the most calls,
  with its share of the calls. A rank late by a little at many calls is the
  most often last; one late by a lot at a few, the most waited for.

Every table and view takes these from here: ``cctviz.perfmodel.wait_transfer``
of a Timeline, the tree's and the Sankey's cue ("waited for: rank 2",
``js/kit/waits.js``) and the timeline's marks.

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
    >>> inst[["instance", "rank", "wait", "transfer", "last_to_arrive"]].values.tolist()
    [[0, 0, 30, 10, 1], [0, 1, 0, 10, 1], [1, 0, 5, 25, 1], [1, 1, 0, 25, 1]]
    >>> print(inst[["instance", "rank", "wait", "last_by"]])  # values with their units
       instance  rank    wait last_by
    0         0     0 30.0 ns 30.0 ns
    1         0     1    0 ns 30.0 ns
    2         1     0 5.00 ns 5.00 ns
    3         1     1    0 ns 5.00 ns
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..model._algo import identity_codes, merge_by_path, sorted_unique
from ..model.collectives import POINT_TO_POINT, collective_kind
from ..model.tables import UnitTable, with_units
from ..model.timeline import Timeline, profile_ranks
from ..model.tree import Tree

#: columns of :func:`instances`
COLUMNS = (
    "instance", "node", "collective", "seq", "profile", "rank", "arrival", "end", "wait",
    "transfer", "bytes", "last_to_arrive", "last_by", "ranks", "step", "group", "matched",
    "event",
)  # fmt: skip
#: units of the measured columns of :func:`instances` (bytes: the events' own unit if stated)
UNITS = {
    "arrival": "ns",
    "end": "ns",
    "wait": "ns",
    "transfer": "ns",
    "bytes": "B",
    "last_by": "ns",
}
#: collectives that move the same bytes on every rank of the group (nccl-tests sizes)
SAME_SIZE = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "barrier")
#: at most this many shifts are tried per (context, rank) when aligning sequences
MAX_SHIFTS = 16


def instances(timeline: Timeline, *, include_p2p: bool = False) -> UnitTable:
    """One row per (collective instance, rank) of ``timeline`` (module docstring).

    Args:
        timeline: a :class:`~cctviz.model.timeline.Timeline`.
        include_p2p: also match point-to-point calls (send, recv), by their order
            like the others (not by message: see the module docstring).

    Returns:
        a DataFrame with :data:`COLUMNS` (``attrs["units"]``: :data:`UNITS`;
        ``attrs["unit"]``, the times', is ``"ns"``). A trace cut by the runtime's cap (``timeline.meta["cut_ns"]``) is matched
        before its earliest cut only, where every rank is complete. Matched once
        per timeline (``Timeline.memo``): every view and analysis of it shares
        the result (a shallow copy each: add columns freely).
    """
    made = timeline.memo(
        f"collectives.instances p2p={include_p2p}", lambda: _match_calls(timeline, include_p2p)
    )
    return made.copy(deep=False)


def _match_calls(timeline: Timeline, include_p2p: bool) -> pd.DataFrame:
    """:func:`instances`, computed."""
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
    keep = comm & ev["counted"].to_numpy(dtype=bool)
    cut = timeline.meta.get("cut_ns")
    if cut is not None:  # a capped trace: past the earliest cut some ranks' calls are gone
        keep &= ev["start"].to_numpy() < int(cut)
    rows = np.flatnonzero(keep)
    e = ev.iloc[rows]
    if not len(e):
        return _empty()
    node = e["node"].to_numpy()
    prof = e["profile"].to_numpy()
    start = e["start"].to_numpy()
    end = e["end"].to_numpy()
    nbytes = (
        e["comm_bytes"].to_numpy(dtype=np.float64)
        if "comm_bytes" in e.columns
        else np.full(len(e), np.nan)
    )
    kinds = _base_names(names)
    kind = np.full(len(names), None, dtype=object)  # the collective kind, per called node
    called = np.unique(node)
    kind[called] = [collective_kind(str(k)) or str(k) for k in kinds[called]]
    ctx = _contexts(tree)[node]  # the calling context of each call, threads as one
    ctx_kind = np.empty(int(ctx.max()) + 1, dtype=object)
    ctx_kind[ctx] = kind[node]
    matched, seq, key = _match(e, ctx, prof, start, end, nbytes, ctx_kind)
    inst_id, _ = pd.factorize(key)
    n_inst = int(inst_id.max()) + 1
    last = np.full(n_inst, np.iinfo(np.int64).min)
    np.maximum.at(last, inst_id, start)
    # who is who: a rank (its streams and threads are one), or, where the rank is
    # not known, the profile itself
    rank_of = profile_ranks(timeline.profiles)
    who = np.where(rank_of[prof] >= 0, rank_of[prof], -2 - prof)
    span = int(who.max()) - int(who.min()) + 1  # (call, who) as one int64 key
    pairs = sorted_unique(inst_id.astype(np.int64) * span + (who - who.min()))
    distinct = np.bincount(pairs // span, minlength=n_inst)
    # the last to arrive and by how much: the last arrival and the latest of the
    # others (another rank's, not another stream of the same rank)
    by_arrival = np.lexsort((start, inst_id))
    pos_last = np.r_[np.flatnonzero(np.diff(inst_id[by_arrival]) != 0), len(by_arrival) - 1]
    last_row = by_arrival[pos_last]
    last_who = np.full(n_inst, np.iinfo(np.int64).min)
    last_who[inst_id[last_row]] = who[last_row]
    other = who != last_who[inst_id]
    second = np.full(n_inst, np.iinfo(np.int64).min)
    np.maximum.at(second, inst_id[other], start[other])
    last_by = np.where(distinct > 1, last - second, 0)
    # alone, or nobody: a call of one rank, a tie, a rank not known
    last_rank = np.where((distinct > 1) & (last_by > 0) & (last_who >= 0), last_who, -1)
    last_by = np.where(last_rank >= 0, last_by, 0)
    out = pd.DataFrame(
        {
            "instance": inst_id,
            "node": node,
            "collective": kinds[node],
            "seq": seq,
            "profile": prof,
            "rank": rank_of[prof],
            "arrival": start,
            "end": end,
            "wait": last[inst_id] - start,
            "transfer": np.maximum(end - last[inst_id], 0),
            "bytes": nbytes,
            "last_to_arrive": last_rank[inst_id],
            "last_by": last_by[inst_id],
            "ranks": distinct[inst_id],
            "step": e["step"].to_numpy() if "step" in e.columns else -1,
            "group": pd.Categorical(e["group"])
            if "group" in e.columns
            else pd.Categorical.from_codes(np.full(len(e), -1), pd.Index([], dtype=object)),
            "matched": pd.Categorical.from_codes(matched, ["seq", "order", "aligned"]),
            "event": rows,
        }
    )
    out = out.sort_values(["instance", "profile"], kind="stable").reset_index(drop=True)
    out.attrs["unit"] = "ns"
    return with_units(out, _units(timeline), instants=("arrival", "end"))


def _units(timeline: Timeline) -> dict[str, str]:
    """:data:`UNITS`, with the bytes' unit the events state."""
    stated = (timeline.meta.get("event_metrics") or {}).get("comm_bytes")
    return {**UNITS, "bytes": stated or UNITS["bytes"]}


def _contexts(tree: Tree) -> np.ndarray:
    """Per node, its calling context for matching: nodes whose call paths are
    equal once every thread is the same thread share one (same-named siblings stay
    apart, as in the tree: the n-th is the n-th). Which of a process's threads runs
    a call is no part of it: gloo runs each collective on whichever of its worker
    threads is free, so the k-th call may be on ``thread 1`` on one rank and on
    ``thread 2`` on another."""
    thread = tree.nodes["kind"].to_numpy() == "thread"
    parent = np.asarray(tree.parent, dtype=np.int64)
    if not thread.any():
        return np.arange(parent.size)
    code = identity_codes(tree.nodes["name"].to_numpy(), parent)[0]
    code[thread] = code.max() + 1  # one code for every thread
    return merge_by_path(parent, code, np.arange(parent.size))[0]


def _match(
    e: pd.DataFrame,
    node: np.ndarray,
    prof: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    nbytes: np.ndarray,
    kind: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """How each call is matched (0 seq, 1 order, 2 aligned), its number in its
    instance's sequence, and an int64 key of its instance (module docstring)."""
    n = len(e)
    how = np.ones(n, dtype=np.int64)
    k1 = node.astype(np.int64).copy()  # key: (rule, k1, k2)
    k2 = np.zeros(n, dtype=np.int64)
    k3 = np.zeros(n, dtype=np.int64)  # the recorded seq
    recorded = np.zeros(n, dtype=bool)
    if "seq" in e.columns and "group" in e.columns:
        rseq = e["seq"].to_numpy(dtype=np.float64)
        grp = e["group"]
        recorded = np.isfinite(rseq) & grp.notna().to_numpy()
        if recorded.any():
            how[recorded] = 0
            k1[recorded] = pd.factorize(grp[recorded].astype(str))[0]
            k3[recorded] = rseq[recorded].astype(np.int64)
            p2p = np.isin(kind, POINT_TO_POINT)[node[recorded]]  # numbered apart
            k2[recorded] = p2p * (int(k3.max()) + 1) + k3[recorded]
    same_size = np.isin(kind, SAME_SIZE)
    # the k-th call of a context on a rank: rank order within (profile, node) by start
    rest = np.flatnonzero(~recorded)
    order = rest[np.lexsort((start[rest], node[rest], prof[rest]))]
    run = prof[order] * (int(node.max()) + 1) + node[order]
    first = np.r_[True, run[1:] != run[:-1]] if order.size else np.zeros(0, bool)
    run_start = np.maximum.accumulate(np.where(first, np.arange(order.size), 0))
    seq = np.zeros(n, dtype=np.int64)
    seq[order] = np.arange(order.size) - run_start
    k2[rest] = seq[rest]
    # order is consistent for a context where every rank calls it as often and the
    # k-th calls agree in bytes (SAME_SIZE kinds)
    runs = order[first]  # first call of each (profile, node)
    counts = np.diff(np.r_[np.flatnonzero(first), order.size])
    m = int(node.max()) + 1
    lo = np.full(m, np.iinfo(np.int64).max)
    hi = np.full(m, -1)
    np.minimum.at(lo, node[runs], counts)
    np.maximum.at(hi, node[runs], counts)
    bad = (lo != hi) & (hi >= 0)  # nodes not called have no count
    if rest.size:
        ck, _ = pd.factorize(node[rest] * (int(seq.max()) + 1) + seq[rest])
        b = np.where(np.isnan(nbytes[rest]), -1.0, nbytes[rest])
        bmin = np.full(int(ck.max()) + 1, np.inf)
        bmax = np.full(int(ck.max()) + 1, -np.inf)
        np.minimum.at(bmin, ck, b)
        np.maximum.at(bmax, ck, b)
        disagree = (bmin[ck] != bmax[ck]) & same_size[node[rest]]
        bad[node[rest][disagree]] = True
    for u in np.flatnonzero(bad).tolist():  # a loop per inconsistent context
        rows = order[node[order] == u]
        _align(rows, prof, seq, end, nbytes, bool(same_size[u]), how, k1, k2)
    number = np.where(recorded, k3, seq)
    paired = (how == 2) & (k1 >= 0)
    number[paired] = k2[paired]  # the reference's call number
    r1, r2 = int(k1.max()) + 2, int(k2.max()) + 1  # one int64 code: (rule, k1, k2)
    return how, number, (how * r1 + (k1 + 1)) * r2 + k2


def _align(
    rows: np.ndarray,
    prof: np.ndarray,
    seq: np.ndarray,
    end: np.ndarray,
    nbytes: np.ndarray,
    same_size: bool,
    how: np.ndarray,
    k1: np.ndarray,
    k2: np.ndarray,
) -> None:
    """Align every rank's calls of one context (``rows``, by rank then start) to
    the reference rank's by a shift (module docstring); writes the keys."""
    p = prof[rows]
    ids, counts = np.unique(p, return_counts=True)
    ref = ids[np.argmax(counts)]  # the most calls; the lowest profile on a tie
    r = rows[p == ref]
    how[rows] = 2
    r_end, r_b = end[r], nbytes[r]
    r_sorted = np.argsort(r_end, kind="stable")
    for q in ids[ids != ref].tolist():  # a loop per rank of the context
        c = rows[p == q]
        s = _best_shift(end[c], nbytes[c], r_end, r_b, r_sorted, same_size)
        j = np.arange(c.size) + s
        ok = (j >= 0) & (j < r.size)
        ok[ok] &= _agree(nbytes[c][ok], r_b[j[ok]], same_size)
        k2[c[ok]] = j[ok]  # the reference's call number
        lone = c[~ok]  # an instance of its own: a key no other call has
        k1[lone], k2[lone] = -1, lone


def _agree(a: np.ndarray, b: np.ndarray, same_size: bool) -> np.ndarray:
    if not same_size:
        return np.ones(a.shape, dtype=bool)
    return (a == b) | (np.isnan(a) & np.isnan(b))


def _best_shift(
    c_end: np.ndarray,
    c_b: np.ndarray,
    r_end: np.ndarray,
    r_b: np.ndarray,
    r_sorted: np.ndarray,
    same_size: bool,
) -> int:
    """The shift ``s`` (call ``i`` meets the reference's ``i + s``) that pairs the
    most agreeing calls, then the closest ends, then the smallest."""
    se = r_end[r_sorted]
    k = np.clip(np.searchsorted(se, c_end), 1, max(se.size - 1, 1))
    if se.size > 1:
        k -= (c_end - se[k - 1]) < (se[k] - c_end)
    else:
        k[:] = 0
    near = r_sorted[np.minimum(k, se.size - 1)] - np.arange(c_end.size)
    vals, freq = np.unique(near, return_counts=True)
    cands = np.r_[0, vals[np.argsort(-freq, kind="stable")][:MAX_SHIFTS]]
    best: tuple[int, float, int] | None = None
    best_s = 0
    for s in np.unique(cands).tolist():  # a few shifts, each vectorised
        i = np.arange(c_end.size)
        j = i + s
        ok = (j >= 0) & (j < r_end.size)
        i, j = i[ok], j[ok]
        agree = _agree(c_b[i], r_b[j], same_size)
        gap = np.abs(c_end[i][agree] - r_end[j][agree])
        score = (-int(agree.sum()), float(np.median(gap)) if gap.size else np.inf, abs(s))
        if best is None or score < best:
            best, best_s = score, s
    return best_s


def stragglers(inst: pd.DataFrame) -> UnitTable:
    """How often and at what cost each rank was the last to arrive, over the
    calls with at least two ranks (as HTA and TraceLens rank stragglers), from
    :func:`instances`: one row per rank that was ``last_to_arrive`` at some call
    (index ``rank``), sorted by ``last_calls``:

    - ``last_calls``: the calls it was last to arrive at; ``share``: of all the
      calls with at least two ranks;
    - ``last_by_total``: its ``last_by`` summed over those calls (ns);
    - ``caused_wait_total``: the others' waits at those calls, summed (ns): what
      its last arrivals cost them.

    Example:
        >>> import pandas as pd
        >>> from cctviz.model.timeline import Timeline
        >>> from cctviz.model.tree import Tree
        >>> tree = Tree.from_parents([-1, 0], ["step", "all_reduce"], kind=["step", "comm"])
        >>> ev = pd.DataFrame({"profile": [0, 1, 0, 1], "node": [1, 1, 1, 1],
        ...                    "start": [10, 40, 100, 105], "end": [50, 50, 130, 130]})
        >>> print(stragglers(instances(Timeline(tree, ev))))  # doctest: +NORMALIZE_WHITESPACE
              last_calls  share last_by_total caused_wait_total
        rank
        1              2    1.0       35.0 ns           35.0 ns
    """
    multi = shared_calls(inst)
    n = int(multi["instance"].nunique())
    table = _last_arrivals(multi)
    table["share"] = table["last_calls"] / n if n else np.nan
    table = table[["last_calls", "share", "last_by_total", "caused_wait_total"]]
    table.index.name = "rank"
    table = table.sort_values("last_calls", ascending=False, kind="stable")
    table.attrs["unit"] = "ns"
    return with_units(table, {"last_by_total": "ns", "caused_wait_total": "ns"})


def shared_calls(inst: pd.DataFrame) -> pd.DataFrame:
    """The rows of :func:`instances` ``inst`` of calls among two ranks or more:
    the calls at which a rank can wait for another (a rank's streams and threads
    are one rank). Every "who waited for whom" table counts these.

    >>> shared_calls(pd.DataFrame({"instance": [0, 1, 1], "ranks": [1, 2, 2]}))["instance"].tolist()
    [1, 1]
    """
    return inst[inst["ranks"].to_numpy() > 1]


def last_rows(inst: pd.DataFrame) -> pd.DataFrame:
    """One row of :func:`instances` ``inst`` per call that has a last to arrive:
    that rank's (its latest arrival, where profiles share the rank); calls of one
    rank, ties and ranks not known have none.

    >>> t = pd.DataFrame({"instance": [0, 0, 1, 1], "rank": [0, 1, 0, 1], "arrival": [5, 9, 7, 7],
    ...                   "last_to_arrive": [1, 1, -1, -1]})
    >>> last_rows(t)[["instance", "rank", "arrival"]].values.tolist()
    [[0, 1, 9]]
    """
    named = inst["last_to_arrive"].to_numpy() >= 0  # -1: nobody, or a rank not known
    last = inst[named & (inst["rank"].to_numpy() == inst["last_to_arrive"].to_numpy())]
    return last.sort_values("arrival", kind="stable").drop_duplicates("instance", keep="last")


def _last_arrivals(multi: pd.DataFrame, by: str | None = None) -> pd.DataFrame:
    """The one computation behind every "who was last" aggregate: over the rows
    of :func:`instances` ``multi`` (calls with at least two ranks), per (``by``
    if given, ``last_to_arrive`` rank): ``last_calls`` (calls it was last at),
    ``last_by_total`` and ``caused_wait_total`` (the others' waits at those
    calls, summed; its own wait there is 0)."""
    last = multi["last_to_arrive"].to_numpy()
    rows = multi[last >= 0]
    keys = ([by] if by else []) + ["last_to_arrive"]
    caused = rows.groupby(keys)["wait"].sum()
    calls = rows.drop_duplicates("instance").groupby(keys)
    out = pd.DataFrame(
        {
            "last_calls": calls.size(),
            "last_by_total": calls["last_by"].sum(),
            "caused_wait_total": caused,  # grouped from the same rows: no gaps
        }
    )
    return out


def message_sizes(timeline: Timeline, by: str = "collective") -> UnitTable:
    """How big the messages are: ``calls`` and ``bytes_total`` (their bytes,
    summed) per power-of-two size bin, per collective kind (``by="collective"``)
    or per calling context (``"context"``), point-to-point calls included (many
    small messages are a finding in themselves). Bins are ``[lo, hi)`` bytes; a
    call of 0 bytes has ``lo = hi = 0``.

    >>> import cctviz
    >>> from cctviz import examples
    >>> tl = cctviz.read_timeline(examples.path("pingpong-otf2"))  # bundled, needs cctviz[scorep]
    >>> sizes = message_sizes(tl)
    >>> sizes[["collective", "lo", "hi", "calls"]].head(2).values.tolist()
    [['recv', 16384, 32768, 2], ['recv', 32768, 65536, 2]]
    >>> print(sizes.head(2))
      collective      lo      hi  calls bytes_total
    0       recv 16.4 kB 32.8 kB      2     32.8 kB
    1       recv 32.8 kB 65.5 kB      2     65.5 kB
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
        .agg(calls=("bytes", "size"), bytes_total=("bytes", "sum"))
        .reset_index()
    )
    table.attrs["unit"] = "B"
    return with_units(table, {"lo": "B", "hi": "B", "bytes_total": "B"})


#: columns of :func:`wait_causes`
CAUSE_COLUMNS = (
    "collective", "calls", "wait_total", "most_waited_for", "most_waited_for_calls",
    "most_waited_for_wait_total", "most_often_last", "most_often_last_calls",
    "most_often_last_share", "ranks_ever_last", "before", "before_time_total",
    "arrival_spread_total",
)  # fmt: skip
#: units of the measured columns of :func:`wait_causes`
CAUSE_UNITS = {
    "wait_total": "ns",
    "most_waited_for_wait_total": "ns",
    "before_time_total": "ns",
    "arrival_spread_total": "ns",
}


def wait_causes(
    timeline: Timeline,
    inst: pd.DataFrame | None = None,
    groups: np.ndarray | None = None,
    *,
    before: bool = True,
) -> UnitTable:
    """Who the waiting at each collective context waits for, and what that rank
    was doing: one row per ``comm`` node of the timeline's tree (index ``node``),
    or per group of nodes (``groups``: a group id per tree node, -1 for none;
    index ``group``: a Sankey's super nodes). ``before=False`` leaves out the
    columns of what the last to arrive did meanwhile (``before``,
    ``before_time_total``, ``arrival_spread_total``: they sort every event), for
    a caller that does not show them.

    Waiting is not working: the rank whose time in a collective stands out is the
    one that waits, not the one that causes it. Per context, over its calls
    with at least two ranks (the words of the module docstring):

    - ``calls``; ``wait_total``: the ranks' waits summed (ns);
    - ``most_waited_for``: the rank whose last arrivals cost the others the most
      waiting, summed over the calls (-1: no call had a last_to_arrive), with
      ``most_waited_for_calls`` (the calls it was last_to_arrive at) and
      ``most_waited_for_wait_total`` (the others' waits at those calls, ns);
    - ``most_often_last``: the rank that was last_to_arrive at the most calls
      (the lowest on a tie), ``most_often_last_calls`` and
      ``most_often_last_share`` (of ``calls``); ``ranks_ever_last``: how many
      ranks were last_to_arrive at some call;
    - ``before``: what the last to arrive were doing while the others waited:
      the node (tree id, -1 if none) with the most time on the last_to_arrive
      rank between the first and the last arrival, among the intervals that
      ended by the last arrival (so not the calls enclosing the collective),
      ``before_time_total`` (ns, summed over the calls) out of
      ``arrival_spread_total`` (the first-to-last arrival spans of the calls
      with a last_to_arrive, summed, ns).

    Per rank rather than per context: :func:`stragglers`; both count from the
    same rows (``_last_arrivals``).

    Args:
        timeline: a :class:`~cctviz.model.timeline.Timeline`.
        inst: its :func:`instances` if already computed.
        groups: contexts to pool, a group id per tree node (None: each node).

    Returns:
        a DataFrame indexed by node with :data:`CAUSE_COLUMNS` (``attrs["units"]``:
        :data:`CAUSE_UNITS`; ``attrs["unit"]`` is ``"ns"``). No row for a context
        without a call of two ranks.

    Example:
        >>> import pandas as pd
        >>> from cctviz.model.timeline import Timeline
        >>> from cctviz.model.tree import Tree
        >>> tree = Tree.from_parents([-1, 0, 0], ["step", "io", "all_reduce"],
        ...                          kind=["step", "io", "comm"])
        >>> ev = pd.DataFrame({"profile": [0, 0, 1, 1, 1],
        ...                    "node": [0, 2, 0, 1, 2],
        ...                    "start": [0, 10, 0, 0, 40], "end": [60, 50, 60, 40, 50]})
        >>> c = wait_causes(Timeline(tree, ev))
        >>> c[["most_waited_for", "most_waited_for_wait_total", "most_often_last", "before",
        ...    "before_time_total", "arrival_spread_total"]].values.tolist()
        [[1, 30, 1, 1, 30, 30]]
    """
    inst = instances(timeline) if inst is None else inst
    name = "node" if groups is None else "group"
    multi = shared_calls(inst)
    node = multi["node"].to_numpy(dtype=np.int64)
    ctx = node if groups is None else np.asarray(groups, dtype=np.int64)[node]
    multi = multi[ctx >= 0].assign(ctx=ctx[ctx >= 0])
    if not len(multi):
        return _empty_causes(name)
    table = multi.groupby("ctx").agg(wait_total=("wait", "sum"))
    calls = multi.drop_duplicates("instance")
    table["calls"] = calls.groupby("ctx").size()
    table["collective"] = calls.groupby("ctx")["collective"].first()
    by_rank = _last_arrivals(multi, by="ctx").reset_index()
    # the most waited for: the most caused wait; the most often last: the most calls
    # (each the lowest rank on a tie: by_rank is in (ctx, rank) order, sorts are stable)
    for word, key in (("most_waited_for", "caused_wait_total"), ("most_often_last", "last_calls")):
        top = by_rank.sort_values(["ctx", key], ascending=[True, False], kind="stable")
        top = top.drop_duplicates("ctx").set_index("ctx")
        table[word] = top["last_to_arrive"]
        table[f"{word}_calls"] = top["last_calls"]
        if word == "most_waited_for":
            table[f"{word}_wait_total"] = top["caused_wait_total"]
    table["ranks_ever_last"] = by_rank.groupby("ctx").size()
    if before:  # what the last to arrive did meanwhile: a sort of every event (once per timeline)
        table = table.join(_before_arrival(timeline, multi))
    table = table.fillna({"most_waited_for": -1, "most_often_last": -1, "before": -1}).fillna(0)
    for c in table.columns:
        if c != "collective":
            table[c] = table[c].astype(np.int64)
    table["most_often_last_share"] = table["most_often_last_calls"] / table["calls"]
    table = table[[c for c in CAUSE_COLUMNS if c in table.columns]]
    table.index.name = name
    table.attrs["unit"] = "ns"
    return with_units(table, CAUSE_UNITS)


def _by_profile_end(timeline: Timeline) -> tuple:
    """The timed intervals in (profile, end) order, as one sorted int64 key and the
    events' rows in that order: sorted once per timeline (every wait_causes of it
    shares it), the event columns read from the timeline when used."""
    ev = timeline.events
    rows = np.flatnonzero(ev["timed"].to_numpy(dtype=bool)) if "timed" in ev.columns else None
    pick = (lambda c: ev[c].to_numpy()[rows]) if rows is not None else (lambda c: ev[c].to_numpy())
    start, end = pick("start"), pick("end")
    t00 = int(start.min())
    scale = int(end.max()) - t00 + 1  # (profile, end) as one sortable int64
    key = pick("profile").astype(np.int64) * scale + (end - t00)
    order = np.argsort(key, kind="stable")
    return t00, scale, key[order], order if rows is None else rows[order]


def _before_arrival(timeline: Timeline, multi: pd.DataFrame) -> pd.DataFrame:
    """Per context: the node the last to arrive spent most time in between the
    first and the last arrival (intervals that ended by the last arrival),
    that time, and the spans summed (see :func:`wait_causes`). Vectorised: the
    intervals ending in each span are a range of the (profile, end) order."""
    arrive = multi.groupby("instance").agg(first=("arrival", "min"), ctx=("ctx", "first"))
    last = last_rows(multi).set_index("instance")
    w = arrive.join(last[["profile", "arrival"]], how="inner")
    out = pd.DataFrame(index=pd.Index([], name="ctx", dtype=np.int64))
    if not len(w):
        return out.assign(before=[], before_time_total=[], arrival_spread_total=[])
    t00, scale, key, order = timeline.memo(
        "collectives.by_profile_end", lambda: _by_profile_end(timeline)
    )
    ev = timeline.events
    wp = w["profile"].to_numpy(dtype=np.int64) * scale
    a0 = w["first"].to_numpy(dtype=np.int64)
    a1 = w["arrival"].to_numpy(dtype=np.int64)
    lo = np.searchsorted(key, wp + (a0 - t00), side="right")  # ended after the first arrival
    hi = np.searchsorted(key, wp + (a1 - t00), side="right")  # and by the last arrival
    n = hi - lo
    which = np.repeat(np.arange(len(w)), n)
    pos = np.arange(n.sum()) - np.repeat(np.cumsum(n) - n, n) + np.repeat(lo, n)
    ev_i = order[pos]  # rows of the events
    start, end = ev["start"].to_numpy()[ev_i], ev["end"].to_numpy()[ev_i]
    inside = end - np.maximum(start, a0[which])
    ctx = w["ctx"].to_numpy(dtype=np.int64)
    spent = pd.DataFrame({"ctx": ctx[which], "before": ev["node"].to_numpy()[ev_i], "t": inside})
    spent = spent.groupby(["ctx", "before"])["t"].sum().reset_index()
    spent = spent.sort_values(["ctx", "t"], ascending=[True, False], kind="stable")
    best = spent.drop_duplicates("ctx").set_index("ctx")
    spans = pd.Series(a1 - a0, index=ctx).groupby(level=0).sum()
    out = pd.DataFrame({"before": best["before"], "before_time_total": best["t"]})
    out = out.reindex(spans.index)
    out["arrival_spread_total"] = spans
    out.index.name = "ctx"
    return out


def _empty_causes(name: str = "node") -> UnitTable:
    out = pd.DataFrame({c: pd.Series(dtype=np.int64) for c in CAUSE_COLUMNS})
    out["collective"] = out["collective"].astype(object)
    out["most_often_last_share"] = out["most_often_last_share"].astype(np.float64)
    out.index.name = name
    out.attrs["unit"] = "ns"
    return with_units(out, CAUSE_UNITS)


def _base_names(names: np.ndarray) -> np.ndarray:
    """A collective's kind from its node's name ("all_reduce (2 ranks)" -> "all_reduce"),
    once per tree node (events index it)."""
    return np.asarray([str(n).split(" (")[0] for n in names], dtype=object)


def _empty() -> UnitTable:
    out = pd.DataFrame({c: pd.Series(dtype=object) for c in COLUMNS})
    out.attrs["unit"] = "ns"
    return with_units(out, UNITS, instants=("arrival", "end"))


__all__ = [
    "CAUSE_COLUMNS",
    "CAUSE_UNITS",
    "COLUMNS",
    "UNITS",
    "MAX_SHIFTS",
    "SAME_SIZE",
    "instances",
    "message_sizes",
    "stragglers",
    "wait_causes",
]
