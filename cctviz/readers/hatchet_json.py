"""Hatchet's two JSON forms.

- ``to_json`` form: ``{"graph": [{id: {"data": {...}, "children": [ids]}}, ...],
  "dataframe": [rows], "dataframe_indices": ["node", ...],
  "exclusive_metrics": [...], "inclusive_metrics": [...]}``.
- graph literal: ``[{"frame": {"name": ..., "type": ...}, "metrics": {...},
  "children": [...]}, ...]`` as ``GraphFrame.from_literal`` takes.

A ``to_json`` file whose dataframe is indexed by a second level (``rank``,
``thread``) becomes an Ensemble with one profile per value.

Rules and units (:func:`cctviz.interop.assemble`): Hatchet keeps neither.
Metrics add up (``"sum"``), except Caliper attribute names, which keep
Caliper's rules (``max#...`` a max, ``avg#``/``any#`` per node, ``inclusive#``
values given as inclusive; :func:`cctviz.interop.caliper_rule`). Units: those
of a ``units`` object (cctviz's writer adds one), else for Caliper timer names
the timer's convention, recorded in ``meta["units_assumed"]``, else none. An
``aggregation`` object (metric -> rule), if present, wins. Dataframe columns
that are neither metrics nor one value per node (``nid``, Hatchet's own node
id, aside) are not kept, with a warning.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import ProfileError
from ..interop import assemble
from ..model.ensemble import Ensemble
from ..model.tree import Tree
from . import register
from ._graph import parse_graph
from ._json import expect, expect_rows, first_byte, head_has, load_json


def _sniff_json_form(path: Path, h: bytes) -> bool:
    # Thicket's to_json and non-MPI timemory trees also hold a "graph": their
    # readers come first in DETECTION_ORDER, so what reaches here is Hatchet's
    return (
        first_byte(h) == b"{"
        and head_has(h, b'"graph"')  # (one scan for all sniffers)
        and (b'"dataframe"' in h or b'"dataframe_indices"' in h or len(h) < 65536)
    )


def _sniff_literal(path: Path, h: bytes) -> bool:
    return first_byte(h) == b"[" and b'"frame"' in h


@register("hatchet-json", _sniff_json_form, "Hatchet GraphFrame.to_json output (graph + dataframe)")
def read_hatchet_json(path: Path) -> Tree | Ensemble:
    """Read Hatchet's ``to_json`` form."""
    doc = load_json(path)
    expect(
        path, isinstance(doc, dict), "top level", "expected an object with 'graph' and 'dataframe'"
    )
    for key in ("graph", "dataframe"):
        expect(path, key in doc, "top level", f"missing key {key!r}")
    expect(
        path,
        "profile_mapping" not in doc and "profile_idx_name" not in doc,
        "top level",
        "this is a Thicket ensemble (Thicket.to_json): read it with format='thicket-json'",
    )
    nodes, root_ids = parse_graph(path, doc["graph"])
    ids = list(nodes)
    frames = [nd["data"] for nd in nodes.values()]
    pos = {nid: k for k, nid in enumerate(ids)}
    parent = np.full(len(ids), -1, dtype=np.int64)
    order_key = np.zeros(len(ids), dtype=np.int64)
    for nid, nd in nodes.items():
        for j, c in enumerate(nd["children"]):
            if c not in pos:
                raise ProfileError(
                    path, f"child {c} of node {nid} is not in the graph", where=f"node {nid}"
                )
            if parent[pos[c]] != -1:
                raise ProfileError(
                    path,
                    f"node {c} has two parents; cctviz reads trees, not DAGs",
                    where=f"node {nid}",
                )
            parent[pos[c]] = pos[nid]
            order_key[pos[c]] = j
    for r, nid in enumerate(root_ids):
        order_key[pos[nid]] = r
    # non-root "first" entries of later graph items are fine; every orphan is a root
    rows = doc["dataframe"]
    expect(path, isinstance(rows, list), "dataframe", "expected a list of rows")
    indices = doc.get("dataframe_indices", ["node"])
    expect(
        path,
        isinstance(indices, list) and "node" in indices,
        "dataframe_indices",
        "expected a list containing 'node'",
    )
    df = pd.DataFrame.from_records(rows) if rows else pd.DataFrame(columns=indices)
    for c in indices:
        expect(path, c in df.columns, "dataframe", f"rows lack index column {c!r}")
    exc = list(doc.get("exclusive_metrics", []))
    inc = list(doc.get("inclusive_metrics", []))
    for m in exc + inc:
        expect(path, m in df.columns, "dataframe", f"metric {m!r} is listed but no row has it")
    bad = ~df["node"].isin(list(pos)) if len(df) else pd.Series([], dtype=bool)
    expect_rows(
        path,
        bad,
        df["node"],
        "row refers to node {value!r}, which is not in the graph",
        "dataframe[{k}]",
    )
    df["_row"] = df["node"].map(pos).astype(np.int64)
    names = [str(f["name"]) for f in frames]
    kinds = [str(f.get("type", "function")) for f in frames]
    attrs = pd.DataFrame.from_records(
        [{k: v for k, v in f.items() if k not in ("name", "type")} for f in frames],
        index=range(len(frames)),
    )
    meta: dict[str, Any] = {}
    if isinstance(doc.get("metadata"), dict):
        meta.update(doc["metadata"])
    units = doc.get("units") if isinstance(doc.get("units"), dict) else {}
    rules = doc.get("aggregation") if isinstance(doc.get("aggregation"), dict) else {}
    others = [c for c in indices if c != "node"]
    return assemble(
        parent,
        names,
        kinds,
        attrs,
        df.drop(columns=["node"]),
        others,
        exc,
        inc,
        meta=meta,
        units=units,
        rules=rules,
        sibling_key=order_key,
    )


@register(
    "hatchet-literal",
    _sniff_literal,
    "Hatchet graph literal (list of nested frame/metrics/children dicts)",
)
def read_literal(path: Path) -> Tree:
    """Read a Hatchet graph literal (``GraphFrame.from_literal`` input) saved as JSON."""
    doc = load_json(path)
    expect(path, isinstance(doc, list), "top level", "expected a list of root nodes")
    # validate shape iteratively so errors point at the node
    stack = [(f"[{i}]", d) for i, d in enumerate(doc)]
    while stack:
        where, d = stack.pop()
        expect(path, isinstance(d, dict), where, "expected a node object")
        fr = d.get("frame")
        expect(
            path,
            isinstance(fr, dict) and "name" in fr,
            f"{where}.frame",
            "expected a frame with a 'name'",
        )
        m = d.get("metrics", {})
        expect(path, isinstance(m, dict), f"{where}.metrics", "expected an object of metric values")
        for k, v in m.items():
            expect(
                path,
                isinstance(v, (int, float)) and not isinstance(v, bool),
                f"{where}.metrics[{k!r}]",
                f"expected a number, got {v!r}",
            )
        kids = d.get("children", [])
        expect(path, isinstance(kids, list), f"{where}.children", "expected a list")
        stack += [(f"{where}.children[{j}]", c) for j, c in enumerate(kids)]
    return Tree.from_dict(doc)
