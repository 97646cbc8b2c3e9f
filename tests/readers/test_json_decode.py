"""``readers._json.loads``: orjson where installed, with the standard library's
values and errors (what orjson refuses, json decides); the readers give the same
profiles with either decoder."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

import cctviz
from cctviz.readers import _json

from ..conftest import DATA, LULESH_SCALING

pytestmark = pytest.mark.skipif(_json._orjson is None, reason="orjson is a core dependency")

TRICKY = [
    b'{"a": NaN, "b": [Infinity, -Infinity]}',  # json takes them; orjson does not
    b"\xef\xbb\xbf[1, 2]",  # a byte-order mark
    b'{"a": 1, "a": 2}',  # the last wins
    b"[1e400, -0.0, 5e-324, 18446744073709551615, -9223372036854775808]",
    b'["\\ud800"]',  # a lone surrogate
    b'{"text": "caf\\u00e9 \xc3\xa9"}',
]
BROKEN = [b"[1, 2", b'{"a" 1}', b"\xff\xfe{}", b"", b"[1] x"]


def _same(a, b) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def _outcome(loads, doc):
    """The value (as JSON text) or the error (type and message) of ``loads(doc)``."""
    try:
        return json.dumps(loads(doc), sort_keys=True)
    except ValueError as e:
        return type(e), str(e)


@pytest.mark.parametrize("raw", TRICKY)
def test_values_are_the_standard_librarys(raw):
    assert _outcome(_json.loads, raw) == _outcome(json.loads, raw)
    text = raw.decode("utf-8", "surrogatepass")
    assert _outcome(_json.loads, text) == _outcome(json.loads, text)


@pytest.mark.parametrize("raw", BROKEN)
def test_errors_are_the_standard_librarys(raw):
    want = _outcome(json.loads, raw)
    assert isinstance(want, tuple) and _outcome(_json.loads, raw) == want


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@given(json_values)
def test_any_document_decodes_as_json_does(value):
    text = json.dumps(value)
    assert _same(_json.loads(text), json.loads(text))
    assert _same(_json.loads(text.encode()), json.loads(text.encode()))


def test_profiles_are_the_same_without_orjson(monkeypatch):
    """A Caliper study (the batch path), a Kineto trace (the stream) and a Hatchet
    file: the same profiles (tree, values, metadata) with either decoder."""
    kineto = sorted((DATA / "kineto").glob("*.json*"))[0]
    hatchet = DATA / "hatchet" / "json" / "hatchet-graph-literal.json"

    def read_all():
        return [
            cctviz.read_ensemble(LULESH_SCALING[:3], progress=False),
            cctviz.read(kineto),
            cctviz.read(hatchet),
        ]

    fast = read_all()
    monkeypatch.setattr(_json, "_orjson", None)
    assert read_all() == fast
