"""``read_ensemble(paths, out=folder)`` (issue 24): many profiles composed straight
into a dataset folder, a chunk of files at a time, give the dataset of the
in-memory read (tree, profiles, values, units, rules, statistics); one chunk of
parsed files is alive at a time; a compose that fails on the way leaves a folder
that ``open_dataset`` refuses."""

from __future__ import annotations

import json
import sys
import weakref

import numpy as np
import pytest

import cctviz
from cctviz import ProfileError
from cctviz.readers import _batch
from tests.conftest import DATA, LULESH_SCALING, ROOT
from tests.dataset.test_dataset import assert_same_ensemble, assert_same_stats

sys.path.insert(0, str(ROOT / "benchmarks"))
import caliper_study  # noqa: E402


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """60 files from the real LULESH (1 and 8 ranks) and RAJAPerf runs, some lacking
    a leaf, some lacking two metrics."""
    return caliper_study.write_study(60, tmp_path_factory.mktemp("study"), seed=3)


@pytest.fixture(scope="module")
def in_memory(study):
    return cctviz.read_ensemble(study, progress=False)


@pytest.mark.parametrize("chunk_files", [1, 7, 100])
def test_the_composed_dataset_is_the_in_memory_ensemble(study, in_memory, tmp_path, chunk_files):
    # one file a chunk: an 8-rank LULESH chunk has no RAJAPerf metric, yet its rows
    # added for ancestors count 0 for RAJAPerf's sums, as in memory
    ds = cctviz.read_ensemble(study, out=tmp_path / "d", chunk_files=chunk_files, progress=False)
    assert isinstance(ds, cctviz.DatasetEnsemble)
    assert_same_ensemble(ds.to_ensemble(), in_memory)
    parts = sorted(p.name for p in (tmp_path / "d" / "rows").iterdir())
    assert len(parts) == -(-len(study) // chunk_files) and all(
        p.startswith("part-0") for p in parts
    )
    for metric in ("Total time (inc)", "Max time/rank (inc)", "time (inc)", "Avg time/rank"):
        assert_same_stats(ds.stats(metric), in_memory.stats(metric), metric)


def test_rows_added_for_ancestors_as_in_memory(study, tmp_path):
    """Rank 3 of an 8-rank LULESH run lacks its record of an inner region: the
    row is added within the file (its time 0), so RAJAPerf's metrics, which the
    file lacks, are not measured there (NaN), one file a chunk or all together."""
    doc = caliper_study.lulesh_docs(8)[-1]
    doc = caliper_study.drop_columns(doc, ("inclusive#sum#time.duration",))  # no check to fail
    cols = doc["columns"]
    jp, jr = cols.index("path"), cols.index("mpi.rank")
    inner = doc["nodes"][3]["parent"]
    doc = {**doc, "data": [r for r in doc["data"] if not (r[jp] == inner and r[jr] == 3)]}
    (tmp_path / "gap.json").write_text(json.dumps(doc))
    raja = next(f for f in study if "rajaperf" in f.name)
    files = [tmp_path / "gap.json", raja]
    ens = cctviz.read_ensemble(files, progress=False)
    ds = cctviz.read_ensemble(files, out=tmp_path / "g", chunk_files=1, progress=False)
    assert_same_ensemble(ds.to_ensemble(), ens)
    rows = ens.exclusive_rows.set_index(["node", "profile"])
    added = rows.loc[(ens.tree.nodes.index[ens.tree.names == doc["nodes"][inner]["label"]][0], 3)]
    assert added["time"] == 0 and np.isnan(added["Total time"]) and np.isnan(added["Max time/rank"])
    assert cctviz.read_ensemble(files, progress=False, batch=False) == ens


def test_real_ensembles_compose_alike(tmp_path):
    files = [
        *LULESH_SCALING,
        DATA / "hatchet" / "caliper-lulesh-json" / "lulesh-annotation-profile.json",
    ]
    ens = cctviz.read_ensemble(files, progress=False)
    ds = cctviz.read_ensemble(files, out=tmp_path / "l", chunk_files=3, progress=False)
    assert_same_ensemble(ds.to_ensemble(), ens)
    assert_same_stats(ds.stats("time (inc)"), ens.stats("time (inc)"), "lulesh")


def test_two_processes_compose_alike(study, in_memory, tmp_path):
    ds = cctviz.read_ensemble(study, out=tmp_path / "w", chunk_files=25, workers=2, progress=False)
    assert_same_ensemble(ds.to_ensemble(), in_memory)


def test_one_chunk_of_parsed_files_at_a_time(study, tmp_path, monkeypatch):
    alive: list[weakref.ref] = []
    sizes: list[int] = []
    real = _batch.read_chunk_arrays

    def counted(paths, format, reader_kw):
        assert all(r() is None for r in alive), "an earlier chunk's files are still alive"
        sizes.append(len(paths))
        got = real(paths, format, reader_kw)
        alive.extend(weakref.ref(fa) for fa in got)
        return got

    monkeypatch.setattr(_batch, "read_chunk_arrays", counted)
    cctviz.read_ensemble(study, out=tmp_path / "b", chunk_files=8, progress=False)
    assert max(sizes) == 8 and sum(sizes) == len(study) and len(sizes) == -(-len(study) // 8)


def test_chunks_are_bounded_by_bytes_on_disk(study, in_memory, tmp_path, monkeypatch):
    """Chunks by size: each parsed chunk's files hold at most ``chunk_bytes`` on
    disk (a file larger is a chunk alone), in order, every file once; the dataset
    is the in-memory ensemble all the same."""
    sizes = [p.stat().st_size for p in study]
    limit = 3 * int(np.median(sizes))
    seen: list[list] = []
    real = _batch.read_chunk_arrays

    def counted(paths, format, reader_kw):
        seen.append(list(paths))
        return real(paths, format, reader_kw)

    monkeypatch.setattr(_batch, "read_chunk_arrays", counted)
    ds = cctviz.read_ensemble(study, out=tmp_path / "s", chunk_bytes=limit, progress=False)
    assert [p for c in seen for p in c] == list(study) and len(seen) > 2
    for chunk in seen:
        held = sum(p.stat().st_size for p in chunk)
        assert held <= limit or len(chunk) == 1, (held, limit, len(chunk))
    for a, b in zip(seen, seen[1:]):  # a chunk is cut only where the next file would not fit
        assert sum(p.stat().st_size for p in [*a, b[0]]) > limit
    assert len(ds._store.parts) == len(seen)
    assert_same_ensemble(ds.to_ensemble(), in_memory)
    with pytest.raises(ValueError, match="chunk_bytes"):
        cctviz.read_ensemble(study, out=tmp_path / "z", chunk_bytes=0, progress=False)


def test_a_compose_that_fails_leaves_a_partial_dataset(study, tmp_path):
    broken = tmp_path / "broken.json"
    broken.write_text(study[0].read_text()[:400])
    files = [*study[:10], broken, *study[10:20]]
    with pytest.raises(ProfileError) as e:
        cctviz.read_ensemble(files, out=tmp_path / "p", chunk_files=4, progress=False)
    assert e.value.path == str(broken)
    assert any((tmp_path / "p" / "rows").iterdir())  # the first chunks' rows were written
    with pytest.raises(ProfileError, match="partial dataset"):
        cctviz.open_dataset(tmp_path / "p")
    # composed again over it, whole this time
    ds = cctviz.read_ensemble(study[:20], out=tmp_path / "p", overwrite=True, progress=False)
    assert ds.n_profiles == cctviz.read_ensemble(study[:20], progress=False).n_profiles


def test_an_existing_dataset_is_kept_unless_overwrite(study, tmp_path):
    cctviz.read_ensemble(study[:3], out=tmp_path / "e", progress=False)
    with pytest.raises(ProfileError, match="overwrite=True"):
        cctviz.read_ensemble(study[:3], out=tmp_path / "e", progress=False)


def test_formats_without_a_batch_parser_are_composed_a_chunk_at_a_time(tmp_path):
    """Files the batch parser does not cover (Caliper .cali, Hatchet's literal) are read
    by their readers, a chunk at a time, and the dataset is the in-memory ensemble."""
    literal = DATA / "hatchet" / "json" / "hatchet-graph-literal.json"
    files = [LULESH_SCALING[1], literal]
    ds = cctviz.read_ensemble(files, out=tmp_path / "o", progress=False)
    assert_same_ensemble(ds.to_ensemble(), cctviz.read_ensemble(files, progress=False))
    cali = sorted((DATA / "thicket" / "rajaperf").rglob("*.cali"))
    ds = cctviz.read_ensemble(cali, out=tmp_path / "r", chunk_files=5, progress=False)
    assert len(ds._store.parts) == -(-len(cali) // 5)  # one part per chunk of 5 files
    assert_same_ensemble(ds.to_ensemble(), cctviz.read_ensemble(cali, progress=False))
