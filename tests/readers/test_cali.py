"""Native Caliper .cali files load with the content Hatchet and Thicket read from them."""

import gzip
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import cctviz
from cctviz import Ensemble, ProfileError
from cctviz.readers import detect
from cctviz.readers.cali import _sniff
from tests.conftest import CALIPER_JSON, DATA, HATCHET_JSON
from tests.peers import hatchet  # noqa: E402  (imported when a test uses it)
from tests.readers.fuzz import assert_wrong_format_rejected, fuzz_sample

LULESH = DATA / "hatchet/caliper-lulesh-cali/lulesh-annotation-profile.cali"
SW4 = DATA / "hatchet/caliper-sw4-cuda-activity-cali/caliper_cuda_activity_profile.cali"
RAJAPERF = DATA / "thicket/rajaperf"
MPI_SCALING = DATA / "thicket/mpi_scaling_cali"
CALI_DEMO = DATA / "hatchet-tutorial/cali-demo"
ALL = sorted(DATA.rglob("*.cali"))


def test_every_sample_is_found_and_detected():
    assert len(ALL) == 2 + 18 + 5 + 13
    assert {detect(p) for p in ALL} == {"cali"}


def test_sniff_is_precise():
    assert _sniff(Path("x"), b"__rec=node,id=24,attr=10,data=588,parent=3\n")
    assert _sniff(Path("x"), b"__rec=ctx,ref=28,attr=97,data=1\n")
    assert _sniff(Path("x"), b"__rec=globals,ref=162=152\n")
    assert not _sniff(Path("x"), b"__rec=foo,id=1\n")  # unknown record kind
    assert not _sniff(Path("x"), b" __rec=node,id=1\n")  # not at the start
    assert not _sniff(Path("x"), b"__rec=node\n")  # a record has entries
    assert not _sniff(Path("x"), b"")
    for other in [*CALIPER_JSON, HATCHET_JSON]:
        assert not _sniff(other, other.read_bytes()[:65536])


def _hatchet(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gf = hatchet.GraphFrame.from_caliperreader(str(path))
    df = gf.dataframe.reset_index()
    paths, stack = {}, [(r, "") for r in gf.graph.roots]
    while stack:
        n, prefix = stack.pop()
        paths[n] = prefix + n.frame["name"]
        stack += [(c, paths[n] + "/") for c in n.children]
    df["callpath"] = df["node"].map(paths)
    return gf, df


def _ours(obj):
    if isinstance(obj, Ensemble):
        df = obj.long_table.reset_index()
        df["rank"] = obj.profiles["rank"].to_numpy()[df["profile"].to_numpy()]
        tree = obj.tree
    else:
        df, tree = obj.metrics.reset_index().assign(rank=0), obj
    df["callpath"] = tree.callpaths.to_numpy()[df["node"].to_numpy()]
    return tree, df


def _same_sums(ours, theirs, keys, metric):
    a = ours.groupby(keys)[metric].sum()
    b = theirs.groupby(keys)[metric].sum().astype(float)
    a, b = a[a != 0], b[b != 0]
    pd.testing.assert_series_equal(a.sort_index(), b.sort_index(), check_names=False)


def test_lulesh_matches_hatchet():
    t = cctviz.read(LULESH)
    gf, hdf = _hatchet(LULESH)
    tree, ours = _ours(t)
    assert isinstance(t, cctviz.Tree) and len(t) == len(gf.graph) == 19
    assert sorted(tree.callpaths) == sorted(hdf["callpath"])
    for m in ("time", "count", "min#time.duration", "max#time.duration", "avg#time.duration"):
        _same_sums(ours, hdf, ["callpath"], m)
    main = int(np.flatnonzero(t.names == "main")[0])
    assert t.metrics.loc[main, "time"] == pytest.approx(0.025121)
    assert t.metrics.loc[main, "count"] == 2
    # the loop annotation is a loop node, the rest are functions
    kinds = dict(zip(t.names, t.nodes["kind"]))
    assert kinds["lulesh.cycle"] == "loop" and kinds["LagrangeNodal"] == "function"
    assert t.meta["cali.caliper.version"] == "2.2.0-dev" and t.meta["format"] == "cali"


def test_sw4_cuda_activity_matches_hatchet():
    e = cctviz.read(SW4)
    gf, hdf = _hatchet(SW4)
    tree, ours = _ours(e)
    assert isinstance(e, Ensemble)
    assert sorted(e.profiles["rank"]) == [0, 1, 2, 3] and e.meta["mpi.world.size"] == 4
    assert len(tree) == len(gf.graph) == 549
    assert sorted(tree.callpaths) == sorted(hdf["callpath"].dropna().unique())
    for m in ("time", "time (gpu)"):
        _same_sums(ours, hdf, ["callpath", "rank"], m)
    assert e.meta["units"] == {"time": "s", "time (gpu)": "s"}
    kinds = tree.nodes["kind"]
    assert (kinds == "kernel").sum() == 155 and (kinds == "memcpy").sum() == 1
    # a kernel hangs under the runtime call that launched it
    k = int(np.flatnonzero(kinds == "kernel")[0])
    assert tree.names[tree.parent[k]] == "cudaLaunchKernel"
    assert tree.nodes.loc[tree.parent[k], "kind"] == "function"
    # GPU time of the whole run, per rank, is the sum of the kernel/memcpy records
    gpu = e.long_table["time (gpu) (inc)"].xs(0, level="node")
    assert gpu.to_numpy() == pytest.approx(
        hdf.groupby("rank")["time (gpu)"].sum().to_numpy(), rel=1e-9
    )


def _thicket(files):
    from tests.peers import thicket

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return thicket.Thicket.from_caliperreader([str(f) for f in files], disable_tqdm=True)


@pytest.mark.parametrize(
    ("folder", "n", "node", "columns"),
    [
        (RAJAPERF, 18, "RAJAPerf/Basic/Basic_DAXPY", ["cluster", "variant", "tuning"]),
        (MPI_SCALING, 5, "main/lulesh.cycle/LagrangeLeapFrog", ["jobsize", "problem_size"]),
        (CALI_DEMO, 13, "main/lulesh.cycle/LagrangeLeapFrog", ["jobsize", "problem_size"]),
    ],
    ids=["rajaperf", "mpi_scaling", "cali-demo"],
)
def test_folder_of_runs_matches_thicket(folder, n, node, columns):
    ens = cctviz.read(folder)  # rajaperf: files two to four folders down
    assert isinstance(ens, Ensemble) and ens.n_profiles == n
    tk = _thicket(Path(f) for f in ens.profiles["file"])
    assert len(tk.profile) == n and len(ens.tree) == len(tk.graph)
    assert set(columns) <= set(ens.profiles.columns)
    by_file = {str(Path(f)): h for h, f in tk.profile_mapping.items()}
    nid = int(np.flatnonzero(ens.tree.callpaths == node)[0])
    leaf = node.split("/")[-1]
    tdf = tk.dataframe.reset_index()
    for p, row in ens.profiles.iterrows():
        h = by_file[str(Path(row["file"]))]
        theirs = tk.metadata.loc[h]
        for col, v in theirs.items():
            if not isinstance(v, list) and pd.isna(v):  # a global this run lacks
                assert pd.isna(row.get(col)), col
            elif isinstance(v, list):  # Hatchet splits "[a, b]" strings into lists
                assert [x.strip() for x in row[col].strip("[]").split(",")] == v, col
            else:
                assert row[col] == v, (col, row[col], v)
        # Caliper's "Avg time/rank" is an average of inclusive values: kept per node as is
        got = ens.long_table.loc[(nid, p), "Avg time/rank"]
        want = tdf.loc[(tdf["profile"] == h) & (tdf["name"] == leaf), "Avg time/rank"].to_numpy()
        assert want.size == 1 and got == pytest.approx(want[0], rel=1e-12)


def test_rajaperf_folder_metadata():
    ens = cctviz.read(RAJAPERF)
    pr = ens.profiles
    assert pr["cluster"].value_counts().to_dict() == {"lassen": 13, "quartz": 5}
    assert sorted(pr["ProblemSizeRunParam"].unique()) == [1048576.0, 2097152.0]
    lassen = pr[pr["cluster"] == "lassen"]
    assert set(lassen["variant"]) == {"Base_CUDA"} and set(lassen["tuning"]) == {
        "block_128",
        "block_256",
    }
    # the nested folders read through a glob too, to the same ensemble
    g = cctviz.read_ensemble(str(RAJAPERF / "**" / "*.cali"), progress=False)
    assert g.n_profiles == 18 and len(g.tree) == len(ens.tree) == 74
    assert sorted(g.profiles["launchdate"]) == sorted(pr["launchdate"])


def test_mpi_scaling_metadata():
    ens = cctviz.read(MPI_SCALING)
    pr = ens.profiles.sort_values("jobsize")
    assert pr["jobsize"].tolist() == [27, 64, 125, 216, 343]
    assert (pr["mpi.world.size"] == pr["jobsize"]).all()
    assert set(pr["cluster"]) == {"opal"} and set(pr["problem_size"]) == {30}
    one = cctviz.read(MPI_SCALING / "27_cores.cali")
    assert isinstance(one, cctviz.Tree) and one.meta["jobsize"] == 27
    assert one.units == dict.fromkeys(
        ["Min time/rank", "Max time/rank", "Avg time/rank", "Total time"], "s"
    )


def test_node_kinds_and_gzip(tmp_path):
    t = cctviz.read(MPI_SCALING / "27_cores.cali")
    kinds = dict(zip(t.callpaths, t.nodes["kind"]))
    assert kinds["MPI_Allreduce"] == "comm" and kinds["main"] == "function"
    assert kinds["main/lulesh.cycle"] == "loop"
    assert kinds["main/lulesh.cycle/LagrangeLeapFrog/LagrangeElements"] == "function"
    gz = tmp_path / "27_cores.cali.gz"
    gz.write_bytes(gzip.compress((MPI_SCALING / "27_cores.cali").read_bytes()))
    assert detect(gz) == "cali"
    g = cctviz.read(gz)
    assert g.metrics["Total time (inc)"].tolist() == t.metrics["Total time (inc)"].tolist()


def test_missing_caliper_reader_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "caliperreader", None)  # import fails
    with pytest.raises(ProfileError, match=r"pip install caliper-reader.*cctviz\[caliper\]") as e:
        cctviz.read(LULESH)
    assert e.value.path == str(LULESH)


def test_truncated_files_are_refused(tmp_path):
    lines = LULESH.read_bytes().splitlines(keepends=True)
    cut = tmp_path / "cut.cali"
    cut.write_bytes(b"".join(lines[:-1]))  # complete records, the globals line gone
    with pytest.raises(ProfileError, match="no __rec=globals record") as e:
        cctviz.read(cut)
    assert e.value.path == str(cut)
    cut.write_bytes(b"".join(lines)[:-1])  # the last newline gone
    with pytest.raises(ProfileError, match="last line is incomplete"):
        cctviz.read(cut)


def test_bad_records_name_the_line(tmp_path):
    lines = LULESH.read_text().splitlines(keepends=True)
    bad = tmp_path / "bad.cali"
    bad.write_text("".join(lines[:5] + ["__rec=ctx,ref=9999,attr=97,data=1\n"] + lines[5:]))
    with pytest.raises(ProfileError, match="not a valid Caliper record") as e:
        cctviz.read(bad, format="cali")
    assert e.value.where == "line 6" and "id 9999, which no earlier node record" in str(e.value)
    bad.write_text("".join(lines).replace("data=0.000285=", "data=x0.000285="))
    with pytest.raises(ProfileError, match="min#time.duration holds 'x0.000285'") as e:
        cctviz.read(bad)
    assert e.value.where == "line 17"


@pytest.mark.parametrize("sample", [LULESH, MPI_SCALING / "27_cores.cali"], ids=lambda p: p.name)
def test_fuzzed_samples(sample, tmp_path):
    stats = fuzz_sample(sample, "cali", tmp_path, n=30)
    assert stats["truncate:error"] == 6
    assert sum(v for k, v in stats.items() if k.endswith(":error")) > 6


def test_foreign_files_are_refused():
    e = assert_wrong_format_rejected(
        DATA / "hatchet/caliper-lulesh-json/lulesh-annotation-profile.json", "cali"
    )
    assert "line 1" in str(e)
    assert_wrong_format_rejected(HATCHET_JSON, "cali")


def test_recorded_inclusive_metrics_are_kept():
    """Every record's inclusive value comes back as the node's `` (inc)`` metric."""
    import caliperreader

    f = next(RAJAPERF.rglob("Base_Seq-default.cali"))
    t = cctviz.read(f)
    ids = dict(zip(t.callpaths, range(len(t))))
    r = caliperreader.CaliperReader()
    r.read(str(f))
    n = 0
    for rec in r.records:
        if "path" in rec:
            node = ids["/".join(rec["path"])]
            for attr, ours in (
                ("avg#inclusive#sum#time.duration", "Avg time/rank"),
                ("min#inclusive#sum#time.duration", "Min time/rank"),
                ("max#inclusive#sum#time.duration", "Max time/rank (inc)"),
                ("sum#inclusive#sum#time.duration", "Total time (inc)"),
            ):
                assert t.metrics.loc[node, ours] == pytest.approx(float(rec[attr]), abs=1e-12)
            n += 1
    assert n == len(t) == 74


# ---------------------------------------------------------------- rules and units
SEQ = RAJAPERF / "quartz/gcc10.3.1_1048576/O3/1/Base_Seq-default.cali"
CONSTANTS = ["BlockSize", "Bytes/Rep", "Flops/Rep", "Iterations/Rep", "Kernels/Rep"]
CONSTANTS += ["ProblemSize", "Reps"]


def _records(path):
    import caliperreader

    r = caliperreader.CaliperReader()
    r.read(str(path))
    return [rec for rec in r.records if "path" in rec]


def test_rajaperf_rules_follow_the_caliper_operators():
    t = cctviz.read(SEQ)
    assert t.aggregation == {
        "Total time": "sum",  # sum#inclusive#sum#time.duration
        "Min time/rank": "none",  # min#inclusive#...: a minimum of inclusive values
        "Max time/rank": "max",  # max#inclusive#...
        "Avg time/rank": "none",  # avg#inclusive#...
        **dict.fromkeys(CONSTANTS, "none"),  # any#any#max#...: per-kernel constants
    }
    # a "none" metric has no inclusive column; those given as inclusive values keep them
    cols = set(t.metrics.columns)
    assert not {f"{m} (inc)" for m in [*CONSTANTS, "Min time/rank", "Avg time/rank"]} & cols
    assert {"Total time (inc)", "Max time/rank (inc)"} <= cols
    notes = t.meta["aggregation_notes"]
    assert "minimum of inclusive values" in notes["Min time/rank"]
    assert "'any' operator" in notes["BlockSize"] and "average" in notes["Avg time/rank"]
    # the default metric is the time that adds up, not the first column (BlockSize)
    assert t.metric_column(None) == "Total time (inc)" and t.exc_metrics[0] == "Total time"


def test_rajaperf_values_are_the_recorded_ones():
    t = cctviz.read(SEQ)
    ids = dict(zip(t.callpaths, range(len(t))))
    recs = _records(SEQ)
    assert len(recs) == len(t) == 74
    cols = {
        "sum#inclusive#sum#time.duration": "Total time (inc)",
        "max#inclusive#sum#time.duration": "Max time/rank (inc)",
        "min#inclusive#sum#time.duration": "Min time/rank",
        "avg#inclusive#sum#time.duration": "Avg time/rank",
        "any#any#max#BlockSize": "BlockSize",
        "any#any#max#Reps": "Reps",
        "any#any#max#Bytes/Rep": "Bytes/Rep",
    }
    for rec in recs:
        node = ids["/".join(rec["path"])]
        for attr, col in cols.items():
            assert t.metrics.loc[node, col] == pytest.approx(float(rec[attr]), rel=1e-12), col
    root = t.metrics.loc[0]
    assert root["Max time/rank (inc)"] == root["Max time/rank"] == 103.47638
    # a max over ranks of inclusive times: no child's is larger, so the max rule gives it back
    assert (t.metrics["Max time/rank (inc)"] == t.metrics["Max time/rank"]).all()
    # the own part of the total is what the children leave, never negative
    own = t.metrics["Total time"]
    groups = t.metrics.loc[t.children(0), "Total time (inc)"]
    assert len(groups) == 6 and own.min() >= 0
    assert own[0] == pytest.approx(103.47638 - groups.sum(), abs=1e-12)
    assert own[0] == pytest.approx(0.000307, abs=1e-9)


def test_model_demotes_a_minimum_of_inclusive_values():
    """What the model does with "Min time/rank" under a "min" rule: the reader's "none"."""
    t = cctviz.read(SEQ)
    rec = t.metrics["Min time/rank"].to_numpy()
    m = cctviz.Tree.from_parents(
        t.parent,
        t.names,
        inclusive={"Min time/rank": rec},
        meta={"aggregation": {"Min time/rank": "min"}},
    )
    assert m.aggregation == {"Min time/rank": "none"}
    assert "does not give back" in m.meta["aggregation_notes"]["Min time/rank"]
    assert m.metrics["Min time/rank"].tolist() == rec.tolist()


def test_rajaperf_ensemble_rules_units_and_runs():
    ens = cctviz.read(RAJAPERF)
    files = ens.profiles["file"].tolist()
    assert ens.n_profiles == 18 and ens.profiles["run"].nunique() == 18  # each file a run
    assert ens.aggregation["BlockSize"] == "none" and ens.aggregation["Max time/rank"] == "max"
    assert "BlockSize (inc)" not in ens.long_table.columns
    assert "Max time/rank (inc)" in ens.long_table.columns
    for p, f in enumerate(files):
        root = next(r for r in _records(f) if r["path"] in ("RAJAPerf", ["RAJAPerf"]))
        assert ens.long_table.loc[(0, p), "Max time/rank (inc)"] == float(
            root["max#inclusive#sum#time.duration"]
        )
        assert ens.long_table.loc[(0, p), "BlockSize"] == float(root["any#any#max#BlockSize"])
    assert ens.meta["units"] == {
        **dict.fromkeys(["Total time", "Min time/rank", "Max time/rank", "Avg time/rank"], "s"),
        "Bytes/Rep": "B",  # RAJAPerf's name; the file states no unit
    }


def test_units_of_unstated_caliper_timers_are_recorded_assumptions():
    t = cctviz.read(LULESH)  # Caliper 2.2: min/max/sum/avg#time.duration, no unit in the file
    assert t.aggregation == {
        "time": "sum",
        "min#time.duration": "min",
        "max#time.duration": "max",
        "avg#time.duration": "none",
        "count": "sum",
    }
    timers = ["time", "min#time.duration", "max#time.duration", "avg#time.duration"]
    assert t.units == dict.fromkeys(timers, "s")  # values like 0.000285: whole us * 1e-6
    assert set(t.meta["units_assumed"]) == set(timers)
    assert "whole microseconds times 1e-6: seconds" in t.meta["units_assumed"]["time"]
    assert "count" not in t.units  # a count has no unit
    # min/max rules: the inclusive value is the extreme over the subtree
    m = t.metrics
    assert m.loc[0, "max#time.duration (inc)"] == m["max#time.duration"].max() == 0.024836
    assert m.loc[0, "min#time.duration (inc)"] == m["min#time.duration"].min()
    # stated units are taken as stated and not assumed
    sw4 = cctviz.read(SW4)
    assert sw4.meta["units"] == {"time": "s", "time (gpu)": "s"}
    assert "units_assumed" not in sw4.meta
    assert "units_assumed" not in cctviz.read(MPI_SCALING / "27_cores.cali").meta


def test_text_values_are_node_attributes_not_refused(tmp_path):
    """A Caliper ASVALUE attribute of type string is a label: kept as a node column."""
    lines = LULESH.read_text().splitlines(keepends=True)
    main = next(k for k, ln in enumerate(lines) if ln.startswith("__rec=ctx,ref=155,"))
    defs = [
        "__rec=node,id=900,attr=10,data=21,parent=3\n",  # properties: as value; type: string
        "__rec=node,id=901,attr=8,data=my.note,parent=900\n",
    ]
    rec = lines[main].replace("attr=97=", "attr=901=97=").replace("data=", "data=hello=")
    f = tmp_path / "note.cali"
    f.write_text("".join(lines[:main] + defs + [rec] + lines[main + 1 :]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        t = cctviz.read(f)
    assert t.nodes["my.note"].tolist() == ["hello"] + [None] * (len(t) - 1)
    assert "my.note" not in t.exc_metrics
    assert t.metrics.equals(cctviz.read(LULESH).metrics)
    # a number-typed value that is not a number is still refused
    f.write_text("".join(lines).replace("data=0.000285=", "data=x0.000285="))
    with pytest.raises(ProfileError, match="not a number"):
        cctviz.read(f)
