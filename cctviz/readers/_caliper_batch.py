"""Caliper json-split files as :class:`FileArrays`, for the batch path of
:func:`cctviz.read_ensemble` (``_batch``).

:func:`parse_caliper_json` parses one file. :func:`parse_caliper_docs` parses
the decoded files of a chunk at once: the files that share their columns (a
study's files do) are one group, whose records, nodes and checks are single
numpy arrays, so the cost per file is little more than decoding it (one file is
a group of one). A file the parse does not cover (a record or node it would
have to question, more than one record of a (node, rank), a rank missing a
parent's record, inclusive values of several ranks) is left to the reader
(None), whose result is the same (tests/readers/test_batch_compose.py); a group
with something irregular is parsed a file at a time.
"""

from __future__ import annotations

import functools
import zlib
from collections.abc import Sequence
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ProfileError
from ..interop import timer_units, with_metric_meta
from ..model import _algo
from ..model.units import dimension
from ._caliper import (
    ORDER_COL,
    CaliColumn,
    _coerce,
    spec_shape,
    specs_from_shape,
    timer_bases,
)
from ._filearrays import FileArrays
from ._json import file_bytes, loads, value_key

_SECTIONS = ("data", "columns", "column_metadata", "nodes")
#: the call-path column (the first of these a file has) and the kind of its nodes
_PATH_COLUMNS = (("source.function#callpath.address", "function"), ("path", "region"))


def parse_caliper_json(path: Path, raw: bytes | None = None) -> FileArrays | None:
    """A Caliper json-split file (its bytes ``raw``, un-gzipped, where read
    already) as arrays, or None where the batch parser does not cover it (then
    the reader reads it: its result, warnings and errors).

    Example:
        >>> fa = parse_caliper_json(Path(
        ...     "../shared/data/hatchet/caliper-lulesh-json/lulesh-annotation-profile.json"))
        >>> fa.metrics, fa.n_profiles, len(fa.parent), fa.meta["units"]
        (['time'], 8, 24, {'time': 'us'})
    """
    doc = load_doc(path, raw)
    return None if doc is None else parse_caliper_doc(path, doc)


def parse_caliper_doc(path: Path, doc: dict[str, Any]) -> FileArrays | None:
    """:func:`parse_caliper_json` of the file's decoded document (:func:`load_doc`):
    a group of one file."""
    return parse_caliper_docs([path], [doc])[0]


def path_column(cols: list[str]) -> tuple[str | None, str]:
    """The call-path column of a file with columns ``cols`` and its nodes' kind
    (None: no call path, the reader's work)."""
    for col, kind in _PATH_COLUMNS:
        if col in cols:
            return col, kind
    return None, ""


def load_doc(path: Path, raw: bytes | None = None) -> dict[str, Any] | None:
    """The file's JSON object with its four sections as lists, else None; its
    ``data`` records as a float matrix already where they are numbers
    (:func:`_records_matrix`: the decoded numbers freed while they are fresh)."""
    try:
        doc = loads(file_bytes(path) if raw is None else raw)
    except (ValueError, UnicodeDecodeError, ProfileError, OSError, EOFError, zlib.error):
        return None
    if not isinstance(doc, dict) or not all(isinstance(doc.get(s), list) for s in _SECTIONS):
        return None
    cols, cmeta = doc["columns"], doc["column_metadata"]
    if len(cmeta) != len(cols) or not all(isinstance(c, str) for c in cols):
        return None
    if len(set(cols)) != len(cols) or not all(
        isinstance(m, dict) and "is_value" in m for m in cmeta
    ):
        return None
    try:
        doc["data"] = _records_matrix(doc["data"], len(cols))
    except _Irregular:
        pass  # the group parse finds it irregular again: the file is the reader's
    return doc


def _columns(
    cols: list[str], cmeta: list[dict[str, Any]], path_col: str
) -> tuple[list[int] | None, int | None, Any]:
    """:func:`_value_columns` with the metrics' :func:`spec_shape`, decided once
    per set of columns (the files of a study share theirs)."""
    try:
        key = (
            path_col,
            tuple(cols),
            tuple(
                (bool(m.get("is_value")), m.get("attribute.alias"), m.get("attribute.unit"))
                for m in cmeta
            ),
        )
        hash(key)
    except TypeError:  # an alias or unit that is no text
        return _columns_of(cols, cmeta, path_col)
    got = _COLUMNS.get(key)
    if got is None:
        if len(_COLUMNS) >= 256:  # a study has a few sets of columns
            _COLUMNS.clear()
        got = _COLUMNS[key] = _columns_of(cols, cmeta, path_col)
    return got


_COLUMNS: dict[Any, Any] = {}


def _columns_of(
    cols: list[str], cmeta: list[dict[str, Any]], path_col: str
) -> tuple[list[int] | None, int | None, Any]:
    value_cols, j_rank = _value_columns(cols, cmeta, path_col)
    if value_cols is None:
        return None, None, None
    return [j for j, _ in value_cols], j_rank, spec_shape([c for _, c in value_cols])


def _value_columns(
    cols: list[str], cmeta: list[dict[str, Any]], path_col: str
) -> tuple[list[tuple[int, CaliColumn]] | None, int | None]:
    """The metric columns (index, column) and the ``mpi.rank`` column's index;
    None where a column is a label or ``Node order`` (the reader's work)."""
    out: list[tuple[int, CaliColumn]] = []
    j_rank = None
    for j, (c, m) in enumerate(zip(cols, cmeta)):
        if c == path_col:
            continue
        alias = m.get("attribute.alias")
        if not m.get("is_value") or ORDER_COL in (c, alias):
            return None, None
        if c == "mpi.rank":
            j_rank = j
        else:
            out.append((j, CaliColumn(c, True, alias, m.get("attribute.unit"))))
    return out, j_rank


# ------------------------------------------------------------------ many files
class _Irregular(Exception):
    """A group holds what the group parse does not question: its files one by one
    (a file alone that is irregular is the reader's)."""


def parse_caliper_docs(
    paths: Sequence[Path],
    docs: Sequence[dict[str, Any] | None],
    structures: dict[Any, Any] | None = None,
) -> list[FileArrays | None]:
    """Each decoded file (:func:`load_doc`; None: not decoded) as arrays, or None
    where the parser does not cover it (the reader's work), the files that share
    their columns parsed as one group.

    Files with equal nodes get the same ``parent`` and ``names`` arrays (so that
    ``_batch.unify`` unifies each structure once); ``structures`` keeps them
    across calls (a chunk's groups).

    Example:
        >>> p = Path("../shared/data/hatchet-tutorial/lulesh-scaling/"
        ...          "lulesh-annotation-profile-8cores.json")
        >>> doc = load_doc(p)
        >>> [(fa.n_profiles, fa.meta["units"]) for fa in parse_caliper_docs([p, p], [doc, doc])]
        [(8, {'time': 'us'}), (8, {'time': 'us'})]
    """
    out: list[FileArrays | None] = [None] * len(docs)
    groups: dict[int, tuple[Any, str, str, list[int]]] = {}
    for k, doc in enumerate(docs):
        if doc is None:
            continue
        path_col, kind = path_column(doc["columns"])
        if path_col is None:
            continue
        got = _columns(doc["columns"], doc["column_metadata"], path_col)
        if got[0] is not None:  # (the same object for the same columns: cached)
            groups.setdefault(id(got), (got, path_col, kind, []))[3].append(k)
    shared = {} if structures is None else structures
    for got, path_col, kind, ks in groups.values():
        done = _parse_group(paths, docs, ks, got, path_col, kind, shared)
        for k in ks:
            out[k] = done.get(k)
    return out


def _parse_group(
    paths: Sequence[Path],
    docs: Sequence[dict[str, Any] | None],
    ks: list[int],
    got: tuple[list[int], int | None, Any],
    path_col: str,
    kind: str,
    shared: dict[Any, Any],
) -> dict[int, FileArrays]:
    """The files ``ks`` that the group parse covers; a group with something
    irregular (a ragged record, a parent that is no integer) parsed a file at a
    time, so only the irregular files are left to the reader."""
    try:
        return _Group(paths, docs, ks, got, path_col, kind, shared).files()
    except _Irregular:
        if len(ks) == 1:
            return {}
        out: dict[int, FileArrays] = {}
        for k in ks:
            out.update(_parse_group(paths, docs, [k], got, path_col, kind, shared))
        return out


def _records_matrix(rows: list[Any] | np.ndarray, width: int) -> np.ndarray:
    """A file's records as a float matrix (rows x ``width``), as
    ``np.array(rows, dtype=float)`` makes it (``None`` is NaN), by ``np.fromiter``
    where every record is a list of ``width`` numbers (1.6x faster); a matrix
    already made is itself. Records that are not a matrix of numbers raise
    :class:`_Irregular`."""
    if isinstance(rows, np.ndarray):
        return rows
    if not rows:
        return np.empty((0, width))
    mat = None
    if set(map(type, rows)) == {list} and set(map(len, rows)) == {width}:
        try:
            mat = np.fromiter(
                chain.from_iterable(rows), dtype=np.float64, count=len(rows) * width
            ).reshape(len(rows), width)
        except (TypeError, ValueError, OverflowError):  # None, text: as np.array reads them
            pass
    if mat is None:
        try:
            mat = np.array(rows, dtype=np.float64)
        except (ValueError, TypeError, OverflowError):  # (an integer beyond a float)
            raise _Irregular from None
    if mat.ndim != 2 or mat.shape[1] != width:
        raise _Irregular
    return mat


_EMPTY_INT = np.empty(0, dtype=np.int64)


@functools.lru_cache(maxsize=1024)
def _tree_rows(n: int) -> tuple[np.ndarray, np.ndarray]:
    """The rows of a tree of ``n`` nodes: every node, profile 0 (read-only arrays,
    shared by the files of that size)."""
    node, prof = np.arange(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
    node.flags.writeable = prof.flags.writeable = False
    return node, prof


def _any_per(which: np.ndarray, n: int) -> np.ndarray:
    """Per group ``0..n-1``: whether ``which`` (group numbers) names it."""
    return np.bincount(which, minlength=n) > 0


def _segments(sizes: np.ndarray) -> np.ndarray:
    """Offsets of consecutive segments of ``sizes`` (one more than segments)."""
    return np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)


class _Group:
    """Files with the same columns as single arrays: their nodes one forest (file
    ``f``'s nodes at ``noff[f]:noff[f+1]``), their records one matrix (the
    records with a call path: ``rf``, ``rnode``, ``prof``; file ``f``'s at
    ``roff[f]:roff[f+1]``), and ``ok``: the files whose every check passed
    (the checks of one file, made for all at once)."""

    def __init__(
        self,
        paths: Sequence[Path],
        docs: Sequence[dict[str, Any] | None],
        ks: list[int],
        got: tuple[list[int], int | None, Any],
        path_col: str,
        kind: str,
        shared: dict[Any, Any],
    ) -> None:
        """The files ``ks`` of ``docs`` (their columns' :func:`_columns`: ``got``;
        ``shared``: the node lists parsed so far, :meth:`_node_list`)."""
        self.value_cols, self.j_rank, self.shape = got
        self.shared = shared
        self.paths = [paths[k] for k in ks]
        self.docs = [docs[k] for k in ks]
        self.ks, self.kind, self.m = ks, kind, len(ks)
        self._nodes(path_col)
        self._records(self.docs[0]["columns"], path_col)
        self._profiles()

    def _nodes(self, path_col: str) -> None:
        structures = [self._node_list(d["nodes"], path_col) for d in self.docs]
        self.structures = structures  # per file: (parents, names, covered)
        self.n_f = np.fromiter((s[0].size for s in structures), dtype=np.int64, count=self.m)
        self.par = np.concatenate([s[0] for s in structures])
        self.noff = _segments(self.n_f)
        self.ok = np.fromiter((s[2] for s in structures), dtype=bool, count=self.m)

    def _node_list(self, nodes: list[Any], path_col: str) -> tuple[np.ndarray, np.ndarray, bool]:
        """:meth:`_parse_nodes` once per distinct list of nodes in the chunk (a
        study's files have a few): the lists are told apart by their encoding,
        which costs about half of their parse."""
        key = value_key(nodes)
        if key is None:
            return self._parse_nodes(nodes, path_col)
        full = ("list", path_col, self.kind, key)
        got = self.shared.get(full)
        if got is None:
            got = self.shared[full] = self._parse_nodes(nodes, path_col)
        return got

    def _parse_nodes(self, nodes: list[Any], path_col: str) -> tuple[np.ndarray, np.ndarray, bool]:
        """A file's nodes: their parents and names (the arrays of the first file of
        the chunk with the same parents and names) and whether the group parse
        covers them (parents in the file, names, every node on ``path_col``)."""
        try:
            column = np.array([nd["column"] for nd in nodes], dtype=object)
            names = np.array([str(nd["label"]) for nd in nodes], dtype=object)
            par = np.array([nd.get("parent", -1) for nd in nodes])
        except (TypeError, KeyError, AttributeError):
            raise _Irregular from None
        if not nodes:
            return _EMPTY_INT, names, False
        if par.dtype.kind != "i":
            raise _Irregular
        par = par.astype(np.int64, copy=False)
        bad = (par < -1) | (par >= par.size) | (names == "") | (column != path_col)
        # lists that differ as JSON can parse alike (a label 1 and "1"): one pair of arrays
        key = ("arrays", self.kind, par.tobytes(), tuple(names.tolist()))
        par, names = self.shared.setdefault(key, (par, names))
        return par, names, not bad.any()

    def _records(self, cols: list[str], path_col: str) -> None:
        mats = [_records_matrix(d["data"], len(cols)) for d in self.docs]
        r_f = np.fromiter(map(len, mats), dtype=np.int64, count=self.m)
        mat = np.concatenate(mats) if len(mats) > 1 else mats[0]
        jp = cols.index(path_col)
        keep = ~np.isnan(mat[:, jp])
        self.mat = mat[keep]
        self.rf = np.repeat(np.arange(self.m), r_f)[keep]
        self.roff = _segments(np.bincount(self.rf, minlength=self.m))
        pn = self.mat[:, jp]
        bad = (pn < 0) | (pn >= self.n_f[self.rf]) | (pn != np.floor(pn))
        self.ok &= ~_any_per(self.rf[bad], self.m)
        self.rnode = np.where(bad, 0.0, pn).astype(np.int64)
        if self.j_rank is not None:
            r = self.mat[:, self.j_rank]
            self.rank = np.where(np.isnan(r), 0.0, r).astype(np.int64)
        else:
            self.rank = np.zeros(self.rnode.size, dtype=np.int64)

    def _profiles(self) -> None:
        """Each file's distinct ranks (sorted: its profiles) and each record's
        profile; files with two records of a (node, profile) are not ok."""
        rf, rank, m = self.rf, self.rank, self.m
        order = np.lexsort((rank, rf))
        sr, sf = rank[order], rf[order]
        first = np.ones(order.size, dtype=bool)
        first[1:] = (sr[1:] != sr[:-1]) | (sf[1:] != sf[:-1])
        self.n_ranks = np.bincount(sf[first], minlength=m)
        self.poff = _segments(self.n_ranks)
        self.ranks = sr[first]
        self.prof = np.empty(order.size, dtype=np.int64)
        self.prof[order] = np.cumsum(first) - 1 - self.poff[sf]
        self.is_tree = self.n_ranks <= 1
        o = np.lexsort((self.prof, self.rnode, rf))
        a, b, c = rf[o], self.rnode[o], self.prof[o]
        dup = (a[1:] == a[:-1]) & (b[1:] == b[:-1]) & (c[1:] == c[:-1])
        self.ok &= ~_any_per(a[1:][dup], m)
        self.gid = self.noff[rf] + self.rnode  # each record's node in the forest

    def _gaps(self) -> np.ndarray:
        """Per file: some profile has a record of a node but none of its parent."""
        ens = ~self.is_tree[self.rf]
        P = int(self.n_ranks.max(initial=0)) + 1
        present = np.sort(self.gid[ens] * P + self.prof[ens])
        up = self.par[self.gid]
        need = ens & (up >= 0)
        want = (self.noff[self.rf[need]] + up[need]) * P + self.prof[need]
        if not present.size:
            return _any_per(self.rf[need], self.m)
        at = np.minimum(np.searchsorted(present, want), present.size - 1)
        return _any_per(self.rf[need][present[at] != want], self.m)

    def files(self) -> dict[int, FileArrays]:
        """The files that passed every check, by their index in the chunk."""
        bases = timer_bases(self.shape)
        decided = {
            base: timer_units(base, self.mat[:, [self.value_cols[j] for j in js]], self.rf, self.m)
            for base, js in bases.items()
        }
        by_units: dict[tuple[Any, ...], list[int]] = {}
        for f in range(self.m):
            by_units.setdefault(tuple(decided[b][f] for b in bases), []).append(f)
        gaps = self._gaps()
        out: dict[int, FileArrays] = {}
        for units, fs in by_units.items():
            out.update(self._files_with(dict(zip(bases, units)), np.asarray(fs), gaps))
        return out

    def _files_with(
        self, timer: dict[str, Any], fs: np.ndarray, gaps: np.ndarray
    ) -> dict[int, FileArrays]:
        """The files ``fs`` (whose timers' units are ``timer``) that passed."""
        specs = specs_from_shape(self.shape, [self.mat[:0, 0]] * len(self.shape), timer)
        col_of = {id(s): self.value_cols[j] for j, s in enumerate(specs)}
        kept = sorted(
            (s for s in specs if s.kept),
            key=lambda s: not (s.rule == "sum" and dimension(s.unit) == "time"),
        )  # as interop.build_metrics orders them
        several = any(s.inclusive and s.rule != "none" for s in kept)
        ok = self.ok[fs] & ~(~self.is_tree[fs] & (several | gaps[fs]))
        fs = fs[ok]
        if not fs.size:
            return {}
        vals = self.mat[:, [col_of[id(s)] for s in kept]]
        for j, s in enumerate(kept):
            if s.rule == "sum":
                vals[:, j] = np.where(np.isnan(vals[:, j]), 0.0, vals[:, j])
        tree_vals = self._tree_values(kept, vals, fs[self.is_tree[fs]])
        names_k = [s.name for s in kept]
        extra = with_metric_meta({}, kept)
        checks = self._checks(specs, names_k, col_of)
        self._offsets = (self.roff.tolist(), self.noff.tolist(), self.poff.tolist())
        return {
            self.ks[f]: self._file(f, names_k, vals, tree_vals, extra, kept, checks)
            for f in fs.tolist()
        }

    def _tree_values(self, kept: list, vals: np.ndarray, trees: np.ndarray) -> np.ndarray:
        """Every node's own values in the files ``trees`` (one profile each: a node
        without a record counts 0 for a sum), as rows of the forest."""
        out = np.empty((int(self.noff[-1]), len(kept)))
        out[:] = [0.0 if s.rule == "sum" else np.nan for s in kept]
        mine = np.zeros(self.m, dtype=bool)
        mine[trees] = True
        rows = mine[self.rf]
        out[self.gid[rows]] = vals[rows]
        inc = [j for j, s in enumerate(kept) if s.inclusive and s.rule == "sum"]
        if inc:
            node_file = np.repeat(np.arange(self.m), self.n_f)
            gpar = np.where(mine[node_file] & (self.par >= 0), self.par + self.noff[node_file], -1)
            out[:, inc] = _algo.own_from_inclusive(gpar, out[:, inc])
        return out

    def _checks(self, specs: list, names_k: list[str], col_of: dict) -> list[tuple]:
        """What :func:`verify` checks, per spec: (kind, metric index, column)."""
        out: list[tuple] = []
        for s in specs:
            if not s.kept and s.rule == "sum":
                out.append(("dropped", names_k.index(s.name), col_of[id(s)]))
            elif s.kept and s.inclusive and s.rule in ("max", "min"):
                out.append((s.rule, names_k.index(s.name), None))
        return out

    def _file(
        self,
        f: int,
        names_k: list[str],
        vals: np.ndarray,
        tree_vals: np.ndarray,
        extra: dict[str, Any],
        kept: list,
        checks: list[tuple],
    ) -> FileArrays:
        """File ``f``'s arrays: its slices of the group's, its metadata."""
        roff, noff, poff = self._offsets  # (Python integers: cheaper to slice with)
        doc, a, b, lo, hi = self.docs[f], roff[f], roff[f + 1], noff[f], noff[f + 1]
        ranks = self.ranks[poff[f] : poff[f + 1]]
        meta = {k: _coerce(v) for k, v in doc.items() if k not in _SECTIONS}
        if ranks.size == 1 and self.j_rank is not None:
            meta.setdefault("rank", int(ranks[0]))
        if extra.keys().isdisjoint(meta):
            meta.update({key: dict(v) for key, v in extra.items()})
        else:
            meta = with_metric_meta(meta, kept)
        meta.setdefault("format", "caliper-json")
        meta.setdefault("source", str(self.paths[f]))
        is_tree = bool(self.is_tree[f])
        n = hi - lo
        file_checks = []
        for kind, j, col in checks:
            rec = None
            if col is not None:
                rec = self.mat[a:b, col]
                if np.isnan(rec).all():
                    continue
                if is_tree:
                    rec, rec_at = np.full(n, np.nan), rec
                    rec[self.rnode[a:b]] = rec_at
            file_checks.append((kind, j, rec))
        if is_tree:
            (node, prof), values, profiles = _tree_rows(n), tree_vals[lo:hi], None
        else:
            node, prof, values = self.rnode[a:b], self.prof[a:b], vals[a:b]
            profiles = [{"rank": int(r)} for r in ranks]
        parent, names, _ = self.structures[f]
        return FileArrays(
            parent,
            names,
            self.kind,
            node,
            prof,
            values,
            list(names_k),
            meta,
            is_tree,
            profiles,
            checks=file_checks,
        )
