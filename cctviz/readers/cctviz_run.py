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
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..errors import ProfileError
from ..model.ensemble import Ensemble
from ..model.formats import (
    OPTIMIZER_FACTS,
    RANK_GLOB,
    RUN_FILE,
    STATE_FACTS,
    TIMELINE_DIR,
    TIMELINE_FACTS,
    XPLANE_DIR,
    rank_file,
    rank_of,
    world_size,
    xplane_files,
)
from ..model.tree import Tree
from . import register, register_timeline

if TYPE_CHECKING:
    from ._batch import FileArrays

_PROFILE_META = (
    *STATE_FACTS,  # the model states each rank holds
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
_MODEL_META = ("model_spec", "params", "model", "bucket_bytes", "module_shapes", *OPTIMIZER_FACTS)


def _sniff(path: Path, head: bytes) -> bool:
    if head or not path.is_dir():  # bytes read from it: a file (no stat)
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


def _jax_run(path: Path, info: dict) -> Any:
    """The timeline of a JAX run (``cctviz run`` of a JAX program): its processes'
    XPlane files read as one, each profile with the ``process`` (the file's rank)
    it came from; None for any other run."""
    from ..model.timeline import Timeline
    from . import read_timeline  # the registry: the files are XPlane's

    if info.get("framework") != "jax":
        return None
    by_rank = xplane_files(path)
    if not by_rank:
        raise ProfileError(
            path, f"a JAX run without XPlane files in {XPLANE_DIR}/: no process was traced"
        )
    tl = read_timeline(list(by_rank.values()))
    rank = {str(f): r for r, f in by_rank.items()}
    profiles = tl.profiles.assign(process=tl.profiles["file"].map(rank).to_numpy())
    return Timeline(tl.tree, tl.events, profiles, meta={**tl.meta, "run": info})


@register_timeline("cctviz-run")
def read_run_timeline(path: Path, **kw: object):
    """The timeline of a traced run: its ``timeline/`` trace (``cctviz run
    --timeline``) or the ``--trace`` folder its run.json names; a JAX run's
    processes' XPlane files."""
    from . import read_timeline  # the registry: the trace is an OTF2 archive

    jax = _jax_run(path, _run_info(path))
    if jax is not None:
        return jax
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
    """Read a run folder into an Ensemble of ranks (missing or damaged ranks flagged);
    a JAX run into its processes' devices and host threads."""
    jax = _jax_run(path, _run_info(path))
    if jax is not None:
        ens = jax.ensemble()
        ens.meta.update({k: v for k, v in jax.meta.items() if k not in ("units", "aggregation")})
        return ens
    info, files, world = _run_layout(path)
    return assemble_run(path, info, world, lambda r: read_rank(path, info, files, r))


def assemble_run(
    path: Path, info: dict, world: int, rank: Callable[[int], tuple[dict, Tree | None]]
) -> Ensemble:
    """The Ensemble of a run's ``world`` ranks, each given by ``rank(r)``: its
    row of the profiles table and its tree (None: no tree); the same for a run
    read from its rank files and one read from its live increments (``cctviz.watch``)."""
    trees: list[Tree] = []
    rank_of_tree: list[int] = []
    rows: list[dict] = []
    for r in range(world):
        row, t = rank(r)
        if t is not None:
            trees.append(t)
            rank_of_tree.append(r)
        rows.append(row)
    profiles = _profiles_table(path, info, rows, readable=len(trees))
    part = Ensemble.concat(trees)
    r = part.exclusive_rows.copy()
    r["profile"] = np.asarray(rank_of_tree, dtype=np.int64)[r["profile"].to_numpy()]
    meta = _run_meta(info, profiles, trees)
    meta["units"] = part.tree.units
    rules = {m: r for m, r in part.aggregation.items() if r != "sum"}
    if rules:  # the ranks' peaks stay maxima (the rows alone would make them sums)
        meta["aggregation"] = rules
    structure = Tree(part.tree.nodes.copy(), None, {}, _trusted=True)
    return Ensemble(structure, r, profiles, meta)


def run_to_dataset(
    path: str | Path,
    out: str | Path,
    *,
    chunk_ranks: int = 256,
    overwrite: bool = False,
    progress: bool | None = None,
) -> Path:
    """Convert a run folder into a dataset folder (:func:`cctviz.open_dataset`)
    without holding every rank: ``chunk_ranks`` rank files are read at a time and
    their rows written before the next (:mod:`cctviz.dataset.compose`). The
    dataset equals ``cctviz.read(path).to_dataset(out)``: one profile per rank,
    missing and damaged ranks flagged (no rows), the run's metadata.
    ``cctviz run ... --dataset DIR`` calls it when the run ends.

    Example (of a run folder ``out/ddp``; ``tests/runtime/test_distributed.py`` runs
    one)::

        run_to_dataset("out/ddp", "out/ddp.dataset")
        cctviz.open_dataset("out/ddp.dataset").stats("time (inc)")
    """
    from ..dataset.compose import compose_dataset
    from . import progress_bar
    from ._batch import from_object

    path = Path(path)
    info, files, world = _run_layout(path)
    rows: list[dict] = []
    first: list[Tree] = []  # the first readable rank (the model's description)

    def parse(chunk: list[Path]) -> list[FileArrays]:
        got = []
        for _ in chunk:  # the ranks in order: the next is len(rows)
            row, t = read_rank(path, info, files, len(rows))
            rows.append(row)
            if t is not None and not first:
                first.append(t)
            got.append(_no_profile() if t is None else from_object(t))
        return got

    def extra_of(k: int, p: Path, fa: FileArrays) -> dict:
        row = {"rank": k, "run": info.get("run", path.name), **rows[k]}
        row.setdefault("step_ns", [])  # as read_run's table: a list on every rank
        return row

    def bar(chunks: Iterable) -> Iterable:
        return progress_bar(chunks, progress, desc="converting ranks", unit="chunk")

    if not files:
        raise ProfileError(path, "no rank file: no rank wrote its profile")
    ranks = [rank_file(path, r) for r in range(world)]
    own = {k: v for k, v in info.items() if isinstance(v, (str, int, float, bool))}
    own["flagged_ranks"] = sorted(r for r in range(world) if r not in files)  # so far
    own.update(format="cctviz-run", source=str(path))  # as cctviz.read(path) says
    folder = compose_dataset(
        ranks,
        out,
        parse,
        extra_of,
        chunk_files=chunk_ranks,
        overwrite=overwrite,
        progress=bar,
        meta=own,
    )
    profiles = _profiles_table(path, info, rows, readable=len(first))  # warns, or raises
    flagged = [int(x) for x in profiles.loc[~profiles["ok"], "rank"]]
    model = _run_meta(info, profiles, first)
    if flagged != own["flagged_ranks"] or any(k in model for k in _MODEL_META):
        _amend_meta(folder, {**model})
    return folder


def _amend_meta(folder: Path, meta: dict) -> None:
    """Update a finished dataset's ensemble metadata (what only the whole run tells)."""
    from ..dataset.layout import MANIFEST, write_manifest
    from ..model.formats import jsonable

    manifest = json.loads((folder / MANIFEST).read_text())
    manifest["meta"] = {**manifest["meta"], **jsonable(meta)}
    write_manifest(folder, manifest)


def _no_profile() -> FileArrays:
    """A rank that wrote nothing, as arrays: one profile, no nodes, no rows."""
    from ._batch import FileArrays

    none = np.empty(0, dtype=np.int64)
    return FileArrays(
        parent=none,
        names=np.empty(0, dtype=object),
        kind=np.empty(0, dtype=object),
        node=none,
        prof=none,
        values=np.empty((0, 0)),
        metrics=[],
        meta={},
        is_tree=False,
        profiles=[{}],
    )


def _run_layout(path: Path) -> tuple[dict, dict[int, Path], int]:
    """run.json's content, the rank files by rank, and the world size."""
    info, files, world = run_layout(path)
    if world == 0:
        raise ProfileError(path, "a run folder without run.json world size or rank files")
    return info, files, world


def read_rank(path: Path, info: dict, files: dict[int, Path], r: int) -> tuple[dict, Tree | None]:
    """Rank ``r``'s row of the profiles table, and its tree (None: missing or damaged)."""
    from . import read  # the registry: the rank files are native profiles

    f = files.get(r)
    if f is None:
        return rank_row(path, info, r, None, "no file: the rank died before writing")
    try:
        t = read(f, format="cctviz")
    except ProfileError as e:
        return rank_row(path, info, r, None, e.problem, status="unreadable")
    if not isinstance(t, Tree):
        return rank_row(path, info, r, None, "not a single-rank profile", status="unreadable")
    return rank_row(path, info, r, t)


def rank_row(
    path: Path, info: dict, r: int, t: Tree | None, problem: str = "", *, status: str = "missing"
) -> tuple[dict, Tree | None]:
    """Rank ``r``'s row of the profiles table beside its tree ``t``: without a
    tree, ``status`` and ``problem`` say why; with one, its own status (``ok``
    when complete) and ``problem`` as given."""
    row: dict = {"rank": r, "file": str(rank_file(path, r))}
    if t is None:
        row.update(status=status, ok=False, problem=problem)
        if status == "missing":
            row.update(_component_of(info, r))
        return row, None
    st = str(t.meta.get("status", "unknown"))
    ok = st.startswith("complete") and "profiler failed" not in st
    row.update(status=st, ok=ok, problem=problem)
    row.update({k: t.meta[k] for k in _PROFILE_META if k in t.meta})
    step_ns = t.meta.get("step_ns") or []
    row["step_time_ns"] = float(np.median(step_ns)) if len(step_ns) else np.nan
    row["step_ns"] = [int(x) for x in step_ns]
    return row, t


def run_layout(path: Path) -> tuple[dict, dict[int, Path], int]:
    """run.json's content, the rank files by rank, and the world size (0: none known)."""
    info = _run_info(path)
    files = {r: p for p in path.iterdir() if (r := rank_of(p.name)) is not None}
    return info, files, world_size(info, files)


def _profiles_table(path: Path, info: dict, rows: list[dict], readable: int) -> pd.DataFrame:
    """The ranks' rows as the profiles table (``run`` second); warns of the ranks
    that are not complete; no readable rank at all is an error."""
    if not readable:
        problems = "; ".join(f"rank {x['rank']}: {x['problem']}" for x in rows[:4])
        raise ProfileError(path, f"no readable rank file ({problems})")
    for row in rows:
        row.setdefault("step_ns", [])
    profiles = pd.DataFrame(rows)
    profiles.insert(1, "run", info.get("run", path.name))
    bad = profiles.loc[~profiles["ok"], ["rank", "status"]]
    if len(bad):
        listing = ", ".join(f"{r} ({s})" for r, s in bad.itertuples(index=False))
        warnings.warn(f"{path}: ranks not complete: {listing}", stacklevel=4)
    return profiles


def _run_meta(info: dict, profiles: pd.DataFrame, trees: list[Tree]) -> dict:
    """The ensemble's metadata: run.json's scalars, the flagged ranks, the model's
    description (from the first rank that has it)."""
    meta = {k: v for k, v in info.items() if isinstance(v, (str, int, float, bool))}
    meta["flagged_ranks"] = [int(x) for x in profiles.loc[~profiles["ok"], "rank"]]
    for k in _MODEL_META:
        for t in trees:
            if k in t.meta:
                meta[k] = t.meta[k]
                break
    return meta


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
