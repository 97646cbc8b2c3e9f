"""The streaming JSON decoder (:mod:`cctviz.readers._jsonstream`) on its own."""

from __future__ import annotations

import gzip
import json

import pytest

from cctviz import ProfileError
from cctviz.readers import _jsonstream
from cctviz.readers._jsonstream import JsonStream


def _read(path, key="rows", chunk=_jsonstream.CHUNK):
    st = JsonStream(path, chunk)
    meta: dict = {}
    try:
        items = list(st.items(meta, key, "a test document"))
    finally:
        st.close()
    return items, meta


DOC = {
    "head": {"nested": [1, 2, {"x": "},{"}]},
    "rows": [{"i": i, "s": "é}, {" * (i % 3), "v": [i, {"w": None}]} for i in range(500)],
    "n": 1.5e300,
    "tail": "ü" * 300,
}


@pytest.mark.parametrize("chunk, batch", [(_jsonstream.CHUNK, _jsonstream.BATCH), (7, 50), (1, 3)])
@pytest.mark.parametrize("gz", [False, True])
def test_elements_and_other_keys_in_any_piece_size(tmp_path, monkeypatch, chunk, batch, gz):
    """Pieces as small as one byte (cutting UTF-8 characters, numbers and keys) and
    batches that end inside strings and nested objects give the same values."""
    monkeypatch.setattr(_jsonstream, "BATCH", batch)
    text = json.dumps(DOC, ensure_ascii=False, indent=1).encode()
    p = tmp_path / ("d.json.gz" if gz else "d.json")
    p.write_bytes(gzip.compress(text) if gz else text)
    items, meta = _read(p, chunk=chunk)
    assert items == DOC["rows"]
    assert meta == {k: v for k, v in DOC.items() if k != "rows"}


def test_a_repeated_list_key_yields_both_lists_and_empty_lists(tmp_path):
    p = tmp_path / "d.json"
    p.write_text('{"rows": [1, 2], "a": [], "rows": [], "rows": [{"b": 3}]}')
    assert _read(p) == ([1, 2, {"b": 3}], {"a": []})


@pytest.mark.parametrize(
    "text, problem, where",
    [
        ('{"rows": [1, 2', "the file ends early", "rows[2]"),
        ('{"rows": [1 2]}', "expected ',' or ']' after an element", "rows[0]"),
        ('{"rows": {}}', "expected a list", "rows"),
        ('{"other": 1}', "no 'rows' list (not a test document)", "top level"),
        ("[1]", "expected a JSON object with 'rows' (a test document)", "character 0"),
        ('{"rows": [], "x": tru}', "the file ends early", "x"),
        ('{"rows": [], "x": nul, "y": 2}', "invalid JSON", "x"),
        ('{"rows": []} 1', "extra data after the JSON object", "character 13"),
    ],
)
def test_errors_name_the_place(tmp_path, text, problem, where):
    p = tmp_path / "bad.json"
    p.write_text(text)
    with pytest.raises(ProfileError) as e:
        _read(p)
    assert problem in e.value.problem
    assert e.value.where.startswith(where)
    assert e.value.path == str(p)


def test_bad_bytes(tmp_path):
    p = tmp_path / "latin1.json"
    p.write_bytes(b'{"rows": ["\xe9t\xe9"]}')
    with pytest.raises(ProfileError, match="not UTF-8"):
        _read(p)
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(gzip.compress(json.dumps(DOC).encode())[:200])
    with pytest.raises(ProfileError, match="gzip|ends early"):
        _read(cut)
    with pytest.raises(ProfileError, match="cannot read"):
        JsonStream(tmp_path / "missing.json")


@pytest.mark.parametrize("chunk, batch", [(4096, 1024), (1 << 15, 1 << 12)])
def test_elements_are_decoded_in_batches_across_pieces(tmp_path, monkeypatch, chunk, batch):
    """Where a piece of text ends inside an element, the stream reads the next
    piece before cutting a batch, instead of decoding the following batch's
    worth of elements one at a time: almost every element comes from a batch."""
    monkeypatch.setattr(_jsonstream, "BATCH", batch)
    rows = [{"i": i, "name": f"op {i}", "args": {"v": [i, i + 1]}} for i in range(20_000)]
    p = tmp_path / "d.json"
    p.write_text(json.dumps({"rows": rows, "n": 1}, indent=1))
    st = JsonStream(p, chunk)
    single = st.scan
    calls = []

    def counting(text, pos):
        calls.append(pos)
        return single(text, pos)

    st.scan = counting
    try:
        assert list(st.items({}, "rows")) == rows
    finally:
        st.close()
    assert p.stat().st_size > 10 * chunk
    assert len(calls) < 0.01 * len(rows)
