"""The run folder's ``run.json``, written by every process that knows a fact of
the run (the launchers, rank 0 at its end) without losing the others' facts.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..model.formats import RUN_FILE, merge_run_facts


def update_run_file(
    out: str | os.PathLike, facts: Mapping[str, Any], keep: tuple[str, ...] = ()
) -> None:
    """Merge ``facts`` into ``out/run.json`` (written atomically); ``keep`` keys already there stay.

    >>> import tempfile, json, pathlib
    >>> d = tempfile.mkdtemp()
    >>> update_run_file(d, {"command": "cctviz run t.py"}); update_run_file(d, {"exit_code": 0})
    >>> sorted(json.loads((pathlib.Path(d) / "run.json").read_text()))
    ['command', 'exit_code']
    """
    p = Path(out) / RUN_FILE
    data: dict[str, Any] = {}
    if p.exists():
        try:
            data = json.loads(p.read_text())
        except (OSError, ValueError):
            data = {}
    data = merge_run_facts(data, facts, keep)
    tmp = p.with_name(f".{p.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=2, default=str))
    os.replace(tmp, p)


__all__ = ["update_run_file"]
