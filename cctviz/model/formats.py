"""cctviz's own files by name: the native file's header and the run folder's layout.

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

import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

# ---- the native file (a ZIP of Parquet tables; see cctviz.readers.native)
#: ``header.json``'s ``format`` and ``version``
MAGIC = "cctviz"
VERSION = 1
EXTENSION = ".cctviz"

# ---- the run folder
RUN_FILE = "run.json"
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
#: the namespace of cctviz's own OTF2 definitions (attributes, location properties)
OTF2_NAMESPACE = "cctviz::"


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
