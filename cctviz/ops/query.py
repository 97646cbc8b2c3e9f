"""Call-path queries: Hatchet's object and string dialects, and pandas predicates.

A query is a sequence of *query nodes*, each a quantifier and a predicate.
A downward path of the tree matches when it can be split into consecutive
pieces, one per query node: ``"."`` takes exactly one node, an integer ``n``
takes ``n`` nodes, ``"+"`` one or more, ``"*"`` zero or more, every node
satisfying that query node's predicate. The result is the set of nodes lying
on any matching path (paths may start at any node), as in Hatchet.

Like Hatchet's engine, a ``"*"`` stops at the first node that satisfies the
*next* query node's predicate (it does not swallow it), except at the node
where the match starts.

Object dialect::

    [(".", {"name": "main"}), "*", (".", {"name": "MPI_.*", "time (inc)": "> 5"})]

Strings are regular expressions matched against the whole value; numbers are
compared for equality, or with a comparison string such as ``"> 5"``; a list of
values must all hold. A callable predicate gets the frame (or one row).

String dialect::

    MATCH (".", a)->("*")->(".", b) WHERE a."name" = "main" AND b."name" STARTS WITH "MPI"

Conditions: ``=``, ``!=``, ``<``, ``<=``, ``>``, ``>=``, ``=~`` (regex from the
start), ``STARTS WITH``, ``ENDS WITH``, ``CONTAINS``, ``IS [NOT] LEAF``,
``IS [NOT] NONE``, ``IS [NOT] NAN``, ``IS [NOT] INF``, joined by ``AND``,
``OR`` and ``NOT`` (and parentheses, which Hatchet lacks).

Besides the columns of ``tree.frame`` a query may use ``depth``,
``node_id``, ``callpath`` (names from the root joined by ``/``) and ``type``
(an alias of ``kind`` for Hatchet compatibility).

The whole evaluation is vectorised: predicates are computed for all nodes at
once, and matching is a forward and a backward sweep over the tree levels with
the automaton's state sets packed in 64-bit masks.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from numbers import Real
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..errors import QueryError

if TYPE_CHECKING:  # pragma: no cover
    from ..model.nodeset import NodeSet
    from ..model.tree import Tree

__all__ = ["apply_query", "parse_string_query", "QueryNode"]

_CMP: dict[str, Callable[[Any, Any], Any]] = {
    "<": operator.lt,
    ">": operator.gt,
    "<=": operator.le,
    ">=": operator.ge,
    "==": operator.eq,
    "=": operator.eq,
    "!=": operator.ne,
    "<>": operator.ne,
}
_CMP_RE = re.compile(r"^\s*(<=|>=|==|!=|<>|<|>|=)\s*(.+?)\s*$")


# --------------------------------------------------------------------- frame
class QueryFrame:
    """Columns a predicate can see, computed lazily for all nodes."""

    def __init__(self, tree: Tree) -> None:
        self.tree = tree
        self.n = len(tree)
        self._cols: dict[str, pd.Series] = {}

    def col(self, col: str) -> pd.Series:
        if col in self._cols:
            return self._cols[col]
        f = self.tree.frame
        if col in f.columns:
            s = f[col]
        elif col == "node_id":
            s = pd.Series(np.arange(self.n), index=f.index)
        elif col == "callpath":
            s = self.tree.callpaths
        elif col == "type":
            s = f["kind"]
        else:
            have = ", ".join(repr(c) for c in list(f.columns) + ["node_id", "callpath"])
            raise QueryError(f"unknown attribute {col!r}; the tree has {have}")
        self._cols[col] = s
        return s

    @property
    def is_leaf(self) -> np.ndarray:
        return self.tree.is_leaf


def _is_text(s: pd.Series) -> bool:
    return (
        s.dtype == object
        or isinstance(s.dtype, pd.StringDtype)
        or isinstance(s.dtype, pd.CategoricalDtype)
    )


def _text_apply(s: pd.Series, fn: Callable[[str], bool]) -> np.ndarray:
    """Apply a string test once per distinct value (names repeat a lot)."""
    codes, uniq = pd.factorize(s, use_na_sentinel=True)
    res = np.fromiter(
        (isinstance(u, str) and bool(fn(u)) for u in uniq), dtype=bool, count=len(uniq)
    )
    out = np.zeros(len(s), dtype=bool)
    ok = codes >= 0
    out[ok] = res[codes[ok]]
    return out


def _num(s: pd.Series, col: str) -> np.ndarray:
    if _is_text(s) or s.dtype == bool:
        raise QueryError(f"attribute {col!r} is not numeric; compare it with a string")
    return s.to_numpy(dtype=np.float64)


def _compare_number(qf: QueryFrame, col: str, op: str, value: float) -> np.ndarray:
    if col == "depth" and op in ("=", "==") and value == -1:
        return qf.is_leaf.copy()
    vals = _num(qf.col(col), col)
    with np.errstate(invalid="ignore"):
        return np.asarray(_CMP[op](vals, value), dtype=bool)


def _regex_full(pattern: str) -> Callable[[str], bool]:
    try:
        rx = re.compile(pattern + r"\Z")
    except re.error as e:
        raise QueryError(f"bad regular expression {pattern!r}: {e}") from None
    return lambda s: rx.match(s) is not None


# ------------------------------------------------------------ object dialect
def _object_predicate(spec: Mapping[str, Any]) -> Callable[[QueryFrame], np.ndarray]:
    def pred(qf: QueryFrame) -> np.ndarray:
        mask = np.ones(qf.n, dtype=bool)
        for key, val in spec.items():
            col = key[0] if isinstance(key, (tuple, list)) and len(key) == 1 else key
            if isinstance(col, (tuple, list)):
                raise QueryError(f"multi-level attribute {key!r} is not supported")
            values = list(val) if isinstance(val, (list, tuple, set)) else [val]
            for v in values:
                mask &= _object_single(qf, col, v)
        return mask

    return pred


def _object_single(qf: QueryFrame, col: str, v: Any) -> np.ndarray:
    if col == "depth" or col == "node_id" or not _is_text(qf.col(col)):
        if isinstance(v, str):
            m = _CMP_RE.match(v)
            if not m:
                raise QueryError(
                    f"attribute {col!r} is numeric: give a number or a comparison such as '> 5', not {v!r}"
                )
            return _compare_number(qf, col, m.group(1), _parse_number(m.group(2), v))
        if isinstance(v, Real) and not isinstance(v, bool):
            return _compare_number(qf, col, "=", float(v))
        raise QueryError(f"attribute {col!r} is numeric; got {v!r}")
    if not isinstance(v, str):
        raise QueryError(f"attribute {col!r} holds text: give a regular expression, not {v!r}")
    return _text_apply(qf.col(col), _regex_full(v))


def _parse_number(s: str, whole: str) -> float:
    s = s.strip()
    low = s.lower()
    if low in ("np.nan", "nan"):
        return float("nan")
    if low in ("np.inf", "inf"):
        return float("inf")
    if low in ("-np.inf", "-inf"):
        return float("-inf")
    try:
        return float(s)
    except ValueError:
        raise QueryError(f"cannot read a number in {whole!r}") from None


def _callable_predicate(fn: Callable) -> Callable[[QueryFrame], np.ndarray]:
    def pred(qf: QueryFrame) -> np.ndarray:
        frame = qf.tree.frame
        try:
            res = fn(frame)
            arr = np.asarray(res)
            if arr.shape == (qf.n,) and arr.dtype == bool:
                return arr
        except Exception:  # noqa: BLE001 - fall back to Hatchet's row-wise call
            pass
        return np.fromiter((bool(fn(row)) for _, row in frame.iterrows()), dtype=bool, count=qf.n)

    return pred


@dataclass(frozen=True)
class QueryNode:
    """One element of a compiled query: ``star`` (zero or more) or exactly one node."""

    star: bool
    predicate: Callable[[QueryFrame], np.ndarray]


def _true(qf: QueryFrame) -> np.ndarray:
    return np.ones(qf.n, dtype=bool)


def _expand(quant: Any, pred: Callable[[QueryFrame], np.ndarray]) -> list[QueryNode]:
    if isinstance(quant, bool):
        raise QueryError(f"bad quantifier {quant!r}")
    if isinstance(quant, int):
        if quant < 0:
            raise QueryError(f"quantifier must be >= 0, got {quant}")
        return [QueryNode(False, pred)] * quant
    if quant == ".":
        return [QueryNode(False, pred)]
    if quant == "*":
        return [QueryNode(True, pred)]
    if quant == "+":
        return [QueryNode(False, pred), QueryNode(True, pred)]
    raise QueryError(f'quantifier must be ".", "*", "+" or an integer, got {quant!r}')


def _make_pred(p: Any) -> Callable[[QueryFrame], np.ndarray]:
    if p is None:
        return _true
    if isinstance(p, Mapping):
        return _object_predicate(p) if p else _true
    if callable(p):
        return _callable_predicate(p)
    raise QueryError(f"predicate must be a dict or a callable, got {type(p).__name__}")


def compile_object_query(q: Sequence[Any]) -> list[QueryNode]:
    """Compile Hatchet's object dialect into query nodes."""
    out: list[QueryNode] = []
    for k, item in enumerate(q):
        if isinstance(item, tuple):
            if len(item) != 2:
                raise QueryError(f"query node {k}: expected (quantifier, predicate), got {item!r}")
            out += _expand(item[0], _make_pred(item[1]))
        elif isinstance(item, (str, int)):
            out += _expand(item, _true)
        else:
            out += _expand(".", _make_pred(item))
    return out


# ------------------------------------------------------------ string dialect
_TOKEN_RE = re.compile(
    r"""\s*(?:
      (?P<str>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
    | (?P<num>[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?)
    | (?P<op>->|=~|<=|>=|!=|<>|==|=|<|>|\(|\)|,|\.|\[|\])
    | (?P<id>[A-Za-z_][A-Za-z_0-9]*)
    )""",
    re.X,
)
_KEYWORDS = {
    "MATCH",
    "WHERE",
    "AND",
    "OR",
    "NOT",
    "IS",
    "LEAF",
    "NONE",
    "NAN",
    "INF",
    "STARTS",
    "ENDS",
    "WITH",
    "CONTAINS",
}


def _unquote(tok: str) -> str:
    body = tok[1:-1]
    q = tok[0]
    return re.sub(r"\\([\\" + q + "])", r"\1", body)


@dataclass
class _Tok:
    kind: str
    text: str
    pos: int


def _tokenize(s: str) -> list[_Tok]:
    toks: list[_Tok] = []
    i = 0
    while i < len(s):
        if s[i:].strip() == "":
            break
        m = _TOKEN_RE.match(s, i)
        if not m or m.end() == i:
            raise QueryError(f"cannot read the query at position {i}: {s[i : i + 20]!r}")
        kind = m.lastgroup or ""
        text = m.group(kind)
        pos = m.start(kind)
        if kind == "id" and text.upper() in _KEYWORDS:
            kind, text = "kw", text.upper()
        toks.append(_Tok(kind, text, pos))
        i = m.end()
    toks.append(_Tok("end", "", len(s)))
    return toks


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.toks = _tokenize(text)
        self.i = 0

    def peek(self, k: int = 0) -> _Tok:
        return self.toks[min(self.i + k, len(self.toks) - 1)]

    def take(self, kind: str | None = None, text: str | None = None) -> _Tok:
        t = self.peek()
        if (kind and t.kind != kind) or (text and t.text != text):
            want = text or kind
            raise QueryError(
                f"expected {want!r} at position {t.pos} of the query, found {t.text or 'the end'!r}"
            )
        self.i += 1
        return t

    def accept(self, kind: str, text: str | None = None) -> bool:
        t = self.peek()
        if t.kind == kind and (text is None or t.text == text):
            self.i += 1
            return True
        return False

    # MATCH (q, a)->(b) ...
    def parse(self) -> tuple[list[tuple[Any, str | None]], list]:
        self.take("kw", "MATCH")
        nodes = [self.node()]
        while self.accept("op", "->"):
            nodes.append(self.node())
        conds: list = []
        if self.accept("kw", "WHERE"):
            conds = self.cond_list()
        self.take("end")
        return nodes, conds

    def node(self) -> tuple[Any, str | None]:
        self.take("op", "(")
        quant: Any = "."
        var = None
        t = self.peek()
        if t.kind == "str":
            quant = _unquote(self.take().text)
            if self.accept("op", ","):
                var = self.take("id").text
        elif t.kind == "num":
            quant = int(float(self.take().text))
            if quant == 0:
                quant = "."  # Hatchet reads a 0 quantifier as "."
            if self.accept("op", ","):
                var = self.take("id").text
        elif t.kind == "id":
            var = self.take().text
        self.take("op", ")")
        return quant, var

    # flat list of (connective, negate, condition) as Hatchet reads it
    def cond_list(self) -> list:
        items = [(None, *self.unary())]
        while self.peek().kind == "kw" and self.peek().text in ("AND", "OR"):
            conn = self.take().text
            items.append((conn, *self.unary()))
        return items

    def unary(self) -> tuple[bool, Any]:
        neg = False
        while self.accept("kw", "NOT"):
            neg = not neg
        if self.accept("op", "("):
            sub = self.cond_list()
            self.take("op", ")")
            return neg, ("group", sub)
        return neg, self.single()

    def single(self) -> tuple:
        var = self.take("id").text
        if self.accept("kw", "IS"):
            neg = self.accept("kw", "NOT")
            self.take("kw", "LEAF")
            return ("leaf", var, neg)
        self.take("op", ".")
        prop = self.prop()
        t = self.peek()
        if t.kind == "kw" and t.text == "IS":
            self.take()
            neg = self.accept("kw", "NOT")
            what = self.take("kw").text
            if what not in ("NONE", "NAN", "INF"):
                raise QueryError(f"expected NONE, NAN or INF after IS at position {t.pos}")
            return ("is", var, prop, what, neg)
        if t.kind == "kw" and t.text in ("STARTS", "ENDS"):
            self.take()
            self.take("kw", "WITH")
            return ("str", var, prop, t.text, _unquote(self.take("str").text))
        if t.kind == "kw" and t.text == "CONTAINS":
            self.take()
            return ("str", var, prop, "CONTAINS", _unquote(self.take("str").text))
        op = self.take("op").text
        if op not in ("=", "==", "!=", "<>", "<", ">", "<=", ">=", "=~"):
            raise QueryError(f"unknown comparison {op!r} at position {t.pos}")
        v = self.peek()
        if v.kind == "str":
            self.take()
            if op in ("<", ">", "<=", ">="):
                raise QueryError(f"{op} needs a number at position {v.pos}")
            return (
                "str",
                var,
                prop,
                "=~" if op == "=~" else ("!=" if op in ("!=", "<>") else "="),
                _unquote(v.text),
            )
        if v.kind == "num":
            self.take()
            if op == "=~":
                raise QueryError(f"=~ needs a string at position {v.pos}")
            return ("num", var, prop, op, float(v.text))
        raise QueryError(f"expected a string or a number at position {v.pos}")

    def prop(self) -> str:
        t = self.peek()
        if t.kind == "str":
            return _unquote(self.take().text)
        if t.kind == "num":
            return self.take().text
        if t.kind == "op" and t.text == "(":
            self.take()
            parts = [_unquote(self.take("str").text)]
            while self.accept("op", ","):
                parts.append(_unquote(self.take("str").text))
            self.take("op", ")")
            if len(parts) != 1:
                raise QueryError(f"multi-level attribute {tuple(parts)!r} is not supported")
            return parts[0]
        if t.kind == "id":  # a."name" or a.name
            return self.take().text
        raise QueryError(f"expected an attribute name at position {t.pos}")


def _cond_vars(item: Any) -> set[str]:
    if item[0] == "group":
        return set().union(*(_cond_vars(c) for _, _, c in item[1]))
    return {item[1]}


def _eval_cond(qf: QueryFrame, item: Any) -> np.ndarray:
    kind = item[0]
    if kind == "group":
        return _eval_flat(qf, [(c, n, x) for c, n, x in item[1]])
    if kind == "leaf":
        m = qf.is_leaf
        return ~m if item[2] else m.copy()
    _, _, prop = item[:3]
    if kind == "is":
        what, neg = item[3], item[4]
        s = qf.col(prop)
        if what == "NONE":
            m = s.isna().to_numpy() if _is_text(s) else np.zeros(qf.n, dtype=bool)
        elif what == "NAN":
            m = np.isnan(_num(s, prop))
        else:
            m = np.isinf(_num(s, prop))
        return ~m if neg else m
    if kind == "num":
        return _compare_number(qf, prop, item[3], item[4])
    op, val = item[3], item[4]
    s = qf.col(prop)
    if not _is_text(s):
        raise QueryError(f"attribute {prop!r} is numeric; compare it with a number, not {val!r}")
    if op == "=":
        return (s == val).to_numpy(dtype=bool)
    if op == "!=":
        return (s.notna() & (s != val)).to_numpy(dtype=bool)
    if op == "STARTS":
        return _text_apply(s, lambda x: x.startswith(val))
    if op == "ENDS":
        return _text_apply(s, lambda x: x.endswith(val))
    if op == "CONTAINS":
        return _text_apply(s, lambda x: val in x)
    try:
        rx = re.compile(val)
    except re.error as e:
        raise QueryError(f"bad regular expression {val!r}: {e}") from None
    return _text_apply(s, lambda x: rx.match(x) is not None)


def _eval_flat(qf: QueryFrame, items: list) -> np.ndarray:
    """Evaluate ``c1 AND c2 OR c3 ...`` with AND binding tighter, as Python does."""
    # fast path: a long OR of equalities on one attribute (what NodeSet.to_query writes)
    if len(items) > 4 and all(
        (c is None or c == "OR")
        and not neg
        and x[0] == "str"
        and x[3] == "="
        and x[2] == items[0][2][2]
        for c, neg, x in items
    ):
        return qf.col(items[0][2][2]).isin([x[4] for _, _, x in items]).to_numpy(dtype=bool)
    result = np.zeros(qf.n, dtype=bool)
    term: np.ndarray | None = None
    for conn, neg, item in items:
        m = _eval_cond(qf, item)
        if neg:
            m = ~m
        if term is None:
            term = m
        elif conn == "AND":
            term = term & m
        else:
            result |= term
            term = m
    if term is not None:
        result |= term
    return result


def parse_string_query(text: str) -> list[QueryNode]:
    """Compile a string-dialect query into query nodes.

    >>> len(parse_string_query('MATCH (".", a)->("*")->(b) WHERE a."name" = "main"'))
    3
    """
    nodes, conds = _Parser(text).parse()
    variables = {v for _, v in nodes if v}
    per_var: dict[str, list] = {v: [] for v in variables}
    for conn, neg, item in conds:
        vs = _cond_vars(item)
        unknown = vs - variables
        if unknown:
            raise QueryError(
                f"condition uses {sorted(unknown)[0]!r}, which no node of the MATCH names"
            )
        if len(vs) != 1:
            raise QueryError("a parenthesised condition must refer to one query node")
        (v,) = vs
        per_var[v].append((conn, neg, item))

    def pred_for(items: list) -> Callable[[QueryFrame], np.ndarray]:
        if not items:
            return _true
        items = [(None, items[0][1], items[0][2])] + items[1:]
        return lambda qf: _eval_flat(qf, items)

    out: list[QueryNode] = []
    for quant, var in nodes:
        out += _expand(quant, pred_for(per_var.get(var, [])) if var else _true)
    return out


# ------------------------------------------------------------------ engine
def _match(tree: Tree, qnodes: list[QueryNode]) -> np.ndarray:
    """Mask of nodes lying on a path that matches the compiled query.

    Hatchet's matcher, rephrased as an automaton so it runs vectorised.
    After a node ``u`` is consumed the run is in one of these states:

    - ``D(e)``: query node ``e`` is next (``D(k)``: the match is complete);
    - ``C(e)``: the star ``e`` consumed ``u`` and goes on below it.

    A star consumes a child only if it does not satisfy the next query node
    (except at the node a match starts from). It hands over to the next query
    node at ``u`` only when ``u`` is a leaf (``D`` only) or some child of ``u``
    satisfies that query node. A match may end at ``u`` in ``D(k)``, or in the
    last query node being a star when ``u`` is a leaf (``C``) or has a child
    the star does not take.

    One forward sweep over the levels gives the states every node is reached
    in; one backward sweep gives the states from which a match can still be
    completed; a node is on a match when the two meet. States are bits of an
    int64, so a query may have at most 31 single steps.
    """
    k = len(qnodes)
    n = len(tree)
    if k == 0 or n == 0:
        return np.zeros(n, dtype=bool)
    if k > 31:
        raise QueryError(f"query expands to {k} single steps; at most 31 are supported")
    qf = QueryFrame(tree)
    M = []
    for j, q in enumerate(qnodes):
        m = np.asarray(q.predicate(qf), dtype=bool)
        if m.shape != (n,):
            raise QueryError(f"predicate of query node {j} gave shape {m.shape}, expected ({n},)")
        M.append(m)
    star = [q.star for q in qnodes]
    lazy = [M[e] & ~M[e + 1] if e + 1 < k else M[e] for e in range(k)]
    parent = tree.parent
    levels = tree.levels
    leaf = tree.is_leaf
    nonroot = parent >= 0
    # per node: which query nodes some child satisfies / does not satisfy
    child_m = [np.zeros(n, dtype=bool) for _ in range(k)]
    child_not = [np.zeros(n, dtype=bool) for _ in range(k)]
    for e in range(k):
        np.logical_or.at(child_m[e], parent[nonroot], M[e][nonroot])
        np.logical_or.at(child_not[e], parent[nonroot], ~M[e][nonroot])

    def D(e: int) -> int:
        return e

    def C(e: int) -> int:
        return k + 1 + e

    one = np.int64(1)

    def bit(mask: np.ndarray, b: int) -> np.ndarray:
        return mask.astype(np.int64) << b

    def has(S: np.ndarray, b: int) -> np.ndarray:
        return ((S >> b) & one).astype(bool)

    # hand-over conditions at a node, per star e
    eps_d = [
        (leaf | (child_m[e + 1] if e + 1 < k else False)) if star[e] else None for e in range(k)
    ]
    eps_c = [(~leaf & child_m[e + 1]) if (star[e] and e + 1 < k) else None for e in range(k)]

    def closure(S: np.ndarray, idx: np.ndarray) -> np.ndarray:
        for e in range(k):
            if star[e]:
                S = S | (bit(has(S, D(e)) & eps_d[e][idx], D(e + 1)))
                if eps_c[e] is not None:
                    S = S | (bit(has(S, C(e)) & eps_c[e][idx], D(e + 1)))
        return S

    def consume(S: np.ndarray, idx: np.ndarray) -> np.ndarray:
        T = np.zeros(idx.shape[0], dtype=np.int64)
        for e in range(k):
            if star[e]:
                go = (has(S, D(e)) | has(S, C(e))) & lazy[e][idx]
                T |= bit(go, C(e))
            else:
                T |= bit(has(S, D(e)) & M[e][idx], D(e + 1))
        return T

    def start(idx: np.ndarray) -> np.ndarray:
        T = np.zeros(idx.shape[0], dtype=np.int64)
        if star[0]:
            if k > 1:
                T |= bit(M[1][idx], D(0) if star[1] else D(2))
            T |= bit(M[0][idx], D(0))
        else:
            T |= bit(M[0][idx], D(1))
        return T

    raw = np.zeros(n, dtype=np.int64)
    out = np.zeros(n, dtype=np.int64)
    for lv in levels:
        p = parent[lv]
        inherited = np.where(p >= 0, out[np.maximum(p, 0)], 0).astype(np.int64)
        r = consume(inherited, lv) | start(lv)
        raw[lv] = r
        out[lv] = closure(r, lv)

    # backward: raw states at v from which a match can be completed
    good = np.zeros(n, dtype=np.int64)
    child_y = np.zeros(n, dtype=np.int64)
    for lv in reversed(levels):
        acc = bit(np.ones(lv.shape[0], dtype=bool), D(k))
        if star[k - 1]:
            acc |= bit(~leaf[lv] & child_not[k - 1][lv], D(k - 1))
            acc |= bit(leaf[lv] | child_not[k - 1][lv], C(k - 1))
        ac = acc | child_y[lv]
        g = np.zeros(lv.shape[0], dtype=np.int64)
        g |= bit(has(ac, D(k)), D(k))
        for e in range(k - 1, -1, -1):  # reverse closure: hand-overs go to higher e
            gd = has(ac, D(e))
            if star[e]:
                gd = gd | (eps_d[e][lv] & has(g, D(e + 1)))
                gc = has(ac, C(e))
                if eps_c[e] is not None:
                    gc = gc | (eps_c[e][lv] & has(g, D(e + 1)))
                g |= bit(gc, C(e))
            g |= bit(gd, D(e))
        good[lv] = g
        # which states of the parent lead, by consuming this node, into a good state
        y = np.zeros(lv.shape[0], dtype=np.int64)
        for e in range(k):
            if star[e]:
                ok = lazy[e][lv] & has(g, C(e))
                y |= bit(ok, D(e)) | bit(ok, C(e))
            else:
                y |= bit(M[e][lv] & has(g, D(e + 1)), D(e))
        p = parent[lv]
        nz = p >= 0
        if nz.any():
            np.bitwise_or.at(child_y, p[nz], y[nz])
    return (raw & good) != 0


def _is_quant(q: Any) -> bool:
    return (isinstance(q, int) and not isinstance(q, bool)) or q in (".", "*", "+")


def compile_query(query: Any) -> list[QueryNode] | None:
    """Query nodes for a path query, or ``None`` for a plain node predicate."""
    if isinstance(query, str):
        return parse_string_query(query)
    if isinstance(query, list):
        return compile_object_query(query)
    if isinstance(query, tuple):
        if (
            len(query) == 2
            and _is_quant(query[0])
            and (query[1] is None or isinstance(query[1], Mapping) or callable(query[1]))
        ):
            return compile_object_query([query])
        return compile_object_query(list(query))
    return None


def apply_query(tree: Tree, query: Any) -> NodeSet:
    """Evaluate any supported query on ``tree`` and return a :class:`NodeSet`."""
    from ..model.nodeset import NodeSet

    if isinstance(query, NodeSet):
        if query.tree is not tree:
            return apply_query(tree, query.to_query())
        return query
    if isinstance(query, Mapping):
        query = [query]
    qnodes = compile_query(query)
    if qnodes is not None:
        return NodeSet.from_mask(tree, _match(tree, qnodes))
    if callable(query):
        res = query(tree.frame)
    else:
        res = query
    arr = np.asarray(res)
    if arr.dtype == bool:
        if arr.shape != (len(tree),):
            raise QueryError(f"boolean mask has shape {arr.shape}, expected ({len(tree)},)")
        return NodeSet.from_mask(tree, arr)
    if isinstance(res, pd.Series) and res.dtype == bool:
        return NodeSet.from_mask(tree, res.to_numpy())
    raise QueryError(
        "a query is an object-dialect list, a string-dialect 'MATCH ...' string, "
        f"or a callable returning a boolean mask; got {type(query).__name__}"
    )
