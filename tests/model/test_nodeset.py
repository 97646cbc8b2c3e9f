import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cctviz import Tree
from tests.hypothesis_profiles import examples
from tests.strategies import trees


@settings(max_examples=examples(60), deadline=None)
@given(trees(names=["a", "b/c", 'q"x', "d\\e", "MPI_Send"]), st.data())
def test_to_query_gives_the_same_set_back(t, data):
    ids = data.draw(st.lists(st.integers(0, len(t) - 1), max_size=8))
    s = t.select(ids)
    assert t.query(s.to_query()) == s


def test_set_operations_and_frame(hatchet_tree):
    t = hatchet_tree
    bars = t.query([{"name": "bar"}])
    bazs = t.query([{"name": "baz"}])
    both = bars | bazs
    assert len(both) == len(bars) + len(bazs)
    assert (both & bars) == bars
    assert (both - bars) == bazs
    assert (both ^ bars) == bazs
    assert len(~both) == len(t) - len(both)
    df = both.to_frame()
    assert list(df.index) == both.ids.tolist()
    assert set(df["name"]) == {"bar", "baz"}
    assert "callpath" in df and "time (inc)" in df
    assert 1 in bars and 0 not in bars
    other = Tree.from_parents([-1], ["x"])
    with pytest.raises(ValueError, match="different trees"):
        bars | other.select([0])
    with pytest.raises(IndexError):
        t.select([99])
