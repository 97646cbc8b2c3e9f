"""A real Score-P trace of a HIP program (fastotf2's MI300 sample, tests/data):
its GPU contexts are locations of its one process, not ranks of their own, and
its plugin metrics, all declared accumulated from the start with unit ``#``,
are read as what their samples show: gauges (power, busy %, frequency) never
summed and without the unit "count", energy counters by their growth; the
samples themselves, read with the otf2 package, are the oracle."""

from __future__ import annotations

import warnings
from collections import defaultdict
from pathlib import Path

import numpy as np
import otf2
import pytest

import cctviz

TRACE = Path(__file__).resolve().parents[1] / "data" / "fastotf2-mi300" / "traces.otf2"


@pytest.fixture(scope="module")
def samples() -> dict[str, np.ndarray]:
    """Every metric member's samples, in order (the otf2 package, not cctviz)."""
    out: dict[str, list] = defaultdict(list)
    with otf2.reader.open(str(TRACE)) as r:
        for _, ev in r.events:
            if isinstance(ev, otf2.events.Metric):
                for m, v in zip(ev.metric.members, ev.values, strict=True):
                    out[m.name].append(float(v))
    return {k: np.asarray(v) for k, v in out.items()}


@pytest.fixture(scope="module")
def read() -> tuple[cctviz.Ensemble, list[str]]:
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        ens = cctviz.read(TRACE)
    return ens, [str(w.message) for w in said]


def test_gpu_contexts_are_locations_of_their_process(read):
    ens, _ = read
    prof = ens.profiles
    assert set(prof["rank"]) == {0}  # one process, not ranks 0, 1 and 2
    assert prof["thread"].tolist() == list(range(len(prof)))
    gpu = prof[prof["accelerator"].notna()]
    assert sorted(gpu["accelerator"]) == ["HIP Context 0", "HIP Context 1"]
    assert set(gpu["process"]) == {"Process"} and set(gpu["host"]) == set(prof["host"])


def test_gauges_are_never_summed_and_counters_give_their_growth(read, samples):
    ens, said = read
    agg, units = ens.meta["aggregation"], ens.meta["units"]
    for name, v in samples.items():
        if name == "HIP Memory":  # declared absolute: a gauge as it says
            assert agg[name] == "max" and units[name] == "B"
            continue
        grows_always = (np.diff(v) > 0).all()
        if "energy_count" in name:
            assert grows_always  # a counter since boot: its growth over the run
            assert agg.get(name, "sum") == "sum" and units[name] == "count"
            got = np.nansum(ens.values(name))
            assert got == pytest.approx(v[-1] - v[0], rel=1e-9)
        else:  # power, busy %, frequency, temperature: the largest value, no unit
            assert not grows_always
            assert agg[name] == "max" and units.get(name) is None, name
            assert np.nanmax(ens.values(name)) == v.max()
    gauges = [k for k in samples if k != "HIP Memory" and "energy_count" not in k]
    assert any(f"{len(gauges)} metric(s)" in s and "read as gauges" in s for s in said), said
    assert any("4 counter(s)" in s and "energy_count" in s for s in said), said
