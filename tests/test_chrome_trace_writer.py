"""The Chrome trace writer (issue 23) on real Kineto traces: a timeline written
back out reads, with cctviz's ``kineto`` reader, as the same calling contexts
(time, calls, communication bytes per call path), and Holistic Trace Analysis
computes the same GPU breakdowns on the rewritten files as on the originals.
(`tests/runtime/test_chrome_trace_run.py` does the same for a `cctviz run`.)
"""

from __future__ import annotations

import gzip
import json
import logging
import warnings

import numpy as np
import pandas as pd
import pytest

import cctviz
from cctviz.cli import main
from cctviz.readers import detect
from cctviz.writers.chrome_trace import write_chrome_trace
from tests.conftest import DATA
from tests.peers import require

KINETO = DATA / "kineto"
SAMPLED = [KINETO / f"hta_trace_filter_sampled_rank-{r}.json.gz" for r in (0, 1)]
SAMPLES = [
    SAMPLED[0],
    KINETO / "hta_nccl_parser_config_nccl_data.json.gz",  # c10d:: > record_param_comms
    KINETO / "hta_cpu_only_rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz",  # gloo: only
    KINETO / "hta_call_stack_backward_thread.json",
    KINETO / "hta_amd_trace_mi250_minitoy_train_ROCm6_2_kineto.json.gz",
]
RPC = "record_param_comms"


def read_timeline(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # merged attributes of some samples
        return cctviz.read_timeline(path)


def per_path(tl, strip=0):
    """Inclusive time (ns), calls and inclusive comm bytes per (rank, call path);
    ``strip`` top levels (a Kineto tree's process and thread) left out of the path."""
    ens = tl.ensemble()
    rows = ens.long_table.reset_index()
    depth = ens.tree.nodes["depth"].to_numpy()[rows["node"].to_numpy()]
    rows = rows[depth >= strip]  # the process and thread levels: not the trace's events
    paths = ens.tree.callpaths.to_numpy()[rows["node"].to_numpy()]
    if strip:
        paths = np.asarray([p.split("/", strip)[-1] for p in paths], dtype=object)
    ranks = ens.profiles["rank"].to_numpy()[rows["profile"].to_numpy()]
    cols = {"rank": ranks, "path": paths}
    for m in ("time (inc)", "calls", "comm_bytes (inc)"):
        if m in rows:
            cols[m] = rows[m].to_numpy(dtype=np.float64)
    return pd.DataFrame(cols).groupby(["rank", "path"]).sum()


def assert_same_contexts(tl, back, strip):
    """Every context of ``tl`` comes back with its time (within 1 us), calls and
    bytes; the only new ones are the ``record_param_comms`` events the writer adds."""
    want, got = per_path(tl, strip), per_path(back, 2)
    missing = want.index.difference(got.index)
    assert missing.empty, missing[:5].tolist()
    new = got.index.difference(want.index)
    assert all(p.rsplit("/", 1)[-1] == RPC for _, p in new), new[:5].tolist()
    got = got.loc[want.index]
    assert (got["time (inc)"] - want["time (inc)"]).abs().max() <= 1e3  # ns
    np.testing.assert_array_equal(got["calls"], want["calls"])
    if "comm_bytes (inc)" in want:
        np.testing.assert_array_equal(got["comm_bytes (inc)"], want["comm_bytes (inc)"])


def kineto_strip(tl):
    return 2 if tl.tree.nodes["kind"].iloc[0] == "process" else 0


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name[:32])
def test_kineto_traces_come_back_with_the_same_contexts(tmp_path, path):
    tl = read_timeline(path)
    (out,) = write_chrome_trace(tl, tmp_path)
    assert out.name == f"rank-{int(tl.profiles['rank'][0])}.pt.trace.json"
    back = read_timeline(out)
    assert_same_contexts(tl, back, kineto_strip(tl))
    # GPU events keep their device, stream and launching call
    if "stream" in tl.events:
        gpu = tl.events[tl.events["stream"].notna()]
        bgpu = back.events[back.events["stream"].notna()]
        assert len(bgpu) == len(gpu)
        assert sorted(map(str, bgpu["stream"])) == sorted(map(str, gpu["stream"]))
        assert (bgpu["launch_event"] >= 0).sum() == (gpu["launch_event"] >= 0).sum()


def test_collectives_keep_their_kineto_args(tmp_path):
    """The args HTA and TraceLens read (``Collective name``, nelems x dtype, group,
    process group) are on each collective's record_param_comms: the bytes cctviz
    read, and the process group and sequence the reader matches calls by."""
    tl = read_timeline(KINETO / "hta_nccl_parser_config_nccl_data.json.gz")
    (out,) = write_chrome_trace(tl, tmp_path / "r0.json")
    events = json.loads(out.read_text())["traceEvents"]
    calls = [e for e in events if e["name"] == RPC and "Collective name" in e.get("args", {})]
    heads = tl.events[np.isfinite(tl.events["comm_bytes"])]
    assert len(calls) == len(heads) > 0
    assert sorted(e["args"]["In msg nelems"] for e in calls) == sorted(
        heads["comm_bytes"].astype(int)
    )
    assert {e["args"]["dtype"] for e in calls} == {"Byte"}
    assert {e["args"]["Process Group Name"] for e in calls} == set(heads["group"].dropna())
    back = read_timeline(out)
    got = back.events[np.isfinite(back.events["comm_bytes"])]
    assert sorted(got["group"].dropna()) == sorted(heads["group"].dropna())


def test_two_ranks_share_one_clock(tmp_path):
    tl = read_timeline(SAMPLED)
    paths = write_chrome_trace(tl, tmp_path)
    assert [p.name for p in paths] == ["rank-0.pt.trace.json", "rank-1.pt.trace.json"]
    back = read_timeline(tmp_path)  # the folder, ranks in order
    assert back.n_profiles == 2 and back.profiles["rank"].tolist() == [0, 1]
    assert back.span == tl.span  # epoch ns, from baseTimeNanoseconds
    assert_same_contexts(tl, back, 2)


def _hta_analysis(**kw):
    require("hta")
    from hta.configs.config import logger
    from hta.trace_analysis import TraceAnalysis

    logger.setLevel(logging.ERROR)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return TraceAnalysis(**kw)


def test_hta_computes_the_same_breakdowns_on_the_rewritten_traces(tmp_path):
    """HTA finds the ranks of the written folder by their distributedInfo, and its
    temporal breakdown, kernel breakdown and communication overlap equal those of
    the original traces (whole-us traces: nothing rounds)."""
    write_chrome_trace(read_timeline(SAMPLED), tmp_path)
    orig = _hta_analysis(trace_files=dict(enumerate(map(str, SAMPLED))))
    ours = _hta_analysis(trace_dir=str(tmp_path))
    assert sorted(ours.t.traces) == [0, 1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pd.testing.assert_frame_equal(
            ours.get_temporal_breakdown(visualize=False),
            orig.get_temporal_breakdown(visualize=False),
        )
        a = orig.get_gpu_kernel_breakdown(visualize=False)
        b = ours.get_gpu_kernel_breakdown(visualize=False)
        for x, y in zip(a, b):
            pd.testing.assert_frame_equal(y, x)
        overlap = ours.get_comm_comp_overlap(visualize=False)
        pd.testing.assert_frame_equal(overlap, orig.get_comm_comp_overlap(visualize=False))
    assert (overlap["comp_comm_overlap_pctg"] > 0).all()  # nccl kernels found


def test_counters_become_counter_events(tmp_path):
    tl = read_timeline(KINETO / "kineto_tb_resnet50_2021.json.gz")
    assert len(tl.counters)
    (out,) = write_chrome_trace(tl, tmp_path / "resnet.json.gz")
    with gzip.open(out, "rt") as fh:
        top = json.load(fh)
    counters = [e for e in top["traceEvents"] if e["ph"] == "C"]
    assert len(counters) == int(np.isfinite(tl.counters["value"]).sum())
    by_track = pd.DataFrame(
        {"track": [e["name"] for e in counters], "value": [e["args"]["B"] for e in counters]}
    )
    want = tl.counters.groupby("track")["value"].max()
    pd.testing.assert_series_equal(by_track.groupby("track")["value"].max(), want)
    ts = np.asarray([e["ts"] for e in counters]) * 1e3 + top["baseTimeNanoseconds"]
    np.testing.assert_allclose(np.sort(ts), np.sort(tl.counters["ts"]), atol=1)


def test_write_and_info_use_the_format(tmp_path, capsys):
    tl = read_timeline(SAMPLED[1])
    p = cctviz.write(tl, tmp_path / "r1.json.gz")  # a Timeline's default format
    assert detect(p) == "kineto"
    assert main(["info", str(p)]) == 0
    assert "kineto" in capsys.readouterr().out
    with gzip.open(p, "rt") as fh:
        head = fh.readline()
    assert '"rank": 1' in head  # where HTA looks for the rank: the first line that has one


def test_bad_input_is_refused_clearly(tmp_path):
    tl = read_timeline(SAMPLED)
    with pytest.raises(ValueError, match=r"one rank.*2 \(ranks \[0, 1\]\).*folder"):
        write_chrome_trace(tl, tmp_path / "both.json")
    tree = cctviz.read(SAMPLED[0])
    with pytest.raises(TypeError, match="writes a Timeline, not a Tree"):
        cctviz.write(tree, tmp_path / "t", format="chrome-trace")
    with pytest.raises(TypeError, match="a Tree or an Ensemble, not a Timeline"):
        cctviz.write(tl, tmp_path / "t.json", format="speedscope")
    with pytest.raises(TypeError, match="not a Tree"):
        write_chrome_trace(tree, tmp_path)
