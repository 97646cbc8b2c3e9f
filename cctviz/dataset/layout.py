"""The on-disk layout of an ensemble dataset: writing one, and checking one is whole.

A dataset is a folder:

- ``nodes.parquet``: the unified tree's nodes (name, parent, kind, ...) in pre-order;
- ``profiles.parquet``: one row of metadata per profile;
- ``rows/part-NNNNN.parquet``: the exclusive rows (node, profile, exclusive
  metrics), each part holding the rows of one range of profiles;
- ``manifest.json``: format and version, the counts, the metrics, the ensemble's and
  its tree's metadata (units, aggregation rules), the profiles that recorded nothing
  (dead ranks), and every part with its profile range and row count;
- ``_COMPLETE``: written last, naming the manifest's SHA-256. A folder without it
  is a write that did not finish (a crash, a full disk) and is refused.

Object columns that Parquet would not give back as they were are encoded as the
native format does (:func:`cctviz.model.formats.encode_objects`), and decoded
by the same rules (:func:`~cctviz.model.formats.decode_objects`).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import ProfileError
from ..model.ensemble import Ensemble
from ..model.formats import decode_objects, encode_objects, jsonable

#: ``manifest.json``'s ``format`` and ``version``
FORMAT = "cctviz-dataset"
VERSION = 1
MANIFEST = "manifest.json"
COMPLETE = "_COMPLETE"
NODES = "nodes.parquet"
PROFILES = "profiles.parquet"
ROWS = "rows"
#: rows per part file written by default (about 100 MB of four metrics)
ROWS_PER_PART = 4_000_000


@dataclass(frozen=True)
class Part:
    """One file of exclusive rows: the profiles ``[lo, hi)`` and how many rows."""

    file: str
    lo: int
    hi: int
    rows: int


def write_dataset(
    ens: Ensemble,
    path: str | os.PathLike,
    *,
    rows_per_part: int = ROWS_PER_PART,
    overwrite: bool = False,
) -> Path:
    """Write ``ens`` as a dataset folder (layout: module docstring); returns the folder.

    The rows are split at profile boundaries into parts of about ``rows_per_part``
    rows. An existing dataset is replaced only with ``overwrite=True``; a folder
    holding anything else is refused.

    Example:
        >>> import cctviz, tempfile
        >>> t = cctviz.Tree.from_parents([-1, 0], ["main", "f"], {"time": [1.0, 2.0]})
        >>> d = write_dataset(cctviz.Ensemble.from_trees([t, t, t]), tempfile.mkdtemp() + "/e",
        ...                   rows_per_part=4)
        >>> sorted(p.name for p in (d / "rows").iterdir())
        ['part-00000.parquet', 'part-00001.parquet']
    """
    if rows_per_part < 1:
        raise ValueError(f"rows_per_part must be at least 1, got {rows_per_part}")
    out = Path(path)
    _prepare_folder(out, overwrite)
    parts = _write_rows(out, ens, rows_per_part)
    finish(
        out,
        ens.tree.nodes,
        ens.profiles,
        parts,
        metrics=ens.exc_metrics,
        meta=ens.meta,
        tree_meta=ens.tree.meta,
        dead=np.flatnonzero(~ens.live),
    )
    return out


def finish(
    out: Path,
    nodes: pd.DataFrame,
    profiles: pd.DataFrame,
    parts: list[Part],
    *,
    metrics: list[str],
    meta: dict[str, Any],
    tree_meta: dict[str, Any],
    dead: np.ndarray,
) -> None:
    """Complete a dataset whose row parts are written: the nodes and profiles tables,
    the manifest (counts, metrics, metadata, dead profiles, parts), last the marker.
    Every writer (:func:`write_dataset`, ``write_chunks``, ``read_ensemble(out=)``)
    ends here."""
    encoded: dict[str, dict[str, str]] = {}
    nodes = nodes.drop(columns=["depth"], errors="ignore").reset_index(drop=True)
    _write_table(out / NODES, nodes, encoded, NODES)
    _write_table(out / PROFILES, profiles.reset_index(drop=True), encoded, PROFILES)
    manifest = {
        "format": FORMAT,
        "version": VERSION,
        "n_nodes": len(nodes),
        "n_profiles": len(profiles),
        "n_rows": int(sum(p.rows for p in parts)),
        "metrics": list(metrics),
        "meta": jsonable(meta),
        "tree_meta": jsonable(tree_meta),
        "encoded": encoded,
        "dead": np.asarray(dead, dtype=np.int64).tolist(),
        "parts": [[p.file, p.lo, p.hi, p.rows] for p in parts],
    }
    write_manifest(out, manifest)


def write_manifest(out: Path, manifest: dict[str, Any]) -> None:
    """Write a dataset's manifest, and last the ``_COMPLETE`` marker naming its
    SHA-256: from then on the dataset is whole."""
    text = json.dumps(manifest).encode()
    (out / MANIFEST).write_bytes(text)
    (out / COMPLETE).write_text(json.dumps({"manifest_sha256": hashlib.sha256(text).hexdigest()}))


def _prepare_folder(out: Path, overwrite: bool) -> None:
    """An empty folder to write into: made, emptied of an old dataset, or refused."""
    if out.exists() and not out.is_dir():
        raise ProfileError(out, "exists and is not a folder; a dataset is written as a folder")
    entries = sorted(p.name for p in out.iterdir()) if out.is_dir() else []
    if entries:
        ours = {MANIFEST, COMPLETE, NODES, PROFILES, ROWS}
        foreign = sorted(set(entries) - ours)
        if (out / ROWS).is_dir():
            foreign += [f"{ROWS}/{p.name}" for p in (out / ROWS).iterdir() if not _is_part(p)]
        if foreign:
            raise ProfileError(
                out, f"the folder is not empty and holds no cctviz dataset ({foreign[:5]})"
            )
        if not overwrite:
            raise ProfileError(out, "a dataset is already here; pass overwrite=True to replace it")
        (out / COMPLETE).unlink(missing_ok=True)  # first: a crash from here on leaves it partial
        for name in entries:
            p = out / name
            shutil.rmtree(p) if p.is_dir() else p.unlink(missing_ok=True)
    (out / ROWS).mkdir(parents=True, exist_ok=True)


def _is_part(p: Path) -> bool:
    return p.is_file() and p.name.startswith("part-") and p.name.endswith(".parquet")


def _write_table(
    file: Path, df: pd.DataFrame, encoded: dict[str, dict[str, str]], name: str
) -> None:
    df, kinds = encode_objects(df)
    if kinds:
        encoded[name] = kinds
    df.to_parquet(file, index=False)


def _write_rows(
    out: Path, ens: Ensemble, rows_per_part: int, *, first_part: int = 0, offset: int = 0
) -> list[Part]:
    """The exclusive rows in parts of whole profiles, about ``rows_per_part`` rows each
    (numbered from ``first_part``; profile ids shifted by ``offset``: a later chunk)."""
    rows = ens.exclusive_rows
    if offset:
        rows = rows.assign(profile=rows["profile"].to_numpy() + offset)
    prof = rows["profile"].to_numpy() - offset
    per_profile = np.bincount(prof, minlength=ens.n_profiles)
    cuts = _part_bounds(per_profile, rows_per_part)
    order = np.argsort(prof, kind="stable")  # by profile, then (node) as stored
    starts = np.concatenate(([0], np.cumsum(per_profile)))
    table = pa.Table.from_pandas(rows.iloc[order], preserve_index=False)
    parts = []
    for k, (lo, hi) in enumerate(zip(cuts[:-1], cuts[1:]), start=first_part):
        name = f"{ROWS}/part-{k:05d}.parquet"
        a, b = int(starts[lo]), int(starts[hi])
        pq.write_table(table.slice(a, b - a), out / name, row_group_size=1 << 20)
        parts.append(Part(name, int(lo) + offset, int(hi) + offset, b - a))
    return parts


def _part_bounds(per_profile: np.ndarray, rows_per_part: int) -> np.ndarray:
    """Profile ids where parts start, and the end: whole profiles, about
    ``rows_per_part`` rows per part, at least one part.

    >>> _part_bounds(np.array([3, 3, 3, 0]), 5).tolist()
    [0, 2, 4]
    """
    n = per_profile.size
    if n == 0:
        return np.array([0, 0])
    before = np.concatenate(([0], np.cumsum(per_profile)[:-1]))  # rows before each profile
    bucket = before // rows_per_part
    starts = np.flatnonzero(np.diff(bucket, prepend=-1) > 0)
    return np.concatenate((starts, [n]))


def read_manifest(path: Path) -> dict[str, Any]:
    """The manifest of a whole dataset, checked; a ProfileError saying what is wrong
    with a folder that is not one, or a partial one."""
    if not path.exists():
        raise ProfileError(path, "no such dataset folder")
    if not path.is_dir():
        raise ProfileError(path, "not a folder: a cctviz dataset is a folder (Ensemble.to_dataset)")
    mf = path / MANIFEST
    if not mf.is_file():
        if (path / COMPLETE).exists() or (path / NODES).exists() or (path / ROWS).exists():
            raise ProfileError(
                path, f"a partial dataset: {MANIFEST} is missing (a write that did not finish)"
            )
        raise ProfileError(
            path, f"not a cctviz dataset: no {MANIFEST} (write one with Ensemble.to_dataset)"
        )
    text = mf.read_bytes()
    done = path / COMPLETE
    if not done.is_file():
        raise ProfileError(
            path,
            f"a partial dataset: no {COMPLETE} marker, so its write did not finish "
            "(a crash or a full disk); write it again",
        )
    try:
        said = json.loads(done.read_text()).get("manifest_sha256")
    except (ValueError, AttributeError):
        said = None
    if said != hashlib.sha256(text).hexdigest():
        raise ProfileError(
            path, f"{MANIFEST} does not match the {COMPLETE} marker: changed after it was written"
        )
    try:
        manifest = json.loads(text)
    except ValueError as e:
        raise ProfileError(path, f"damaged manifest ({e})", where=MANIFEST) from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ProfileError(path, f"manifest does not say format {FORMAT!r}", where=MANIFEST)
    if manifest.get("version") != VERSION:
        raise ProfileError(
            path,
            f"dataset version {manifest.get('version')!r}; this cctviz reads {VERSION}",
            where=MANIFEST,
        )
    return manifest


def parts_of(path: Path, manifest: dict[str, Any]) -> list[Part]:
    """The row parts the manifest lists, each checked to exist with its row count."""
    parts = [Part(str(f), int(lo), int(hi), int(n)) for f, lo, hi, n in manifest["parts"]]
    for p in parts:
        f = path / p.file
        if not f.is_file():
            raise ProfileError(path, f"a part of the rows is missing: {p.file}")
        try:
            got = pq.read_metadata(f).num_rows
        except (OSError, pa.ArrowException) as e:
            raise ProfileError(f, f"a part of the rows is not valid Parquet ({e})") from None
        if got != p.rows:
            raise ProfileError(f, f"holds {got} rows; the manifest says {p.rows}")
    return parts


def read_table(path: Path, name: str, manifest: dict[str, Any]) -> pd.DataFrame:
    """A small table of the dataset (nodes or profiles), decoded."""
    f = path / name
    if not f.is_file():
        raise ProfileError(path, f"the {name} table is missing")
    try:
        df = pd.read_parquet(f)
    except Exception as e:  # noqa: BLE001 - pyarrow raises several kinds
        raise ProfileError(f, f"not valid Parquet ({e})") from None
    encoded = manifest.get("encoded") or {}
    return decode_objects(f, name, df, encoded.get(name))
