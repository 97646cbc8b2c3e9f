"""HPCToolkit (hpcprof) databases load with the content Hatchet reads from them."""

import shutil
import warnings

import numpy as np
import pandas as pd
import pytest

import cctviz
from cctviz import Ensemble, ProfileError
from cctviz.model.units import format_value
from tests.conftest import DATA, HATCHET_JSON
from tests.readers.fuzz import assert_wrong_format_rejected, fuzz_sample

CPI = DATA / "hatchet/hpctoolkit-cpi-database"
ALLGATHER = DATA / "hatchet/hpctoolkit-allgather-database"
KRIPKE = DATA / "hatchet-tutorial/hpctoolkit-kripke-database-2589696"
TAU = DATA / "hatchet/tau-cpi-mpi"
# database, nodes, ranks, threads per rank
SHAPES = [(CPI, 34, 4, 1), (ALLGATHER, 1474, 10, 2), (KRIPKE, 1492, 64, 1)]


def _read(path):
    return cctviz.read(path, progress=False)


def _profile(ens, rank, thread=0):
    p = ens.profiles
    return int(np.flatnonzero((p["rank"] == rank) & (p["thread"] == thread))[0])


@pytest.mark.parametrize("db,nodes,ranks,threads", SHAPES, ids=lambda x: getattr(x, "name", x))
def test_database_shape(db, nodes, ranks, threads):
    ens = _read(db)
    assert isinstance(ens, Ensemble)
    assert len(ens.tree) == nodes
    assert ens.n_profiles == ranks * threads
    assert sorted(set(ens.profiles["rank"])) == list(range(ranks))
    assert sorted(set(ens.profiles["thread"])) == list(range(threads))
    assert set(ens.exc_metrics) == {"time"}
    assert ens.tree.units == {"time": "us"}
    assert ens.meta["format"] == "hpctoolkit"
    n = ens.tree.nodes
    assert {"file", "line", "module", "nid"} <= set(n.columns)
    assert set(n["kind"]) <= {"function", "loop", "statement"}
    # modules are known for procedures only, as Hatchet has them
    assert n.loc[n["kind"] == "function", "module"].notna().all()
    assert n.loc[n["kind"] != "function", "module"].isna().all()


def test_allgather_kinds_roots_and_idle_threads():
    ens = _read(ALLGATHER)
    t = ens.tree
    assert t.nodes["kind"].value_counts().to_dict() == {
        "function": 905,
        "statement": 562,
        "loop": 7,
    }
    assert sorted(t.names[t.roots]) == ["<no thread>", "<partial call paths>", "<program root>"]
    assert ens.meta["program"] == "osu_allgather" and ens.meta["hpctoolkit_version"] == "2.1"
    # thread 1 of every rank recorded no sample: all-zero metric-db files, no rows
    per_profile = (
        ens.exclusive_rows.groupby("profile")["time"].sum().reindex(range(20), fill_value=0)
    )
    threads = ens.profiles["thread"].to_numpy()
    assert (per_profile[threads == 1] == 0).all() and (per_profile[threads == 0] > 2.6e6).all()
    # the hottest statement of rank 3, thread 0 (value in usec)
    d = ens.long_table.xs(_profile(ens, 3), level="profile")
    top = d["time"].idxmax()
    assert t.nodes.loc[top, "nid"] == 108 and t.nodes.loc[top, "kind"] == "statement"
    assert t.names[top] == "<unknown file> [libpsm_infinipath.so.1.16]:0"
    assert d.loc[top, "time"] == 251646.0


def test_kripke_known_node():
    ens = _read(KRIPKE)
    t = ens.tree
    d = ens.long_table.xs(_profile(ens, 63), level="profile")
    top = d["time"].idxmax()
    assert t.nodes.loc[top, "nid"] == 79 and t.names[top] == "<unknown file> [kripke]:0"
    assert d.loc[top, "time"] == 60673648.0
    root = int(t.roots[0])
    assert t.names[root] == "<program root>"
    assert (
        ens.long_table.xs(_profile(ens, 0), level="profile").loc[root, "time (inc)"] == 191870874.0
    )


def test_cpi_xml_summary_and_names():
    ens = _read(CPI)
    t = ens.tree
    root = int(t.roots[0])
    # the XML's own summary (CPUTIME:Sum (I), all ranks) of <program root>: 3.99824e+06
    total = ens.long_table["time (inc)"].xs(root, level="node").sum()
    assert round(total, -1) == 3998240.0
    assert ens.long_table.loc[(root, 0), "time (inc)"] == 999238.0
    n = t.nodes.set_index("nid")
    # a call site's line prefixes the callee; the statement keeps its procedure's file
    assert n.loc[27, "name"] == "62:MPI_Finalize"
    assert n.loc[59, "name"] == "interp.c:0" and n.loc[58, "name"] == "__GI_sched_yield"
    assert n.loc[60, "name"] == "<unknown file>:0"  # Hatchet says interp.c (its last file)
    assert n.loc[27, "module"].endswith("libmonitor.so.0.0.0") and n.loc[27, "line"] == 0


def test_experiment_xml_path_reads_its_folder():
    assert cctviz.readers.detect(CPI) == "hpctoolkit"
    assert cctviz.readers.detect(CPI / "experiment.xml") == "hpctoolkit"
    a, b = _read(CPI), _read(CPI / "experiment.xml")
    assert a.tree.nodes.equals(b.tree.nodes) and a.long_table.equals(b.long_table)


def test_progress_bar(capsys):
    cctviz.read(CPI, progress=True)
    assert "reading metric-db" in capsys.readouterr().err


@pytest.mark.parametrize("db", [CPI, ALLGATHER, KRIPKE], ids=lambda p: p.name)
def test_a_quick_read_prints_no_progress_bar(capsys, db):
    """Reading a database takes a fraction of a second: no bar (64 files for Kripke)."""
    ens = cctviz.read(db)
    assert ens.n_profiles >= 4
    err = capsys.readouterr().err
    assert "reading metric-db" not in err and "%|" not in err


def test_the_bar_appears_once_reading_outlasts_the_delay(capsys, monkeypatch):
    monkeypatch.setattr(cctviz.readers, "PROGRESS_DELAY", 0.0)  # as if a second had passed
    cctviz.read(CPI)
    assert "reading metric-db" in capsys.readouterr().err
    cctviz.read(CPI, progress=False)
    assert capsys.readouterr().err == ""


# ---------------------------------------------------------------- Hatchet
from tests.peers import hatchet  # noqa: E402  (imported when a test uses it)


@pytest.fixture(scope="module", params=[CPI, ALLGATHER, KRIPKE], ids=lambda p: p.name)
def both(request):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gf = hatchet.GraphFrame.from_hpctoolkit(str(request.param))
    return _read(request.param), gf


def test_matches_hatchet(both):
    ens, gf = both
    assert len(ens.tree) == len(gf.graph)
    hdf = gf.dataframe.reset_index()
    if "thread" not in hdf:
        hdf["thread"] = 0
    ours = ens.long_table.reset_index()
    nodes = ens.tree.nodes
    ours["nid"] = nodes["nid"].to_numpy()[ours["node"].to_numpy()]
    ours["rank"] = ens.profiles["rank"].to_numpy()[ours["profile"].to_numpy()]
    ours["thread"] = ens.profiles["thread"].to_numpy()[ours["profile"].to_numpy()]
    assert set(nodes["nid"]) == set(hdf["nid"])
    key = ["nid", "rank", "thread"]
    h = hdf.set_index(key)[["time", "time (inc)"]]
    o = ours.set_index(key)[["time", "time (inc)"]].reindex(h.index, fill_value=0.0)
    # inclusive: every node on every rank and thread
    pd.testing.assert_series_equal(o["time (inc)"], h["time (inc)"], check_names=False)
    # exclusive: equal except on procedures holding loops, where Hatchet keeps the
    # statements of nested loops in the procedure's exclusive value as well
    by_nid_o = o.groupby(level="nid").sum()
    by_nid_h = h.groupby(level="nid").sum()
    differ = by_nid_o.index[~np.isclose(by_nid_o["time"], by_nid_h["time"])]
    parent_nid = nodes["nid"].to_numpy()[np.maximum(nodes["parent"].to_numpy(), 0)]
    loop_parents = set(parent_nid[(nodes["kind"] == "loop").to_numpy()])
    assert set(differ) <= loop_parents
    if len(differ):  # where it differs, Hatchet's exclusive exceeds its own inclusive budget
        assert (by_nid_h.loc[differ, "time"] > by_nid_o.loc[differ, "time"]).all()
    # ours is consistent: exclusive summed over the tree is the root inclusive
    for p in ens.long_table.index.unique("profile"):
        d = ens.long_table.xs(p, level="profile")
        roots = [r for r in ens.tree.roots if r in d.index]
        assert np.isclose(d["time"].sum(), d.loc[roots, "time (inc)"].sum())
    # names: the same apart from statements Hatchet names after a file it parsed last
    hn = hdf.drop_duplicates("nid").set_index("nid")["name"]
    on = nodes.set_index("nid")["name"].reindex(hn.index)
    kinds = nodes.set_index("nid")["kind"].reindex(hn.index)
    assert (hn[kinds != "statement"] == on[kinds != "statement"]).all()
    hl = hn[kinds == "statement"].str.rsplit(":", n=1).str[1]
    assert (hl == on[kinds == "statement"].str.rsplit(":", n=1).str[1]).all()


# ---------------------------------------------------------------- bad input
@pytest.fixture()
def cpi_copy(tmp_path):
    dest = tmp_path / "cpi"
    shutil.copytree(CPI, dest)
    for f in dest.rglob("*"):
        f.chmod(0o755 if f.is_dir() else 0o644)
    return dest


def test_missing_metric_db(cpi_copy):
    next(cpi_copy.glob("*-000002-000-*.metric-db")).unlink()
    with pytest.raises(ProfileError, match="missing metric-db file for rank 2 thread 0") as e:
        cctviz.read(cpi_copy)
    assert e.value.path == str(cpi_copy)


def test_metric_db_wrong_size_and_header(cpi_copy):
    f = sorted(cpi_copy.glob("*.metric-db"))[1]
    raw = f.read_bytes()
    f.write_bytes(raw[:-8])
    with pytest.raises(ProfileError, match="984 bytes, expected 992") as e:
        cctviz.read(cpi_copy)
    assert e.value.path == str(f) and e.value.where == "byte 984"
    f.write_bytes(raw[:24] + (61).to_bytes(4, "big") + raw[28:])
    with pytest.raises(ProfileError, match="61 nodes in the header, expected 60"):
        cctviz.read(cpi_copy)
    f.write_bytes(b"JUNK" + raw[4:])
    with pytest.raises(ProfileError, match="HPCPROF-metricdb__"):
        cctviz.read(cpi_copy)


def test_truncated_xml_names_line(cpi_copy):
    xml = cpi_copy / "experiment.xml"
    xml.write_bytes(xml.read_bytes()[:12000])
    with pytest.raises(ProfileError, match="invalid XML") as e:
        cctviz.read(cpi_copy)
    assert e.value.path == str(xml) and e.value.where.startswith("line ")


def test_entity_declarations_are_refused(cpi_copy):
    xml = cpi_copy / "experiment.xml"
    text = xml.read_text()
    bomb = '<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">\n]>'
    xml.write_text(text.replace("]>", bomb, 1).replace('n="cpi"', 'n="&b;"', 1))
    with pytest.raises(ProfileError, match="declares an entity") as e:
        cctviz.read(cpi_copy)
    assert e.value.path == str(xml) and e.value.where.startswith("byte ")


def test_unknown_node_id(cpi_copy):
    xml = cpi_copy / "experiment.xml"
    xml.write_text(xml.read_text().replace('<S i="60"', '<S i="61"'))
    with pytest.raises(ProfileError, match="node id 61"):
        cctviz.read(cpi_copy)


def test_fuzz_experiment_xml(tmp_path):
    stats = fuzz_sample(CPI, "hpctoolkit", tmp_path, n=40, target="experiment.xml")
    assert stats["truncate:error"] == 8


def test_fuzz_metric_db(tmp_path):
    stats = fuzz_sample(CPI, "hpctoolkit", tmp_path, n=30, seed=1, target="*.metric-db")
    assert stats["truncate:error"] == 6 and stats["delete:error"] == 6


def test_wrong_format_rejected():
    assert_wrong_format_rejected(HATCHET_JSON, "hpctoolkit")
    assert_wrong_format_rejected(TAU, "hpctoolkit")
    assert_wrong_format_rejected(TAU / "profile.0.0.0", "hpctoolkit")


# ---------------------------------------------------------------- rules and units
@pytest.mark.parametrize("db", [CPI, ALLGATHER, KRIPKE], ids=lambda p: p.name)
def test_real_databases_state_microseconds_and_sum_time(db):
    ens = _read(db)
    # the unit is the one the metric's name states ("CPUTIME (usec)"): nothing assumed
    assert ens.tree.units == {"time": "us"} and "units_assumed" not in ens.meta
    assert ens.meta["aggregation"] == {"time": "sum"} and ens.aggregation == {"time": "sum"}
    assert ens.tree.is_additive("time (inc)")
    # the sum rule reproduces the file's inclusive values with no negative remainder:
    # every scope's (I) covers its children's, as HPCToolkit's attribution makes it
    assert (ens.exclusive_rows["time"] >= 0).all()
    assert format_value(ens.long_table["time (inc)"].max(), "us").endswith(" s")  # seconds of CPU


def _rename_metric(db, name):
    xml = db / "experiment.xml"
    text = xml.read_text()
    for suffix in ("(I)", "(E)"):
        text = text.replace(f'n="CPUTIME (usec) {suffix}"', f'n="{name} {suffix}"')
    xml.write_text(text)


def test_a_max_statistic_keeps_its_inclusive_values(cpi_copy):
    ref = _read(CPI)
    _rename_metric(cpi_copy, "GMEM (B):Max")
    ens = _read(cpi_copy)
    m = "GMEM (B):Max"
    assert ens.exc_metrics == [m]
    assert ens.aggregation == {m: "max"} and ens.tree.units == {m: "B"}
    # own values are the file's inclusive ones, and the max rule gives them back
    d, r = ens.long_table, ref.long_table
    assert np.array_equal(d[m].to_numpy(), r["time (inc)"].reindex(d.index).to_numpy())
    assert np.array_equal(d[f"{m} (inc)"].to_numpy(), d[m].to_numpy())
    assert d.loc[(0, 0), m] == 999238.0


def test_a_spread_statistic_has_no_inclusive_form(cpi_copy):
    _rename_metric(cpi_copy, "CPUTIME (usec):StdDev")
    ens = _read(cpi_copy)
    m = "CPUTIME (usec):StdDev"
    assert ens.aggregation == {m: "none"} and ens.tree.units == {m: "us"}
    assert f"{m} (inc)" not in ens.long_table.columns
    assert "does not combine" in ens.meta["aggregation_notes"][m]
    assert ens.long_table.loc[(0, 0), m] == 999238.0


def test_columns_of_one_name_are_all_kept(cpi_copy):
    """Two metric-db columns that would both be "time": the second keeps its own name."""
    xml = cpi_copy / "experiment.xml"
    xml.write_text(xml.read_text().replace('n="CPUTIME (usec) (E)"', 'n="CPUTIME (sec) (I)"'))
    xml.write_text(
        xml.read_text().replace('t="exclusive" partner="0"', 't="inclusive" partner="0"')
    )
    with pytest.warns(UserWarning, match=r"'CPUTIME \(sec\) \(I\)' -> 'CPUTIME \(sec\)'"):
        ens = _read(cpi_copy)
    assert ens.exc_metrics == ["time", "CPUTIME (sec)"]
    assert ens.tree.units == {"time": "us", "CPUTIME (sec)": "s"}
    ref = _read(CPI)
    assert ens.long_table["time (inc)"].equals(ref.long_table["time (inc)"])
