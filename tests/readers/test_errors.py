"""Bad and truncated input to every loader gives a ProfileError naming the file.

Hypothesis mutates real samples (truncation, byte garbage, structural edits of
the JSON) and checks the only outcomes are a loaded profile or a ProfileError
whose message starts with the file's path; never a bare KeyError, IndexError,
JSONDecodeError or TypeError.
"""

import copy
import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Verbosity, given, settings
from hypothesis import strategies as st

import cctviz
from cctviz import ProfileError
from tests.conftest import DATA, HATCHET_JSON
from tests.hypothesis_profiles import examples

SAMPLES = {
    "hatchet-json": HATCHET_JSON,
    "caliper-json": DATA / "hatchet/caliper-lulesh-json/lulesh-annotation-profile.json",
    "caliper-json-cpi": DATA / "hatchet/caliper-cpi-json/cpi-callpath-profile.json",
}


@pytest.fixture(scope="module")
def samples(tmp_path_factory):
    d = tmp_path_factory.mktemp("samples")
    out = {k: p.read_bytes() for k, p in SAMPLES.items()}
    t = cctviz.read(HATCHET_JSON)
    lit = d / "lit.json"
    cctviz.write(t, lit, format="hatchet-literal")
    out["hatchet-literal"] = lit.read_bytes()
    nat = d / "x.cctviz"
    cctviz.read(SAMPLES["caliper-json"]).save(nat)
    out["cctviz"] = nat.read_bytes()
    return out


def _check(data: bytes, fmt: str | None, suffix: str = ".json"):
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / f"input{suffix}"
        p.write_bytes(data)
        try:
            obj = cctviz.read(p, format=fmt)
        except ProfileError as e:
            assert str(e).startswith(str(p)), str(e)
            assert e.path == str(p)
            return "error"
        assert isinstance(obj, (cctviz.Tree, cctviz.Ensemble))
        return "ok"


FORMATS = ["hatchet-json", "caliper-json", "caliper-json-cpi", "hatchet-literal", "cctviz"]


def _fmt(key):
    return {"caliper-json-cpi": "caliper-json"}.get(key, key)


@pytest.mark.parametrize("key", FORMATS)
@settings(
    max_examples=examples(40),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(frac=st.floats(0, 0.999))
def test_truncated_files(samples, key, frac):
    data = samples[key]
    cut = data[: int(len(data) * frac)]
    suffix = ".cctviz" if key == "cctviz" else ".json"
    # with the format given, and with detection: both end in ProfileError
    assert _check(cut, _fmt(key), suffix) == "error"
    assert _check(cut, None, suffix) == "error"


@pytest.mark.parametrize("key", FORMATS)
@settings(
    max_examples=examples(40),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_garbage_bytes(samples, key, data):
    raw = bytearray(samples[key])
    pos = data.draw(st.integers(0, len(raw) - 1))
    junk = data.draw(st.binary(min_size=1, max_size=16))
    raw[pos : pos + len(junk)] = junk
    _check(bytes(raw), _fmt(key), ".cctviz" if key == "cctviz" else ".json")


def _paths(obj, prefix=()):
    """Every (container, key) location inside a JSON document."""
    out = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.append(prefix + (k,))
            out += _paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj[:30]):
            out.append(prefix + (i,))
            out += _paths(v, prefix + (i,))
    return out


WRONG = [None, "x", -7, 10**9, 1.5, [], {}, [None], {"a": 1}, True]


@pytest.mark.parametrize(
    "key", ["hatchet-json", "caliper-json", "caliper-json-cpi", "hatchet-literal"]
)
@settings(
    max_examples=examples(80),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
    print_blob=False,
    verbosity=Verbosity.quiet,
)
@given(data=st.data())
def test_structural_edits(samples, key, data):
    doc = json.loads(samples[key])
    locs = _paths(doc)
    loc = data.draw(st.sampled_from(locs))
    action = data.draw(st.sampled_from(["delete", "replace"]))
    mutated = copy.deepcopy(doc)
    target = mutated
    for k in loc[:-1]:
        target = target[k]
    if action == "delete":
        del target[loc[-1]]
    else:
        target[loc[-1]] = data.draw(st.sampled_from(WRONG))
    _check(json.dumps(mutated).encode(), _fmt(key))


def test_messages_say_where(tmp_path):
    p = tmp_path / "bad.json"
    p.write_text('{"graph": [{"0": {"data": {"name": "a"}, "children": [7]}}], "dataframe": []}')
    with pytest.raises(
        ProfileError, match=r"bad.json: at node 0: child 7 of node 0 is not in the graph"
    ):
        cctviz.read(p)
    p.write_text(
        '{"data": [], "columns": ["path"], "column_metadata": [{"is_value": false}], "nodes": [{"label": "a", "column": "path", "parent": 3}]}'
    )
    with pytest.raises(ProfileError, match=r"at nodes\[0\].parent"):
        cctviz.read(p)
    p.write_text("{not json")
    with pytest.raises(ProfileError, match="line 1, column 2"):
        cctviz.read(p, format="caliper-json")
    with pytest.raises(ProfileError, match="not a profile format"):
        cctviz.read(p)
    with pytest.raises(ProfileError, match="no such file"):
        cctviz.read(tmp_path / "missing.json")


def test_an_empty_file_is_called_empty(tmp_path):
    """A crashed program's empty output: "empty", whether detected or named."""
    p = tmp_path / "trace.json"
    p.write_bytes(b"")
    for fmt in (None, "kineto", "cprofile", "folded"):
        with pytest.raises(ProfileError, match="the file is empty") as e:
            cctviz.read(p, format=fmt)
        assert e.value.path == str(p)


def test_a_reader_bug_is_not_blamed_on_the_file(tmp_path, monkeypatch):
    """An internal exception of a reader says it is a bug in cctviz, with the
    exception; bad bytes still blame the file."""
    import shutil

    from cctviz.errors import ReaderBugError
    from cctviz.readers import _READERS, Reader

    p = tmp_path / "x.json"
    shutil.copy(HATCHET_JSON, p)
    good = _READERS["hatchet-json"]

    def broken(path):
        return {}["missing column"]  # what a reader bug looks like

    monkeypatch.setitem(_READERS, "hatchet-json", Reader(good.name, broken, good.sniff, ""))
    with pytest.raises(ReaderBugError, match="bug in cctviz") as e:
        cctviz.read(p)
    assert "KeyError: 'missing column'" in str(e.value) and e.value.path == str(p)
    assert isinstance(e.value.__cause__, KeyError)
    monkeypatch.undo()
    p.write_bytes(b'{"nodes": [\xff\xfe')  # undecodable bytes: the file's fault
    with pytest.raises(ProfileError) as e:
        cctviz.read(p, format="hatchet-json")
    assert not isinstance(e.value, ReaderBugError)
