"""A run folder written by the runtime (``cctviz run`` or ``cctviz.profile``).

``DIR/run.json`` (world size, backend, strategy, command line, ...) and one
``DIR/rank-NNNNN.cctviz`` per rank. The result is an Ensemble with one
profile per rank of the world, in rank order. Ranks whose file is missing
(killed before writing) or unreadable (truncated) are still profiles, with
no rows, ``ok=False`` and the reason in ``status``/``problem``; ranks that
wrote after an exception or a signal are ``ok=False`` too, with the status
they recorded. A warning names them. The folder's names and rules are
:mod:`cctviz.model.formats`, shared with the runtime that writes it.

Example::

    ens = cctviz.read("runs/gpt-ddp")
    ens.profiles[["rank", "status", "ok"]]
    ens.select(ens.profiles["ok"])       # the complete ranks only
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import ProfileError
from ..model.ensemble import Ensemble
from ..model.formats import (
    RANK_GLOB,
    RUN_FILE,
    TIMELINE_FACTS,
    rank_file,
    rank_of,
    world_size,
)
from ..model.tree import Tree
from . import register, register_timeline

_PROFILE_META = (
    "component",  # a workflow's processes (cctviz run --workflow)
    "component_rank",
    "local_rank",
    "hostname",
    "pid",
    "device",
    "backend",
    "world_size",
    "strategy",
    "mode",
    "steps",
    *TIMELINE_FACTS,  # traced runs: how much of the rank its trace holds
)
#: what the runtime records of the model, the same on every rank: kept in the
#: ensemble's meta for the performance models (cctviz.perfmodel)
_MODEL_META = ("model_spec", "params", "model", "bucket_bytes")


def _sniff(path: Path, head: bytes) -> bool:
    if not path.is_dir():
        return False
    return (path / RUN_FILE).is_file() or any(
        rank_of(p.name) is not None for p in path.glob(RANK_GLOB)
    )


def _run_info(path: Path) -> dict:
    p = path / RUN_FILE
    if not p.exists():
        return {}
    try:
        info = json.loads(p.read_text())
    except (OSError, ValueError) as e:
        warnings.warn(
            f"{p}: unreadable run metadata ({e}); using the rank files only", stacklevel=3
        )
        return {}
    return info if isinstance(info, dict) else {}


#: where ``cctviz run --timeline`` (``cctviz.profile(timeline=True)``) traces a run
TIMELINE_DIR = "timeline"


@register_timeline("cctviz-run")
def read_run_timeline(path: Path, **kw: object):
    """The timeline of a traced run: its ``timeline/`` trace (``cctviz run
    --timeline``) or the ``--trace`` folder its run.json names."""
    from . import read_timeline  # the registry: the trace is an OTF2 archive

    candidates = [path / TIMELINE_DIR]
    named = _run_info(path).get("trace")
    if named:
        candidates += [Path(named), path.parent / named, path / named]
    for c in candidates:
        if (c / "traces.otf2").is_file():
            return _with_samples(path, read_timeline(c, **kw))
    raise ProfileError(
        path,
        "this run was not traced: run it with `cctviz run --timeline` (or --trace DIR), "
        "or give cctviz.profile(timeline=True)",
    )


@register("cctviz-run", _sniff, "cctviz runtime run folder (run.json + rank-N.cctviz)", folder=True)
def read_run(path: Path) -> Ensemble:
    """Read a run folder into an Ensemble of ranks (missing or damaged ranks flagged)."""
    from . import read  # the registry: the rank files are native profiles

    info = _run_info(path)
    files = {r: p for p in path.iterdir() if (r := rank_of(p.name)) is not None}
    world = world_size(info, files)
    if world == 0:
        raise ProfileError(path, "a run folder without run.json world size or rank files")
    trees: list[Tree] = []
    rank_of_tree: list[int] = []
    rows: list[dict] = []
    model_meta: dict = {}
    for r in range(world):
        row: dict = {"rank": r, "file": str(rank_file(path, r))}
        f = files.get(r)
        if f is None:
            row.update(status="missing", ok=False, problem="no file: the rank died before writing")
            row.update(_component_of(info, r))
        else:
            try:
                t = read(f, format="cctviz")
            except ProfileError as e:
                row.update(status="unreadable", ok=False, problem=e.problem)
            else:
                if not isinstance(t, Tree):
                    row.update(status="unreadable", ok=False, problem="not a single-rank profile")
                else:
                    st = str(t.meta.get("status", "unknown"))
                    ok = st.startswith("complete") and "profiler failed" not in st
                    row.update(status=st, ok=ok, problem="")
                    row.update({k: t.meta[k] for k in _PROFILE_META if k in t.meta})
                    step_ns = t.meta.get("step_ns") or []
                    row["step_time_ns"] = float(np.median(step_ns)) if len(step_ns) else np.nan
                    row["step_ns"] = [int(x) for x in step_ns]
                    trees.append(t)
                    rank_of_tree.append(r)
                    for k in _MODEL_META:
                        if k in t.meta:
                            model_meta.setdefault(k, t.meta[k])
        rows.append(row)
    if not trees:
        problems = "; ".join(f"rank {x['rank']}: {x['problem']}" for x in rows[:4])
        raise ProfileError(path, f"no readable rank file ({problems})")
    for row in rows:
        row.setdefault("step_ns", [])
    profiles = pd.DataFrame(rows)
    profiles.insert(1, "run", info.get("run", path.name))
    bad = profiles.loc[~profiles["ok"], ["rank", "status"]]
    if len(bad):
        listing = ", ".join(f"{r} ({s})" for r, s in bad.itertuples(index=False))
        warnings.warn(f"{path}: ranks not complete: {listing}", stacklevel=3)
    part = Ensemble.concat(trees)
    r = part.exclusive_rows.copy()
    r["profile"] = np.asarray(rank_of_tree, dtype=np.int64)[r["profile"].to_numpy()]
    meta = {k: v for k, v in info.items() if isinstance(v, (str, int, float, bool))}
    meta.update(units=part.tree.units, flagged_ranks=[int(x) for x in bad["rank"]])
    meta.update(model_meta)
    rules = {m: r for m, r in part.aggregation.items() if r != "sum"}
    if rules:  # the ranks' peaks stay maxima (the rows alone would make them sums)
        meta["aggregation"] = rules
    structure = Tree(part.tree.nodes.copy(), None, {}, _trusted=True)
    return Ensemble(structure, r, profiles, meta)


def _component_of(info: dict, rank: int) -> dict:
    """``component`` and ``component_rank`` of a workflow's rank from run.json
    (for a rank that wrote no file), or nothing.

    >>> _component_of({"components": {"sim": {"processes": 2, "first_rank": 0},
    ...                                "train": {"processes": 2, "first_rank": 2}}}, 3)
    {'component': 'train', 'component_rank': 1}
    """
    for name, c in (info.get("components") or {}).items():
        first, n = c.get("first_rank"), c.get("processes")
        if isinstance(first, int) and isinstance(n, int) and first <= rank < first + n:
            return {"component": name, "component_rank": rank - first}
    return {}


#: the sampler's counter tracks on a timeline: name -> (sampled series, unit, rate?)
SAMPLE_TRACKS = {
    "cpu_util": ("cpu_time", "%", True),
    "rss": ("rss", "B", False),
    "io_read_rate": ("io_read_bytes", "B/s", True),
    "io_write_rate": ("io_write_bytes", "B/s", True),
    "gpu_util": ("gpu_util", "%", False),
    "gpu_mem": ("gpu_mem", "B", False),
    "gpu_power": ("gpu_power", "W", False),
    "pcie_tx_rate": ("pcie_tx_bytes", "B/s", True),
    "pcie_rx_rate": ("pcie_rx_bytes", "B/s", True),
}


def sample_counters(series: dict, profile: int) -> pd.DataFrame:
    """A rank's sampler series (its profile's ``samples`` metadata,
    :mod:`cctviz.runtime.sampler`) as Timeline counters: ``cpu_util`` (%: CPU
    time over each interval), ``rss`` (B), ``io_read_rate`` and
    ``io_write_rate`` (B/s), at the samples' times (ns on the profile's clock,
    the clock of its trace); a rate is its interval's, set at the interval's
    start (a counter holds until the next sample: so it covers the interval).

    Example:
        >>> s = {"ts": [0, 10**8, 2 * 10**8], "tracks": {"cpu_time": [0, 9 * 10**7, 10**8],
        ...      "rss": [5, 6, 7], "io_read_bytes": [0, 0, 0], "io_write_bytes": [0, 100, 100]}}
        >>> c = sample_counters(s, 0)
        >>> c[c["track"] == "cpu_util"]["value"].round(1).tolist()
        [90.0, 10.0]
    """
    ts = np.asarray(series.get("ts", []), dtype=np.int64)
    tracks = series.get("tracks", {})
    parts = []
    for name, (src, _unit, rate) in SAMPLE_TRACKS.items():
        if src not in tracks or ts.size < 2:
            continue
        v = np.asarray(tracks[src], dtype=np.float64)[: ts.size]
        if rate:
            dt = np.diff(ts).astype(np.float64)
            with np.errstate(divide="ignore", invalid="ignore"):
                value = np.diff(v) / dt * (100.0 if name == "cpu_util" else 1e9)
            at = ts[:-1]  # held until the next sample: the interval it measures
            ok = dt > 0
            value, at = value[ok], at[ok]
        else:
            value, at = v, ts
        parts.append(pd.DataFrame({"profile": profile, "track": name, "ts": at, "value": value}))
    if not parts:
        return pd.DataFrame({"profile": [], "track": [], "ts": [], "value": []})
    return pd.concat(parts, ignore_index=True)


def _with_samples(path: Path, tl):
    """The timeline with its ranks' sampler series as counter tracks (a run
    sampled with ``--sample-hz``), when its ranks ran on one host: on several,
    the trace's timestamps are moved per host and the samples' are not."""
    from ..model.timeline import Timeline
    from . import read  # the registry: the rank files are native profiles

    prof = tl.profiles
    if "rank" not in prof.columns:
        return tl
    files = {r: p for p in path.iterdir() if (r := rank_of(p.name)) is not None}
    parts, hosts = [], set()
    for pid, r in enumerate(pd.to_numeric(prof["rank"], errors="coerce").to_numpy()):
        f = files.get(int(r)) if np.isfinite(r) else None
        if f is None:
            continue
        try:
            meta = read(f, format="cctviz").meta
        except ProfileError:
            continue
        hosts.add(meta.get("hostname"))
        if meta.get("samples"):
            parts.append(sample_counters(meta["samples"], pid))
    if not parts:
        return tl
    if len(hosts) > 1:
        warnings.warn(
            f"{path}: sampled on {len(hosts)} hosts: the samples are not put on the "
            "trace's clock (counters left out)",
            stacklevel=4,
        )
        return tl
    counters = pd.concat([tl.counters, *parts], ignore_index=True)
    units = {**tl.units, **{k: u for k, (_s, u, _r) in SAMPLE_TRACKS.items()}}
    return Timeline(tl.tree, tl.events, tl.profiles, counters=counters, units=units, meta=tl.meta)
