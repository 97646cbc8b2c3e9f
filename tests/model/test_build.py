"""The model's shared tree builders (cctviz/model/build.py).

`nest_enter_leave` (vectorised; used by the OTF2 reader and speedscope's evented
profiles) is checked against a plain stack walk over random well-nested event
streams, and on its errors; `nest_intervals` (Chrome traces) against a stack walk
over random intervals that overlap without nesting too.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cctviz.model.build import NestingError, nest_enter_leave, nest_intervals
from tests.hypothesis_profiles import examples


def _stack_walk(region: list[int], ticks: list[int], end: int):
    """Reference: contexts by (parent context, region), inclusive time per Enter."""
    ids: dict[tuple[int, int], int] = {}
    ctx_parent, ctx_region = [-1], [-1]
    stack: list[tuple[int, int]] = []  # (context, start)
    ctx_of_enter, inc_of_enter, parent_of_enter = [], [], []
    open_index: list[int] = []
    for r, t in zip(region, ticks):
        if r >= 0:
            parent = stack[-1][0] if stack else 0
            key = (parent, r)
            if key not in ids:
                ids[key] = len(ctx_parent)
                ctx_parent.append(parent)
                ctx_region.append(r)
            ctx_of_enter.append(ids[key])
            parent_of_enter.append(parent)
            inc_of_enter.append(None)
            open_index.append(len(ctx_of_enter) - 1)
            stack.append((ids[key], t))
        else:
            _, start = stack.pop()
            inc_of_enter[open_index.pop()] = t - start
    for k, (_, start) in zip(open_index, stack):
        inc_of_enter[k] = end - start
    return ids, ctx_parent, ctx_region, ctx_of_enter, inc_of_enter, parent_of_enter


@st.composite
def event_streams(draw):
    """A well-nested Enter/Leave stream over a few regions, maybe left open."""
    region: list[int] = []
    stack: list[int] = []
    for _ in range(draw(st.integers(0, 60))):
        if stack and draw(st.booleans()):
            region.append(-1 - stack.pop())
        else:
            r = draw(st.integers(0, 4))
            region.append(r)
            stack.append(r)
    if draw(st.booleans()):
        while stack:
            region.append(-1 - stack.pop())
    gaps = draw(st.lists(st.integers(0, 5), min_size=len(region), max_size=len(region)))
    ticks = np.cumsum(gaps).tolist()
    return region, ticks, (ticks[-1] if ticks else 0) + 3


@given(event_streams())
@settings(max_examples=examples(200), deadline=None)
def test_nesting_equals_a_stack_walk(stream):
    region, ticks, end = stream
    n = nest_enter_leave(np.asarray(region, dtype=np.int64), np.asarray(ticks, np.int64), end)
    _, ctx_parent, ctx_region, ctx, inc, parent = _stack_walk(region, ticks, end)

    # the same contexts up to numbering: compare the call paths of every Enter
    def paths(cp, cr, of):
        def path(c):
            out = []
            while c > 0:
                out.append(int(cr[c]))
                c = int(cp[c])
            return tuple(reversed(out))

        return [path(c) for c in of]

    assert paths(n["ctx_parent"], n["ctx_region"], n["ctx"]) == paths(ctx_parent, ctx_region, ctx)
    assert paths(n["ctx_parent"], n["ctx_region"], n["parent_ctx"]) == paths(
        ctx_parent, ctx_region, parent
    )
    assert n["inc"].tolist() == inc
    assert n["ctx_parent"].shape[0] == len(ctx_parent)
    assert n["unclosed"] == sum(1 if r >= 0 else -1 for r in region)


def test_errors_name_the_event():
    with pytest.raises(NestingError) as e:
        nest_enter_leave(np.array([0, -1, -1]), np.array([0, 1, 2]), 2)
    assert e.value.event == 2 and "without a matching Enter" in str(e.value)
    with pytest.raises(NestingError) as e:
        nest_enter_leave(np.array([0, 1, -1]), np.array([0, 1, 2]), 2)
    assert e.value.event == 2 and "closes region 1" in str(e.value)


def _interval_walk(group: list[int], start: list[float], end: list[float]):
    """Reference: intervals by (group, start, longer first, given order) on a stack;
    one goes under the innermost open interval it starts in (those that end at or
    before its start are closed) and is clamped to end with it."""
    n = len(start)
    order = sorted(range(n), key=lambda k: (group[k], start[k], start[k] - end[k], k))
    parent, new_end = [-1] * n, list(end)
    stack: list[int] = []
    g_prev = None
    for k in order:
        if group[k] != g_prev:
            stack, g_prev = [], group[k]
        while stack and new_end[stack[-1]] <= start[k]:
            stack.pop()
        if stack:
            parent[k] = stack[-1]
            new_end[k] = min(new_end[k], new_end[stack[-1]])
        stack.append(k)
    return parent, new_end


intervals = st.lists(
    st.tuples(st.integers(0, 2), st.integers(0, 30), st.integers(0, 12)), max_size=40
)


@settings(max_examples=examples(300))
@given(intervals)
def test_intervals_nest_as_a_stack_walk_would(rows):
    group = [g for g, _, _ in rows]
    start = [float(s) for _, s, _ in rows]
    end = [float(s + d) for _, s, d in rows]
    n = nest_intervals(np.asarray(group, dtype=np.int64), np.asarray(start), np.asarray(end))
    parent, new_end = _interval_walk(group, start, end)
    assert n["parent"].tolist() == parent
    assert n["end"].tolist() == new_end
    assert n["clamped"].tolist() == [a < b for a, b in zip(new_end, end)]
    # the stream is well nested: it goes through nest_enter_leave, groups in order
    stream = n["stream"]
    assert sorted(stream.tolist()) == sorted(
        [*range(len(rows)), *(-1 - k for k in range(len(rows)))]
    )
    g = np.asarray(group)[np.where(stream >= 0, stream, -1 - stream)]
    assert (np.diff(g) >= 0).all()
    ticks = np.where(stream >= 0, np.asarray(start)[np.maximum(stream, 0)], 0.0)
    nested = nest_enter_leave(np.where(stream >= 0, 0, -1), ticks, 0)
    assert nested["unclosed"] == 0
