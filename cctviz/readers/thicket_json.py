"""Thicket's JSON form of an ensemble (``Thicket.to_json``).

Format facts: one object with

- ``graph``: a list holding one object ``{id: {"data": frame, "children": [ids],
  "parents": [ids]}}`` with every node (roots are the nodes without parents);
  the ``parents`` lists are what tells it from Hatchet's ``to_json`` graph;
- ``dataframe_indices`` (``["node", "profile"]``) and ``dataframe``: one record
  per (node, profile) with the metrics and other columns (``name``, ``nid``...);
- ``exclusive_metrics`` and ``inclusive_metrics`` (Caliper names such as
  ``sum#inclusive#sum#time.duration``; often inclusive only);
- ``metadata``: one record per profile (run metadata, keyed by ``profile``);
- ``profile``: the profile ids in order, ``profile_mapping``: id -> source file,
  ``profile_idx_name`` (newer Thickets; ``"profile"`` when absent);
- ``stats``: the statsframe (per-node statistics), not read: cctviz computes
  its own (``ens.stats``).

The result is an :class:`~cctviz.Ensemble` with one profile per entry of
``profile`` (in that order); ``ens.profiles`` has the ``profile`` id, the
metadata columns (values as written: Caliper writes most as strings) and
``profile_file``. Metrics follow :mod:`cctviz.interop`: Caliper names keep
Caliper's rules, an inclusive-only metric that adds up or is a maximum becomes
its exclusive counterpart (``sum#inclusive#sum#time.duration`` ->
``sum#sum#time.duration``, ``max#inclusive#...`` -> ``max#sum#time.duration``,
whose inclusive values are the recorded ones), a minimum or an average of
inclusive values stays per node under its own name
(``min#inclusive#sum#time.duration``: aggregation ``"none"``). The file keeps
no units: Caliper timer names get the timer's convention (the sample's values,
whole microseconds times 1e-6, are seconds), recorded in ``meta["units_assumed"]``.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import ProfileError
from ..interop import thicket_ensemble
from ..model.ensemble import Ensemble
from . import register
from ._graph import parse_graph
from ._json import expect, first_byte, head_has, load_json

_PARENTS = re.compile(rb'"children"\s*:\s*\[[^\]]*\]\s*,\s*"parents"\s*:')


def looks_like_thicket(h: bytes) -> bool:
    """Whether the first bytes of a JSON file look like ``Thicket.to_json`` output
    (also used by the ``hatchet-json`` sniffer to leave these files alone)."""
    return (
        first_byte(h) == b"{"
        and head_has(h, b'"graph"')  # (one scan for all sniffers)
        and (b'"profile_mapping"' in h or bool(_PARENTS.search(h)))
    )


def _sniff(path: Path, h: bytes) -> bool:
    return looks_like_thicket(h)


def _walk(
    path: Path, nodes: dict[int, dict], order: list[int], roots: list[int]
) -> tuple[dict[int, int], list[int]]:
    """Depth-first from ``roots`` along children; each node once (first parent wins)."""
    index: dict[int, int] = {}
    parent: list[int] = []
    stack = [(r, -1) for r in reversed(roots)]
    while stack:
        nid, par = stack.pop()
        if nid in index:
            continue
        index[nid] = len(parent)
        parent.append(par)
        for c in reversed(nodes[nid]["children"]):
            if c not in index:
                stack.append((c, index[nid]))
    if len(index) != len(order):
        lost = next(n for n in order if n not in index)
        raise ProfileError(path, "node is not reachable from any root (a cycle?)", f"node {lost}")
    return index, parent


@register("thicket-json", _sniff, "Thicket ensemble JSON (Thicket.to_json)")
def read_thicket_json(path: Path) -> Ensemble:
    """Read ``Thicket.to_json`` output as an Ensemble (profiles with their metadata).

    >>> import cctviz
    >>> ens = cctviz.read("../shared/data/thicket/example-json/user_ensemble.json")
    >>> ens.n_profiles, len(ens.tree), len(ens.tree.roots)
    (172, 29, 8)
    >>> ens.profiles.loc[0, "cluster"], ens.profiles.loc[0, "problem_size"]
    ('opal', '10')
    >>> ens.aggregation["max#sum#time.duration"], ens.meta["units"]["max#sum#time.duration"]
    ('max', 's')
    """
    doc = load_json(path)
    expect(path, isinstance(doc, dict), "top level", "expected a Thicket object")
    for key in ("graph", "dataframe", "dataframe_indices"):
        expect(path, key in doc, "top level", f"missing key {key!r}")
    pname = doc.get("profile_idx_name", "profile")
    expect(path, isinstance(pname, str), "profile_idx_name", "expected a string")
    expect(
        path,
        isinstance(doc.get(pname), list),
        "top level",
        f"missing the profile list {pname!r} (a Hatchet to_json file is read as 'hatchet-json')",
    )
    nodes, _ = parse_graph(path, doc["graph"], ("children", "parents"))
    order = list(nodes)
    expect(path, bool(nodes), "graph", "the graph has no nodes")
    for nid in order:
        for c in nodes[nid]["children"] + nodes[nid]["parents"]:
            if c not in nodes:
                raise ProfileError(path, f"node {c} is not in the graph", where=f"node {nid}")
    is_child = {c for n in order for c in nodes[n]["children"]}
    roots = [n for n in order if not nodes[n]["parents"] and n not in is_child]
    index, parent = _walk(path, nodes, order, roots)
    by_index = sorted(index, key=index.__getitem__)
    frames = [nodes[n]["data"] for n in by_index]
    names = [str(f["name"]) for f in frames]
    kinds = [str(f.get("type", "function")) for f in frames]
    attrs = pd.DataFrame.from_records(
        [{k: v for k, v in f.items() if k not in ("name", "type")} for f in frames],
        index=range(len(frames)),
    )
    # dataframe
    indices = doc["dataframe_indices"]
    expect(
        path,
        isinstance(indices, list) and "node" in indices and pname in indices,
        "dataframe_indices",
        f"expected a list with 'node' and {pname!r}",
    )
    recs = doc["dataframe"]
    expect(path, isinstance(recs, list), "dataframe", "expected a list of records")
    for k, r in enumerate(recs):
        if not isinstance(r, dict):
            raise ProfileError(path, "expected a record object", where=f"dataframe[{k}]")
    df = pd.DataFrame.from_records(recs) if recs else pd.DataFrame(columns=indices)
    for c in indices:
        expect(path, c in df.columns, "dataframe", f"records lack index column {c!r}")
    rnode = pd.to_numeric(df["node"], errors="coerce")
    rpos = rnode.map(index)
    if rpos.isna().any():
        k = int(np.flatnonzero(rpos.isna().to_numpy())[0])
        raise ProfileError(
            path,
            f"record of node {df['node'].iloc[k]!r}, which is not in the graph",
            f"dataframe[{k}]",
        )
    rows = df.drop(columns=["node"]).assign(_row=rpos.to_numpy(dtype=np.int64))
    exc = doc.get("exclusive_metrics", [])
    inc = doc.get("inclusive_metrics", [])
    for key, lst in (("exclusive_metrics", exc), ("inclusive_metrics", inc)):
        expect(
            path,
            isinstance(lst, list) and all(isinstance(m, str) for m in lst),
            key,
            "expected a list of metric names",
        )
        for m in lst:
            expect(path, m in df.columns or not len(df), key, f"metric {m!r} is in no record")
    # profiles: order, metadata, source files
    order_p = doc[pname]
    try:
        ids = pd.Series(order_p)
        ids.map(hash)
    except (TypeError, ValueError):
        raise ProfileError(path, "expected a list of profile ids", where=pname) from None
    expect(path, not ids.duplicated().any(), pname, "profile ids repeat")
    md = doc.get("metadata")
    if md is not None:
        expect(
            path,
            isinstance(md, list) and all(isinstance(r, dict) and pname in r for r in md),
            "metadata",
            f"expected a list of records with {pname!r}",
        )
        md = pd.DataFrame.from_records(md) if md else pd.DataFrame(columns=[pname])
    return thicket_ensemble(
        parent, names, kinds, attrs, rows, pname, order_p, exc, inc, md, doc.get("profile_mapping")
    )
