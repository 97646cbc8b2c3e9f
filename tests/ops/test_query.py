"""Query semantics: expected sets written from Hatchet's documented behaviour on
Hatchet's own test tree, then a randomised cross-check against llnl-hatchet."""

import random
import warnings

import numpy as np
import pytest

import cctviz
from cctviz import QueryError
from cctviz.writers.hatchet import to_literal
from tests.conftest import CALIPER_JSON, HATCHET_JSON

# pre-order ids of hatchet-graph-literal.json:
# 0 foo, 1 bar, 2 baz, 3 grault, 4 qux, 5 quux, 6 corge, 7 bar, 8 baz, 9 grault,
# 10 grault, 11 garply, 12 waldo, 13 fred, 14 plugh, 15 xyzzy, 16 thud, 17 baz,
# 18 garply, 19 garply, 20 waldo, 21 bar, 22 baz, 23 grault

CASES = [
    ([{"name": "bar"}], [1, 7, 21]),
    (
        [(".", {"name": "foo"}), "*", (".", {"name": "baz"})],
        [0, 1, 2, 4, 5, 6, 7, 8, 12, 13, 15, 16, 17],
    ),
    # a star stops at the first node matching the next query node: baz below bar(7) is not taken
    ([{"name": "qux"}, "*", {"name": "ba.*"}], [4, 5, 6, 7]),
    ([("+", {"time (inc)": ">= 20"})], [0, 1, 4, 5, 6, 7, 12, 13, 15, 16, 20, 21]),
    ([{"name": "waldo"}, 2], [12, 13, 14, 15, 20, 21, 22, 23]),
    ([{"name": "gr.*"}], [3, 9, 10, 23]),  # regex matched against the whole name
    ([{"name": "ar"}], []),
    ([{"time": 15}], [11, 18, 19]),
    ([{"time": ["> 4", "< 10"], "name": "b.*"}], [1, 2, 7, 8, 17, 21, 22]),
    ([("*", {"name": "^(?!corge).*"}), {"name": "garply"}], [0, 11, 12, 13, 15, 16, 18, 19]),
]

STRING_CASES = [
    ('MATCH (".", a) WHERE a."name" = "bar"', [1, 7, 21]),
    (
        'MATCH (".", a)->("*")->(".", b) WHERE a."name" = "foo" AND b."name" = "baz"',
        [0, 1, 2, 4, 5, 6, 7, 8, 12, 13, 15, 16, 17],
    ),
    ('MATCH (".", a) WHERE a."name" STARTS WITH "gr"', [3, 9, 10, 23]),
    ('MATCH (".", a) WHERE a."name" ENDS WITH "ly"', [11, 18, 19]),
    ('MATCH (".", a) WHERE a."name" CONTAINS "u"', [3, 4, 5, 9, 10, 14, 16, 23]),
    ('MATCH (".", a) WHERE a."name" =~ "gr"', [3, 9, 10, 23]),  # =~ anchors at the start only
    ('MATCH (".", a) WHERE a IS LEAF AND a."time" > 5', [3, 9, 10, 11, 18, 19, 23]),
    ('MATCH (".", a) WHERE a."name" = "bar" OR a."name" = "baz" AND a."time" > 100', [1, 7, 21]),
    ('MATCH (".", a) WHERE NOT a."time" > 0', [0, 4, 12]),
    ('MATCH (".", a)->(2, b) WHERE a."name" = "xyzzy"', [15, 16, 17, 18]),
    ('MATCH (".", a) WHERE a."depth" = 1', [1, 4, 12, 21]),
    ('MATCH (".", a) WHERE a."node_id" >= 22', [22, 23]),
    (
        'MATCH (".", a) WHERE (a."name" = "bar" OR a."name" = "baz") AND a."time (inc)" > 5',
        [1, 7, 21],
    ),
]


@pytest.mark.parametrize("query,expected", CASES)
def test_object_dialect_on_hatchet_tree(hatchet_tree, query, expected):
    assert hatchet_tree.query(query).ids.tolist() == expected


@pytest.mark.parametrize("query,expected", STRING_CASES)
def test_string_dialect_on_hatchet_tree(hatchet_tree, query, expected):
    assert hatchet_tree.query(query).ids.tolist() == expected


def test_pandas_predicates(hatchet_tree):
    t = hatchet_tree
    assert t.query(lambda df: df["time (inc)"] > 50).ids.tolist() == [0, 4, 5, 6, 12]
    assert t.query(t.frame["name"].eq("thud").to_numpy()).ids.tolist() == [16]
    # Hatchet-style row callables inside the object dialect
    assert t.query([(".", lambda row: row["name"].startswith("xy"))]).ids.tolist() == [15]


def test_query_errors_name_the_problem(hatchet_tree):
    t = hatchet_tree
    with pytest.raises(QueryError, match="unknown attribute 'nmae'"):
        t.query([{"nmae": "x"}])
    with pytest.raises(QueryError, match="numeric"):
        t.query([{"time": "lots"}])
    with pytest.raises(QueryError, match="position"):
        t.query('MATCH (".", a) WHERE a."name" = ')
    with pytest.raises(QueryError, match="no node of the MATCH"):
        t.query('MATCH (".", a) WHERE b."name" = "x"')
    with pytest.raises(QueryError, match="quantifier"):
        t.query([("?", {})])
    with pytest.raises(QueryError, match="regular expression"):
        t.query([{"name": "("}])


# ---------------------------------------------------------------- vs Hatchet
from tests.peers import hatchet  # noqa: E402  (imported when a test uses it)


def _hatchet_paths(gf, query):
    from hatchet.query import ObjectQuery, parse_string_dialect
    from hatchet.query.engine import QueryEngine

    q = parse_string_dialect(query) if isinstance(query, str) else ObjectQuery(query)
    nodes = QueryEngine().apply(q, gf.graph, gf.dataframe)
    return sorted(tuple(x.frame["name"] for x in n.path()) for n in nodes)


def _ours(t, query):
    return sorted(t.path(i) for i in t.query(query).ids)


def _random_tree(rng, n):
    parent = [-1] + [rng.randrange(i) if rng.random() > 0.05 else -1 for i in range(1, n)]
    names = [rng.choice(["a", "b", "c", "d", "MPI_x", "MPI_y"]) for _ in range(n)]
    return cctviz.Tree.from_parents(
        parent, names, {"time": [float(rng.randrange(10)) for _ in range(n)]}
    )


def _random_pred(rng):
    r = rng.random()
    if r < 0.5:
        return {"name": rng.choice(["a", "b", "c", "MPI_.*", "[ab]", "d"])}
    if r < 0.7:
        return {"time": rng.choice(["> 3", "< 5", ">= 2", "== 0"])}
    if r < 0.85:
        return {"time (inc)": rng.choice(["> 10", "< 8"])}
    return {}


@pytest.mark.parametrize("seed", range(4))
def test_object_dialect_equals_hatchet_on_random_trees(seed):
    rng = random.Random(seed)
    for _ in range(150):
        t = _random_tree(rng, rng.randint(1, 25))
        gf = hatchet.GraphFrame.from_literal(to_literal(t))
        q = [
            (rng.choice([".", "*", "*", "+", 2]), _random_pred(rng))
            for _ in range(rng.randint(1, 6))
        ]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = _hatchet_paths(gf, q)
        assert _ours(t, q) == expected, (q, t.render(header=False))


def test_string_dialect_equals_hatchet_on_random_trees():
    rng = random.Random(99)
    compared = hatchet_broken = 0
    conds = [
        '{v}."name" = "a"',
        '{v}."name" STARTS WITH "MPI"',
        '{v}."time" > 3',
        '{v}."name" =~ "[bc]"',
        "{v} IS LEAF",
        "{v} IS NOT LEAF",
        '{v}."time (inc)" <= 12',
        'NOT {v}."name" ENDS WITH "y"',
    ]
    for _ in range(150):
        t = _random_tree(rng, rng.randint(1, 25))
        gf = hatchet.GraphFrame.from_literal(to_literal(t))
        k = rng.randint(1, 4)
        names = "abcd"[:k]
        nodes, where = [], []
        for v in names:
            quant = rng.choice([".", "*", "+"])
            if rng.random() < 0.8:
                c = rng.choice(conds).format(v=v)
                if rng.random() < 0.4:
                    c += f" {rng.choice(['AND', 'OR'])} " + rng.choice(conds).format(v=v)
                where.append(c)
                nodes.append(f'("{quant}", {v})')
            else:  # Hatchet cannot compile a named node without conditions
                nodes.append(f'("{quant}")')
        q = "MATCH " + "->".join(nodes) + (" WHERE " + " AND ".join(where) if where else "")
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                expected = _hatchet_paths(gf, q)
        except (SyntaxError, AttributeError):
            # Hatchet builds its predicate as Python source; some valid queries
            # (a LEAF condition followed by a typed one) make it emit bad code,
            # and a MATCH without WHERE makes it fail on a None
            hatchet_broken += 1
            continue
        compared += 1
        assert _ours(t, q) == expected, (q, t.render(header=False))
    assert compared >= 100, (compared, hatchet_broken)


@pytest.mark.parametrize("path", [HATCHET_JSON, *CALIPER_JSON], ids=lambda p: p.name)
def test_queries_equal_hatchet_on_real_files(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        obj = cctviz.read(path)
    t = obj.tree if isinstance(obj, cctviz.Ensemble) else obj
    lit = hatchet.GraphFrame.from_literal(to_literal(t))  # same tree and metrics, in Hatchet
    names = list(dict.fromkeys(t.names))[:6]
    metric = t.metric_column(None)
    cutoff = float(np.median(t.metrics[metric]))
    queries = [
        [{"name": names[-1]}],
        [("*", {metric: f"> {cutoff}"}), {"name": names[1]}],
        [{"name": names[0]}, "*", {"name": ".*[Ee]lems?"}],
        [("+", {metric: f">= {cutoff}"}), ("*", {"name": "(?!MPI).*"})],
        f'MATCH (".", a)->("*")->(".", b) WHERE a."name" = "{names[0]}" AND b IS LEAF',
        f'MATCH ("+", a) WHERE a."{metric}" > {cutoff} OR a."name" STARTS WITH "Calc"',
    ]
    for q in queries:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = _hatchet_paths(lit, q)
        assert _ours(t, q) == expected, q
