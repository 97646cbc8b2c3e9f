"""TAU profile folders (``profile.N.C.T`` files, one per rank N, context C, thread T).

:func:`read_tau` takes the folder (or one of its ``profile.*`` files) and
returns an :class:`~cctviz.Ensemble` with one profile per file.

Format facts (TAU's text profile format):

- line 1: ``<n> templated_functions[_MULTI_<METRIC>]``;
- line 2: ``# Name Calls Subrs Excl Incl ProfileCalls #`` followed by
  ``<metadata>`` XML (``<attribute><name>..</name><value>..</value></attribute>``);
- ``n`` timer lines ``"<name>" calls subrs excl incl profilecalls GROUP="<groups>"``;
  with ``TAU_CALLPATH=on`` a call path is a timer named ``a => b => c``
  (``excl``/``incl`` of ``c`` in that context); other timers are flat totals;
- then ``<m> aggregates`` (+ m lines) and ``<k> userevents`` (a header and k
  lines of ``"<event>" numevents max min mean sumsqr``);
- with several metrics the folder holds one ``MULTI__<METRIC>`` sub-folder per
  metric, each with the same ``profile.*`` files.

Choices:

- The tree is built from the ``=>`` call paths (missing intermediate paths
  become zero-valued nodes); the roots' own values come from their flat
  timer. A profile without call paths (``TAU_CALLPATH=off``, TAU's default)
  is a forest of flat timers, one root each, but for parameter timers
  (``MPI_Send()  [ <message size> = <1024> ]``, ``TAU_TRACK_PARAMS``), which
  go under their base timer (started inside it). Its inclusive values cannot
  be derived (no call path says what is inside what): TAU's own ``Incl`` is
  kept as ``TAU inclusive time`` (per metric; rule ``"none"``, the metric's
  unit), beside the derived ``time (inc)``.
- Metrics: ``time`` (TAU's ``TIME``/``CPU_TIME`` metric, as Hatchet names it;
  other metrics keep TAU's name) is the exclusive value ``Excl``; inclusive
  values are derived from the tree and equal TAU's ``Incl`` when the call paths
  are complete. ``calls`` is the number of calls (its "(inc)" sum is a count of
  calls in the subtree). Both are ``"sum"`` metrics (``meta["aggregation"]``).
  ``Subrs`` (calls made to other timers: the children's ``calls`` when the
  call paths are complete) and ``ProfileCalls`` are not kept.
- Units: the files state none. TAU's time metrics (``TIME``, ``CPU_TIME``, any
  metric named ``*TIME*``/``*CLOCK*``) count microseconds (pprof shows them
  divided by 1,000 as "msec" and per call as "usec/call"): ``meta["units"]``
  says ``us`` and ``meta["units_assumed"]`` why. Hardware counters have none.
- User events (``"<event>" numevents max min mean sumsqr``) become four
  metrics per event: ``"<event> (count)"`` (a sum), ``(max)`` (a max),
  ``(min)`` (a min) and ``(mean)`` (``"none"``: a mean does not combine);
  ``max``/``min``/``mean`` are NaN where the event never fired. A context
  event (``"<event> : a => b"``) sits on the node of its call path; an
  atomic one (no context) belongs to the whole run, on the
  ``.TAU application`` root (the only root when there is no such timer). In
  a call-path profile, the event of a flat timer (``"<event> : b"``) is the
  total of its call-path events and is left out; with no call-path event
  for it, it has no place, and a warning names it. Sizes: an event named
  ``... (KB)``/``(MB)``/``(GB)`` (units of 1,024 bytes) is converted to
  bytes and named without the suffix; a ``Message size`` event is bytes
  (assumed). ``sumsqr`` is not kept. ``aggregates`` are not read (a
  warning says so when a file has any).
- A timer name ``foo [{file.c} {12,1}-{30,1}]`` gives node ``foo`` with
  ``file``/``line``/``end_line`` columns; a trailing `` C`` (C function) is
  dropped. ``group`` keeps TAU's groups (without ``TAU_CALLPATH``); timers in
  the ``MPI`` group are of kind ``comm``.
- Run metadata (executable, command, TAU version) from the first profile goes
  to ``meta``; ``hostname`` becomes a column of ``ens.profiles``.
"""

from __future__ import annotations

import html
import re
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import ProfileError
from ..model.ensemble import Ensemble
from ..model.tree import Tree
from . import register

_FILE = re.compile(r"^profile\.(\d+)\.(\d+)\.(\d+)$")
_FIRST = re.compile(rb"^\s*(\d+)\s+templated_functions(?:_MULTI_(\S*))?\s*$")
_LINE = (
    r'^"(?P<name>.*)"\s+(?P<calls>\S+)\s+(?P<subrs>\S+)\s+(?P<excl>\S+)\s+(?P<incl>\S+)'
    r'\s+(?P<pcalls>\S+)\s+GROUP="(?P<group>[^"]*)"\s*$'
)
_ATTR = re.compile(r"<attribute><name>(.*?)</name><value>(.*?)</value></attribute>", re.S)
_LOC = re.compile(
    r"^(?P<name>.*?)\s*\[\{(?P<file>[^}]*)\}\s*\{(?P<line>\d+)(?:,\d+)?\}"
    r"(?:-\{(?P<end>\d+)(?:,\d+)?\})?\]\s*$"
)
_EVENT = re.compile(
    r'^"(?P<name>.*)"\s+(?P<n>\S+)\s+(?P<max>\S+)\s+(?P<min>\S+)\s+(?P<mean>\S+)\s+\S+\s*$'
)
#: a parameter timer: the base timer's name, then ``[ <param> = <value> ]`` pairs
_PARAM = re.compile(r"^(?P<base>.*?\S)\s*(?:\[\s*<[^>]*>\s*=\s*<[^>]*>\s*\]\s*)+$")
TIME_METRICS = {"TIME": "time", "CPU_TIME": "time"}
US_REASON = (
    "TAU profiles state no unit; TAU's time metrics count microseconds "
    "(pprof shows these values divided by 1,000 as 'msec', and per call as 'usec/call')"
)
BYTES_REASON = "TAU's message-size events record bytes (the event name says no unit)"
#: what a user event gives, per node: (suffix, column of the file, rule)
EVENT_STATS = (("count", 0, "sum"), ("max", 1, "max"), ("min", 2, "min"), ("mean", 3, "none"))
_SIZE_SUFFIX = re.compile(r"^(?P<base>.*?)\s*\((?P<unit>KB|MB|GB)\)\s*$")
_KIB = {"KB": 1024.0, "MB": 1024.0**2, "GB": 1024.0**3}
RUN_META = {"Executable": "executable", "Command Line": "command", "TAU Version": "tau_version"}
SEP = "=>"


def _is_profile_file(p: Path, head: bytes | None = None) -> bool:
    if not _FILE.match(p.name) or not p.is_file():
        return False
    if head is None:
        with open(p, "rb") as f:
            head = f.read(256)
    return bool(_FIRST.match(head.split(b"\n", 1)[0]))


def _folder(path: Path) -> Path:
    folder = path.parent if path.is_file() else path
    return folder.parent if folder.name.startswith("MULTI__") else folder


def _metric_folders(folder: Path) -> list[Path]:
    multi = sorted(d for d in folder.glob("MULTI__*") if d.is_dir())
    return multi or [folder]


def _sniff(path: Path, h: bytes) -> bool:
    if path.is_dir():
        for d in _metric_folders(path):
            files = sorted(f for f in d.iterdir() if _FILE.match(f.name))
            if files:
                return _is_profile_file(files[0])
        return False
    return _is_profile_file(path, h)


def _fail(path: Path, problem: str, line: int) -> ProfileError:
    return ProfileError(path, problem, where=f"line {line}")


def _parse(path: Path) -> dict[str, Any]:
    """One ``profile.N.C.T`` file: metric name, timer table, metadata."""
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise ProfileError(path, f"cannot read the file: {e}") from None
    lines = raw.decode("utf-8", errors="replace").split("\n")
    m = _FIRST.match(lines[0].encode())
    if not m:
        raise _fail(path, "expected '<n> templated_functions' (a TAU profile)", 1)
    n = int(m.group(1))
    if len(lines) < 2 or not lines[1].startswith("# Name Calls Subrs Excl Incl"):
        raise _fail(path, "expected the header '# Name Calls Subrs Excl Incl ProfileCalls #'", 2)
    attrs = {html.unescape(k): html.unescape(v) for k, v in _ATTR.findall(lines[1])}
    metric = attrs.get("Metric Name") or m.group(2) or "TIME"
    if len(lines) < 2 + n + 1:
        raise _fail(path, f"the file ends after {len(lines) - 2} of {n} timer lines", len(lines))
    body = pd.Series(lines[2 : 2 + n], dtype=object)
    tab = body.str.extract(_LINE)
    bad = tab["name"].isna()
    if bad.any():
        k = int(np.flatnonzero(bad.to_numpy())[0])
        raise _fail(
            path,
            'expected \'"<name>" calls subrs excl incl profilecalls GROUP="<groups>"\', '
            f"got {body.iloc[k][:80]!r}",
            k + 3,
        )
    for c in ("calls", "subrs", "excl", "incl"):
        v = pd.to_numeric(tab[c], errors="coerce")
        badv = v.isna() | ~np.isfinite(v.to_numpy(dtype=float, na_value=np.nan))
        if badv.any():
            k = int(np.flatnonzero(badv.to_numpy())[0])
            raise _fail(path, f"{c} value {tab[c].iloc[k]!r} is not a number", k + 3)
        tab[c] = v.astype(np.float64)
    # trailer: aggregates and user events (checked, so a cut file is an error)
    k = 2 + n
    am = re.match(r"^\s*(\d+)\s+aggregates\s*$", lines[k])
    if not am:
        raise _fail(path, f"expected '<m> aggregates' after the {n} timers", k + 1)
    n_agg = int(am.group(1))
    k += 1 + n_agg
    events: list[tuple[str, int, list[float]]] = []  # (name, line, [numevents, max, min, mean])
    if k < len(lines) and lines[k].strip():
        um = re.match(r"^\s*(\d+)\s+userevents\s*$", lines[k])
        if not um:
            raise _fail(path, "expected '<k> userevents'", k + 1)
        n_ev = int(um.group(1))
        ev_lines = lines[k + 2 : k + 2 + n_ev]
        if n_ev and (len(ev_lines) < n_ev or not all(e.startswith('"') for e in ev_lines)):
            raise _fail(path, f"expected {n_ev} user event lines", k + 2 + len(ev_lines))
        for j, e in enumerate(ev_lines):
            m = _EVENT.match(e)
            if not m:
                raise _fail(path, "expected '\"<event>\" numevents max min mean sumsqr'", k + 3 + j)
            try:
                vals = [float(m.group(g)) for g in ("n", "max", "min", "mean")]
            except ValueError:
                raise _fail(path, "a user event value is not a number", k + 3 + j) from None
            events.append((m.group("name"), k + 3 + j, vals))
    return {"metric": metric, "table": tab, "meta": attrs, "aggregates": n_agg, "events": events}


def _split_name(timer: str) -> tuple[str, str | None, int | None, int | None]:
    s = timer.strip()
    m = _LOC.match(s)
    file = line = end = None
    if m:
        s, file, line = m.group("name"), m.group("file"), int(m.group("line"))
        end = int(m.group("end")) if m.group("end") else None
    if s.endswith(" C"):
        s = s[:-2].rstrip()
    return s, file, line, end


def inclusive_name(metric: str) -> str:
    """The metric that keeps TAU's own inclusive value in a flat profile.

    >>> inclusive_name("time"), inclusive_name("PAPI_TOT_CYC")
    ('TAU inclusive time', 'TAU inclusive PAPI_TOT_CYC')
    """
    return f"TAU inclusive {metric}"


def _param_parents(label: list[str]) -> list[int]:
    """Parents of a flat profile's timers: a parameter timer
    (``MPI_Send()  [ <message size> = <1024> ]``, TAU's parameter profiling)
    under its base timer when the profile has it; every other timer a root."""
    base_at: dict[str, int] = {}
    for i, nm in enumerate(label):
        base_at.setdefault(nm, i)
    parent = [-1] * len(label)
    for i, nm in enumerate(label):
        m = _PARAM.match(nm)
        if m:
            parent[i] = base_at.get(m.group("base").strip(), -1)
    return parent


def _event_metrics(
    events: list[tuple[str, int, list[float]]],
    ids: dict[tuple[str, ...], int],
    root_of: dict[str, int],
    flat_names: set[str],
    n: int,
) -> tuple[dict[str, np.ndarray], dict[str, str], dict[str, str], dict[str, str], list[str]]:
    """User events as node metrics (see the module docstring).

    Returns the metrics, their rules, units, assumed units, and the events no
    node could take.
    """
    main = root_of.get(".TAU application")
    if main is None and len(root_of) == 1:
        main = next(iter(root_of.values()))
    placed: list[tuple[str, int, list[float]]] = []  # (event, node, values)
    totals: list[str] = []  # events of a flat timer in a call-path profile
    dropped: list[str] = []
    for name, _line, vals in events:
        where: int | None = None
        base = name.strip()
        kind = "atomic"
        parts = name.split(" : ")
        for k in range(len(parts) - 1, 0, -1):  # context events: "EVENT : a => b"
            ctx = tuple(x.strip() for x in " : ".join(parts[k:]).split(SEP))
            if ctx in ids:
                where, base, kind = ids[ctx], " : ".join(parts[:k]).strip(), "context"
                break
            if len(ctx) == 1 and ctx[0] in flat_names:
                base, kind = " : ".join(parts[:k]).strip(), "flat"
                break
        if kind == "flat":
            totals.append(base)
            continue
        if kind == "atomic":
            where = main
        if where is None:
            dropped.append(name.strip())
            continue
        placed.append((base, where, vals))
    # a flat timer's event is the total of its call-path events: left out when those
    # are here, else it has no place in the tree
    have = {b for b, _, _ in placed}
    dropped += [b for b in dict.fromkeys(totals) if b not in have]
    acc: dict[str, dict[int, list[float]]] = {}  # base -> node -> [count, max, min, count*mean]
    for base, where, (cnt, mx, mn, mean) in placed:
        a = acc.setdefault(base, {}).setdefault(where, [0.0, -np.inf, np.inf, 0.0])
        a[0] += cnt
        a[1], a[2] = max(a[1], mx), min(a[2], mn)
        a[3] += cnt * mean
    metrics: dict[str, np.ndarray] = {}
    rules: dict[str, str] = {}
    units: dict[str, str] = {}
    assumed: dict[str, str] = {}
    for base, per_node in acc.items():
        m = _SIZE_SUFFIX.match(base)
        label, scale, unit, why = base, 1.0, None, None
        if m:
            label, scale, unit = m.group("base"), _KIB[m.group("unit")], "B"
            why = (
                f"TAU's '({m.group('unit')})' counts units of 1,024 bytes; "
                "converted to bytes (the name without the suffix)"
            )
        elif "message size" in base.lower():
            unit, why = "B", BYTES_REASON
        cols = {stat: np.full(n, 0.0 if rule == "sum" else np.nan) for stat, _, rule in EVENT_STATS}
        for where, (cnt, mx, mn, tot) in per_node.items():
            cols["count"][where] = cnt
            if cnt > 0:
                cols["max"][where], cols["min"][where] = mx * scale, mn * scale
                cols["mean"][where] = tot / cnt * scale
        for stat, _, rule in EVENT_STATS:
            col = f"{label} ({stat})"
            metrics[col] = cols[stat]
            rules[col] = rule
            if unit and stat != "count":
                units[col] = unit
                assumed[col] = why  # type: ignore[assignment]
    return metrics, rules, units, assumed, dropped


def _tree(
    path: Path,
    tables: dict[str, pd.DataFrame],
    events: list[tuple[str, int, list[float]]],
    units: dict[str, str],
    assumed: dict[str, str],
) -> tuple[Tree, list[str]]:
    """The calling-context tree of one rank from its timer tables (one per metric)
    and user events; also the events it has no place for."""
    first = next(iter(tables.values()))
    names = first["name"].to_numpy()
    is_path = np.array([SEP in s for s in names], dtype=bool)
    ids: dict[tuple[str, ...], int] = {}
    parent: list[int] = []
    label: list[str] = []

    def node(p: tuple[str, ...]) -> int:
        if p in ids:
            return ids[p]
        par = node(p[:-1]) if len(p) > 1 else -1
        ids[p] = len(parent)
        parent.append(par)
        label.append(p[-1])
        return ids[p]

    if is_path.any():
        row_node = np.full(len(names), -1, dtype=np.int64)
        for r in np.flatnonzero(is_path):
            p = tuple(x.strip() for x in names[r].split(SEP))
            if any(not x for x in p):
                raise ProfileError(path, f"empty name in call path {names[r]!r}", f"line {r + 3}")
            row_node[r] = node(p)
        roots = {p[0]: i for p, i in ids.items() if len(p) == 1}
        for r in np.flatnonzero(~is_path):
            nm = names[r].strip()
            if nm in roots:
                row_node[r] = roots.pop(nm)
    else:  # flat profile: one root per timer, parameter timers under their base
        row_node = np.arange(len(names), dtype=np.int64)
        label = [nm.strip() for nm in names]
        parent = _param_parents(label)
    n = len(parent)
    used = row_node >= 0
    metrics: dict[str, np.ndarray] = {}
    for metric, tab in tables.items():
        metrics[metric] = np.bincount(
            row_node[used], weights=tab["excl"].to_numpy()[used], minlength=n
        )
    metrics["calls"] = np.bincount(
        row_node[used], weights=first["calls"].to_numpy()[used], minlength=n
    )
    rules = {m: "sum" for m in metrics}  # exclusive times and counts add up
    if not is_path.any():  # TAU's Incl: no call path to derive it from
        for metric, tab in tables.items():
            col = inclusive_name(metric)
            metrics[col] = tab["incl"].to_numpy(dtype=np.float64)
            rules[col] = "none"
            if metric in units:
                units = {**units, col: units[metric]}
                assumed = {**assumed, col: assumed[metric]}
    root_of = {label[i]: i for i in range(n) if parent[i] < 0}
    if is_path.any():
        places, flat_names = ids, {nm.strip() for nm in names[~is_path]}
    else:  # a flat profile: every timer is a node of its own
        places, flat_names = {(nm,): i for i, nm in enumerate(label)}, set()
    ev, ev_rules, ev_units, ev_assumed, dropped = _event_metrics(
        events, places, root_of, flat_names, n
    )
    metrics.update(ev)
    rules.update(ev_rules)
    meta: dict[str, Any] = {"aggregation": rules}
    if units or ev_units:
        meta["units"] = {**units, **ev_units}
    if assumed or ev_assumed:
        meta["units_assumed"] = {**assumed, **ev_assumed}
    split = [_split_name(t) for t in label]
    group = np.full(n, None, dtype=object)
    g = first["group"].to_numpy()
    for r in np.flatnonzero(used):
        group[row_node[r]] = "|".join(x for x in g[r].split("|") if x != "TAU_CALLPATH")
    kind = np.array(
        ["comm" if gr and "MPI" in gr.split("|") else "function" for gr in group], dtype=object
    )
    columns = {
        "file": np.array([s[1] for s in split], dtype=object),
        "line": np.array([s[2] for s in split], dtype=object),
        "end_line": np.array([s[3] for s in split], dtype=object),
        "group": group,
    }
    tree = Tree.from_parents(
        np.asarray(parent, dtype=np.int64),
        np.array([s[0] for s in split], dtype=object),
        metrics,
        kind=kind,
        columns=columns,
        meta=meta,
    )
    return tree, dropped


@register("tau", _sniff, "TAU profile folder (profile.N.C.T files)", folder=True)
def read_tau(path: Path) -> Ensemble:
    """Read a TAU profile folder (or one of its ``profile.N.C.T`` files) into an Ensemble.

    One profile per file (``ens.profiles`` columns ``rank``, ``context``,
    ``thread``), metrics ``time`` (usec), ``calls`` and four per user event
    (see the module docstring).

    Example:
        >>> import cctviz
        >>> ens = cctviz.read("../shared/data/hatchet/tau-cpi-mpi")
        >>> ens.n_profiles, len(ens.tree), ens.tree.units["time"]
        (4, 12, 'us')
        >>> ens.aggregation["Message size for reduce (max)"]
        'max'
        >>> ens.profile(rank=0).metrics.loc[0, ["time", "time (inc)"]].tolist()
        [449.0, 51781.0]
    """
    path = Path(path)
    folder = _folder(path)
    mfolders = _metric_folders(folder)
    per_metric: list[dict[tuple[int, int, int], Path]] = []
    for d in mfolders:
        found = {}
        for f in d.iterdir():
            m = _FILE.match(f.name)
            if m and f.is_file():
                found[tuple(int(x) for x in m.groups())] = f
        if not found:
            raise ProfileError(d, "no profile.N.C.T file in the folder")
        per_metric.append(found)
    keys = sorted(per_metric[0])
    for d, found in zip(mfolders[1:], per_metric[1:]):
        if sorted(found) != keys:
            miss = sorted(set(keys) ^ set(found))[0]
            raise ProfileError(
                d, f"profile.{'.'.join(map(str, miss))} is in one metric folder only"
            )
    trees: list[Tree] = []
    prof: list[dict[str, Any]] = []
    run_meta: dict[str, Any] = {}
    dropped: dict[str, list[str]] = {}  # event -> files
    aggregates: list[str] = []
    for key in keys:
        tables: dict[str, pd.DataFrame] = {}
        units: dict[str, str] = {}
        assumed: dict[str, str] = {}
        meta0: dict[str, str] = {}
        ref: pd.Series | None = None
        events: list[tuple[str, int, list[float]]] = []
        for found in per_metric:
            f = found[key]
            rec = _parse(f)
            if rec["aggregates"]:
                aggregates.append(f.name)
            name = TIME_METRICS.get(rec["metric"], rec["metric"])
            if name in tables:
                raise ProfileError(f, f"metric {rec['metric']!r} appears in two metric folders")
            if ref is None:  # the first metric's file: its user events are every file's
                ref, meta0, events = rec["table"]["name"], rec["meta"], rec["events"]
            elif not rec["table"]["name"].equals(ref):
                raise ProfileError(f, "the timers differ from the first metric's file of this rank")
            tables[name] = rec["table"]
            if name == "time" or re.search(r"TIME|CLOCK", rec["metric"]):
                units[name] = "us"
                assumed[name] = US_REASON
        tree, lost = _tree(found[key], tables, events, units, assumed)
        trees.append(tree)
        for e in lost:
            dropped.setdefault(e, []).append(found[key].name)
        row: dict[str, Any] = {"rank": key[0], "context": key[1], "thread": key[2]}
        host = meta0.get("Hostname") or meta0.get("Node Name")
        if host:
            row["hostname"] = host
        prof.append(row)
        if not run_meta:
            run_meta = {v: meta0[k] for k, v in RUN_META.items() if k in meta0}
    meta: dict[str, Any] = dict(run_meta)  # (concat gathers the ranks' units_assumed)
    if dropped:
        listing = "; ".join(
            f"{e!r} ({', '.join(fs[:3])}{', ...' if len(fs) > 3 else ''})"
            for e, fs in dropped.items()
        )
        warnings.warn(
            f"{folder}: user events with no place in the call tree (the context of a flat "
            f"timer, or no '.TAU application' root) were left out: {listing}",
            stacklevel=3,
        )
    if aggregates:
        warnings.warn(
            f"{folder}: TAU 'aggregates' are not read (in {', '.join(aggregates[:3])})",
            stacklevel=3,
        )
    profiles = pd.DataFrame(prof)
    if (profiles["context"] == 0).all():
        profiles = profiles.drop(columns="context")
    return Ensemble.from_trees(trees, profiles, meta)
