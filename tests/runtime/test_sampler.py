"""The resource sampler (``sample_hz``): per-context CPU, memory and I/O of real runs.

The acceptance lines of issue 22's monitoring part: a busy loop's ``cpu_util``
above 80% and a sleep's below 10%, a region that writes 100 MB has
``io_write_bytes`` of 100 MB within 1%, a region that allocates an array has an
``rss_peak`` of at least its size.
"""

from __future__ import annotations

import os
import time
import types

import numpy as np
import pytest

import cctviz
from cctviz.runtime.sampler import Sampler

from .conftest import CCTVIZ, run_job

MB = 1_000_000


def spin(seconds: float) -> float:
    """A busy loop of ``seconds``; the share of a core it got, by the process's
    own CPU clock."""
    c0, t0 = time.process_time_ns(), time.perf_counter_ns()
    while time.perf_counter_ns() - t0 < seconds * 1e9:
        pass
    return (time.process_time_ns() - c0) / (time.perf_counter_ns() - t0)


def _by_name(tree) -> dict[str, int]:
    """Node id of each region (names are unique in these runs)."""
    return {n: i for i, n in enumerate(tree.names) if tree.nodes.loc[i, "kind"] == "region"}


@pytest.fixture(scope="module")
def sampled(tmp_path_factory):
    """One in-process run at 20 Hz: busy, sleep, write and alloc regions, and
    the process's own CPU and wall clock around the busy loop."""
    out = tmp_path_factory.mktemp("sampled")
    nbytes = 200 * MB
    with cctviz.profile(out=out, sample_hz=20) as prof:
        with cctviz.region("busy"):
            direct = spin(1.0)
        with cctviz.region("sleep"):
            time.sleep(1.0)
        with cctviz.region("write"):
            block = os.urandom(MB)
            with open(out / "blob.bin", "wb") as f:
                for _ in range(100):
                    f.write(block)
                f.flush()
                os.fsync(f.fileno())
        with cctviz.region("before alloc"):
            time.sleep(0.2)
        with cctviz.region("alloc"):
            arr = np.ones(nbytes // 8)  # every page touched
            time.sleep(0.2)
        del arr
    return cctviz.read(prof.path), direct, nbytes


def test_cpu_util_is_an_average_per_context(sampled):
    tree, direct, _ = sampled
    ids, m = _by_name(tree), tree.metrics
    busy, sleep = m.loc[ids["busy"]], m.loc[ids["sleep"]]
    # the process's own CPU clock around the loop says the same (a sampled
    # region is bounded by samples at its entry and exit)
    assert abs(busy["cpu_util (inc)"] - 100.0 * direct) < 5.0, direct
    # the acceptance line (> 80%) needs a core for the loop: on a starved machine
    # (the loop's own clock says < 85%) the agreement above is what holds
    assert busy["cpu_util (inc)"] > 80.0 or direct < 0.85, direct
    assert sleep["cpu_util (inc)"] < 10.0
    # an average, not a sum: the ratio of the two sums, and below one core for the whole run
    assert busy["cpu_util"] == pytest.approx(100.0 * busy["cpu_time"] / busy["sampled_time"])
    root = m.loc[0]
    assert root["cpu_util (inc)"] == pytest.approx(
        100.0 * root["cpu_time (inc)"] / root["sampled_time (inc)"]
    )
    assert tree.aggregation["cpu_util"] == "none" and tree.unit("cpu_util") == "%"
    # a region's sampled time is its wall time: samples at its entry and exit bound it
    assert busy["sampled_time (inc)"] == pytest.approx(busy["time (inc)"], rel=0.02)


def test_io_write_bytes_of_a_region(sampled):
    tree, _, _ = sampled
    ids, m = _by_name(tree), tree.metrics
    assert m.loc[ids["write"], "io_write_bytes (inc)"] == pytest.approx(100 * MB, rel=0.01)
    assert m.loc[ids["sleep"], "io_write_bytes (inc)"] < 0.01 * 100 * MB
    assert tree.unit("io_write_bytes") == "B" and tree.aggregation["io_write_bytes"] == "sum"


def test_rss_peak_of_an_allocation(sampled):
    tree, _, nbytes = sampled
    ids, m = _by_name(tree), tree.metrics
    peak = m.loc[ids["alloc"], "rss_peak (inc)"]
    assert peak >= nbytes
    assert peak - m.loc[ids["before alloc"], "rss_peak (inc)"] >= 0.95 * nbytes
    assert tree.aggregation["rss_peak"] == "max"
    assert m.loc[0, "rss_peak (inc)"] == m["rss_peak"].max()  # a max up the tree


def test_series_in_the_profile(sampled):
    """Every sample is kept in the profile's metadata, on the profile's clock."""
    tree, _, _ = sampled
    s = tree.meta["samples"]
    ts = np.asarray(s["ts"])
    assert s["samples"] == len(ts) and s["dropped"] == 0 and s["hz"] == 20
    assert len(ts) >= 20 * 2.5  # >= 2.5 s of regions at 20 Hz
    assert np.all(np.diff(ts) > 0)
    w = np.asarray(s["tracks"]["io_write_bytes"])
    assert np.all(np.diff(w) >= 0) and w[-1] - w[0] >= 100 * MB
    assert set(s["context"]) >= {_by_name(tree)[k] for k in ("busy", "sleep", "write")}
    assert s["units"]["rss"] == "B" and s["units"]["cpu_time"] == "ns"


def test_sums_cover_the_run(tmp_path):
    """Without regions, the thread's samples alone: the sampled time of the
    whole tree is the run's wall time from start to stop."""
    with cctviz.profile(out=tmp_path, sample_hz=50) as prof:
        t0 = time.perf_counter_ns()
        time.sleep(0.3)
        wall = time.perf_counter_ns() - t0
    tree = cctviz.read(prof.path)
    total = tree.metrics.loc[0, "sampled_time (inc)"]
    assert wall <= total < wall + 0.2e9
    assert tree.meta["samples"]["samples"] >= 10


def test_no_sampler_by_default(tmp_path):
    with cctviz.profile(out=tmp_path) as prof:
        with cctviz.region("r"):
            pass
    tree = cctviz.read(prof.path)
    assert "cpu_util" not in tree.metrics and "samples" not in tree.meta


def test_bad_rates(tmp_path):
    with pytest.raises(ValueError, match="sample_hz"):
        cctviz.profile(out=tmp_path, sample_hz=-1)
    with pytest.raises(ValueError, match="sample_hz"):
        Sampler(None, 0)


def test_cctviz_run_sample_hz(tmp_path):
    """``cctviz run --sample-hz 20`` on a plain script with regions; the script
    measures its spin loop's CPU share itself (process CPU clock over wall)."""
    script = tmp_path / "job.py"
    own = tmp_path / "own.txt"
    script.write_text(
        "import sys, time, cctviz\n"
        "with cctviz.region('spin'):\n"
        "    c, t = time.process_time(), time.perf_counter()\n"
        "    while time.perf_counter() - t < 0.6:\n"
        "        pass\n"
        "    share = (time.process_time() - c) / (time.perf_counter() - t)\n"
        "with cctviz.region('nap'):\n"
        "    time.sleep(0.6)\n"
        "open(sys.argv[1], 'w').write(str(share))\n"
    )
    out = tmp_path / "run"
    run_job([*CCTVIZ, "run", "--sample-hz", "20", "--out", str(out), str(script), str(own)])
    ens = cctviz.read(out)
    tree = cctviz.read(out / "rank-00000.cctviz")
    ids, m = _by_name(tree), tree.metrics
    # on a shared 2-core machine the loop may not get a whole core: compare with its own figure
    assert abs(m.loc[ids["spin"], "cpu_util (inc)"] - 100 * float(own.read_text())) < 5.0
    assert m.loc[ids["nap"], "cpu_util (inc)"] < 10.0
    assert tree.meta["sample_hz"] == 20
    assert ens.aggregation["rss_peak"] == "max"
    bad = run_job([*CCTVIZ, "run", "--sample-hz", "fast", str(script)], check=False)
    assert bad.returncode != 0 and "--sample-hz" in bad.stderr


def test_samples_are_counter_tracks_of_the_timeline(tmp_path):
    """A run traced (``timeline=True``) and sampled: ``read_timeline`` gives the
    samples as counter tracks on the trace's clock, a rate over the interval it
    measures: CPU near a core inside the busy region, near none in the sleep. (The
    busy region is 1 s: while a pure-Python loop holds the GIL the sampler's 20 Hz
    can fall to 10 Hz here, each of its reads waiting for the GIL; docs/known-issues.md.)"""
    with cctviz.profile(out=tmp_path, timeline=True, sample_hz=20):
        with cctviz.region("busy"):
            direct = spin(1.0)
        with cctviz.region("sleep"):
            time.sleep(0.5)
    tl = cctviz.read_timeline(tmp_path)
    c = tl.counters
    assert {"cpu_util", "rss", "io_read_rate", "io_write_rate"} <= set(c["track"])
    assert tl.units["cpu_util"] == "%" and tl.units["rss"] == "B"
    assert tl.units["io_write_rate"] == "B/s"
    ev, names = tl.events, np.asarray(tl.tree.names)
    span = {n: ev[names[ev["node"].to_numpy()] == n].iloc[0] for n in ("busy", "sleep")}
    cpu = c[c["track"] == "cpu_util"]
    t0, t1 = tl.span
    assert cpu["ts"].between(t0, t1).all()
    inside = {
        n: cpu[(cpu["ts"] >= e["start"]) & (cpu["ts"] < e["end"] - 0.06e9)]["value"]
        for n, e in span.items()
    }  # samples whose interval lies in the region (20 Hz: 50 ms each)
    assert len(inside["busy"]) >= 5 and len(inside["sleep"]) >= 5
    # the samples cover part of the region: where the machine is busy the loop's
    # share of a core varies within it (a CI run: 37-99%, 75% over the region), so
    # the band widens by what the loop did not get; on a quiet machine it is 10 points
    assert abs(inside["busy"].mean() - 100 * direct) < 10 + 100 * (1 - direct), direct
    assert inside["sleep"].max() < 10


class _FakeNvml:
    """NVML's calls as nvidia-ml-py names them, on a device whose counters move
    by known amounts per read (the logic runs here; the real NVML runs in
    scripts/gpu_check.py on a GPU machine)."""

    NVML_FI_DEV_PCIE_COUNT_TX_BYTES = 1
    NVML_FI_DEV_PCIE_COUNT_RX_BYTES = 2

    def __init__(self) -> None:
        self.reads = 0

    def nvmlDeviceGetUtilizationRates(self, h):  # noqa: N802 - NVML's names
        return types.SimpleNamespace(gpu=50)

    def nvmlDeviceGetMemoryInfo(self, h):  # noqa: N802
        return types.SimpleNamespace(used=1000 + self.reads)

    def nvmlDeviceGetPowerUsage(self, h):  # noqa: N802
        return 200_000  # mW

    def nvmlDeviceGetFieldValues(self, h, ids):  # noqa: N802
        self.reads += 1
        return [
            types.SimpleNamespace(
                nvmlReturn=0, value=types.SimpleNamespace(ullVal=k * 10 * self.reads)
            )
            for k in ids
        ]


def test_nvml_tracks_are_charged_to_contexts():
    """Per context: GPU-busy time at the utilisation read, energy = power x time,
    PCIe bytes = the counters' growth; the series keeps the GPU tracks."""
    from cctviz.runtime.recorder import Recorder
    from cctviz.runtime.sampler import Sampler, _Nvml

    rec = Recorder("gpu")
    nvml = _FakeNvml()
    s = Sampler(rec, hz=1000.0)
    s._gpu = _Nvml(None, nvml)
    s.tracks.update(
        {k: [] for k in ("gpu_util", "gpu_mem", "gpu_power", "pcie_tx_bytes", "pcie_rx_bytes")}
    )
    s._prev_ts, s._prev = s._clock(), s._read()
    for _ in range(3):
        time.sleep(0.01)
        s.sample()
    x = rec.extra
    top = rec.top
    assert x["gpu_busy_time"][top] == pytest.approx(0.5 * x["sampled_time"][top])
    assert x["gpu_energy"][top] == pytest.approx(200.0 * x["sampled_time"][top] * 1e-9)
    assert x["pcie_tx_bytes"][top] == 10 * 3 and x["pcie_rx_bytes"][top] == 20 * 3
    assert x["gpu_mem_peak"][top] == 1000 + 3
    series = s.series()
    assert series["units"]["gpu_power"] == "W" and series["tracks"]["gpu_power"] == [200.0] * 3
