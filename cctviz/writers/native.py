"""Writer of the native ``.cctviz`` format (layout: :mod:`cctviz.readers.native`)."""

from __future__ import annotations

import io
import json
import os
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import pandas as pd

from ..model.ensemble import Ensemble
from ..model.formats import MAGIC, VERSION, encode_objects, jsonable
from ..model.tree import Tree


def _parquet(df: pd.DataFrame) -> bytes:
    buf = io.BytesIO()
    df.to_parquet(buf, index=False)
    return buf.getvalue()


def write_native(obj: Tree | Ensemble, path: Path) -> None:
    """Write a Tree or Ensemble; the file appears atomically (temp file + rename)."""
    tree = obj.tree if isinstance(obj, Ensemble) else obj
    header: dict[str, Any] = {"format": MAGIC, "version": VERSION}
    encoded: dict[str, dict[str, str]] = {}

    def table(name: str, df: pd.DataFrame) -> bytes:
        df, kinds = encode_objects(df)
        if kinds:
            encoded[name] = kinds
        return _parquet(df)

    nodes = tree.nodes.drop(columns=["depth"]).reset_index(drop=True)
    files: dict[str, bytes] = {"nodes.parquet": table("nodes.parquet", nodes)}
    if isinstance(obj, Ensemble):
        header["kind"] = "ensemble"
        header["meta"] = jsonable(obj.meta)
        header["tree_meta"] = jsonable(tree.meta)  # the unified tree's own (units, rules...)
        files["rows.parquet"] = _parquet(obj.exclusive_rows)
        files["profiles.parquet"] = table("profiles.parquet", obj.profiles.reset_index(drop=True))
        # Parquet keeps no row count for a table without columns: the header does
        header["n_profiles"] = len(obj.profiles)
    else:
        header["kind"] = "tree"
        header["meta"] = jsonable(obj.meta)
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
