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
from ..model.formats import MAGIC, VERSION
from ..model.tree import Tree


def _parquet(df: pd.DataFrame) -> bytes:
    buf = io.BytesIO()
    df.to_parquet(buf, index=False)
    return buf.getvalue()


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
    nodes = tree.nodes.drop(columns=["depth"]).reset_index(drop=True)
    files: dict[str, bytes] = {"nodes.parquet": _parquet(nodes)}
    header: dict[str, Any] = {"format": MAGIC, "version": VERSION}
    if isinstance(obj, Ensemble):
        header["kind"] = "ensemble"
        header["meta"] = _jsonable(obj.meta)
        files["rows.parquet"] = _parquet(obj.rows)
        files["profiles.parquet"] = _parquet(obj.profiles.reset_index(drop=True))
    else:
        header["kind"] = "tree"
        header["meta"] = _jsonable(obj.meta)
        files["metrics.parquet"] = _parquet(obj.metrics[obj.exc_metrics].reset_index(drop=True))
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
