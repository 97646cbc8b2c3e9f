"""Ensembles on disk (cctviz.dataset): a dataset written by Ensemble.to_dataset and
opened with cctviz.open_dataset gives back the ensemble, and DuckDB's statistics over
it equal the in-memory Ensemble's, on real ensembles and on random ones with missing
nodes, NaN values and dead ranks; folders that are not whole datasets are refused."""

from __future__ import annotations

import tempfile
from pathlib import Path
from unittest import mock

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cctviz
from cctviz.dataset import engine, layout
from tests.conftest import LULESH_SCALING
from tests.hypothesis_profiles import examples
from tests.strategies import trees

MISSING = ("auto", "zero", "skip")


def _write_open(ens, folder: Path, rows_per_part: int):
    return cctviz.open_dataset(ens.to_dataset(folder, rows_per_part=rows_per_part))


def assert_same_stats(a: pd.DataFrame, b: pd.DataFrame, label: str) -> None:
    """Equal tables; floats up to the order of the sums (DuckDB adds in another order)."""
    assert list(a.columns) == list(b.columns), label
    assert a.index.equals(b.index), label
    assert a.attrs == b.attrs, label
    for c in a.columns:
        x, y = a[c].to_numpy(), b[c].to_numpy()
        if c in ("name", "argmax", "count", "n"):
            assert x.tolist() == y.tolist(), (label, c)
        else:
            scale = np.nanmax(np.abs(x.astype(float)), initial=0.0)
            assert np.allclose(x, y, rtol=1e-9, atol=1e-12 * scale, equal_nan=True), (label, c)


def assert_same_ensemble(back: cctviz.Ensemble, ens: cctviz.Ensemble) -> None:
    assert back == ens  # nodes, rows, profiles, meta
    assert back.tree.meta == ens.tree.meta
    assert back.tree.units == ens.tree.units and back.aggregation == ens.aggregation
    assert back.profiles.dtypes.equals(ens.profiles.dtypes)
    for m in ens.tree.metrics.columns:
        assert np.array_equal(back.values(m), ens.values(m), equal_nan=True), m


def assert_same_tree(a: cctviz.Tree, b: cctviz.Tree) -> None:
    """Equal trees; NaN in the profile's metadata equal to NaN (dict == says not)."""
    assert a.nodes.equals(b.nodes) and a.metrics.equals(b.metrics)
    rest = {k: v for k, v in a.meta.items() if k != "profile"}
    assert rest == {k: v for k, v in b.meta.items() if k != "profile"}
    assert pd.Series(a.meta["profile"]).equals(pd.Series(b.meta["profile"]))


@pytest.mark.parametrize("which", ["rajaperf", "lulesh"])
def test_real_ensembles_round_trip(which, request, tmp_path):
    ens = request.getfixturevalue(which)
    per_part = max(len(ens.exclusive_rows) // 5, 1)  # several parts
    ds = _write_open(ens, tmp_path / which, per_part)
    assert len(list((tmp_path / which / "rows").glob("part-*.parquet"))) >= 4
    assert ds.n_profiles == ens.n_profiles and ds.n_rows == len(ens.exclusive_rows)
    assert ds.live.tolist() == ens.live.tolist()
    assert ds.profiles.equals(ens.profiles) and ds.meta == ens.meta
    assert_same_ensemble(ds.to_ensemble(), ens)


@pytest.mark.parametrize("which", ["rajaperf", "lulesh"])
def test_real_ensembles_stats_and_mean_tree_are_the_in_memory_ones(which, request, tmp_path):
    ens = request.getfixturevalue(which)
    ds = _write_open(ens, tmp_path / which, max(len(ens.exclusive_rows) // 3, 1))
    for metric in ens.tree.metrics.columns:
        for missing in MISSING:
            got = ds.stats(metric, missing=missing)
            assert_same_stats(got, ens.stats(metric, missing=missing), f"{metric} {missing}")
    assert ds.stats(formatted=True).equals(ens.stats(formatted=True))
    assert ds.tree.nodes.equals(ens.tree.nodes)
    a, b = ds.tree.metrics, ens.tree.metrics
    assert list(a.columns) == list(b.columns)
    assert np.allclose(a.to_numpy(float), b.to_numpy(float), rtol=1e-9, equal_nan=True)


def test_rajaperf_absent_runs_are_left_out_on_disk_too(rajaperf, tmp_path):
    """The absence rule was exercised: some kernels ran in only some of the runs."""
    ds = _write_open(rajaperf, tmp_path / "r", 300)
    st_ = ds.stats("Total time (inc)")
    partial = st_[(st_["n"] > 0) & (st_["n"] < ds.n_profiles)]
    assert len(partial) > 0
    zero = ds.stats("Total time (inc)", missing="zero")
    assert (zero.loc[partial.index, "n"] == ds.n_profiles).all()


def test_profiles_select_groupby_on_disk(rajaperf, tmp_path):
    ens = rajaperf
    ds = _write_open(ens, tmp_path / "r", 200)
    for i in (0, 7, ens.n_profiles - 1):
        assert_same_tree(ds.profile(i), ens.profile(i))
    run = ens.profiles["run"].iloc[5]
    assert_same_tree(ds.profile(run=run), ens.profile(run=run))
    pick = [11, 2, 5]  # a permutation: profile ids follow the order asked
    assert_same_ensemble(ds.select(pick).to_ensemble(), ens.select(pick))
    mask = (ens.profiles["variant"] == ens.profiles["variant"].iloc[0]).to_numpy()
    sub, ref = ds.select(mask), ens.select(mask)
    assert_same_stats(sub.stats("Total time (inc)"), ref.stats("Total time (inc)"), "mask")
    got, want = ds.groupby("variant"), ens.groupby("variant")
    assert list(got) == list(want) and len(got) > 1
    for key in want:
        assert_same_ensemble(got[key].to_ensemble(), want[key])
        m = "Total time (inc)"
        assert_same_stats(got[key].stats(m), want[key].stats(m), str(key))


def test_unknown_metric_is_named(rajaperf, tmp_path):
    ds = _write_open(rajaperf, tmp_path / "r", 1000)
    with pytest.raises(KeyError, match="no metric 'wall'"):
        ds.stats("wall")
    with pytest.raises(KeyError, match="BlockSize \\(inc\\)"):  # a 'none' metric: no inclusive
        ds.stats("BlockSize (inc)")


# ------------------------------------------------------------------ random ensembles
@st.composite
def ensembles(draw):
    """Ensembles with nodes missing from profiles, whole runs missing a node, NaN
    (unmeasured) values, a max-rule metric and dead ranks (profiles with no rows)."""
    tree = draw(trees(max_size=15))
    n_prof = draw(st.integers(1, 7))
    n = len(tree)
    present = np.array(
        draw(st.lists(st.booleans(), min_size=n * n_prof, max_size=n * n_prof)), dtype=bool
    ).reshape(n, n_prof)
    dead = draw(st.lists(st.integers(0, n_prof - 1), max_size=2))
    present[:, dead] = False  # recorded nothing
    node, prof = np.nonzero(present)
    k = node.size
    measured = st.integers(0, 50)
    time = np.array(
        draw(st.lists(st.one_of(measured, measured, measured, st.none()), min_size=k, max_size=k)),
        dtype=float,
    )
    peak = np.array(
        draw(st.lists(st.one_of(st.none(), st.integers(0, 9)), min_size=k, max_size=k)),
        dtype=float,
    )  # None -> NaN: not measured
    size = np.array(
        draw(st.lists(st.one_of(st.none(), st.integers(1, 3)), min_size=k, max_size=k)),
        dtype=float,
    )  # a per-node constant ("none" rule): merged nodes keep it only where they agree
    rows = pd.DataFrame({"node": node, "profile": prof, "time": time, "peak": peak, "size": size})
    runs = draw(st.lists(st.integers(0, 2), min_size=n_prof, max_size=n_prof))
    profiles = pd.DataFrame({"rank": range(n_prof), "run": runs})
    structure = cctviz.Tree(tree.nodes, None, {})
    meta = {"aggregation": {"peak": "max", "size": "none"}, "units": {"time": "ms"}}
    return cctviz.Ensemble(structure, rows, profiles, meta)


@settings(max_examples=examples(30), deadline=None)
@given(ensembles(), st.integers(1, 12), st.integers(1, 20))
def test_random_ensembles_equal_on_disk(ens, per_part, batch_rows):
    # batch_rows: inclusive values made a few rows at a time, a part in several batches
    with (
        tempfile.TemporaryDirectory() as d,
        mock.patch.object(engine, "INCLUSIVE_BATCH_ROWS", batch_rows),
    ):
        ds = _write_open(ens, Path(d) / "e", per_part)
        assert_same_ensemble(ds.to_ensemble(), ens)
        for metric in ("time", "time (inc)", "peak", "peak (inc)", "size"):
            for missing in MISSING:
                got = ds.stats(metric, missing=missing)
                assert_same_stats(got, ens.stats(metric, missing=missing), f"{metric} {missing}")
        a, b = ds.tree.metrics, ens.tree.metrics
        assert np.allclose(a.to_numpy(float), b.to_numpy(float), equal_nan=True)
        for metric in ("time", "time (inc)", "peak (inc)"):  # with and without NaN
            assert np.allclose(ds.live_mean(metric), ens.live_mean(metric)), metric
        ds.close()


# ------------------------------------------------------------------ bad folders
def test_a_folder_that_is_not_a_dataset_is_refused(tmp_path):
    with pytest.raises(cctviz.ProfileError, match="not a cctviz dataset"):
        cctviz.open_dataset(LULESH_SCALING[0].parent)  # a folder of real profiles
    with pytest.raises(cctviz.ProfileError, match="not a folder"):
        cctviz.open_dataset(LULESH_SCALING[0])
    with pytest.raises(cctviz.ProfileError, match="no such dataset folder"):
        cctviz.open_dataset(tmp_path / "nowhere")


def test_a_crashed_write_leaves_a_dataset_that_is_refused(lulesh, tmp_path, monkeypatch):
    """A write that dies after its first part (a crash, a full disk) is detected."""
    real = pq.write_table
    calls = []

    def dies_on_the_second_part(*args, **kw):
        calls.append(1)
        if len(calls) == 4:  # nodes, profiles, part 0, then part 1
            raise OSError("No space left on device")
        return real(*args, **kw)

    monkeypatch.setattr(layout.pq, "write_table", dies_on_the_second_part)
    with pytest.raises(OSError, match="No space left"):
        lulesh.to_dataset(tmp_path / "e", rows_per_part=5000)
    monkeypatch.undo()
    assert (tmp_path / "e" / "rows" / "part-00000.parquet").is_file()
    with pytest.raises(cctviz.ProfileError, match="partial dataset"):
        cctviz.open_dataset(tmp_path / "e")
    # writing again over the partial dataset replaces it
    with pytest.raises(cctviz.ProfileError, match="overwrite=True"):
        lulesh.to_dataset(tmp_path / "e")
    ds = cctviz.open_dataset(lulesh.to_dataset(tmp_path / "e", overwrite=True))
    assert ds.n_rows == len(lulesh.exclusive_rows)


def test_a_lost_or_changed_part_is_named(lulesh, tmp_path):
    d = lulesh.to_dataset(tmp_path / "e", rows_per_part=20000)
    part = sorted((d / "rows").glob("part-*.parquet"))[1]
    keep = part.read_bytes()
    part.unlink()
    with pytest.raises(cctviz.ProfileError, match="missing: rows/part-00001.parquet"):
        cctviz.open_dataset(d)
    first = pq.read_table(sorted((d / "rows").glob("part-*.parquet"))[0])
    pq.write_table(first, part)  # another part's rows in its place
    with pytest.raises(cctviz.ProfileError, match="part-00001.parquet: holds"):
        cctviz.open_dataset(d)
    part.write_bytes(keep)
    (d / "manifest.json").write_text((d / "manifest.json").read_text().replace('"time"', '"t"'))
    with pytest.raises(cctviz.ProfileError, match="does not match the _COMPLETE marker"):
        cctviz.open_dataset(d)


def test_writing_into_a_folder_of_other_files_is_refused(tmp_path):
    t = cctviz.Tree.from_parents([-1, 0], ["main", "f"], {"time": [1.0, 2.0]})
    ens = cctviz.Ensemble.from_trees([t, t])
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(cctviz.ProfileError, match="holds no cctviz dataset"):
        ens.to_dataset(tmp_path)
    assert (tmp_path / "notes.txt").read_text() == "mine"


# ------------------------------------------------------------------ chunks
def test_chunks_written_one_at_a_time_equal_the_whole(lulesh, tmp_path):
    """write_chunks of the LULESH ranks in 5 chunks gives the dataset of the whole."""
    from cctviz.dataset import write_chunks

    bounds = np.linspace(0, lulesh.n_profiles, 6).astype(int)
    chunks = (lulesh.select(np.arange(a, b)) for a, b in zip(bounds[:-1], bounds[1:]))
    ds = cctviz.open_dataset(write_chunks(chunks, tmp_path / "c", rows_per_part=9000))
    assert len(ds._store.parts) > 5  # several parts per chunk
    assert_same_ensemble(ds.to_ensemble(), lulesh)
    assert_same_stats(ds.stats("time (inc)"), lulesh.stats("time (inc)"), "chunks")


def test_a_chunk_over_another_tree_is_refused(lulesh, rajaperf, tmp_path):
    from cctviz.dataset import write_chunks

    with pytest.raises(ValueError, match="chunk 1 is over another tree"):
        write_chunks(iter([lulesh.select([0]), rajaperf.select([0])]), tmp_path / "x")
    with pytest.raises(ValueError, match="no chunks"):
        write_chunks(iter([]), tmp_path / "y")


def test_duckdb_spills_into_a_folder_of_its_own(rajaperf, tmp_path, monkeypatch):
    """Past its memory limit DuckDB writes temporary files: not into the user's
    working folder (its default ./.tmp), and the folder goes when the dataset closes."""
    monkeypatch.chdir(tmp_path)
    ds = _write_open(rajaperf, tmp_path / "r", 300)
    ds.stats("Total time (inc)")
    spill = ds._sql("SELECT current_setting('temp_directory')").fetchone()[0]
    assert Path(spill).is_dir() and not Path(spill).is_relative_to(tmp_path)
    ds.close()
    assert not Path(spill).exists() and not (tmp_path / ".tmp").exists()
