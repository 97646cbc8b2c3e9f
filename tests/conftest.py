"""Shared fixtures: the real profiles in ../shared/data (read in place)."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"

if (
    not DATA.is_dir()
):  # CI has shared/ beside the checkout: a missing folder is an error, not a skip
    raise RuntimeError(f"real test data not found at {DATA}; clone with ../shared beside the repo")

HATCHET_JSON = DATA / "hatchet" / "json" / "hatchet-graph-literal.json"
CALIPER_JSON = sorted(DATA.glob("hatchet/caliper-*-json/*.json"))
LULESH_SCALING = sorted((DATA / "hatchet-tutorial" / "lulesh-scaling").glob("*.json"))


@pytest.fixture(scope="session")
def hatchet_tree():
    import cctviz

    return cctviz.read(HATCHET_JSON)
