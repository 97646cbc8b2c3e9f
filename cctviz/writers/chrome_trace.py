"""Writer of a :class:`~cctviz.model.timeline.Timeline` as Chrome trace JSON in
torch.profiler's (Kineto's) dialect, format ``"chrome-trace"``: one file per rank,
which Perfetto's UI, Holistic Trace Analysis (HTA) and cctviz's own ``kineto``
reader open.

What is written, per rank (``rank-<r>.pt.trace.json``, gzipped where asked):

- the top level as Kineto writes it: ``schemaVersion``, ``distributedInfo``
  (``rank``, ``world_size``, ``backend`` where known: HTA takes the rank from
  there), ``baseTimeNanoseconds`` (the clock of every ``ts``: a whole
  microsecond at or before the first event of the whole timeline, so that the
  ranks' files share one clock and fractional microseconds keep every
  nanosecond), ``displayTimeUnit``, ``traceEvents``;
- every interval as a complete (``"X"``) event: ``name`` the node's name,
  ``ts``/``dur`` in microseconds (fractional: whole ns as the timeline keeps
  them), ``cat`` from the node's kind (``op`` and ``comm`` -> ``cpu_op``, a
  collective annotation ``nccl:``/``gloo:`` -> ``user_annotation``, ``function``
  -> ``python_function``, ``runtime`` -> ``cuda_runtime``, ``kernel`` / ``memcpy``
  / ``memset`` -> ``kernel`` / ``gpu_memcpy`` / ``gpu_memset``, everything else
  (regions, steps, phases, modules...) -> ``user_annotation``);
- ``pid``/``tid``: a tree read from Kineto (roots of kind ``process`` with
  ``thread`` children) keeps its process and thread ids (the nodes' ``id``
  column), and GPU events their ``device``/``stream`` (pid/tid) and a
  ``correlation`` shared with the runtime call that launched them (the events'
  ``launch_event``); other timelines (a ``cctviz run --timeline`` run) get
  ``pid`` = rank and ``tid`` = rank for the rank's first profile (the main
  thread), rank + k for its k-th;
- collectives (events with a ``comm_bytes`` value) as Kineto records them: a
  ``record_param_comms`` ``cpu_op`` with the args HTA and TraceLens read:
  ``Collective name`` (c10d's spelling: ``allreduce``, ``allgather``...),
  ``In msg nelems``/``Out msg nelems`` and ``dtype`` (``"Byte"``: the bytes are
  counted as one-byte elements, so that nelems x element size is the recorded
  bytes; nccl-tests' convention: an all-gather's whole output, a
  reduce-scatter's whole input), ``Group size``, ``Rank`` and, where the
  timeline knows them, ``Process Group Name``, ``Process Group Ranks`` and
  ``Seq``. The event itself where its node is named ``record_param_comms``, else
  such an event directly inside it, else a new one with the same ``ts`` and
  ``dur`` inside it (as torch nests ``c10d::allreduce_ > record_param_comms``):
  read back, the collective's context has one more level,
  ``record_param_comms``, holding its time and bytes;
- ``M`` events naming processes and threads, and counters as ``C`` events (one
  arg per track, named by the track's unit: Perfetto shows
  ``memory allocated (cuda:0) B``).

Not kept: events of ``process``/``thread``/``device`` nodes (Kineto's synthetic
levels, made again from pid/tid on reading), the ``timed`` flag (every CPU event
is written, and nests by time on reading), Python frames' ``Python id`` links,
and counters on reading with cctviz's ``kineto`` reader (it reads ``[memory]``
instants, not ``C`` events).

The text of every event is made column by column (numpy object arrays, names
escaped once per node), in pieces of :data:`CHUNK` events: no Python loop runs
per event.

Example:
    >>> import cctviz, tempfile
    >>> tl = cctviz.read_timeline("../shared/data/kineto/hta_trace_filter_sampled_rank-1.json.gz")
    >>> [p.name for p in write_chrome_trace(tl, tempfile.mkdtemp())]
    ['rank-1.pt.trace.json']
"""

from __future__ import annotations

import gzip as _gzip
import json
import os
from collections.abc import Callable, Iterable
from itertools import chain
from pathlib import Path
from typing import IO, Any

import numpy as np
import pandas as pd

from ..model.collectives import NAME_PREFIX, collective_kind, kind_of_leaf
from ..model.timeline import TIME_UNIT, Timeline, profile_ranks
from ..model.units import factor

#: the timeline's time unit per microsecond (Chrome traces count in us)
US = factor("us", TIME_UNIT)
#: events formatted at a time (bounds the memory of the text)
CHUNK = 1 << 20
#: Kineto's category of each node kind (the rest: ``user_annotation``)
CATEGORY = {
    "op": "cpu_op",
    "comm": "cpu_op",
    "function": "python_function",
    "runtime": "cuda_runtime",
    "kernel": "kernel",
    "memcpy": "gpu_memcpy",
    "memset": "gpu_memset",
}
GPU_KINDS = ("kernel", "memcpy", "memset")
#: kinds of the levels a Kineto reader makes from pid/tid (never written as events)
SYNTHETIC_KINDS = ("process", "thread", "device")
#: c10d's ``Collective name`` of each collective kind (where it differs from the kind)
C10D_NAME = {"all_reduce": "allreduce", "all_gather": "allgather"}
RPC = "record_param_comms"


# ------------------------------------------------------------ JSON text, vectorised
def _json_text(
    values: Any, conv: Callable[[Any], Any] | None = None, ids: bool = False
) -> np.ndarray:
    """JSON text of each value (strings quoted and escaped, numbers as numbers),
    of ``conv(value)`` where given, computed once per distinct value; ``ids``:
    numeric strings (Kineto's pids and tids) as numbers."""
    codes, uniq = pd.factorize(pd.Series(values, dtype=object), use_na_sentinel=False)
    conv = conv or (lambda v: v)
    text = np.asarray([json.dumps(_plain(conv(u), ids)) for u in uniq], dtype=object)
    return text[codes] if len(text) else np.empty(0, dtype=object)


def _plain(v: Any, ids: bool = False) -> Any:
    """A value json can write: numpy scalars as Python ones, integral floats as
    ints, NaN/None as null; with ``ids``, numeric strings as numbers."""
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return None
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if ids and isinstance(v, str) and v.lstrip("-").isdigit():
        return int(v)
    return v


def _numbers(x: np.ndarray) -> np.ndarray:
    """Shortest round-trip text of float64 values (``1234.5``; ``12.0``)."""
    return np.asarray(x, dtype=np.float64).astype(str).astype(object)


def _ints(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, dtype=np.int64).astype(str).astype(object)


def _object(fields: list[tuple[str, np.ndarray]], n: int) -> np.ndarray:
    """``{"key": value, ...}`` per row from columns of JSON text (None: key left out)."""
    out = np.full(n, "{", dtype=object)
    first = np.ones(n, dtype=bool)
    for key, text in fields:
        sel = pd.notna(text)
        sep = np.where(first[sel], "", ", ").astype(object)
        out[sel] = out[sel] + sep + json.dumps(key) + ": " + text[sel]
        first &= ~sel
    return out + "}"


# ------------------------------------------------------------ where events go
def _threads(tl: Timeline) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict, dict]:
    """Per node: whether the tree gives its pid and tid (a Kineto tree), which,
    and whether to write its events;
    the names of the Kineto tree's processes and threads (their ``label``)."""
    nodes = tl.tree.nodes
    n = len(nodes)
    kind = nodes["kind"].astype(str).to_numpy() if "kind" in nodes else np.full(n, "", object)
    depth = nodes["depth"].to_numpy()
    idx = np.arange(n)
    # pre-order: a node's root is the last depth-0 node at or before it
    root = np.maximum.accumulate(np.where(depth == 0, idx, 0)) if n else idx
    lvl1 = np.maximum.accumulate(np.where(depth == 1, idx, 0)) if n else idx
    from_tree = (kind[root] == "process") & (depth >= 1) & (kind[lvl1] == "thread")
    # Kineto's pid/tid, kept as text in the ``id`` column (else the node's position)
    ids = pd.to_numeric(
        pd.Series(nodes["id"].to_numpy(dtype=object) if "id" in nodes else None, index=idx),
        errors="coerce",
    ).to_numpy(dtype=np.float64)
    num = np.where(np.isfinite(ids), ids, idx).astype(np.int64)
    pid = np.where(from_tree, num[root], -1)
    tid = np.where(from_tree, num[lvl1], -1)
    write = ~np.isin(kind, SYNTHETIC_KINDS)
    labels = nodes["label"].to_numpy(dtype=object) if "label" in nodes else np.full(n, None)
    procs = np.unique(root[from_tree])
    threads = np.unique(lvl1[from_tree])
    proc_names = dict(zip(num[procs].tolist(), labels[procs]))
    thread_names = dict(
        zip(zip(num[root[threads]].tolist(), num[threads].tolist()), labels[threads])
    )
    return from_tree, pid, tid, write, proc_names, thread_names


def _profile_threads(tl: Timeline) -> tuple[np.ndarray, np.ndarray]:
    """Per profile: its rank, and its tid where the tree gives none (rank + k for
    the rank's k-th profile: its first is the main thread, tid = pid)."""
    ranks = profile_ranks(tl.profiles)
    k = pd.Series(ranks).groupby(ranks).cumcount().to_numpy()
    return ranks, ranks + k


# ------------------------------------------------------------ collectives
def _group_sizes(tl: Timeline, ev: pd.DataFrame, names: np.ndarray) -> np.ndarray:
    """The group size of each collective event: the node's ``group_size`` column
    (Kineto), else ``(n ranks)`` in its name, else the world."""
    nodes = tl.tree.nodes
    node = ev["node"].to_numpy()
    world = tl.meta.get("world_size")
    if world is None:
        world = len(np.unique(profile_ranks(tl.profiles)))
    size = np.full(len(ev), float(world))
    by_name = np.asarray(
        [
            float(s.rsplit("(", 1)[1].split(" ", 1)[0])
            if kind_of_leaf(s) and s.endswith(" ranks)")
            else np.nan
            for s in names
        ]
    )
    have = np.isfinite(by_name[node]) if len(names) else np.zeros(len(ev), bool)
    size[have] = by_name[node][have]
    if "group_size" in nodes:
        col = pd.to_numeric(nodes["group_size"], errors="coerce").to_numpy(dtype=np.float64)[node]
        size = np.where(np.isfinite(col) & (col > 0), col, size)
    return size


def _collective_names(tl: Timeline, ev: pd.DataFrame, names: np.ndarray) -> np.ndarray:
    """c10d's ``Collective name`` of each collective event (the node's
    ``collective`` column where there is one, else its name's kind)."""
    nodes = tl.tree.nodes
    per_node = np.asarray([kind_of_leaf(s) or collective_kind(s) or s for s in names], dtype=object)
    if "collective" in nodes:
        col = nodes["collective"].to_numpy(dtype=object)
        known = pd.notna(col)
        per_node[known] = col[known]
    kind = per_node[ev["node"].to_numpy()]
    return np.asarray([C10D_NAME.get(k, k) for k in kind], dtype=object)


def _comm_args(tl: Timeline, ev: pd.DataFrame, names: np.ndarray, rank: int) -> np.ndarray:
    """Kineto's ``record_param_comms`` args of each collective event (JSON text)."""
    n = len(ev)
    nbytes = np.rint(ev["comm_bytes"].to_numpy(dtype=np.float64)).astype(np.int64)
    group = _group_sizes(tl, ev, names)
    cname = _collective_names(tl, ev, names)
    kind = np.asarray([collective_kind(c) or c for c in cname], dtype=object)
    per_rank = np.floor_divide(nbytes, np.maximum(group, 1).astype(np.int64))
    n_in = np.where(np.isin(kind, ("all_gather", "gather")), per_rank, nbytes)
    n_out = np.where(np.isin(kind, ("reduce_scatter", "scatter")), per_rank, nbytes)
    n_out = np.where(kind == "send", 0, n_out)
    n_in = np.where(kind == "recv", 0, n_in)
    fields = [
        ("Collective name", _json_text(cname)),
        ("In msg nelems", _ints(n_in)),
        ("Out msg nelems", _ints(n_out)),
        ("Group size", _ints(group)),
        ("dtype", np.full(n, '"Byte"', dtype=object)),
        ("Rank", np.full(n, str(rank), dtype=object)),
    ]
    nodes, node = tl.tree.nodes, ev["node"].to_numpy()
    pg = ev["group"].to_numpy(dtype=object) if "group" in ev else None
    if pg is None and "process_group" in nodes:
        pg = nodes["process_group"].to_numpy(dtype=object)[node]
    if pg is not None:
        fields.append(("Process Group Name", _nullable(pg, str)))
    if "process_group_ranks" in nodes:
        fields.append(
            (
                "Process Group Ranks",
                _nullable(nodes["process_group_ranks"].to_numpy(dtype=object)[node], _ranks),
            )
        )
    if "seq" in ev:
        seq = ev["seq"].to_numpy(dtype=np.float64)
        fields.append(("Seq", np.where(np.isfinite(seq), _ints(np.nan_to_num(seq)), None)))
    return _object(fields, n)


def _ranks(v: Any) -> Any:
    """``Process Group Ranks`` as Kineto writes them: a list where the text is one."""
    try:
        out = json.loads(v) if isinstance(v, str) else v
    except ValueError:
        return str(v)
    return out


def _nullable(values: np.ndarray, conv: Any) -> np.ndarray:
    ok = pd.notna(values)
    out = np.full(len(values), None, dtype=object)
    if ok.any():
        out[ok] = _json_text(values[ok], conv)
    return out


# ------------------------------------------------------------ one rank's events
def _rank_events(
    tl: Timeline, profiles: np.ndarray, rank: int, base: int, where: tuple
) -> pd.DataFrame:
    """The X events of ``profiles`` (one rank) as columns: sort keys and JSON text."""
    in_tree, pid_of_node, tid_of_node, write, _, _ = where
    _, prof_tid = _profile_threads(tl)
    ev = tl.events[np.isin(tl.events["profile"].to_numpy(), profiles)]
    node = ev["node"].to_numpy()
    ev = ev[write[node]]
    node = ev["node"].to_numpy()
    nodes = tl.tree.nodes
    names = nodes["name"].astype(str).to_numpy()
    kind = nodes["kind"].astype(str).to_numpy() if "kind" in nodes else np.full(len(nodes), "")
    cat = np.asarray([CATEGORY.get(k, "user_annotation") for k in kind], dtype=object)
    prefixed = pd.Series(names).str.match(NAME_PREFIX.pattern).to_numpy()
    annot = (kind == "comm") & prefixed & ~pd.Series(names).str.startswith("c10d::").to_numpy()
    cat[annot] = "user_annotation"
    gpu = np.isin(kind, GPU_KINDS)[node]
    prof = ev["profile"].to_numpy()
    pid = np.where(in_tree[node], pid_of_node[node], rank)
    tid = np.where(in_tree[node], tid_of_node[node], prof_tid[prof])
    pid_t, tid_t = _ints(pid), _ints(tid)
    args = np.full(len(ev), None, dtype=object)
    if gpu.any():
        dev = ev["device"].to_numpy(dtype=object)[gpu] if "device" in ev else np.zeros(gpu.sum())
        stream = ev["stream"].to_numpy(dtype=object)[gpu] if "stream" in ev else np.zeros(gpu.sum())
        pid_t[gpu], tid_t[gpu] = _json_text(dev, ids=True), _json_text(stream, ids=True)
        fields = [("device", pid_t[gpu]), ("stream", tid_t[gpu])]
        if "launch_event" in ev:
            launch = ev["launch_event"].to_numpy()[gpu]
            fields.append(("correlation", np.where(launch >= 0, _ints(launch + 1), None)))
            launchers = np.isin(ev["event"].to_numpy(), launch[launch >= 0])
            args[launchers] = _object(
                [("correlation", _ints(ev["event"].to_numpy()[launchers] + 1))],
                int(launchers.sum()),
            )
        args[gpu] = _object(fields, int(gpu.sum()))
    start = ev["start"].to_numpy() - base
    dur = ev["end"].to_numpy() - ev["start"].to_numpy()
    depth = nodes["depth"].to_numpy()[node].astype(np.float64)
    out = pd.DataFrame(
        {
            "pid": pid_t,
            "tid": tid_t,
            "start": start,
            "dur": dur,
            "depth": depth,
            "name": _json_text(names)[node] if len(names) else np.empty(0, object),
            "cat": cat[node],
            "args": args,
            "gpu": gpu,
        }
    )
    comm = (
        np.isfinite(ev["comm_bytes"].to_numpy(dtype=np.float64))
        if "comm_bytes" in ev
        else np.zeros(len(ev), dtype=bool)
    )
    if comm.any():
        out = _with_collectives(tl, ev, out, comm, names, rank)
    return out


def _with_collectives(
    tl: Timeline,
    ev: pd.DataFrame,
    out: pd.DataFrame,
    comm: np.ndarray,
    names: np.ndarray,
    rank: int,
) -> pd.DataFrame:
    """Kineto's collective args on each collective's ``record_param_comms`` event:
    the event itself, a direct child of that name, or a new child."""
    heads = np.flatnonzero(comm)
    args = _comm_args(tl, ev.iloc[heads], names, rank)
    node = ev["node"].to_numpy()
    carrier = np.where(names[node[heads]] == RPC, heads, -1)
    if "parent_event" in ev:  # Kineto's c10d:: op > record_param_comms
        pos = pd.Series(np.arange(len(ev)), index=ev["event"].to_numpy())
        child = np.flatnonzero(
            (names[node] == RPC) & ev["parent_event"].isin(ev["event"].iloc[heads]).to_numpy()
        )
        parent_pos = pos.reindex(ev["parent_event"].to_numpy()[child]).to_numpy()
        first = pd.Series(child).groupby(parent_pos).first()
        at = pd.Series(np.arange(heads.size), index=heads)
        found = at.reindex(first.index).to_numpy()
        ok = pd.notna(found)
        sel = found[ok].astype(np.int64)
        carrier[sel] = np.where(carrier[sel] < 0, first.to_numpy()[ok], carrier[sel])
    has = carrier >= 0
    col = out["args"].to_numpy(dtype=object).copy()
    col[carrier[has]] = args[has]
    out["args"] = col
    new = out.iloc[heads[~has]].copy()
    if len(new):
        # inside a collective Kineto's reader knows by name (c10d::, nccl:...), which
        # keeps its time: an instant at its start, so that nothing moves below it
        named = pd.Series(names[node[heads[~has]]]).str.match(NAME_PREFIX.pattern).to_numpy()
        new.loc[named, "dur"] = 0
        new["name"] = json.dumps(RPC)
        new["cat"] = "cpu_op"
        new["depth"] = new["depth"].to_numpy() + 0.5  # inside its collective, on a tie
        new["args"] = args[~has]
        out = pd.concat([out, new], ignore_index=True)
    return out


def _sort(df: pd.DataFrame) -> pd.DataFrame:
    """Events in (start, longest first, depth) order: a reader that nests by time
    (Kineto's, HTA's) meets a parent before its child of the same interval."""
    order = np.lexsort((df["depth"].to_numpy(), -df["dur"].to_numpy(), df["start"].to_numpy()))
    return df.iloc[order]


def _lines(df: pd.DataFrame) -> np.ndarray:
    """The X events' text, in ``df``'s order."""
    ts = _numbers(df["start"].to_numpy() / US)
    dur = _numbers(df["dur"].to_numpy() / US)
    text = (
        '{"ph": "X", "cat": "'
        + df["cat"].to_numpy(dtype=object)
        + '", "name": '
        + df["name"].to_numpy(dtype=object)
        + ', "pid": '
        + df["pid"].to_numpy(dtype=object)
        + ', "tid": '
        + df["tid"].to_numpy(dtype=object)
        + ', "ts": '
        + ts
        + ', "dur": '
        + dur
    )
    args = df["args"].to_numpy(dtype=object)
    has = pd.notna(args)
    text[has] = text[has] + ', "args": ' + args[has]
    return text + "}"


def _metadata(df: pd.DataFrame, where: tuple, rank: int) -> tuple[np.ndarray, str]:
    """``M`` events naming each process and thread of a rank's events (the Kineto
    tree's labels where it has them; ``rank r``, ``GPU d``, ``stream s`` else),
    and the pid of the rank's CPU process (for its counters)."""
    *_, proc_names, thread_names = where
    pairs = df[["pid", "tid", "gpu"]].drop_duplicates()
    lines: list[str] = []
    cpu_pid = str(rank)
    for pid, group in pairs.groupby("pid", sort=False):
        gpu = bool(group["gpu"].iloc[0])
        value = json.loads(pid)
        if not gpu:
            cpu_pid = pid
        name = proc_names.get(value) if not gpu else None
        name = name or (f"GPU {value}" if gpu else f"rank {rank}")
        lines.append(_meta_line("process_name", pid, "0", name))
        for tid in group["tid"]:
            t = json.loads(tid)
            tname = None if gpu else thread_names.get((value, t))
            tname = tname or (f"stream {t}" if gpu else f"thread {t}")
            lines.append(_meta_line("thread_name", pid, tid, tname))
    return np.asarray(lines, dtype=object), cpu_pid


def _meta_line(what: str, pid: str, tid: str, name: Any) -> str:
    return (
        f'{{"ph": "M", "name": "{what}", "pid": {pid}, "tid": {tid}, '
        f'"args": {{"name": {json.dumps(str(name))}}}}}'
    )


def _counter_lines(tl: Timeline, profiles: np.ndarray, pid: str, base: int) -> np.ndarray:
    """The counters of ``profiles`` as ``C`` events, one arg named by the unit."""
    c = tl.counters
    c = c[np.isin(c["profile"].to_numpy(), profiles)] if len(c) else c
    if not len(c):
        return np.empty(0, dtype=object)
    units = tl.units
    track = c["track"].to_numpy(dtype=object)
    arg = _json_text([units.get(t) or "value" for t in track])
    value = c["value"].to_numpy(dtype=np.float64)
    ok = np.isfinite(value)
    text = (
        '{"ph": "C", "name": '
        + _json_text(track)
        + f', "pid": {pid}, "ts": '
        + _numbers((c["ts"].to_numpy() - base) / US)
        + ', "args": {'
        + arg
        + ": "
        + _numbers(np.where(ok, value, 0))
        + "}}"
    )
    return text[ok]


# ------------------------------------------------------------ files
def _top(tl: Timeline, rank: int, base: int) -> dict[str, Any]:
    meta = tl.meta
    world = meta.get("world_size")
    if world is None:
        world = len(np.unique(profile_ranks(tl.profiles)))
    info: dict[str, Any] = {"rank": int(rank), "world_size": int(world)}
    if meta.get("backend") is not None:
        info["backend"] = str(meta["backend"])
    return {
        "schemaVersion": 1,
        "distributedInfo": info,
        "baseTimeNanoseconds": int(base),
        "displayTimeUnit": "ms",
        "traceName": f"cctviz timeline, rank {rank}",
    }


def _write_file(target: Path, top: dict[str, Any], pieces: Iterable[np.ndarray], gz: bool) -> None:
    fh: IO[str]
    fh = _gzip.open(target, "wt", encoding="utf-8") if gz else open(target, "w", encoding="utf-8")
    with fh:
        head = json.dumps(top)  # one line: HTA finds '"rank": N' on the first line that has it
        fh.write(head[:-1] + ', "traceEvents": [\n')
        first = True
        for text in pieces:
            if not len(text):
                continue
            fh.write(("" if first else ",\n") + ",\n".join(text.tolist()))
            first = False
        fh.write("\n]}\n")


def write_chrome_trace(
    timeline: Timeline, path: str | os.PathLike, *, gzip: bool | None = None
) -> list[Path]:
    """Write ``timeline`` as Kineto-style Chrome trace JSON (module docstring).

    Args:
        timeline: the run, e.g. ``cctviz.read_timeline(run_folder)``.
        path: a folder (made if missing): one ``rank-<r>.pt.trace.json`` per rank,
            the folder HTA's ``TraceAnalysis(trace_dir=...)`` reads; or, for a
            timeline of one rank, a file ending in ``.json`` or ``.json.gz``.
        gzip: gzip the files (``.json.gz``); default: only where ``path`` says so.

    Returns:
        The files written, in rank order.

    Example:
        >>> import cctviz, tempfile
        >>> tl = cctviz.read_timeline("../shared/data/kineto/hta_trace_filter_sampled_rank-0.json.gz")
        >>> out = write_chrome_trace(tl, tempfile.mkdtemp() + "/r0.json.gz")
        >>> back = cctviz.read_timeline(out[0])
        >>> len(back.events) - len(tl.events)  # the all-gathers' record_param_comms
        2
    """
    if not isinstance(timeline, Timeline):
        raise TypeError(
            f"chrome-trace writes a Timeline (cctviz.read_timeline(...)), not a "
            f"{type(timeline).__name__}: a Tree or Ensemble has no time"
        )
    p = Path(path)
    ranks, _ = _profile_threads(timeline)
    uniq = np.unique(ranks)
    one_file = p.name.endswith((".json", ".json.gz"))
    if one_file and len(uniq) > 1:
        raise ValueError(
            f"{p}: a file holds one rank, and this timeline has {len(uniq)} "
            f"(ranks {uniq.tolist()[:8]}): give a folder"
        )
    gz = p.name.endswith(".gz") if gzip is None else gzip
    if not one_file:
        p.mkdir(parents=True, exist_ok=True)
    t0 = int(timeline.span[0])
    if len(timeline.counters):
        t0 = min(t0, int(timeline.counters["ts"].min()))
    base = (t0 // int(US)) * int(US)  # a whole microsecond: Kineto's ts count from it
    where = _threads(timeline)
    written = []
    for rank in uniq.tolist():
        profiles = np.flatnonzero(ranks == rank)
        target = p if one_file else p / f"rank-{rank}.pt.trace.json{'.gz' if gz else ''}"
        df = _sort(_rank_events(timeline, profiles, rank, base, where))
        meta, cpu_pid = _metadata(df, where, rank)
        pieces = chain(  # made piece by piece as the file is written
            [meta],
            (_lines(df.iloc[k : k + CHUNK]) for k in range(0, len(df), CHUNK)),
            [_counter_lines(timeline, profiles, cpu_pid, base)],
        )
        _write_file(target, _top(timeline, rank, base), pieces, gz)
        written.append(target)
    return written
