"""Tables people read: every measured column states its unit, and shows it.

The rule (``docs/architecture.md`` section 3): every DataFrame a public function
returns states the unit of each measured column (a time, a size, a rate) in
``attrs["units"]`` (column -> unit), and is a :class:`UnitTable`, whose repr (the
notebook's HTML and ``print``) shows each such value with its unit ("13.3 s",
"3.73 MB"). The values themselves stay plain numbers in that unit, and the
column names stay stable whatever the unit (a table of microseconds and one of
nanoseconds have the same columns), so code computes with them unchanged.
Columns that count or compare (calls, ranks, shares, ratios, ids) have no unit. A
column whose name states its unit (``"wait_mean [s]"``, ``"MB_mean"``) shows its
numbers as they are, in that unit (:func:`names_its_unit`).

A column that is a point in time rather than a duration (``attrs["instants"]``:
an arrival, an end) shows its raw value with its unit: a clock reading scaled to
"1.70e+09 s" would hide the nanoseconds it was read in.

Derived tables (a slice, a sort, ``head``, ``assign``) stay UnitTables with the
same units; those whose values change unit (arithmetic on the whole table, ranks,
counts) drop them (:class:`UnitTable`). ``pd.DataFrame(table)`` is the plain
frame, ``table.to_string()`` the raw numbers.

Example:
    >>> t = with_units(pd.DataFrame({"calls": [3], "wait": [2.5e9], "bytes": [4e6]}),
    ...                {"wait": "ns", "bytes": "B"})
    >>> print(t)
       calls   wait   bytes
    0      3 2.50 s 4.00 MB
    >>> float(t["wait"].iloc[0]), t.attrs["units"]
    (2500000000.0, {'wait': 'ns', 'bytes': 'B'})
    >>> print(t[t["calls"] > 0][["wait"]])  # derived tables keep their units
        wait
    0 2.50 s
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from functools import partial
from typing import Any

import numpy as np
import pandas as pd

from .units import canonical, format_value, looks_measured

#: the attrs key of the units of a table's columns ({column: unit})
UNITS = "units"
#: the attrs key of the columns that are points in time (shown unscaled)
INSTANTS = "instants"


def _instant(value: Any, unit: str) -> str:
    """A point in time as read: every digit, with its unit."""
    if isinstance(value, (int, np.integer)):
        return f"{int(value)} {unit}"
    try:
        v = float(value)
    except (TypeError, ValueError):
        return str(value)
    if v != v:  # NaN
        return "n/a"
    return f"{int(v)} {unit}" if v.is_integer() else f"{v} {unit}"


#: pandas methods whose results are no longer in their columns' units (a count, a
#: rank, a correlation, a variance...) or whose columns move: their units are dropped
_NOT_IN_UNITS = frozenset(
    ("apply", "combine", "corr", "count", "cov", "cumprod", "describe", "eval", "kurt", "map",
     "melt", "pct_change", "prod", "rank", "skew", "stack", "transpose", "unstack", "var")
)  # fmt: skip


def _without_units(table: Any) -> Any:
    if isinstance(table, pd.DataFrame) and (UNITS in table.attrs or INSTANTS in table.attrs):
        table.attrs = {k: v for k, v in table.attrs.items() if k not in (UNITS, INSTANTS)}
    return table


class UnitTable(pd.DataFrame):
    """A DataFrame that shows each measured value with its unit
    (``attrs["units"]``; module docstring). Everything else is pandas'.

    A result whose values are no longer in those units drops them, so the repr
    never writes a wrong unit: arithmetic on the table (``table / 1e9``: say the
    new unit with :func:`with_units`), ranks, counts, correlations; a groupby's
    aggregate has no ``attrs`` in pandas."""

    @property
    def _constructor(self) -> Callable[..., UnitTable]:
        return UnitTable

    def __finalize__(self, other: Any, method: str | None = None, **kwargs: Any) -> UnitTable:
        out = super().__finalize__(other, method=method, **kwargs)
        return _without_units(out) if method in _NOT_IN_UNITS else out

    def _arith_method(self, other: Any, op: Any) -> Any:
        return _without_units(super()._arith_method(other, op))

    def _flex_arith_method(self, other: Any, op: Any, **kwargs: Any) -> Any:
        return _without_units(super()._flex_arith_method(other, op, **kwargs))

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        # np.log(table), np.sqrt(table): values no longer in their units
        return _without_units(super().__array_ufunc__(ufunc, method, *inputs, **kwargs))

    def __setitem__(self, key: Any, value: Any) -> None:
        """A column set anew (``t["wait"] = t["wait"] / 1e9``) loses its unit: the
        table cannot tell what the new values are in (say it with :func:`with_units`)."""
        super().__setitem__(key, value)
        names = key if isinstance(key, (list, tuple, pd.Index, np.ndarray)) else [key]
        units = self.attrs.get(UNITS)
        if units and any(k in units for k in names):
            self.attrs = {**self.attrs, UNITS: {k: u for k, u in units.items() if k not in names}}

    def join(self, other: Any, *args: Any, **kwargs: Any) -> Any:
        """pandas' join, keeping the units of both sides' columns (pandas keeps
        ``attrs`` only where both sides have the same)."""
        return _joined(super().join(other, *args, **kwargs), self, other)

    def merge(self, right: Any, *args: Any, **kwargs: Any) -> Any:
        """pandas' merge, keeping the units of both sides' columns."""
        return _joined(super().merge(right, *args, **kwargs), self, right)

    def _unit_formatters(self) -> list[Callable[[Any], str] | None]:
        """Per column, how a value is written (None: as pandas writes it). A
        list, not a dict: pandas maps a dict's entries by position in the
        original frame when it elides columns, a list it elides with them."""
        units = self.attrs.get(UNITS) or {}
        instants = set(self.attrs.get(INSTANTS) or ())
        out: list[Callable[[Any], str] | None] = []
        for col, dtype in self.dtypes.items():
            try:
                unit = units.get(col)
            except TypeError:  # an unhashable label
                unit = None
            shown = (
                unit
                and pd.api.types.is_numeric_dtype(dtype)
                and not pd.api.types.is_bool_dtype(dtype)
                and not names_its_unit(col, unit)
            )
            out.append(
                partial(_instant if col in instants else format_value, unit=unit) if shown else None
            )
        return out if any(out) else []

    def __repr__(self) -> str:
        formatters = self._unit_formatters()
        if not formatters or self._info_repr():
            return super().__repr__()
        try:  # pandas' own repr options (an internal of pandas.io.formats)
            from pandas.io.formats import format as fmt

            return self.to_string(formatters=formatters, **fmt.get_dataframe_repr_params())
        except (AttributeError, ImportError, TypeError):  # another pandas: its own repr
            return super().__repr__()

    def _repr_html_(self) -> str | None:
        """pandas' notebook table (its options, truncation and escaping), with
        each measured value written with its unit."""
        formatters = self._unit_formatters()
        if not formatters or self._info_repr() or not pd.get_option("display.notebook_repr_html"):
            return super()._repr_html_()
        try:  # pandas' notebook table (an internal of pandas.io.formats)
            from pandas.io.formats import format as fmt

            formatter = fmt.DataFrameFormatter(
                self,
                formatters=formatters,
                na_rep="NaN",
                bold_rows=True,
                escape=True,
                max_rows=pd.get_option("display.max_rows"),
                min_rows=pd.get_option("display.min_rows"),
                max_cols=pd.get_option("display.max_columns"),
                show_dimensions=pd.get_option("display.show_dimensions"),
            )
            return fmt.DataFrameRenderer(formatter).to_html(notebook=True)
        except (AttributeError, ImportError, TypeError):  # another pandas: its own table
            return super()._repr_html_()


def _joined(out: Any, left: Any, right: Any) -> Any:
    """``out`` (a join or merge of ``left`` and ``right``) with the units of the
    columns it took from either side under the same name (a column renamed by a
    suffix has none: which side's unit would be a guess)."""
    if not isinstance(out, pd.DataFrame):
        return out
    units: dict[Any, Any] = {}
    instants: list[Any] = []
    for side in (right, left):  # the left's unit wins a name both have
        if isinstance(side, pd.DataFrame):
            units.update(side.attrs.get(UNITS) or {})
            instants += list(side.attrs.get(INSTANTS) or ())
    cols = set(out.columns)
    kept = {c: u for c, u in units.items() if c in cols}
    return with_units(out, kept, instants=[c for c in instants if c in cols]) if kept else out


def names_its_unit(column: Any, unit: str) -> bool:
    """Whether a column's name states its unit (``"wait_mean [s]"``, ``"MB_mean"``,
    ``"algbw GB/s"``): its numbers are then shown as they are, in that unit, never
    rescaled under a header that says another ("101 ms" under "[s]").

    >>> names_its_unit("wait_mean [s]", "s"), names_its_unit("ms_mean", "ms"), names_its_unit("wait", "ns")
    (True, True, False)
    """
    name = str(column)
    return f"[{unit}]" in name or name.endswith(f" {unit}") or name.startswith(f"{unit}_")


def with_units(
    table: pd.DataFrame,
    units: Mapping[str, str | None],
    *,
    instants: Iterable[str] = (),
) -> UnitTable:
    """``table`` as a :class:`UnitTable` (its data not copied) whose columns
    ``units`` name the unit of (``None``: a measured column whose unit no one
    stated); ``instants``: those that are points in time. Units already in
    ``attrs["units"]`` stay unless ``units`` names the column again.

    >>> t = with_units(pd.DataFrame({"arrival": [1_700_000_000_123_456_789]}), {"arrival": "ns"},
    ...                instants=["arrival"])
    >>> print(t)
                     arrival
    0 1700000000123456789 ns
    """
    out = UnitTable(table, copy=False)  # a new frame on the same data: the caller's attrs stay
    attrs = dict(table.attrs)
    attrs[UNITS] = {**dict(attrs.get(UNITS) or {}), **dict(units)}
    shown = [*(attrs.get(INSTANTS) or ()), *instants]
    if shown:
        attrs[INSTANTS] = list(dict.fromkeys(shown))
    out.attrs = attrs
    return out


#: units that count rather than measure: a column in them has no unit to show
COUNTS = ("count",)


def shown_unit(unit: Any) -> str | None:
    """The unit a table states for a column in ``unit``: its canonical
    spelling, None for counts (``"count"``, ``"#"``: a number of things).

    >>> shown_unit("usec"), shown_unit("#"), shown_unit(None)
    ('us', None, None)
    """
    u = canonical(unit)
    return None if u in COUNTS else u


def measured(name: str, unit: Any) -> bool:
    """Whether a column of metric ``name`` (``"time"``, ``"time (inc)"``) recorded
    in ``unit`` is a measured quantity: it has a unit to show, or its name says it
    is a time or a size (its unit then unknown, shown as such). The one rule of
    every table that states units.

    >>> measured("time (inc)", "usec"), measured("time", None), measured("calls", None)
    (True, True, False)
    """
    base = name[: -len(" (inc)")] if str(name).endswith(" (inc)") else str(name)
    return bool(shown_unit(unit)) or looks_measured(base)


def metric_units(tree: Any, columns: Iterable[Any]) -> dict[str, str | None]:
    """The units of those ``columns`` that are measured metrics of ``tree`` (a
    :class:`~cctviz.model.tree.Tree`): ``"time"`` and ``"time (inc)"`` in the
    unit ``tree.units`` states; a metric whose name says time or size but whose
    unit no one stated, None (unknown); counts and other columns left out.

    >>> from cctviz.model.tree import Tree
    >>> t = Tree.from_parents([-1], ["main"], {"time": [1.0], "calls": [1.0]},
    ...                       meta={"units": {"time": "usec"}})
    >>> metric_units(t, ["name", "time", "time (inc)", "calls"])
    {'time': 'us', 'time (inc)': 'us'}
    """
    out: dict[str, str | None] = {}
    exc = set(tree.exc_metrics)
    for c in columns:
        if not isinstance(c, str):
            continue
        base = c[: -len(" (inc)")] if c.endswith(" (inc)") else c
        if base in exc and measured(c, tree.unit(base)):
            out[c] = shown_unit(tree.unit(base))
    return out


__all__ = [
    "COUNTS",
    "INSTANTS",
    "UNITS",
    "UnitTable",
    "measured",
    "metric_units",
    "shown_unit",
    "with_units",
]
