"""A set of nodes of one tree: a query result or a selection in a view."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

import numpy as np

from .tables import UnitTable, metric_units, with_units

if TYPE_CHECKING:  # pragma: no cover
    from .tree import Tree


class NodeSet:
    """Sorted, unique node ids plus the tree they belong to.

    Example:
        >>> import cctviz
        >>> t = cctviz.Tree.from_parents([-1, 0, 0], ["main", "a", "b"], {"time": [1, 2, 3]})
        >>> s = t.select([2, 1])
        >>> s.ids.tolist(), list(s.names)
        ([1, 2], ['a', 'b'])
        >>> t.query(s.to_query()) == s
        True
    """

    __slots__ = ("tree", "ids")

    def __init__(self, tree: Tree, ids: Iterable[int] | np.ndarray = ()) -> None:
        arr = np.unique(
            np.asarray(list(ids) if not isinstance(ids, np.ndarray) else ids, dtype=np.int64)
        )
        if arr.size and (arr[0] < 0 or arr[-1] >= len(tree)):
            raise IndexError(f"node ids must be in [0, {len(tree)}); got {arr[0]}..{arr[-1]}")
        self.tree = tree
        self.ids = arr

    def on(self, tree: Tree) -> NodeSet:
        """The same nodes in another tree: matched by identity (the call path; the
        n-th of several same-named siblings is the n-th), nodes ``tree`` lacks left out.

        Example:
            >>> import cctviz
            >>> a = cctviz.Tree.from_parents([-1, 0, 0], ["main", "f", "f"])
            >>> b = cctviz.Tree.from_parents([-1, 0, 0, 0], ["main", "g", "f", "f"])
            >>> a.select([2]).on(b).ids.tolist()  # the second f, not both
            [3]
        """
        if tree is self.tree:
            return self
        from .unify import node_map

        got = node_map(self.tree, tree)[self.ids]
        return NodeSet(tree, got[got >= 0])

    @classmethod
    def from_mask(cls, tree: Tree, mask: np.ndarray) -> NodeSet:
        return cls(tree, np.flatnonzero(np.asarray(mask, dtype=bool)))

    # -------------------------------------------------------------- python
    def __len__(self) -> int:
        return int(self.ids.size)

    def __iter__(self) -> Iterator[int]:
        return iter(self.ids.tolist())

    def __contains__(self, node: object) -> bool:
        i = np.searchsorted(self.ids, node)
        return bool(i < self.ids.size and self.ids[i] == node)

    def __bool__(self) -> bool:
        return bool(self.ids.size)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, NodeSet):
            return self.tree is other.tree and np.array_equal(self.ids, other.ids)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        shown = ", ".join(map(str, self.names[:5]))
        more = ", ..." if len(self) > 5 else ""
        return f"<cctviz.NodeSet: {len(self)} of {len(self.tree)} nodes [{shown}{more}]>"

    # -------------------------------------------------------------- set ops
    def _other(self, other: NodeSet | Iterable[int]) -> np.ndarray:
        if isinstance(other, NodeSet):
            if other.tree is not self.tree:
                raise ValueError("node sets belong to different trees; query the same tree")
            return other.ids
        return NodeSet(self.tree, other).ids

    def __or__(self, other: NodeSet | Iterable[int]) -> NodeSet:
        return NodeSet(self.tree, np.union1d(self.ids, self._other(other)))

    def __and__(self, other: NodeSet | Iterable[int]) -> NodeSet:
        return NodeSet(self.tree, np.intersect1d(self.ids, self._other(other)))

    def __sub__(self, other: NodeSet | Iterable[int]) -> NodeSet:
        return NodeSet(self.tree, np.setdiff1d(self.ids, self._other(other)))

    def __xor__(self, other: NodeSet | Iterable[int]) -> NodeSet:
        return NodeSet(self.tree, np.setxor1d(self.ids, self._other(other)))

    def __invert__(self) -> NodeSet:
        return NodeSet(self.tree, np.setdiff1d(np.arange(len(self.tree)), self.ids))

    union, intersection, difference, symmetric_difference = __or__, __and__, __sub__, __xor__

    # -------------------------------------------------------------- views
    @property
    def names(self) -> np.ndarray:
        return self.tree.names[self.ids]

    @property
    def mask(self) -> np.ndarray:
        m = np.zeros(len(self.tree), dtype=bool)
        m[self.ids] = True
        return m

    def paths(self) -> list[tuple[str, ...]]:
        """Call path (names from the root) of each node."""
        return [self.tree.path(i) for i in self.ids]

    def to_frame(self) -> UnitTable:
        """Rows of the selected nodes: attributes, metrics (in their units,
        ``attrs["units"]``) and call path."""
        df = self.tree.frame.iloc[self.ids].copy()
        df["callpath"] = self.tree.callpaths.iloc[self.ids].to_numpy()
        return with_units(df, metric_units(self.tree, df.columns))

    def to_query(self) -> str:
        """A string-dialect query that gives this set back with ``tree.query``.

        Nodes are named by their call path (the ``callpath`` attribute), so the
        query also finds the same contexts in another profile of the program.
        Where one tree holds the same call path twice (same-named siblings),
        those nodes also get a ``node_id`` condition.
        """
        if not len(self):
            return 'MATCH (".", a) WHERE a."callpath" = "" AND NOT a."callpath" = ""'
        cp = self.tree.callpaths
        dup = cp.duplicated(keep=False).to_numpy()[self.ids]
        parts = []
        for i, p, d in zip(self.ids.tolist(), cp.iloc[self.ids], dup):
            c = f'a."callpath" = {quote(p)}'
            parts.append(f'({c} AND a."node_id" = {i})' if d else c)
        return f'MATCH (".", a) WHERE {" OR ".join(parts)}'


def quote(s: str) -> str:
    """Quote a string literal for the string dialect."""
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'
