"""The rule of tables (docs/architecture.md section 3), as a check the tests share:
every numeric column of a table a public function returns either has its unit in
``attrs["units"]``, shown by the table's repr, or is a count, share, ratio, rank or
id this module knows by name."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from cctviz.model.tables import UnitTable, names_its_unit
from cctviz.model.units import format_value

#: numeric columns without a unit: counts, shares, ratios, ranks, ids, positions
UNITLESS = re.compile(
    r"""^(
        calls | calls_mean | calls_pred | count | n | n_points | nodes | processes
        | ranks | ranks_ever_last | rank | run | profile | profiles | instance | node | seq
        | event                       # a position among the events
        | step | argmax | imbalance | r2 | bytes_error | wait_share | share | overlap
        | last_calls | most_waited_for | most_waited_for_calls | most_often_last
        | most_often_last_calls | last_to_arrive | before | cpu_util_share
        | [a-z_]+_share | column | occurrence | members | parent | depth | line | node_id
        | busy | blocked | idle | startup | teardown  # shares of the time (workflow.summary)
        | x | y                       # a projection's coordinates (no unit stated)
    )$""",
    re.X,
)


#: a ratio of two runs (``diff_table``'s ``"time (inc) [a / b]"``)
RATIO = re.compile(r".* \[.+ / .+\]$")


def _unitless(col: object) -> bool:
    return isinstance(col, str) and bool(UNITLESS.match(col) or RATIO.match(col))


def assert_units(table: pd.DataFrame, what: str) -> None:
    """``table`` follows the rule: a :class:`UnitTable`; each numeric column not
    known as unitless has a unit (and is shown with it in the HTML repr); the
    columns that name an aggregate (``_mean``, ``_total``, ``_max``) of a measured
    quantity have one too."""
    assert isinstance(table, UnitTable), f"{what}: a {type(table).__name__}, not a UnitTable"
    units = table.attrs.get("units") or {}
    missing = []
    for col, dtype in table.dtypes.items():
        if not pd.api.types.is_numeric_dtype(dtype) or pd.api.types.is_bool_dtype(dtype):
            continue
        if _unitless(col):
            continue
        if not units.get(col):
            missing.append(col)
    assert not missing, f"{what}: numeric columns without a unit: {missing} (units: {units})"
    html = table.head(3)._repr_html_()
    for col, unit in units.items():
        if not unit or col not in table.columns or not len(table):
            continue
        if names_its_unit(col, unit):  # "wait_mean [s]": its numbers as they are
            continue
        values = table[col].head(3).to_numpy()
        if not pd.api.types.is_numeric_dtype(table[col].dtype):
            continue
        finite = [v for v in values if np.isfinite(float(v))]
        if not finite:
            continue
        shown = (
            f"{int(finite[0])} {unit}"
            if col in (table.attrs.get("instants") or ())
            else format_value(finite[0], unit)
        )
        assert shown in html, f"{what}: {col!r} not shown with its unit ({shown!r})"
