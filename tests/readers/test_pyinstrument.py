"""pyinstrument: the real rendered-JSON sample against Hatchet's reader, and a
saved session (frame_records) made from the same profile."""

import json
import warnings

import numpy as np
import pytest

import cctviz
from cctviz import ProfileError
from cctviz.readers import detect
from tests.conftest import CALIPER_JSON, DATA, HATCHET_JSON
from tests.readers.fuzz import assert_wrong_format_rejected, fuzz_sample

SAMPLE = DATA / "hatchet/pyinstrument-hatchet-json/pyinstrument-hatchet-profile.json"
from tests.peers import hatchet  # noqa: E402  (imported when a test uses it)


def test_sample_content():
    assert detect(SAMPLE) == "pyinstrument"
    t = cctviz.read(SAMPLE)
    assert len(t) == 111 and len(t.roots) == 1
    assert t.meta["program"] == "examples.py" and t.meta["sample_count"] == 432
    assert t.meta["duration"] == 0.478172 and t.meta["cpu_time"] == 1.194035
    assert t.units == {"time": "s"}
    m = t.metrics
    assert m["time (inc)"].iloc[0] == pytest.approx(0.47815)
    # the import of hatchet/__init__.py, as recorded in the file
    imp = np.flatnonzero(t.nodes["file_short"] == "hatchet/__init__.py")[0]
    assert t.nodes.loc[imp, "line"] == 9 and m.loc[imp, "time (inc)"] == pytest.approx(0.339553)
    assert t.nodes["is_application_code"].sum() > 0
    assert set(t.nodes["group_id"].dropna()) and t.nodes.loc[0, "file"] == "examples.py"


def test_matches_hatchet_from_pyinstrument():
    t = cctviz.read(SAMPLE)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gf = hatchet.GraphFrame.from_pyinstrument(str(SAMPLE))
    assert len(gf.graph) == len(t)
    df = gf.dataframe
    rows, stack = [], [(r, "") for r in gf.graph.roots]
    while stack:
        n, prefix = stack.pop()
        path = prefix + n.frame["name"]
        rows.append((path, int(df.loc[n, "line"]), df.loc[n, "time"], df.loc[n, "time (inc)"]))
        stack += [(c, path + "/") for c in n.children]
    ours = zip(
        t.callpaths, t.nodes["line"], t.metrics["time"], t.metrics["time (inc)"], strict=True
    )
    a, b = sorted(rows), sorted((p, int(ln), x, y) for p, ln, x, y in ours)
    assert [r[:2] for r in a] == [r[:2] for r in b]
    assert np.allclose([r[2:] for r in a], [r[2:] for r in b], atol=1e-12)


def _session_from_rendered(t):
    """A pyinstrument 4/5 session (``Session.save``) holding the same samples."""
    recs = []
    for i in np.flatnonzero(t.metrics["time"].to_numpy() > 0).tolist():
        stack, j = [], i
        while j >= 0:
            stack.append(f"{t.names[j]}\x00{t.nodes.loc[j, 'file']}\x00{t.nodes.loc[j, 'line']}")
            j = t.parent[j]
        stack = stack[::-1]
        stack[-1] += "\x01cSomeClass\x01l99"  # invocation attributes are not identity
        recs.append([stack, float(t.metrics.loc[i, "time"])])
    return {
        "start_time": 1.0,
        "duration": 0.478172,
        "min_interval": 0.001,
        "max_interval": 0.001,
        "sample_count": 432,
        "start_call_stack": recs[0][0][:1],
        "target_description": "Program: examples.py",
        "cpu_time": 1.194035,
        "sys_path": [],
        "sys_prefixes": [],
        "frame_records": recs,
    }


def test_saved_session_gives_the_same_call_paths(tmp_path):
    t = cctviz.read(SAMPLE)
    p = tmp_path / "s.pyisession"
    p.write_text(json.dumps(_session_from_rendered(t)))
    assert detect(p) == "pyinstrument"
    s = cctviz.read(p)
    assert s.meta["program"] == "Program: examples.py"
    key = lambda tr: (  # noqa: E731 - call path with file and line, as sessions identify frames
        tr.callpaths + "@" + tr.nodes["file"].astype(str) + ":" + tr.nodes["line"].astype(str)
    )
    want = t.metrics["time (inc)"].groupby(key(t).to_numpy()).sum()
    got = s.metrics["time (inc)"].groupby(key(s).to_numpy()).sum()
    want = want[want > 0]
    assert set(got.index) == set(want.index)
    assert np.allclose(got.reindex(want.index).to_numpy(), want.to_numpy())


@pytest.mark.parametrize(
    "doc, where",
    [
        ({"root_frame": None, "duration": 1}, "root_frame"),
        ({"root_frame": {"function": "f", "time": "x"}}, "root_frame.time"),
        (
            {"root_frame": {"function": "f", "time": 1, "children": [{"time": 1}]}},
            "root_frame.children[0].function",
        ),
        ({"frame_records": [[["f\x00a.py\x001"], "1"]], "sample_count": 1}, "frame_records[0]"),
        ({"frame_records": [], "sample_count": 0}, "frame_records"),
    ],
)
def test_bad_documents_name_the_place(tmp_path, doc, where):
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(doc))
    with pytest.raises(ProfileError) as e:
        cctviz.read(p, format="pyinstrument")
    assert e.value.where == where


@pytest.mark.parametrize("sample", [HATCHET_JSON, CALIPER_JSON[0]], ids=lambda p: p.name)
def test_foreign_files_rejected(sample):
    assert_wrong_format_rejected(sample, "pyinstrument")


def test_fuzz(tmp_path):
    stats = fuzz_sample(SAMPLE, "pyinstrument", tmp_path, n=50)
    assert stats["truncate:error"] == 10


def test_units_and_rules_on_the_sample():
    t = cctviz.read(SAMPLE)
    assert t.units == {"time": "s"} and "seconds" in t.meta["units_assumed"]["time"]
    assert t.aggregation == {"time": "sum"} and t.is_additive("time (inc)")
    # the root's inclusive seconds are the session's duration (0.478 s of 0.478 s)
    assert t.metrics["time (inc)"].iloc[0] == pytest.approx(t.meta["duration"], rel=1e-3)


def test_await_time_is_kept(tmp_path):
    doc = json.loads(SAMPLE.read_text())
    doc["root_frame"]["await_time"] = 0.25
    doc["root_frame"]["children"][0]["await_time"] = 0.2
    p = tmp_path / "a.json"
    p.write_text(json.dumps(doc))
    t = cctviz.read(p)
    assert t.exc_metrics == ["time", "await_time"]
    assert t.units == {"time": "s", "await_time": "s"}
    assert t.aggregation == {"time": "sum", "await_time": "sum"}
    assert t.metrics["await_time (inc)"].iloc[0] == pytest.approx(0.25)
    assert t.metrics["await_time"].iloc[0] == pytest.approx(0.05)  # inclusive, like time
    doc["root_frame"]["await_time"] = "soon"
    p.write_text(json.dumps(doc))
    with pytest.raises(ProfileError, match="await_time"):
        cctviz.read(p)


@pytest.mark.slow  # pyinstrument: the main test environment, not the core suite's
def test_the_html_page_and_its_session_data_are_read(tmp_path):
    """pyinstrument's HTML page (the real renderer, on a real session) holds the
    session and the frame tree it draws: read from the page, or from that JSON
    alone, the same tree, whose total is the session's own (its saved records;
    the page rounds its times to the microsecond)."""
    import time

    from pyinstrument import Profiler
    from pyinstrument.renderers import HTMLRenderer

    def inner(n):
        return sum(i * i for i in range(n))

    def outer():
        for _ in range(20):
            inner(20000)
        time.sleep(0.02)

    prof = Profiler(interval=0.0005)
    prof.start()
    outer()
    prof.stop()
    session = prof.last_session
    page = tmp_path / "profile.html"
    page.write_text(HTMLRenderer().render(session))
    saved = tmp_path / "profile.pyisession"
    session.save(str(saved))
    text = page.read_text()
    at = text.index("const sessionData = ") + len("const sessionData = ")
    data, _ = json.JSONDecoder().raw_decode(text, at)
    alone = tmp_path / "session.json"
    alone.write_text(json.dumps(data))
    assert detect(page) == detect(alone) == "pyinstrument"
    a, b = cctviz.read(page), cctviz.read(alone)
    assert a.nodes["name"].tolist() == b.nodes["name"].tolist()
    assert np.array_equal(a.metrics["time (inc)"], b.metrics["time (inc)"])
    assert "inner" in a.nodes["name"].tolist() and a.units == {"time": "s"}
    total = cctviz.read(saved).metrics["time"].sum()
    assert a.metrics["time (inc)"].iloc[0] == pytest.approx(total, abs=1e-6)  # us in the page
    assert a.meta["sample_count"] == session.sample_count
