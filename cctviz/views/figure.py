"""What every view shares as a figure: ``save()`` through the browser-free export."""

from __future__ import annotations

import pathlib
from typing import Any


class SavesFigure:
    """Mixin of the views (CCTView, SankeyView, ProfilesView): ``save()``."""

    def save(self, path: str | pathlib.Path, **options: Any) -> pathlib.Path:
        """Write the view as a figure: ``.svg``, ``.pdf``, ``.png`` or ``.html``
        (from the suffix), from its current state (selections, collapsed or
        expanded nodes, metrics...) with no browser; works for a view never
        displayed. Options: ``width``/``height`` (pt, or "3.5in", "89mm"),
        ``font_size`` (pt), ``title``, ``legends``, ``highlight``,
        ``background`` ("white" or "transparent"), ``scheme`` ("light" or
        "dark"), ``scale`` (PNG). See :func:`cctviz.export.save`.

        Example:
            >>> import cctviz, tempfile, pathlib
            >>> t = cctviz.Tree.from_parents([-1, 0], ["main", "solve"], {"time": [1.0, 2.0]})
            >>> out = pathlib.Path(tempfile.mkdtemp())
            >>> cctviz.CCTView(t).save(out / "fig.svg", width="3.5in").read_text().count("<text") > 2
            True
            >>> "solve" in cctviz.SankeyView(t).save(out / "sankey.svg", width="7in").read_text()
            True
        """
        from ..export import save

        return save(self, path, **options)
