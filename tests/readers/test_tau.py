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
    assert ens.tree.units == {"time": "us"}
    assert set(ens.exc_metrics) == {"time", "calls"}
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
    assert ens.data.loc[(fin, 0), "time"] == 4458.0
    assert ens.data.loc[(fin, 0), "time (inc)"] == 32304.0
    # rank 3: the root's exclusive and TAU's inclusive
    assert ens.data.loc[(0, 3), "time"] == 409.0 and ens.data.loc[(0, 3), "time (inc)"] == 52908.0


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
                assert ens.data.loc[(node, k), "time (inc)"] == incl[key], (f, key)
                checked += 1
        assert checked == 12


def test_file_path_reads_folder(ens):
    assert cctviz.readers.detect(TAU) == "tau"
    assert cctviz.readers.detect(TAU / "profile.2.0.0") == "tau"
    one = cctviz.read(TAU / "profile.2.0.0")
    assert one.n_profiles == 4 and one.data.equals(ens.data)


# ---------------------------------------------------------------- Hatchet
hatchet = pytest.importorskip("hatchet")


def test_matches_hatchet(ens):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gf = hatchet.GraphFrame.from_tau(str(TAU))
    assert len(gf.graph) == len(ens.tree)
    hdf = gf.dataframe.reset_index()
    hdf["callpath"] = ["/".join(x.frame["name"] for x in n.path()) for n in hdf["node"]]
    ours = ens.data.reset_index()
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
    assert set(ens.exc_metrics) == {"time", "PAPI_TOT_CYC", "calls"}
    assert (ens.rows["time"] == ens.rows["PAPI_TOT_CYC"]).all()
    assert cctviz.read(root / "MULTI__PAPI_TOT_CYC" / "profile.1.0.0").n_profiles == 4


def test_flat_profile_without_callpaths(tmp_path):
    d = _copy(tmp_path)
    for f in d.glob("profile.*"):
        lines = f.read_text().split("\n")
        keep = [ln for ln in lines[2:25] if "=>" not in ln]
        f.write_text(
            "\n".join([f"{len(keep)} templated_functions_MULTI_TIME", lines[1]] + keep + lines[25:])
        )
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
