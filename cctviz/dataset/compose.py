"""Composing many profiles straight into a dataset folder, with bounded memory
(``cctviz.read_ensemble(paths, out=folder)``).

The files are parsed a chunk at a time (the batch path's arrays,
:mod:`cctviz.readers._batch`). Each chunk is composed in memory (its own unified
tree, rows completed and combined by the model's rules, values in the files' own
units) and its rows are written at once as a Parquet part whose node ids are
those of a unified call-path trie that grows from chunk to chunk (a node's id is
fixed when its call path is first met). What stays in memory between chunks is
small: the trie (one entry per distinct call path), one metadata record and a
units key per profile, the kinds of files met. At the end the units and rules of
all files are reconciled by the model's functions, the trie is put in pre-order
(siblings in order of first appearance, as in memory), and each part is
rewritten, one at a time, with pre-order node ids, values converted to the
ensemble's units and the metrics every part shares; then the nodes and profiles
tables, the manifest, and last the ``_COMPLETE`` marker. A compose that fails or
is killed on the way leaves a folder that :func:`~cctviz.open_dataset` refuses.
The dataset equals ``read_ensemble(paths).to_dataset(folder)``.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ..model import _algo
from ..model.ensemble import Ensemble
from ..model.text import text_as_object
from ..model.tree import Tree
from ..readers import CHUNK_BYTES, _batch
from .layout import (
    ROWS,
    Part,
    _prepare_folder,
    finish,
)


def size_on_disk(path: Path) -> int:
    """The bytes of a profile on disk: a file's size, a folder's files' sizes
    summed (HPCToolkit databases, run folders); 0 for one that is not there (a
    rank that died before writing: its parser says so)."""
    if path.is_dir():
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    return path.stat().st_size if path.exists() else 0


def chunks_of(
    paths: list[Path],
    chunk_bytes: int | None,
    chunk_files: int | None,
    size: Callable[[Path], int] = size_on_disk,
) -> list[list[Path]]:
    """``paths`` in order, cut into chunks of at most ``chunk_bytes`` bytes on
    disk and ``chunk_files`` files (either None: no bound of that kind); a file
    larger than ``chunk_bytes`` is a chunk of its own.

    >>> sizes = {Path(n): s for n, s in [("a", 5), ("b", 5), ("c", 20), ("d", 1)]}
    >>> [[p.name for p in c] for c in chunks_of(list(sizes), 10, None, sizes.get)]
    [['a', 'b'], ['c'], ['d']]
    """
    if chunk_bytes is not None and chunk_bytes < 1:
        raise ValueError(f"chunk_bytes must be at least 1, got {chunk_bytes}")
    if chunk_files is not None and chunk_files < 1:
        raise ValueError(f"chunk_files must be at least 1, got {chunk_files}")
    chunks: list[list[Path]] = []
    held = 0
    for p in paths:
        n = size(p) if chunk_bytes is not None else 0
        full = chunks and (
            (chunk_files is not None and len(chunks[-1]) >= chunk_files)
            or (chunk_bytes is not None and held + n > chunk_bytes)
        )
        if not chunks or full:
            chunks.append([])
            held = 0
        chunks[-1].append(p)
        held += n
    return chunks


class _Trie:
    """The unified call-path trie, grown chunk by chunk: a node per distinct
    (parent, name, n-th same-named sibling), its id fixed when first met; the
    node columns of its first occurrence."""

    def __init__(self) -> None:
        self.ids: dict[tuple[int, Any, int], int] = {}
        self.parent: list[int] = []
        self.columns: dict[str, list[Any]] = {"name": []}
        self.dtypes: dict[str, set[Any]] = {}  # per node column, the dtypes the chunks gave

    def add(self, tree: Tree) -> np.ndarray:
        """The trie id of every node of a chunk's unified ``tree`` (pre-order)."""
        n = len(tree)
        names = tree.names
        ordinal = _algo.sibling_ordinal(tree.parent, pd.factorize(names)[0].astype(np.int64))
        out = np.empty(n, dtype=np.int64)
        par = tree.parent
        cols = {
            c: tree.nodes[c].to_numpy()
            for c in tree.nodes.columns
            if c not in ("name", "parent", "depth")
        }
        for c in cols:
            if c not in self.columns:
                self.columns[c] = [None] * len(self.parent)
                if self.parent:  # earlier chunks lack it: padded with None
                    self.dtypes.setdefault(c, set()).add(np.dtype(object))
            self.dtypes.setdefault(c, set()).add(cols[c].dtype)
        for c in self.columns:
            if c != "name" and c not in cols:  # this chunk lacks it
                self.dtypes.setdefault(c, set()).add(np.dtype(object))
        for i in range(n):  # one step per distinct call path of the chunk, not per record
            p = int(out[par[i]]) if par[i] >= 0 else -1
            key = (p, names[i], int(ordinal[i]))
            uid = self.ids.get(key)
            if uid is None:
                uid = self.ids[key] = len(self.parent)
                self.parent.append(p)
                self.columns["name"].append(names[i])
                for c, lst in self.columns.items():
                    if c != "name":
                        lst.append(cols[c][i] if c in cols else None)
            out[i] = uid
        return out

    def tree(self) -> tuple[Tree, np.ndarray]:
        """The trie as a pre-ordered Tree (siblings in order of first appearance)
        and the pre-order id of every trie id."""
        parent = np.asarray(self.parent, dtype=np.int64)
        perm = _algo.preorder_permutation(parent)
        inv = np.empty(parent.size, dtype=np.int64)
        inv[perm] = np.arange(parent.size)
        nodes = pd.DataFrame(
            {
                "name": pd.Series(
                    np.asarray(self.columns["name"], dtype=object)[perm], dtype=object
                ),
                "parent": np.where(parent[perm] >= 0, inv[np.maximum(parent[perm], 0)], -1),
            }
        )
        for c, lst in self.columns.items():
            if c != "name":  # as the in-memory unification: one dtype where all agree
                kinds = self.dtypes.get(c, set())
                dtype = kinds.pop() if len(kinds) == 1 else np.dtype(object)
                nodes[c] = np.asarray(lst, dtype=dtype)[perm]
        return Tree(nodes, None, None, _trusted=True), inv


def compose_dataset(
    paths: list[Path],
    out: str | os.PathLike,
    parse: Callable[[list[Path]], list[_batch.FileArrays]],
    extra_of: Callable[[int, Path, _batch.FileArrays], dict[str, Any]],
    *,
    chunk_files: int | None = None,
    chunk_bytes: int | None = CHUNK_BYTES,
    overwrite: bool = False,
    progress: Callable[[Iterable[Any]], Iterable[Any]] | None = None,
    meta: Mapping[str, Any] | None = None,
) -> Path:
    """Compose the files ``paths`` into the dataset folder ``out`` (module docstring).

    ``parse(chunk)`` gives a chunk's files as arrays (serially or on workers),
    ``extra_of(k, path, arrays)`` the profile columns of the ``k``-th file;
    the files are parsed and held a chunk at a time, a chunk of at most
    ``chunk_bytes`` bytes on disk and ``chunk_files`` files (:func:`chunks_of`;
    None: no bound of that kind); ``meta``: the ensemble's
    own metadata (a run's), in place of what the files share. Returns the folder.

    Example:
        >>> import glob, tempfile
        >>> from cctviz.readers._batch import read_chunk_arrays
        >>> files = sorted(glob.glob("../shared/data/hatchet-tutorial/lulesh-scaling/*.json"))
        >>> d = compose_dataset([Path(f) for f in files[:3]], tempfile.mkdtemp() + "/d",
        ...     lambda c: read_chunk_arrays([str(p) for p in c], None, {}),
        ...     lambda k, p, fa: {"file": str(p), "run": k}, chunk_files=2)
        >>> sorted(p.name for p in (d / "rows").iterdir())
        ['part-00000.parquet', 'part-00001.parquet']
    """
    chunks = chunks_of(paths, chunk_bytes, chunk_files)
    folder = Path(out)
    _prepare_folder(folder, overwrite)
    state = _State()
    try:
        for c, chunk in enumerate(progress(chunks) if progress else chunks):
            files = parse(chunk)
            extras = [
                extra_of(state.n_files + k, p, fa) for k, (p, fa) in enumerate(zip(chunk, files))
            ]
            state.add_chunk(folder, c, files, extras)
            del files  # one chunk of parsed files alive at a time
    except _batch.NotBatch:
        shutil.rmtree(folder / ROWS)  # nothing of ours is left: the caller takes another path
        (folder / ROWS).mkdir()
        raise
    return state.finish(folder, meta)


class _State:
    """What a compose keeps between chunks (small: no values)."""

    def __init__(self) -> None:
        self.trie = _Trie()
        self.n_files = 0
        self.records: list[dict[str, Any]] = []
        self.kinds = _batch.KindsSeen()  # one file of each kind (metrics, units, rules)
        self.profile_rep: list[np.ndarray] = []
        self.said: dict[str, dict[str, Any]] = {"units_assumed": {}, "aggregation_notes": {}}
        self.formats: set[Any] = set()
        self.dead: list[np.ndarray] = []
        self.parts: list[Part] = []
        self.n_profiles = 0

    def add_chunk(
        self, folder: Path, c: int, files: list[_batch.FileArrays], extras: list[dict[str, Any]]
    ) -> None:
        """Compose one chunk and write its rows (values in the files' units)."""
        self.records += _batch.profile_records(files, extras)
        kind, first, signatures = _batch.kinds_of(files)
        reps = self.kinds.add(signatures, [_batch.strip(files[k]) for k in first])[kind]
        for fa in files:
            m = fa.tree_meta or fa.meta
            for key, said in self.said.items():
                said.update(m.get(key, {}))
            self.formats.add(fa.meta.get("format"))
        n_prof = np.array([fa.n_profiles for fa in files], dtype=np.int64)
        self.profile_rep.append(np.repeat(reps, n_prof))
        tree, node_of = _batch.unify(files)
        metrics: list[str] = []
        for fa in files:
            metrics += [m for m in fa.metrics if m not in metrics]
        rules: dict[str, str] = {}
        for fa in files:  # how rows of one (node, profile) would combine: a sum or not
            agg = (fa.tree_meta or fa.meta).get("aggregation", {})
            for m in fa.metrics:
                if rules.get(m, "sum") == "sum":
                    rules[m] = agg.get(m, "sum")
        rows = _batch.rows_table(files, node_of, metrics, np.ones((len(files), len(metrics))))
        total = int(n_prof.sum())
        ens = Ensemble(
            tree,
            rows,
            pd.DataFrame(index=range(total)),
            {"aggregation": {m: r for m, r in rules.items() if r != "sum"}},
        )
        gid = self.trie.add(ens.tree)
        r = ens.exclusive_rows
        table = pd.DataFrame(
            {
                "node": gid[r["node"].to_numpy()],
                "profile": r["profile"].to_numpy() + self.n_profiles,
            }
        )
        for m in metrics:
            table[m] = r[m].to_numpy()
        name = f"{ROWS}/part-chunk-{c:05d}.parquet"  # a part, to the folder checks
        pq.write_table(pa.Table.from_pandas(table, preserve_index=False), folder / name)
        self.parts.append(Part(name, self.n_profiles, self.n_profiles + total, len(table)))
        self.dead.append(np.flatnonzero(~ens.live) + self.n_profiles)
        self.n_profiles += total
        self.n_files += len(files)

    def finish(self, folder: Path, own: Mapping[str, Any] | None = None) -> Path:
        """Reconcile, rewrite the parts in pre-order ids and the ensemble's units,
        write the small tables and the manifest, and last the marker."""
        metrics, units, rules, scale = _batch.reconcile(self.kinds.reps)
        formats = self.formats
        common = (
            {"format": next(iter(formats))} if len(formats) == 1 and None not in formats else {}
        )
        meta = _batch.ensemble_meta([], units, rules, common if own is None else own)
        for key, said in self.said.items():
            if said:
                meta.setdefault(key, said)
        tree, inv = self.trie.tree()
        prof_rep = np.concatenate(self.profile_rep) if self.profile_rep else np.empty(0, np.int64)
        parts = []
        for k, part in enumerate(self.parts):
            parts.append(_rewrite(folder, k, part, inv, metrics, scale, prof_rep))
        structure = Tree(tree.nodes, None, meta, _trusted=True)
        profiles = text_as_object(_batch.profiles_table(self.records).reset_index(drop=True))
        dead = np.concatenate(self.dead) if self.dead else np.empty(0, np.int64)
        finish(
            folder,
            structure.nodes,
            profiles,
            parts,
            metrics=metrics,
            meta=meta,
            tree_meta=meta,
            dead=dead,
        )
        return folder


def _rewrite(
    folder: Path,
    k: int,
    part: Part,
    inv: np.ndarray,
    metrics: list[str],
    scale: np.ndarray,
    prof_rep: np.ndarray,
) -> Part:
    """One chunk's rows as the dataset's ``k``-th part: pre-order node ids, values
    in the ensemble's units, every metric (NaN where the chunk has none), sorted
    by (profile, node) as ``write_dataset`` writes them."""
    src = folder / part.file
    df = pq.read_table(src).to_pandas()
    node = inv[df["node"].to_numpy()]
    prof = df["profile"].to_numpy()
    order = np.lexsort((node, prof))
    out = pd.DataFrame({"node": node[order], "profile": prof[order]})
    fac = scale[prof_rep[prof[order]]] if len(order) else np.ones((0, len(metrics)))
    for j, m in enumerate(metrics):  # a metric no file of the chunk has: not measured
        v = df[m].to_numpy(dtype=np.float64)[order] if m in df else np.full(len(order), np.nan)
        out[m] = v * fac[:, j]
    name = f"{ROWS}/part-{k:05d}.parquet"
    pq.write_table(
        pa.Table.from_pandas(out, preserve_index=False), folder / name, row_group_size=1 << 20
    )
    src.unlink()
    return Part(name, part.lo, part.hi, len(out))


__all__ = ["chunks_of", "compose_dataset", "size_on_disk"]
