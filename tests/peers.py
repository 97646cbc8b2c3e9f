"""The peer libraries the tests compare with (llnl-hatchet, llnl-thicket), imported
when a test first uses one.

A module that compares a few of its tests with Hatchet says
``from tests.peers import hatchet``: only the tests that touch ``hatchet.`` need
it. The test extra installs the peers, and the main run (``scripts/test.sh``) sets
``CCTVIZ_REQUIRE_PEERS=1``, so there a missing peer fails the test. The core run in
the newest-releases environment (pandas 3, where Hatchet and Thicket do not
install) skips just those tests.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import os
from types import ModuleType

import pytest


def require(name: str) -> ModuleType:
    """Import ``name``: skip the calling test where the peer is missing, unless
    ``CCTVIZ_REQUIRE_PEERS`` is set (then the ImportError fails it)."""
    with contextlib.redirect_stdout(io.StringIO()):  # thicket prints a plotting notice
        if os.environ.get("CCTVIZ_REQUIRE_PEERS"):
            return importlib.import_module(name)
        return pytest.importorskip(name)


class _Peer:
    """A module imported on first attribute access (see :func:`require`)."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str):
        return getattr(require(self._name), attr)


hatchet = _Peer("hatchet")
thicket = _Peer("thicket")
