"""ProfilesView on the Python side: columns, validation, dead profiles, export."""

from __future__ import annotations

import numpy as np
import pytest
import traitlets

import cctviz
from cctviz.views.profiles import CLUSTER, ProfilesView
from tests.conftest import DATA, LULESH_SCALING

RAJAPERF = sorted((DATA / "thicket" / "rajaperf").glob("**/*.cali"))


@pytest.fixture(scope="module")
def lulesh():
    return cctviz.read_ensemble(LULESH_SCALING[:4])


@pytest.fixture(scope="module")
def raja():
    return cctviz.read_ensemble(RAJAPERF)


def small(dead: bool = False):
    trees = [
        cctviz.Tree.from_parents(
            [-1, 0, 0], ["main", "solve", "io"], {"time": [1.0, 2.0 + r, 1.0 + (r % 2)]}
        )
        for r in range(5)
    ]
    ens = cctviz.Ensemble.from_trees(trees, profiles={"rank": range(5), "run": list("aabbb")})
    if dead:
        rows = ens.exclusive_rows
        ens = cctviz.Ensemble(ens.tree, rows[rows["profile"] != 2], ens.profiles)
    return ens


def test_columns_and_default_colour_on_real_ensembles(lulesh, raja):
    v = ProfilesView(lulesh)
    assert v.columns == ["rank", "run", "time (inc)", "file", CLUSTER]
    assert v.color_by == "run" and v._data["categories"] == [
        "125cores",
        "1core",
        "216cores",
        "27cores",
    ]
    assert v._data["n"] == lulesh.n_profiles and v._data["explained"][0] > 0.3
    r = ProfilesView(raja)
    assert r.color_by == "variant"  # runs and files are one per profile: no groups
    assert "Total time (inc)" in r.columns and "cluster (metadata)" in r.columns
    r.color_by = "cluster (metadata)"
    assert r._data["categories"] == ["lassen", "quartz"]
    r.x, r.y = "ProblemSizeRunParam", "Total time (inc)"
    assert r._data["y_unit"] == "s" and r._data["explained"] is None
    totals = raja.values("Total time (inc)")[raja.tree.parent < 0].sum(axis=0)
    assert np.allclose(np.asarray(r._data["y"]), totals, rtol=1e-6)


def test_unknown_columns_are_errors_naming_the_choices(lulesh):
    v = ProfilesView(lulesh)
    with pytest.raises(traitlets.TraitError, match=r"no numeric column 'nope'.*'rank'"):
        v.x = "nope"
    with pytest.raises(traitlets.TraitError, match="no numeric column 'file'"):
        v.y = "file"  # a category cannot be an axis
    with pytest.raises(traitlets.TraitError, match=r"color_by: no column 'x'.*'cluster'"):
        v.color_by = "x"
    with pytest.raises(traitlets.TraitError, match="clusters"):
        v.clusters = 0
    with pytest.raises(traitlets.TraitError, match="profile ids"):
        v.selected_profiles = [10**6]
    with pytest.raises(TypeError, match="Ensemble"):
        ProfilesView(lulesh.profile(0))
    with pytest.raises(ValueError, match="inclusive metric"):
        ProfilesView(lulesh, metric="nope")


def test_selection_and_clusters():
    ens = small()
    v = ProfilesView(ens, color_by="cluster", clusters=2)
    v.selected_profiles = [4, 1, 1]
    assert v.selected_profiles == [1, 4]
    assert v.selected["rank"].tolist() == [1, 4]
    assert v._data["color_kind"] == "category" and len(v._data["categories"]) == 2
    assert v.cluster_labels.tolist() == ProfilesView(ens, clusters=2).cluster_labels.tolist()
    v.projection = "mds"
    assert v._data["x_label"].startswith("MDS 1 of time (inc)") and v._data["explained"] is None
    restored = ProfilesView(ens, **v.state)
    assert restored.state == v.state


def test_dead_profiles_are_left_out_and_listed():
    ens = small(dead=True)
    v = ProfilesView(ens)
    assert v._data["n"] == 4
    assert np.asarray(v._data["id"]).tolist() == [0, 1, 3, 4]
    assert v._data["dead"] == ["run b rank 2"]
    assert v.cluster_labels[2] == -1
    assert list(v.coordinates["profile"]) == [0, 1, 3, 4]


def test_tiny_ensembles_are_finite():
    for n in (1, 2):
        trees = [cctviz.Tree.from_parents([-1], ["main"], {"time": [1.0 + r]}) for r in range(n)]
        v = ProfilesView(cctviz.Ensemble.from_trees(trees))
        assert np.isfinite(np.asarray(v._data["x"])).all()
        assert v.color_by == CLUSTER


def test_save_is_deterministic_svg_and_pdf(tmp_path, lulesh):
    v = ProfilesView(lulesh, selected_profiles=[0, 5])
    a = v.save(tmp_path / "a.svg", width="3.5in").read_bytes()
    b = v.save(tmp_path / "b.svg", width="3.5in").read_bytes()
    assert a == b and a.count(b'<circle class="cctviz-dot') == lulesh.n_profiles
    assert a.count(b'aria-selected="true"') == 2 and b'width="252pt"' in a
    pdf = v.save(tmp_path / "a.pdf").read_bytes()
    assert pdf.startswith(b"%PDF") and pdf == v.save(tmp_path / "b.pdf").read_bytes()
    png = v.save(tmp_path / "a.png").read_bytes()
    assert png.startswith(b"\x89PNG")
    html = v.save(tmp_path / "a.html").read_text()
    assert '"kind": "profiles"' in html or '"kind":"profiles"' in html
