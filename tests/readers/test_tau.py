"""TAU profile folders load with the content Hatchet reads from them."""

import shutil
import warnings

import numpy as np
import pandas as pd
import pytest

import cctviz
from cctviz import Ensemble, ProfileError
from tests.conftest import DATA, HATCHET_JSON
from tests.readers.fuzz import assert_wrong_format_rejected, fuzz_sample

TAU = DATA / "hatchet/tau-cpi-mpi"
HPCTOOLKIT = DATA / "hatchet/hpctoolkit-cpi-database"


@pytest.fixture(scope="module")
def ens():
    return cctviz.read(TAU)


def test_shape_and_metadata(ens):
    assert isinstance(ens, Ensemble)
    assert ens.meta["format"] == "tau"
    assert ens.profiles["rank"].tolist() == [0, 1, 2, 3]
    assert ens.profiles["thread"].tolist() == [0, 0, 0, 0]
    assert set(ens.profiles["hostname"]) == {"nid01045"}
    assert ens.meta["tau_version"] == "2.29-git" and ens.meta["command"] == "./cpi-mpi"
    assert ens.tree.units["time"] == "us"
    events = [
        f"Message size for {op} ({stat})"
        for op in ("broadcast", "reduce")
        for stat in ("count", "max", "min", "mean")
    ]
    assert ens.exc_metrics == ["time", "calls", *events]
    t = ens.tree
    assert len(t) == 12 and t.names[t.roots].tolist() == [".TAU application"]
    fin = int(np.flatnonzero(t.names == "MPI_Finalize()")[0])
    assert sorted(t.names[t.children(fin)]) == [
        "MPI_Comm_get_attr()",
        "MPI_File_open()",
        "MPI_Info_create()",
        "MPI_Info_free()",
    ]
    assert set(t.nodes.loc[t.nodes["name"] != ".TAU application", "kind"]) == {"comm"}
    assert t.nodes.loc[fin, "group"] == "MPI"


def test_known_values(ens):
    t = ens.tree
    r0 = ens.profile(rank=0)
    assert r0.metrics.loc[0, ["time", "time (inc)", "calls"]].tolist() == [449.0, 51781.0, 1.0]
    fin = int(np.flatnonzero(t.names == "MPI_Finalize()")[0])
    # TAU's own Excl/Incl of ".TAU application => MPI_Finalize()" on rank 0
    assert ens.long_table.loc[(fin, 0), "time"] == 4458.0
    assert ens.long_table.loc[(fin, 0), "time (inc)"] == 32304.0
    # rank 3: the root's exclusive and TAU's inclusive
    assert (
        ens.long_table.loc[(0, 3), "time"] == 409.0
        and ens.long_table.loc[(0, 3), "time (inc)"] == 52908.0
    )


def test_derived_inclusive_equals_tau_incl(ens):
    """With complete call paths the tree's inclusive time is TAU's Incl column."""
    for k, f in enumerate(sorted(TAU.glob("profile.*"))):
        lines = f.read_text().splitlines()
        incl = {}
        for ln in lines[2:25]:
            name, rest = ln[1:].split('" ', 1)
            incl[" => ".join(x.strip() for x in name.split("=>"))] = float(rest.split()[3])
        checked = 0
        for node, cp in enumerate(ens.tree.callpaths):
            key = cp.replace("/", " => ")
            if key in incl and (" => " in key or node == 0):
                assert ens.long_table.loc[(node, k), "time (inc)"] == incl[key], (f, key)
                checked += 1
        assert checked == 12


def test_file_path_reads_folder(ens):
    assert cctviz.readers.detect(TAU) == "tau"
    assert cctviz.readers.detect(TAU / "profile.2.0.0") == "tau"
    one = cctviz.read(TAU / "profile.2.0.0")
    assert one.n_profiles == 4 and one.long_table.equals(ens.long_table)


# ---------------------------------------------------------------- Hatchet
from tests.peers import hatchet  # noqa: E402  (imported when a test uses it)


def test_matches_hatchet(ens):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gf = hatchet.GraphFrame.from_tau(str(TAU))
    assert len(gf.graph) == len(ens.tree)
    hdf = gf.dataframe.reset_index()
    hdf["callpath"] = ["/".join(x.frame["name"] for x in n.path()) for n in hdf["node"]]
    ours = ens.long_table.reset_index()
    ours["callpath"] = ens.tree.callpaths.to_numpy()[ours["node"].to_numpy()]
    ours["rank"] = ens.profiles["rank"].to_numpy()[ours["profile"].to_numpy()]
    a = ours.set_index(["callpath", "rank"]).sort_index()
    b = hdf.set_index(["callpath", "rank"]).sort_index()
    assert a.index.equals(b.index)
    for ours_col, theirs in [("time", "time"), ("time (inc)", "time (inc)"), ("calls", "Calls")]:
        pd.testing.assert_series_equal(
            a[ours_col], b[theirs].astype(float), check_names=False, check_index=True
        )


# ---------------------------------------------------------------- variants
def _copy(tmp_path, name="tau"):
    dest = tmp_path / name
    shutil.copytree(TAU, dest)
    for f in dest.iterdir():
        f.chmod(0o644)
    return dest


def test_multi_metric_folders(tmp_path):
    root = tmp_path / "run"
    for metric in ("TIME", "PAPI_TOT_CYC"):
        d = root / f"MULTI__{metric}"
        d.mkdir(parents=True)
        for f in TAU.glob("profile.*"):
            text = f.read_text().replace("<value>TIME</value>", f"<value>{metric}</value>", 1)
            (d / f.name).write_text(text.replace("_MULTI_TIME", f"_MULTI_{metric}", 1))
    ens = cctviz.read(root)
    assert set(ens.exc_metrics) - {m for m in ens.exc_metrics if "Message" in m} == {
        "time",
        "PAPI_TOT_CYC",
        "calls",
    }
    assert ens.tree.units["time"] == "us" and "PAPI_TOT_CYC" not in ens.tree.units
    assert ens.aggregation["PAPI_TOT_CYC"] == "sum"
    assert (ens.exclusive_rows["time"] == ens.exclusive_rows["PAPI_TOT_CYC"]).all()
    assert cctviz.read(root / "MULTI__PAPI_TOT_CYC" / "profile.1.0.0").n_profiles == 4


def _flatten(d):
    """Drop the call-path timers (``a => b``) of every profile: the flat profile
    TAU writes for the same run with ``TAU_CALLPATH=off`` (its default)."""
    for f in d.glob("profile.*"):
        lines = f.read_text().split("\n")
        keep = [ln for ln in lines[2:25] if "=>" not in ln]
        head = lines[1].replace(
            "<name>TAU_CALLPATH</name><value>on</value>",
            "<name>TAU_CALLPATH</name><value>off</value>",
        )
        f.write_text(
            "\n".join([f"{len(keep)} templated_functions_MULTI_TIME", head] + keep + lines[25:])
        )


def _tau_incl(f):
    """TAU's Incl column of a flat profile file, by timer name (from the file)."""
    out = {}
    for ln in f.read_text().split("\n")[2:]:
        if ln.startswith('"') and "GROUP=" in ln:
            name, rest = ln[1:].split('" ', 1)
            out[name.strip()] = float(rest.split()[3])
    return out


def test_flat_profile_keeps_tau_inclusive(tmp_path):
    """Without call paths TAU's Incl cannot be derived: it is kept, per node, and
    equals what the call-path profile of the same run derives."""
    d = _copy(tmp_path)
    _flatten(d)
    ens = cctviz.read(d)
    col = "TAU inclusive time"
    assert ens.aggregation[col] == "none" and ens.tree.units[col] == "us"
    assert "microseconds" in ens.meta["units_assumed"][col]
    callpath = cctviz.read(TAU)
    for r in range(4):
        m = ens.profile(rank=r).metrics.set_axis(ens.tree.names)
        incl = _tau_incl(d / f"profile.{r}.0.0")
        assert m[col].to_dict() == incl
        cp = callpath.profile(rank=r).metrics.set_axis(callpath.tree.names)
        for name in (".TAU application", "MPI_Finalize()", "MPI_Bcast()"):
            assert m.loc[name, col] == cp.loc[name, "time (inc)"]
        # the derived inclusive of a flat root is only its own time
        assert m.loc[".TAU application", "time (inc)"] == m.loc[".TAU application", "time"]
    assert col not in callpath.exc_metrics  # with call paths the derived one is TAU's


def test_parameter_timers_go_under_their_base(tmp_path):
    """TAU's parameter profiling (``TAU_TRACK_PARAMS``) writes a timer per
    parameter value, started inside the base timer: a child of it."""
    d = _copy(tmp_path)
    _flatten(d)
    f = d / "profile.0.0.0"
    lines = f.read_text().split("\n")
    n = int(lines[0].split()[0])
    k = next(i for i, ln in enumerate(lines) if ln.startswith('"MPI_Bcast()'))
    name, rest = lines[k].split('" ', 1)
    calls, _subrs, _excl, *tail = rest.split()
    # the broadcast's 218 us: 200 in its 4-byte instance, the rest the base's own
    param = '"MPI_Bcast()   [ <message size> = <4> ]" 1 0 200 200 0 GROUP="MPI"'
    lines[k] = " ".join([name + '"', calls, "1", "18", *tail])
    lines.insert(k + 1, param)
    lines[0] = lines[0].replace(str(n), str(n + 1), 1)
    f.write_text("\n".join(lines))
    ens = cctviz.read(d)
    t = ens.tree
    (b,) = np.flatnonzero(t.names == "MPI_Bcast()")
    (p,) = np.flatnonzero(t.names == "MPI_Bcast()   [ <message size> = <4> ]")
    assert t.nodes["parent"][p] == b and len(t.roots) == 12  # not a root beside it
    m = ens.profile(rank=0).metrics
    incl = _tau_incl(f)
    assert m.loc[b, "time (inc)"] == incl["MPI_Bcast()"] == m.loc[b, "TAU inclusive time"]
    assert m.loc[p, "time"] == incl["MPI_Bcast()   [ <message size> = <4> ]"]


def test_flat_profile_without_callpaths(tmp_path):
    d = _copy(tmp_path)
    _flatten(d)
    ens = cctviz.read(d)
    assert len(ens.tree) == 12 and len(ens.tree.roots) == 12
    assert (
        ens.profile(rank=0).metrics["time"].sum()
        == cctviz.read(TAU).profile(rank=0).metrics["time"].sum()
    )


def test_thread_and_context_columns(tmp_path):
    d = _copy(tmp_path)
    (d / "profile.3.0.0").rename(d / "profile.0.0.1")
    ens = cctviz.read(d)
    assert ens.profiles[["rank", "thread"]].values.tolist() == [[0, 0], [0, 1], [1, 0], [2, 0]]


# ---------------------------------------------------------------- bad input
def test_bad_line_names_file_and_line(tmp_path):
    d = _copy(tmp_path)
    f = d / "profile.1.0.0"
    lines = f.read_text().split("\n")
    lines[6] = lines[6].replace(" 1 0 ", " 1 zero ", 1)
    f.write_text("\n".join(lines))
    with pytest.raises(ProfileError, match="subrs value 'zero' is not a number") as e:
        cctviz.read(d)
    assert e.value.path == str(f) and e.value.where == "line 7"
    lines[6] = "garbage"
    f.write_text("\n".join(lines))
    with pytest.raises(ProfileError, match='expected \'"<name>" calls') as e:
        cctviz.read(d)
    assert e.value.where == "line 7"


def test_truncated_file(tmp_path):
    d = _copy(tmp_path)
    f = d / "profile.3.0.0"
    f.write_bytes(f.read_bytes()[:-300])
    with pytest.raises(ProfileError, match="aggregates|user event|timer lines") as e:
        cctviz.read(d)
    assert e.value.path == str(f)


def test_fuzz(tmp_path):
    stats = fuzz_sample(TAU, "tau", tmp_path, n=60, target="profile.*")
    assert stats["truncate:error"] == 12 and stats["delete:error"] > 0


def test_wrong_format_rejected():
    assert_wrong_format_rejected(HATCHET_JSON, "tau")
    assert_wrong_format_rejected(HPCTOOLKIT, "tau")
    assert_wrong_format_rejected(HPCTOOLKIT / "experiment.xml", "tau")


# ---------------------------------------------------------------- rules, units, user events
def test_units_are_stated_as_assumed(ens):
    """TAU files say no unit: microseconds by TAU's convention, recorded as an assumption."""
    assert "microseconds" in ens.meta["units_assumed"]["time"]
    assert ens.meta["units_assumed"]["Message size for reduce (max)"].startswith("TAU's message")
    assert ens.tree.units == {
        "time": "us",
        **{
            f"Message size for {op} ({s})": "B"
            for op in ("broadcast", "reduce")
            for s in ("max", "min", "mean")
        },
    }
    assert "calls" not in ens.tree.units  # a count


def test_aggregation_rules_on_the_sample(ens):
    rules = ens.aggregation
    assert rules["time"] == rules["calls"] == "sum"
    assert rules["Message size for reduce (count)"] == "sum"
    assert rules["Message size for reduce (max)"] == "max"
    assert rules["Message size for reduce (min)"] == "min"
    assert rules["Message size for reduce (mean)"] == "none"
    assert "Message size for reduce (mean) (inc)" not in ens.long_table.columns
    # the sample's user events are atomic (no call path): they belong to the whole run,
    # the '.TAU application' root; every rank sent one 4-byte broadcast and one 8-byte reduce
    r0 = ens.profile(rank=0).metrics
    assert r0.loc[0, "Message size for broadcast (max)"] == 4.0
    assert r0.loc[0, "Message size for reduce (mean)"] == 8.0
    assert r0.loc[0, "Message size for reduce (count) (inc)"] == 1.0
    assert r0["Message size for reduce (max)"].iloc[1:].isna().all()  # no value, not 0
    st = ens.stats("Message size for reduce (max) (inc)")
    assert st.loc[0, ["max", "min", "count"]].tolist() == [8.0, 8.0, 4]


def _with_events(d, events, aggregates=0, files=None):
    """The sample's files with their user events replaced by ``events`` (name, n, max, min, mean)."""
    for f in sorted(d.glob("profile.*")) if files is None else files:
        lines = f.read_text().split("\n")
        k = next(i for i, ln in enumerate(lines) if ln.endswith("aggregates"))
        body = [f'"{n}" {c} {mx} {mn} {me} 0' for n, c, mx, mn, me in events]
        agg = [f"{aggregates} aggregates"] + ["x"] * aggregates
        head = ["# eventname numevents max min mean sumsqr"]
        f.write_text(
            "\n".join(lines[:k] + agg + [f"{len(events)} userevents"] + head + body) + "\n"
        )


def test_context_events_sit_on_their_call_path(tmp_path):
    d = _copy(tmp_path)
    bcast = ".TAU application => MPI_Bcast()  "
    _with_events(
        d,
        [
            (f"Message size for broadcast : {bcast}", 2, 64, 4, 34),
            ("Message size for broadcast : MPI_Bcast()  ", 2, 64, 4, 34),  # the flat total
            # the total of a flat timer, with no call-path event for it: no place in the tree
            ("Message size for reduce : MPI_Reduce()  ", 1, 8, 8, 8),
            ("Message size for gather : MPI_Gather()", 1, 8, 8, 8),  # no such timer: atomic
            ("Heap Memory Used (KB)", 3, 2, 1, 1.5),
        ],
    )
    with pytest.warns(UserWarning, match="left out: 'Message size for reduce'") as w:
        ens = cctviz.read(d)
    assert len(w) == 1 and "profile.0.0.0" in str(w[0].message)
    t = ens.tree
    b = int(np.flatnonzero(t.names == "MPI_Bcast()")[0])
    r1 = ens.profile(rank=1).metrics
    assert r1.loc[b, "Message size for broadcast (count)"] == 2.0  # the flat total not added
    assert r1.loc[b, "Message size for broadcast (max)"] == 64.0
    assert r1.loc[0, "Message size for broadcast (max) (inc)"] == 64.0  # max over the subtree
    assert np.isnan(r1.loc[0, "Message size for broadcast (max)"])
    assert r1.loc[0, "Message size for broadcast (count) (inc)"] == 2.0
    assert not any("reduce" in m for m in ens.exc_metrics)
    assert r1.loc[0, "Message size for gather : MPI_Gather() (count)"] == 1.0
    # "(KB)" is 1,024 bytes: converted, the name without it
    assert r1.loc[0, "Heap Memory Used (max)"] == 2 * 1024.0
    assert r1.loc[0, "Heap Memory Used (mean)"] == 1.5 * 1024.0
    assert ens.tree.units["Heap Memory Used (min)"] == "B"
    assert "1,024" in ens.meta["units_assumed"]["Heap Memory Used (min)"]


def test_events_of_a_flat_profile_and_aggregates(tmp_path):
    d = _copy(tmp_path)
    _flatten(d)
    _with_events(
        d,
        [
            ("Message size for reduce", 1, 8, 8, 8),
            ("Message size for broadcast : MPI_Bcast()", 1, 4, 4, 4),
        ],
        aggregates=1,
        files=[d / "profile.2.0.0"],
    )
    with pytest.warns(UserWarning, match="aggregates.*profile.2.0.0"):
        ens = cctviz.read(d)
    t = ens.tree
    app = int(np.flatnonzero(t.names == ".TAU application")[0])
    b = int(np.flatnonzero(t.names == "MPI_Bcast()")[0])
    r2 = ens.profile(rank=2).metrics
    assert r2.loc[app, "Message size for reduce (max)"] == 8.0
    assert r2.loc[b, "Message size for broadcast (count)"] == 1.0  # a flat timer is a node here
