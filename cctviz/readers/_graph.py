"""Hatchet's ``graph`` list, as ``GraphFrame.to_json`` and ``Thicket.to_json`` write
it: shared by the ``hatchet-json`` and ``thicket-json`` readers (a helper, not a
reader).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import ProfileError
from ._json import expect


def parse_graph(
    path: Path, graph: Any, relations: tuple[str, ...] = ("children",)
) -> tuple[dict[int, dict[str, Any]], list[int]]:
    """Validate Hatchet's ``graph``: a list of objects ``{id: {"data": {"name": ...},
    "children": [ids]}}``.

    Returns the nodes ``{id: {"data": ..., relation: [ids]}}`` in file order (each
    of ``relations`` a list of integer ids, ``[]`` when absent) and the first id of
    each object (Hatchet's roots). The ``thicket-json`` reader shares it, with
    ``relations=("children", "parents")``.
    """
    expect(path, isinstance(graph, list), "graph", "expected a list of objects id -> node")
    shape = ", ".join(["'data': {...}", *(f"'{r}': [...]" for r in relations)])
    nodes: dict[int, dict[str, Any]] = {}
    firsts: list[int] = []
    for g, part in enumerate(graph):
        expect(path, isinstance(part, dict), f"graph[{g}]", "expected an object id -> node")
        for k, (key, nd) in enumerate(part.items()):
            where = f"graph[{g}][{key!r}]"
            try:
                nid = int(key)
            except ValueError:
                raise ProfileError(path, "node id is not an integer", where=where) from None
            expect(
                path,
                isinstance(nd, dict) and isinstance(nd.get("data"), dict),
                where,
                f"expected {{{shape}}}",
            )
            expect(path, "name" in nd["data"], f"{where}.data", "missing 'name'")
            entry: dict[str, Any] = {"data": nd["data"]}
            for rel in relations:
                v = nd.get(rel, [])
                expect(
                    path,
                    isinstance(v, list) and all(isinstance(x, int) for x in v),
                    f"{where}.{rel}",
                    "expected a list of integer node ids",
                )
                entry[rel] = v
            expect(path, nid not in nodes, where, "node id appears twice")
            nodes[nid] = entry
            if k == 0:
                firsts.append(nid)
    return nodes, firsts
