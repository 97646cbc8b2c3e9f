"""Folded stacks: one ``frame;frame;frame count`` line per distinct stack.

The text format of Brendan Gregg's FlameGraph (``stackcollapse-*.pl``), of
``perf script | stackcollapse-perf.pl``, of py-spy ``--format raw`` and of
many other samplers. Facts and choices:

- A line is a stack, outermost frame first, frames separated by ``;``,
  then whitespace and a count: the count is the **last** whitespace-separated
  field (so a frame name may contain spaces), the stack everything before it.
  Counts are usually integers (samples); a decimal number is accepted too.
- Empty (or blank) lines and ``#`` comment lines are ignored. A line with a
  count and no stack (py-spy's `` 4``: samples of a thread that showed no
  Python frame) counts, under a root named ``(no frames)``
  (:data:`~cctviz.model.build.NO_FRAMES`), so that the samples add up to
  what the tool took. A line that does not parse (no count, a count that is
  not a non-negative number) is skipped with a warning naming its line number
  (each of the first five); where no line parses, or more than a tenth of the
  lines do not, the file is no folded-stacks file: a
  :class:`~cctviz.ProfileError` naming the first bad line.
- Text is UTF-8, or UTF-16 with its byte-order mark (what PowerShell's ``>``
  writes: a BOM, then UTF-16LE), or UTF-8 with a BOM.
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

import codecs
import re
import warnings
from pathlib import Path

import numpy as np

from ..errors import ProfileError
from ..model.build import NO_FRAMES, stacks_to_tree
from ..model.tree import Tree
from . import register
from ._json import file_bytes

_LINE = re.compile(r"^(\S.*)?[ \t]\d+$")  # a stack (or none) and an integer count
_SNIFF_LINES = 50
_BOMS = (
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


def _decode(h: bytes, final: bool) -> str:
    """The text of ``h`` by its byte-order mark (UTF-8 without one);
    ``final=False`` for a head that may cut a character short."""
    enc = next((e for bom, e in _BOMS if h.startswith(bom)), "utf-8")
    return codecs.getincrementaldecoder(enc)().decode(h, final=final)


def _sniff(path: Path, h: bytes) -> bool:
    if not h:
        return False
    try:
        text = _decode(h, final=False)
    except UnicodeDecodeError:
        return False
    if "\x00" in text:
        return False
    lines = text.split("\n")
    if len(h) >= 65536 and not text.endswith("\n"):
        lines = lines[:-1]  # the head cut the last line short
    lines = [ln.rstrip("\r") for ln in lines if ln.strip() and not ln.startswith("#")]
    lines = lines[:_SNIFF_LINES]
    if not lines:
        return False
    return all(_LINE.match(ln) for ln in lines) and any(";" in ln for ln in lines)


#: a file with more lines that do not parse than this share of its lines is no
#: folded-stacks file (an error); fewer are skipped, each named in a warning
BAD_SHARE = 0.1
#: the bad lines a warning names (then how many more)
NAMED = 5


def _parse_lines(path: Path, text: str) -> tuple[list[str], np.ndarray]:
    stacks: dict[str, float] = {}
    bad: list[tuple[int, str]] = []
    good = 0
    for k, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.rstrip().rsplit(None, 1)
        stack = parts[0].strip() if len(parts) == 2 else ""
        try:
            value = float(parts[-1])
        except ValueError:
            value = float("nan")
        no_stack = len(parts) == 1 and line[:1].isspace()  # ' 4': samples without a frame
        if (not stack and not no_stack) or not np.isfinite(value) or value < 0:
            bad.append((k, line))
            continue
        stacks[stack] = stacks.get(stack, 0.0) + value
        good += 1
    _judge(path, bad, good + len(bad), good > 0)
    return list(stacks), np.fromiter(stacks.values(), dtype=np.float64, count=len(stacks))


def _judge(path: Path, bad: list[tuple[int, str]], lines: int, read: bool) -> None:
    """No line read, or more than :data:`BAD_SHARE` of them bad: a ProfileError
    naming the first bad line; a few bad: a warning naming them."""
    expected = "expected '<frame;frame;...> <count>' (a non-negative number last)"
    if not read and not bad:
        raise ProfileError(path, "no stack lines (expected 'frame;frame;... count' lines)")
    if not bad:
        return
    k, line = bad[0]
    if not read or len(bad) > BAD_SHARE * lines:
        raise ProfileError(path, f"{expected}, got {line[:80]!r}", where=f"line {k}")
    named = ", ".join(f"line {k} ({line[:40]!r})" for k, line in bad[:NAMED])
    more = f" and {len(bad) - NAMED} more" if len(bad) > NAMED else ""
    warnings.warn(
        f"{path}: {len(bad)} line(s) not read, {expected}: {named}{more}; the other lines are",
        stacklevel=5,
    )


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
    raw = file_bytes(path)
    try:
        text = _decode(raw, final=True)
    except UnicodeDecodeError as e:
        raise ProfileError(
            path, f"not UTF-8 or UTF-16 text ({e.reason})", where=f"byte {e.start}"
        ) from None
    nul = text.find("\x00")
    if nul >= 0:
        raise ProfileError(path, "binary data, not folded-stacks text", where=f"character {nul}")
    stacks, counts = _parse_lines(path, text)
    frames = (s.split(";") if s else [] for s in stacks)
    parent, keys, w = stacks_to_tree(frames, counts, empty=NO_FRAMES)
    return Tree.from_parents(parent, keys, {metric: w}, meta={"aggregation": {metric: "sum"}})
