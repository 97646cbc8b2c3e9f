"""What HPCToolkit's two readers share (the old ``experiment.xml`` database,
``hpctoolkit``, and the 2022+ ``meta.db`` one, ``hpctoolkit_db``): how a metric's
name says its unit and aggregation rule. A helper, not a reader.
"""

from __future__ import annotations

import re

from ..model.units import canonical, dimension

_STAT_RULE = {
    "Sum": "sum",
    "Mean": "sum",
    "Max": "max",
    "Min": "none",
    "StdDev": "none",
    "CfVar": "none",
}


def metric_name(db_name: str) -> tuple[str, str | None, str]:
    """``"CPUTIME (usec) (I)"`` -> (``"time"``, ``"us"``, ``"sum"``): the metric,
    the unit its name states (or None) and its aggregation rule."""
    base = re.sub(r"\s*\((I|E|inc|exc)\)\s*$", "", db_name).strip()
    m = re.search(r"\(([A-Za-z]+)\)", base)
    u = canonical(m.group(1)) if m else None
    unit = u if dimension(u) else None  # "(usec)", "(B)"; not "(PAPI)"
    stat = re.search(r":(Sum|Mean|Max|Min|StdDev|CfVar)$", base)
    rule = _STAT_RULE[stat.group(1)] if stat else "sum"
    if re.fullmatch(r"CPUTIME \((usec|sec)\)", base):
        base = "time"
    return base, unit, rule
