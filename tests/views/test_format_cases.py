"""Python's unit formatting gives the strings of the shared cases that the front
end's ``js/format.js`` is checked against too (tests/js/format.test.js)."""

from __future__ import annotations

import json
import pathlib

import pytest

from cctviz.model.units import format_value, unit_label

CASES = json.loads(
    (pathlib.Path(__file__).resolve().parent.parent / "js" / "format_cases.json").read_text("utf-8")
)


def _value(v):
    return float(v) if isinstance(v, str) else v  # "nan", "inf", "-inf"


@pytest.mark.parametrize(("value", "unit", "expected"), CASES["format_value"])
def test_format_value_matches_the_shared_cases(value, unit, expected):
    assert format_value(_value(value), unit) == expected


@pytest.mark.parametrize(("metric", "units", "expected"), CASES["unit_label"])
def test_unit_label_matches_the_shared_cases(metric, units, expected):
    assert unit_label(metric, units) == expected


def test_the_shared_cases_cover_the_issue_examples():
    got = {(json.dumps(v), u): e for v, u, e in CASES["format_value"]}
    assert got[("1317177458", "ns")] == "1.32 s"
    assert got[("0.0753", "s")] == "75.3 ms"
    assert got[("3730000.0", "B")] == "3.73 MB"
    assert got[("2100000000.0", "B/s")] == "2.10 GB/s"
    assert len(CASES["format_value"]) >= 50 and len(CASES["unit_label"]) >= 10
