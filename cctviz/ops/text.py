"""Text for people: trees and ensembles as indented text, names and call paths
cut to fit, numbers scaled with their units.

:func:`render` is what ``tree.render()``, ``print(tree)`` and ``cctviz tree``
print. What it shows, by default:

- children sorted by the shown metric, largest first (by magnitude, so the
  largest changes of a diff come first whatever their sign; ties by id);
- at most ``max_nodes=100`` nodes, the most significant ones: the tree is
  expanded best-first from the roots, by the largest value in each subtree;
- no node whose subtree stays below ``threshold=0.001`` (0.1%) of the root's
  value (of the largest value, for metrics that do not add up);
- no zero-valued subtrees: they are counted, and with ``threshold=0`` each
  shows as one line saying how many zero-valued nodes it folds;
- names cut to ``width=60`` characters by eliding the middle;
- values scaled with their units (``1.32 s``, ``75.3 ms``, ``3.73 MB``), the
  metric and its unit in the header, and a last line saying what was left out
  and how to see more.

For an Ensemble each line shows the mean over profiles, the spread
``[min .. max]`` and, where the imbalance costs at least ``imbalance=0.01`` (1%)
of the root's value, the ratio max/mean and the cost max - mean
(``Ensemble.stats``).
"""

from __future__ import annotations

import heapq
import shlex
from typing import TYPE_CHECKING, Any

import numpy as np

from ..model import units as _units
from ..model._algo import accumulate_up, children_csr
from ..model.tree import base_metric

if TYPE_CHECKING:  # pragma: no cover
    from ..model.ensemble import Ensemble
    from ..model.tree import Tree

ELLIPSIS = "…"
#: lines of ``str(tree)`` / IPython's display (besides the header and footer)
SHORT_NODES = 25
#: units that are counts: shown without a suffix ("12", "51.2 M")
_COUNT_UNITS = {"count", "counts", "1", "#", "number"}


def ellipsize(text: Any, width: int | None) -> str:
    """``text`` cut to ``width`` characters by eliding its middle (the start
    and the end of a C++ name or a file path say the most).

    >>> ellipsize("Kernel_3d_DGZ::scattering_and_source_terms", 21)
    'Kernel_3d_…urce_terms'
    >>> ellipsize("main", 21)
    'main'
    """
    text = str(text)
    if width is None or len(text) <= width:
        return text
    if width <= 1:
        return ELLIPSIS[: max(width, 0)]
    head = (width - 1) // 2
    tail = width - 1 - head
    return text[:head] + ELLIPSIS + text[len(text) - tail :]


def split_callpath(path: str, sep: str = "/") -> list[str]:
    """The frames of a call path as :attr:`Tree.callpaths` writes it (``sep``
    in a name escaped as ``\\/``, backslash as ``\\\\``); escapes are kept.

    >>> split_callpath(r"main/a\\/b/c")
    ['main', 'a\\\\/b', 'c']
    """
    parts: list[str] = []
    cur: list[str] = []
    esc = False
    for ch in path:
        if esc:
            cur.append(ch)
            esc = False
        elif ch == "\\":
            cur.append(ch)
            esc = True
        elif ch == sep:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return parts


def short_path(path: Any, width: int = 48, sep: str = "/") -> str:
    """A call path cut to ``width`` characters that never loses its leaf: the
    root, ``…``, then as many of the innermost frames as fit (a leaf longer
    than the width has its own middle elided). ``path`` is a call path string
    (``tree.callpaths``) or a sequence of names (``tree.path(i)``).

    >>> p = "main/lulesh.cycle/LagrangeLeapFrog/LagrangeNodal/CalcForceForNodes"
    >>> short_path(p, 40)
    'main/…/LagrangeNodal/CalcForceForNodes'
    >>> short_path(p, 24), short_path(p, 20), short_path(("main", "solve"), 40)
    ('main/…/CalcForceForNodes', '…/CalcForceForNodes', 'main/solve')
    >>> short_path(p, 12)
    '…/Calc…Nodes'
    """
    parts = split_callpath(path, sep) if isinstance(path, str) else [str(p) for p in path]
    full = sep.join(parts)
    if len(full) <= width:
        return full
    leaf = parts[-1]
    head = parts[0] + sep + ELLIPSIS + sep
    if len(head) + len(leaf) > width:
        head = ELLIPSIS + sep
    if len(head) + len(leaf) > width:
        return head + ellipsize(leaf, max(width - len(head), 1))
    tail = [leaf]
    for part in reversed(parts[1:-1]):
        if len(head) + len(sep.join([part, *tail])) > width:
            break
        tail.insert(0, part)
    return head + sep.join(tail)


def _header_label(metric: str, units: Any) -> str:
    """A metric as the header names it: times and sizes are shown each with its own
    unit ("1.82 s", "40.6 ms"), so the header says so and names the recorded unit
    instead of heading the column with one unit it does not use.

    >>> _header_label("time (inc)", {"time": "ns"}), _header_label("calls", {})
    ('time (inc), each value with its unit (recorded in ns)', 'calls')
    >>> _header_label("time", {})
    'time [unit unknown]'
    """
    label = _units.unit_label(metric, units)
    head, sep, unit = label.rpartition(" [")
    unit = unit.rstrip("]")
    if sep and _units.dimension(unit) in ("time", "bytes"):
        return f"{head}, each value with its unit (recorded in {unit})"
    return label


def _display_unit(unit: Any) -> str | None:
    u = _units.canonical(unit)
    return None if u is None or u.lower() in _COUNT_UNITS else u


def _fmt(value: float, unit: str | None, digits: int, signed: bool = False) -> str:
    s = _units.format_value(value, unit, digits)
    return "+" + s if signed and value > 0 else s


def _percent(fraction: float) -> str:
    return f"{fraction * 100:g}%"


class _Hint:
    """How to ask for more, in the words of where the text is read."""

    def __init__(self, context: str, obj: Any) -> None:
        if context not in ("python", "cli", "repr"):
            raise ValueError(f"hint is 'python', 'cli' or 'repr', not {context!r}")
        self.context = context
        self.var = "ens" if type(obj).__name__ == "Ensemble" else "tree"

    def option(self, name: str, value: Any) -> str:
        if self.context == "cli":
            return f"--{name.replace('_', '-')} {shlex.quote(str(value))}"
        return f"{name}={value!r}"

    def join(self, options: list[str]) -> str:
        if self.context == "repr":
            return f"{self.var}.render({', '.join(options)})"
        return ", ".join(options)


def render(
    obj: Tree | Ensemble,
    metric: str | None = None,
    *,
    depth: int | None = None,
    max_nodes: int | None = 100,
    threshold: float | None = 0.001,
    width: int | None = 60,
    digits: int = 3,
    second: str | None = None,
    imbalance: float | None = 0.01,
    header: bool = True,
    hint: str = "python",
) -> str:
    """An indented picture of the tree, one node per line, largest first:
    the value (scaled, with its unit), then the name.

    Args:
        metric: column of ``tree.metrics`` to show; default
            ``tree.metric_column(None)`` (``time (inc)`` unless that is all
            zero, e.g. ``gpu_time (inc)`` for a trace of GPU kernels only).
        depth: show only nodes with depth < ``depth`` (roots have depth 0).
        max_nodes: show at most this many nodes (None: no limit), the most
            significant ones (best-first from the roots).
        threshold: hide subtrees whose values all stay below this fraction of
            the root's value (the largest value where the metric does not add
            up); 0 or None hides nothing but zero-valued subtrees, which are
            folded into one line each.
        width: names longer than this lose their middle (None: never).
        digits: significant digits of the values.
        second: another metric, shown in brackets after the first.
        imbalance: for an Ensemble, show ``x<max/mean> +<max - mean>`` where
            max - mean is at least this fraction of the root's value
            (None: never).
        header: start with a line naming the metric and its unit.
        hint: how the last line says to see more: ``"python"``
            (``max_nodes=...``), ``"cli"`` (``--max-nodes ...``) or ``"repr"``
            (``tree.render(...)``).

    >>> from cctviz import Tree
    >>> t = Tree.from_parents([-1, 0, 0, 0, 3], ["main", "io", "solve", "init", "mpi_init"],
    ...     {"time": [0.5, 0.01, 2.75, 0.0, 0.0]}, meta={"units": {"time": "s"}})
    >>> print(render(t))
    # time (inc), each value with its unit (recorded in s); 5 nodes, 3 shown
     3.26 s  main
     2.75 s  ├─ solve
    10.0 ms  └─ io
    # not shown: 2 zero-valued nodes
    >>> print(render(t, threshold=0.01, header=False, hint="cli"))
    3.26 s  main
    2.75 s  └─ solve
    # not shown: 1 node below 1% of the root, 2 zero-valued nodes
    # more: --threshold 0.001
    >>> print(render(t, threshold=0, header=False))
     3.26 s  main
     2.75 s  ├─ solve
    10.0 ms  ├─ io
        0 s  └─ init  (1 zero-valued node below, folded)
    # not shown: 1 zero-valued node
    """
    from ..model.ensemble import BaseEnsemble

    ens = obj if isinstance(obj, BaseEnsemble) else None
    tree = ens.tree if ens is not None else obj
    hints = _Hint(hint, obj)
    n = len(tree)
    if n == 0:
        return "(empty tree)"
    parent = tree.parent
    node_depth = tree.depth
    col = tree.metric_column(metric) if tree.exc_metrics else None
    stats = ens.stats(col) if ens is not None and col is not None else None
    spread = stats is not None and int(np.sum(ens.live)) > 1  # type: ignore[union-attr]
    if col is None:
        vals = None
    elif stats is not None:
        # nodes no profile counts for (absence rule) show the mean tree's value (0)
        mean = stats["mean"].to_numpy(dtype=np.float64)
        vals = np.where(np.isnan(mean), tree.metrics[col].to_numpy(dtype=np.float64), mean)
    else:
        vals = tree.metrics[col].to_numpy(dtype=np.float64)
    unit = _display_unit(tree.unit(col)) if col else None
    diff_meta = tree.meta.get("diff") if isinstance(tree.meta.get("diff"), dict) else None

    # what is shown: candidates pass depth and threshold; zero subtrees fold into their top
    within = np.ones(n, dtype=bool) if depth is None else node_depth < depth
    if vals is not None:
        mag = np.abs(np.nan_to_num(vals, nan=0.0))
        submax = accumulate_up(mag, parent, tree.levels, "max")
        roots = tree.roots
        root_total = abs(float(np.nansum(vals[roots]))) if tree.is_additive(col) else 0.0
        ref = max(root_total, float(mag.max()))
        cut = (threshold or 0.0) * ref
        zero = submax == 0
        in_zero = np.zeros(n, dtype=bool)
        has_parent = parent >= 0
        in_zero[has_parent] = zero[parent[has_parent]]
        cand = within & (submax >= cut) & ~in_zero  # with cut > 0 no zero subtree passes
    else:
        mag = submax = np.zeros(n)
        ref = cut = 0.0
        zero = np.zeros(n, dtype=bool)
        cand = within
    shown = _best_first(parent, submax, cand, max_nodes)
    is_shown = np.zeros(n, dtype=bool)
    is_shown[shown] = True

    # number columns (right-aligned), the spread, the imbalance cue, then the tree
    c2 = tree.metric_column(second) if second is not None else None
    u2 = _display_unit(tree.unit(c2)) if c2 is not None else None
    cols: list[dict[str, str]] = []
    for i in shown:
        row: dict[str, str] = {}
        if vals is not None:
            row["value"] = _fmt(vals[i], unit, digits, signed=diff_meta is not None)
        if c2 is not None:
            row["second"] = f"({_fmt(tree.metrics[c2].iat[i], u2, digits)})"
        if spread:
            lo, hi = stats["min"].iat[i], stats["max"].iat[i]
            if not (np.isnan(lo) or np.isnan(hi)):
                row["min"], row["max"] = _fmt(lo, unit, digits), _fmt(hi, unit, digits)
            cost, ratio = stats["cost"].iat[i], stats["imbalance"].iat[i]
            if (
                imbalance is not None
                and np.isfinite(cost)
                and np.isfinite(ratio)
                and ref > 0
                and cost >= imbalance * ref
            ):
                row["cue"] = f"x{ratio:.2f} +{_fmt(cost, unit, digits)}"
        cols.append(row)
    keys = ("value", "second", "min", "max", "cue")
    w = {k: max((len(r.get(k, "")) for r in cols), default=0) for k in keys}
    cues = sum("cue" in r for r in cols)
    cell = {int(i): k for k, i in enumerate(shown)}
    names, end = tree.names, tree.end

    def line(i: int, prefix: str) -> str:
        row = cols[cell[i]]
        left = [row.get(k, "").rjust(w[k]) for k in ("value", "second") if w[k]]
        if spread:
            if "min" in row:
                left.append(f"[{row['min']:>{w['min']}} .. {row['max']:>{w['max']}}]")
            else:
                left.append(" " * (w["min"] + w["max"] + 6))
        if w["cue"]:
            left.append(row.get("cue", "").ljust(w["cue"]))
        text = " ".join(left) + ("  " if left else "") + prefix + ellipsize(names[i], width)
        if vals is not None and zero[i] and end[i] - i > 1:
            k = int(end[i] - i - 1)
            text += f"  ({k} zero-valued node{'s' * (k != 1)} below, folded)"
        return text

    lines: list[str] = []
    if header:
        lines += _header(tree, ens, col, second, diff_meta, n, len(shown), cues, imbalance, spread)
    kids: dict[int, list[int]] = {}
    for i in sorted(shown):
        kids.setdefault(int(parent[i]), []).append(i)
    for lst in kids.values():
        lst.sort(key=lambda i: (-mag[i], i))
    stack: list[tuple[int, str, str]] = [(r, "", "") for r in reversed(kids.get(-1, []))]
    while stack:
        i, prefix, pad = stack.pop()
        lines.append(line(i, prefix))
        ch = kids.get(i, [])
        for k, c in reversed(list(enumerate(ch))):
            last = k == len(ch) - 1
            stack.append((c, pad + ("└─ " if last else "├─ "), pad + ("   " if last else "│  ")))
    footer = _footer(
        tree, col, is_shown, zero, submax, cut, within, depth, max_nodes, threshold, hints
    )
    if footer:
        lines.append(footer)
    return "\n".join(lines)


def _best_first(
    parent: np.ndarray, priority: np.ndarray, cand: np.ndarray, max_nodes: int | None
) -> list[int]:
    """Up to ``max_nodes`` candidates, expanded from the roots by largest
    ``priority`` first (ties: smaller id); every shown node's parent is shown."""
    # a candidate whose parent is not one cannot be reached
    ok = cand
    order, start = children_csr(parent)
    frontier = [int(r) for r in order[: start[1]] if ok[r]]
    if max_nodes is None or ok.sum() <= max_nodes:
        out = []
        while frontier:
            i = frontier.pop()
            out.append(i)
            frontier += [int(c) for c in order[start[i + 1] : start[i + 2]] if ok[c]]
        return sorted(out)
    heap = [(-float(priority[r]), r) for r in frontier]
    heapq.heapify(heap)
    out = []
    while heap and len(out) < max_nodes:
        _, i = heapq.heappop(heap)
        out.append(i)
        for c in order[start[i + 1] : start[i + 2]]:
            if ok[c]:
                heapq.heappush(heap, (-float(priority[c]), int(c)))
    return sorted(out)


def _header(
    tree: Tree,
    ens: Ensemble | None,
    col: str | None,
    second: str | None,
    diff_meta: dict | None,
    n: int,
    n_shown: int,
    cues: int,
    imbalance: float | None,
    spread: bool,
) -> list[str]:
    if col is None:
        return [f"# no metrics; {n} nodes, {n_shown} shown"]
    what = _header_label(col, tree.units)
    if second is not None:
        what += f" ({_header_label(tree.metric_column(second), tree.units)} in brackets)"
    runs = 1
    if ens is not None:
        live = int(np.sum(ens.live))
        runs = len(np.unique(np.asarray(ens.run_ids)[np.asarray(ens.live, dtype=bool)]))
        of = f"{live} of {ens.n_profiles}" if live != ens.n_profiles else f"{ens.n_profiles}"
        what += f", mean over {of} profile{'s' * (ens.n_profiles != 1)}"
        what += f" of {runs} runs" if runs > 1 else ""
        what += " [min .. max]" if spread else ""
    if diff_meta is not None:
        what += f", difference a - b (a = {diff_meta.get('a')}, b = {diff_meta.get('b')})"
    lines = [f"# {what}; {n} nodes, {n_shown} shown"]
    if cues:
        # across several runs the spread mixes runs: it is no one run's load imbalance
        ratio = (
            f"max/mean over the profiles of all {runs} runs (a spread across runs, not a"
            " load imbalance)"
            if runs > 1
            else "imbalance max/mean"
        )
        lines.append(
            f"# xR +C: {ratio} and its cost max - mean, shown where that cost is"
            f" >= {_percent(imbalance or 0)} of the root"
        )
    return lines


def _footer(
    tree: Tree,
    col: str | None,
    is_shown: np.ndarray,
    zero: np.ndarray,
    submax: np.ndarray,
    cut: float,
    within: np.ndarray,
    depth: int | None,
    max_nodes: int | None,
    threshold: float | None,
    hints: _Hint,
) -> str:
    hidden = ~is_shown
    if not hidden.any():
        return ""
    n_zero = int(np.sum(hidden & zero))
    below = hidden & ~zero & (submax < cut)
    deep = hidden & ~zero & ~below & ~within
    over = hidden & ~zero & ~below & ~deep
    n_below, n_deep, n_over = int(below.sum()), int(deep.sum()), int(over.sum())

    def nodes(k: int) -> str:
        return f"{k} node{'s' * (k != 1)}"

    parts = []
    if n_over:
        parts.append(f"{nodes(n_over)} over the limit of {max_nodes}")
    if n_below:
        parts.append(f"{nodes(n_below)} below {_percent(threshold or 0)} of the root")
    if n_deep:
        parts.append(f"{nodes(n_deep)} deeper than depth {depth}")
    if n_zero:
        z = f"{n_zero} zero-valued node{'s' * (n_zero != 1)}"
        other = _nonzero_elsewhere(tree, col, hidden & zero, hints)
        if other:
            z += f" ({other})"
        parts.append(z)
    more = []
    if n_over and max_nodes is not None:
        more.append(hints.option("max_nodes", min(int(is_shown.sum()) + n_over, 4 * max_nodes)))
    if n_below and threshold:
        more.append(hints.option("threshold", float(f"{threshold / 10:.3g}")))
    if n_deep and depth is not None:
        more.append(hints.option("depth", depth + 2))
    text = "# not shown: " + ", ".join(parts)
    if more:
        text += "\n# more: " + hints.join(more)
    return text


def _nonzero_elsewhere(tree: Tree, col: str | None, mask: np.ndarray, hints: _Hint) -> str:
    """Where zero-valued nodes of ``col`` have values in another metric of the
    same kind (GPU kernels: zero CPU time, some GPU time): say which, and how
    to show it."""
    if col is None or not mask.any():
        return ""
    base = base_metric(col)[0]
    dim = _units.dimension(tree.units.get(base))
    if dim is None:
        return ""
    for m in tree.exc_metrics:
        if m == base or _units.dimension(tree.units.get(m)) != dim:
            continue
        v = tree.metrics[m].to_numpy(dtype=np.float64)[mask]
        k = int(np.sum(np.nan_to_num(v) != 0))
        if k:
            c = m if tree.rule(m) == "none" else f"{m} (inc)"
            return f"{k} of them with {m}: {hints.join([hints.option('metric', c)])}"
    return ""


def describe(obj: Any) -> dict[str, Any]:
    """Facts for ``cctviz info``: nodes, metrics with their units, rules and
    totals, profiles and runs (numbers raw, as JSON wants them;
    :func:`format_info` shows them to people)."""
    from ..model.ensemble import BaseEnsemble

    ens = obj if isinstance(obj, BaseEnsemble) else None
    tree = ens.tree if ens is not None else obj
    out: dict[str, Any] = {
        "type": type(obj).__name__,
        "nodes": len(tree),
        "roots": int(len(tree.roots)),
        "depth": len(tree.levels),
        "metrics": tree.exc_metrics,
        "units": tree.units,
        "aggregation": tree.aggregation,
        "totals": _totals(tree),
        "format": tree.meta.get("format"),
    }
    if ens is not None:
        out["profiles"] = ens.n_profiles
        out["live profiles"] = int(np.sum(ens.live))
        out["rows"] = ens.n_rows
        prof = ens.profiles
        if "run" in prof.columns:
            counts = prof.groupby("run", sort=False, dropna=False).size()
            out["runs"] = {str(k): int(v) for k, v in counts.items()}
        else:
            out["runs"] = {"": ens.n_profiles} if ens.n_profiles else {}
        out["profile columns"] = list(prof.columns)
    if isinstance(tree.meta.get("diff"), dict):
        d = tree.meta["diff"]
        out["diff"] = {"a": d.get("a"), "b": d.get("b")}
    return out


def _totals(tree: Tree) -> dict[str, float | None]:
    """Each metric's value over the whole tree: the roots' inclusive values
    combined by the metric's rule (for an Ensemble's mean tree: per-profile
    means); None for ``"none"`` metrics."""
    out: dict[str, float | None] = {}
    roots = tree.roots
    for m, rule in tree.aggregation.items():
        if rule == "none" or not len(roots):
            out[m] = None
            continue
        v = tree.metrics[f"{m} (inc)"].to_numpy(dtype=np.float64)[roots]
        if np.all(np.isnan(v)):
            out[m] = None
        elif rule == "sum":
            out[m] = float(np.nansum(v))
        else:
            out[m] = float(np.nanmax(v) if rule == "max" else np.nanmin(v))
    return out


def format_info(info: dict[str, Any], digits: int = 3) -> str:
    """:func:`describe`'s facts as text, numbers with their units.

    >>> from cctviz import Tree
    >>> t = Tree.from_parents([-1, 0], ["main", "f"], {"time": [0.5, 1.25], "mem": [1e6, 3e6]},
    ...     meta={"units": {"time": "s", "mem": "B"}, "aggregation": {"mem": "max"}})
    >>> print(format_info(describe(t)))
    Tree: 2 nodes, 1 root, depth 2
    metric  unit  rule  total
    time    s     sum   1.75 s
    mem     B     max   3.00 MB
    """
    lines = []
    fmt = f" ({info['format']})" if info.get("format") else ""
    nodes = info["nodes"]
    roots = info["roots"]
    lines.append(
        f"{info['type']}{fmt}: {nodes} node{'s' * (nodes != 1)}, {roots} root{'s' * (roots != 1)}"
        f", depth {info['depth']}"
    )
    if "profiles" in info:
        live = info.get("live profiles", info["profiles"])
        runs = info.get("runs") or {}
        ok = f" ({live} ok)" if live != info["profiles"] else ""
        lines.append(
            f"profiles: {info['profiles']}{ok} in {len(runs)} run{'s' * (len(runs) != 1)}"
            f", {info['rows']} (node, profile) rows"
        )
        shown = list(runs.items())[:10]
        for name, k in shown:
            if name:
                lines.append(f"  run {name}: {k} profile{'s' * (k != 1)}")
        if len(runs) > len(shown):
            lines.append(f"  ... {len(runs) - len(shown)} more runs")
        lines.append("profile columns: " + ", ".join(map(str, info["profile columns"])))
    if "diff" in info:
        lines.append(f"difference a - b: a = {info['diff']['a']}, b = {info['diff']['b']}")
    if info["metrics"]:
        table = [("metric", "unit", "rule", "total")]
        for m in info["metrics"]:
            u = info["units"].get(m)
            unit = _units.canonical(u) or ("unknown" if _units.looks_measured(m) else "-")
            total = info["totals"].get(m)
            shown_total = "-" if total is None else _fmt(total, _display_unit(u), digits)
            table.append((m, unit, info["aggregation"].get(m, "sum"), shown_total))
        w = [max(len(r[k]) for r in table) for k in range(3)]
        for r in table:
            lines.append(f"{r[0]:<{w[0]}}  {r[1]:<{w[1]}}  {r[2]:<{w[2]}}  {r[3]}".rstrip())
        if "profiles" in info:
            lines.append("(totals: the mean over profiles)")
    else:
        lines.append("no metrics")
    return "\n".join(lines)
