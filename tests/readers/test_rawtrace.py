"""The live trace decoder (cctviz.readers._rawtrace) against the runtime's own
replay of the same rows (cctviz.runtime.trace.replay, what the OTF2 archive is
written from): the same intervals, whole or cut into chunks anywhere, from a
recorder driven through every kind of transition and from a real traced job."""

from __future__ import annotations

import numpy as np

from cctviz.readers._rawtrace import RawTrace, decode
from cctviz.runtime.trace import TracingRecorder, replay
from tests.runtime.recorder_drive import _drive


def replayed(parent, rows) -> list[tuple[int, int, int]]:
    """(context, start, end) of every Enter/Leave pair of ``replay``."""
    out, stack, now = [], [], None
    for op, x in replay(parent, rows):
        if op == "t":
            now = x
        elif op == "E":
            stack.append((x, now))
        elif op == "L":
            node, start = stack.pop()
            assert node == x
            out.append((node, start, now))
    return sorted(out)


def decoded(parent, rows, cuts) -> list[tuple[int, int, int]]:
    """:func:`decode` over ``rows`` cut at ``cuts``, the open stack carried over;
    what is open at the end closed at the last row's time (as replay does)."""
    out = []
    opened = (np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64))
    for part in np.split(rows, cuts):
        node, start, end, opened = decode(part, np.asarray(parent), *opened)
        out += list(zip(node.tolist(), start.tolist(), end.tolist()))
    last = int(rows[-1, 0])
    out += [(int(n), int(s), last) for n, s in zip(*opened)]
    return sorted(out)


def driven() -> TracingRecorder:
    rec = TracingRecorder("job", trace_dir=None, clock=iter(range(0, 10**9, 7)).__next__)
    for _ in range(3):
        _drive(rec)
    return rec


def test_decoded_as_replayed_whole_and_in_every_split():
    rec = driven()
    rows = rec.event_array()
    want = replayed(rec.parent, rows)
    assert decoded(rec.parent, rows, []) == want
    for k in range(1, len(rows)):  # one cut anywhere
        assert decoded(rec.parent, rows, [k]) == want, k
    rng = np.random.default_rng(0)
    for _ in range(20):  # many cuts
        cuts = np.sort(rng.choice(np.arange(1, len(rows)), size=5, replace=False))
        assert decoded(rec.parent, rows, cuts) == want, cuts


def test_instant_calls_kept_only_where_they_nest():
    # main > step > forward; a barrier seen from another thread at depth -1
    parent = np.array([-1, 0, 1, 2, 0])  # 3: forward's child "barrier", 4: main's child
    rows = np.array([[0, 0, 0], [10, 1, 2], [20, -1, 3], [25, -1, 4], [50, 1, -1], [60, 0, -1]])
    got = decoded(parent, rows, [])
    assert (3, 20, 20) in got and (4, 25, 25) not in got
    assert got == replayed(parent, rows)


def test_raw_trace_read_in_pieces_as_replayed(tmp_path):
    """A RawTrace reading a file that grows by pieces of any size (a row cut in
    two included), its contexts declared after the rows that use them, gives
    what replay gives of the whole file."""
    rec = driven()
    rows = rec.event_array()
    data = rows.astype("<i8").tobytes()
    stem = tmp_path / "node1.cluster-12"  # a host name with dots
    path = tmp_path / "node1.cluster-12.events"
    tr = RawTrace(stem)
    rng = np.random.default_rng(1)
    cuts = np.sort(rng.choice(np.arange(1, len(data)), size=12, replace=False))
    for k, at in enumerate(cuts):
        path.write_bytes(data[:at])
        tr.update(rec.parent[: 3 + (len(rec.parent) - 3) * k // len(cuts)])
    path.write_bytes(data)
    tr.update(rec.parent)
    node, start, end, is_open = tr.intervals()
    got = sorted(zip(node.tolist(), start.tolist(), end.tolist()))
    assert tr.rows == len(rows) and got == replayed(rec.parent, rows)
    assert not is_open.any()  # the recorder finished: every context left
