"""What the GPUs of a Timeline did: busy, idle, computing, communicating, and how
much communication overlapped computation, per profile (rank).

The definitions are Holistic Trace Analysis' (HTA), so that the numbers can be held
against it: a profile's GPU work is its kernels, copies and sets (the Kineto
reader's GPU events); ``kernel_time`` runs from the first one's start to the last
one's end; ``idle`` is the part of it no GPU event covers; ``compute`` the union of
the computation kernels (not ``nccl...Kernel``, not a copy, set or sync);
``overlap`` is the share of the communication kernels' union (``nccl...Kernel``)
during which a computation kernel runs too. Times in ns.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from ..model.tables import UnitTable, with_units
from ..model.timeline import Timeline

#: the GPU work of a Kineto trace (tree kinds)
GPU_KINDS = ("kernel", "memcpy", "memset")
_COMM = re.compile(r"^nccl.*Kernel")
_NOT_COMPUTE = re.compile(r"(^nccl.*Kernel)|(.*(Memcpy)|(Memset))|(.*Sync)")


def _union(start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The union of intervals as sorted disjoint ``[start, end)`` runs."""
    if not start.size:
        return start, end
    o = np.argsort(start, kind="stable")
    s, e = start[o], end[o]
    reach = np.maximum.accumulate(e)
    new = np.r_[True, s[1:] > reach[:-1]]
    return s[new], np.maximum.reduceat(e, np.flatnonzero(new)) if s.size else e


def _length(s: np.ndarray, e: np.ndarray) -> int:
    return int((e - s).sum())


def _overlap(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]) -> int:
    """Length of the intersection of two unions (each sorted and disjoint)."""
    t = np.r_[a[0], a[1], b[0], b[1]]
    d = np.r_[
        np.ones(a[0].size), -np.ones(a[1].size), 2 * np.ones(b[0].size), -2 * np.ones(b[1].size)
    ]
    o = np.lexsort((d, t))  # at equal times ends (negative) before starts
    t, run = t[o], np.cumsum(d[o])
    both = run[:-1] == 3
    return int((np.diff(t)[both]).sum())


def gpu_breakdown(timeline: Timeline) -> UnitTable:
    """Per profile: ``kernel_time``, ``idle``, ``compute``, ``non_compute``, ``comm``
    (ns; ``attrs["units"]``), their shares of ``kernel_time``, and ``overlap`` (the share of communication
    kernel time that runs beside computation kernels), as HTA defines them
    (module docstring). Profiles without GPU work are left out.

    >>> import cctviz
    >>> tl = cctviz.read_timeline("../shared/data/kineto/hta_trace_filter_sampled_rank-0.json.gz")
    >>> b = gpu_breakdown(tl)
    >>> round(float(b["idle_share"].iloc[0]) + float(b["compute_share"].iloc[0])
    ...       + float(b["non_compute_share"].iloc[0]), 6)
    1.0
    """
    ev = timeline.events
    on_gpu = np.isin(timeline.tree.nodes["kind"].to_numpy(), GPU_KINDS)  # per node
    gpu = ev[on_gpu[ev["node"].to_numpy()]]
    # kinds of kernel by name, once per tree node (events index them)
    names = timeline.tree.nodes["name"].astype(str).to_numpy()
    is_comm = np.fromiter((bool(_COMM.match(x)) for x in names), dtype=bool, count=names.size)
    is_comp = np.fromiter((not _NOT_COMPUTE.match(x) for x in names), dtype=bool, count=names.size)
    rows = []
    for p, g in gpu.groupby("profile", sort=True):  # a loop per rank, not per event
        s, e = g["start"].to_numpy(), g["end"].to_numpy()
        node = g["node"].to_numpy()
        comm, comp = is_comm[node], is_comp[node]
        every = _union(s, e)
        span = int(every[1].max() - every[0][0]) if every[0].size else 0
        busy = _length(*every)
        u_comp, u_comm = _union(s[comp], e[comp]), _union(s[comm], e[comm])
        compute = _length(*u_comp)
        comm_time = _length(*u_comm)
        rows.append(
            {
                "profile": int(p),
                "kernel_time": span,
                "idle": span - busy,
                "compute": compute,
                "non_compute": busy - compute,
                "comm": comm_time,
                "overlap": _overlap(u_comm, u_comp) / comm_time if comm_time else np.nan,
            }
        )
    out = pd.DataFrame(rows)
    if len(out):
        for c in ("idle", "compute", "non_compute"):
            out[f"{c}_share"] = out[c] / out["kernel_time"]
        if "rank" in timeline.profiles.columns:
            out.insert(1, "rank", timeline.profiles["rank"].to_numpy()[out["profile"].to_numpy()])
    out.attrs["unit"] = "ns"
    return with_units(
        out, {c: "ns" for c in ("kernel_time", "idle", "compute", "non_compute", "comm")}
    )


__all__ = ["GPU_KINDS", "gpu_breakdown"]
