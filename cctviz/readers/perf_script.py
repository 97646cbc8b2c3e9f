"""Linux ``perf script`` text: sampled call stacks, one profile per process.

``perf record -g`` samples call stacks; ``perf script`` prints each sample as a
header line and its stack, innermost frame first, one frame a line, and a blank
line after it::

    python  5600 32776.820378:    1001001 cpu-clock:pppH:
            eadf _dl_relocate_object+0xebf (/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2)
           1de39 dl_main+0x1e79 (/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2)

Facts and choices:

- **Header**: ``comm``, then the thread id (perf's default) or ``pid/tid``
  (``-F +pid``), an optional ``[cpu]``, the time (``seconds.micros:``: what
  tells a header from a frame; a file whose headers have none, from an older
  perf or ``perf script -F`` without ``time``, is told by its unindented lines,
  read as a tree of counts with ``meta["timestamps"]`` False and refused by
  ``read_timeline``), an optional period (the number of
  events the sample stands for) and the event name with its modifiers as perf
  prints it (``cpu-clock:pppH``, ``cycles:u``); anything after the event (a
  tracepoint's fields, the frame ``-G`` puts there) is ignored unless the
  sample has no stack lines, where a frame there is the sample's only frame.
  ``comm`` may hold spaces; a header may be indented (``-G`` right-aligns it).
- **Frames**: ``ip symbol (dso)``. The symbol's offset (``+0x1f``) is dropped,
  so samples anywhere in a function add up in one node. A frame is named by its
  symbol; an unresolved one (``[unknown]``) is named ``[unknown] (dso)`` so that
  frames of different binaries stay apart. Nodes carry the DSO (``dso``, as
  printed) and its base name (``module``, for grouping). The stack is reversed
  to go root first; a sample without any frame goes to a ``[no stack]`` node.
- **Profiles**: one per process: (``comm``, ``pid``) where the file gives
  ``pid/tid`` (its threads merged; the profile's ``threads`` counts them), and
  (``comm``, ``tid``) where it gives the thread id alone (perf's default: each
  thread is then a profile of its own). A process that changes its ``comm``
  (``exec``) is two profiles. One profile gives a :class:`~cctviz.Tree`,
  several an :class:`~cctviz.Ensemble` (profiles in order of pid, then comm).
- **Metrics**, per event, both sums: ``"<event> samples"`` counts the samples
  (unit ``samples``), and ``"<event>"`` sums their periods where every sample
  of the event has one: unit ``ns`` for ``cpu-clock`` and ``task-clock`` (their
  periods are nanoseconds), ``events`` otherwise (cycles, instructions, ...).
- Lines starting with ``#`` (``perf script --header``) and blank lines are
  skipped; any other line that is neither a header nor a frame, and a frame
  before the first header, are a :class:`~cctviz.ProfileError` naming the line.
- Parsing works on the whole text: numpy over its bytes tells the lines apart
  (empty, ``#``, may be a header: a ``<digit>:`` then a blank), then one regular
  expression runs over all header lines joined and one substitution over all
  frame lines joined; frames are coded by their ``symbol (dso)`` text and the
  tree is built level by level from (parent, frame) codes
  (:func:`cctviz.model.build.frames_to_tree`): no Python object per sample or frame.
- Detection: the first line that is not blank nor ``#`` must be a header as
  above, and the line after it a frame, a blank line or the end of the file.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import ProfileError
from ..model.build import frames_to_tree
from ..model.ensemble import Ensemble
from ..model.timeline import Timeline
from ..model.tree import Tree
from . import register, register_timeline
from ._json import file_bytes

_HEADER = (
    rb"[ \t]*(?P<comm>\S.*?)[ \t]+(?P<pid>-?\d+)(?:/(?P<tid>-?\d+))?"
    rb"[ \t]+(?:\[(?P<cpu>\d+)\][ \t]+)?(?:(?P<time>\d+\.\d+):[ \t]+)?"
    rb"(?:(?P<period>\d+)[ \t]+)?(?P<event>[^\s:]\S*?):(?:[ \t]+(?P<rest>.*?))?[ \t]*"
)
_HEADER_LINE = re.compile(rb"^(?:" + _HEADER + rb"|(?P<bad>.*))$", re.M)
_HEADER_GROUPS = sorted(_HEADER_LINE.groupindex, key=_HEADER_LINE.groupindex.get)
#: a frame's address (and the blanks around it), removed to leave ``symbol (dso)``
_IP = re.compile(rb"^[ \t]+[0-9a-fA-F]+(?:[ \t]+|$)", re.M)
#: the same after a newline: a literal first character lets the scan skip ahead
_NL_IP = re.compile(rb"\n[ \t]+[0-9a-fA-F]+(?:[ \t]+|(?=\n)|\Z)")
#: a symbol's offset, removed so that a function's samples add up
_SYMOFF = re.compile(rb"\+0x[0-9a-fA-F]+(?=[ \t]+\(|[ \t]*$)", re.M)
_SYM_DSO = re.compile(r"^(?P<sym>.*?)(?:[ \t]*\((?P<dso>[^()]*(?:\([^()]*\))?[^()]*)\))?[ \t]*$")
#: events whose period is a time in nanoseconds (perf's software clocks)
_NS_EVENTS = {"cpu-clock", "task-clock"}
NO_STACK = "[no stack]"


def _sniff(path: Path, h: bytes) -> bool:
    if not h or b"\x00" in h:
        return False
    lines = [ln.rstrip(b"\r") for ln in h.split(b"\n")]
    if len(h) >= 65536 and not h.endswith(b"\n"):
        lines = lines[:-1]  # the head cut the last line short
    k = next((i for i, ln in enumerate(lines) if ln.strip() and not ln.startswith(b"#")), None)
    if k is None:
        return False
    try:
        b"\n".join(lines[k : k + 2]).decode("utf-8")
    except UnicodeDecodeError:
        return False
    first = _HEADER_LINE.match(lines[k])
    if first is None or first.group("event") is None:
        return False
    if k + 1 >= len(lines) or not lines[k + 1].strip():
        return True
    nxt = lines[k + 1]
    return _IP.match(nxt) is not None or _HEADER_LINE.match(nxt).group("event") is not None


def _bytes(path: Path) -> bytes:
    raw = file_bytes(path)
    nul = raw.find(b"\x00")
    if nul >= 0:
        raise ProfileError(path, "binary data, not perf script text", where=f"byte {nul}")
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ProfileError(path, f"not UTF-8 text ({e.reason})", where=f"byte {e.start}") from None
    if b"\r" in raw:
        raw = raw.replace(b"\r\n", b"\n")
    return raw[:-1] if raw.endswith(b"\n") else raw


def _classify(path: Path, raw: bytes) -> tuple[np.ndarray, pd.DataFrame, np.ndarray]:
    """The file's lines, its sample headers (one row each, with ``line``) and the
    line numbers of its stack frames. Each regex runs once over the lines of one
    kind (joined), never once per line from Python."""
    lines = np.array(raw.split(b"\n"), dtype=object)
    skip, cand = _line_kinds(raw, len(lines))
    got = _HEADER_LINE.findall(b"\n".join(lines[cand])) if cand.size else []
    heads = pd.DataFrame.from_records(got, columns=_HEADER_GROUPS)
    ok = heads["bad"].to_numpy(dtype=object) == b"" if len(heads) else np.zeros(0, bool)
    ok &= heads["event"].to_numpy(dtype=object) != b"" if len(heads) else ok
    heads = heads[ok].drop(columns="bad").assign(line=cand[ok]).reset_index(drop=True)
    if heads.empty:
        raise ProfileError(path, "no sample header ('comm tid time: [period] event:') in the file")
    heads = _header_fields(path, heads)
    is_frame = ~skip
    is_frame[heads["line"].to_numpy()] = False
    return lines, heads, np.flatnonzero(is_frame)


def _line_kinds(raw: bytes, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Per line of ``raw`` (``n`` lines): whether it is empty or a ``#`` comment
    (lines of blanks only are found later, see :func:`_frame_keys`), and the
    lines that may be sample headers (a ``<digit>:`` followed by a blank: the
    end of the time), by numpy over the bytes."""
    b = np.frombuffer(raw, dtype=np.uint8)
    newline = np.flatnonzero(b == 10)
    start = np.concatenate([[0], newline + 1])
    end = np.concatenate([newline, [b.size]])
    full = end > start
    skip = ~full
    skip[full] = b[start[full]] == ord("#")
    colon = np.flatnonzero(b == ord(":"))
    colon = colon[colon > 0]
    nxt = b[np.minimum(colon + 1, b.size - 1)]
    blank_after = (colon + 1 == b.size) | (nxt == 32) | (nxt == 9) | (nxt == 10) | (nxt == 13)
    prev = b[colon - 1]
    ends_time = colon[blank_after & (prev >= ord("0")) & (prev <= ord("9"))]
    cand = np.searchsorted(newline, ends_time)  # sorted: drop repeats of a line
    cand = cand[np.r_[True, cand[1:] != cand[:-1]]] if cand.size else cand
    cand = cand[~skip[cand]]
    if not cand.size:  # no timestamps (older perf, or -F without time): unindented lines
        first = b[np.minimum(start, b.size - 1)]
        cand = np.flatnonzero(full & ~skip & (first != 32) & (first != 9))
    return skip, cand


def _matching_lines(regex: re.Pattern[bytes], text: bytes, n: int) -> np.ndarray:
    """Which of the ``n`` lines of ``text`` hold a match of ``regex`` (one pass)."""
    newline = np.flatnonzero(np.frombuffer(text, dtype=np.uint8) == 10)
    starts = np.fromiter((m.start() for m in regex.finditer(text)), dtype=np.int64)
    out = np.zeros(n, dtype=bool)
    out[np.searchsorted(newline, starts)] = True
    return out


def _header_fields(path: Path, heads: pd.DataFrame) -> pd.DataFrame:
    """The headers' fields as values: text decoded, numbers parsed (missing: -1, NaN)."""
    out = pd.DataFrame(index=heads.index)
    for col in ("comm", "event"):
        codes, uniq = pd.factorize(heads[col].to_numpy(dtype=object))
        out[col] = np.array([u.decode("utf-8") for u in uniq], dtype=object)[codes]
    for col in ("pid", "tid"):
        raw = heads[col].to_numpy(dtype=object)
        out[col] = np.where(raw == b"", b"-1", raw).astype("S").astype(np.int64)
    per = heads["period"].to_numpy(dtype=object)
    period = np.where(per == b"", b"nan", per).astype("S").astype(np.float64)
    out["period"] = period
    stamps = heads["time"].to_numpy(dtype=object)
    if (stamps == b"").any() and not (stamps == b"").all():
        k = int(np.flatnonzero(stamps == b"")[0])
        raise ProfileError(path, "a sample header without a time among headers with one",
                           where=f"line {int(heads['line'].iloc[k]) + 1}")  # fmt: skip
    timed = not (stamps == b"").any()
    out["time"] = _ns(stamps.astype("S")) if timed else np.full(len(heads), -1, dtype=np.int64)
    out["has_tid"] = heads["tid"].to_numpy(dtype=object) != b""
    out["line"] = heads["line"].to_numpy()
    out["rest"] = heads["rest"].to_numpy(dtype=object)  # bytes: a frame here is parsed as one
    return out


def _ns(text: np.ndarray) -> np.ndarray:
    """perf's ``seconds.fraction`` timestamps as int64 ns, digit for digit.

    >>> _ns(np.array([b"198791.127353", b"5.1"])).tolist()
    [198791127353000, 5100000000]
    """
    parts = np.char.partition(text, b".")
    frac = np.char.ljust(parts[:, 2], 9, b"0").astype("S9")
    return parts[:, 0].astype(np.int64) * 1_000_000_000 + frac.astype(np.int64)


def _frame_keys(path: Path, lines: np.ndarray, where: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``symbol (dso)`` of the frame lines ``lines[where]``: the address and the
    symbol's offset cut off (one substitution over all of them); and ``where``
    without the lines of blanks only."""
    text, n = _NL_IP.subn(b"\n", b"\n" + b"\n".join(lines[where]))
    text = text[1:]
    if n != where.size:  # lines of blanks only are no frames; anything else is an error
        blank = np.array([not ln.strip() for ln in lines[where]], dtype=bool)
        if blank.any():
            return _frame_keys(path, lines, where[~blank])
        bad = next(k for k in where if _IP.match(lines[k]) is None)
        raise ProfileError(
            path,
            "expected a sample header ('comm [pid/]tid [cpu] time: [period] event:') or a "
            f"stack frame ('ip symbol (dso)'), got {lines[bad][:80].decode()!r}",
            where=f"line {bad + 1}",
        )
    if not n:
        return np.empty(0, dtype=object), where
    return np.array(_SYMOFF.sub(b"", text).split(b"\n"), dtype=object), where


def _stacks(path: Path, raw: bytes) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """The sample headers and, per frame (samples in order, each innermost first),
    its sample and its key ``symbol (dso)``."""
    lines, heads, frames = _classify(path, raw)
    head_line = heads["line"].to_numpy()
    sample = np.searchsorted(head_line, frames, side="right") - 1
    if (sample < 0).any():
        k = int(frames[sample < 0][0])
        raise ProfileError(path, "a stack frame before the first sample header", f"line {k + 1}")
    keys, kept = _frame_keys(path, lines, frames)
    sample = sample[np.isin(frames, kept)] if kept.size < frames.size else sample
    # a sample without stack lines: the frame its header ends with (perf script -G)
    has = np.zeros(len(heads), dtype=bool)
    has[sample] = True
    empty = np.flatnonzero(~has)
    rest = b" " + heads["rest"].to_numpy(dtype=object)[empty]
    framed = _matching_lines(_IP, b"\n".join(rest), rest.size)
    lone = np.full(empty.size, NO_STACK.encode(), dtype=object)
    if framed.any():
        lone[framed] = _frame_keys(path, rest, np.flatnonzero(framed))[0]
    sample = np.concatenate([sample, empty])
    keys = np.concatenate([keys, lone])
    order = np.argsort(sample, kind="stable")  # each sample's frames stay in order
    return heads, sample[order], keys[order]


def _frame_names(path: Path, keys: np.ndarray) -> tuple[np.ndarray, pd.DataFrame]:
    """Each frame's code and, per code, its name, DSO and module."""
    codes, uniq = pd.factorize(keys)
    try:
        text = [k.decode("utf-8") for k in uniq]  # once per distinct frame
    except UnicodeDecodeError as e:
        raise ProfileError(path, f"a frame is not UTF-8 text ({e.reason})") from None
    parts = pd.Series(text, dtype=object).str.extract(_SYM_DSO)
    sym = parts["sym"].fillna("")
    dso = parts["dso"].fillna("")
    unknown = sym.isin(["", "[unknown]"])
    name = sym.where(~unknown, "[unknown] (" + dso + ")")
    name = name.where(~(unknown & (dso == "")), "[unknown]")
    table = pd.DataFrame({"name": name.to_numpy(dtype=object), "dso": dso.to_numpy(dtype=object)})
    table["module"] = table["dso"].str.rsplit("/", n=1).str[-1]
    table.loc[table["dso"] == "", ["dso", "module"]] = None
    return codes.astype(np.int64), table


def _profiles(heads: pd.DataFrame) -> tuple[np.ndarray, pd.DataFrame]:
    """Each sample's profile and the profiles table (see the module docstring)."""
    by_pid = bool(heads["has_tid"].any())
    who = "pid" if by_pid else "tid"
    key = pd.DataFrame({who: heads["pid"].to_numpy(), "comm": heads["comm"].to_numpy()})
    uniq = key.drop_duplicates().sort_values([who, "comm"], kind="stable").reset_index(drop=True)
    prof = pd.MultiIndex.from_frame(uniq).get_indexer(pd.MultiIndex.from_frame(key))
    table = uniq[["comm", who]].copy()
    if by_pid:
        tid = np.where(heads["has_tid"], heads["tid"], heads["pid"])
        table["threads"] = pd.Series(tid).groupby(prof).nunique().to_numpy()
    return prof.astype(np.int64), table


def _metric_rows(
    heads: pd.DataFrame, leaf: np.ndarray, prof: np.ndarray
) -> tuple[pd.DataFrame, dict[str, str]]:
    """Rows (node, profile, one column per metric) and the metrics' units."""
    events, ev = np.unique(heads["event"].to_numpy(dtype=object), return_inverse=True)
    period = heads["period"].to_numpy(dtype=np.float64)
    rows = pd.DataFrame({"node": leaf, "profile": prof})
    units: dict[str, str] = {}
    for k, e in enumerate(events):
        mine = ev == k
        if not np.isnan(period[mine]).any():
            rows[e] = np.where(mine, period, 0.0)
            units[e] = "ns" if e.split(":", 1)[0] in _NS_EVENTS else "events"
        rows[f"{e} samples"] = mine.astype(np.float64)
        units[f"{e} samples"] = "samples"
    rows = rows.groupby(["node", "profile"], as_index=False, sort=True).sum()
    return rows, units


def _parsed(path: Path) -> tuple[pd.DataFrame, np.ndarray, np.ndarray, np.ndarray, dict]:
    """The sample headers, the tree of their stacks (parents, each sample's
    leaf), its nodes' names and columns (``dso``, ``module``)."""
    heads, sample, keys = _stacks(path, _bytes(path))
    codes, table = _frame_names(path, keys)
    parent, code, leaf = frames_to_tree(sample, codes, len(heads))
    cols = {"dso": table["dso"].to_numpy()[code], "module": table["module"].to_numpy()[code]}
    return heads, parent, leaf, table["name"].to_numpy()[code], cols


@register("perf", _sniff, "Linux perf script text (perf record -g; perf script)")
def read_perf_script(path: Path) -> Tree | Ensemble:
    """Read the text ``perf script`` prints: one CCT per process, a metric per event.

    Args:
        path: the text file (gzipped or not).

    Example:
        >>> import cctviz
        >>> t = cctviz.read("../shared/data/linux-perf/simple.linux-perf.txt")
        >>> t.meta["format"], t.meta["comm"], t.units["cpu-clock"]
        ('perf', 'simple-terminat', 'ns')
        >>> t.nodes["name"].tolist()[:3]
        ['[unknown] ([unknown])', '__libc_start_main', 'main']
    """
    heads, parent, leaf, names, cols = _parsed(path)
    prof, profiles = _profiles(heads)
    rows, units = _metric_rows(heads, leaf, prof)
    metrics = [c for c in rows.columns if c not in ("node", "profile")]
    meta = {
        "units": units,
        "aggregation": dict.fromkeys(metrics, "sum"),
        "events": sorted(heads["event"].unique().tolist()),
        "timestamps": bool(len(heads) and (heads["time"] >= 0).all()),
    }
    if len(profiles) == 1:
        exc = rows.groupby("node")[metrics].sum().reindex(range(len(parent)), fill_value=0.0)
        meta.update({k: _scalar(v) for k, v in profiles.iloc[0].items()})
        return Tree.from_parents(parent, names, exc, kind="function", columns=cols, meta=meta)
    tree, ids = Tree.from_parents_with_ids(parent, names, None, kind="function", columns=cols)
    rows["node"] = ids[rows["node"].to_numpy()]
    return Ensemble(tree, rows, profiles, meta)


@register_timeline("perf")
def read_perf_timeline(path: Path, event: str | None = None) -> Timeline:
    """``perf script`` text as a :class:`~cctviz.model.timeline.Timeline`: per
    thread, each sample of ``event`` (default: the file's first event) stands
    for the time until that thread's next sample (the last for the thread's
    median gap), and consecutive samples under the same context make one
    interval of it, at every depth of their stacks (a flame chart of the
    samples in time order). One profile per thread (``comm``, ``pid``,
    ``tid``); times in ns on perf's clock. ``ensemble()`` gives the time per
    context so estimated (sampling: an interval is charged whole to the stack
    sampled at its start); the tree's metrics (``read``) count the samples.

    Example:
        >>> import cctviz
        >>> tl = cctviz.read_timeline("../shared/data/linux-perf/simple-with-pid.linux-perf.txt")
        >>> tl.meta["event"], len(tl.profiles), bool((tl.events["end"] > tl.events["start"]).all())
        ('cpu-clock', 1, True)
    """
    heads, parent, leaf, frame_names, cols = _parsed(path)
    if len(heads) and (heads["time"] < 0).all():
        raise ProfileError(
            path,
            "its samples have no time (perf script without the time field, or an older "
            "perf): no timeline; cctviz.read gives its tree of sample counts",
        )
    tree, ids = Tree.from_parents_with_ids(parent, frame_names, None, kind="function", columns=cols)
    names = heads["event"].to_numpy(dtype=object)
    event = event or str(names[0])
    if event not in set(names):
        raise ValueError(f"{path}: no sample of event {event!r} (events: {sorted(set(names))})")
    keep = np.flatnonzero(names == event)
    tid = np.where(heads["has_tid"], heads["tid"], heads["pid"]).astype(np.int64)[keep]
    who = pd.DataFrame(
        {"comm": heads["comm"].to_numpy()[keep], "pid": heads["pid"].to_numpy()[keep], "tid": tid}
    )
    profile, uniq = pd.factorize(pd.MultiIndex.from_frame(who), sort=True)
    profiles = pd.DataFrame(list(uniq), columns=["comm", "pid", "tid"])
    t = heads["time"].to_numpy()[keep]
    order = np.lexsort((t, profile))
    profile, t, node = profile[order], t[order], ids[leaf[keep][order]]
    period = heads["period"].to_numpy(dtype=np.float64)[keep][order]
    clock = event.split(":", 1)[0] in _NS_EVENTS  # a period in ns: a lone sample's length
    end = _sample_ends(profile, t, np.nan_to_num(period) if clock else np.zeros(t.size))
    events = _flame_intervals(tree, profile, node, t, end)
    meta = {"format": "perf", "event": event, "path": str(path), "event_metrics": {}}
    return Timeline(tree, events, profiles, meta=meta)


def _sample_ends(profile: np.ndarray, t: np.ndarray, alone: np.ndarray) -> np.ndarray:
    """Each sample's end: the next sample of its profile; the last one's start
    plus its profile's median gap (``alone``, the sample's own length if known
    (a clock event's period), for a profile of one sample).

    >>> _sample_ends(np.array([0, 0, 0, 1]), np.array([0, 10, 30, 5]), np.array([0, 0, 0, 7])).tolist()
    [10, 30, 45, 12]
    """
    end = np.empty_like(t)
    end[:-1] = t[1:]
    last = np.ones(t.size, dtype=bool)
    last[:-1] = profile[1:] != profile[:-1]
    gap = pd.Series(np.where(last, np.nan, end - t)).groupby(profile).median()
    gap = gap.reindex(range(int(profile.max(initial=-1)) + 1)).to_numpy()[profile[last]]
    end[last] = t[last] + np.where(np.isnan(gap), alone[last], gap).astype(np.int64)
    return end


def _flame_intervals(
    tree: Tree, profile: np.ndarray, node: np.ndarray, t: np.ndarray, end: np.ndarray
) -> pd.DataFrame:
    """Intervals of runs of consecutive samples (per profile, in time order)
    under the same context, at every depth: a level at a time, no loop per sample."""
    depth = np.asarray(tree.depth)
    parent = np.asarray(tree.parent)
    cur = node.copy()
    parts = []
    for d in range(int(depth[node].max(initial=0)), -1, -1):
        up = depth[cur] > d
        cur[up] = parent[cur[up]]
        anc = np.where(depth[cur] == d, cur, -1)
        new = np.ones(anc.size, dtype=bool)
        new[1:] = (anc[1:] != anc[:-1]) | (profile[1:] != profile[:-1])
        first = np.flatnonzero(new)
        last = np.append(first[1:], anc.size) - 1
        ok = anc[first] >= 0
        first, last = first[ok], last[ok]
        parts.append(
            pd.DataFrame(
                {"profile": profile[first], "node": anc[first], "start": t[first], "end": end[last]}
            )
        )
    events = pd.concat(parts, ignore_index=True)
    return events.sort_values(["profile", "start", "node"], kind="stable", ignore_index=True)


def _scalar(v: object) -> object:
    return v.item() if isinstance(v, np.generic) else v
