"""The arrays a batch task makes of one profile file (:class:`FileArrays`): what
the per-format batch parsers (``_caliper_batch``) produce and ``_batch``
composes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

#: (node, profile) cells of one file beyond which its checks are the reader's
DENSE_CELLS = 1 << 22


@dataclass
class FileArrays:
    """One file's profiles as plain arrays (what a batch task sends back).

    Nodes are in the file's order (``parent`` indexes them, -1 for roots); rows
    are (``node``, ``prof``) with ``values`` (rows x ``metrics``, exclusive, in
    the file's units). ``is_tree``: the file is one profile that records every
    node (a :class:`Tree`: a node without a record counts 0, as the reader's
    Tree does); else ``profiles`` holds one metadata record per profile (an
    Ensemble's). ``meta`` is the profile object's metadata (``format``,
    ``source``, ``units``, ``aggregation``...). ``checks``: what the reader
    would verify about inclusive values, done for a whole chunk at once
    (``_batch.verify``).
    """

    parent: np.ndarray
    names: np.ndarray
    kind: np.ndarray | str  #: per node, or one kind for every node
    node: np.ndarray
    prof: np.ndarray
    values: np.ndarray
    metrics: list[str]
    meta: dict[str, Any]
    is_tree: bool
    profiles: list[dict[str, Any]] | None = None
    columns: dict[str, np.ndarray] = field(default_factory=dict)
    checks: list[tuple[str, int, np.ndarray | None]] = field(default_factory=list)
    tree_meta: dict[str, Any] | None = None  #: an Ensemble's tree's metadata, where it differs

    @property
    def n_profiles(self) -> int:
        return 1 if self.is_tree else len(self.profiles or ())
