"""What the writers of additive formats may write: a metric whose values add up.

speedscope's weights and spans and the counts of folded stacks are summed
along each stack (a flame graph's widths, speedscope's "left heavy" and
"sandwich" totals). Only a metric with the aggregation rule ``"sum"`` means
anything there: a peak (``"max"``), a minimum or a per-node value
(``"none"``: an average, a ratio, a setting) summed up a stack is a wrong
number, so these writers refuse it.
"""

from __future__ import annotations

from ..model.tree import Tree


def additive_metric(tree: Tree, metric: str | None, fmt: str) -> str:
    """The exclusive metric a writer of ``fmt`` writes.

    ``metric`` (``"X"`` or ``"X (inc)"``) must be a ``"sum"`` metric; ``None``
    picks the first one. A ``ValueError`` says which metrics could be written.

    >>> t = Tree.from_parents([-1, 0], ["main", "f"], {"peak": [3.0, 5.0], "time": [1.0, 2.0]},
    ...                       meta={"aggregation": {"peak": "max"}})
    >>> additive_metric(t, None, "speedscope"), additive_metric(t, "time (inc)", "folded")
    ('time', 'time')
    """
    rules = tree.aggregation
    sums = [m for m in tree.exc_metrics if rules[m] == "sum"]
    if metric is None:
        if not sums:
            raise ValueError(
                f"{fmt} adds values up along each stack, and no metric of this tree adds up "
                f"(aggregation rules: {rules})"
            )
        return sums[0]
    m = metric if metric in rules else tree.exclusive_metric(metric)
    if rules[m] != "sum":
        raise ValueError(
            f"{fmt} adds values up along each stack, but {m!r} has the aggregation rule "
            f"{rules[m]!r}: summed over a stack its values mean nothing. Write a metric "
            f"that adds up instead: {sums or 'this tree has none'}"
        )
    return m
