"""Real ensembles the dataset tests write to disk and compare with."""

from __future__ import annotations

import pytest

import cctviz
from tests.conftest import DATA, LULESH_SCALING


@pytest.fixture(scope="session")
def rajaperf():
    """18 RAJAPerf runs: kernels missing from some runs, max/none-rule metrics."""
    return cctviz.read_ensemble(DATA / "thicket" / "rajaperf")


@pytest.fixture(scope="session")
def lulesh():
    """8 LULESH runs, 1,296 ranks in all."""
    return cctviz.read_ensemble(LULESH_SCALING)
