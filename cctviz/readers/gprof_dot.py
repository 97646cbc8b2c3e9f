"""gprof2dot's DOT output (call graphs from gprof, callgrind, perf, ... drawn by gprof2dot).

Format facts (what gprof2dot writes, and what Hatchet's ``from_gprof_dot`` reads):

- one ``digraph { ... }``; ``graph``/``node``/``edge`` default-attribute lines;
- one node statement per function, ``"id" [label="module\\nname\\n97.95%\\n(0.00%)\\n0×"]``:
  the node id is the function, the label holds the module (when known), the
  function name, the **inclusive** share of the total cost in %, the
  **self** share in parentheses and the call count;
- one edge statement per call arc, ``"caller" -> "callee" [label="97.94%\\n1×"]``:
  the share of the total cost spent in the callee *when called from this
  caller* (callgrind measures it per arc) and the number of calls.

This module parses that subset of DOT itself (quoted and bare ids, attribute
lists, comments, ports ignored, subgraphs flattened); a file cut short (no
closing ``}``) is an error.

**Graph to tree.** Hatchet keeps the call graph as a DAG: one node per
function, roots = functions no one calls, each with its self and inclusive
share. A calling-context tree needs one node per *call path*, so cctviz
unfolds the graph from its roots: a function called from ``k`` call paths
gets ``k`` nodes, and its self time (and call count) is split over them in
proportion to the edges' shares (gprof's assumption that a callee costs the
same per call whatever the context; with callgrind's per-arc costs the first
level is exact). So the self time of every function summed over its nodes is
exactly Hatchet's ``time`` for it, and the tree's total is the graph's.
Recursion: an edge closing a cycle on the current path (a DFS back edge, in
file order) is dropped, and a function reachable only through a cycle is
unfolded from the first of them in file order. Metrics: ``time`` (self, % of
the total cost: ``meta["units"] = {"time": "%"}``, the unit the labels
state) and ``calls``, both sums (shares of one total add up). Node columns:
``module``, and ``function_inc_pct``, the label's inclusive share of the
node's *function* (over all its call paths: the same on every node of the
function, so an attribute, not a metric; the tree's ``time (inc)`` is the
call path's).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ProfileError
from ..model.tree import Tree
from . import register

_SNIFF_HEAD = re.compile(rb"(?:strict\s+)?digraph\b", re.I)
_SNIFF_LABEL = re.compile(rb'label="[^"]*?%\\n\([^"]*?%\)')

_TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<comment>//[^\n]*|/\*.*?\*/|\#[^\n]*)
  | (?P<str>"(?:[^"\\]|\\.)*")
  | (?P<id>[A-Za-z_\x80-\U0010ffff][A-Za-z_0-9\x80-\U0010ffff]*|-?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?))
  | (?P<arrow>->|--)
  | (?P<punct>[{}\[\]=;,:])
    """,
    re.S | re.X,
)
_PCT = re.compile(r"^\s*([-+0-9.eE]+)\s*%\s*$")
_SELF = re.compile(r"^\s*\(\s*([-+0-9.eE]+)\s*%\s*\)\s*$")
_CALLS = re.compile(r"^\s*([0-9]+)\s*[×x]\s*$")
_LINE_BREAK = re.compile(r"\\[nlr]")

DEFAULT_MAX_NODES = 1_000_000


def _after_comments(h: bytes) -> bytes:
    """``h`` without leading white space and comments (one linear pass: a regex
    with alternating comment forms backtracks exponentially on C headers)."""
    i, n = 0, len(h)
    while i < n:
        if h[i : i + 1].isspace():
            i += 1
        elif h.startswith((b"//", b"#"), i):
            j = h.find(b"\n", i)
            i = n if j < 0 else j + 1
        elif h.startswith(b"/*", i):
            j = h.find(b"*/", i + 2)
            i = n if j < 0 else j + 2
        else:
            break
    return h[i:]


def _sniff(path: Path, h: bytes) -> bool:
    return bool(_SNIFF_HEAD.match(_after_comments(h))) and bool(_SNIFF_LABEL.search(h))


# ----------------------------------------------------------------- DOT parsing
class _Parser:
    """Recursive-descent parser for the DOT subset gprof2dot writes."""

    def __init__(self, path: Path, text: str) -> None:
        self.path = path
        self.text = text
        self.toks: list[tuple[str, str, int]] = []
        pos, n = 0, len(text)
        while pos < n:
            m = _TOKEN.match(text, pos)
            if m is None:
                self.fail(pos, f"unexpected character {text[pos]!r}")
            kind = m.lastgroup or ""
            if kind not in ("ws", "comment"):
                self.toks.append((kind, m.group(), pos))
            pos = m.end()
        self.i = 0
        # parsed content
        self.nodes: dict[str, dict[str, str]] = {}  # id -> attributes (insertion = file order)
        self.edges: list[tuple[str, str, dict[str, str]]] = []

    def fail(self, pos: int | None, problem: str) -> None:
        if pos is None:
            raise ProfileError(self.path, problem, where="end of file")
        line = self.text.count("\n", 0, pos) + 1
        col = pos - (self.text.rfind("\n", 0, pos) + 1) + 1
        raise ProfileError(self.path, problem, where=f"line {line}, column {col}")

    def peek(self) -> tuple[str, str, int] | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self, value: str | None = None, kind: str | None = None) -> tuple[str, str, int]:
        t = self.peek()
        if t is None:
            self.fail(None, f"the file ends early: expected {value or kind or 'more'}")
        assert t is not None
        if (value is not None and t[1] != value) or (kind is not None and t[0] != kind):
            self.fail(t[2], f"expected {value or kind}, found {t[1][:40]!r}")
        self.i += 1
        return t

    def ident(self) -> str:
        t = self.peek()
        if t is None or t[0] not in ("id", "str"):
            self.fail(None if t is None else t[2], "expected a name or a quoted string")
        assert t is not None
        self.i += 1
        return _unquote(t[1]) if t[0] == "str" else t[1]

    def at(self, value: str) -> bool:
        t = self.peek()
        return t is not None and t[1] == value

    def at_keyword(self, *words: str) -> bool:
        t = self.peek()
        return t is not None and t[0] == "id" and t[1].lower() in words

    def parse(self) -> None:
        if self.at_keyword("strict"):
            self.i += 1
        t = self.peek()
        if t is None or not self.at_keyword("digraph"):
            self.fail(0 if t is None else t[2], "expected a DOT 'digraph { ... }'")
        self.i += 1
        if not self.at("{"):
            self.ident()
        self.take("{")
        self.stmt_list()
        self.take("}")
        t = self.peek()
        if t is not None:
            self.fail(t[2], "unexpected content after the end of the graph")

    def stmt_list(self) -> None:
        while True:
            t = self.peek()
            if t is None:
                self.fail(None, "the file ends inside the graph (no closing '}')")
            assert t is not None
            if t[1] == "}":
                return
            if t[1] == ";":
                self.i += 1
                continue
            self.stmt()

    def attr_list(self) -> dict[str, str]:
        attrs: dict[str, str] = {}
        while self.at("["):
            self.i += 1
            while not self.at("]"):
                key = self.ident()
                self.take("=")
                attrs[key] = self.ident()
                if self.at(",") or self.at(";"):
                    self.i += 1
            self.take("]")
        return attrs

    def node_id(self) -> str:
        name = self.ident()
        if self.at(":"):  # port (and compass point): not used by gprof2dot, ignored
            self.i += 1
            self.ident()
            if self.at(":"):
                self.i += 1
                self.ident()
        return name

    def stmt(self) -> None:
        if self.at_keyword("graph", "node", "edge"):
            self.i += 1
            self.attr_list()  # default attributes: no metric content
            return
        if self.at_keyword("subgraph") or self.at("{"):
            if self.at_keyword("subgraph"):
                self.i += 1
                if not self.at("{"):
                    self.ident()
            self.take("{")
            self.stmt_list()
            self.take("}")
            return
        first = self.node_id()
        if self.at("="):  # graph attribute
            self.i += 1
            self.ident()
            return
        chain = [first]
        while self.peek() is not None and self.peek()[0] == "arrow":  # type: ignore[index]
            self.i += 1
            chain.append(self.node_id())
        attrs = self.attr_list()
        if len(chain) == 1:
            self.nodes.setdefault(first, {}).update(attrs)
            return
        for a, b in zip(chain, chain[1:]):
            self.nodes.setdefault(a, {})
            self.nodes.setdefault(b, {})
            self.edges.append((a, b, attrs))


def _unquote(s: str) -> str:
    body = s[1:-1]
    return body.replace('\\"', '"').replace("\\\n", "").replace("\\\r\n", "")


def _number(path: Path, s: str, where: str, what: str) -> float:
    try:
        v = float(s)
    except ValueError:
        raise ProfileError(path, f"{what} {s!r} is not a number", where=where) from None
    if not np.isfinite(v):
        raise ProfileError(path, f"{what} {s!r} is not a finite number", where=where)
    return v


def _node_label(path: Path, fid: str, label: str) -> tuple[str | None, float, float, float]:
    """(module, inclusive %, self %, calls) from a gprof2dot node label."""
    where = f"node {fid!r}"
    lines = _LINE_BREAK.split(label)
    while lines and not lines[-1].strip():
        lines.pop()
    calls = 0.0
    if lines and _CALLS.match(lines[-1]):
        calls = float(_CALLS.match(lines[-1]).group(1))  # type: ignore[union-attr]
        lines.pop()
    ms = _SELF.match(lines[-1]) if lines else None
    mi = _PCT.match(lines[-2]) if len(lines) >= 2 else None
    if ms is None or mi is None:
        raise ProfileError(
            path,
            "expected a gprof2dot label 'module\\nname\\ninclusive%\\n(self%)\\ncalls×', "
            f"got {label[:80]!r}",
            where=where,
        )
    inc = _number(path, mi.group(1), where, "inclusive share")
    self_ = _number(path, ms.group(1), where, "self share")
    head = lines[:-2]
    module = head[0] if len(head) >= 2 else None
    return module, inc, self_, calls


def _edge_label(path: Path, a: str, b: str, label: str | None) -> tuple[float, float]:
    """(share %, calls) of an edge; NaN where the label does not say."""
    if label is None:
        return np.nan, np.nan
    share, calls = np.nan, np.nan
    for part in _LINE_BREAK.split(label):
        if not part.strip():
            continue
        if m := _PCT.match(part):
            share = _number(path, m.group(1), f"edge {a!r} -> {b!r}", "share")
        elif m := _CALLS.match(part):
            calls = float(m.group(1))
    return share, calls


# ----------------------------------------------------------------- graph -> tree
def _cut_cycles(n: int, out: list[list[int]], seeds: list[int]) -> set[tuple[int, int]]:
    """Back edges of an iterative DFS from ``seeds`` then every unvisited node (file order)."""
    state = np.zeros(n, dtype=np.int8)  # 0 new, 1 on stack, 2 done
    back: set[tuple[int, int]] = set()
    for s in seeds + list(range(n)):
        if state[s]:
            continue
        state[s] = 1
        stack = [(s, 0)]
        while stack:
            u, k = stack[-1]
            if k < len(out[u]):
                stack[-1] = (u, k + 1)
                v = out[u][k]
                if state[v] == 1:
                    back.add((u, v))
                elif state[v] == 0:
                    state[v] = 1
                    stack.append((v, 0))
            else:
                state[u] = 2
                stack.pop()
    return back


@register("gprof-dot", _sniff, "gprof2dot DOT call graph (gprof, callgrind...)")
def read_gprof_dot(path: Path, *, max_nodes: int = DEFAULT_MAX_NODES) -> Tree:
    """Read a gprof2dot DOT call graph, unfolded into a calling-context tree.

    ``max_nodes`` bounds the unfolded tree (a DAG can have exponentially many
    call paths); past it the read fails with a :class:`~cctviz.ProfileError`.

    >>> import cctviz
    >>> t = cctviz.read("../shared/data/hatchet/gprof2dot-cpi/callgrind.dot.64042.0.1")
    >>> len(t), len(t.roots), t.units
    (126, 7, {'time': '%'})
    >>> float(t.metrics.loc[t.names == "main", "time"].sum())
    53.77
    """
    try:
        text = Path(path).read_bytes().decode("utf-8")
    except UnicodeDecodeError as e:
        raise ProfileError(path, f"not UTF-8 text ({e.reason})", where=f"byte {e.start}") from None
    except OSError as e:
        raise ProfileError(path, f"cannot read the file: {e}") from None
    p = _Parser(path, text)
    p.parse()
    ids = list(p.nodes)
    if not ids:
        raise ProfileError(path, "the graph has no nodes")
    pos = {f: k for k, f in enumerate(ids)}
    n = len(ids)
    module = np.full(n, None, dtype=object)
    inc_pct = np.full(n, np.nan)
    self_pct = np.zeros(n)
    calls = np.zeros(n)
    for k, f in enumerate(ids):
        label = p.nodes[f].get("label")
        if label is not None:
            module[k], inc_pct[k], self_pct[k], calls[k] = _node_label(path, f, label)
    # edges, merged per (caller, callee); self-calls are recursion: dropped
    share: dict[tuple[int, int], float] = {}
    ecalls: dict[tuple[int, int], float] = {}
    out: list[list[int]] = [[] for _ in range(n)]
    for a, b, attrs in p.edges:
        s, c = _edge_label(path, a, b, attrs.get("label"))
        u, v = pos[a], pos[b]
        if u == v:
            continue
        if (u, v) not in share:
            out[u].append(v)
            share[(u, v)], ecalls[(u, v)] = 0.0, 0.0
        share[(u, v)] = share[(u, v)] + (0.0 if np.isnan(s) else s)
        ecalls[(u, v)] = ecalls[(u, v)] + (0.0 if np.isnan(c) else c)
    has_caller = np.zeros(n, dtype=bool)
    for _u, v in share:
        has_caller[v] = True
    back = _cut_cycles(n, out, [k for k in range(n) if not has_caller[k]])
    out = [[v for v in out[u] if (u, v) not in back] for u in range(n)]
    callers: list[list[int]] = [[] for _ in range(n)]
    for u in range(n):
        for v in out[u]:
            callers[v].append(u)
    # fraction of a callee's cost that each kept edge carries
    frac: dict[tuple[int, int], float] = {}
    for v in range(n):
        cs = callers[v]
        if not cs:
            continue
        w = np.array([share[(u, v)] for u in cs])
        if not w.sum() > 0:
            w = np.array([ecalls[(u, v)] for u in cs])
        if not w.sum() > 0:
            w = np.ones(len(cs))
        w = w / w.sum()
        for u, x in zip(cs, w):
            frac[(u, v)] = float(x)
    # unfold from the functions nobody (left) calls, in file order
    parent: list[int] = []
    func: list[int] = []
    fshare: list[float] = []
    stack: list[tuple[int, int, float]] = [(r, -1, 1.0) for r in range(n) if not callers[r]][::-1]
    while stack:
        f, par, sh = stack.pop()
        me = len(func)
        if me >= max_nodes:
            raise ProfileError(
                path,
                f"the call graph unfolds into more than {max_nodes} call paths; "
                "pass max_nodes= to allow more",
            )
        parent.append(par)
        func.append(f)
        fshare.append(sh)
        for v in reversed(out[f]):
            stack.append((v, me, sh * frac[(f, v)]))
    fi = np.asarray(func, dtype=np.int64)
    sh_arr = np.asarray(fshare)
    names = np.asarray(ids, dtype=object)[fi]
    metrics = {"time": self_pct[fi] * sh_arr, "calls": calls[fi] * sh_arr}
    columns: dict[str, Any] = {"function_inc_pct": inc_pct[fi]}
    if any(m is not None for m in module):
        columns["module"] = module[fi]
    meta: dict[str, Any] = {
        "units": {"time": "%"},
        "aggregation": {"time": "sum", "calls": "sum"},
    }
    return Tree.from_parents(parent, names, metrics, columns=columns, meta=meta)
