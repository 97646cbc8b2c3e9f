"""GPU idle, compute and communication overlap of Kineto timelines (issue 21),
held against Holistic Trace Analysis on the same files.

- exactly: the busy time is the union HTA's own `merge_kernel_intervals` gives on
  HTA's parsed GPU events (the same 1,204 events, names and durations);
- HTA's `get_temporal_breakdown` and `get_comm_comp_overlap` agree within 1% of the
  kernel time and 1 percentage point: HTA's breakdown leaves out part of the trace
  (its docstring: the last profiler iteration) and keeps whole microseconds where
  a trace has nanoseconds (docs/known-issues.md gives the measured differences).
"""

from __future__ import annotations

import logging
import warnings

import numpy as np
import pytest

import cctviz
from cctviz.ops.gpu import gpu_breakdown
from tests.conftest import DATA
from tests.peers import require

KINETO = DATA / "kineto"
SAMPLES = [
    KINETO / "hta_trace_filter_sampled_rank-0.json.gz",
    KINETO / "hta_trace_filter_sampled_rank-1.json.gz",
    KINETO / "hta_nccl_parser_config_nccl_data.json.gz",
]


def _hta(path):
    require("hta")
    from hta.analyzers.breakdown_analysis import BreakdownAnalysis
    from hta.analyzers.communication_analysis import CommunicationAnalysis
    from hta.common.trace import Trace
    from hta.configs.config import logger
    from hta.utils.utils import merge_kernel_intervals

    logger.setLevel(logging.ERROR)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = Trace(trace_files=[str(path)], trace_dir=str(path.parent))
        t.parse_traces(use_multiprocessing=False)
        (df,) = t.traces.values()
        gpu = df[df["stream"].ne(-1)].copy()
        merged = merge_kernel_intervals(gpu.copy())
        return {
            "busy_us": float((merged["end"] - merged["ts"]).sum()),
            "temporal": BreakdownAnalysis.get_temporal_breakdown(t, visualize=False).iloc[0],
            "overlap_pctg": float(
                CommunicationAnalysis.get_comm_comp_overlap(t, visualize=False)[
                    "comp_comm_overlap_pctg"
                ].iloc[0]
            ),
            "events": len(gpu),
        }


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name[:32])
def test_gpu_breakdown_against_hta(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tl = cctviz.read_timeline(path)
    ours = gpu_breakdown(tl).iloc[0]
    theirs = _hta(path)
    kernel_us = ours["kernel_time"] / 1e3
    # whole us in HTA: the first start and the last end each move by < 1 us
    assert kernel_us == pytest.approx(theirs["temporal"]["kernel_time(us)"], abs=2.0)
    busy_us = (ours["kernel_time"] - ours["idle"]) / 1e3
    if path.name.startswith("hta_trace_filter"):  # whole-us traces: the same union, exactly
        assert busy_us == theirs["busy_us"]
    else:  # ns traces: HTA's integer us move each edge by < 1 us
        assert busy_us == pytest.approx(theirs["busy_us"], abs=theirs["events"])
    for ours_col, hta_col in (("idle", "idle_time(us)"), ("compute", "compute_time(us)")):
        assert abs(ours[ours_col] / 1e3 - theirs["temporal"][hta_col]) <= 0.01 * kernel_us
    assert abs(100 * ours["overlap"] - theirs["overlap_pctg"]) <= 1.0
    # the shares add up
    total = ours["idle_share"] + ours["compute_share"] + ours["non_compute_share"]
    assert total == pytest.approx(1.0)
    assert 0 <= ours["overlap"] <= 1 and np.isfinite(ours["overlap"])


def test_no_gpu_work_gives_no_rows():
    tl = cctviz.read_timeline(DATA / "pipit" / "ping-pong-otf2" / "traces.otf2")
    assert gpu_breakdown(tl).empty
