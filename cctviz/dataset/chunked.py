"""Writing an ensemble that does not fit in memory, a chunk of profiles at a time.

A study's profiles often come in pieces over one known tree (the unified tree of
a job's ranks, a simulation ensemble's runs): :func:`write_chunks` takes them as
a stream of :class:`~cctviz.Ensemble` chunks over that tree and writes one
dataset (the layout of :mod:`cctviz.dataset.layout`); only one chunk is in
memory at a time. Files of profiles whose trees differ are composed with
``cctviz.read_ensemble(paths, out=folder)`` instead.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd

from ..model.ensemble import Ensemble
from .layout import (
    ROWS_PER_PART,
    Part,
    _prepare_folder,
    _write_rows,
    finish,
)


def write_chunks(
    chunks: Iterable[Ensemble],
    path: str | os.PathLike,
    *,
    rows_per_part: int = ROWS_PER_PART,
    overwrite: bool = False,
) -> Path:
    """Write the profiles of ``chunks`` (Ensembles over one tree: equal nodes
    tables, metrics, units and rules) as one dataset, in chunk order; returns the
    folder. The dataset equals ``Ensemble.concat(chunks).to_dataset(path)``, but
    only one chunk is held at a time.

    Example:
        >>> import cctviz, tempfile
        >>> t = cctviz.Tree.from_parents([-1, 0], ["main", "f"], {"time": [1.0, 2.0]})
        >>> chunks = (cctviz.Ensemble.from_trees([t] * 3) for _ in range(4))
        >>> cctviz.open_dataset(write_chunks(chunks, tempfile.mkdtemp() + "/e")).n_profiles
        12
    """
    if rows_per_part < 1:
        raise ValueError(f"rows_per_part must be at least 1, got {rows_per_part}")
    out = Path(path)
    _prepare_folder(out, overwrite)
    first: Ensemble | None = None
    parts: list[Part] = []
    profiles: list[pd.DataFrame] = []
    dead: list[np.ndarray] = []
    n_prof = 0
    for k, ens in enumerate(chunks):
        if first is None:
            first = ens
        else:
            _check_same_tree(first, ens, k)
        parts += _write_rows(out, ens, rows_per_part, first_part=len(parts), offset=n_prof)
        profiles.append(ens.profiles.reset_index(drop=True))
        dead.append(np.flatnonzero(~ens.live) + n_prof)
        n_prof += ens.n_profiles
    if first is None:
        raise ValueError("write_chunks: no chunks given")
    finish(
        out,
        first.tree.nodes,
        pd.concat(profiles, ignore_index=True),
        parts,
        metrics=first.exc_metrics,
        meta=first.meta,
        tree_meta=first.tree.meta,
        dead=np.concatenate(dead),
    )
    return out


def _check_same_tree(first: Ensemble, ens: Ensemble, k: int) -> None:
    """A chunk over another tree, or with other metrics, units or rules, is refused."""
    a, b = first.tree, ens.tree
    same = (
        len(a) == len(b)
        and np.array_equal(a.parent, b.parent)
        and np.array_equal(np.asarray(a.names, dtype=object), np.asarray(b.names, dtype=object))
    )
    if not same:
        raise ValueError(f"write_chunks: chunk {k} is over another tree than chunk 0")
    if first.exc_metrics != ens.exc_metrics or a.units != b.units or a.aggregation != b.aggregation:
        raise ValueError(
            f"write_chunks: chunk {k} has other metrics, units or rules than chunk 0 "
            f"({ens.exc_metrics}, {b.units}, {b.aggregation} vs {first.exc_metrics}, "
            f"{a.units}, {a.aggregation})"
        )
