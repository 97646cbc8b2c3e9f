"""A `cctviz run --timeline` job (2 gloo ranks of DDP on CPU) written as Chrome
traces (issue 23): cctviz's kineto reader gives back, per rank and call path, the
timeline's time, calls and communication bytes; HTA reads the folder (ranks from
`distributedInfo`) with the same events, durations and collective args. HTA's
GPU analyses (temporal breakdown, communication/computation overlap) need GPU
kernels, which a CPU run has none of: HTA gives no overlap (NaN) there.
"""

from __future__ import annotations

import logging
import warnings

import numpy as np
import pandas as pd
import pytest

import cctviz
from cctviz.writers.chrome_trace import write_chrome_trace
from tests.peers import require
from tests.test_chrome_trace_writer import RPC, assert_same_contexts

from .conftest import example_run

RANKS = 2


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    d = tmp_path_factory.mktemp("chrome")
    run, _ = example_run(d / "run", "ddp", nproc=RANKS, steps=3, warmup=1, extra=("--timeline",))
    tl = cctviz.read_timeline(run)
    paths = write_chrome_trace(tl, d / "traces")
    return tl, paths


def test_the_run_comes_back_through_the_kineto_reader(traced):
    tl, paths = traced
    assert [p.name for p in paths] == [f"rank-{r}.pt.trace.json" for r in range(RANKS)]
    back = cctviz.read_timeline(paths)
    assert back.profiles["rank"].tolist() == list(range(RANKS))
    assert_same_contexts(tl, back, 0)
    # every collective call keeps its bytes, on the record_param_comms inside it
    heads = tl.events[np.isfinite(tl.events["comm_bytes"])]
    got = back.events[np.isfinite(back.events["comm_bytes"])]
    assert len(got) == len(heads) > 0
    assert set(back.tree.nodes["name"].to_numpy()[got["node"]]) == {RPC}
    np.testing.assert_array_equal(np.sort(got["comm_bytes"]), np.sort(heads["comm_bytes"]))
    np.testing.assert_array_equal(np.sort(got["bus_bytes"]), np.sort(heads["bus_bytes"]))


def test_hta_reads_the_same_events(traced, monkeypatch):
    require("hta")
    from hta.common.trace import Trace
    from hta.configs.config import logger
    from hta.configs.parser_config import ParserConfig
    from hta.trace_analysis import TraceAnalysis

    tl, paths = traced
    monkeypatch.setenv("HTA_DISABLE_NS_ROUNDING", "1")  # keep the ns, HTA's own option
    logger.setLevel(logging.ERROR)
    cfg = ParserConfig.enable_communication_args(ParserConfig(ParserConfig.get_default_args()))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = Trace(trace_dir=str(paths[0].parent), parser_config=cfg)
        t.parse_traces(use_multiprocessing=False)
    assert sorted(t.traces) == list(range(RANKS))
    sym = t.symbol_table.get_sym_table()
    names = tl.tree.nodes["name"].to_numpy()
    ranks = tl.profiles["rank"].to_numpy()
    for r, df in t.traces.items():
        ev = tl.events[ranks[tl.events["profile"]] == r]
        want = (
            pd.DataFrame(
                {"name": names[ev["node"]], "dur": (ev["end"] - ev["start"]).to_numpy() / 1e3}
            )
            .groupby("name")["dur"]
            .agg(["count", "sum"])
        )
        got = df.assign(name=[sym[i] for i in df["name"]]).groupby("name")["dur"]
        got = got.agg(["count", "sum"])
        calls = got.loc[RPC]
        assert calls["count"] == np.isfinite(ev["comm_bytes"]).sum()
        got = got.drop(RPC)
        assert got.index.equals(want.index)
        np.testing.assert_array_equal(got["count"], want["count"])
        assert ((got["sum"] - want["sum"]).abs() <= 1e-3 * want["count"]).all()  # 1 ns each
        # the collective args as HTA parses them: bytes = nelems x 1-byte elements
        coll = df[df["collective_name"].ne("")]
        assert sorted(coll["in_msg_nelems"]) == sorted(
            ev["comm_bytes"].dropna().astype(int).tolist()
        )
        assert set(coll["group_size"]) == {RANKS}
    # no GPU kernel: no overlap to compute
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ta = TraceAnalysis(trace_dir=str(paths[0].parent))
        overlap = ta.get_comm_comp_overlap(visualize=False)
    assert overlap["comp_comm_overlap_pctg"].isna().all()
