"""The Chrome trace-event reader (format "chrome") on the real samples (VizTracer,
py-spy) and on traces made here by real tools (JAX's profiler, py-spy); reference
figures are computed here from the JSON events with a plain stack walk."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

import cctviz
from cctviz.readers import detect
from tests.conftest import DATA, HATCHET_JSON
from tests.readers.fuzz import assert_wrong_format_rejected, fuzz_sample

CHROME = DATA / "chrome-trace"
VIZ = CHROME / "workload.viztracer.json"
PYSPY = CHROME / "workload.pyspy.chrometrace.json"
KINETO = DATA / "kineto" / "hta_trace_filter_sampled_rank-0.json.gz"


def _events(path: Path) -> list[dict]:
    raw = path.read_bytes()
    doc = json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)
    return doc["traceEvents"] if isinstance(doc, dict) else doc


def _intervals(events: list[dict]) -> dict[tuple, list[tuple[int, int, str]]]:
    """(start ns, end ns, name) per (pid, tid): X events, and B/E pairs by a stack."""
    out: dict[tuple, list[tuple[int, int, str]]] = {}
    open_: dict[tuple, list[dict]] = {}
    for e in events:
        key = (e.get("pid"), e.get("tid"))
        if e.get("ph") == "X":
            s = round(e["ts"] * 1000)
            out.setdefault(key, []).append((s, s + round(e["dur"] * 1000), e["name"]))
        elif e.get("ph") == "B":
            open_.setdefault(key, []).append(e)
        elif e.get("ph") == "E":
            b = open_[key].pop()
            out.setdefault(key, []).append(
                (round(b["ts"] * 1000), round(e["ts"] * 1000), b["name"])
            )
    return out


def _top_level_us(iv: list[tuple[int, int, str]]) -> float:
    """Sum of the durations of the events no other event contains (us)."""
    total, reach = 0, None
    for s, e, _ in sorted(iv, key=lambda x: (x[0], x[0] - x[1])):
        if reach is None or s >= reach:
            total += e - s
            reach = e
    return total / 1e3


def _thread_times(tree: cctviz.Tree) -> dict[str, float]:
    threads = tree.nodes["kind"] == "thread"
    ids = tree.nodes.loc[threads, "id"]
    return dict(zip(ids, tree.metrics.loc[threads, "time (inc)"]))


def _calls_by_name(tree: cctviz.Tree) -> Counter:
    fn = tree.nodes["kind"] == "function"
    c: Counter = Counter()
    for name, calls in zip(tree.nodes.loc[fn, "name"], tree.metrics.loc[fn, "calls"]):
        c[name] += int(calls)
    return c


def _check_against_json(path: Path, tree: cctviz.Tree) -> None:
    """Thread totals and per-name calls of ``tree`` against the JSON itself."""
    iv = _intervals(_events(path))
    times = _thread_times(tree)
    assert set(times) == {str(tid) for _, tid in iv}
    for (_, tid), rows in iv.items():
        assert times[str(tid)] == pytest.approx(_top_level_us(rows), rel=1e-9)
    expected = Counter(name for rows in iv.values() for *_, name in rows)
    assert _calls_by_name(tree) == expected
    assert tree.unit("time") == "us"
    # exclusive times add up to the inclusive ones: nothing lost or counted twice
    assert tree.metrics["time"].sum() == pytest.approx(sum(times.values()), rel=1e-9)


def test_samples_are_detected_and_kineto_is_not_claimed():
    assert detect(VIZ) == detect(PYSPY) == "chrome"
    assert detect(KINETO) == "kineto"
    e = assert_wrong_format_rejected(KINETO, "chrome")
    assert "format='kineto'" in str(e)
    assert_wrong_format_rejected(HATCHET_JSON, "chrome")


def test_a_chrome_trace_given_to_kineto_is_not_called_a_broken_kineto_trace():
    e = assert_wrong_format_rejected(VIZ, "kineto")  # an object with traceEvents
    assert "not a Kineto trace" in str(e) and "format='chrome'" in str(e)
    e = assert_wrong_format_rejected(PYSPY, "kineto")  # a bare list of events
    assert "expected a JSON object with 'traceEvents'" in str(e)


def test_viztracer_sample():
    tree = cctviz.read(VIZ)
    assert isinstance(tree, cctviz.Tree)
    assert tree.nodes["name"].tolist()[:2] == ["process", "main thread"]
    assert tree.nodes["label"].tolist()[:2] == ["MainProcess", "MainThread"]
    assert tree.meta["chrome"]["x_events"] == sum(e["ph"] == "X" for e in _events(VIZ))
    assert tree.meta["chrome"]["clamped"] == 0
    # fib recurses: the recursion stays a chain of call paths, not a cycle
    fib = tree.nodes["name"].str.startswith("fib (")
    assert fib.sum() > 10 and tree.depth[fib.to_numpy()].max() > 10
    assert set(tree.nodes.loc[fib, "category"]) == {"fee"}
    _check_against_json(VIZ, tree)


def test_pyspy_sample_pairs_begin_and_end():
    tree = cctviz.read(PYSPY)
    n_b = sum(e["ph"] == "B" for e in _events(PYSPY))
    assert tree.meta["chrome"]["begin_end_pairs"] == n_b
    assert tree.meta["chrome"]["unclosed"] == tree.meta["chrome"]["unmatched_end"] == 0
    assert tree.nodes["label"].iat[1] is None  # py-spy writes no M events
    _check_against_json(PYSPY, tree)


def test_timeline_aggregates_to_the_tree():
    for p in (VIZ, PYSPY):
        tree = cctviz.read(p)
        tl = cctviz.read_timeline(p)
        assert tl.n_profiles == 1 and len(tl.events) == int(tree.metrics["calls"].sum())
        ens = tl.ensemble()
        assert ens.tree.units["time"] == "ns"
        got = ens.values("time")[:, 0] / 1e3
        assert np.allclose(got, tree.metrics["time"].to_numpy(), atol=1e-6)
        # the events span what the JSON's events span
        iv = [r for rows in _intervals(_events(p)).values() for r in rows]
        assert int(tl.events["start"].min()) == min(s for s, _, _ in iv)
        assert int(tl.events["end"].max()) == max(e for _, e, _ in iv)


def test_info_command_reads_the_samples(capsys):
    from cctviz.cli import main

    for p in (VIZ, PYSPY):
        main(["info", str(p)])
        out = capsys.readouterr().out
        assert "chrome" in out


def test_bad_input(tmp_path):
    for p in (VIZ, PYSPY):
        stats = fuzz_sample(p, "chrome", tmp_path / p.stem, n=40)
        assert stats["truncate:error"] > 0


def _jax_trace(tmp_path: Path) -> Path:
    script = """
import sys, jax, jax.numpy as jnp
@jax.jit
def f(x):
    return jnp.tanh(x @ x.T).sum()
x = jnp.ones((128, 128))
f(x).block_until_ready()
with jax.profiler.trace(sys.argv[1], create_perfetto_trace=True):
    for _ in range(5):
        f(x).block_until_ready()
"""
    subprocess.run([sys.executable, "-c", script, str(tmp_path)], check=True, timeout=300)
    (path,) = tmp_path.rglob("perfetto_trace.json.gz")
    return path


@pytest.mark.slow  # jax is in the main test environment, not the core suite's
def test_jax_perfetto_trace(tmp_path):
    path = _jax_trace(tmp_path)
    assert detect(path) == "chrome"
    tree = cctviz.read(path)
    events = _events(path)
    assert tree.meta["chrome"]["x_events"] == sum(e.get("ph") == "X" for e in events)
    assert tree.meta["chrome"]["skipped"].get("no phase", 0) == sum("ph" not in e for e in events)
    calls = _calls_by_name(tree)
    assert calls["PjitFunction(f)"] >= 5  # the jitted function, called 5 times
    names = {e["args"]["name"] for e in events if e.get("name") == "process_name"}
    assert tree.nodes["label"].iat[0] in names
    _check_against_json(path, tree)
    tl = cctviz.read_timeline(path)
    assert np.allclose(
        tl.ensemble().values("time")[:, 0] / 1e3, tree.metrics["time"].to_numpy(), atol=1e-6
    )


@pytest.mark.slow  # py-spy: the main test environment
def test_pyspy_recording(tmp_path):
    """py-spy exits 1 ("Failed to get process executable name") when the program
    ends before it attaches: under a loaded CI a fib(27) of 0.3 s did. The program
    runs for a second of wall time."""
    out = tmp_path / "fib.json"
    code = (
        "import time\n"
        "def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n"
        "t0 = time.time()\n"
        "while time.time() - t0 < 1.0:\n    fib(18)\n"
    )
    spy = Path(sys.executable).parent / "py-spy"
    res = subprocess.run(
        [str(spy), "record", "--format", "chrometrace", "-r", "500", "-o", str(out), "--",
         sys.executable, "-c", code],
        timeout=300, capture_output=True, text=True,
    )  # fmt: skip
    assert res.returncode == 0, res.stdout + res.stderr
    tree = cctviz.read(out)
    assert _calls_by_name(tree)["fib"] > 0
    _check_against_json(out, tree)
