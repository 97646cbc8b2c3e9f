"""Readers: one module per input format behind one registry.

A reader module registers itself with :func:`register`, giving a ``sniff``
function (does this file look like mine?) and a ``read`` function that
returns a :class:`~cctviz.Tree` (one profile) or an
:class:`~cctviz.Ensemble` (several ranks or runs in one file).
:func:`read` picks the reader; :func:`read_ensemble` unifies many files.

Adding a format = one new module here plus its name in ``DETECTION_ORDER``
(at the bottom: the order in which detection asks the sniffers).
"""

from __future__ import annotations

import glob as _glob
import importlib
import json
import os
import re
import struct
import warnings
import zlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import ProfileError, ReaderBugError, UnknownFormatError
from ..model.ensemble import Ensemble
from ..model.tree import Tree

PathLike = str | os.PathLike

HEAD_BYTES = 65536
#: seconds a piece of work runs before its progress bar appears (``progress=None``)
PROGRESS_DELAY = 1.0
#: bytes of files on disk composed at a time by ``read_ensemble(out=)`` (a
#: chunk's parsed profiles take a few times that in memory:
#: ``benchmarks/compose_chunks.py``)
CHUNK_BYTES = 32 * 2**20


def progress_bar(items: Iterable[Any], progress: bool | None, **kw: Any) -> Iterable[Any]:
    """``items``, wrapped in a tqdm progress bar where one is wanted.

    ``progress=True`` shows the bar at once, ``False`` never; ``None`` (the
    readers' default) shows it only once the work has run for
    :data:`PROGRESS_DELAY` seconds (tqdm's ``delay``), so a read that takes a
    fraction of a second prints nothing; nor does a single item (a bar that jumps
    from 0 to 1 says nothing). ``kw`` goes to tqdm (``desc``, ``unit``).
    """
    if progress is False:
        return items
    if progress is None and hasattr(items, "__len__") and len(items) <= 1:  # type: ignore[arg-type]
        return items
    from tqdm.auto import tqdm

    return tqdm(items, delay=0.0 if progress else PROGRESS_DELAY, **kw)


@dataclass(frozen=True)
class Reader:
    name: str
    read: Callable[..., Tree | Ensemble]
    sniff: Callable[[Path, bytes], bool]
    description: str


_READERS: dict[str, Reader] = {}
_FOLDER_FORMATS: set[str] = set()  # formats that are a folder themselves (register(folder=True))


def register(
    name: str,
    sniff: Callable[[Path, bytes], bool],
    description: str = "",
    *,
    folder: bool = False,
):
    """Decorator registering a reader function under ``name``.

    ``sniff(path, head)`` says whether a file is of this format (``head``: its
    first bytes, un-gzipped; ``b""`` for a folder). ``folder=True`` for formats
    that are a folder themselves (a database, a run folder); any other folder is
    read by the registry as an Ensemble of the profiles in it.
    """

    def deco(fn: Callable[..., Tree | Ensemble]) -> Callable[..., Tree | Ensemble]:
        _READERS[name] = Reader(
            name, fn, sniff, description or (fn.__doc__ or "").strip().split("\n")[0]
        )
        if folder:
            _FOLDER_FORMATS.add(name)
        return fn

    return deco


_TIMELINES: dict[str, Callable[..., Any]] = {}


def register_timeline(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator registering the timeline reader of format ``name`` (a format whose
    files keep when things happened: traces), for :func:`read_timeline`."""

    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        _TIMELINES[name] = fn
        return fn

    return deco


def read_timeline(path: PathLike | Iterable[PathLike], format: str | None = None, **kw: Any) -> Any:
    """Read a trace as a :class:`~cctviz.model.timeline.Timeline`: its intervals
    per profile and calling context, on the same unified tree as :func:`read`'s
    Ensemble (``read_timeline(x).ensemble()`` aggregates to it).

    Formats: OTF2 archives (Score-P's and ``cctviz run --trace``'s), run folders
    traced with ``cctviz run --timeline``, torch.profiler (Kineto) traces. A list
    of files, a glob or a folder of traces (one per rank, as torch.profiler's
    ``tensorboard_trace_handler`` writes them) reads the ranks of one job into one
    timeline (:meth:`~cctviz.model.timeline.Timeline.concat`): a glob's or a
    folder's files in the order of their ranks (``distributedInfo.rank`` for
    Kineto), a list's as given. Each reader puts its times on the epoch where the
    file says how (Kineto's ``baseTimeNanoseconds``), so the ranks share a clock.

    Example:
        >>> import cctviz
        >>> tl = cctviz.read_timeline("../shared/data/pipit/ping-pong-otf2/traces.otf2")
        >>> tl.n_profiles, sorted(tl.event_metrics)
        (2, ['bus_bytes', 'comm_bytes', 'comm_time'])
    """
    listed = not isinstance(path, (str, os.PathLike))
    if listed or any(c in os.fspath(path) for c in "*?"):  # several files: one timeline
        paths = _expand_paths(path)
        if not paths:
            raise ValueError("read_timeline: no file given")
        return _concat_timelines(paths, format, by_rank=not listed, **kw)
    p = Path(path)
    name = format or detect(p)
    if p.is_dir() and (name == FOLDER or (format is not None and format not in _FOLDER_FORMATS)):
        files = _folder_files(p, format)
        kinds = sorted(set(files.values()))
        if not files or any(k not in _TIMELINES for k in kinds):
            have = ", ".join(sorted(_TIMELINES))
            raise ProfileError(
                p, f"the folder holds no trace cctviz reads as a timeline (timelines: {have})"
            )
        if len(kinds) > 1:
            raise ProfileError(p, f"the folder mixes formats ({', '.join(kinds)})")
        return _concat_timelines(list(files), kinds[0], by_rank=True, **kw)
    fn = _TIMELINES.get(name)
    if fn is None:
        have = ", ".join(sorted(_TIMELINES)) or "none"
        raise ProfileError(
            p, f"{name} files hold no timeline that cctviz reads (timelines: {have}); read() it"
        )
    if p.is_file() and p.stat().st_size == 0:
        raise ProfileError(p, f"the file is empty (no {name} trace in it)")
    return _call_reader(p, name, fn, kw)


def _concat_timelines(paths: list[Path], format: str | None, by_rank: bool, **kw: Any) -> Any:
    """One timeline of the files' timelines (:func:`read_timeline`), those that
    name their ranks in rank order when ``by_rank`` (files without a rank keep
    their place after them); a warning where two files name the same rank."""
    from ..model.timeline import Timeline, profile_ranks

    parts = [read_timeline(q, format=format, **kw) for q in paths]
    ranks = [profile_ranks(t.profiles) if "rank" in t.profiles.columns else None for t in parts]
    if by_rank:
        key = [int(r.min()) if r is not None and len(r) and r.min() >= 0 else None for r in ranks]
        order = sorted(range(len(parts)), key=lambda i: (key[i] is None, key[i] or 0, i))
        parts, paths = [parts[i] for i in order], [paths[i] for i in order]
        ranks = [ranks[i] for i in order]
    known = np.concatenate([r[r >= 0] for r in ranks if r is not None] or [np.empty(0, int)])
    uniq, counts = np.unique(known, return_counts=True)
    if (counts > 1).any():
        warnings.warn(
            f"read_timeline: rank(s) {uniq[counts > 1].tolist()[:5]} appear in several of "
            f"{len(paths)} files; each file is a profile of its own",
            stacklevel=3,
        )
    return Timeline.concat(parts)


def formats() -> dict[str, str]:
    """Registered formats and what they read."""
    return {k: r.description for k, r in _READERS.items()}


def head(path: Path) -> bytes:
    """First bytes of a file, un-gzipped if it is gzipped."""
    if path.is_dir():
        return b""
    with open(path, "rb") as f:
        raw = f.read(HEAD_BYTES)
    if raw[:2] == b"\x1f\x8b":
        import gzip
        import zlib

        try:
            d = zlib.decompressobj(16 + zlib.MAX_WBITS)
            return d.decompress(raw, HEAD_BYTES)
        except zlib.error:
            try:
                with gzip.open(path, "rb") as g:
                    return g.read(HEAD_BYTES)
            except (OSError, EOFError):
                return b""
    return raw


def detect(path: PathLike) -> str:
    """Name of the format of ``path``; :class:`UnknownFormatError` if none fits."""
    p = Path(path)
    if not p.exists():
        raise ProfileError(p, "no such file or directory")
    return detect_head(p, head(p))


def detect_head(p: Path, h: bytes) -> str:
    """:func:`detect` of ``p`` whose first bytes (un-gzipped) ``h`` are read already."""
    for r in _READERS.values():
        try:
            if r.sniff(p, h):
                return r.name
        except Exception:  # noqa: BLE001 - a sniffer must not break detection
            continue
    if p.is_dir():  # no folder format claims it: a folder of profiles (read_folder checks)
        return FOLDER
    if p.stat().st_size == 0:
        raise UnknownFormatError(p, "the file is empty")
    known = ", ".join(_READERS)
    raise UnknownFormatError(p, f"not a profile format cctviz knows (formats: {known})")


FOLDER = "folder"


#: names of files that sit beside profiles without being one (documentation, notes,
#: logs, scripts, configuration, figures): a folder read leaves them out unread
_NOT_PROFILES = re.compile(
    r"^(readme|license|licence|notice|changelog)([.].*)?$"
    r"|[.](md|rst|log|py|sh|toml|ya?ml|ini|cfg|csv|png|jpe?g|svg|pdf|html?)$",
    re.IGNORECASE,
)
#: a JSON file no reader claims is run metadata (``run.json``, a config) when it
#: parses whole and is at most this big; a trace cut short does not parse
_METADATA_JSON_BYTES = 1 << 20


def _folder_files(folder: Path, format: str | None = None) -> dict[Path, str]:
    """Profiles in ``folder`` and its sub-folders, with their format.

    A sub-folder that is a profile itself (a database, a run folder) is one
    entry, and so is the folder of a file that stands for its folder (TAU's
    ``profile.N.0.0``, HPCToolkit's ``experiment.xml``: the other files there
    are its parts). With ``format`` given, every file is taken to be of that
    format.

    The rule for the other files (a folder is "refused, never half-read"):

    - left out: hidden files and folders; files named as documentation, notes,
      logs, scripts, configuration or figures (``README*``, ``LICENSE*``,
      ``*.md``, ``*.rst``, ``*.log``, ``*.py``, ``*.sh``, ``*.toml``,
      ``*.yaml``, ``*.ini``, ``*.cfg``, ``*.csv`` (expected values beside a
      sample), ``*.png``, ``*.svg``, ``*.pdf``,
      ``*.html``: :data:`_NOT_PROFILES`); and, when no format is given, a
      ``.json`` file no reader recognises that parses whole and is at most
      1 MiB (run metadata, a config);
    - any other file no reader recognises is a :class:`ProfileError` naming it
      (an empty file, a trace cut short, garbage): a folder of per-rank traces
      where a crashed rank left an empty file is refused, not read as fewer
      ranks. (Rank files of a ``cctviz run`` folder are the run reader's: a
      missing or damaged rank is a profile flagged ``ok=False`` there.)
    """
    found: dict[Path, str] = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        here = Path(dirpath)
        dirnames[:] = sorted(x for x in dirnames if not x.startswith("."))
        if format is None and here != folder:
            kind = _folder_format(here)
            if kind is not None:
                found[here] = kind
                dirnames[:] = []
                continue
        names = sorted(fn for fn in filenames if not fn.startswith("."))
        kinds = {fn: format or _detect_in_folder(here / fn) for fn in names}
        whole = [k for k in kinds.values() if isinstance(k, str) and k in _FOLDER_FORMATS]
        if format is None and whole:  # a file standing for its folder: the rest are its parts
            found.setdefault(here, whole[0])
            dirnames[:] = []
            continue
        for fn, kind in kinds.items():
            if isinstance(kind, ProfileError):
                raise kind
            if kind is not None:
                found[here / fn] = kind
    return dict(sorted(found.items()))


def _detect_in_folder(path: Path) -> str | ProfileError | None:
    """The format of a file met in a folder read; ``None`` for a file that the
    rule of :func:`_folder_files` leaves out; for any other file no reader
    recognises, the ProfileError to raise unless a sibling claims the folder
    (the parts of an OTF2 archive beside its anchor)."""
    if _NOT_PROFILES.search(path.name):
        return None
    try:
        return detect(path)
    except UnknownFormatError:
        if _is_metadata_json(path):
            return None
        if path.stat().st_size == 0:
            return ProfileError(
                path,
                "the file is empty (a rank that crashed before writing?); "
                "remove it or read the other files with cctviz.read_ensemble([...])",
            )
        return ProfileError(
            path,
            "this file in a folder of profiles is no profile cctviz recognises "
            "(cut short or damaged?); remove it or read the other files with "
            "cctviz.read_ensemble([...])",
        )


def _is_metadata_json(path: Path) -> bool:
    """Whether ``path`` is a small ``.json`` file that parses whole (metadata)."""
    if path.suffix.lower() != ".json" or path.stat().st_size > _METADATA_JSON_BYTES:
        return False
    try:
        json.loads(path.read_bytes())
    except ValueError:
        return False
    return True


def _folder_format(path: Path) -> str | None:
    """The folder format that claims the folder ``path``, if any."""
    for name in _FOLDER_FORMATS:
        try:
            if _READERS[name].sniff(path, b""):
                return name
        except Exception:  # noqa: BLE001 - a sniffer must not break detection
            continue
    return None


def _read_folder(folder: Path, format: str | None = None, **kw: Any) -> Ensemble:
    """A folder of profiles of one format (per-rank traces, one file per run;
    sub-folders included) read as one Ensemble, as :func:`read_ensemble` over
    its files would."""
    files = _folder_files(folder, format)
    if not files:
        raise UnknownFormatError(folder, "the folder holds no profile file cctviz recognises")
    kinds = sorted(set(files.values()))
    if len(kinds) > 1:
        raise ProfileError(
            folder,
            f"the folder mixes formats ({', '.join(kinds)}); "
            "read the files with cctviz.read_ensemble([...]) instead",
        )
    ens = read_ensemble(list(files), format=kinds[0], **kw)  # detected once, above
    for m in (ens.meta, ens.tree.meta):  # the folder is the source
        m["source"] = str(folder)
    return ens


def read(path: PathLike, format: str | None = None, **kw: Any) -> Tree | Ensemble:
    """Read a profile; the format is detected unless given.

    Returns a :class:`Tree`, or an :class:`Ensemble` when the file holds
    several ranks or runs. Any problem with the file is a
    :class:`ProfileError` naming the file. Other keyword arguments go to the
    reader; ``progress=`` (see :func:`progress_bar`) is taken by the readers
    whose work can last (folders, databases) and ignored by the others.

    >>> import cctviz
    >>> ens = cctviz.read("../shared/data/hatchet/caliper-lulesh-json/lulesh-annotation-profile.json")
    >>> ens.meta["format"], ens.n_profiles, len(ens.tree)  # 8 ranks over 24 call paths
    ('caliper-json', 8, 24)
    """
    p = Path(path)
    name = format or detect(p)
    if name == FOLDER or (format is not None and p.is_dir() and format not in _FOLDER_FORMATS):
        return _read_folder(p, format, **kw)
    if name not in _READERS:
        raise ValueError(f"unknown format {name!r}; have {sorted(_READERS)}")
    if "progress" in kw and not _takes(_READERS[name].read, "progress"):
        kw.pop("progress")  # quick to read: no bar to show or hide
    if p.is_file() and p.stat().st_size == 0:
        raise ProfileError(p, f"the file is empty (no {name} profile in it)")
    _check_arguments(p, name, kw)
    obj = _call_reader(p, name, _READERS[name].read, kw)
    if name != "cctviz":  # a native file keeps exactly the metadata it was saved with
        for m in (obj.meta, obj.tree.meta) if isinstance(obj, Ensemble) else (obj.meta,):
            m.setdefault("format", name)
            m.setdefault("source", str(p))
    return obj


#: exceptions that mean the file's bytes are not what its format holds (undecodable
#: text, a stream that ends early, a broken gzip or JSON); any other exception from a reader is a bug of the reader
#: (:class:`~cctviz.errors.ReaderBugError`), never blamed on the file
_CONTENT_ERRORS: tuple[type[BaseException], ...] = (
    UnicodeDecodeError,
    EOFError,
    OSError,
    json.JSONDecodeError,
    zlib.error,
    struct.error,
)


def _call_reader(p: Path, name: str, fn: Callable[..., Any], kw: dict[str, Any]) -> Any:
    """``fn(p, **kw)`` with its failures said plainly: a ProfileError of the model
    named after the file, bad bytes as "unexpected content", any other exception
    as a :class:`~cctviz.errors.ReaderBugError` (a bug in cctviz)."""
    try:
        return fn(p, **kw)
    except ProfileError as e:
        if e.path is None:  # raised by the model while building: name the file
            raise ProfileError(p, e.problem, e.where) from e
        raise
    except _CONTENT_ERRORS as e:  # the file's bytes are not what the format holds
        raise ProfileError(
            p, f"unexpected content for a {name} file ({type(e).__name__}: {e})"
        ) from e
    except (MemoryError, RecursionError):
        raise
    except Exception as e:  # noqa: BLE001 - anything else is the reader's own failure
        raise ReaderBugError(p, name, e) from e


def _check_arguments(p: Path, name: str, kw: dict[str, Any]) -> None:
    """A ProfileError where the reader of ``name`` takes no such keyword argument."""
    import inspect

    try:
        inspect.signature(_READERS[name].read).bind(p, **kw)
    except TypeError as e:
        raise ProfileError(p, f"bad argument for the {name} reader: {e}") from None


def _takes(fn: Callable[..., Any], arg: str) -> bool:
    """Whether ``fn`` accepts the keyword argument ``arg``."""
    import inspect

    params = inspect.signature(fn).parameters.values()
    return any(p.name == arg or p.kind is p.VAR_KEYWORD for p in params)


def _expand_paths(paths_or_glob: PathLike | Iterable[PathLike]) -> list[Path]:
    if isinstance(paths_or_glob, (str, os.PathLike)):
        s = os.fspath(paths_or_glob)
        if any(ch in s for ch in "*?["):
            out = sorted(Path(x) for x in _glob.glob(s, recursive=True))
            if not out:
                raise ProfileError(s, "the pattern matches no file")
            return out
        return [Path(s)]
    return [x if isinstance(x, Path) else Path(x) for x in paths_or_glob]


def _scalar_meta(meta: Mapping[str, Any]) -> dict[str, Any]:
    skip = {"units", "format", "profile", "diff", "view"}
    return {
        k: v for k, v in meta.items() if k not in skip and isinstance(v, (str, int, float, bool))
    }


def read_ensemble(
    paths_or_glob: PathLike | Iterable[PathLike],
    metadata: pd.DataFrame
    | Mapping[str, Mapping[str, Any]]
    | Callable[[Path], Mapping[str, Any]]
    | None = None,
    *,
    format: str | None = None,
    progress: bool | None = None,
    workers: int | None = None,
    client: Any = None,
    batch: bool = True,
    out: PathLike | None = None,
    chunk_files: int | None = None,
    chunk_bytes: int | None = CHUNK_BYTES,
    overwrite: bool = False,
    **reader_kw: Any,
) -> Any:
    """Read many profiles and unify them by call path into one Ensemble.

    Every file contributes its profiles (one for a single-profile file, one
    per rank for a multi-rank file). ``ens.profiles`` gets a ``file`` column,
    a ``run`` column (see below), the file's own scalar metadata, and
    ``metadata``: a DataFrame with one row
    per file (in order), a dict ``{path: {column: value}}``, or a callable
    ``path -> dict``. Other keyword arguments go to the reader of each file
    (e.g. ``python_functions=False`` for Kineto traces).

    ``run`` says which profiles were measured together, which decides what a
    node's absence means in :meth:`Ensemble.stats`: each file is a run of its
    own, except single-rank files of a distributed job (a Kineto trace per
    rank: ``rank`` and ``world_size`` > 1 in the file), which are grouped into
    jobs, the k-th file of each rank in the k-th job. A ``run`` the file
    itself states (a ``cctviz run`` folder) or that ``metadata`` gives wins.

    ``progress``: a progress bar over the files; ``None`` shows one only when
    reading takes more than a second (see :func:`progress_bar`).

    ``workers=N`` reads the files on N processes of this machine, ``client=``
    (a ``dask.distributed.Client``) on a Dask cluster: the files go out in
    chunks, each task reads its files (the parsing: what costs), and the
    profiles come back to be unified here in one pass over all their nodes
    (linear in the nodes, not quadratic in the files), in file order: the
    result equals the serial read. A file that cannot be read raises its
    :class:`~cctviz.ProfileError` here, naming it. The reader's keyword
    arguments go to the workers (they must pickle); ``metadata`` is applied here.

    ``batch``: formats that come in many small files (Caliper json-split) are
    parsed to plain arrays, without a Tree per file, and composed in one pass
    (:mod:`cctviz.readers._batch`); the result equals reading each file and
    concatenating (``batch=False``), which other formats always do.

    ``out=folder`` composes straight into a dataset folder (the layout of
    :meth:`Ensemble.to_dataset`) with bounded memory: the files are parsed a
    chunk at a time, a chunk of at most ``chunk_bytes`` bytes on disk (32 MiB by
    default) and, where given, ``chunk_files`` files, and a chunk's rows are
    written before the next chunk is read (:mod:`cctviz.dataset.compose`; needs
    the ``scale`` extra), and the opened
    :class:`~cctviz.DatasetEnsemble` is returned. It equals
    ``read_ensemble(files).to_dataset(folder)``. An existing dataset there is
    replaced only with ``overwrite=True``; a compose that fails on the way
    leaves a folder that :func:`cctviz.open_dataset` refuses as partial. Files
    of formats without a batch parser are read by their reader, a chunk at a
    time all the same.

    Example:
        >>> import cctviz, glob, tempfile
        >>> files = sorted(glob.glob("../shared/data/hatchet-tutorial/lulesh-scaling/*.json"))
        >>> ens = cctviz.read_ensemble(files, progress=False)
        >>> ens.n_profiles, len(ens.tree)  # 1 to 512 ranks: 1,296 profiles
        (1296, 45)
        >>> ds = cctviz.read_ensemble(files, out=tempfile.mkdtemp() + "/lulesh",
        ...                           chunk_files=3, progress=False)
        >>> type(ds).__name__, ds.n_profiles, ds.profiles.equals(ens.profiles)  # its numbers: DuckDB
        ('DatasetEnsemble', 1296, True)
    """
    paths = _expand_paths(paths_or_glob)
    if not paths:
        raise ValueError("read_ensemble: no files given")
    if workers is not None and (not isinstance(workers, int) or workers < 1):
        raise ValueError(f"read_ensemble: workers must be a positive integer, not {workers!r}")
    batched = batch and not reader_kw and (format is None or format in BATCH_FORMATS)
    if out is not None:
        return _compose_into(
            paths,
            out,
            metadata,
            format,
            progress,
            workers,
            client,
            batched,
            (chunk_files, chunk_bytes),
            overwrite,
            reader_kw,
        )
    if batched:
        runs_b = _RunNumbers()

        def extra_of(k: int, p: Path, fa: Any) -> dict[str, Any]:
            return _profile_extra(k, p, fa.meta, runs_b.of_meta(fa.meta, fa.is_tree), metadata)

        try:
            return read_batch(
                paths,
                format,
                reader_kw,
                extra_of,
                workers=workers,
                client=client,
                progress=progress,
            )
        except NotBatch:
            pass  # a format without a batch parser: profiles read one by one, then concat
    items: list[Tree | Ensemble] = []
    prof_meta: list[dict[str, Any]] = []
    if client is not None or (workers or 1) > 1:
        from ._parallel import read_all

        objs = read_all(paths, format, reader_kw, workers=workers, client=client, progress=progress)
    else:
        it = progress_bar(paths, progress, desc="reading profiles", unit="file")
        objs = (read(p, format=format, **reader_kw) for p in it)
    runs = _RunNumbers()
    for k, (p, obj) in enumerate(zip(paths, objs, strict=True)):
        items.append(obj)
        prof_meta.append(_profile_extra(k, p, obj.meta, runs.of(obj), metadata))
    return Ensemble.concat(items, prof_meta, _common_meta(items))


def _compose_into(
    paths: list[Path],
    out: PathLike,
    metadata: Any,
    format: str | None,
    progress: bool | None,
    workers: int | None,
    client: Any,
    batched: bool,
    chunk: tuple[int | None, int | None],
    overwrite: bool,
    reader_kw: dict[str, Any],
) -> Any:
    """:func:`read_ensemble` ``(out=)``: the files composed into a dataset folder,
    a chunk at a time (``chunk``: its most files and bytes;
    :mod:`cctviz.dataset.compose`), opened. Files are
    parsed to arrays by the batch parser where there is one, else read by their
    reader and turned into arrays (:func:`~cctviz.readers._batch.from_object`): a
    chunk of profiles in memory at a time either way."""
    from ..dataset import open_dataset
    from ..dataset.compose import compose_dataset
    from ._batch import read_chunk_arrays, read_chunk_objects

    def bar(chunks: Iterable[Any]) -> Iterable[Any]:
        return progress_bar(chunks, progress, desc="composing", unit="chunk")

    tasks = [read_chunk_arrays, read_chunk_objects] if batched else [read_chunk_objects]
    for task in tasks:
        runs = _RunNumbers()

        def extra_of(k: int, p: Path, fa: Any, runs: _RunNumbers = runs) -> dict[str, Any]:
            return _profile_extra(k, p, fa.meta, runs.of_meta(fa.meta, fa.is_tree), metadata)

        def parse(chunk: list[Path], task: Any = task) -> list[Any]:
            if client is not None or (workers or 1) > 1:
                from ._parallel import read_all

                return read_all(
                    chunk,
                    format,
                    reader_kw,
                    workers=workers,
                    client=client,
                    progress=False,
                    task=task,
                )
            return task(chunk, format, reader_kw)

        try:
            compose_dataset(
                paths,
                out,
                parse,
                extra_of,
                chunk_files=chunk[0],
                chunk_bytes=chunk[1],
                overwrite=overwrite,
                progress=bar,
            )
            return open_dataset(out)
        except NotBatch:
            overwrite = True  # the folder holds only what this call made
    raise AssertionError("unreachable: reading by the readers never raises NotBatch")


def _profile_extra(
    k: int, p: Path, meta: Mapping[str, Any], run: int, metadata: Any
) -> dict[str, Any]:
    """The profile columns :func:`read_ensemble` gives the ``k``-th file ``p``
    (whose profile's metadata is ``meta``): ``file``, ``run``, the file's scalar
    metadata, then ``metadata``'s."""
    extra: dict[str, Any] = {"file": str(p), "run": run}
    extra.update(_scalar_meta(meta))
    extra.pop("source", None)
    if isinstance(metadata, pd.DataFrame):
        extra.update(metadata.iloc[k].to_dict())
    elif callable(metadata):
        extra.update(metadata(p))
    elif metadata is not None:
        extra.update(metadata.get(str(p), metadata.get(p, {})))  # type: ignore[call-overload]
    return extra


def _common_meta(items: list[Tree | Ensemble]) -> dict[str, Any]:
    """What the files of an ensemble share: their format, when they have one
    (``Ensemble.concat`` gathers what readers said of the units)."""
    formats = {it.meta.get("format") for it in items}
    return {"format": formats.pop()} if len(formats) == 1 and None not in formats else {}


class _RunNumbers:
    """Run numbers for :func:`read_ensemble`: one per file, rank files of one job together."""

    def __init__(self) -> None:
        self.next = 0
        self.jobs: dict[tuple[int, int], int] = {}  # (world size, k-th job) -> run
        self.seen: dict[tuple[int, int], int] = {}  # (world size, rank) -> files so far

    def of(self, obj: Tree | Ensemble) -> int:
        return self.of_meta(obj.meta, isinstance(obj, Tree))

    def of_meta(self, meta: Mapping[str, Any], single: bool) -> int:
        """The run of a file whose profile's metadata is ``meta`` (``single``:
        one profile, a Tree)."""
        rank, world = meta.get("rank"), meta.get("world_size")
        if single and isinstance(rank, int) and isinstance(world, int) and world > 1:
            k = self.seen.get((world, rank), 0)
            self.seen[(world, rank)] = k + 1
            if (world, k) not in self.jobs:
                self.jobs[(world, k)] = self._new()
            return self.jobs[(world, k)]
        return self._new()

    def _new(self) -> int:
        self.next += 1
        return self.next - 1


from ._batch import BATCH_FORMATS, NotBatch, read_batch  # noqa: E402 - needs read/detect

# Register the formats. Detection asks the readers in this order, so the most
# specific sniffers come first and the loosest (folded stacks: any text) last.
DETECTION_ORDER = (
    "native",
    "cctviz_run",
    "thicket_json",  # before hatchet_json: Thicket's to_json holds a Hatchet "graph"
    "timemory",  # before hatchet_json: a non-MPI timemory tree has a "graph"
    "hatchet_json",
    "caliper_json",
    "kineto",
    "chrome",  # after kineto: a Chrome trace that is not torch.profiler's
    "pyinstrument",
    "speedscope",
    "cprofile",
    "cali",
    "cube",
    "otf2",
    "xplane",  # a protobuf: by its name (*.xplane.pb) or its first plane's name
    "nsys",  # SQLite with nsys's tables, or a .nsys-rep by name (refused with the export command)
    "hpctoolkit",
    "hpctoolkit_db",
    "tau",
    "gprof_dot",
    "perf_script",  # before folded: its headers ('comm pid time: event:') are no folded lines
    "folded",
)
for _module in DETECTION_ORDER:
    importlib.import_module(f"{__name__}.{_module}")
# registration follows import order; sort by the order above all the same
_RANK = {f"{__name__}.{m}": k for k, m in enumerate(DETECTION_ORDER)}
_READERS = dict(
    sorted(_READERS.items(), key=lambda kv: _RANK.get(kv[1].read.__module__, len(_RANK)))
)

__all__ = [
    "read",
    "read_ensemble",
    "read_timeline",
    "register",
    "register_timeline",
    "detect",
    "formats",
    "Reader",
]
