"""Caliper's json-split format (``cali-query -q "... FORMAT json-split"``).

Sections: ``nodes`` (a forest of labelled nodes; each node belongs to an
attribute ``column``), ``columns`` and ``column_metadata`` (which columns
are values), ``data`` (one row per record, node-valued columns hold indices
into ``nodes``). Every other top-level key is run metadata.

As Hatchet does: the call-path column is ``source.function#callpath.address``
if present, else ``path``; rows without a path are dropped; Caliper's metric
names are shortened (``sum#time.duration`` -> ``time``,
``inclusive#sum#time.duration`` -> ``time (inc)``); a node sampled at several
source lines gets one ``statement`` child per line. ``mpi.rank`` rows become
one profile per rank (an Ensemble) when there are several ranks.

Unlike Hatchet, each metric has the aggregation rule its Caliper operators
say (``max#`` a max, ``avg#``/``any#`` per node, inclusive aggregates given
to the model as inclusive values) and a unit: the ``attribute.unit`` of the
column metadata, else the Caliper timer's convention recorded as an
assumption in ``meta["units_assumed"]`` (the LULESH samples, whose
``time.duration`` values are whole numbers, are in microseconds), else none.
See :func:`metric_specs`. A value column of text only is a node attribute; a
node-valued column entry that is no node index is an error.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import ProfileError
from ..model.ensemble import Ensemble
from ..model.tree import Tree
from . import register
from ._caliper import CaliColumn, all_text, build_profile
from ._json import expect, expect_rows, first_byte, load_json

SECTIONS = ("data", "columns", "column_metadata", "nodes")


_DATA_FIRST = re.compile(rb'^\s*\{\s*"data"\s*:\s*\[')


def _sniff(path: Path, h: bytes) -> bool:
    if first_byte(h) != b"{":
        return False
    if _DATA_FIRST.match(h):  # as cali-query writes them (and big files: data first)
        return True
    return b'"columns"' in h and b'"nodes"' in h and b'"column_metadata"' in h


@register("caliper-json", _sniff, "Caliper json-split (data/columns/column_metadata/nodes)")
def read_caliper_json(path: Path) -> Tree | Ensemble:
    """Read a Caliper json-split file; several ranks give an Ensemble.

    >>> import cctviz
    >>> ens = cctviz.read("../shared/data/hatchet/caliper-lulesh-json/lulesh-annotation-profile.json")
    >>> ens.meta["units"], ens.aggregation  # the file states no unit: whole microseconds
    ({'time': 'us'}, {'time': 'sum'})
    """
    doc = load_json(path)
    expect(
        path,
        isinstance(doc, dict),
        "top level",
        "expected an object with data/columns/column_metadata/nodes",
    )
    for s in SECTIONS:
        expect(path, s in doc, "top level", f"missing section {s!r}")
        expect(path, isinstance(doc[s], list), s, "expected a list")
    cols: list[str] = doc["columns"]
    cmeta: list[dict] = doc["column_metadata"]
    nodes: list[dict] = doc["nodes"]
    expect(
        path, all(isinstance(c, str) for c in cols), "columns", "expected a list of column names"
    )
    expect(
        path,
        len(cmeta) == len(cols),
        "column_metadata",
        f"{len(cmeta)} entries for {len(cols)} columns",
    )
    for j, m in enumerate(cmeta):
        expect(
            path,
            isinstance(m, dict) and "is_value" in m,
            f"column_metadata[{j}]",
            "expected {'is_value': ...}",
        )
    n_all = len(nodes)
    labels = np.empty(n_all, dtype=object)
    ncol = np.empty(n_all, dtype=object)
    npar = np.full(n_all, -1, dtype=np.int64)
    for i, nd in enumerate(nodes):
        expect(
            path,
            isinstance(nd, dict) and "label" in nd and "column" in nd,
            f"nodes[{i}]",
            "expected a node with 'label' and 'column'",
        )
        p = nd.get("parent", -1)
        expect(
            path,
            isinstance(p, int) and -1 <= p < n_all and p != i,
            f"nodes[{i}].parent",
            f"expected an index into nodes (0..{n_all - 1}), got {p!r}",
        )
        labels[i] = str(nd["label"])
        ncol[i] = nd["column"]
        npar[i] = p

    if "source.function#callpath.address" in cols:
        path_col, kind = "source.function#callpath.address", "function"
    elif "path" in cols:
        path_col, kind = "path", "region"
    else:
        raise ProfileError(
            path,
            "no call-path column ('path' or 'source.function#callpath.address')",
            where="columns",
        )
    is_tree = ncol == path_col
    tree_ids = np.flatnonzero(is_tree)
    # parents: nearest ancestor of the path column (vectorised pointer jumping)
    par = npar[tree_ids]
    for _ in range(n_all):
        bad = (par >= 0) & ~is_tree[np.maximum(par, 0)]
        if not bad.any():
            break
        par[bad] = npar[par[bad]]
    else:  # pragma: no cover - cycles are caught below
        pass
    local = np.full(n_all, -1, dtype=np.int64)
    local[tree_ids] = np.arange(tree_ids.size)
    tparent = np.where(par >= 0, local[np.maximum(par, 0)], -1)
    names = labels[tree_ids].copy()
    unknown = names == ""
    if unknown.any():
        names[unknown] = [f"UNKNOWN {k}" for k in range(int(unknown.sum()))]

    # ---- data rows
    data = doc["data"]
    for k, row in enumerate(data):
        if not isinstance(row, list) or len(row) != len(cols):
            raise ProfileError(path, f"expected a row of {len(cols)} values", where=f"data[{k}]")
    try:
        df = pd.DataFrame(data, columns=cols)
        huge = any(_holds_huge(df.iloc[:, j]) for j, t in enumerate(df.dtypes) if t.kind == "O")
    except OverflowError:  # pandas < 3 refuses the table; pandas 3 keeps objects
        huge = True
    if huge:
        k, j = _beyond_float(data)
        raise ProfileError(
            path, "an integer beyond a float's range", where=f"data[{k}][{j}]"
        ) from None
    df = df[df[path_col].notna()].reset_index(drop=True)
    pn = pd.to_numeric(df[path_col], errors="coerce")
    bad = pn.isna() | (pn < 0) | (pn >= n_all)
    expect_rows(
        path, bad, df[path_col], path_col + " value {value!r} is not a node index", "data row {k}"
    )
    rnode = local[pn.to_numpy(dtype=np.int64)]
    if (rnode < 0).any():
        k = int(np.flatnonzero(rnode < 0)[0])
        raise ProfileError(
            path,
            f"row points at node {int(pn.iloc[k])}, which is not a {path_col} node",
            where=f"data row {k}",
        )

    node_cols = [c for c, m in zip(cols, cmeta) if not m.get("is_value") and c != path_col]
    for c in node_cols:  # node-valued columns hold indices into nodes: give their labels
        idx = pd.to_numeric(df[c], errors="coerce")
        ok = (idx.notna() & (idx >= 0) & (idx < n_all)).to_numpy()
        expect_rows(
            path,
            pd.Series(~ok & df[c].notna().to_numpy()),
            df[c],
            c + " value {value!r} is not a node index",
            "data row {k}",
        )
        lab = np.full(len(df), None, dtype=object)
        lab[ok] = labels[idx[ok].to_numpy(dtype=np.int64)]
        df[c] = lab
    columns = [
        CaliColumn(
            c,
            bool(m.get("is_value")) and not all_text(df[c]),
            m.get("attribute.alias"),
            m.get("attribute.unit"),
        )
        for c, m in zip(cols, cmeta)
        if c != path_col
    ]
    run_meta = {k: v for k, v in doc.items() if k not in SECTIONS}
    return build_profile(
        path,
        df,
        columns,
        tparent,
        names,
        np.full(tree_ids.size, kind, dtype=object),
        rnode,
        run_meta,
    )


def _is_huge(v: Any) -> bool:
    """An integer (``json.loads`` gives any length) beyond a float's range."""
    return type(v) is int and abs(v) > sys.float_info.max


def _holds_huge(column: pd.Series) -> bool:
    """Whether a column of objects holds an integer beyond a float's range."""
    return any(map(_is_huge, column.to_numpy()))


def _beyond_float(data: list[list[Any]]) -> tuple[int, int]:
    """Where the first integer beyond a float's range is in the records (row,
    column), wherever the record is (one without a call path too, whatever
    pandas' version); only asked where the table holds one."""
    for k, row in enumerate(data):
        for j, v in enumerate(row):
            if _is_huge(v):
                return k, j
    raise AssertionError("no integer beyond a float's range")  # pragma: no cover
