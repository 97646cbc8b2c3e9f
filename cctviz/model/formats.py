"""cctviz's own files by name: the native file's header, the run folder's layout, and
how object columns of their Parquet tables are encoded (:func:`encode_objects`).

Names and dict rules only, no file I/O, so that whatever reads or writes
these files agrees on them: the native reader and writer
(:mod:`cctviz.readers.native`, :mod:`cctviz.writers.native`), the run-folder
reader (:mod:`cctviz.readers.cctviz_run`) and the runtime that writes run
folders (:mod:`cctviz.runtime.profiler`, :mod:`cctviz.runtime.launch`).

A run folder holds one native file per rank, ``rank-NNNNN.cctviz``, and
``run.json``, the facts of the run. The launcher (``cctviz run``) writes its
facts first (command line, expected world size...); rank 0 merges its own
(:data:`RANK0_FACTS`) when it stops, leaving the launcher's command line as
it was (:data:`LAUNCHER_KEEPS`). Reading, the world size is rank 0's, else
the launcher's expected one, and at least one more than the highest rank
file (:func:`world_size`).

>>> rank_file_name(3)
'rank-00003.cctviz'
>>> rank_of("rank-00003.cctviz"), rank_of("rank-3.pt.trace.json")
(3, None)
>>> launcher = {"command": "cctviz run train.py", "expected_world_size": 4}
>>> merge_run_facts(launcher, {"command": "train.py", "world_size": 2}, keep=LAUNCHER_KEEPS)
{'command': 'cctviz run train.py', 'expected_world_size': 4, 'world_size': 2}
>>> world_size(launcher, ranks=[0, 1]), world_size({}, ranks=[0, 5])
(4, 6)
"""

from __future__ import annotations

import json
import os
import re
import struct
import zlib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from ..errors import ProfileError

# The tree a ``cctviz run`` writes (cctviz.runtime.recorder): its step contexts,
# phases and the kinds of its nodes (the ``kind`` column), which its readers and
# views recognise by these names.
STEP = "step"
#: the steps before the profiled ones, and the time outside every step
WARMUP = "(warm-up)"
OUTSIDE = "(outside steps)"
OTHER = "other"
PHASES = ("data", "forward", "backward", "optimizer", OTHER)

#: kinds of contexts (the tree's ``kind`` column)
K_ROOT, K_STEP, K_PHASE, K_MODULE, K_COMM, K_OP, K_REGION, K_FUNC = (
    "root",
    "step",
    "phase",
    "module",
    "comm",
    "op",
    "region",
    "function",
)

# ---- the native file (a ZIP of Parquet tables; see cctviz.readers.native)
#: ``header.json``'s ``format`` and ``version``
MAGIC = "cctviz"
VERSION = 1
EXTENSION = ".cctviz"

# ---- the run folder
RUN_FILE = "run.json"
#: the folder of a run that holds its trace (``cctviz run --timeline``;
#: ``cctviz.read_timeline(run)`` reads it)
TIMELINE_DIR = "timeline"
#: what a workflow's launcher tells each process of a component (cctviz.runtime.workflow):
#: the component's name, the first rank of its processes in the workflow, the workflow's size
ENV_COMPONENT = "CCTVIZ_COMPONENT"
ENV_RANK_OFFSET = "CCTVIZ_RANK_OFFSET"
ENV_WORKFLOW_SIZE = "CCTVIZ_WORKFLOW_SIZE"
#: the folder of a run of a JAX program (``cctviz run``) that holds each process's XPlane file
XPLANE_DIR = "xplane"
#: the rank files of a run folder, as a glob pattern (:func:`rank_of` tells exactly)
RANK_GLOB = f"rank-*{EXTENSION}"
_RANK_RE = re.compile(rf"^rank-(\d+){re.escape(EXTENSION)}$")

#: the facts of rank 0's profile (its meta) that go into ``run.json``
RANK0_FACTS = (
    "world_size",
    "backend",
    "strategy",
    "params",
    "model",
    "device",
    "torch_version",
    "mode",
    "warmup",
    "command",
    "started",
)
#: the launcher's facts that rank 0 leaves as they are: the launcher's command
#: line is the whole ``cctviz run ...``, rank 0's only the script's
LAUNCHER_KEEPS = ("command",)

# ---- the runtime's trace (``cctviz run --timeline``; cctviz.runtime.trace)
#: how much of a rank its trace holds, in the rank's profile meta and as OTF2
#: location properties (named ``cctviz::<key>``): the cap (transitions; absent:
#: none), the rows kept, the transitions dropped past the cap, and the cut (ns on
#: the trace's clock; absent: the trace has the whole rank)
TIMELINE_FACTS = ("timeline_limit", "timeline_events", "timeline_dropped", "timeline_cut_ns")
#: the model states a rank holds after its first optimizer step, in its profile
#: meta: parameters, gradients, optimizer states (bytes: its local shards, each
#: storage once; cctviz/runtime/states.py)
STATE_FACTS = ("state_params", "state_grads", "state_optimizer")
#: the optimizer's class and its state per parameter (the same on every rank:
#: kept with the model's facts in the run's meta)
OPTIMIZER_FACTS = ("optimizer", "optimizer_layout")
#: the namespace of cctviz's own OTF2 definitions (attributes, location properties)
OTF2_NAMESPACE = "cctviz::"


# ---- a live run (``cctviz run --flush S``; ``cctviz.watch``): each rank appends
#: its increments to ``live/rank-NNNNN.chunks`` while it runs, a record at a time:
#: :data:`LIVE_MAGIC`, the payload's length and CRC-32 (little-endian uint32),
#: then the payload (UTF-8 JSON: the contexts new since the last record, the
#: metrics that changed, as their cumulative values, the steps ended since)
LIVE_DIR = "live"
#: a watch that wants a traced run's timeline puts this file in ``live/``: then
#: each tracing rank writes its trace buffer at the first step's start after
#: each record (otherwise only every batch of events)
LIVE_TRACE_WANTED = "timeline.wanted"
LIVE_MAGIC = b"CCTL"
LIVE_HEADER = struct.Struct("<4sII")
_LIVE_RE = re.compile(r"^rank-(\d+)\.chunks$")


def live_file(out: str | os.PathLike, rank: int) -> Path:
    """Where rank ``rank`` of the run ``out`` appends its increments.

    >>> live_file("run", 3).as_posix()
    'run/live/rank-00003.chunks'
    """
    return Path(out) / LIVE_DIR / f"rank-{rank:05d}.chunks"


def live_rank_of(name: str) -> int | None:
    """The rank whose increments a file of this name holds; None if none.

    >>> live_rank_of("rank-00012.chunks"), live_rank_of("rank-00012.cctviz")
    (12, None)
    """
    m = _LIVE_RE.match(name)
    return int(m.group(1)) if m else None


def live_record(payload: bytes) -> bytes:
    """One record of a live file: header and ``payload``."""
    return LIVE_HEADER.pack(LIVE_MAGIC, len(payload), zlib.crc32(payload)) + payload


def rank_file_name(rank: int) -> str:
    """The name of rank ``rank``'s profile in a run folder."""
    return f"rank-{rank:05d}{EXTENSION}"


def rank_file(out: str | os.PathLike, rank: int) -> Path:
    """Where rank ``rank`` writes its profile in the run folder ``out``."""
    return Path(out) / rank_file_name(rank)


def rank_of(name: str) -> int | None:
    """The rank whose profile a file of this name is; None if it is no rank file."""
    m = _RANK_RE.match(name)
    return int(m.group(1)) if m else None


_XPLANE_RE = re.compile(r"^rank-(\d+)\.xplane\.pb$")


def xplane_file(out: str | os.PathLike, rank: int) -> Path:
    """Where process ``rank`` of a run of a JAX program writes its XPlane file."""
    return Path(out) / XPLANE_DIR / f"rank-{rank}.xplane.pb"


def xplane_files(out: str | os.PathLike) -> dict[int, Path]:
    """The XPlane files of a run of a JAX program, by process rank, in rank order."""
    found = {}
    for p in (Path(out) / XPLANE_DIR).glob("rank-*.xplane.pb"):
        m = _XPLANE_RE.match(p.name)
        if m:
            found[int(m.group(1))] = p
    return dict(sorted(found.items()))


def rank0_facts(meta: Mapping[str, Any], finished: str) -> dict[str, Any]:
    """What rank 0 merges into ``run.json`` from its profile's ``meta``."""
    return {k: meta[k] for k in RANK0_FACTS if k in meta} | {"finished": finished}


def merge_run_facts(
    old: Mapping[str, Any], new: Mapping[str, Any], keep: Iterable[str] = ()
) -> dict[str, Any]:
    """``old`` updated with ``new``, except the ``keep`` keys ``old`` has already."""
    keep = set(keep)
    out = dict(old)
    out.update({k: v for k, v in new.items() if k not in keep or k not in out})
    return out


def world_size(info: Mapping[str, Any], ranks: Iterable[int]) -> int:
    """The world size of a run from ``run.json`` and the ranks that wrote files (0: unknown)."""
    world = info.get("world_size") or info.get("expected_world_size")
    if not isinstance(world, int) or world < 1:
        world = 0
    return max(world, max(ranks, default=-1) + 1)


# ---- object columns of the Parquet tables in cctviz's own files (native, dataset)
def _is_int(v: Any) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def _is_float(v: Any) -> bool:
    return isinstance(v, (float, np.floating))


def encode_objects(df: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, str]]:
    """Object columns Parquet would not give back as they were, and how.

    ``"int"``: Python ints (and None), which come back as int64 or float64
    (NaN for None); ``"list"``: lists, which come back as NumPy arrays;
    ``"json"``: values Parquet cannot type or would change (``1`` in one row,
    ``"1,2"`` in another; floats in an object column, beside None or text,
    whose None would come back NaN or NaN None;
    tuples, dicts), stored as JSON text. Readers restore
    them with :func:`decode_objects` from what the file says of each column.

    >>> df = pd.DataFrame({"n": pd.Series([1, None], dtype=object), "s": ["a", "b"]})
    >>> encode_objects(df)[1]
    {'n': 'int'}
    """
    kinds: dict[str, str] = {}
    out = df
    for c in df.columns:
        col = df[c]
        if col.dtype != object:
            continue
        present = [v for v in col if v is not None]
        if present and all(_is_int(v) for v in present):
            kinds[str(c)] = "int"
            continue
        if any(_is_float(v) for v in present):
            kinds[str(c)] = "json"  # Parquet would make None NaN, NaN None, or the column float
            out = df.copy() if out is df else out
            out[c] = [json.dumps(jsonable(v)) for v in col]
            continue
        kind = "list" if present and all(isinstance(v, list) for v in present) else None
        if kind or not any(isinstance(v, (list, tuple, dict, set)) for v in present):
            try:
                pa.array(col, from_pandas=True)
            except (pa.ArrowException, TypeError, ValueError):
                pass
            else:
                if kind:
                    kinds[str(c)] = kind
                continue
        if out is df:
            out = df.copy()
        out[c] = [json.dumps(jsonable(v)) for v in col]
        kinds[str(c)] = "json"
    return out, kinds


def jsonable(x: Any) -> Any:
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    if isinstance(x, (str, int, float, bool)) or x is None:
        return x
    if hasattr(x, "item"):
        return x.item()
    return str(x)


def decode_objects(path: Path, name: str, df: pd.DataFrame, kinds: Any) -> pd.DataFrame:
    """Undo :func:`encode_objects` on table ``name`` of file ``path`` (``kinds``: its
    column -> kind); a ProfileError naming the file where the column is not as said.

    >>> df, kinds = encode_objects(pd.DataFrame({"v": pd.Series([None, 1.5], dtype=object)}))
    >>> decode_objects("f", "t", pd.DataFrame({"v": df["v"]}), kinds)["v"].tolist()
    [None, 1.5]
    """
    if not isinstance(kinds, dict):
        return df
    for c, kind in kinds.items():
        if c not in df.columns:
            raise ProfileError(path, f"encoded column {c!r} is missing", where=name)
        col = df[c].to_numpy(dtype=object)
        if kind == "int":
            vals = [None if v is None or v != v else int(v) for v in col]
        elif kind == "list":
            vals = [v.tolist() if hasattr(v, "tolist") else v for v in col]
        elif kind == "json":
            try:
                vals = [json.loads(v) for v in col]
            except (TypeError, ValueError) as e:
                raise ProfileError(path, f"column {c!r}: not JSON ({e})", where=name) from None
        else:
            raise ProfileError(path, f"column {c!r}: unknown encoding {kind!r}", where=name)
        df[c] = pd.Series(vals, index=df.index, dtype=object)
    return df
