"""speedscope and folded writers: what is written reads back as the same tree
(call paths and metric), for the real Hatchet/Caliper samples and random trees."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings

import cctviz
from cctviz import Ensemble
from cctviz.writers.folded import default_scale
from tests.conftest import CALIPER_JSON, HATCHET_JSON
from tests.hypothesis_profiles import examples
from tests.strategies import trees

SAMPLES = [HATCHET_JSON, *CALIPER_JSON]


def per_path(obj, metric):
    """Exclusive ``metric`` summed per (profile, call path); a Tree is profile 0."""
    if isinstance(obj, Ensemble):
        r = obj.exclusive_rows
        df = pd.DataFrame(
            {
                "profile": r["profile"].to_numpy(),
                "path": obj.tree.callpaths.to_numpy()[r["node"].to_numpy()],
                "v": r[metric].to_numpy(np.float64),
            }
        )
    else:
        df = pd.DataFrame(
            {"profile": 0, "path": obj.callpaths.to_numpy(), "v": obj.metrics[metric]}
        )
    return df.groupby(["profile", "path"])["v"].sum()


def _positive(s):
    return s[s > 0].sort_index()


@pytest.mark.parametrize("kind", ["sampled", "evented"])
@pytest.mark.parametrize("src", SAMPLES, ids=lambda p: p.name)
def test_speedscope_round_trip_real_samples(tmp_path, src, kind):
    obj = cctviz.read(src)
    metric = "time"
    p = cctviz.write(
        obj, tmp_path / "x.speedscope.json", format="speedscope", metric=metric, type=kind
    )
    back = cctviz.read(p, metric=metric)
    assert type(back) is type(obj)
    want, got = per_path(obj, metric), per_path(back, metric)
    if kind == "evented":  # every node is written, zero-length ones too
        tree = obj.tree if isinstance(obj, Ensemble) else obj
        btree = back.tree if isinstance(back, Ensemble) else back
        assert set(btree.callpaths) == set(tree.callpaths)
        assert len(btree) == len(set(tree.callpaths))
    want, got = _positive(want), _positive(got)
    assert want.index.equals(got.index)
    assert np.allclose(got.to_numpy(), want.to_numpy(), rtol=1e-9, atol=1e-9 * want.abs().max())


@pytest.mark.parametrize("src", SAMPLES, ids=lambda p: p.name)
def test_folded_round_trip_real_samples(tmp_path, src):
    obj = cctviz.read(src)
    p = cctviz.write(obj, tmp_path / "x.folded", format="folded", metric="time")
    back = cctviz.read(p)
    assert isinstance(back, cctviz.Tree)
    summed = per_path(obj, "time").groupby(level="path").sum()  # folded: profiles summed
    scale = default_scale(summed.to_numpy())
    want = np.rint(summed * scale)
    want = want[want > 0].sort_index()
    got = _positive(per_path(back, "samples").droplevel("profile"))
    assert want.index.equals(got.index)
    assert np.array_equal(got.to_numpy(), want.to_numpy())


def test_written_speedscope_is_schema_shaped(tmp_path):
    t = cctviz.read(CALIPER_JSON[2])  # seconds
    import json

    for kind in ("sampled", "evented"):
        p = cctviz.write(t, tmp_path / f"{kind}.json", format="speedscope", type=kind)
        doc = json.loads(p.read_text())
        assert doc["$schema"] == "https://www.speedscope.app/file-format-schema.json"
        assert set(doc) <= {
            "$schema",
            "shared",
            "profiles",
            "name",
            "activeProfileIndex",
            "exporter",
        }
        assert all(set(f) <= {"name", "file", "line", "col"} for f in doc["shared"]["frames"])
        (prof,) = doc["profiles"]
        assert prof["type"] == kind and prof["unit"] == "seconds"
        if kind == "sampled":
            assert (
                len(prof["samples"]) == len(prof["weights"]) == int((t.metrics["time"] > 0).sum())
            )
            assert prof["endValue"] == pytest.approx(t.metrics["time"].sum())
        else:
            ats = [e["at"] for e in prof["events"]]
            assert ats == sorted(ats) and len(ats) == 2 * len(t)
            assert prof["endValue"] == pytest.approx(t.metrics["time (inc)"][t.roots].sum())


def test_folded_names_are_escaped(tmp_path):
    t = cctviz.Tree.from_parents(
        [-1, 0, 0], ["main", "a;b", "two\nlines"], {"samples": [1.0, 2.0, 3.0]}
    )
    p = cctviz.write(t, tmp_path / "x.folded", format="folded")
    assert p.read_text() == "main 1\nmain;a:b 2\nmain;two lines 3\n"
    back = cctviz.read(p)
    assert back.names.tolist() == ["main", "a:b", "two lines"]


def test_folded_scale_for_fractional_values(tmp_path):
    t = cctviz.Tree.from_parents([-1, 0], ["main", "f"], {"time": [0.0042, 1.25]})
    assert cctviz.writers.to_folded(t) == ["main 4", "main;f 1250"]  # x 1e3: 4.2 >= 1
    assert cctviz.writers.to_folded(t, scale=100) == ["main;f 125"]  # 0.42 rounds to 0


def _assert_same(a, b, metric_a, metric_b):
    pa, pb = _positive(per_path(a, metric_a)), _positive(per_path(b, metric_b))
    assert pa.index.equals(pb.index)
    assert np.allclose(pa.to_numpy(), pb.to_numpy())


@settings(
    max_examples=examples(40),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(t=trees())
def test_round_trip_random_trees(tmp_path, t):
    positive = bool((t.metrics["time"] > 0).any())
    sp = cctviz.write(t, tmp_path / "r.json", format="speedscope", metric="time")
    if positive:  # else no sample is written, and a file without samples is an error
        _assert_same(t, cctviz.read(sp, metric="time"), "time", "time")
    ev = cctviz.write(t, tmp_path / "e.json", format="speedscope", metric="time", type="evented")
    back = cctviz.read(ev, metric="time")
    _assert_same(t, back, "time", "time")
    assert set(back.callpaths) == set(t.callpaths)
    fo = cctviz.write(t, tmp_path / "r.folded", format="folded", metric="time")
    if positive:
        # a file of one-frame stacks holds no ';', which detection does not claim
        _assert_same(t, cctviz.read(fo, format="folded"), "time", "samples")
    # a random ensemble of two copies: one speedscope profile each
    ens = cctviz.Ensemble.from_trees([t, t], profiles={"rank": [0, 1]})
    if positive:
        ep = cctviz.write(ens, tmp_path / "ens.json", format="speedscope", metric="time")
        eback = cctviz.read(ep, metric="time")
        assert isinstance(eback, Ensemble) and eback.profiles["rank"].tolist() == [0, 1]
        _assert_same(ens, eback, "time", "time")


# ---------------------------------------------------------------- aggregation rules
def _mixed():
    """A sum, a peak, a minimum and a per-node value (named like an inclusive one)."""
    return cctviz.Tree.from_parents(
        [-1, 0, 0],
        ["main", "f", "g"],
        {
            "mem_peak": [5.0, 9.0, 4.0],
            "time": [1.0, 2.0, 3.0],
            "free_min": [8.0, 6.0, 7.0],
            "BlockSize (inc)": [256.0, 128.0, 64.0],
            "ratio": [0.5, 0.25, 1.0],
        },
        meta={
            "aggregation": {
                "mem_peak": "max",
                "free_min": "min",
                "BlockSize (inc)": "none",
                "ratio": "none",
            },
            "units": {"time": "ms", "mem_peak": "MB"},
        },
    )


@pytest.mark.parametrize("fmt", ["speedscope", "folded"])
@pytest.mark.parametrize(
    "metric", ["mem_peak", "mem_peak (inc)", "free_min", "BlockSize (inc)", "ratio"]
)
def test_additive_formats_refuse_metrics_that_do_not_add_up(tmp_path, fmt, metric):
    t = _mixed()
    with pytest.raises(ValueError, match=r"adds values up along each stack.*\['time'\]") as e:
        cctviz.write(t, tmp_path / "x", format=fmt, metric=metric)
    named = metric if metric == "BlockSize (inc)" else metric.removesuffix(" (inc)")
    assert repr(named) in str(e.value)
    assert not (tmp_path / "x").exists()
    ens = Ensemble.from_trees([t, t])
    with pytest.raises(ValueError, match="aggregation rule"):
        cctviz.write(ens, tmp_path / "e", format=fmt, metric=metric)


@pytest.mark.parametrize("fmt", ["speedscope", "folded"])
def test_additive_formats_default_to_a_metric_that_adds_up(tmp_path, fmt):
    t = _mixed()  # its first metric is a peak: the writers pick "time"
    p = cctviz.write(t, tmp_path / "x", format=fmt)
    back = cctviz.read(p, format=fmt, metric="time")
    _assert_same(t, back, "time", "time")
    only_rules = cctviz.Tree.from_parents(
        [-1, 0], ["a", "b"], {"peak": [1.0, 2.0]}, meta={"aggregation": {"peak": "max"}}
    )
    with pytest.raises(ValueError, match="no metric of this tree adds up"):
        cctviz.write(only_rules, tmp_path / "y", format=fmt)


def test_speedscope_writes_sizes_as_bytes(tmp_path):
    t = cctviz.Tree.from_parents(
        [-1, 0], ["main", "alloc"], {"mem": [1.5, 2.0]}, meta={"units": {"mem": "MB"}}
    )
    doc = cctviz.writers.to_speedscope(t)
    assert doc["profiles"][0]["unit"] == "bytes"
    assert doc["profiles"][0]["weights"] == [1.5e6, 2.0e6]
    back = cctviz.read(cctviz.write(t, tmp_path / "m.json", format="speedscope"))
    assert back.units == {"bytes": "B"} and back.metrics["bytes (inc)"].iloc[0] == 3.5e6


def test_hatchet_json_keeps_rules_and_no_inclusive_column_for_none_metrics():
    t = _mixed()
    doc = cctviz.writers.to_hatchet_json(t)
    assert doc["aggregation"] == {
        "mem_peak": "max",
        "free_min": "min",
        "BlockSize (inc)": "none",
        "ratio": "none",
    }
    assert doc["units"] == {"time": "ms", "mem_peak": "MB"}
    assert "ratio (inc)" not in doc["inclusive_metrics"]
    assert (
        "ratio (inc)" not in doc["dataframe"][0]
        and "BlockSize (inc) (inc)" not in doc["dataframe"][0]
    )
    assert doc["inclusive_metrics"] == ["mem_peak (inc)", "time (inc)", "free_min (inc)"]
    rows = {r["name"]: r for r in doc["dataframe"]}
    assert rows["main"]["mem_peak (inc)"] == 9.0  # a max over the subtree, not 18
    assert rows["main"]["free_min (inc)"] == 6.0
    assert rows["main"]["time (inc)"] == 6.0
    lit = cctviz.writers.to_literal(t)[0]["metrics"]
    assert "ratio (inc)" not in lit and lit["mem_peak (inc)"] == 9.0
    ens = Ensemble.from_trees([t, t], profiles={"rank": [0, 1]})
    edoc = cctviz.writers.to_hatchet_json(ens)
    assert edoc["aggregation"]["mem_peak"] == "max"
    assert all("ratio (inc)" not in r for r in edoc["dataframe"])


def test_hatchet_json_round_trip_keeps_rules_and_units(tmp_path):
    """Written and read back, a peak stays a max and a constant keeps no inclusive column."""
    t = _mixed()
    path = tmp_path / "t.json"
    cctviz.write(t, path, format="hatchet-json")
    back = cctviz.read(path)
    assert back.aggregation == t.aggregation
    assert back.units == t.units
    assert sorted(back.metrics.columns) == sorted(t.metrics.columns)  # (summed times first)
    cols = list(t.metrics.columns)
    np.testing.assert_allclose(back.metrics[cols].to_numpy(), t.metrics.to_numpy(), equal_nan=True)
