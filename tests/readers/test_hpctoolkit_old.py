"""HPCToolkit databases as older disks hold them: hpcviewer's merged metric-db file
(``experiment-N.mdb``), summary values inline in ``experiment.xml`` (no metric-db
files), and the versions cctviz refuses (the 2020-2022 sparse form, unknown ones).

No public sample of the first two exists small enough to keep here, so each test
builds one from a real database in ../shared/data the way the tool that writes it
does: the merge follows hpcviewer's ``MergeDataFiles`` byte for byte (and deletes
the metric-db files as it does); the inline form keeps hpcprof's own ``<M>``
summary values of the real ``experiment.xml`` and drops what hpcprof writes only
with metric-db files. Every value is then checked against the independent read of
the original database.
"""

from __future__ import annotations

import re
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest

import cctviz
from cctviz import Ensemble, ProfileError, Tree
from cctviz.cli import main
from cctviz.readers import detect, formats
from tests.conftest import DATA
from tests.readers.fuzz import fuzz_sample

CPI = DATA / "hatchet/hpctoolkit-cpi-database"
ALLGATHER = DATA / "hatchet/hpctoolkit-allgather-database"
KRIPKE = DATA / "hatchet-tutorial/hpctoolkit-kripke-database-2589696"
DBS = [CPI, ALLGATHER, KRIPKE]
MARKER = (0xFFFFFFFFDEADF00D).to_bytes(8, "big")
# hpcprof prints <M> values with 6 significant digits ("%g"): the largest relative
# error of a printed value is half a unit in the 6th digit
PRINTED_RTOL = 5e-6


def _copy(db: Path, dest: Path) -> Path:
    shutil.copytree(db, dest)
    for f in dest.rglob("*"):
        f.chmod(0o755 if f.is_dir() else 0o644)
    return dest


def merge_like_hpcviewer(db: Path, name: str = "experiment-1.mdb") -> Path:
    """Merge the metric-db files of ``db`` as hpcviewer's MergeDataFiles does:
    files sorted by name, rank and thread from the name's 5th and 4th tokens
    from the end (split at '-'), header (type flags, count), index (rank, thread,
    offset), the files' bytes, the end marker; then the metric-db files go."""
    files = sorted(db.glob("*.metric-db"))
    ranks, threads = [], []
    for f in files:
        tokens = f.name[: -len(".metric-db")].split("-")
        ranks.append(int(tokens[-5]))
        threads.append(int(tokens[-4]))
    flags = (1 if any(ranks) else 0) | (2 if any(threads) else 0)  # MULTI_PROCESSES, _THREADING
    offset = 8 + 16 * len(files)
    out = bytearray(flags.to_bytes(4, "big") + len(files).to_bytes(4, "big"))
    for f, r, t in zip(files, ranks, threads):
        out += r.to_bytes(4, "big") + t.to_bytes(4, "big") + offset.to_bytes(8, "big")
        offset += f.stat().st_size
    for f in files:
        out += f.read_bytes()
    out += MARKER
    (db / name).write_bytes(bytes(out))
    for f in files:
        f.unlink()
    return db / name


def summary_only(db: Path, keep_metricdb_table: bool = False) -> Path:
    """The database as hpcprof writes it without metric-db files: the same
    experiment.xml (its inline <M> summaries are hpcprof's own), an empty
    MetricDBTable, no metric-db files."""
    for f in db.glob("*.metric-db"):
        f.unlink()
    if not keep_metricdb_table:
        xml = db / "experiment.xml"
        text = re.sub(
            r"<MetricDBTable>.*?</MetricDBTable>",
            "<MetricDBTable>\n  </MetricDBTable>",
            xml.read_text(),
            flags=re.S,
        )
        xml.write_text(text)
    return db


def _read(path):
    return cctviz.read(path, progress=False)


def _node_sums(ens: Ensemble, col: str) -> np.ndarray:
    s = ens.long_table[col].groupby(level="node").sum()
    return s.reindex(range(len(ens.tree)), fill_value=0.0).to_numpy()


# ---------------------------------------------------------------- hpcviewer's merged file
@pytest.mark.parametrize("db", DBS, ids=lambda p: p.name)
def test_merged_file_reads_as_the_metric_db_files(db, tmp_path):
    ref = _read(db)
    copy = _copy(db, tmp_path / db.name)
    merge_like_hpcviewer(copy)
    assert not list(copy.glob("*.metric-db"))
    ens = _read(copy)
    assert isinstance(ens, Ensemble)
    assert ens.meta["merged_file"] == "experiment-1.mdb"
    assert ens.tree.nodes.equals(ref.tree.nodes)
    assert ens.profiles.equals(ref.profiles)
    assert ens.long_table.equals(ref.long_table)
    assert ens.tree.units == {"time": "us"} and ens.aggregation == {"time": "sum"}


def test_the_older_merged_name_and_the_merged_file_path(tmp_path):
    copy = _copy(CPI, tmp_path / "cpi")
    mdb = merge_like_hpcviewer(copy, "experiment.mdb")
    assert detect(copy) == "hpctoolkit" and detect(mdb) == "hpctoolkit"
    ens = _read(mdb)  # the merged file stands for its database, as experiment.xml does
    assert ens.meta["merged_file"] == "experiment.mdb"
    assert ens.long_table.loc[(0, 0), "time (inc)"] == 999238.0  # <program root>, rank 0, usec


def test_merged_file_errors_name_the_file_and_byte(tmp_path):
    copy = _copy(CPI, tmp_path / "cpi")
    mdb = merge_like_hpcviewer(copy)
    raw = mdb.read_bytes()
    mdb.write_bytes(raw[:-8])  # hpcviewer stopped while merging: no end marker
    with pytest.raises(ProfileError, match="no end marker") as e:
        _read(copy)
    assert e.value.path == str(mdb)
    # the second copy's header (at byte 8 + 4 * 16 + 992) broken
    second = 8 + 4 * 16 + 992
    mdb.write_bytes(raw[:second] + b"JUNK" + raw[second + 4 :])
    with pytest.raises(ProfileError, match="HPCPROF-metricdb__") as e:
        _read(copy)
    assert e.value.path == str(mdb) and e.value.where == f"byte {second}"
    # an index offset past the data
    bad = raw[:16] + (10**6).to_bytes(8, "big") + raw[24:]
    mdb.write_bytes(bad)
    with pytest.raises(ProfileError, match="merged file 0 starts at byte 1000000"):
        _read(copy)
    # the same rank and thread twice
    dup = raw[:24] + raw[8:16] + raw[32:]
    mdb.write_bytes(dup)
    with pytest.raises(ProfileError, match="a second metric-db for the same rank"):
        _read(copy)


def test_fuzz_merged_file(tmp_path):
    copy = _copy(CPI, tmp_path / "sample" / "cpi")
    merge_like_hpcviewer(copy)
    stats = fuzz_sample(copy, "hpctoolkit", tmp_path / "fuzz", n=30, target="*.mdb")
    assert stats["truncate:error"] == 6 and stats["delete:error"] == 6


# ---------------------------------------------------------------- summary values inline
@pytest.mark.parametrize("db", DBS, ids=lambda p: p.name)
def test_inline_summary_gives_the_threads_sum(db, tmp_path):
    ref = _read(db)
    copy = summary_only(_copy(db, tmp_path / db.name))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an empty MetricDBTable is no surprise: no warning
        tree = _read(copy)
    assert isinstance(tree, Tree)
    assert tree.meta["values"] == "summary" and tree.meta["format"] == "hpctoolkit"
    assert tree.nodes[["name", "kind", "nid", "file", "line"]].equals(
        ref.tree.nodes[["name", "kind", "nid", "file", "line"]]
    )
    assert tree.units == {"time": "us"} and tree.aggregation == {"time": "sum"}
    # every node: hpcprof's printed :Sum equals the sum over the metric-db files
    inc = tree.metrics["time (inc)"].to_numpy()
    want = _node_sums(ref, "time (inc)")
    np.testing.assert_allclose(inc, want, rtol=PRINTED_RTOL, atol=0)
    # own values: differences of printed values, exact to the printing of the largest
    total = want.max()
    np.testing.assert_allclose(
        tree.metrics["time"].to_numpy(), _node_sums(ref, "time"), atol=PRINTED_RTOL * total
    )
    # the experiment's own <M> (before the first scope) is the roots' total
    roots = tree.metrics["time (inc)"].to_numpy()[tree.roots].sum()
    assert tree.meta["summary"]["time (inc)"] == pytest.approx(roots, rel=PRINTED_RTOL)


def test_lost_metric_db_files_fall_back_to_the_summary_with_a_warning(tmp_path):
    copy = summary_only(_copy(CPI, tmp_path / "cpi"), keep_metricdb_table=True)
    with pytest.warns(UserWarning, match=r"lists per-thread metric-db files .* none is there"):
        tree = _read(copy)
    assert isinstance(tree, Tree)
    root = int(tree.roots[0])
    assert tree.names[root] == "<program root>"
    assert tree.metrics.loc[root, "time (inc)"] == 3998240.0  # <M n="2" v="3.99824e+06"/>


def test_no_values_anywhere_is_an_error(tmp_path):
    copy = summary_only(_copy(CPI, tmp_path / "cpi"), keep_metricdb_table=True)
    xml = copy / "experiment.xml"
    xml.write_text(re.sub(r"<M n=\"\d+\" v=\"[^\"]*\"/>", "", xml.read_text()))
    with pytest.raises(ProfileError, match=r"no metric-db file \(\*\.metric-db\).*experiment-1"):
        _read(copy)
    summary_only(copy)  # and without a MetricDBTable either
    with pytest.raises(ProfileError, match="no metric values") as e:
        _read(copy)
    assert e.value.path == str(xml)


def test_inline_value_errors_name_the_element(tmp_path):
    copy = summary_only(_copy(CPI, tmp_path / "cpi"))
    xml = copy / "experiment.xml"
    text = xml.read_text()
    xml.write_text(text.replace('<M n="3" v="179877"/>', '<M n="3" v="x179877"/>', 1))
    with pytest.raises(ProfileError, match="'x179877' is not a finite number"):
        _read(copy)
    xml.write_text(text.replace('<M n="3" v="179877"/>', '<M n="7" v="179877"/>', 1))
    with pytest.raises(ProfileError, match="<M n='7'> names no <Metric>"):
        _read(copy)


def test_fuzz_inline_experiment_xml(tmp_path):
    copy = summary_only(_copy(CPI, tmp_path / "sample" / "cpi"))
    stats = fuzz_sample(copy, "hpctoolkit", tmp_path / "fuzz", n=30, target="experiment.xml")
    assert stats["truncate:error"] == 6


# ---------------------------------------------------------------- versions refused
def test_sparse_database_version_is_refused_by_name(tmp_path):
    """hpcprof 2020-2022 wrote experiment.xml version 4.0 beside profile.db/cct.db."""
    copy = summary_only(_copy(CPI, tmp_path / "cpi"))
    xml = copy / "experiment.xml"
    xml.write_text(
        xml.read_text().replace(
            '<HPCToolkitExperiment version="2.0">', '<HPCToolkitExperiment version="4.0">'
        )
    )
    with pytest.raises(ProfileError, match="experiment.xml version 4.0") as e:
        _read(copy)
    msg = str(e.value)
    assert "profile.db and cct.db" in msg and "meta.db" in msg and "2022 or newer hpcprof" in msg
    assert e.value.path == str(xml)
    # the header of its profile.db (magic and version byte, as HPCToolkit's SparseDB
    # writes them) is named too, and the file alone is taken to its database
    (copy / "profile.db").write_bytes(b"HPCPROF-tmsdb_____" + bytes([1, 0]) + bytes(100))
    with pytest.raises(ProfileError, match="profile.db header HPCPROF-tmsdb version 1"):
        _read(copy)
    assert detect(copy / "profile.db") == "hpctoolkit"
    with pytest.raises(ProfileError, match="version 4.0"):
        _read(copy / "profile.db")


def test_unknown_version_is_refused_by_name(tmp_path):
    copy = _copy(CPI, tmp_path / "cpi")
    xml = copy / "experiment.xml"
    xml.write_text(xml.read_text().replace('version="2.0">', 'version="3.5">', 1))
    with pytest.raises(ProfileError, match=r"version 3\.5 is unknown to cctviz.*2\.x"):
        _read(copy)


# ---------------------------------------------------------------- detection and info
@pytest.fixture(scope="module")
def variants(tmp_path_factory):
    d = tmp_path_factory.mktemp("variants")
    merged = _copy(CPI, d / "merged")
    merge_like_hpcviewer(merged)
    return {"merged": merged, "inline": summary_only(_copy(CPI, d / "inline"))}


@pytest.mark.parametrize("kind", ["merged", "inline"])
def test_variants_are_detected_and_refused_by_the_others(variants, kind):
    db = variants[kind]
    assert detect(db) == "hpctoolkit" and detect(db / "experiment.xml") == "hpctoolkit"
    for fmt in set(formats()) - {"hpctoolkit"}:
        with pytest.raises(ProfileError) as e:
            cctviz.read(db, format=fmt)
        assert e.value.path is not None and str(e.value).startswith(e.value.path)


def test_info_on_the_variants(variants, capsys):
    assert main(["info", str(variants["merged"])]) == 0
    out = capsys.readouterr().out
    assert "Ensemble (hpctoolkit): 34 nodes" in out and "profiles: 4 in 1 run" in out
    assert main(["info", str(variants["inline"])]) == 0
    out = capsys.readouterr().out
    assert "Tree (hpctoolkit): 34 nodes" in out
    assert re.search(r"^time +us +sum +4(\.00)? s$", out, re.M), out
