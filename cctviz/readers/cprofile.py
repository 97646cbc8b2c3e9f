"""cProfile / profile statistics (``pstats`` files: ``cProfile.run(..., file)``,
``Profile.dump_stats``, ``python -m cProfile -o``).

**The file.** A ``marshal`` dump of one dict ``{function: (cc, nc, tt, ct,
callers)}``, where ``function`` is ``(file, line, name)`` (builtins have
file ``"~"`` and line 0), ``cc`` the primitive (non-recursive) calls, ``nc``
all calls, ``tt`` the time spent in the function itself (tottime, seconds),
``ct`` the cumulative time (cumtime: callees included, recursive re-entries
counted once), and ``callers`` ``{caller: (nc, cc, tt, ct)}``: the same
numbers restricted to calls from that caller (the pure-Python ``profile``
module stores a bare call count there instead). Python 2 and Python 3 dumps
are both read: cctviz decodes the marshal data itself (only numbers,
strings, tuples, lists and dicts; no code objects; lengths checked against
the bytes left, nesting bounded), so a broken or hostile file is a
:class:`~cctviz.ProfileError`, never a crash or a huge allocation.

**From a call graph to a calling-context tree.** A pstats file is a call
*graph*: it knows how much time ``f`` spent when called from ``g``, not from
which call path. cctviz unfolds it like this, and the result is an
approximation that the format forces (the same as gprof's):

- Roots: every function that was called from outside any profiled function
  (one with no callers, or whose calls ``nc`` exceed the calls its callers
  account for: e.g. the code running when the profiler started). A function
  nothing reaches (a cycle entered before profiling began) becomes a root too.
- Children: the callees of a node's function, along the ``callers`` edges.
  **Recursion is cut** where the callee is already on the node's call path:
  the edge's time and calls are added to that ancestor (so a recursive
  function is one node per call path that enters it, holding the time of
  all its recursion levels).
- Per-edge splitting: when a function appears at several call paths, the
  numbers of each of its outgoing edges are shared among those nodes in
  proportion to the node's share of the function's calls (the assumption
  that every call of a function behaves alike). Then, per function, the
  node values are scaled so they sum to exactly the function's numbers in
  the file. Hence the **per-function totals are exact**; how they split over
  call paths is an estimate, exact only where a function is reached by one
  call path.

**Metrics.** ``time`` = tottime (exclusive, seconds: ``meta["units"]``, an
assumption the file cannot confirm, recorded in ``meta["units_assumed"]``);
``time (inc)`` is derived from it, and equals cProfile's cumtime where the
split is exact (a function reached by one path, recursion confined to
itself); the roots' inclusive times add up to ``pstats.Stats.total_tt``.
``calls`` = ncalls (recursive calls included), ``primitive calls`` = the
non-recursive ones (pstats' ``ncalls`` column shows ``calls/primitive``). All
three are sums (``meta["aggregation"]``). A count of -1 is unknown (what
``pyinstrument -r pstats`` writes for every count: a sampler counts no calls):
the call paths are then split by the edges' cumulative time instead of their
calls, the unknown counts are NaN (missing, not 0), a metric with no count
known is left out, and ``meta["calls_unknown"]`` says so.
Node columns ``file``, ``line``. ``meta``: ``total_calls``,
``primitive_calls``, ``total_tt``, as ``pstats.Stats`` computes them.

Call graphs with many paths can unfold into very large trees: ``max_nodes``
(default 200,000) bounds the tree; past it the unfolding stops, a warning is
issued and ``meta["truncated"]`` is set (per-function totals then cover only
the call paths kept).
"""

from __future__ import annotations

import struct
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ProfileError
from ..model.tree import Tree
from . import register

#: the call count of a pstats file that does not know it (pyinstrument's ``-r pstats``
#: writes -1 for every count: a sampler counts no calls); read as missing (NaN)
UNKNOWN = -1

SECONDS_REASON = (
    "pstats files state no unit; cProfile's default timer (time.perf_counter) "
    "counts seconds, as pstats prints them (a custom timer's unit is not recorded)"
)

# ----------------------------------------------------------------- marshal


class _Bad(Exception):
    """Malformed marshal data (turned into a ProfileError by the caller)."""


_FLAG_REF = 0x80
_MAX_DEPTH = 64


class _Marshal:
    """A decoder of the marshal subset pstats files use, for Python 2 and 3 dumps."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0
        self.refs: list[Any] = []  # Python 3: objects flagged FLAG_REF, for 'r'
        self.interned: list[str] = []  # Python 2: 't' strings, for 'R'

    def _take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise _Bad(f"data ends inside an object at byte {self.pos}")
        b = self.data[self.pos : self.pos + n]
        self.pos += n
        return b

    def _i32(self) -> int:
        return struct.unpack("<i", self._take(4))[0]

    def _size(self, small: bool = False) -> int:
        n = self._take(1)[0] if small else self._i32()
        if n < 0 or n > len(self.data) - self.pos:
            raise _Bad(f"impossible length {n} at byte {self.pos}")
        return n

    def _text(self, raw: bytes) -> str:
        return raw.decode("utf-8", errors="surrogateescape")

    def load(self, depth: int = 0) -> Any:
        if depth > _MAX_DEPTH:
            raise _Bad("objects nested too deeply")
        at = self.pos
        code = self._take(1)[0]
        flag, t = code & _FLAG_REF, chr(code & ~_FLAG_REF)
        slot = -1
        if flag:
            slot = len(self.refs)
            self.refs.append(None)  # reserved: containers fill it when done
        v: Any
        if t == "0":
            v = _NULL
        elif t == "N":
            v = None
        elif t in "TF":
            v = t == "T"
        elif t == "i":
            v = self._i32()
        elif t == "I":
            v = struct.unpack("<q", self._take(8))[0]
        elif t == "l":
            n = self._i32()
            if abs(n) > len(self.data) - self.pos:
                raise _Bad(f"impossible long size at byte {at}")
            digits = struct.unpack(f"<{abs(n)}H", self._take(2 * abs(n)))
            v = sum(d << (15 * k) for k, d in enumerate(digits))
            v = -v if n < 0 else v
        elif t == "g":
            v = struct.unpack("<d", self._take(8))[0]
        elif t == "f":
            s = self._take(self._take(1)[0])
            try:
                v = float(s.decode("ascii"))
            except (UnicodeDecodeError, ValueError):
                raise _Bad(f"bad float text at byte {at}") from None
        elif t in "st":  # Python 2 str / interned str, Python 3 bytes / interned str
            v = self._text(self._take(self._size()))
            if t == "t":
                self.interned.append(v)
        elif t == "R":  # Python 2: reference to an interned string
            k = self._i32()
            if not 0 <= k < len(self.interned):
                raise _Bad(f"string reference {k} out of range at byte {at}")
            v = self.interned[k]
        elif t in "uaA":
            v = self._text(self._take(self._size()))
        elif t in "zZ":
            v = self._text(self._take(self._size(small=True)))
        elif t in "()[<>":
            n = self._size(small=t == ")")
            items = [self.load(depth + 1) for _ in range(n)]
            if any(x is _NULL for x in items):
                raise _Bad(f"missing item in a container at byte {at}")
            v = list(items) if t == "[" else tuple(items) if t in "()" else _frozen(items, at)
        elif t == "{":
            d: dict = {}
            while True:
                k = self.load(depth + 1)
                if k is _NULL:
                    break
                val = self.load(depth + 1)
                if val is _NULL:
                    raise _Bad(f"dict entry without a value at byte {at}")
                try:
                    d[k] = val
                except TypeError:
                    raise _Bad(f"unhashable dict key at byte {at}") from None
            v = d
        elif t == "r":
            k = self._i32()
            if not 0 <= k < len(self.refs) or self.refs[k] is None:
                raise _Bad(f"object reference {k} out of range at byte {at}")
            v = self.refs[k]
        else:
            raise _Bad(f"unsupported marshal type {t!r} at byte {at}")
        if slot >= 0:
            self.refs[slot] = v
        return v


_NULL = object()


def _frozen(items: list, at: int) -> frozenset:
    try:
        return frozenset(items)
    except TypeError:
        raise _Bad(f"unhashable set item at byte {at}") from None


def _sniff(path: Path, h: bytes) -> bool:
    if len(h) < 4 or h[0] & ~_FLAG_REF != ord("{"):
        return False
    try:
        m = _Marshal(h)
        m.pos = 1
        key = m.load()
    except (_Bad, struct.error):
        return False
    return (
        isinstance(key, tuple)
        and len(key) == 3
        and isinstance(key[0], str)
        and isinstance(key[1], int)
        and isinstance(key[2], str)
    )


# ------------------------------------------------------------- the graph

Func = tuple[str, int, str]


def _load_stats(path: Path) -> dict[Func, tuple]:
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise ProfileError(path, f"cannot read the file: {e}") from None
    if not raw or raw[0] & ~_FLAG_REF != ord("{"):
        raise ProfileError(path, "not a pstats file: expected a marshalled dict", where="byte 0")
    m = _Marshal(raw)
    try:
        stats = m.load()
    except (_Bad, struct.error) as e:
        raise ProfileError(path, f"broken marshal data: {e}") from None
    if m.pos != len(raw):
        raise ProfileError(
            path, f"{len(raw) - m.pos} bytes after the stats dict", where=f"byte {m.pos}"
        )
    for f, v in stats.items():
        _check_key(path, f, "stats key")
        ok = (
            isinstance(v, tuple)
            and len(v) == 5
            and all(_count(x) for x in v[:2])
            and all(_num(x) for x in v[2:4])
            and isinstance(v[4], dict)
        )
        if not ok:
            raise ProfileError(
                path,
                "expected (cc, nc, tt, ct, callers): call counts (-1: unknown), "
                f"times >= 0 and a dict, got {v!r:.120}",
                where=f"stats[{_fmt(f)}]",
            )
        for c, e in v[4].items():
            _check_key(path, c, f"callers of {_fmt(f)}")
            if c not in stats:
                raise ProfileError(
                    path, f"caller {_fmt(c)} is not a profiled function", where=f"stats[{_fmt(f)}]"
                )
            if not (_num(e) or _edge(e)):
                raise ProfileError(
                    path,
                    "expected (nc, cc, tt, ct) or a call count",
                    where=f"stats[{_fmt(f)}].callers[{_fmt(c)}]",
                )
    if not stats:
        raise ProfileError(path, "the stats dict is empty: nothing was profiled")
    return stats


def _num(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and np.isfinite(x) and x >= 0


def _count(x: Any) -> bool:
    """A call count: a number >= 0, or -1 for unknown (pyinstrument's pstats)."""
    return _num(x) or (isinstance(x, int) and not isinstance(x, bool) and x == UNKNOWN)


def _edge(e: Any) -> bool:
    return (
        isinstance(e, tuple)
        and len(e) == 4
        and all(_count(x) for x in e[:2])
        and all(_num(x) for x in e[2:])
    )


def _check_key(path: Path, f: Any, where: str) -> None:
    ok = (
        isinstance(f, tuple)
        and len(f) == 3
        and isinstance(f[0], str)
        and isinstance(f[1], int)
        and not isinstance(f[1], bool)
        and isinstance(f[2], str)
    )
    if not ok:
        raise ProfileError(path, f"expected a (file, line, name) key, got {f!r:.80}", where=where)


def _fmt(f: Func) -> str:
    return f"{f[2]} ({f[0]}:{f[1]})"


def _unfold(stats: dict[Func, tuple], max_nodes: int) -> tuple[dict[str, np.ndarray], bool]:
    funcs = list(stats)
    idx = {f: k for k, f in enumerate(funcs)}
    n = len(funcs)
    cc_file = np.array([float(stats[f][0]) for f in funcs])
    nc_file = np.array([float(stats[f][1]) for f in funcs])
    tt = np.array([float(stats[f][2]) for f in funcs])
    ct = np.array([float(stats[f][3]) for f in funcs])
    # where a call count is unknown, calls cannot split a function over its call
    # paths: cumulative time does (the unfolding's weights); calls stay NaN there
    by_time = bool((cc_file == UNKNOWN).any() or (nc_file == UNKNOWN).any())
    cc, nc = (ct, ct) if by_time else (cc_file, nc_file)
    # edges caller -> callee: (callee, nc, cc, tt, ct)
    out: list[list[tuple[int, float, float, float, float]]] = [[] for _ in range(n)]
    in_nc = np.zeros(n)
    in_tt = np.zeros(n)
    for g, f in enumerate(funcs):
        for c, e in stats[f][4].items():
            if isinstance(e, tuple):
                enc, ecc, ett, ect = (float(x) for x in e)
                if by_time:
                    enc = ecc = ect
            else:  # profile module: a call count only; split the callee's times by calls
                share = float(e) / nc[g] if nc[g] > 0 else 0.0
                enc, ecc, ett, ect = float(e), float(e), tt[g] * share, ct[g] * share
            out[idx[c]].append((g, enc, ecc, ett, ect))
            in_nc[g] += enc
            in_tt[g] += ett
    for lst in out:  # heavier edges first (a deterministic, meaningful order)
        lst.sort(key=lambda e: (-e[4], e[0]))
    has_callers = np.array([bool(stats[f][4]) for f in funcs])
    resid = nc - in_nc
    tol = 1e-6 * nc if by_time else np.full(n, 0.5)  # a caller's share left over
    roots = [g for g in range(n) if not has_callers[g] or resid[g] > tol[g]]
    roots.sort(key=lambda g: (-ct[g], g))
    denom = np.where(cc > 0, cc, np.maximum(nc, 1.0))

    func: list[int] = []
    parent: list[int] = []
    w_time: list[float] = []
    w_calls: list[float] = []
    w_prim: list[float] = []
    truncated = False
    reached = np.zeros(n, dtype=bool)

    def unfold_from(root: int, entry: float, time0: float) -> None:
        nonlocal truncated
        # iterative DFS with the current path: function -> node on the path
        on_path: dict[int, int] = {}
        share0 = min(1.0, entry / denom[root])
        stack: list[tuple[int, int, float, float, float, float]] = [
            (root, -1, share0, time0, entry, entry)
        ]
        path_nodes: list[int] = []
        while stack:
            g, par, share, t, c, p = stack.pop()
            while path_nodes and path_nodes[-1] != par:
                on_path.pop(func[path_nodes.pop()], None)
            if len(func) >= max_nodes:
                truncated = True
                continue
            me = len(func)
            func.append(g)
            parent.append(par)
            w_time.append(t)
            w_calls.append(c)
            w_prim.append(p)
            reached[g] = True
            on_path[g] = me
            path_nodes.append(me)
            kids = []
            for h, enc, ecc, ett, _ect in out[g]:
                if h in on_path:  # recursion: fold into the ancestor
                    a = on_path[h]
                    w_time[a] += share * ett
                    w_calls[a] += share * enc
                    continue
                kids.append(
                    (
                        h,
                        me,
                        min(1.0, share * enc / denom[h]),
                        share * ett,
                        share * enc,
                        share * ecc,
                    )
                )
            stack.extend(reversed(kids))

    for g in roots:
        entry = resid[g] if has_callers[g] else nc[g]
        unfold_from(g, max(entry, 0.0), max(tt[g] - in_tt[g], 0.0) if has_callers[g] else tt[g])
    for g in sorted(np.flatnonzero(~reached).tolist(), key=lambda g: (-ct[g], g)):
        if not reached[g] and len(func) < max_nodes:  # a cycle no root reaches
            unfold_from(g, nc[g], tt[g])
    truncated = truncated or not reached.all()

    fn = np.asarray(func, dtype=np.int64)
    cols = {}
    for name, w, target in (
        ("time", w_time, tt),
        ("calls", w_calls, np.where(nc_file == UNKNOWN, np.nan, nc_file)),
        ("primitive calls", w_prim, np.where(cc_file == UNKNOWN, np.nan, cc_file)),
    ):
        if name == "time" or not np.isnan(target).all():  # no count known: no column
            cols[name] = _rescale(fn, np.asarray(w), target, np.asarray(w_calls), n)
    cols["func"] = fn
    cols["parent"] = np.asarray(parent, dtype=np.int64)
    return cols, truncated


def _rescale(
    fn: np.ndarray, w: np.ndarray, target: np.ndarray, fallback: np.ndarray, n: int
) -> np.ndarray:
    """Scale the node weights of each function so they sum to its total
    (by the call weights where the weights are all zero, else evenly)."""
    w = np.maximum(w, 0.0)
    tot = np.bincount(fn, weights=w, minlength=n)
    fb = np.maximum(fallback, 0.0)
    fb_tot = np.bincount(fn, weights=fb, minlength=n)
    cnt = np.bincount(fn, minlength=n).astype(np.float64)
    use = np.where(tot[fn] > 0, w / np.where(tot[fn] > 0, tot[fn], 1), np.nan)
    use = np.where(
        np.isnan(use),
        np.where(fb_tot[fn] > 0, fb / np.where(fb_tot[fn] > 0, fb_tot[fn], 1), 1 / cnt[fn]),
        use,
    )
    return use * target[fn]


@register("cprofile", _sniff, "cProfile / profile statistics (pstats marshal dump)")
def read_cprofile(path: Path, max_nodes: int = 200_000) -> Tree:
    """Read a pstats file (Python 2 or 3) as a calling-context tree.

    See the module docstring for how the call graph becomes a tree.

    Example:
        >>> import cctviz
        >>> t = cctviz.read("../shared/data/hatchet/cprofile-hatchet-pstats/cprofile-cycle.pstats")
        >>> len(t), sorted(set(t.names[t.roots]))
        (12, ['__exit__', 'e', 'g'])
        >>> round(float(t.metrics["time"].sum()), 6), t.meta["total_tt"]
        (23.045403, 23.045403)
    """
    stats = _load_stats(path)
    cols, truncated = _unfold(stats, max_nodes)
    funcs = list(stats)
    fn = cols.pop("func")
    parent = cols.pop("parent")
    meta: dict[str, Any] = {
        "units": {"time": "s"},
        "units_assumed": {"time": SECONDS_REASON},
        "aggregation": dict.fromkeys(cols, "sum"),
        "total_tt": round(float(sum(v[2] for v in stats.values())), 9),
    }
    for key, k in (("total_calls", 1), ("primitive_calls", 0)):
        counts = [v[k] for v in stats.values()]
        if UNKNOWN not in counts:
            meta[key] = int(sum(counts))
    if "calls" not in cols or np.isnan(cols["calls"]).any():
        meta["calls_unknown"] = (
            "the file has call counts of -1 (unknown: pyinstrument's pstats); "
            "call paths split by cumulative time, calls missing"
        )
    if truncated:
        meta["truncated"] = True
        warnings.warn(
            f"{path}: the call graph unfolds into more than {max_nodes} call paths; "
            "the tree was cut there (read(..., max_nodes=...) raises the bound)",
            stacklevel=2,
        )
    return Tree.from_parents(
        parent,
        [funcs[g][2] for g in fn.tolist()],
        cols,
        columns={
            "file": [funcs[g][0] for g in fn.tolist()],
            "line": [funcs[g][1] for g in fn.tolist()],
        },
        meta=meta,
    )
