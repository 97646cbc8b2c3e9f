"""The export payload: a view's Python-side state as JSON, and the options' checks."""

from __future__ import annotations

import json
import math

import pytest

import cctviz
from cctviz.errors import ExportOptionError
from cctviz.export import drawing_options, parse_length, payload
from tests.conftest import LULESH_SCALING
from tests.export.conftest import HOSTILE


def names_of(p: dict) -> list[str]:
    """The row names of a payload, decoded as the front end decodes them."""
    raw, off = bytes(p["data"]["name_bytes"]), p["data"]["name_offsets"]
    return [raw[off[i] : off[i + 1]].decode("utf-8") for i in range(p["data"]["n"])]


def test_payload_of_a_view_never_displayed(view):
    p = payload(view)
    text = json.dumps(p, allow_nan=False)  # no NaN, no buffers: plain JSON
    assert json.loads(text) == p
    assert p["kind"] == "cct"
    d = p["data"]
    assert d["n"] == len(view.visible) and d["total"] == 24
    assert names_of(p) == view.visible["name"].tolist()
    assert d["id"] == view.visible["id"].tolist()
    assert d["parent"] == view.visible["parent_row"].tolist()
    assert len(d["name_offsets"]) == d["n"] + 1
    assert all(isinstance(v, float) for v in d["color"])
    # one state shape: the view's state (what restores it) plus the metrics offered
    assert p["state"] == {**view.state, "metrics": view.metrics}
    assert type(view)(view.shown, **view.state).state == view.state
    assert p["state"] == {
        "collapsed": view.collapsed,
        "expanded": [],
        "max_nodes": 2000,
        "selected_profiles": [],
        "color": "time (inc)",
        "size": "time (inc)",
        "chart": "tree",
        "selection": [1],
        "focus": -1,
        "search": "",
        "metrics": view.metrics,
    }
    assert p["options"] == {
        "width": 504.0,  # a journal's two columns (7 in), unless asked
        "height": None,
        "fontSize": 10.0,
        "title": None,
        "legends": True,
        "highlight": True,
        "background": "white",
        "scheme": "light",
    }


def test_payload_follows_the_state(hatchet_tree):
    kw = {"chart" if "chart" in cctviz.CCTView.class_trait_names() else "layout": "icicle"}
    v = cctviz.CCTView(hatchet_tree, color=("time (inc)", "time"), size="", **kw)
    v.focus = 1
    v.search = "baz"
    p = payload(v)
    assert p["state"]["color"] == ["time (inc)", "time"]
    assert p["state"]["chart"] == "icicle"
    assert p["state"]["size"] == "" and "size" not in p["data"]
    assert p["state"]["focus"] == 1 and p["state"]["search"] == "baz"
    assert p["data"]["focus_path"] == ["foo"]
    assert len(p["data"]["color2"]) == p["data"]["n"]
    assert set(names_of(p)) <= set(hatchet_tree.names[1 : hatchet_tree.end[1]])


def test_nan_becomes_null_and_names_keep_their_bytes(hostile_view):
    hostile_view.color = "bytes (inc)"
    p = payload(hostile_view)
    assert names_of(p) == hostile_view.visible["name"].tolist()
    assert sorted(names_of(p)) == sorted(["main", *HOSTILE])
    vals = hostile_view._src.column("bytes (inc)")[hostile_view.visible["id"]]
    assert [None if math.isnan(v) else v for v in vals] == p["data"]["color"]
    assert None in p["data"]["color"]
    json.dumps(p, allow_nan=False)


def test_payload_of_an_ensemble_converts_nested_buffers():
    ens = cctviz.read_ensemble(LULESH_SCALING[:3], progress=False)
    p = payload(cctviz.CCTView(ens))
    spread = p["data"]["spread"]
    assert spread["profiles"] == int(ens.live.sum()) > 3  # ranks of 3 runs
    for k in ("min", "mean", "max", "std", "cost", "argmax"):
        assert isinstance(spread[k], list) and len(spread[k]) == p["data"]["n"]
    json.dumps(p, allow_nan=False)


@pytest.mark.parametrize(
    ("text", "pt"),
    [
        ("3.5in", 252.0),
        ("89mm", 89 * 72 / 25.4),
        ("252pt", 252.0),
        ("8cm", 8 * 72 / 2.54),
        ("600px", 450.0),
        (" 100 ", 100.0),
        (300, 300.0),
        (12.5, 12.5),
        ("1e2pt", 100.0),
    ],
)
def test_lengths(text, pt):
    assert parse_length(text) == pytest.approx(pt)


@pytest.mark.parametrize(
    ("options", "name"),
    [
        ({"width": "wide"}, "width"),
        ({"width": "3.5 furlongs"}, "width"),
        ({"width": -1}, "width"),
        ({"width": 0}, "width"),
        ({"height": float("inf")}, "height"),
        ({"height": True}, "height"),
        ({"font_size": "big"}, "font_size"),
        ({"title": 3}, "title"),
        ({"legends": "no"}, "legends"),
        ({"highlight": 1}, "highlight"),
        ({"background": "black"}, "background"),
        ({"scheme": "blue"}, "scheme"),
        ({"fontsize": 8}, "fontsize"),
    ],
)
def test_wrong_options_name_the_option(options, name, view):
    with pytest.raises(ExportOptionError) as e:
        drawing_options(**options)
    assert str(e.value).startswith(f"{name}: ")
    assert isinstance(e.value, ValueError) and e.value.option == name
    with pytest.raises(ValueError, match=f"^{name}: "):
        payload(view, **options)


def test_options_in_the_payload(view):
    o = payload(
        view,
        width="3.5in",
        height="2in",
        font_size=8,
        title="Kripke",
        legends=False,
        highlight=False,
        background="transparent",
        scheme="dark",
    )["options"]
    assert o == {
        "width": 252.0,
        "height": 144.0,
        "fontSize": 8.0,
        "title": "Kripke",
        "legends": False,
        "highlight": False,
        "background": "transparent",
        "scheme": "dark",
    }


def test_the_live_download_takes_save_s_defaults():
    """The views' "SVG" button (js/paper.js DOWNLOAD_OPTIONS) draws with save()'s
    default width and font size, so the file it gives is save()'s."""
    import re
    from pathlib import Path

    from cctviz.export.payload import DEFAULTS

    text = (Path(__file__).resolve().parents[2] / "js" / "paper.js").read_text()
    m = re.search(
        r"DOWNLOAD_OPTIONS = Object\.freeze\(\{ width: ([\d.]+), fontSize: ([\d.]+) \}\)", text
    )
    assert m, "DOWNLOAD_OPTIONS not found in js/paper.js"
    assert (float(m[1]), float(m[2])) == (DEFAULTS["width"], DEFAULTS["font_size"])
