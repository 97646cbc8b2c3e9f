"""speedscope files: hand-made files that follow the schema (a py-spy-like
sampled file with two threads, an evented one in milliseconds), errors, and
files written by cctviz's writer from the real samples."""

import json
import warnings

import numpy as np
import pytest

import cctviz
from cctviz import Ensemble, ProfileError
from cctviz.readers import detect
from tests.conftest import CALIPER_JSON, DATA, HATCHET_JSON
from tests.readers.fuzz import assert_wrong_format_rejected, fuzz_sample

SCHEMA = "https://www.speedscope.app/file-format-schema.json"

# as py-spy 0.3 writes it: unit "none", weight 1 per sample, one profile per thread
PYSPY = {
    "$schema": SCHEMA,
    "profiles": [
        {
            "type": "sampled",
            "name": "MainThread",
            "unit": "none",
            "startValue": 0,
            "endValue": 6,
            "samples": [[0, 1, 2], [0, 1, 2], [0, 1, 3], [0, 1], [0, 1, 2], [0, 4]],
            "weights": [1, 1, 1, 1, 1, 1],
        },
        {
            "type": "sampled",
            "name": "Thread 0x7f3a",
            "unit": "none",
            "startValue": 0,
            "endValue": 3,
            "samples": [[5, 6], [5, 6], [5]],
            "weights": [1, 1, 1],
        },
    ],
    "shared": {
        "frames": [
            {"name": "<module>", "file": "train.py", "line": 1},
            {"name": "main", "file": "train.py", "line": 40},
            {"name": "forward", "file": "model.py", "line": 10},
            {"name": "backward", "file": "torch/_tensor.py", "line": 480},
            {"name": "load_batch", "file": "data.py", "line": 8},
            {"name": "_bootstrap", "file": "threading.py", "line": 995},
            {"name": "prefetch", "file": "data.py", "line": 30},
        ]
    },
    "activeProfileIndex": None,
    "exporter": "py-spy@0.3.14",
    "name": "py-spy profile",
}

# an evented profile in milliseconds: main [0, 10] calls a [1, 4] (a calls b [2, 3])
# and a again [5, 9]
EVENTED = {
    "$schema": SCHEMA,
    "shared": {"frames": [{"name": "main"}, {"name": "a"}, {"name": "b"}]},
    "profiles": [
        {
            "type": "evented",
            "name": "tracer",
            "unit": "milliseconds",
            "startValue": 0,
            "endValue": 10,
            "events": [
                {"type": "O", "frame": 0, "at": 0},
                {"type": "O", "frame": 1, "at": 1},
                {"type": "O", "frame": 2, "at": 2},
                {"type": "C", "frame": 2, "at": 3},
                {"type": "C", "frame": 1, "at": 4},
                {"type": "O", "frame": 1, "at": 5},
                {"type": "C", "frame": 1, "at": 9},
                {"type": "C", "frame": 0, "at": 10},
            ],
        }
    ],
    "name": "hand-made trace",
    "exporter": "tests",
}


def _dump(tmp_path, doc, name="p.speedscope.json"):
    p = tmp_path / name
    p.write_text(json.dumps(doc))
    return p


def test_pyspy_like_sampled_threads_make_an_ensemble(tmp_path):
    p = _dump(tmp_path, PYSPY)
    assert detect(p) == "speedscope"
    ens = cctviz.read(p)
    assert isinstance(ens, Ensemble) and ens.n_profiles == 2
    assert ens.profiles["profile_name"].tolist() == ["MainThread", "Thread 0x7f3a"]
    assert ens.exc_metrics == ["samples"] and ens.meta["exporter"] == "py-spy@0.3.14"
    t = ens.tree
    assert len(t) == 7 and sorted(t.names[t.roots]) == ["<module>", "_bootstrap"]
    fwd = int(np.flatnonzero(t.names == "forward")[0])
    assert t.nodes.loc[fwd, "file"] == "model.py" and t.nodes.loc[fwd, "line"] == 10
    data = ens.long_table
    assert data.loc[(fwd, 0), "samples"] == 3
    root = int(np.flatnonzero(t.names == "<module>")[0])
    assert data.loc[(root, 0), "samples (inc)"] == 6
    boot = int(np.flatnonzero(t.names == "_bootstrap")[0])
    assert data.loc[(boot, 1), "samples (inc)"] == 3 and data.loc[(boot, 1), "samples"] == 1


def test_evented_milliseconds(tmp_path):
    p = _dump(tmp_path, EVENTED)
    assert detect(p) == "speedscope"
    t = cctviz.read(p)
    assert t.units == {"time": "ms"} and t.meta["profile_name"] == "tracer"
    assert t.meta["name"] == "hand-made trace"
    m = t.metrics.set_index(t.callpaths)
    assert m.loc["main", "time (inc)"] == 10 and m.loc["main", "time"] == 3
    assert m.loc["main/a", "time"] == 6 and m.loc["main/a", "calls"] == 2
    assert m.loc["main/a/b", "time"] == 1 and m.loc["main/a/b", "calls"] == 1


def test_unclosed_frames_close_at_end_value_flagged(tmp_path):
    """A profile cut before its frames closed (a trace stopped mid-call): closed at
    endValue, but said so (a warning, meta), never silently."""
    doc = json.loads(json.dumps(EVENTED))
    doc["profiles"][0]["events"] = doc["profiles"][0]["events"][:6]  # a reopened, never closed
    with pytest.warns(UserWarning, match="still open.*2 in 'tracer'"):
        t = cctviz.read(_dump(tmp_path, doc))
    assert t.meta["closed_at_end"] == {"tracer": 2}
    m = t.metrics.set_index(t.callpaths)
    assert m.loc["main/a", "time"] == 2 + 5 and m.loc["main", "time (inc)"] == 10
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a whole profile: no warning, no flag
        assert "closed_at_end" not in cctviz.read(_dump(tmp_path, EVENTED)).meta


def test_evented_profile_without_a_unit_is_time(tmp_path):
    """An evented profile's values are spans of its ``at``: time, even where the
    file gives no unit (then none is claimed), never "samples"."""
    doc = json.loads(json.dumps(EVENTED))
    doc["profiles"][0]["unit"] = "none"
    t = cctviz.read(_dump(tmp_path, doc))
    assert t.exc_metrics == ["time", "calls"] and t.units == {}
    assert t.metrics.set_index(t.callpaths).loc["main", "time (inc)"] == 10


@pytest.fixture(scope="module")
def pyspy_speedscope(tmp_path_factory):
    from tests.readers.pyspy import pyspy_record

    return pyspy_record(tmp_path_factory.mktemp("pyspy"), "speedscope")


@pytest.mark.slow
def test_real_pyspy_speedscope_keeps_every_sample(pyspy_speedscope, tmp_path):
    """py-spy's speedscope file (one sampled profile per thread, weights in
    seconds); a sample whose stack is empty counts under ``(no frames)``."""
    p, samples = pyspy_speedscope
    doc = json.loads(p.read_text())
    assert doc["exporter"].startswith("py-spy@")
    profs = doc["profiles"]
    assert sum(len(q["samples"]) for q in profs) == samples
    ens = cctviz.read(p)
    ens = ens if isinstance(ens, cctviz.Ensemble) else cctviz.Ensemble.from_trees([ens])
    weights = [sum(q["weights"]) for q in profs]
    assert ens.values("time").sum(axis=0) == pytest.approx(weights, rel=1e-9)
    assert ens.tree.units["time"] == "s"
    # a thread sampled outside any Python frame: py-spy writes an empty stack
    profs[0]["samples"].append([])
    profs[0]["weights"].append(profs[0]["weights"][0])
    q = tmp_path / "with-empty.json"
    q.write_text(json.dumps(doc))
    got = cctviz.read(q)
    got = got if isinstance(got, cctviz.Ensemble) else cctviz.Ensemble.from_trees([got])
    assert got.values("time").sum(axis=0)[0] == pytest.approx(sum(profs[0]["weights"]))
    (nf,) = np.flatnonzero(got.tree.names == "(no frames)")
    assert got.tree.nodes["parent"][nf] == -1
    empty = sum(w for st, w in zip(profs[0]["samples"], profs[0]["weights"]) if not st)
    assert got.values("time")[nf, 0] == pytest.approx(empty)


def test_seconds_and_milliseconds_profiles_share_one_unit(tmp_path):
    doc = json.loads(json.dumps(EVENTED))
    second = json.loads(json.dumps(doc["profiles"][0]))
    second.update(unit="seconds", name="other")
    doc["profiles"].append(second)
    ens = cctviz.read(_dump(tmp_path, doc))
    assert ens.tree.units == {"time": "ms"}
    main = int(np.flatnonzero(ens.tree.names == "main")[0])
    assert ens.long_table.loc[(main, 1), "time (inc)"] == pytest.approx(10_000)


@pytest.mark.parametrize(
    "change, where",
    [
        (lambda d: d["profiles"][0]["events"][3].update(frame=1), "profiles[0].events[3]"),
        (lambda d: d["profiles"][0]["events"][2].update(at=0.5), "profiles[0].events[2].at"),
        (lambda d: d["profiles"][0]["events"][2].update(frame=7), "profiles[0].events[2].frame"),
        (lambda d: d["profiles"][0].update(unit="hours"), "profiles[0].unit"),
        (lambda d: d["profiles"][0].update(type="flat"), "profiles[0].type"),
        (lambda d: d["shared"]["frames"][1].pop("name"), "shared.frames[1]"),
        (lambda d: d.pop("shared"), "shared"),
    ],
)
def test_bad_evented_files_name_the_place(tmp_path, change, where):
    doc = json.loads(json.dumps(EVENTED))
    change(doc)
    with pytest.raises(ProfileError) as e:
        cctviz.read(_dump(tmp_path, doc), format="speedscope")
    assert e.value.where == where


@pytest.mark.parametrize(
    "change, where",
    [
        (lambda d: d["profiles"][0]["samples"][2].append(99), "profiles[0].samples[2]"),
        (lambda d: d["profiles"][0]["weights"].pop(), "profiles[0].weights"),
        (lambda d: d["profiles"][0]["weights"].__setitem__(1, "x"), "profiles[0].weights[1]"),
    ],
)
def test_bad_sampled_files_name_the_place(tmp_path, change, where):
    doc = json.loads(json.dumps(PYSPY))
    change(doc)
    with pytest.raises(ProfileError) as e:
        cctviz.read(_dump(tmp_path, doc), format="speedscope")
    assert e.value.where == where


@pytest.mark.parametrize(
    "sample",
    [
        HATCHET_JSON,
        CALIPER_JSON[0],
        DATA / "hatchet/pyinstrument-hatchet-json/pyinstrument-hatchet-profile.json",
    ],
    ids=lambda p: p.name,
)
def test_foreign_files_rejected(sample):
    assert_wrong_format_rejected(sample, "speedscope")


def test_written_ensemble_keeps_ranks(tmp_path):
    ens = cctviz.read(CALIPER_JSON[1])  # lulesh, several ranks
    p = cctviz.write(ens, tmp_path / "l.json", format="speedscope", metric="time")
    back = cctviz.read(p, metric="time")
    assert isinstance(back, Ensemble) and back.n_profiles == ens.n_profiles
    assert back.profiles["rank"].tolist() == ens.profiles["rank"].tolist()


@pytest.mark.parametrize("doc", [PYSPY, EVENTED], ids=["sampled", "evented"])
def test_fuzz_hand_made(tmp_path, doc):
    p = _dump(tmp_path, doc)
    stats = fuzz_sample(p, "speedscope", tmp_path / "fz", n=50)
    assert stats["truncate:error"] == 10


@pytest.mark.parametrize("kind", ["sampled", "evented"])
def test_fuzz_written(tmp_path, kind):
    p = cctviz.write(cctviz.read(HATCHET_JSON), tmp_path / "h.json", format="speedscope", type=kind)
    stats = fuzz_sample(p, "speedscope", tmp_path / "fz", n=50)
    assert stats["truncate:error"] == 10


def test_units_are_the_files_and_metrics_sum(tmp_path):
    ens = cctviz.read(_dump(tmp_path, PYSPY))
    assert ens.aggregation == {"samples": "sum"} and ens.tree.units == {}  # samples: a count
    t = cctviz.read(_dump(tmp_path, EVENTED, "e.json"))
    assert t.units == {"time": "ms"} and "units_assumed" not in t.meta
    assert t.aggregation == {"time": "sum", "calls": "sum"}
    doc = json.loads(json.dumps(EVENTED))
    doc["profiles"][0]["unit"] = "bytes"
    b = cctviz.read(_dump(tmp_path, doc, "b.json"))
    assert b.units == {"bytes": "B"} and b.aggregation["bytes"] == "sum"


def test_profiles_without_samples_are_named_not_dropped_silently(tmp_path):
    doc = json.loads(json.dumps(PYSPY))
    for name in ("idle 1", "idle 2"):
        doc["profiles"].append(
            {
                "type": "sampled",
                "name": name,
                "unit": "none",
                "startValue": 0,
                "endValue": 0,
                "samples": [],
                "weights": [],
            }
        )
    with pytest.warns(UserWarning, match="'idle 1', 'idle 2'"):
        ens = cctviz.read(_dump(tmp_path, doc))
    assert ens.n_profiles == 2 and ens.meta["empty_profiles"] == ["idle 1", "idle 2"]
