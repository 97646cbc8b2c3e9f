"""The native format: one ``.cctviz`` file, lossless for Tree and Ensemble.

A ZIP container (stored, not compressed: the tables inside compress
themselves) holding Parquet tables and a JSON header:

- ``header.json``: ``{"format": "cctviz", "version": 1, "kind": "tree"|"ensemble", "meta": {...}}``;
  an ensemble's also holds ``tree_meta`` (its unified tree's metadata), and
  ``encoded`` names object columns stored encoded (``{table: {column:
  "int" | "list" | "json"}}``: Python ints with None, which Parquet would
  give back as floats; lists, which it would give back as arrays; values it
  cannot type or would change, as JSON text)
- ``nodes.parquet``: name, parent, kind and every other node attribute, in pre-order
- ``metrics.parquet`` (tree): exclusive metrics, one row per node
- ``rows.parquet`` (ensemble): node, profile and exclusive metrics
- ``profiles.parquet`` (ensemble): profile metadata

Why Parquet: typed columns (strings, ints, floats, nulls, categoricals)
round-trip exactly through pyarrow, it is columnar and compressed, and
pandas, polars, DuckDB and Spark read it, so a saved profile is usable
without cctviz. One ZIP keeps a profile a single file to copy around.
"""

from __future__ import annotations

import io
import json
import zipfile
import zlib
from pathlib import Path

import pandas as pd

from ..errors import ProfileError
from ..model.ensemble import Ensemble
from ..model.formats import EXTENSION, MAGIC, VERSION, decode_objects
from ..model.tree import Tree
from . import register

#: what a damaged ZIP raises: an unsupported version or compression
#: (NotImplementedError), an encrypted member (RuntimeError), bad deflate data
_ZIP_ERRORS = (zipfile.BadZipFile, OSError, EOFError, NotImplementedError, RuntimeError, zlib.error)


def _sniff(path: Path, head: bytes) -> bool:
    if head[:2] != b"PK":
        return False
    try:
        with zipfile.ZipFile(path) as z:
            return "header.json" in z.namelist()
    except _ZIP_ERRORS:
        return path.suffix == EXTENSION


def _table(z: zipfile.ZipFile, path: Path, name: str) -> pd.DataFrame:
    try:
        data = z.read(name)
    except KeyError:
        raise ProfileError(path, f"the {name} table is missing", where=name) from None
    except _ZIP_ERRORS as e:
        raise ProfileError(path, f"the {name} table is damaged ({e})", where=name) from None
    try:
        return pd.read_parquet(io.BytesIO(data))
    except Exception as e:  # noqa: BLE001 - pyarrow raises several kinds
        raise ProfileError(
            path, f"the {name} table is not valid Parquet ({e})", where=name
        ) from None


@register("cctviz", _sniff, "cctviz native file (.cctviz: Parquet tables in a ZIP)")
def read_native(path: Path) -> Tree | Ensemble:
    """Read a ``.cctviz`` file written by :func:`cctviz.write`."""
    try:
        z = zipfile.ZipFile(path)
    except _ZIP_ERRORS as e:
        raise ProfileError(path, f"not a readable .cctviz (ZIP) file: {e}") from None
    with z:
        try:
            header = json.loads(z.read("header.json"))
        except KeyError:
            raise ProfileError(
                path, "no header.json: not a cctviz file", where="header.json"
            ) from None
        except (json.JSONDecodeError, UnicodeDecodeError, *_ZIP_ERRORS) as e:
            raise ProfileError(path, f"damaged header ({e})", where="header.json") from None
        if not isinstance(header, dict) or header.get("format") != MAGIC:
            raise ProfileError(path, "header does not say format 'cctviz'", where="header.json")
        if header.get("version") != VERSION:
            raise ProfileError(
                path,
                f"format version {header.get('version')!r}; this cctviz reads {VERSION}",
                where="header.json",
            )
        meta = header.get("meta") or {}
        encoded = header.get("encoded") if isinstance(header.get("encoded"), dict) else {}
        nodes = decode_objects(
            path, "nodes.parquet", _table(z, path, "nodes.parquet"), encoded.get("nodes.parquet")
        )
        for c in ("name", "parent"):
            if c not in nodes.columns:
                raise ProfileError(path, f"nodes table lacks column {c!r}", where="nodes.parquet")
        try:
            structure = Tree(
                nodes, None, meta if header.get("kind") == "tree" else header.get("tree_meta", {})
            )
        except ValueError as e:
            raise ProfileError(
                path, f"nodes do not form a pre-ordered tree: {e}", where="nodes.parquet"
            ) from None
        kind = header.get("kind")
        if kind == "tree":
            metrics = _table(z, path, "metrics.parquet")
            if len(metrics) != len(nodes):
                raise ProfileError(
                    path,
                    f"{len(metrics)} metric rows for {len(nodes)} nodes",
                    where="metrics.parquet",
                )
            return Tree(structure.nodes, metrics, meta, _trusted=True)
        if kind == "ensemble":
            rows = _table(z, path, "rows.parquet")
            profiles = decode_objects(
                path,
                "profiles.parquet",
                _table(z, path, "profiles.parquet"),
                encoded.get("profiles.parquet"),
            )
            n_profiles = header.get("n_profiles")
            if not len(profiles.columns) and isinstance(n_profiles, int) and n_profiles >= 0:
                profiles = pd.DataFrame(index=pd.RangeIndex(n_profiles))  # profiles, no columns
            if "node" not in rows or "profile" not in rows:
                raise ProfileError(
                    path, "rows table needs 'node' and 'profile' columns", where="rows.parquet"
                )
            if len(rows) and (
                rows["node"].max() >= len(nodes) or rows["profile"].max() >= len(profiles)
            ):
                raise ProfileError(
                    path, "rows refer to nodes or profiles that do not exist", where="rows.parquet"
                )
            return Ensemble(structure, rows, profiles, meta)
        raise ProfileError(
            path, f"unknown kind {kind!r}, expected 'tree' or 'ensemble'", where="header.json"
        )
