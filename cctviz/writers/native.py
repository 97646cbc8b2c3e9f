"""Writer of the native ``.cctviz`` format (layout: :mod:`cctviz.readers.native`)."""

from __future__ import annotations

import io
import json
import os
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from ..model.ensemble import Ensemble
from ..model.formats import MAGIC, VERSION
from ..model.tree import Tree


def _parquet(df: pd.DataFrame) -> bytes:
    buf = io.BytesIO()
    df.to_parquet(buf, index=False)
    return buf.getvalue()


def _is_int(v: Any) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def _encode_objects(df: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, str]]:
    """Object columns Parquet would not give back as they were, and how.

    ``"int"``: Python ints (and None), which come back as int64 or float64
    (NaN for None); ``"list"``: lists, which come back as NumPy arrays;
    ``"json"``: values Parquet cannot type or would change (``1`` in one row,
    ``"1,2"`` in another; tuples, dicts), stored as JSON text. The reader
    (:mod:`cctviz.readers.native`) restores them from the header.
    """
    kinds: dict[str, str] = {}
    out = df
    for c in df.columns:
        col = df[c]
        if col.dtype != object:
            continue
        present = [v for v in col if v is not None]
        if present and all(_is_int(v) for v in present):
            kinds[str(c)] = "int"
            continue
        kind = "list" if present and all(isinstance(v, list) for v in present) else None
        if kind or not any(isinstance(v, (list, tuple, dict, set)) for v in present):
            try:
                pa.array(col, from_pandas=True)
            except (pa.ArrowException, TypeError, ValueError):
                pass
            else:
                if kind:
                    kinds[str(c)] = kind
                continue
        if out is df:
            out = df.copy()
        out[c] = [json.dumps(_jsonable(v)) for v in col]
        kinds[str(c)] = "json"
    return out, kinds


def _jsonable(x: Any) -> Any:
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, (str, int, float, bool)) or x is None:
        return x
    if hasattr(x, "item"):
        return x.item()
    return str(x)


def write_native(obj: Tree | Ensemble, path: Path) -> None:
    """Write a Tree or Ensemble; the file appears atomically (temp file + rename)."""
    tree = obj.tree if isinstance(obj, Ensemble) else obj
    header: dict[str, Any] = {"format": MAGIC, "version": VERSION}
    encoded: dict[str, dict[str, str]] = {}

    def table(name: str, df: pd.DataFrame) -> bytes:
        df, kinds = _encode_objects(df)
        if kinds:
            encoded[name] = kinds
        return _parquet(df)

    nodes = tree.nodes.drop(columns=["depth"]).reset_index(drop=True)
    files: dict[str, bytes] = {"nodes.parquet": table("nodes.parquet", nodes)}
    if isinstance(obj, Ensemble):
        header["kind"] = "ensemble"
        header["meta"] = _jsonable(obj.meta)
        header["tree_meta"] = _jsonable(tree.meta)  # the unified tree's own (units, rules...)
        files["rows.parquet"] = _parquet(obj.exclusive_rows)
        files["profiles.parquet"] = table("profiles.parquet", obj.profiles.reset_index(drop=True))
    else:
        header["kind"] = "tree"
        header["meta"] = _jsonable(obj.meta)
        files["metrics.parquet"] = _parquet(obj.metrics[obj.exc_metrics].reset_index(drop=True))
    if encoded:
        header["encoded"] = encoded
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f, zipfile.ZipFile(f, "w", zipfile.ZIP_STORED) as z:
            z.writestr("header.json", json.dumps(header))
            for name, data in files.items():
                z.writestr(name, data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
