"""One definition of units: the front end formats with Python's tables
(js/units-table.js is generated from cctviz.model.units), and for thousands of
random values and units JavaScript's formatValue/unitLabel print exactly what
Python's format_value/unit_label print."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import numpy as np
import pytest

from cctviz.model import units as U
from tests.conftest import ROOT

UNITS = [
    *U.js_table()["aliases"],
    *U.TIME,
    *U.BYTES,
    "B/s", "GB/s", "MB/ms", "count", "calls", "flop", "Mb", "Seconds", " BYTES ", "", None,
]  # fmt: skip


def test_the_generated_table_is_current():
    run = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "units_table.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr


def _cases(seed: int, n: int = 3000) -> list[list]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        unit = UNITS[rng.integers(len(UNITS))]
        kind = rng.integers(5)
        if kind == 0:
            v = float(rng.integers(-(10**12), 10**12))
        elif kind == 1:
            v = float(10 ** rng.uniform(-12, 15)) * (1 if rng.random() < 0.8 else -1)
        elif kind == 2:
            v = float(np.round(10 ** rng.uniform(-3, 6), int(rng.integers(0, 4))))
        elif kind == 3:
            v = [0.0, 999.5, 999.4999, 0.9995, 1e-9, 999500.0, 1e21][rng.integers(7)]
        else:
            v = float(np.float32(10 ** rng.uniform(-6, 9)))  # what a float32 buffer carries
        out.append([v, unit])
    return out


@pytest.mark.parametrize("seed", [0, 1])
def test_python_and_javascript_print_the_same(tmp_path, seed):
    node = shutil.which("node")
    assert node, "node runs the JavaScript tests (scripts/test.sh needs it)"
    cases = _cases(seed)
    metrics = [
        "time",
        "time (inc)",
        "time (inc) [max]",
        "time (inc) [imbalance]",
        "bytes_sent",
        "calls",
    ]
    labels = [[m, {m.split(" ")[0]: u} if u else {}] for m in metrics for _, u in cases[:200]]
    (tmp_path / "cases.json").write_text(json.dumps({"values": cases, "labels": labels}))
    script = f"""
import {{ formatValue, unitLabel }} from {json.dumps((ROOT / "js" / "format.js").as_uri())};
import {{ readFileSync }} from "fs";
const c = JSON.parse(readFileSync({json.dumps(str(tmp_path / "cases.json"))}, "utf8"));
console.log(JSON.stringify({{
  values: c.values.map(([v, u]) => formatValue(v, u)),
  labels: c.labels.map(([m, units]) => unitLabel(m, units)),
}}));
"""
    run = subprocess.run(
        [node, "--input-type=module", "-e", script], capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr
    js = json.loads(run.stdout)
    py_values = [U.format_value(v, u) for v, u in cases]
    py_labels = [U.unit_label(m, units) for m, units in labels]
    bad = [(c, p, j) for c, p, j in zip(cases, py_values, js["values"]) if p != j]
    assert not bad, f"{len(bad)} of {len(cases)} differ, e.g. {bad[:5]}"
    bad = [(c, p, j) for c, p, j in zip(labels, py_labels, js["labels"]) if p != j]
    assert not bad, f"{len(bad)} labels differ, e.g. {bad[:5]}"
