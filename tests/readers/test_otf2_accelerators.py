"""A real Score-P trace of a HIP program (fastotf2's MI300 sample, tests/data):
its GPU contexts are locations of its one process, not ranks of their own, and
its plugin metrics, all declared accumulated from the start with unit ``#``:
those whose samples go down (power, busy %, frequency) are gauges, never summed
and without the unit "count"; the samples themselves, read with the otf2
package, are the oracle."""

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


def test_what_goes_down_is_no_counter(read, samples):
    """A member declared accumulated whose samples go down (power, busy %,
    frequency) is a gauge: its largest value, no unit; one that never goes down
    (the energy counters, a frequency that stayed put) is read as declared: a
    sum, the root holding its last sample."""
    ens, said = read
    agg, units = ens.meta["aggregation"], ens.meta["units"]
    down = [k for k, v in samples.items() if k != "HIP Memory" and (np.diff(v) < 0).any()]
    assert any("power" in k for k in down) and any("busy_percent" in k for k in down)
    for name, v in samples.items():
        if name == "HIP Memory":  # declared absolute: a gauge as it says
            assert agg[name] == "max" and units[name] == "B"
        elif name in down:
            assert agg[name] == "max" and units.get(name) is None, name
            assert np.nanmax(ens.values(name)) == v.max()
        else:
            assert agg.get(name, "sum") == "sum" and units[name] == "count", name
            assert np.nansum(ens.values(name)) == pytest.approx(v[-1], rel=1e-12)
    assert any(f"{len(down)} metric(s)" in s and "read as gauges" in s for s in said), said
