"""Reading many files on several processes or a Dask cluster (``read_ensemble(workers=,
client=)``).

The files go out in chunks (a few per worker, so that a slow file does not
hold the others back and each task's overhead is shared); a task reads its
files with the registry (:func:`cctviz.read`) and returns the profiles,
which pickle as their tables. What costs in reading a profile is parsing it;
unifying the profiles by call path is one vectorised pass over all their nodes
(:meth:`cctviz.Ensemble.concat`), done by the caller on what comes back, in
the files' order, so a parallel read equals the serial one.

Processes of this machine start with ``forkserver`` (a clean process that
imported the readers once, then forks per worker; ``spawn`` where there is no
fork), never a bare ``fork`` of a process that may hold threads (V8's, a
progress bar's).
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

from ..errors import WorkerError

#: chunks per worker: enough to balance files of different sizes
CHUNKS_PER_WORKER = 4


def read_chunk(paths: list[str], format: str | None, reader_kw: Mapping[str, Any]) -> list[Any]:
    """The profiles of ``paths`` (a task: runs in a worker).

    >>> t, = read_chunk(["../shared/data/hatchet/json/hatchet-graph-literal.json"], None, {})
    >>> type(t).__name__
    'Tree'
    """
    from . import read

    return [read(p, format=format, **reader_kw) for p in paths]


def chunks(paths: list[Path], n_workers: int) -> list[list[str]]:
    """``paths`` in about ``CHUNKS_PER_WORKER`` x ``n_workers`` consecutive chunks.

    >>> [len(c) for c in chunks([Path(str(k)) for k in range(10)], 2)]
    [2, 2, 2, 2, 2]
    """
    n = max(1, min(len(paths), CHUNKS_PER_WORKER * n_workers))
    size = -(-len(paths) // n)
    return [[str(p) for p in paths[k : k + size]] for k in range(0, len(paths), size)]


def read_all(
    paths: list[Path],
    format: str | None,
    reader_kw: Mapping[str, Any],
    *,
    workers: int | None,
    client: Any,
    progress: bool | None,
    task: Callable[..., list[Any]] = read_chunk,
) -> list[Any]:
    """The profiles of every file, in the files' order, read on ``workers``
    processes or on ``client``'s cluster; ``task`` reads a chunk (default
    :func:`read_chunk`: the profiles; the batch path's gives arrays)."""
    if client is not None:
        n = _cluster_threads(client)
        parts = chunks(paths, n)
        futures = client.map(task, parts, format=format, reader_kw=dict(reader_kw), pure=False)
        order = {f.key: k for k, f in enumerate(futures)}
        from dask.distributed import as_completed as dask_completed

        done = _collect(dask_completed(futures), order, len(parts), progress, len(paths))
        return [obj for part in done for obj in part]
    n = workers or 1
    parts = chunks(paths, n)
    try:
        with ProcessPoolExecutor(max_workers=min(n, len(parts)), mp_context=_context()) as pool:
            futures = [pool.submit(task, part, format, dict(reader_kw)) for part in parts]
            order = {id(f): k for k, f in enumerate(futures)}
            done = _collect(
                as_completed(futures), order, len(parts), progress, len(paths), by_id=True
            )
    except BrokenProcessPool as e:
        raise WorkerError(
            f"a worker process of read_ensemble(workers={n}) stopped before it answered: "
            "it was killed (out of memory?), or it could not start because the script "
            "calls read_ensemble when it is imported (each worker imports the main "
            'script again: put the call under `if __name__ == "__main__":`)'
        ) from e
    return [obj for part in done for obj in part]


def _collect(
    finished: Iterable[Any],
    order: Mapping[Any, int],
    n_parts: int,
    progress: bool | None,
    n_files: int,
    *,
    by_id: bool = False,
) -> list[list[Any]]:
    """The chunks' results in chunk order, with a progress bar over the files;
    a task's exception (a ProfileError naming its file) is raised here."""
    from . import progress_bar

    out: list[list[Any] | None] = [None] * n_parts
    bar = progress_bar(range(n_files), progress, desc="reading profiles", unit="file")
    tick = getattr(bar, "update", None)
    try:
        for f in finished:
            part = f.result()  # re-raises the worker's exception
            out[order[id(f) if by_id else f.key]] = part
            if tick is not None:  # files: a batch task's chunk says how many it holds
                tick(sum(getattr(x, "n_files", 1) for x in part))
    finally:
        close = getattr(bar, "close", None)
        if close is not None:
            close()
    return [p for p in out if p is not None]


def _context() -> multiprocessing.context.BaseContext:
    if "forkserver" in multiprocessing.get_all_start_methods():
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(["cctviz.readers"])
        return ctx
    return multiprocessing.get_context("spawn")


def _cluster_threads(client: Any) -> int:
    """How many tasks the cluster runs at once (1 if it does not say)."""
    try:
        return max(1, sum(client.nthreads().values()))
    except Exception:  # noqa: BLE001 - a client that cannot tell: one at a time
        return 1


__all__ = ["chunks", "read_all", "read_chunk"]
