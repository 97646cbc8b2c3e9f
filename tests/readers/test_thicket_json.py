"""Thicket's ensemble JSON: profiles, metadata and values as Thicket.from_json reads them."""

import json

import numpy as np
import pandas as pd
import pytest

import cctviz
from cctviz import Ensemble
from cctviz.readers import detect
from tests.conftest import DATA, HATCHET_JSON
from tests.peers import require
from tests.readers.fuzz import assert_wrong_format_rejected, fuzz_sample

TK = DATA / "thicket/example-json/user_ensemble.json"
thicket = require("thicket")  # the whole module compares with the peers


@pytest.fixture(scope="module")
def ens():
    return cctviz.read(TK)


@pytest.fixture(scope="module")
def tk():
    doc = json.loads(TK.read_text())
    doc.setdefault("profile_idx_name", "profile")  # the sample predates this key
    return thicket.Thicket.from_json(json.dumps(doc))


def test_detection_both_ways():
    assert detect(TK) == "thicket-json"
    assert detect(HATCHET_JSON) == "hatchet-json"
    assert_wrong_format_rejected(HATCHET_JSON, "thicket-json")
    assert_wrong_format_rejected(DATA / "hatchet/timemory/wall.tree.json", "thicket-json")


def test_content(ens):
    assert isinstance(ens, Ensemble)
    assert ens.n_profiles == 172 and len(ens.tree) == 29 and len(ens.tree.roots) == 8
    assert len(ens.exclusive_rows) == 3278
    # Caliper's cross-rank aggregates of the inclusive time (spot channel): the sum and
    # the max are given as inclusive values, the average and the minimum kept per node
    assert ens.exc_metrics == [
        "sum#sum#time.duration",
        "max#sum#time.duration",
        "avg#inclusive#sum#time.duration",
        "min#inclusive#sum#time.duration",
    ]
    assert ens.aggregation == {
        "sum#sum#time.duration": "sum",
        "max#sum#time.duration": "max",
        "avg#inclusive#sum#time.duration": "none",
        "min#inclusive#sum#time.duration": "none",
    }
    assert set(ens.inc_metrics) == {"sum#sum#time.duration (inc)", "max#sum#time.duration (inc)"}
    assert "minimum of inclusive values" in ens.meta["aggregation_notes"][ens.exc_metrics[3]]
    # no unit in the file: Caliper's timer convention, values like 5e-06 are seconds
    assert ens.meta["units"] == dict.fromkeys(ens.exc_metrics, "s")
    assert all("seconds" in why for why in ens.meta["units_assumed"].values())
    p = ens.profiles
    assert p.loc[0, "profile"] == -3273560564324184785
    assert p.loc[0, "profile_file"] == "datasets/user/cR47_HA1IggUPhv67_0.cali"
    assert set(p["user"]) == {"alice", "bob", "carol", "dave", "eve", "frank", "grace", "heidi"}
    assert p["problem_size"].value_counts().to_dict() == {
        "10": 86,
        "30": 44,
        "40": 17,
        "50": 15,
        "20": 10,
    }
    assert p["mpi.world.size"].dropna().tolist() == ["1"]  # 171 nulls
    main = int(np.flatnonzero(ens.tree.names == "main")[0])
    kids = sorted(ens.tree.names[ens.tree.children(main)])
    assert kids == ["MPI_Barrier", "MPI_Reduce", "lulesh.cycle"]


def test_matches_thicket(ens, tk):
    # the same profiles with the same metadata
    assert sorted(ens.profiles["profile"]) == sorted(tk.profile)
    md = tk.metadata
    ours = ens.profiles.set_index("profile").loc[md.index, md.columns]
    pd.testing.assert_frame_equal(
        ours.astype(object).where(ours.notna(), None),
        md.astype(object).where(md.notna(), None),
        check_names=False,
    )
    files = {int(k): v for k, v in tk.profile_mapping.items()}
    assert all(files[p] == f for p, f in zip(ens.profiles["profile"], ens.profiles["profile_file"]))
    # every recorded inclusive value is the derived inclusive value, per call path and profile
    df = tk.dataframe.reset_index()
    df["callpath"] = df["node"].map(lambda n: "/".join(x.frame["name"] for x in n.path()))
    d = ens.long_table.reset_index()
    d["callpath"] = ens.tree.callpaths.to_numpy()[d["node"]]
    d["profile"] = ens.profiles["profile"].to_numpy()[d["profile"]]
    d = d.set_index(["callpath", "profile"])
    for m in tk.inc_metrics:
        ours = d[m if m in ens.exc_metrics else m.replace("inclusive#", "", 1) + " (inc)"]
        theirs = df.set_index(["callpath", "profile"])[m]
        assert len(theirs) == 3278
        np.testing.assert_allclose(ours.loc[theirs.index].to_numpy(), theirs.to_numpy(), rtol=1e-9)


def test_graph_errors(tmp_path):
    doc = json.loads(TK.read_text())
    doc["graph"][0]["8"]["children"] = [99]
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(doc))
    with pytest.raises(cctviz.ProfileError, match="node 99 is not in the graph"):
        cctviz.read(p)
    doc = json.loads(TK.read_text())
    doc["dataframe"][5]["profile"] = 12345
    p.write_text(json.dumps(doc))
    with pytest.raises(cctviz.ProfileError, match="not in the profile list"):
        cctviz.read(p)


def test_bad_input(tmp_path):
    stats = fuzz_sample(TK, "thicket-json", tmp_path, n=40)
    assert stats["truncate:error"] == 8
