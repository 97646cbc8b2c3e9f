"""CUBE4 reader (``.cubex``, Score-P): checked against ``cube_dump``'s csv output.

The ``excl.csv``/``incl.csv`` files beside the samples (from pycubexr's test
data) are ``cube_dump -m all -x excl -z excl|incl -c all -s csv2``: one row per
(``Cnode ID``, ``Thread ID``) = (CUBE cnode id, CUBE location id), one column
per metric (each metric's own values along the metric tree), exclusive or
inclusive along the call tree. Neither Hatchet nor Thicket reads CUBE, so
CubeLib's own dump is the oracle.
"""

from __future__ import annotations

import io
import struct
import tarfile

import numpy as np
import pandas as pd
import pytest

import cctviz
from cctviz import ProfileError
from tests.conftest import DATA
from tests.readers.fuzz import assert_wrong_format_rejected, fuzz_sample

CUBE = DATA / "scorep-cube"
WITH_CSV = {
    "call_tree_test": CUBE / "call_tree_test/call_tree_test.cubex",
    "time.p4": CUBE / "time.p4.n2000.x1.r0/profile.cubex",
    "blast.p64": CUBE / "blast.p64.r1/profile.cubex",
}
KRIPKE = CUBE / "kripke.p8.d2.g32.r1/profile.cubex"
FASTEST = CUBE / "fastest.p16.size131072.r1/profile.cubex"
ALL = sorted(CUBE.glob("*/*.cubex"))


def _csv(cubex, which: str) -> pd.DataFrame:
    df = pd.read_csv(cubex.parent / f"{which}.csv", skipinitialspace=True)
    df.columns = [c.strip() for c in df.columns]
    return df


def _index(ens, df):
    """(node, profile) of every csv row: cnode id -> node, location id -> profile."""
    node_of = pd.Series(ens.tree.nodes.index, index=ens.tree.nodes["cnode"])
    prof_of = pd.Series(ens.profiles.index, index=ens.profiles["location"])
    return node_of[df["Cnode ID"]].to_numpy(), prof_of[df["Thread ID"]].to_numpy()


@pytest.fixture(scope="module", params=list(WITH_CSV), ids=list(WITH_CSV))
def case(request):
    p = WITH_CSV[request.param]
    return cctviz.read(p), _csv(p, "excl"), _csv(p, "incl")


def test_every_metric_of_the_dump_is_read(case):
    ens, excl, incl = case
    assert list(excl.columns[2:]) == ens.exc_metrics
    assert list(incl.columns[2:]) == ens.exc_metrics
    # one csv row per (cnode, location): the tree and the profiles are CUBE's
    assert len(excl) == len(ens.tree) * ens.n_profiles
    assert sorted(excl["Cnode ID"].unique()) == sorted(ens.tree.nodes["cnode"])
    assert sorted(excl["Thread ID"].unique()) == ens.profiles["location"].tolist()


def test_sum_metrics_equal_the_dump(case):
    """visits, time, bytes, counters: exclusive and inclusive, per node and location."""
    ens, excl, incl = case
    node, prof = _index(ens, excl)
    sums = [m for m, r in ens.aggregation.items() if r == "sum"]
    assert {"visits", "time"} <= set(sums)
    for m in sums:
        for df, col in ((excl, m), (incl, f"{m} (inc)")):
            got = ens.values(col)[node, prof]
            # cube_dump prints doubles with 6 significant digits: half a unit of the last
            np.testing.assert_allclose(
                got, df[m].to_numpy(float), rtol=5.1e-6, atol=1e-12, err_msg=col
            )
    # counts are exact
    np.testing.assert_array_equal(ens.values("visits")[node, prof], excl["visits"])
    np.testing.assert_array_equal(ens.values("visits (inc)")[node, prof], incl["visits"])


def test_min_and_max_time_equal_the_dump_where_visited(case):
    ens, excl, incl = case
    node, prof = _index(ens, excl)
    visited = excl["visits"].to_numpy() > 0
    for m in ("min_time", "max_time"):
        assert ens.aggregation[m] == {"min_time": "min", "max_time": "max"}[m]
        got = ens.values(m)[node, prof]
        np.testing.assert_allclose(got[visited], excl[m][visited], rtol=1e-9)
        # CUBE stores 0 where a location never visited the call path: not measured here
        assert np.isnan(got[~visited]).all()
        assert (excl[m][~visited] == 0).all()


def test_inclusive_min_and_max_over_the_visited_subtree(case):
    """``(inc)``: the min/max over the subtree's visited call paths. CubeLib's
    ``incl.csv`` equals that wherever every call path below was visited by the
    location; elsewhere it counts the stored 0 of the unvisited one as a minimum."""
    ens, excl, incl = case
    node, prof = _index(ens, excl)
    tree = ens.tree
    P = ens.n_profiles
    dense = {}
    for m in ("visits", "min_time", "max_time"):
        a = np.zeros((len(tree), P))
        a[node, prof] = excl[m].to_numpy(float)
        dense[m] = a
    end = tree.end
    for m, fn in (("min_time", np.fmin), ("max_time", np.fmax)):
        got = ens.values(f"{m} (inc)")[node, prof]
        want_cube = incl[m].to_numpy(float)
        own = np.where(dense["visits"] > 0, dense[m], np.nan)
        expect = np.full((len(tree), P), np.nan)  # our rule, from the exclusive dump
        cube_rule = np.zeros((len(tree), P))  # CubeLib's rule: zeros count
        unvisited_below = np.zeros((len(tree), P), dtype=bool)
        for i in range(len(tree)):
            sub = slice(i, end[i])
            expect[i] = fn.reduce(own[sub], axis=0)
            cube_rule[i] = (np.min if m == "min_time" else np.max)(dense[m][sub], axis=0)
            unvisited_below[i] = (dense["visits"][sub] == 0).any(axis=0)
        np.testing.assert_allclose(got, expect[node, prof], rtol=1e-9, equal_nan=True)
        # the dump follows CubeLib's rule (checks our reading of it)
        np.testing.assert_allclose(want_cube, cube_rule[node, prof], rtol=1e-9)
        clean = ~unvisited_below[node, prof]
        np.testing.assert_allclose(got[clean], want_cube[clean], rtol=1e-9)
        if m == "max_time":  # times are >= 0: an unvisited 0 never wins a maximum
            seen = ~np.isnan(got)
            np.testing.assert_allclose(got[seen], want_cube[seen], rtol=1e-9)


def test_time_p4_differs_from_cubelib_only_where_documented():
    ens = cctviz.read(WITH_CSV["time.p4"])
    incl = _csv(WITH_CSV["time.p4"], "incl")
    node, prof = _index(ens, incl)
    got = ens.values("min_time (inc)")[node, prof]
    differ = ~np.isclose(got, incl["min_time"], rtol=1e-9)
    # the root of rank 0: CubeLib says 0 (rank 0 never called some call path below)
    assert differ.any() and (incl["min_time"][differ] == 0).all()
    assert got[(node == 0) & (prof == 0)][0] > 0


def test_blast_is_an_ensemble_of_64_ranks_with_one_thread_each():
    ens = cctviz.read(WITH_CSV["blast.p64"])
    assert isinstance(ens, cctviz.Ensemble)
    assert ens.n_profiles == 64
    assert ens.profiles["rank"].tolist() == list(range(64))
    assert (ens.profiles["thread"] == 0).all()
    assert ens.profiles["location"].tolist() == list(range(64))
    assert set(ens.profiles["location_type"]) == {"thread"}
    assert len(ens.tree) == 32
    names = set(ens.tree.names)
    assert {"main", "ComputeCornerForces", "MPI_Allreduce", "MPI_Isend", "MPI_Waitall"} <= names
    assert ens.tree.units == {
        "visits": "count",
        "time": "s",
        "min_time": "s",
        "max_time": "s",
        "bytes_put": "B",
        "bytes_get": "B",
        "PAPI_TOT_INS": "count",
        "PAPI_FP_INS": "count",
        "PAPI_FP_OPS": "count",
        "PEVT_L2_FETCH_LINE": "count",
        "PEVT_L2_STORE_LINE": "count",
        "bytes_sent": "B",
        "bytes_received": "B",
    }  # task_migration_* have no unit in the file
    assert ens.meta["cube_no_data"] == [
        "task_migration_loss",
        "task_migration_win",
        "bytes_put",
        "bytes_get",
    ]
    # PAPI counters are stored inclusive: their (inc) gives the file's values back
    kinds = ens.tree.nodes.set_index("name")["kind"]
    assert kinds["MPI_Allreduce"].eq("comm").all() and kinds["main"] == "region"


def test_kripke():
    ens = cctviz.read(KRIPKE)
    assert ens.n_profiles == 8 and ens.profiles["rank"].tolist() == list(range(8))
    assert (ens.profiles["thread"] == 0).all()
    t = ens.tree
    assert t.names[0] == "PARALLEL"
    path = ("PARALLEL", "Solve", "Sweep", "MPI_Isend")
    hits = [i for i in range(len(t)) if t.path(i)[-4:] == path[-4:]]
    assert len(hits) == 1
    i = hits[0]
    assert t.nodes.loc[i, "kind"] == "comm" and t.nodes.loc[i, "role"] == "point2point"
    # only the sweep's sends carry bytes: 221,280,000 B per rank
    sent = ens.values("bytes_sent")
    assert (sent[i] == 221_280_000).all() and sent.sum() == 8 * 221_280_000
    assert t.nodes.loc[t.names.tolist().index("Solve"), "file"].endswith("Sweep_Solver.cpp")
    assert t.nodes.loc[t.names.tolist().index("Solve"), "line"] == 26
    assert t.nodes.loc[t.names.tolist().index("MPI_Init"), "module"] == "MPI"
    root = ens.stats("time (inc)").loc[0]
    assert 18.5 < root["min"] <= root["max"] < 18.7
    # inclusive time of a rank's root = the sum of all its exclusive times
    np.testing.assert_allclose(ens.values("time (inc)")[0], ens.values("time").sum(axis=0))


def test_fastest():
    ens = cctviz.read(FASTEST)
    assert ens.n_profiles == 16 and ens.profiles["rank"].tolist() == list(range(16))
    t = ens.tree
    assert len(t) == 584 and t.names[0] == "MAIN__"
    assert {"MPI_Bcast", "MPI_Allreduce", "MPI_Init", "fmg3d_"} <= set(t.names)
    assert ens.aggregation["maximum_heap_memory_allocated"] == "max"
    assert ens.tree.units["maximum_heap_memory_allocated"] == "B"
    assert "maximum_heap_memory_allocated" in ens.meta["cube_no_data"]
    # about 4554 s on every rank
    st = ens.stats("time (inc)").loc[0]
    assert 4553 < st["min"] <= st["max"] < 4554
    # broadcast bytes: rank 0 sends what the others receive, per call path
    bc = t.names == "MPI_Bcast"
    sent, recv = ens.values("bytes_sent")[bc], ens.values("bytes_received")[bc]
    assert sent.sum() > 0 and recv.sum() > 0


def test_single_location_file_is_an_ensemble_of_one():
    ens = cctviz.read(WITH_CSV["call_tree_test"])
    assert isinstance(ens, cctviz.Ensemble) and ens.n_profiles == 1
    assert ens.profiles.loc[0, ["rank", "thread"]].tolist() == [0, 0]
    t = ens.tree
    # region names, not mangled names: CUBE's demangler named a() "signed char"
    assert t.names[:3].tolist() == ["test.x", "main", "signed char"]
    assert t.nodes.loc[1, "file"] == "cube_test_file/test.c" and t.nodes.loc[1, "line"] == 109
    assert t.nodes.loc[2, "mangled"] == "a"


# ------------------------------------------------------------------ synthetic
def _write_cubex(path, *, nested=True, dtype_extra=None):
    """A CUBE4 archive: 2 ranks x 2 threads, cnodes root(0) -> a(1), b(2);
    metrics visits (EXCLUSIVE), time (INCLUSIVE) with child metric mpi
    (INCLUSIVE), min_time (MINDOUBLE)."""
    metrics = (
        '<metric id="0" type="EXCLUSIVE"><disp_name>Visits</disp_name><uniq_name>visits</uniq_name>'
        "<dtype>UINT64</dtype><uom>occ</uom><url></url><descr></descr></metric>"
        '<metric id="1" type="INCLUSIVE"><disp_name>Time</disp_name><uniq_name>time</uniq_name>'
        "<dtype>DOUBLE</dtype><uom>sec</uom><url></url><descr></descr>"
        + (
            '<metric id="3" type="INCLUSIVE"><disp_name>MPI</disp_name><uniq_name>mpi</uniq_name>'
            "<dtype>DOUBLE</dtype><uom>sec</uom><url></url><descr></descr></metric>"
            if nested
            else ""
        )
        + "</metric>"
        '<metric id="2" type="EXCLUSIVE"><disp_name>Min</disp_name><uniq_name>min_time</uniq_name>'
        "<dtype>MINDOUBLE</dtype><uom>sec</uom><url></url><descr></descr></metric>"
    )
    if dtype_extra:
        metrics += (
            f'<metric id="4" type="EXCLUSIVE"><disp_name>x</disp_name><uniq_name>x</uniq_name>'
            f"<dtype>{dtype_extra}</dtype><uom></uom><url></url><descr></descr></metric>"
        )
    region = (
        '<region id="{i}" mod="{mod}" begin="{b}" end="-1"><name>{n}</name><mangled_name>{n}'
        "</mangled_name><paradigm>{p}</paradigm><role>{r}</role><url></url><descr></descr></region>"
    )
    regions = "".join(
        region.format(i=i, mod=mod, b=b, n=n, p=p, r=r)
        for i, (mod, b, n, p, r) in enumerate(
            [
                ("src/main.c", 3, "main", "compiler", "function"),
                ("src/main.c", 10, "work", "compiler", "function"),
                ("MPI", -1, "MPI_Allreduce", "mpi", "all2all"),
            ]
        )
    )
    cnodes = '<cnode id="0" calleeId="0"><cnode id="1" calleeId="1"/><cnode id="2" calleeId="2"/></cnode>'
    groups = ""
    for r in range(2):
        locs = "".join(
            f'<location Id="{2 * r + t}"><name>thread {t}</name><rank>{t}</rank><type>thread</type></location>'
            for t in range(2)
        )
        groups += f'<locationgroup Id="{r}"><name>MPI Rank {r}</name><rank>{r}</rank><type>process</type>{locs}</locationgroup>'
    anchor = (
        '<?xml version="1.0" encoding="UTF-8"?>\n<cube version="4.4">'
        '<attr key="Cube Version" value="4.8"/><attr key="Creator" value="test"/>'
        f"<metrics>{metrics}</metrics><program>{regions}{cnodes}</program>"
        '<system><systemtreenode Id="0"><name>machine</name><class>machine</class>'
        f'<systemtreenode Id="1"><name>node n1</name><class>node</class>{groups}</systemtreenode>'
        "</systemtreenode></system></cube>"
    ).encode()
    # values[cnode][location]; cnode order 0, 1, 2 is both pre-order and CUBE's
    # breadth enumeration for this tree, so the index lists tree indices 0..2
    visits = np.array([[1, 1, 1, 1], [2, 3, 0, 4], [5, 5, 5, 5]], dtype="<u8")
    time_inc = np.array([[10.0, 11.0, 12.0, 13.0], [4.0, 5.0, 0.0, 6.0], [1.0, 2.0, 3.0, 4.0]])
    mpi_inc = np.array([[1.0, 2.0, 3.0, 4.0], [0.0, 0.0, 0.0, 0.0], [1.0, 2.0, 3.0, 4.0]])
    min_t = np.array([[10.0, 11.0, 12.0, 13.0], [1.0, 1.5, 0.0, 1.25], [0.1, 0.2, 0.3, 0.4]])
    data = {0: visits, 1: time_inc, 2: min_t}
    if nested:
        data[3] = mpi_inc
    if dtype_extra:
        data[4] = np.zeros((3, 4))

    def index():
        return b"CUBEX.INDEX" + struct.pack("<ihbi", 1, 0, 1, 3) + struct.pack("<3i", 0, 1, 2)

    with tarfile.open(path, "w") as tf:
        members = {"anchor.xml": anchor}
        for mid, v in data.items():
            members[f"{mid}.index"] = index()
            members[f"{mid}.data"] = b"CUBEX.DATA" + np.ascontiguousarray(v).tobytes()
        for name, raw in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(raw)
            tf.addfile(info, io.BytesIO(raw))
    return path


def test_threads_and_a_nested_metric(tmp_path):
    ens = cctviz.read(_write_cubex(tmp_path / "t.cubex"))
    assert ens.profiles[["rank", "thread", "location"]].values.tolist() == [
        [0, 0, 0],
        [0, 1, 1],
        [1, 0, 2],
        [1, 1, 3],
    ]
    assert ens.profiles["host"].eq("node n1").all()
    t = ens.tree
    assert t.names.tolist() == ["main", "work", "MPI_Allreduce"]
    assert t.nodes["kind"].tolist() == ["function", "function", "comm"]
    assert t.nodes["file"].tolist()[:2] == ["src/main.c", "src/main.c"]
    assert t.nodes["module"].tolist()[2] == "MPI"
    assert ens.meta["cube_metric_parent"] == {"mpi": "time"}
    # inclusive time is stored: exclusive = own - children
    np.testing.assert_allclose(ens.values("time")[0], [5.0, 4.0, 9.0, 3.0])
    np.testing.assert_allclose(ens.values("time (inc)")[0], [10.0, 11.0, 12.0, 13.0])
    np.testing.assert_allclose(ens.values("mpi")[0], [0.0, 0.0, 0.0, 0.0])
    np.testing.assert_allclose(ens.values("mpi (inc)")[0], [1.0, 2.0, 3.0, 4.0])
    # rank 1 thread 0 never ran `work`: no min there, and the root's min skips it
    mins = ens.values("min_time")
    assert np.isnan(mins[1, 2]) and mins[1, 3] == 1.25
    np.testing.assert_allclose(ens.values("min_time (inc)")[0], [0.1, 0.2, 0.3, 0.4])
    np.testing.assert_array_equal(ens.values("visits (inc)")[0], [8, 9, 6, 10])


def test_non_scalar_metrics_are_left_out_with_a_warning(tmp_path):
    p = _write_cubex(tmp_path / "r.cubex", nested=False, dtype_extra="TAU_ATOMIC")
    with pytest.warns(UserWarning, match=r"x \(TAU_ATOMIC\)"):
        ens = cctviz.read(p)
    assert "x" not in ens.exc_metrics and "mpi" not in ens.exc_metrics


# ------------------------------------------------------------------ bad input
def test_detection():
    for p in ALL:
        assert cctviz.readers.detect(p) == "cube"


def test_entity_declarations_are_refused(tmp_path):
    p = _write_cubex(tmp_path / "e.cubex")
    with tarfile.open(p) as tf:
        anchor = tf.extractfile("anchor.xml").read()
    bad = anchor.replace(b"<cube ", b'<!DOCTYPE cube [<!ENTITY a "aaaaaaaa">]>\n<cube ', 1)
    q = tmp_path / "bad.cubex"
    with tarfile.open(p) as src, tarfile.open(q, "w") as dst:
        for m in src.getmembers():
            raw = bad if m.name == "anchor.xml" else src.extractfile(m).read()
            m.size = len(raw)
            dst.addfile(m, io.BytesIO(raw))
    with pytest.raises(ProfileError, match="entity") as info:
        cctviz.read(q)
    assert info.value.path == str(q)


def test_missing_anchor_and_not_a_tar(tmp_path):
    q = tmp_path / "x.cubex"
    with tarfile.open(q, "w") as tf:
        info = tarfile.TarInfo("0.data")
        info.size = 3
        tf.addfile(info, io.BytesIO(b"abc"))
    with pytest.raises(ProfileError, match="no anchor.xml"):
        cctviz.read(q)
    q.write_bytes(b"hello")
    with pytest.raises(ProfileError, match="tar"):
        cctviz.read(q, format="cube")


def test_data_of_the_wrong_size(tmp_path):
    p = _write_cubex(tmp_path / "s.cubex", nested=False)
    q = tmp_path / "short.cubex"
    with tarfile.open(p) as src, tarfile.open(q, "w") as dst:
        for m in src.getmembers():
            raw = src.extractfile(m).read()
            if m.name == "1.data":
                raw = raw[:-8]
            m.size = len(raw)
            dst.addfile(m, io.BytesIO(raw))
    with pytest.raises(ProfileError) as info:
        cctviz.read(q)
    assert info.value.path == str(q)


@pytest.mark.parametrize(
    "sample", [WITH_CSV["call_tree_test"], KRIPKE], ids=["call_tree", "kripke"]
)
def test_fuzz(sample, tmp_path):
    stats = fuzz_sample(sample, "cube", tmp_path, n=40)
    assert sum(v for k, v in stats.items() if k.endswith(":error")) > 0


def test_wrong_format_rejected():
    for other in (
        DATA / "hatchet/json/hatchet-graph-literal.json",
        DATA / "hatchet/caliper-lulesh-cali/lulesh-annotation-profile.cali",
        DATA / "hatchet/cprofile-hatchet-pstats/cprofile-cycle.pstats",
    ):
        assert_wrong_format_rejected(other, "cube")
    for fmt in ("hatchet-json", "cali", "cprofile", "kineto", "folded"):
        assert_wrong_format_rejected(KRIPKE, fmt)
