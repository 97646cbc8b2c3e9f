"""Folded stacks: one ``frame;frame;frame count`` line per distinct stack.

The text format of Brendan Gregg's FlameGraph (``stackcollapse-*.pl``), of
``perf script | stackcollapse-perf.pl``, of py-spy ``--format raw`` and of
many other samplers. Facts and choices:

- A line is a stack, outermost frame first, frames separated by ``;``,
  then whitespace and a count: the count is the **last** whitespace-separated
  field (so a frame name may contain spaces), the stack everything before it.
  Counts are usually integers (samples); a decimal number is accepted too.
- Empty (or blank) lines are ignored. Any other line that does not parse (no
  count, a count that is not a non-negative number, an empty stack) is a
  :class:`~cctviz.ProfileError` naming the line number.
- The same stack on several lines adds up. The count of a line is the
  **exclusive** value of the stack's last frame; inclusive values are derived.
  Frames are merged by name under the same parent (a call-path tree): the
  folded form keeps nothing else (no file, no line).
- The metric is called ``samples`` (``metric=`` renames it), without a unit
  (a count), and is a sum (``meta["aggregation"]``).
- Detection is deliberately conservative, since this reader is asked last: the
  file must be UTF-8 text, every one of its first lines (up to 50) must look
  like ``<stack> <integer>``, and at least one of them must hold a ``;``. So a
  TAU ``profile.N.0.0``, a DOT graph or a CSV table is never taken for folded
  stacks; a one-frame-per-line file of ``name count`` pairs is not either.

:func:`cctviz.model.build.stacks_to_tree` (stacks of frame keys -> tree) is shared with the
speedscope and pyinstrument readers.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from ..errors import ProfileError
from ..model.build import stacks_to_tree
from ..model.tree import Tree
from . import register

_LINE = re.compile(rb"^\S.*[ \t]\d+$")
_SNIFF_LINES = 50


def _sniff(path: Path, h: bytes) -> bool:
    if not h or b"\x00" in h:
        return False
    lines = h.split(b"\n")
    if len(h) >= 65536 and not h.endswith(b"\n"):
        lines = lines[:-1]  # the head cut the last line short
    lines = [ln.rstrip(b"\r") for ln in lines if ln.strip()][:_SNIFF_LINES]
    if not lines:
        return False
    try:
        b"\n".join(lines).decode("utf-8")
    except UnicodeDecodeError:
        return False
    return all(_LINE.match(ln) for ln in lines) and any(b";" in ln for ln in lines)


def _parse_lines(path: Path, text: str) -> tuple[list[str], np.ndarray]:
    stacks: dict[str, float] = {}
    for k, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        parts = line.rstrip().rsplit(None, 1)
        stack = parts[0].rstrip() if len(parts) == 2 else ""
        count = parts[-1]
        try:
            value = float(count)
        except ValueError:
            value = float("nan")
        if not stack or not np.isfinite(value) or value < 0:
            raise ProfileError(
                path,
                f"expected '<frame;frame;...> <count>' (a non-negative number last), got {line[:80]!r}",
                where=f"line {k}",
            )
        stacks[stack] = stacks.get(stack, 0.0) + value
    if not stacks:
        raise ProfileError(path, "no stack lines (expected 'frame;frame;... count' lines)")
    return list(stacks), np.fromiter(stacks.values(), dtype=np.float64, count=len(stacks))


@register("folded", _sniff, "Folded stacks ('a;b;c 123' lines: FlameGraph, perf, py-spy raw)")
def read_folded(path: Path, metric: str = "samples") -> Tree:
    """Read a folded-stacks file (``frame;frame;... count`` lines).

    Args:
        path: the file (gzipped or not).
        metric: name of the metric the counts go to.

    Example:
        >>> import cctviz, tempfile, os
        >>> p = os.path.join(tempfile.mkdtemp(), "out.folded")
        >>> _ = open(p, "w").write("main;solve;dot 30\\nmain;io 5\\nmain;solve 10\\n")
        >>> t = cctviz.read(p)
        >>> t.nodes["name"].tolist(), t.metrics["samples (inc)"].tolist()
        (['main', 'solve', 'dot', 'io'], [45.0, 40.0, 30.0, 5.0])
    """
    raw = _read_bytes(path)
    nul = raw.find(b"\x00")
    if nul >= 0:
        raise ProfileError(path, "binary data, not folded-stacks text", where=f"byte {nul}")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ProfileError(path, f"not UTF-8 text ({e.reason})", where=f"byte {e.start}") from None
    stacks, counts = _parse_lines(path, text)
    parent, keys, w = stacks_to_tree((s.split(";") for s in stacks), counts)
    return Tree.from_parents(parent, keys, {metric: w}, meta={"aggregation": {metric: "sum"}})


def _read_bytes(path: Path) -> bytes:
    import gzip
    import zlib

    try:
        raw = path.read_bytes()
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
    except (OSError, EOFError, zlib.error) as e:
        raise ProfileError(path, f"cannot read the file: {e}") from None
    return raw
