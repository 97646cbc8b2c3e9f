"""The batch path of ``read_ensemble`` (issue 24): Caliper json-split files parsed to
arrays and composed in one pass give exactly the Ensemble of the files read one by
one and concatenated (``batch=False``): tree, profiles, every metric's values,
units, rules and metadata, warnings and errors; serially, on processes and on a
Dask cluster. Files: the real LULESH and Caliper samples, a study made from the
real LULESH and RAJAPerf profiles (``benchmarks/caliper_study.py``), and
hypothesis' variations of the real documents."""

from __future__ import annotations

import gzip
import json
import re
import shutil
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cctviz
from cctviz import ProfileError
from cctviz.readers import _batch, _caliper_batch

from ..conftest import DATA, LULESH_SCALING, ROOT
from ..hypothesis_profiles import examples

sys.path.insert(0, str(ROOT / "benchmarks"))
import caliper_study  # noqa: E402

CALIPER_SAMPLES = sorted((DATA / "hatchet").glob("caliper-*-json/*.json"))


def read_both(files, **kw):
    """The one-by-one read and the batch read, each with the warnings it gave."""
    out = []
    for batch in (False, True):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            try:
                got = cctviz.read_ensemble(files, progress=False, batch=batch, **kw)
            except ProfileError as e:
                got = e
        out.append((got, sorted(str(x.message) for x in w)))
    return out


def assert_equal_reads(files, **kw) -> cctviz.Ensemble:
    (old, w_old), (new, w_new) = read_both(files, **kw)
    assert w_new == w_old
    if isinstance(old, Exception):
        assert type(new) is type(old) and str(new) == str(old)
        return None
    assert new == old  # nodes, rows, profiles, meta (Ensemble.__eq__)
    pd.testing.assert_frame_equal(new.tree.nodes, old.tree.nodes)
    pd.testing.assert_frame_equal(new.profiles, old.profiles)
    assert new.tree.meta == old.tree.meta
    for m in old.exc_metrics:
        assert np.array_equal(new.values(m), old.values(m), equal_nan=True), m
    return new


@pytest.fixture
def count_fallbacks(monkeypatch):
    """How many files the batch parser left to the reader."""
    seen = []
    real = _batch.from_object

    def counted(obj):
        seen.append(obj.meta.get("source"))
        return real(obj)

    monkeypatch.setattr(_batch, "from_object", counted)
    return seen


@pytest.fixture(scope="module")
def study(tmp_path_factory) -> list[Path]:
    """70 files from the real LULESH (1 and 8 ranks) and RAJAPerf runs, some
    lacking a leaf, some lacking two metrics."""
    return caliper_study.write_study(70, tmp_path_factory.mktemp("study"), seed=7)


def test_lulesh_scaling_equals_the_one_by_one_read(count_fallbacks):
    ens = assert_equal_reads(LULESH_SCALING)
    assert ens.n_profiles == 1 + 8 + 27 + 64 + 125 + 216 + 343 + 512
    assert count_fallbacks == []  # every file went through the batch parser


def test_the_study_equals_the_one_by_one_read(study, count_fallbacks):
    ens = assert_equal_reads(study)
    assert count_fallbacks == []
    assert {"Total time", "Max time/rank", "time"} <= set(ens.exc_metrics)
    assert ens.aggregation["Max time/rank"] == "max" and ens.tree.units["Total time"] == "s"
    # a file without Avg time/rank has no value there: NaN, not 0
    lacking = [k for k, f in enumerate(study) if k % 7 == 6 and "rajaperf" in f.name]
    assert lacking and np.isnan(ens.values("Avg time/rank")[:, lacking]).all()


def test_metadata_and_runs_as_the_one_by_one_read(study):
    table = pd.DataFrame({"study": [f"s{k % 3}" for k in range(len(study))]})
    assert "study" in assert_equal_reads(study, metadata=table).profiles
    assert_equal_reads(study[:9], metadata=lambda p: {"name": p.stem})
    assert_equal_reads(study[:9], metadata={str(study[0]): {"tag": "first"}})
    # a column of None beside files without it: None stays None (object), as in
    # the one-by-one read's concatenation (a table of all the dicts made it NaN)
    notes = {str(f): ({"note": None} if k % 2 else {"other": "x"}) for k, f in enumerate(study[:6])}
    assert assert_equal_reads(study[:6], metadata=notes).profiles["note"].dtype == object


@pytest.mark.parametrize("sample", CALIPER_SAMPLES, ids=lambda p: p.parent.name)
def test_caliper_samples_equal_the_one_by_one_read(sample, count_fallbacks):
    """Node order, repeated records, label columns: the reader's files, composed
    by the batch path all the same."""
    assert_equal_reads([sample, sample, LULESH_SCALING[1]])


def test_samples_left_to_the_reader(count_fallbacks):
    assert_equal_reads(CALIPER_SAMPLES[2:] + LULESH_SCALING[:2])
    assert len(count_fallbacks) == len(CALIPER_SAMPLES[2:])  # 'Node order' files


def test_units_that_cannot_be_reconciled_fail_alike():
    # LULESH's time is assumed in microseconds, the ordered sample's in seconds: refused
    (old, _), (new, _) = read_both([CALIPER_SAMPLES[1], CALIPER_SAMPLES[3]])
    assert isinstance(old, ProfileError) and str(new) == str(old)


def test_a_broken_file_names_itself(tmp_path, study):
    broken = tmp_path / "broken.json"
    broken.write_text(study[1].read_text()[:300])
    (old, _), (new, _) = read_both([study[0], broken, study[2]])
    assert isinstance(new, ProfileError) and new.path == str(broken) and str(new) == str(old)
    cycle = json.loads(study[0].read_text())
    cycle["nodes"][0]["parent"] = len(cycle["nodes"]) - 1
    (tmp_path / "cycle.json").write_text(json.dumps(cycle))
    (old, _), (new, _) = read_both([study[2], tmp_path / "cycle.json"])
    assert isinstance(new, ProfileError) and str(new) == str(old)


@pytest.mark.parametrize("batch", [True, False])
@pytest.mark.parametrize("with_path", [True, False])
def test_an_integer_beyond_a_float_names_its_file_and_place(tmp_path, batch, with_path):
    """A record with an integer no float holds (json.loads gives it as an int),
    one with a call path or one without (which the reader leaves out): a
    ProfileError naming the file and the record, in both reads and on pandas 2
    and 3 (the batch read had let numpy's OverflowError out; the reader called
    it its own bug, on pandas 3 only where the record has a path)."""
    good = shutil.copy(LULESH_SCALING[0], tmp_path / "good.json")
    doc = json.loads(LULESH_SCALING[0].read_text())
    jp = doc["columns"].index("path")
    k = next(k for k, r in enumerate(doc["data"]) if (r[jp] is not None) == with_path)
    j = 1 if jp == 0 else 0
    doc["data"][k][j] = 10**400
    bad = tmp_path / "big.json"
    bad.write_text(json.dumps(doc))
    with pytest.raises(ProfileError) as e:
        cctviz.read_ensemble([good, bad], batch=batch, progress=False)
    assert e.value.path == str(bad) and f"data[{k}][{j}]" in str(e.value)
    assert "beyond a float" in str(e.value)


def test_other_formats_take_the_one_by_one_path(tmp_path):
    literal = DATA / "hatchet" / "json" / "hatchet-graph-literal.json"
    ens = assert_equal_reads([LULESH_SCALING[1], literal])  # 1 rank
    assert ens.profiles["file"].tolist() == [str(LULESH_SCALING[1]), str(literal)]


def test_gaps_in_ranks_go_to_the_reader_big_files_too(tmp_path, monkeypatch, count_fallbacks):
    """Rank 3 of an 8-rank LULESH run without its record of an inner region: the
    reader's Ensemble adds the row within the file; found by the group parse's
    sorted keys, with verify's dense checks or (beyond DENSE_CELLS) without them."""
    doc = caliper_study.drop_columns(
        caliper_study.lulesh_docs(8)[-1], ("inclusive#sum#time.duration",)
    )
    jp, jr = doc["columns"].index("path"), doc["columns"].index("mpi.rank")
    inner = doc["nodes"][3]["parent"]
    gap = {**doc, "data": [r for r in doc["data"] if not (r[jp] == inner and r[jr] == 3)]}
    (tmp_path / "gap.json").write_text(json.dumps(gap))
    (tmp_path / "whole.json").write_text(json.dumps(doc))
    files = [tmp_path / "whole.json", tmp_path / "gap.json", LULESH_SCALING[1]]
    assert_equal_reads(files)
    assert count_fallbacks == [str(tmp_path / "gap.json")]
    monkeypatch.setattr(_batch, "DENSE_CELLS", 1)  # every file is big
    count_fallbacks.clear()
    assert_equal_reads(files)
    # the gap found by keys; the 1-rank file's inclusive check left to the reader
    assert count_fallbacks == [str(tmp_path / "gap.json"), str(LULESH_SCALING[1])]


def test_gzipped_files_are_parsed_alike(tmp_path, count_fallbacks):
    files = []
    for f in LULESH_SCALING[1:3]:
        files.append(tmp_path / (f.name + ".gz"))
        files[-1].write_bytes(gzip.compress(f.read_bytes()))
    ens = assert_equal_reads([*files, LULESH_SCALING[3]])
    assert count_fallbacks == [] and ens.profiles["file"].tolist()[0] == str(files[0])


def test_the_serial_batch_read_shows_its_progress(study, capfd):
    """A bar over the files (tqdm, on stderr) where asked, none where not."""
    cctviz.read_ensemble(study, progress=True)
    err = capfd.readouterr().err
    assert "reading profiles" in err and f"{len(study)}/{len(study)}" in err
    cctviz.read_ensemble(study, progress=False)
    assert "reading profiles" not in capfd.readouterr().err


def test_two_processes_equal_the_serial_read(study):
    serial = cctviz.read_ensemble(study, progress=False)
    assert cctviz.read_ensemble(study, workers=2, progress=False) == serial


@st.composite
def variations(draw):
    """A real LULESH or RAJAPerf document, varied: leaves dropped, columns
    dropped, values scaled or left out, records lost, a record repeated, ranks
    renumbered."""
    docs = _sources()
    doc = docs[draw(st.integers(0, len(docs) - 1))]
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    for _ in range(draw(st.integers(0, 3))):
        doc = caliper_study.drop_leaf(doc, rng)
    values = [j for j, m in enumerate(doc["column_metadata"]) if m.get("is_value")]
    drop = draw(st.lists(st.sampled_from([doc["columns"][j] for j in values]), max_size=2))
    keep = [j for j, c in enumerate(doc["columns"]) if c not in drop]
    data = [[row[j] for j in keep] for row in doc["data"]]
    cols = [doc["columns"][j] for j in keep]
    for row in data:
        for j, c in enumerate(cols):
            if c not in ("path", "mpi.rank") and row[j] is not None:
                if draw(st.integers(0, 30)) == 0:
                    row[j] = None
                else:
                    row[j] = row[j] * draw(st.sampled_from([1.0, 0.5, 3.0]))
    if data and draw(st.integers(0, 3)) == 0:  # records lost: a rank without an ancestor's
        lost = set(draw(st.lists(st.integers(0, len(data) - 1), max_size=5)))
        data = [row for k, row in enumerate(data) if k not in lost]
    if data and draw(st.booleans()) and draw(st.integers(0, 4)) == 0:
        data.append(list(data[draw(st.integers(0, len(data) - 1))]))
    if "mpi.rank" in cols and draw(st.booleans()):
        jr = cols.index("mpi.rank")
        for row in data:
            row[jr] = (row[jr] or 0) * 3 + 1
    return {
        **doc,
        "columns": cols,
        "column_metadata": [doc["column_metadata"][j] for j in keep],
        "data": data,
    }


_SOURCES: list[dict] = []


def _sources() -> list[dict]:
    if not _SOURCES:
        _SOURCES.extend(caliper_study.lulesh_docs(8) + caliper_study.rajaperf_docs()[:4])
    return _SOURCES


@settings(
    max_examples=examples(25),
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(docs=st.lists(variations(), min_size=1, max_size=4))
def test_varied_documents_equal_the_one_by_one_read(tmp_path, docs):
    files = []
    for k, d in enumerate(docs):
        f = tmp_path / f"v{k}-{np.random.default_rng().integers(1 << 30)}.json"
        f.write_text(json.dumps(d))
        files.append(f)
    assert_equal_reads(files)


def _in_unit(doc: dict, unit: str) -> dict:
    """The document with its time columns said to be in ``unit`` (the values kept)."""
    meta = [
        {**m, "attribute.unit": unit} if m.get("attribute.unit") == "s" else m
        for m in doc["column_metadata"]
    ]
    return {**doc, "column_metadata": meta}


@settings(
    max_examples=examples(25),
    # several whole documents an example: large by design (a random draw of
    # mostly large ones failed the entropy check)
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
)
@given(
    docs=st.lists(variations(), min_size=2, max_size=6),
    units=st.lists(st.sampled_from(["s", "ms", "us"]), min_size=6, max_size=6),
    cuts=st.sets(st.integers(1, 5), max_size=4),
)
def test_chunks_composed_apart_equal_one_chunk(tmp_path, docs, units, cuts):
    """``compose_chunks`` of the files cut into chunks (as the workers of a
    parallel read return them: chunks that lack a metric, whose trees map onto
    the whole one out of order, whose files' units differ) equals one chunk of
    all the files, which equals the one-by-one read."""
    files = []
    for k, d in enumerate(docs):
        f = tmp_path / f"c{k}-{np.random.default_rng().integers(1 << 30)}.json"
        f.write_text(json.dumps(_in_unit(d, units[k])))
        files.append(f)
    bounds = [0, *sorted(c for c in cuts if c < len(files)), len(files)]
    parts = [files[a:b] for a, b in zip(bounds[:-1], bounds[1:])]
    extras = [{"run": k} for k in range(len(files))]
    try:
        whole = _batch.compose_chunks(_batch.read_chunk_composed(files, None, {}), extras, {})
    except ProfileError as e:  # (units that cannot be reconciled: both fail alike)
        with pytest.raises(ProfileError, match=re.escape(str(e))):
            chunks = [ch for part in parts for ch in _batch.read_chunk_composed(part, None, {})]
            _batch.compose_chunks(chunks, extras, {})
        return
    chunks = [ch for part in parts for ch in _batch.read_chunk_composed(part, None, {})]
    apart = _batch.compose_chunks(chunks, extras, {})
    assert apart == whole
    for m in whole.exc_metrics:
        assert np.array_equal(apart.values(m), whole.values(m), equal_nan=True), m
    assert_equal_reads(files)


def test_chunks_whose_kinds_come_in_another_order(tmp_path):
    """Each chunk numbers its kinds of file (units, rules) in its own order; the
    caller maps them onto the whole's: here the second chunk starts with the
    kind the first ends with, so a chunk's own numbers would scale its files by
    the other kind's factor."""
    files = []
    for k, unit in enumerate(["s", "ms", "ms", "s"]):
        f = tmp_path / f"k{k}.json"
        f.write_text(json.dumps(_in_unit(_sources()[2], unit)))  # (RAJAPerf: times in s)
        files.append(f)
    extras = [{"run": k} for k in range(len(files))]
    whole = _batch.compose_chunks(_batch.read_chunk_composed(files, None, {}), extras, {})
    chunks = [
        ch for part in (files[:2], files[2:]) for ch in _batch.read_chunk_composed(part, None, {})
    ]
    assert chunks[0].signatures == chunks[1].signatures[::-1]
    apart = _batch.compose_chunks(chunks, extras, {})
    assert {whole.tree.unit(m) for m in whole.exc_metrics} >= {"ms"}
    for m in whole.exc_metrics:
        assert np.array_equal(apart.values(m), whole.values(m), equal_nan=True), m
    assert_equal_reads(files)


def _break(doc: dict, how: int) -> dict:
    """A document with one thing the group parse must leave to the one-file parse."""
    doc = json.loads(json.dumps(doc))
    jp = doc["columns"].index("path")
    if how == 1:
        doc["nodes"][-1]["parent"] = None  # not an integer parent
    elif how == 2:
        doc["nodes"][-1]["label"] = ""  # an empty name
    elif how == 3 and doc["data"]:
        doc["data"][0][jp] = len(doc["nodes"]) + 5  # a record of no node
    elif how == 4 and doc["data"]:
        doc["data"][0][jp] = 0.5  # not a node number
    elif how == 5 and doc["data"]:
        doc["data"][-1] = doc["data"][-1][:-1]  # a short record: the whole group
    elif how == 7:  # a parent written as a float: equal in Python to its copies' 3
        nd = next((nd for nd in doc["nodes"] if nd.get("parent", -1) >= 0), None)
        if nd is not None:
            nd["parent"] = float(nd["parent"])
    elif how in (8, 9):  # labels that are numbers: 1 and 1.0 are equal in Python, not as names
        doc["nodes"][-1]["label"] = 1 if how == 8 else 1.0
    elif how == 10 and doc["data"]:  # an integer beyond a float's range
        doc["data"][-1][jp - 1 if jp else 1] = 10**400
    elif how == 6 and "mpi.rank" in doc["columns"]:  # a rank without its root's record
        inclusive = tuple(c for c in doc["columns"] if "inclusive#" in c)
        doc = caliper_study.drop_columns(doc, inclusive)  # (else the reader's anyway)
        jp, jr = doc["columns"].index("path"), doc["columns"].index("mpi.rank")
        roots = {k for k, nd in enumerate(doc["nodes"]) if nd.get("parent", -1) == -1}
        last = doc["data"][-1][jr] if doc["data"] else None
        doc["data"] = [r for r in doc["data"] if not (r[jp] in roots and r[jr] == last)]
    return doc


def _same_arrays(a, b) -> None:
    if a is None or b is None:
        assert a is None and b is None
        return
    for f in ("parent", "names", "node", "prof", "values"):
        x, y = getattr(a, f), getattr(b, f)
        assert x.shape == y.shape and x.dtype == y.dtype, f
        np.testing.assert_array_equal(x, y, err_msg=f)
    assert (a.kind, a.metrics, a.meta, a.is_tree, a.profiles) == (
        b.kind,
        b.metrics,
        b.meta,
        b.is_tree,
        b.profiles,
    )
    assert [(k, j) for k, j, _ in a.checks] == [(k, j) for k, j, _ in b.checks]
    for (_, _, x), (_, _, y) in zip(a.checks, b.checks):
        np.testing.assert_array_equal(x, y)


@settings(
    max_examples=examples(40),
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    docs=st.lists(variations(), min_size=1, max_size=3),
    copies=st.integers(1, 3),
    broken=st.lists(st.integers(0, 10), max_size=3),
)
def test_a_group_of_files_parses_as_each_file_alone(docs, copies, broken):
    """parse_caliper_docs (the files that share their columns as one group) gives
    what parse_caliper_doc gives each file (a group of one), for files it covers
    and files it must hand back (a broken node or record, a short record, a rank without a
    parent's record); copies make groups."""
    docs = [d for d in docs for _ in range(copies)]
    docs += [_break(docs[k % len(docs)], how) for k, how in enumerate(broken)]
    paths = [Path(f"/study/f{k}.json") for k in range(len(docs))]
    got = _caliper_batch.parse_caliper_docs(paths, docs)
    for p, d, fa in zip(paths, docs, got):
        _same_arrays(fa, _caliper_batch.parse_caliper_doc(p, d))


@pytest.mark.parametrize("how", range(11))
def test_every_real_document_broken_parses_as_alone(how):
    """Each real document with each break, in a group with its unbroken copies (a
    break that Python's equality does not see, 1.0 for 1, included)."""
    docs = [d for src in _sources() for d in (src, _break(src, how), src)]
    docs += [_break(src, 8) for src in _sources()]  # the label 1 beside 1.0 (how 9)
    paths = [Path(f"/study/f{k}.json") for k in range(len(docs))]
    got = _caliper_batch.parse_caliper_docs(paths, docs)
    alone = [_caliper_batch.parse_caliper_doc(p, d) for p, d in zip(paths, docs)]
    for fa, want in zip(got, alone):
        _same_arrays(fa, want)


@pytest.mark.slow  # dask: the main test environment (cctviz[scale])
def test_a_dask_cluster_equals_the_serial_read(study, tmp_path):
    from dask.distributed import Client, LocalCluster

    serial = cctviz.read_ensemble(study, progress=False)
    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, host="127.0.0.1", dashboard_address=None
        ) as cluster,
        Client(cluster) as client,
    ):
        assert cctviz.read_ensemble(study, client=client, progress=False) == serial
        broken = tmp_path / "broken.json"
        broken.write_text(study[0].read_text()[:200])
        with pytest.raises(ProfileError) as e:
            cctviz.read_ensemble([*study[:3], broken], client=client, progress=False)
        assert e.value.path == str(broken)
