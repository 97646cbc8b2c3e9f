"""When a rank did nothing the trace saw: per rank, the part of its span that no
interval of any of its threads covers.

A rank's span runs from its first interval's start to its last one's end; its
``busy`` time is the union of its intervals below the tree's roots (a root such
as the runtime's program region covers the whole run and would leave nothing
idle), over all its profiles (threads, or a rank's CPU and GPU streams when
``gpu`` is kept); ``idle`` is the rest. For GPU streams, HTA's definitions are
:func:`cctviz.ops.gpu.gpu_breakdown`'s. Times in ns.

Idle here means *not traced*: time a sampling or tracing tool did not see (the
Python between two recorded ops, a wait the runtime does not hook) counts as
idle as well as a sleeping CPU.

Example:
    >>> import pandas as pd
    >>> from cctviz.model.timeline import Timeline
    >>> from cctviz.model.tree import Tree
    >>> tree = Tree.from_parents([-1, 0, 0], ["main", "a", "b"])
    >>> ev = pd.DataFrame({"profile": [0, 0, 0, 1], "node": [0, 1, 2, 1],
    ...                    "start": [0, 0, 60, 0], "end": [100, 40, 100, 50]})
    >>> idle_time(Timeline(tree, ev))[["rank", "span", "busy", "idle"]].values.tolist()
    [[0, 100, 80, 20], [1, 50, 50, 0]]
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..model.tables import UnitTable, with_units
from ..model.timeline import Timeline, profile_ranks
from .gpu import GPU_KINDS, _length, _union


def idle_time(timeline: Timeline, *, gpu: bool = False) -> UnitTable:
    """Per rank: ``span``, ``busy`` (union of its intervals below the roots, all
    its threads), ``idle`` (ns) and ``idle_share`` (module docstring).

    Args:
        timeline: a :class:`~cctviz.model.timeline.Timeline`; profiles of one
            rank (the profiles' ``rank`` column, else each profile) are pooled.
        gpu: also count GPU work (kernels, copies, sets) as busy; by default the
            CPU side only (for the GPUs see :func:`cctviz.ops.gpu.gpu_breakdown`).

    Returns:
        a DataFrame with ``rank``, ``profiles``, ``span``, ``busy``, ``idle``,
        ``idle_share``; ``attrs["unit"]`` is ``"ns"`` (per column: ``attrs["units"]``). Ranks without an interval
        below the roots are left out.
    """
    if not isinstance(timeline, Timeline):
        raise TypeError(
            f"idle_time needs a Timeline (cctviz.read_timeline), got {type(timeline).__name__}"
        )
    ev = timeline.events
    tree = timeline.tree
    below = np.asarray(tree.parent) >= 0  # per node
    if not gpu:
        below &= ~np.isin(tree.nodes["kind"].to_numpy(), GPU_KINDS)
    node = ev["node"].to_numpy()
    keep = below[node]
    rank_of = profile_ranks(timeline.profiles)
    prof = ev["profile"].to_numpy()[keep]
    start, end = ev["start"].to_numpy()[keep], ev["end"].to_numpy()[keep]
    rank = rank_of[prof]
    rows = []
    for r in np.unique(rank).tolist():  # a loop per rank, not per event
        mine = rank == r
        s, e = start[mine], end[mine]
        span = int(e.max() - s.min())
        busy = _length(*_union(s, e))
        rows.append(
            {
                "rank": int(r),
                "profiles": int(np.unique(prof[mine]).size),
                "span": span,
                "busy": busy,
                "idle": span - busy,
            }
        )
    out = pd.DataFrame(rows, columns=["rank", "profiles", "span", "busy", "idle"])
    out["idle_share"] = out["idle"] / out["span"].where(out["span"] > 0)
    out.attrs["unit"] = "ns"
    return with_units(out, {"span": "ns", "busy": "ns", "idle": "ns"})


__all__ = ["idle_time"]
