"""cctviz's Chrome trace-event reader against speedscope's importer on
speedscope's own samples (tests/data/speedscope-trace-event): the exclusive
time of every call path of every (pid, tid) that its Jest snapshots record
(weights as printed there, to the hundredth of their unit; frame names without
the arguments speedscope appends; Hermes's samples form too). Where the format leaves room (unbalanced or
mismatched ``B``/``E``, equal timestamps), the readers may differ: those files
are listed apart, and the files read alike must stay so."""

from __future__ import annotations

import re
import warnings
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

import cctviz

DIR = Path(__file__).resolve().parents[1] / "data" / "speedscope-trace-event"
SNAPSHOT = DIR / "trace-event.test.ts.snap"
UNIT_US = {"µs": 1.0, "ms": 1e3, "s": 1e6}
#: read as speedscope reads them (checked below; more may join)
ALIKE = {
    "end-event-with-empty-stack.json", "event-reordering-name-match.json", "matching-x.json",
    "mismatched-args.json", "multiprocess.json", "not-enough-end-events.json",
    "only-begin-events.json", "out-of-order.json", "simple-hermes.json", "simple.json",
    "simple-partial.json", "simple-partial-trailing-comma.json",
    "simple-partial-whitespace.json", "simultaneous-anonymous-calls.json", "simple-object.json",
    "simple-with-samples.json", "multi-thread-with-samples.json",
    "unbalanced-args.json", "x-events-matching-end.json", "x-events-matching-start.json",
}  # fmt: skip


def snapshots() -> dict[str, dict[tuple[str, str, str], float]]:
    """Per sample file, its exclusive microseconds per (pid, tid, path) as the
    snapshots record them."""
    text = SNAPSHOT.read_text()
    files = dict(re.findall(
        r'^exports\[`importTraceEvents (.+?): profileGroup\.name 1`\] = `"(.+?)"`;$', text, re.M
    ))  # fmt: skip
    out: dict[str, dict] = defaultdict(lambda: defaultdict(float))
    blocks = re.findall(
        r"^exports\[`importTraceEvents ([^`\n]+?) \d+`\] = `\n(.*?)\n`;$", text, re.S | re.M
    )
    for test, body in blocks:
        stacks = re.search(r'"stacks": \[\n(.*?)\n  \]', body, re.S)
        if test not in files or stacks is None:
            continue
        name = re.search(r'^  "name": "(.*)",$', body, re.M).group(1)
        pid, tid = (
            re.search(r"pid (-?\w+)", name).group(1),
            re.search(r"tid (-?\w+)", name).group(1),
        )
        got = out[files[test]]
        if any(k[:2] == (pid, tid) for k in got):
            continue  # the same file and thread in another test: once
        for line in stacks.group(1).splitlines():
            m = re.match(r'\s*"(.*) ([\d.]+)(µs|ms|s)",$', line)
            path = ";".join(f.split(" {", 1)[0] for f in m.group(1).split(";"))
            got[(pid, tid, path)] += float(m.group(2)) * UNIT_US[m.group(3)]
    return out


def exclusive(path: Path) -> dict[tuple[str, str, str], float]:
    """cctviz's exclusive time (us) per (pid, tid, path below the thread)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        data = cctviz.read(path, thread_ids=True)
    tree = data if isinstance(data, cctviz.Tree) else data.tree
    vals = (data.metrics["time"].to_numpy()[:, None] if isinstance(data, cctviz.Tree)
            else data.values("time"))  # fmt: skip
    out: dict = defaultdict(float)
    for i in range(len(tree)):
        p = tree.path(i)
        if len(p) < 3:
            continue
        v = np.nansum(vals[i])
        if v:
            out[(p[0].split(" ", 1)[1], p[1].split(" ", 1)[1], ";".join(p[2:]))] += float(v)
    return out


def same(want: dict, got: dict) -> bool:
    """Equal to the snapshot's printed precision (a hundredth of its unit)."""
    return all(
        abs(want.get(k, 0.0) - got.get(k, 0.0)) <= (0.0051 if want.get(k, 0.0) < 1e3 else 5.1)
        for k in set(want) | set(got)
    )


@pytest.fixture(scope="module")
def expected():
    return snapshots()


@pytest.mark.parametrize("name", sorted(ALIKE))
def test_read_as_speedscope_reads_it(expected, name):
    want, got = expected[name], exclusive(DIR / name)
    assert want and same(want, got), {k: (want.get(k), got.get(k)) for k in set(want) | set(got)}


def test_every_file_is_read_and_the_others_are_said(expected, capsys):
    """Every sample file is read; the ones that differ are printed (what the
    format leaves open)."""
    differ = [
        name for name in sorted(expected)
        if name not in ALIKE and not same(expected[name], exclusive(DIR / name))
    ]  # fmt: skip
    with capsys.disabled():
        print(f"\nspeedscope trace-event samples: {len(ALIKE)} alike, {len(differ)} differ "
              f"({', '.join(differ)})")  # fmt: skip
    assert len(ALIKE) + len(differ) == len(expected)
