"""pstats files: the two real samples (Python 3, Python 2) against Hatchet's
``from_cprofile`` and ``pstats.Stats``; the marshal decoder; fresh profiles."""

import cProfile
import marshal
import profile
import pstats
import warnings

import numpy as np
import pandas as pd
import pytest

import cctviz
from cctviz import ProfileError
from cctviz.readers import detect, head
from cctviz.readers.cprofile import _Marshal, _sniff
from tests.conftest import CALIPER_JSON, DATA, HATCHET_JSON
from tests.readers.fuzz import assert_wrong_format_rejected, fuzz_sample

DIR = DATA / "hatchet/cprofile-hatchet-pstats"
PY3 = DIR / "cprofile-cycle.pstats"
PY2 = DIR / "cprofile-cycle-py2.pstats"
from tests.peers import hatchet  # noqa: E402  (imported when a test uses it)


def per_function(t, col):
    return t.frame.groupby(["file", "line", "name"])[col].sum()


def test_py3_sample_against_pstats():
    t = cctviz.read(PY3)
    st = pstats.Stats(str(PY3))
    assert detect(PY3) == "cprofile" and t.units == {"time": "s"}
    assert len(t) == 12
    # every number of the file is attributed once: totals and per-function sums
    assert t.metrics["time"].sum() == pytest.approx(st.total_tt)
    assert t.metrics["calls"].sum() == pytest.approx(st.total_calls) == 101204007
    assert t.metrics["primitive calls"].sum() == pytest.approx(st.prim_calls) == 1004007
    assert t.meta["total_tt"] == pytest.approx(st.total_tt)
    for (file, line, name), (cc, nc, tt, _ct, _callers) in st.stats.items():
        key = (file, line, name)
        assert per_function(t, "time")[key] == pytest.approx(tt, abs=1e-12)
        assert per_function(t, "calls")[key] == pytest.approx(nc)
        assert per_function(t, "primitive calls")[key] == pytest.approx(cc)
    # the roots' inclusive time is the whole profile
    assert t.metrics["time (inc)"][t.roots].sum() == pytest.approx(st.total_tt)


def test_recursion_is_folded_into_the_first_frame():
    t = cctviz.read(PY3)
    paths = t.callpaths.tolist()
    assert "e/f/g/recursive" in paths and "e/f/recursive" in paths
    assert not any(p.count("recursive") > 1 for p in paths)
    i = paths.index("e/f/g/recursive")
    # 1000 calls of g from f, each recursing: nearly all of recursive's 22.74 s
    assert t.metrics.loc[i, "time"] > 0.99 * 22.7388
    assert t.metrics.loc[i, "primitive calls"] == pytest.approx(1_000_000)


def test_inclusive_is_cumtime_where_exact():
    """Functions reached by one call path, with single-path subtrees: time (inc)
    is exactly cProfile's cumtime (the __exit__ -> next -> phase -> end chain)."""
    t = cctviz.read(PY3)
    st = pstats.Stats(str(PY3)).stats
    key = list(zip(t.nodes["file"], t.nodes["line"], t.names))
    count = pd.Series(key).value_counts()
    checked = 0
    for i in range(len(t)):
        sub = key[i : t.end[i]]
        if all(count[k] == 1 for k in sub) and all(st[k][0] == st[k][1] for k in sub):
            assert t.metrics.loc[i, "time (inc)"] == pytest.approx(st[key[i]][3], abs=1e-12)
            checked += 1
    assert checked >= 5


def test_py3_sample_against_hatchet():
    t = cctviz.read(PY3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gf = hatchet.GraphFrame.from_cprofile(str(PY3))
    df = gf.dataframe
    # Hatchet keeps the graph: one node per function
    assert len(gf.graph) == len(set(zip(t.nodes["file"], t.nodes["line"], t.names))) == 9
    h_roots = sorted(r.frame["name"] for r in gf.graph.roots)
    ours = sorted(set(t.names[t.roots]))
    assert h_roots == ["__exit__", "e"]
    # g is also a root here: it was called once from outside any profiled function
    assert ours == ["__exit__", "e", "g"]
    h = df.set_index(["file", "line", "name"])
    for col, ourcol in (
        ("time", "time"),
        ("numcalls", "primitive calls"),
        ("nativecalls", "calls"),
    ):
        pd.testing.assert_series_equal(
            per_function(t, ourcol).sort_index(),
            h[col].astype(float).sort_index(),
            check_names=False,
            rtol=1e-9,
        )


def test_py2_sample():
    """Python 2's marshal (interned-string references): pstats cannot load it in
    Python 3 (Hatchet fails too); cctviz decodes it."""
    with pytest.raises(ValueError):
        pstats.Stats(str(PY2))
    t = cctviz.read(PY2)
    assert detect(PY2) == "cprofile"
    assert len(t) == 15 and sorted(set(t.names[t.roots])) == ["__exit__", "e", "g"]
    assert t.meta["total_calls"] == 10215108 and t.meta["primitive_calls"] == 105108
    assert t.metrics["time"].sum() == pytest.approx(t.meta["total_tt"]) == pytest.approx(2.361709)
    phase = int(np.flatnonzero(t.names == "phase")[0])
    assert t.nodes.loc[phase, "line"] == 67 and t.nodes.loc[phase, "file"].endswith("profiler.py")
    st = _Marshal(PY2.read_bytes()).load()
    (key,) = [k for k in st if k[2] == "recursive"]
    assert st[key][:2] == (101100, 10211100)  # primitive, all calls
    # its callers' edges account for every call (g, f and itself)
    assert sum(e[0] for e in st[key][4].values()) == 10211100
    assert per_function(t, "calls")[key] == pytest.approx(10211100)


def _work(n):
    return 1 if n <= 1 else _work(n - 1) + _helper(n)


def _helper(n):
    return sum(range(n))


@pytest.mark.parametrize("mod", [cProfile, profile], ids=["cProfile", "profile"])
def test_fresh_profile(tmp_path, mod):
    prof = mod.Profile()
    prof.runcall(_work, 30)
    p = tmp_path / "fresh.prof"
    prof.dump_stats(str(p))
    st = pstats.Stats(str(p))
    t = cctviz.read(p)
    assert t.metrics["time"].sum() == pytest.approx(st.total_tt)
    assert t.metrics["calls"].sum() == pytest.approx(st.total_calls)
    assert sum("_work" == n for n in t.names) == 1  # recursion folded
    work = int(np.flatnonzero(t.names == "_work")[0])
    assert t.metrics.loc[work, "calls"] == 30 and t.metrics.loc[work, "primitive calls"] == 1


def test_decoder_matches_marshal():
    raw = PY3.read_bytes()
    assert _Marshal(raw).load() == marshal.loads(raw)
    obj = {
        ("a.py", 3, "f"): (1, 2, 0.5, 1e-9, {("~", 0, "<built-in>"): (1, 1, 0.25, 2.0**70)}),
        ("é.py", -1, "g" * 300): (10**30, -5, float("inf"), 0.0, {}),
    }
    for version in range(5):
        data = marshal.dumps(obj, version)
        assert _Marshal(data).load() == obj, version


@pytest.mark.parametrize(
    "data",
    [
        marshal.dumps({1: 2}),  # not pstats keys
        marshal.dumps({("a", 1, "f"): (1, 1, 0.1, 0.1)}),  # no callers dict
        marshal.dumps(
            {("a", 1, "f"): (1, 1, 0.1, 0.1, {("b", 2, "g"): (1, 1, 0, 0)})}
        ),  # unknown caller
        marshal.dumps({}),
        marshal.dumps(_work.__code__),
        b"{[\xff\xff\xff\x7f",  # a list claiming 2**31 items: no allocation, an error
        b"{" + b")\x01" * 200 + b"N",  # nested too deeply
        b"{r\x05\x00\x00\x00",  # reference to nothing
    ],
)
def test_bad_marshal_data_is_a_profile_error(tmp_path, data):
    p = tmp_path / "bad.pstats"
    p.write_bytes(data)
    with pytest.raises(ProfileError) as e:
        cctviz.read(p, format="cprofile")
    assert e.value.path == str(p)


def test_sniff(tmp_path):
    assert _sniff(PY3, head(PY3)) and _sniff(PY2, head(PY2))
    other = tmp_path / "other.marshal"
    other.write_bytes(marshal.dumps({"a": 1}))
    for p in (other, HATCHET_JSON, CALIPER_JSON[0], DATA / "hatchet/tau-cpi-mpi/profile.0.0.0"):
        assert not _sniff(p, head(p)), p


def test_max_nodes(tmp_path):
    with pytest.warns(UserWarning, match="max_nodes"):
        t = cctviz.read(PY3, max_nodes=4)
    assert len(t) == 4 and t.meta["truncated"]


@pytest.mark.parametrize(
    "sample",
    [HATCHET_JSON, DATA / "hatchet/caliper-lulesh-cali/lulesh-annotation-profile.cali"],
    ids=lambda p: p.name,
)
def test_foreign_files_rejected(sample):
    assert_wrong_format_rejected(sample, "cprofile")


@pytest.mark.parametrize("sample", [PY3, PY2], ids=lambda p: p.name)
def test_fuzz(tmp_path, sample):
    stats = fuzz_sample(sample, "cprofile", tmp_path, n=60)
    assert stats["truncate:error"] == 12


@pytest.mark.parametrize("sample", sorted(DIR.glob("*.pstats")), ids=lambda p: p.name)
def test_units_and_rules_on_the_samples(sample):
    t = cctviz.read(sample)
    # pstats files say no unit: seconds, cProfile's default timer, recorded as assumed
    assert t.units == {"time": "s"}
    assert "seconds" in t.meta["units_assumed"]["time"]
    assert t.aggregation == {"time": "sum", "calls": "sum", "primitive calls": "sum"}
    assert t.meta["aggregation"] == t.aggregation
    # the roots' inclusive seconds add up to the total time pstats reports
    roots = t.metrics["time (inc)"].to_numpy()[t.roots]
    assert roots.sum() == pytest.approx(t.meta["total_tt"])


PYINSTRUMENT_PROGRAM = """\
import time

def work(seconds):
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        pass

def heavy():
    work(0.30)

def light():
    work(0.06)

def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)

heavy()
light()
fib(24)
"""


@pytest.fixture(scope="module")
def pyinstrument_pstats(tmp_path_factory):
    """``pyinstrument -r pstats``'s own output: every call count is -1 (unknown)."""
    import subprocess
    import sys

    d = tmp_path_factory.mktemp("pyinstrument")
    (d / "prog.py").write_text(PYINSTRUMENT_PROGRAM)
    out = d / "prog.pstats"
    cmd = [sys.executable, "-m", "pyinstrument", "-r", "pstats", "-o", str(out), "prog.py"]
    res = subprocess.run(cmd, cwd=d, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    return out


@pytest.mark.slow
def test_pyinstrument_pstats_with_unknown_call_counts(pyinstrument_pstats):
    """pyinstrument writes -1 for every call count; Python's pstats reads such a
    file, and so does cctviz: calls missing (not 0), times split over the call
    paths by the file's own caller edges."""
    p = pyinstrument_pstats
    raw = marshal.loads(p.read_bytes())
    assert {v[0] for v in raw.values()} == {-1} == {v[1] for v in raw.values()}
    st = pstats.Stats(str(p))
    assert detect(p) == "cprofile"
    t = cctviz.read(p)
    assert "calls" not in t.metrics and "primitive calls" not in t.metrics
    assert "unknown" in t.meta["calls_unknown"] and "total_calls" not in t.meta
    assert t.units == {"time": "s"}
    # per function, the times are pstats' own tottime
    mine = per_function(t, "time")
    for (file, line, name), (_cc, _nc, tt, _ct, _callers) in st.stats.items():
        assert mine[(file, line, name)] == pytest.approx(tt, abs=1e-9)
    assert t.metrics["time"].sum() == pytest.approx(st.total_tt)
    # work() under heavy() and under light(): each holds its caller edge's time
    key = next(k for k in raw if k[2] == "work")
    edges = {c[2]: e[2] for c, e in raw[key][4].items()}
    cp = t.metrics.set_index(t.callpaths)["time"]
    for caller in ("heavy", "light"):
        node = [c for c in cp.index if c.endswith(f"{caller}/work")]
        assert len(node) == 1 and cp[node[0]] == pytest.approx(edges[caller], rel=1e-6)
    assert cp[[c for c in cp.index if c.endswith("heavy/work")][0]] > 3 * edges["light"]
    # fib's recursion folds into one node per path that enters it
    assert sum(1 for n in t.names if n == "fib") == 1
