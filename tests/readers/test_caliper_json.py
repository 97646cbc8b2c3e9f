"""Every Caliper json-split sample loads, with the content Hatchet reads from it."""

import json
import warnings

import numpy as np
import pandas as pd
import pytest

import cctviz
from cctviz import Ensemble
from tests.conftest import CALIPER_JSON, DATA, LULESH_SCALING

ALL = CALIPER_JSON + LULESH_SCALING
from tests.peers import hatchet  # noqa: E402  (imported when a test uses it)


def test_every_sample_is_found():
    assert len(CALIPER_JSON) == 4 and len(LULESH_SCALING) == 8


def _hatchet_frame(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gf = hatchet.GraphFrame.from_caliper(str(path), node_ordering=False)
    df = gf.dataframe.reset_index()
    # Hatchet's Caliper reader links children but not parents, so walk down from the roots
    paths, stack = {}, [(r, "") for r in gf.graph.roots]
    while stack:
        n, prefix = stack.pop()
        f = n.frame
        name = f["name"] if "name" in f.attrs else f"{f['file'].split('/')[-1]}:{f['line']}"
        paths[n] = prefix + name
        stack += [(c, paths[n] + "/") for c in n.children]
    df["callpath"] = df["node"].map(paths)
    return gf, df


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.name)
def test_caliper_file_matches_hatchet(path):
    obj = cctviz.read(path)
    doc = json.loads(path.read_text())
    ranks = {row[doc["columns"].index("mpi.rank")] for row in doc["data"]}
    if len(ranks) > 1:
        assert isinstance(obj, Ensemble)
        assert sorted(obj.profiles["rank"]) == sorted(ranks)
        tree = obj.tree
    else:
        assert isinstance(obj, cctviz.Tree)
        tree = obj
    gf, hdf = _hatchet_frame(path)
    assert len(tree) == len(gf.graph)
    # per (call path, rank) exclusive time equals Hatchet's
    ours = (
        obj.long_table.reset_index()
        if isinstance(obj, Ensemble)
        else obj.metrics.reset_index().assign(profile=0)
    )
    ours["callpath"] = tree.callpaths.to_numpy()[ours["node"].to_numpy()]
    if isinstance(obj, Ensemble):
        ours["rank"] = obj.profiles["rank"].to_numpy()[ours["profile"].to_numpy()]
    else:
        ours["rank"] = hdf["rank"].iloc[0]
    a = ours.groupby(["callpath", "rank"])["time"].sum()
    b = hdf.groupby(["callpath", "rank"])["time"].sum()
    b = b[b != 0]
    a = a[a != 0]
    pd.testing.assert_series_equal(a.sort_index(), b.sort_index().astype(float), check_names=False)


@pytest.mark.parametrize(
    "path",
    [
        p
        for p in ALL
        if "inclusive#sum#time.duration" in p.read_text()[-4000:] or "lulesh" in p.name
    ],
    ids=lambda p: p.name,
)
def test_derived_inclusive_equals_recorded_inclusive(path):
    obj = cctviz.read(path)
    doc = json.loads(path.read_text())
    cols = doc["columns"]
    if "inclusive#sum#time.duration" not in cols:
        pytest.skip("no recorded inclusive column")  # pragma: no cover - selection above
    ci, cr, cp = (
        cols.index("inclusive#sum#time.duration"),
        cols.index("mpi.rank"),
        cols.index("path"),
    )
    tree = obj.tree if isinstance(obj, Ensemble) else obj
    # Caliper node index -> our node, via call path
    labels = {}
    for i, nd in enumerate(doc["nodes"]):
        p = nd.get("parent")
        labels[i] = (labels[p] + "/" if p is not None else "") + nd["label"]
    ids = dict(zip(tree.callpaths, range(len(tree))))
    for row in doc["data"]:
        if row[cp] is None:
            continue
        node = ids[labels[row[cp]]]
        if isinstance(obj, Ensemble):
            prof = int(np.flatnonzero(obj.profiles["rank"].to_numpy() == row[cr])[0])
            got = obj.long_table.loc[(node, prof), "time (inc)"]
        else:
            got = obj.metrics.loc[node, "time (inc)"]
        assert np.isclose(got, row[ci], rtol=1e-9), (labels[row[cp]], row)


def test_statement_children_and_attributes():
    cpi = cctviz.read(DATA / "hatchet/caliper-cpi-json/cpi-callpath-profile.json")
    t = cpi.tree
    spin = int(np.flatnonzero(t.names == "pthread_spin_lock")[0])
    kids = t.children(spin)
    assert sorted(t.names[kids]) == [f"pthread_spin_lock.S:{n}" for n in (26, 33, 34, 35)]
    assert set(t.nodes.loc[kids, "kind"]) == {"statement"}
    assert "module" in t.nodes and "file" in t.nodes
    assert set(cpi.exc_metrics) == {"count", "time"}


def test_run_metadata_and_units():
    t = cctviz.read(DATA / "hatchet/caliper-ordered-json/caliper-region-node-order.json")
    assert t.meta["cluster"] == "quartz" and t.meta["problem_size"] == 30
    assert t.units == {"time": "s"}
    assert "Node order" not in t.exc_metrics


def test_read_ensemble_of_scaling_runs():
    meta = {
        str(p): {"cores": int(p.stem.split("-")[-1].replace("cores", "").replace("core", ""))}
        for p in LULESH_SCALING
    }
    ens = cctviz.read_ensemble([str(p) for p in LULESH_SCALING], metadata=meta, progress=False)
    assert ens.n_profiles == sum(int(x) for x in (1, 8, 27, 64, 125, 216, 343, 512))
    assert set(ens.profiles["cores"]) == {1, 8, 27, 64, 125, 216, 343, 512}
    by = ens.groupby("cores")
    assert by[512].n_profiles == 512 and by[1].n_profiles == 1
    # per-file totals survive unification
    for p in LULESH_SCALING[:3]:
        one = cctviz.read(p)
        sel = ens.select(ens.profiles["file"] == str(p))
        assert np.isclose(
            sel.exclusive_rows["time"].sum(),
            one.exclusive_rows["time"].sum()
            if isinstance(one, Ensemble)
            else one.metrics["time"].sum(),
        )
    s = ens.stats("time (inc)")
    main = int(np.flatnonzero(ens.tree.names == "main")[0])
    assert s.loc[main, "count"] == ens.n_profiles
    assert (
        s.loc[main, "max"]
        >= s.loc[main, "q75"]
        >= s.loc[main, "median"]
        >= s.loc[main, "q25"]
        >= s.loc[main, "min"]
    )


# ---------------------------------------------------------------- rules, units, nothing lost
LULESH_JSON = DATA / "hatchet/caliper-lulesh-json/lulesh-annotation-profile.json"


def test_lulesh_json_split_units_are_an_assumption_in_microseconds():
    ens = cctviz.read(LULESH_JSON)  # values like 21948.0 and 5882425.0, no unit in the file
    assert ens.meta["units"] == {"time": "us"}
    why = ens.meta["units_assumed"]["time"]
    assert "no unit in the file" in why and "whole numbers: microseconds" in why
    assert ens.aggregation == {"time": "sum"}
    from cctviz.model.units import format_value, unit_label

    main = int(np.flatnonzero(ens.tree.names == "main")[0])
    assert unit_label("time (inc)", ens.tree.units) == "time (inc) [us]"
    assert format_value(ens.long_table.loc[(main, 0), "time (inc)"], "us") == "5.88 s"


@pytest.mark.parametrize("path", LULESH_SCALING, ids=lambda p: p.name)
def test_every_scaling_run_has_its_unit(path):
    obj = cctviz.read(path)
    assert obj.meta["units"] == {"time": "us"} and set(obj.meta["units_assumed"]) == {"time"}


def _json_split(tmp_path, doc, name="x.json"):
    p = tmp_path / name
    p.write_text(json.dumps(doc))
    return p


def _lulesh_doc():
    return json.loads(LULESH_JSON.read_text())


@pytest.mark.parametrize(
    ("scale", "attr", "unit"),
    [(1e-6, "sum#time.duration", "s"), (1.0, "sum#time.duration.ns", "ns")],
)
def test_other_timer_conventions(tmp_path, scale, attr, unit):
    doc = _lulesh_doc()
    j = doc["columns"].index("sum#time.duration")
    ci = doc["columns"].index("inclusive#sum#time.duration")
    doc["columns"][j] = attr
    for row in doc["data"]:
        row[j] = round(row[j] * scale, 6)
        del row[ci]
    del doc["columns"][ci], doc["column_metadata"][ci]
    ens = cctviz.read(_json_split(tmp_path, doc))
    name = "time" if attr == "sum#time.duration" else attr
    assert ens.meta["units"] == {name: unit} and name in ens.meta["units_assumed"]


@pytest.mark.filterwarnings("error")
def test_a_timer_that_fits_no_convention_has_no_unit(tmp_path):
    doc = _lulesh_doc()
    for c in ("sum#time.duration", "inclusive#sum#time.duration"):
        j = doc["columns"].index(c)
        for row in doc["data"]:
            row[j] = row[j] * 1.2345e-7  # neither whole microseconds nor whole us * 1e-6
    ens = cctviz.read(_json_split(tmp_path, doc))
    from cctviz.model.units import unit_label

    assert "units" not in ens.meta and "units_assumed" not in ens.meta
    assert unit_label("time (inc)", ens.tree.units) == "time (inc) [unit unknown]"


def test_a_recorded_inclusive_value_that_disagrees_is_said(tmp_path):
    doc = _lulesh_doc()
    ci = doc["columns"].index("inclusive#sum#time.duration")
    cp = doc["columns"].index("path")
    row = next(r for r in doc["data"] if r[cp] is not None)
    row[ci] += 1000.0
    with pytest.warns(UserWarning, match=r"'inclusive#sum#time.duration' differs .* in 1 record"):
        cctviz.read(_json_split(tmp_path, doc))


def _with_label_column(values):
    """The LULESH json-split with one more label column, ``phase``: ``values[k]``
    for the k-th data row that has a path (node indices into ``nodes``)."""
    doc = _lulesh_doc()
    doc["nodes"] += [{"label": "init", "column": "phase"}, {"label": "solve", "column": "phase"}]
    first = len(doc["nodes"]) - 2
    doc["columns"].append("phase")
    doc["column_metadata"].append({"is_value": False})
    cp = doc["columns"].index("path")
    k = 0
    for row in doc["data"]:
        v = None
        if row[cp] is not None:
            v = values(k, first)
            k += 1
        row.append(v)
    return doc


def test_labels_become_node_attributes_and_conflicts_are_said(tmp_path):
    # the same label for every record: a node attribute, no warning
    doc = _with_label_column(lambda k, first: first)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ens = cctviz.read(_json_split(tmp_path, doc))
    assert set(ens.tree.nodes["phase"].dropna()) == {"init"}
    # ranks that disagree: the first label is kept, and the warning says so
    doc = _with_label_column(lambda k, first: first + k % 2)
    with pytest.warns(UserWarning, match=r"label 'phase' differs between records of \d+ node"):
        ens = cctviz.read(_json_split(tmp_path, doc, "y.json"))
    assert set(ens.tree.nodes["phase"].dropna()) == {"init"}


def test_a_label_that_is_no_node_index_is_refused(tmp_path):
    doc = _with_label_column(lambda k, first: "init" if k == 3 else first)
    with pytest.raises(cctviz.ProfileError, match="phase value 'init' is not a node index"):
        cctviz.read(_json_split(tmp_path, doc))


def test_a_text_value_column_is_a_node_attribute(tmp_path):
    doc = _lulesh_doc()
    doc["columns"].append("my.note")
    doc["column_metadata"].append({"is_value": True})
    for row in doc["data"]:
        row.append("hello" if row[doc["columns"].index("mpi.rank")] == 0 else None)
    ens = cctviz.read(_json_split(tmp_path, doc))
    assert "my.note" not in ens.exc_metrics
    assert set(ens.tree.nodes["my.note"].dropna()) == {"hello"}
    # numbers and text in one value column: refused, not turned into NaN
    doc["data"][-1][-1] = 3.0
    with pytest.raises(cctviz.ProfileError, match="'my.note' holds 'hello', not a number"):
        cctviz.read(_json_split(tmp_path, doc, "y.json"))


@pytest.mark.parametrize(
    ("sample", "assumed"),
    [
        ("caliper-cpi-json/cpi-callpath-profile.json", True),  # 309432.0: whole microseconds
        ("caliper-lulesh-json/lulesh-annotation-profile.json", True),
        ("caliper-ordered-json/caliper-region-node-order.json", False),  # attribute.unit sec
        ("caliper-ordered-duplicate-json/caliper-region-dup-node-order.json", False),
    ],
)
def test_every_json_sample_has_a_unit_for_its_time(sample, assumed):
    obj = cctviz.read(DATA / "hatchet" / sample)
    assert obj.meta["units"] == {"time": "us" if assumed else "s"}
    assert ("units_assumed" in obj.meta) is assumed
    assert obj.aggregation["time"] == "sum"
