"""Shared fixtures: the real profiles in ../shared/data (read in place)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import hypothesis_profiles  # noqa: F401  (loads HYPOTHESIS_PROFILE)

#: the test data: files and the scripts that made them, never tests themselves
collect_ignore_glob = ["data/*"]

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


#: tests the quick loop (``pytest -m "not slow"``) leaves out: browser and notebook
#: tests, subprocesses (torch runs, exports at exit), fuzzers and property tests with
#: many examples. CI runs them all. A test can also say ``@pytest.mark.slow`` itself.
SLOW = (
    "tests/ui/",
    "tests/test_notebooks.py",
    "tests/test_figures.py",
    "tests/test_readme.py",
    "tests/runtime/",
    "tests/perfmodel/test_analytic.py::test_model_states_equal_the_tensors",
    "tests/readers/test_kineto_torch.py",
    "tests/readers/test_kineto.py::test_memory_stays_below_twice_the_file",
    "tests/readers/test_cctviz_run.py",
    "tests/test_cli.py::test_demo",
    "tests/export/test_packaging.py",
    "fuzz",
    "tests/views/test_lod.py::test_",
    "tests/model/test_aggregation.py::test_",
)


def pytest_collection_modifyitems(config, items):
    for item in items:
        if any(part in item.nodeid for part in SLOW):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def traced_ddp_run(tmp_path_factory):
    """examples/train.py on 2 gloo ranks under ``cctviz run --timeline`` (4
    steps, 1 of warm-up): the run folder the view and export tests share."""
    from tests.runtime.conftest import example_run

    folder, _ = example_run(
        tmp_path_factory.mktemp("traced") / "ddp-run", "ddp", steps=4, warmup=1,
        extra=("--timeline",),
    )  # fmt: skip
    return folder
