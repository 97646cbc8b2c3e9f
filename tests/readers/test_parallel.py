"""``read_ensemble(workers=N)`` and ``read_ensemble(client=...)`` (issue 24):
files read on several processes or a Dask cluster give the serial read's
Ensemble, and a broken file is a ProfileError naming it, not a worker's traceback."""

from __future__ import annotations

import pickle
import shutil

import numpy as np
import pandas as pd
import pytest

import cctviz
from cctviz import ProfileError
from cctviz.errors import ReaderBugError

from ..conftest import DATA, LULESH_SCALING

RAJAPERF = sorted((DATA / "thicket" / "rajaperf").rglob("*.cali"))


def assert_same(a: cctviz.Ensemble, b: cctviz.Ensemble) -> None:
    """Equal trees (names, parents, kinds), profiles and every metric's values."""
    assert list(a.tree.names) == list(b.tree.names)
    assert np.array_equal(np.asarray(a.tree.parent), np.asarray(b.tree.parent))
    pd.testing.assert_frame_equal(a.profiles, b.profiles)
    assert a.tree.units == b.tree.units and a.aggregation == b.aggregation
    for m in a.exc_metrics:
        assert np.array_equal(a.values(m), b.values(m), equal_nan=True), m


@pytest.fixture(scope="module", params=["lulesh-scaling", "rajaperf"])
def files(request):
    return LULESH_SCALING if request.param == "lulesh-scaling" else RAJAPERF


def test_two_processes_equal_the_serial_read(files):
    serial = cctviz.read_ensemble(files, progress=False)
    parallel = cctviz.read_ensemble(files, workers=2, progress=False)
    assert_same(serial, parallel)
    assert parallel.profiles["file"].nunique() == len(files)


def test_a_broken_file_names_itself_from_a_worker(tmp_path, files):
    keep = [shutil.copy(f, tmp_path / f.name) for f in files[:4]]
    broken = tmp_path / "broken.json"
    broken.write_text(files[0].read_text()[:500])
    with pytest.raises(ProfileError) as e:
        cctviz.read_ensemble([*keep[:2], broken, *keep[2:]], workers=2, progress=False)
    assert e.value.path == str(broken) and str(broken) in str(e.value)


def test_a_script_without_a_main_guard_is_told_so(tmp_path):
    """Workers import the main script again: a script that reads at import time
    gets a WorkerError that says so (not only multiprocessing's traceback and a
    BrokenProcessPool)."""
    import subprocess
    import sys

    script = tmp_path / "unguarded.py"
    files = [str(f) for f in LULESH_SCALING[:4]]
    script.write_text(
        f"import cctviz\ncctviz.read_ensemble({files!r}, workers=2, progress=False)\n"
    )
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert run.returncode != 0
    assert "cctviz.errors.WorkerError" in run.stderr
    assert 'if __name__ == "__main__":' in run.stderr


def test_profile_errors_pickle_as_they_are():
    for e in (
        ProfileError("a.json", "bad", where="nodes[3]"),
        ReaderBugError("b.json", "kineto", KeyError("ts")),
    ):
        back = pickle.loads(pickle.dumps(e))
        assert type(back) is type(e) and str(back) == str(e) and back.path == e.path


def test_bad_workers():
    with pytest.raises(ValueError, match="workers must be a positive integer"):
        cctviz.read_ensemble(LULESH_SCALING, workers=0)


@pytest.mark.slow  # dask: the main test environment (cctviz[scale])
def test_a_dask_cluster_equals_the_serial_read(tmp_path, files):
    from dask.distributed import Client, LocalCluster

    serial = cctviz.read_ensemble(files, progress=False)
    with (
        LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            host="127.0.0.1",
            dashboard_address=None,
            processes=True,
        ) as cluster,
        Client(cluster) as client,
    ):
        assert_same(serial, cctviz.read_ensemble(files, client=client, progress=False))
        broken = tmp_path / "broken.json"
        broken.write_text("{")
        with pytest.raises(ProfileError) as e:
            cctviz.read_ensemble([*files[:3], broken], client=client, progress=False)
        assert e.value.path == str(broken)
