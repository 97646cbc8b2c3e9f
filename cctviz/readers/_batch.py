"""The batch path of :func:`cctviz.read_ensemble`: many small profiles composed in
one pass over plain arrays, with no pandas object per file.

Reading a file into a :class:`~cctviz.Tree` costs far more than parsing it (a
pandas table per file, a pre-order sort, a metrics table, then the same again
when :meth:`~cctviz.Ensemble.concat` unifies them). For formats that come in
many small files this module parses each file to a :class:`FileArrays` (the
nodes' parents and names in the file's order, one row per recorded (node,
profile) with the exclusive metrics as float64, the file's metadata, units and
aggregation rules) and composes all of them at once (:func:`compose`): the
nodes of every file in one pre-order, one identity code per node
(``_algo.identity_codes``), the call paths merged level by level with one
``_algo.TrieBuilder`` (as ``model.unify.unify_structures`` does for trees), the
units and rules reconciled by the model's own functions, and the rows handed to
the :class:`~cctviz.Ensemble` constructor once. The result equals what
``Ensemble.concat`` of the files' Trees gives (tests/readers/test_batch_compose.py).

Caliper json-split files (``caliper-json``) have a batch parser
(``_caliper_batch``: a chunk's files that share their columns parsed as one
group) for what such files usually hold: call-path nodes,
numeric value columns, ``mpi.rank``. A file it does not cover (label columns,
``Node order``, repeated records, inclusive values a rule does not give back,
anything malformed) is read by the format's reader and turned into arrays
(:func:`from_object`), so its result, its warnings and its errors are the
reader's own.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import ProfileError
from ..model import _algo
from ..model.ensemble import Ensemble, _reconcile_rules, _reconcile_units
from ..model.tree import STRUCT_COLUMNS, Tree
from ..model.unify import merge_call_paths
from ._caliper_batch import load_doc, parse_caliper_docs
from ._filearrays import DENSE_CELLS, FileArrays
from ._json import file_bytes, gc_paused

#: the formats that have a batch parser
BATCH_FORMATS = ("caliper-json",)
#: files decoded before their group is parsed (:func:`parse_caliper_docs`): enough
#: to share the work of a group, few enough that their Python objects stay small
GROUP_FILES = 512


class NotBatch(Exception):
    """A file of a format without a batch parser: the caller takes the old path."""


# ------------------------------------------------------------------ per file
def _bytes(p: Path) -> tuple[bytes, bytes] | None:
    """The file's bytes, un-gzipped, and its first bytes as detection sees them
    (:func:`cctviz.readers.head`); None where it cannot be read (a folder, no
    such file, a broken gzip stream: the reader says what is wrong)."""
    from . import HEAD_BYTES, head

    try:
        raw = _read(p)
    except OSError:
        return None
    if raw[:2] != b"\x1f\x8b":
        return raw, raw[:HEAD_BYTES]
    try:
        return file_bytes(p), head(p)
    except ProfileError:
        return None


def _read(p: Path) -> bytes:
    """The bytes of file ``p``: ``p.read_bytes()`` without the buffered file object
    (a fifth less time per small file; a study reads tens of thousands)."""
    fd = os.open(p, os.O_RDONLY)
    try:
        parts = [os.read(fd, os.fstat(fd).st_size + 1)]
        while parts[-1]:  # until the end (a file that grew, or one that says size 0)
            parts.append(os.read(fd, 1 << 20))
        return parts[0] if len(parts) == 2 else b"".join(parts)
    finally:
        os.close(fd)


def from_object(obj: Tree | Ensemble) -> FileArrays:
    """A profile the reader built, as arrays (a file the batch parser left to it).

    Example:
        >>> import cctviz
        >>> t = cctviz.Tree.from_parents([-1, 0], ["main", "f"], {"time": [1.0, 2.0]})
        >>> fa = from_object(t)
        >>> fa.names.tolist(), fa.values.tolist(), fa.is_tree
        (['main', 'f'], [[1.0], [2.0]], True)
    """
    is_tree = isinstance(obj, Tree)
    tree = obj if is_tree else obj.tree
    nodes = tree.nodes
    metrics = list(obj.exc_metrics)
    if is_tree:
        node = np.arange(len(tree), dtype=np.int64)
        prof = np.zeros(len(tree), dtype=np.int64)
        values = obj.metrics[metrics].to_numpy(dtype=np.float64)
        profiles = None
        meta = dict(obj.meta)
    else:
        rows = obj.exclusive_rows
        node, prof = rows["node"].to_numpy(np.int64), rows["profile"].to_numpy(np.int64)
        values = rows[metrics].to_numpy(dtype=np.float64)
        profiles = obj.profiles.reset_index(drop=True).to_dict("records")
        meta = dict(obj.meta)
    return FileArrays(
        np.asarray(tree.parent, dtype=np.int64),
        np.asarray(tree.names, dtype=object),
        nodes["kind"].to_numpy(dtype=object),
        node,
        prof,
        values,
        metrics,
        meta,
        is_tree,
        profiles,
        columns={c: nodes[c].to_numpy() for c in nodes.columns if c not in STRUCT_COLUMNS},
        tree_meta=None if is_tree else dict(tree.meta),
    )


# ------------------------------------------------------------------ a task
def read_chunk_objects(
    paths: Sequence[str | Path], format: str | None, reader_kw: Mapping[str, Any]
) -> list[FileArrays]:
    """The profiles of ``paths`` read by their readers, as arrays (a task of
    ``read_ensemble(out=)`` for formats without a batch parser).

    Example:
        >>> fas = read_chunk_objects(["../shared/data/thicket/rajaperf"][:0], None, {})
        >>> fas
        []
    """
    from . import read

    return [from_object(read(p, format=format, **reader_kw)) for p in paths]


@gc_paused()  # millions of decoded objects alive: collections cost, find nothing
def read_chunk_arrays(
    paths: Sequence[str | Path],
    format: str | None,
    reader_kw: Mapping[str, Any],
    progress: bool | None = False,
) -> list[FileArrays]:
    """The profiles of ``paths`` as arrays (a batch task: runs in a worker;
    ``progress``: a bar over the files, for the serial read).

    A file of a format without a batch parser raises :class:`NotBatch`.

    Example:
        >>> fas = read_chunk_arrays(["../shared/data/hatchet-tutorial/lulesh-scaling/"
        ...                          "lulesh-annotation-profile-8cores.json"], None, {})
        >>> fas[0].n_profiles, fas[0].meta["format"]
        (8, 'caliper-json')
    """
    from . import detect, detect_head, progress_bar, read

    out: list[FileArrays | None] = []
    group: tuple[list[Path], list[dict[str, Any] | None]] = ([], [])
    structures: dict[Any, Any] = {}  # the chunk's distinct nodes (parse_caliper_docs)
    failed: ProfileError | None = None
    for s in progress_bar(paths, progress, desc="reading profiles", unit="file"):
        p = s if isinstance(s, Path) else Path(s)
        got = _bytes(p)
        raw = None if got is None else got[0]
        try:
            name = format or (detect(p) if got is None else detect_head(p, got[1]))
        except ProfileError as e:  # after the earlier files' own errors, as a serial read
            failed = e
            break
        if name not in BATCH_FORMATS or reader_kw:
            raise NotBatch(str(s))
        group[0].append(p)
        group[1].append(None if raw is None else load_doc(p, raw))
        if len(group[0]) >= GROUP_FILES:
            out += parse_caliper_docs(*group, structures)
            group = ([], [])
    out += parse_caliper_docs(*group, structures)
    redo = {k for k, fa in enumerate(out) if fa is None}
    redo |= verify([fa for fa in out if fa is not None], [k for k, fa in enumerate(out) if fa])
    for k in sorted(redo):
        out[k] = from_object(read(Path(paths[k]), format=BATCH_FORMATS[0]))
    if failed is not None:
        raise failed
    return out  # type: ignore[return-value]


def _forest(files: list[FileArrays]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every file's nodes one after the other: the files' sizes, their offsets
    (one more than files) and the parents as indexes into the whole (-1: a root)."""
    sizes = np.fromiter((fa.parent.size for fa in files), dtype=np.int64, count=len(files))
    offs = np.concatenate(([0], np.cumsum(sizes)))
    par = np.concatenate([fa.parent for fa in files]) if files else np.empty(0, np.int64)
    return sizes, offs, np.where(par >= 0, par + np.repeat(offs[:-1], sizes), -1)


def verify(files: list[FileArrays], index: list[int]) -> set[int]:
    """Of ``files`` (their positions: ``index``), those the reader must read
    instead: a parent cycle (the reader names it), an inclusive column that its
    exclusive twin does not give back, inclusive maxima or minima that the rule
    does not give back (the reader warns, or demotes the rule). One pass over
    the chunk: every file's (node, profile) cells in one forest."""
    if not files:
        return set()
    sizes, noff, gpar = _forest(files)
    try:
        depth, _ = _algo.level_order(gpar)
    except ValueError:
        bad = set()
        for k, fa in enumerate(files):
            try:
                _algo.level_order(fa.parent)
            except ValueError:
                bad.add(index[k])
        return bad
    big = {
        k
        for k, fa in enumerate(files)
        if fa.checks and fa.parent.size * fa.n_profiles > DENSE_CELLS
    }
    todo = [k for k, fa in enumerate(files) if fa.checks and k not in big]
    if not todo:
        return {index[k] for k in big}
    P = np.array([files[k].n_profiles for k in todo], dtype=np.int64)
    n = sizes[todo]
    coff = np.concatenate(([0], np.cumsum(n * P)))
    file_of = np.repeat(np.arange(len(todo)), n * P)
    local = np.arange(coff[-1]) - coff[file_of]
    gnode = noff[np.asarray(todo)][file_of] + local // P[file_of]
    gp = gpar[gnode]
    cpar = np.where(
        gp >= 0,
        coff[file_of] + (gp - noff[np.asarray(todo)][file_of]) * P[file_of] + local % P[file_of],
        -1,
    )
    cdepth = depth[gnode]
    order = _algo.stable_order(cdepth)
    bounds = np.concatenate(([0], np.cumsum(np.bincount(cdepth))))
    levels = [order[a:b] for a, b in zip(bounds[:-1], bounds[1:])]
    bad: set[int] = set()
    groups: dict[tuple[str, str], list[tuple[int, int, np.ndarray | None]]] = {}
    for t, k in enumerate(todo):
        for kind, j, rec in files[k].checks:
            groups.setdefault((kind, files[k].metrics[j]), []).append((t, j, rec))
    for (kind, _), items in groups.items():
        cells = np.concatenate(
            [coff[t] + files[todo[t]].node * P[t] + files[todo[t]].prof for t, _, _ in items]
        )
        vals = np.concatenate([files[todo[t]].values[:, j] for t, j, _ in items])
        owner = np.repeat([t for t, _, _ in items], [files[todo[t]].node.size for t, _, _ in items])
        rule = "sum" if kind == "dropped" else kind
        cellv = np.zeros(coff[-1]) if rule == "sum" else np.full(coff[-1], np.nan)
        cellv[cells] = vals
        got = _algo.accumulate_up(cellv, cpar, levels, rule)[cells]
        if kind == "dropped":
            rec = np.concatenate([r for _, _, r in items])
            top = np.full(len(todo), np.nan)
            np.fmax.at(top, owner, np.abs(rec))
            with np.errstate(invalid="ignore"):
                ok = np.isnan(rec) | np.isclose(got, rec, rtol=1e-6, atol=1e-9 * top[owner])
        else:
            ok = np.isclose(got, vals, rtol=1e-9, equal_nan=True) | np.isnan(vals)
        bad |= {index[todo[t]] for t in np.unique(owner[~ok])}
    return bad | {index[k] for k in big}


# ------------------------------------------------------------------ compose
class _Shape:
    """What ``model.ensemble._reconcile_units``/``_reconcile_rules`` read of a
    profile (its units, metrics, rules and metadata), for a file's arrays."""

    def __init__(self, fa: FileArrays) -> None:
        self.meta = fa.tree_meta or fa.meta
        self.exc_metrics = fa.metrics
        self.units = dict(self.meta.get("units", {}))
        rules = self.meta.get("aggregation", {})
        self.aggregation = {m: rules.get(m, "sum") for m in fa.metrics}


def signature(fa: FileArrays) -> tuple[Any, ...]:
    """What the reconciliation of units and rules reads of a file, as a key: files
    with equal keys reconcile alike (a study has a few kinds of file)."""
    m = fa.tree_meta or fa.meta
    units, said, rules = m.get("units", {}), m.get("units_assumed", {}), m.get("aggregation", {})
    notes = m.get("aggregation_notes", {})
    return tuple((x, units.get(x), x in said, rules.get(x, "sum"), x in notes) for x in fa.metrics)


def ensemble_meta(
    files: list[FileArrays], units: dict[str, str], rules: dict[str, str], meta: Mapping[str, Any]
) -> dict[str, Any]:
    """The composed ensemble's metadata, as ``Ensemble.concat`` gathers it: ``meta``,
    the units, what the files said of units and rules, the rules that are not sums."""
    m = dict(meta)
    if units:
        m.setdefault("units", units)
    for key in ("units_assumed", "aggregation_notes"):
        said: dict[str, Any] = {}
        for fa in files:
            said.update((fa.tree_meta or fa.meta).get(key, {}))
        if said:
            m.setdefault(key, said)
    if any(r != "sum" for r in rules.values()):
        m.setdefault("aggregation", {k: r for k, r in rules.items() if r != "sum"})
    return m


def compose(
    files: list[FileArrays],
    extras: list[dict[str, Any]],
    meta: Mapping[str, Any],
) -> Ensemble:
    """One Ensemble of the files' arrays, equal to ``Ensemble.concat`` of their
    profiles (``extras[k]``: the profile columns of file ``k``; ``meta``: the
    ensemble's own metadata): :func:`compose_chunks` of one chunk.

    Example:
        >>> import cctviz
        >>> a = cctviz.Tree.from_parents([-1, 0], ["main", "mpi"], {"time": [1.0, 3.0]})
        >>> b = cctviz.Tree.from_parents([-1, 0], ["main", "io"], {"time": [2.0, 5.0]})
        >>> ens = compose([from_object(a), from_object(b)], [{"run": 0}, {"run": 1}], {})
        >>> ens.tree.names.tolist(), ens.values("time").tolist()
        (['main', 'mpi', 'io'], [[1.0, 2.0], [3.0, 0.0], [0.0, 5.0]])
    """
    if not files:
        raise ValueError("an ensemble needs at least one profile")
    return compose_chunks([chunk_of(files)], extras, meta)


def unify(files: list[FileArrays]) -> tuple[Tree, list[np.ndarray]]:
    """The unified tree of every file's nodes (by call path, the n-th same-named
    sibling being the n-th, siblings in order of first appearance, as
    ``unify_structures`` orders them) and, per file, the unified id of each of
    its nodes (in the file's order).

    Files whose nodes are the very arrays of an earlier file's (the batch parser
    shares them between files of equal structure: :func:`_structure_key`) add no
    call path: only the first of each is unified, the others get its ids.
    """
    first_of: dict[tuple[Any, ...], int] = {}
    rep = [first_of.setdefault(_structure_key(fa, k), k) for k, fa in enumerate(files)]
    if len(first_of) == len(files):
        return _unify(files)
    distinct = list(first_of.values())
    tree, ids = _unify([files[k] for k in distinct])
    of = dict(zip(distinct, ids))
    return tree, [of[r] for r in rep]


def _structure_key(fa: FileArrays, k: int) -> tuple[Any, ...]:
    """What makes two files' nodes the same for :func:`unify`: the same parent and
    name arrays (objects, not values) and kind, and no other node column (a file
    with node columns is its own key, ``k``)."""
    if fa.columns or not isinstance(fa.kind, str):
        return (k,)
    return (id(fa.parent), id(fa.names), fa.kind)


def _unify(files: list[FileArrays]) -> tuple[Tree, list[np.ndarray]]:
    """:func:`unify` of files that are all unified."""
    sizes, offs, gpar = _forest(files)
    total = int(offs[-1])
    tree_of = np.repeat(np.arange(len(files)), sizes)
    # every file's nodes in its own pre-order, the files one after the other
    perm = _algo.preorder_permutation(gpar)
    pos = np.empty(total, dtype=np.int64)
    pos[perm] = np.arange(total)
    ppar = np.where(gpar[perm] >= 0, pos[np.maximum(gpar[perm], 0)], -1)
    names = np.concatenate([fa.names for fa in files])[perm]
    pfile = tree_of[perm]
    depth, _ = _algo.level_order(ppar)
    node_of, new_parent, new_names, first = merge_call_paths(ppar, names, pfile, depth)
    first = perm[first]  # the node (files' order) first seen at each unified node
    nodes = pd.DataFrame({"name": new_names, "parent": new_parent})
    extra: list[str] = []
    for fa in files:
        extra += [c for c in fa.columns if c not in extra]
    for c in ["kind", *extra]:
        nodes[c] = _node_column(files, c)[first]
    unified = Tree(nodes, None, None, _trusted=True)
    final = node_of[pos]  # unified id of every node, files' order
    return unified, [final[offs[k] : offs[k + 1]] for k in range(len(files))]


def _node_column(files: list[FileArrays], c: str) -> np.ndarray:
    """A node column over every file's nodes (None where a file has none)."""
    if c == "kind" and all(isinstance(fa.kind, str) for fa in files):
        kinds = np.array([fa.kind for fa in files], dtype=object)
        return np.repeat(kinds, [fa.parent.size for fa in files])
    parts = [
        (np.full(fa.parent.size, fa.kind, dtype=object) if isinstance(fa.kind, str) else fa.kind)
        if c == "kind"
        else fa.columns.get(c, np.full(fa.parent.size, None, dtype=object))
        for fa in files
    ]
    kinds = {p.dtype for p in parts}
    return (
        np.concatenate(parts)
        if len(kinds) == 1
        else np.concatenate([p.astype(object) for p in parts])
    )


def reconcile(
    files: list[FileArrays],
) -> tuple[list[str], dict[str, str], dict[str, str], np.ndarray]:
    """The metrics in order of first appearance, their units and rules (the
    model's reconciliation, over the distinct kinds of file), and per file the
    factor that converts each metric to the ensemble's unit (files x metrics).
    (The batch read reconciles over its chunks' kinds, :func:`_chunks_kinds`;
    ``read_ensemble(out=)`` over one file of each kind.)"""
    which, first, _ = kinds_of(files)
    return _reconcile_kinds([files[k] for k in first], which)


def kinds_of(files: list[FileArrays]) -> tuple[np.ndarray, list[int], list[tuple[Any, ...]]]:
    """The kinds of file (equal :func:`signature`, so they reconcile alike): each
    file's kind, the first file of each kind, and each kind's signature.

    Example:
        >>> import cctviz
        >>> a = from_object(cctviz.Tree.from_parents([-1], ["main"], {"time": [1.0]}))
        >>> b = from_object(cctviz.Tree.from_parents([-1], ["main"], {"bytes": [8.0]}))
        >>> which, first, _ = kinds_of([a, b, a])
        >>> which.tolist(), first
        ([0, 1, 0], [0, 1])
    """
    sig_of: dict[tuple[Any, ...], int] = {}
    which = np.empty(len(files), dtype=np.int64)
    first: list[int] = []
    for k, fa in enumerate(files):
        i = sig_of.setdefault(signature(fa), len(first))
        if i == len(first):
            first.append(k)
        which[k] = i
    return which, first, list(sig_of)


class KindsSeen:
    """The kinds of file met so far over chunks of files (each chunk's kinds from
    :func:`kinds_of`), numbered in order of first appearance, one file of each
    kind kept (``reps``): what :func:`kinds_of` of all the files would give,
    without a signature per file where the chunk knows its kinds.

    Example:
        >>> import cctviz
        >>> a = from_object(cctviz.Tree.from_parents([-1], ["main"], {"time": [1.0]}))
        >>> b = from_object(cctviz.Tree.from_parents([-1], ["main"], {"bytes": [8.0]}))
        >>> seen = KindsSeen()
        >>> seen.add([signature(a)], [a]).tolist()
        [0]
        >>> seen.add([signature(b), signature(a)], [b, a]).tolist()
        [1, 0]
        >>> len(seen.reps)
        2
    """

    def __init__(self) -> None:
        self.sig_of: dict[tuple[Any, ...], int] = {}
        self.reps: list[FileArrays] = []

    def add(self, signatures: list[tuple[Any, ...]], reps: list[FileArrays]) -> np.ndarray:
        """The number of each of a chunk's kinds (``signatures``, a file of each: ``reps``)."""
        out = np.empty(len(signatures), dtype=np.int64)
        for i, (sig, fa) in enumerate(zip(signatures, reps)):
            out[i] = self.sig_of.setdefault(sig, len(self.reps))
            if out[i] == len(self.reps):
                self.reps.append(fa)
        return out


def _chunks_kinds(chunks: list[ChunkArrays]) -> tuple[list[FileArrays], np.ndarray]:
    """The kinds of file over ``chunks`` (:class:`KindsSeen`): a file of each kind
    and each file's kind."""
    seen = KindsSeen()
    which = []
    for ch in chunks:
        first = np.unique(ch.kind, return_index=True)[1]
        which.append(seen.add(ch.signatures, [ch.files[k] for k in first])[ch.kind])
    return seen.reps, np.concatenate(which) if which else np.empty(0, dtype=np.int64)


def _reconcile_kinds(
    reps: list[FileArrays], which: np.ndarray
) -> tuple[list[str], dict[str, str], dict[str, str], np.ndarray]:
    """:func:`reconcile` of the files whose kinds are ``which`` (per file), each
    kind's first file being ``reps``."""
    metrics: list[str] = []
    for fa in reps:
        metrics += [m for m in fa.metrics if m not in metrics]
    shapes = [_Shape(fa) for fa in reps]
    units, scale = _reconcile_units(shapes, metrics)  # type: ignore[arg-type]
    rules = _reconcile_rules(shapes, metrics)  # type: ignore[arg-type]
    col = {m: j for j, m in enumerate(metrics)}
    rep_scale = np.ones((len(reps), len(metrics)))
    for i, sc in enumerate(scale):
        for m, f in sc.items():
            rep_scale[i, col[m]] = f
    return metrics, units, rules, rep_scale[which]


def rows_table(
    files: list[FileArrays], node_of: list[np.ndarray], metrics: list[str], scale: np.ndarray
) -> pd.DataFrame:
    """The rows of every file on the unified tree, profiles numbered across files,
    values in the ensemble's units (NaN for a metric a file does not have), in
    the Ensemble's order (node, profile)."""
    node, prof, row_file, blocks = _row_blocks(files, node_of, metrics)
    vals = _dense(node.size, metrics, [(blocks, metrics, scale, row_file, 0)])
    out = pd.DataFrame({"node": node, "profile": prof})
    for j, m in enumerate(metrics):
        out[m] = vals[:, j]
    return out


#: a chunk's values of one kind of file: the rows (positions among the chunk's
#: sorted rows), the metrics (indexes into the chunk's), the values (rows x metrics)
Block = tuple[np.ndarray, list[int], np.ndarray]


def _row_blocks(
    files: list[FileArrays], node_of: list[np.ndarray], metrics: list[str]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[Block]]:
    """The files' rows on the unified tree in the Ensemble's order (node,
    profile), each row's file (its index in ``files``), and their values as one
    :data:`Block` per kind of file (the files with the same metrics), in the
    files' own units. A study's files are mostly of a few
    kinds with different metrics, so the blocks are far smaller than a matrix of
    every row x every metric (the 20,000-file study's: 9.1M values of 31M cells)."""
    col = {m: j for j, m in enumerate(metrics)}
    n = len(files)
    n_prof = np.fromiter((fa.n_profiles for fa in files), dtype=np.int64, count=n)
    nrows = np.fromiter((fa.node.size for fa in files), dtype=np.int64, count=n)
    node_off = np.concatenate(([0], np.cumsum([nm.size for nm in node_of])))
    final = np.concatenate(node_of) if n else np.empty(0, np.int64)
    rnode = np.concatenate([fa.node for fa in files]) if n else np.empty(0, np.int64)
    rprof = np.concatenate([fa.prof for fa in files]) if n else np.empty(0, np.int64)
    node = final[np.repeat(node_off[:-1], nrows) + rnode]
    prof = rprof + np.repeat(np.concatenate(([0], np.cumsum(n_prof)))[:-1], nrows)
    order = _algo.pair_order(node, prof, int(n_prof.sum()))
    at = _algo.inverse_permutation(order)
    kinds: dict[tuple[str, ...], int] = {}
    kind = np.fromiter(
        (kinds.setdefault(tuple(fa.metrics), len(kinds)) for fa in files), np.int64, count=n
    )
    row_kind = np.repeat(kind, nrows)
    blocks = [
        (
            at[row_kind == g],
            [col[m] for m in names],
            np.concatenate([files[k].values for k in np.flatnonzero(kind == g)]),
        )
        for names, g in kinds.items()
        if names
    ]
    return node[order], prof[order], np.repeat(np.arange(n), nrows)[order], blocks


def _dense(
    n_rows: int,
    metrics: list[str],
    parts: list[tuple[list[Block], list[str], np.ndarray, np.ndarray, int | np.ndarray]],
) -> np.ndarray:
    """One column-major matrix (``n_rows`` x ``metrics``, NaN where no block has a
    value; the Ensemble keeps it as it is) of the blocks of ``parts``: per part
    its blocks, its metrics (which the blocks' indexes name), the factors to the
    matrix's units (per file x the part's metrics), each row's file, and where
    the part's rows go (an offset, or each row's place). Each block is written
    straight into its places: 5x faster than filling a row-major matrix in the
    files' order, then gathering it sorted into a column-major one."""
    col = {m: j for j, m in enumerate(metrics)}
    vals = np.full((n_rows, len(metrics)), np.nan, order="F")
    for blocks, names, scale, row_file, to in parts:
        for rows, js, block in blocks:
            fac = scale[:, js]
            if not (fac == 1).all():
                block = block * fac[row_file[rows]]
            places = rows + to if isinstance(to, int) else to[rows]
            vals[np.ix_(places, [col[names[j]] for j in js])] = block
    return vals


@dataclass
class ChunkArrays:
    """A chunk of files composed in its worker: its unified tree (as a
    :class:`FileArrays` without rows), every row on it (``node``, chunk-local
    ``prof`` and ``file``, in the order (``node``, ``prof``); their values as
    blocks, :data:`Block`, over ``metrics``, in the files' own units), each file's
    metadata (its arrays without nodes and rows) and their kinds (:func:`kinds_of`:
    ``kind`` per file, ``signatures`` per kind). The caller unifies the chunks'
    trees, which are small, instead of every file's, reconciles units and rules
    over the chunks' kinds, and writes the blocks into the ensemble's matrix: a
    worker sends only the values that exist."""

    tree: FileArrays
    files: list[FileArrays]
    node: np.ndarray
    prof: np.ndarray
    file: np.ndarray
    blocks: list[Block]
    metrics: list[str]
    kind: np.ndarray
    signatures: list[tuple[Any, ...]]

    @property
    def n_files(self) -> int:
        return len(self.files)


@gc_paused()  # (strip's many small objects would set off full collections)
def read_chunk_composed(
    paths: Sequence[str | Path],
    format: str | None,
    reader_kw: Mapping[str, Any],
    progress: bool | None = False,
) -> list[ChunkArrays]:
    """The files of ``paths`` parsed (:func:`read_chunk_arrays`) and composed into
    one :class:`ChunkArrays` (a batch task: runs in a worker).

    Example:
        >>> ch, = read_chunk_composed(["../shared/data/hatchet-tutorial/lulesh-scaling/"
        ...     "lulesh-annotation-profile-8cores.json"] * 2, None, {})
        >>> ch.n_files, len(ch.tree.parent), ch.metrics, int(ch.prof.max())
        (2, 45, ['time'], 15)
    """
    return [chunk_of(read_chunk_arrays(paths, format, reader_kw, progress))]


def chunk_of(files: list[FileArrays]) -> ChunkArrays:
    """The files composed into one :class:`ChunkArrays` (values in their own units)."""
    tree, node_of = unify(files)
    metrics: list[str] = []
    for fa in files:
        metrics += [m for m in fa.metrics if m not in metrics]
    node, prof, row_file, blocks = _row_blocks(files, node_of, metrics)
    nodes = tree.nodes
    empty = np.empty(0, dtype=np.int64)
    shape = FileArrays(
        np.asarray(tree.parent, dtype=np.int64),
        np.asarray(tree.names, dtype=object),
        nodes["kind"].to_numpy(),
        empty,
        empty,
        np.empty((0, 0)),
        [],
        {},
        True,
        columns={c: nodes[c].to_numpy() for c in nodes.columns if c not in STRUCT_COLUMNS},
    )
    kind, _, signatures = kinds_of(files)
    stripped = [strip(fa) for fa in files]
    return ChunkArrays(shape, stripped, node, prof, row_file, blocks, metrics, kind, signatures)


_EMPTY = np.empty(0, dtype=np.int64)


@functools.lru_cache(maxsize=64)
def _no_rows(n_metrics: int) -> np.ndarray:
    """An empty values matrix (shared: nothing can be written into it)."""
    return np.empty((0, n_metrics))


def strip(fa: FileArrays) -> FileArrays:
    """A file's arrays without its nodes and rows: what its profiles' metadata,
    units and rules need."""
    empty = _EMPTY
    return FileArrays(
        empty,
        empty,
        "",
        empty,
        empty,
        _no_rows(len(fa.metrics)),
        list(fa.metrics),
        fa.meta,
        fa.is_tree,
        fa.profiles,
        tree_meta=fa.tree_meta,
    )


@gc_paused()  # millions of decoded objects alive: collections cost, find nothing
def compose_chunks(
    chunks: list[ChunkArrays], extras: list[dict[str, Any]], meta: Mapping[str, Any]
) -> Ensemble:
    """One Ensemble of the chunks (each composed by :func:`read_chunk_composed`),
    equal to :func:`compose` of all their files."""
    files = [fa for ch in chunks for fa in ch.files]
    if not files:
        raise ValueError("an ensemble needs at least one profile")
    tree, maps = unify([ch.tree for ch in chunks])
    metrics, units, rules, scale = _reconcile_kinds(*_chunks_kinds(chunks))
    foff = np.concatenate(([0], np.cumsum([ch.n_files for ch in chunks])))
    poff = np.concatenate(
        ([0], np.cumsum([sum(fa.n_profiles for fa in ch.files) for ch in chunks]))
    )
    row_node = np.concatenate([mp[ch.node] for mp, ch in zip(maps, chunks)])
    row_prof = np.concatenate([ch.prof + poff[c] for c, ch in enumerate(chunks)])
    # the rows in the Ensemble's order (node, profile), the values column-major as
    # the constructor keeps them (a chunk's rows come in that order already)
    key = row_node * max(int(poff[-1]), 1) + row_prof
    order = (
        None
        if bool((key[1:] >= key[:-1]).all())
        else _algo.pair_order(row_node, row_prof, int(poff[-1]))
    )
    vals = _ensemble_values(chunks, metrics, scale, foff, order)
    if order is not None:
        row_node, row_prof = row_node[order], row_prof[order]
    columns = {"node": row_node, "profile": row_prof}
    columns.update((m, vals[:, j]) for j, m in enumerate(metrics))
    rows = pd.DataFrame(columns, copy=False)
    profiles = _profiles(files, extras)
    return Ensemble(tree, rows, profiles, ensemble_meta(files, units, rules, meta), _own_rows=True)


def _ensemble_values(
    chunks: list[ChunkArrays],
    metrics: list[str],
    scale: np.ndarray,
    foff: np.ndarray,
    order: np.ndarray | None,
) -> np.ndarray:
    """The chunks' values in the ensemble's rows (``order``: where each comes from
    in the chunks' rows one after the other; None: in that order), column-major,
    NaN where a chunk lacks a metric, in the ensemble's units (``scale``: per
    file x metric; ``foff``: the chunks' offsets into the files)."""
    roff = np.concatenate(([0], np.cumsum([ch.node.size for ch in chunks], dtype=np.int64)))
    at = None if order is None else _algo.inverse_permutation(order)
    parts = [
        (
            ch.blocks,
            ch.metrics,
            scale[foff[c] : foff[c + 1]][:, [metrics.index(m) for m in ch.metrics]],
            ch.file,
            int(roff[c]) if at is None else at[roff[c] : roff[c + 1]],
        )
        for c, ch in enumerate(chunks)
    ]
    return _dense(int(roff[-1]), metrics, parts)


def _profiles(files: list[FileArrays], extras: list[dict[str, Any]]) -> pd.DataFrame:
    """The profiles table (:func:`profile_records`, :func:`profiles_table`)."""
    return profiles_table(profile_records(files, extras))


def profile_records(files: list[FileArrays], extras: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One metadata record per profile: a file's own profile records first (an
    Ensemble's columns win), then the file's extra columns."""
    records: list[dict[str, Any]] = []
    for fa, ex in zip(files, extras):
        if fa.is_tree:
            records.append(dict(ex))
        else:
            for r in fa.profiles or ():
                records.append({**r, **{k: v for k, v in ex.items() if k not in r}})
    return records


def profiles_table(records: list[dict[str, Any]]) -> pd.DataFrame:
    """The profiles table of :func:`profile_records` (the columns in order of first
    appearance, as ``pd.concat`` of the profiles' tables orders them).

    The records with the same keys (a study has a few kinds of file) are one table
    of tuples, the tables concatenated and put back in the records' order: 2x
    faster than a table of the dicts, and the types are those of the one-by-one
    read's concatenation (a column of None beside records without it stays None).

    Example:
        >>> profiles_table([{"a": 1}, {"a": 2, "b": "x"}, {"a": 3}]).to_dict("list")
        {'a': [1, 2, 3], 'b': [nan, 'x', nan]}
        >>> profiles_table([{}, {"a": 1}]).to_dict("list"), profiles_table([{}, {}]).shape
        ({'a': [nan, 1.0]}, (2, 0))
    """
    if not records:
        return pd.DataFrame()
    same: dict[tuple[str, ...], list[int]] = {}
    for k, r in enumerate(records):
        same.setdefault(tuple(r), []).append(k)
    parts = [
        pd.DataFrame.from_records([tuple(records[k].values()) for k in ks], columns=list(keys))
        if keys
        else pd.DataFrame(index=range(len(ks)))  # (records without columns: rows all the same)
        for keys, ks in same.items()
    ]
    if len(parts) == 1:
        return parts[0]
    order = np.concatenate([np.asarray(ks, dtype=np.int64) for ks in same.values()])
    where = _algo.inverse_permutation(order)
    return pd.concat(parts, ignore_index=True, sort=False).take(where).reset_index(drop=True)


@gc_paused()  # (each file's profile columns: many small objects)
def read_batch(
    paths: list[Path],
    format: str | None,
    reader_kw: Mapping[str, Any],
    extra_of: Callable[[int, Path, FileArrays], dict[str, Any]],
    *,
    workers: int | None,
    client: Any,
    progress: bool | None,
) -> Ensemble:
    """``read_ensemble``'s batch path: the files parsed to arrays (here, on
    ``workers`` processes or on ``client``'s cluster), composed in one pass.
    Raises :class:`NotBatch` where a file's format has no batch parser."""
    if client is not None or (workers or 1) > 1:
        from ._parallel import read_all

        chunks = read_all(
            paths,
            format,
            reader_kw,
            workers=workers,
            client=client,
            progress=progress,
            task=read_chunk_composed,
        )
    else:
        chunks = read_chunk_composed(paths, format, reader_kw, progress)
    files = [fa for ch in chunks for fa in ch.files]
    extras = [extra_of(k, p, fa) for k, (p, fa) in enumerate(zip(paths, files))]
    formats = {fa.meta.get("format") for fa in files}
    common = {"format": formats.pop()} if len(formats) == 1 and None not in formats else {}
    return compose_chunks(chunks, extras, common)


__all__ = [
    "BATCH_FORMATS",
    "ChunkArrays",
    "compose_chunks",
    "read_chunk_composed",
    "FileArrays",
    "NotBatch",
    "compose",
    "from_object",
    "read_batch",
    "read_chunk_arrays",
]
