"""Files a profiled process opens, seen through Python's audit hooks (``open``).

Coupled workflows often move data through files: a simulation writes snapshots
that a training job reads. Every ``open`` of a regular file outside Python's own
installation is recorded while the profiler runs: when, in which context (the
training thread's current one; another thread's open counts where that thread
stands), the absolute path, whether for writing, and for a read the file's size
then (what the reader can read). Each open also counts in a context ``files``
(kind ``data``) under the current one: ``data_in_bytes`` are the sizes read,
``data_out_bytes`` the sizes of the written files when the profiler stops (a
file removed by then, as a consumed snapshot often is, counts 0 there: its
reader's ``data_in_bytes`` has it). The opens go to the profile's metadata
(``files``: ``[t_ns, context path, path, "r" or "w", size]``, at most
:data:`MAX_OPENS`), where a workflow's components are matched by path.

A written file that is then renamed (``os.rename``, ``os.replace``: the
write-then-rename of a staging folder) is listed under its new name with its
size then (complete: its writer closed it), which counts in ``data_out_bytes``
if the file is gone when the profiler stops.

Audit hooks cannot be removed: the hook stays installed for the process's life
and returns at once when no log is active. Opens during imports (``.py``,
``.pyc``, extension modules) and under ``/proc``, ``/sys``, ``/dev`` are left out.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import Any

#: opens kept per process in the profile's metadata (the rest are counted)
MAX_OPENS = 20_000
#: the context each open counts in, under the current one
FILES_CONTEXT = "files"
_SKIP_SUFFIX = (".py", ".pyc", ".so", ".pth", ".pyi")
_SKIP_PREFIX = ("/proc/", "/sys/", "/dev/")
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT

_log: FileLog | None = None
_installed = False
_guard = threading.local()


def unlogged() -> None:
    """The opens of the calling thread are never logged: cctviz's own threads
    (the live writer) open files the job did not."""
    _guard.busy = True


def _writes(mode: Any, flags: Any) -> bool:
    if isinstance(mode, str) and mode:
        return any(c in mode for c in "wax+")
    return isinstance(flags, int) and bool(flags & _WRITE_FLAGS)


def _hook(event: str, args: tuple) -> None:
    log = _log
    if log is None or getattr(_guard, "busy", False):
        return
    if event == "open":
        path = args[0]
        if not isinstance(path, str):
            return  # a file descriptor or bytes: no path to match
        _guard.busy = True
        try:
            log.opened(path, args[1] if len(args) > 1 else None, args[2] if len(args) > 2 else 0)
        finally:
            _guard.busy = False
    elif event == "os.rename" and isinstance(args[0], str) and isinstance(args[1], str):
        log.renamed(args[0], args[1])  # os.rename and os.replace


class FileLog:
    """The opens of one profiled process (module docstring)."""

    def __init__(self, rec: Any, lock: Any) -> None:
        self.rec = rec
        self.lock = lock
        self.opens: list[list[Any]] = []
        self.dropped = 0
        self._written: dict[str, int] = {}  # path -> the context of its last write open
        self._renamed: dict[str, int] = {}  # path -> size when it was renamed into place
        self._skip = tuple({sys.prefix, sys.base_prefix, sys.exec_prefix})

    def start(self) -> None:
        global _log, _installed
        if not _installed:
            sys.addaudithook(_hook)
            _installed = True
        _log = self

    def stop(self) -> None:
        """Stop logging; count the written files' sizes now (those still there)."""
        global _log
        if _log is self:
            _log = None
        with self.lock:
            for path, ctx in self._written.items():
                try:
                    size = os.stat(path).st_size
                except OSError:  # gone (consumed): its size when renamed, if it was
                    size = self._renamed.get(path, 0)
                self.rec.add(ctx, "data_out_bytes", size)

    def opened(self, path: str, mode: Any, flags: Any) -> None:
        full = os.path.abspath(path)
        if (
            full.endswith(_SKIP_SUFFIX)
            or full.startswith(_SKIP_PREFIX)
            or full.startswith(self._skip)
        ):
            return
        write = _writes(mode, flags)
        size = 0
        if not write:
            try:
                st = os.stat(full)
            except OSError:
                return  # the open fails: nothing read
            if not os.path.isfile(full):
                return
            size = int(st.st_size)
        t = time.perf_counter_ns()
        with self.lock:
            rec = self.rec
            ctx = rec.leaf_here(FILES_CONTEXT, "data")
            if write:
                self._written[full] = ctx
            else:
                rec.add(ctx, "data_in_bytes", size)
            if len(self.opens) < MAX_OPENS:
                self.opens.append(
                    [t, _path_of(rec, rec.stack[-1]), full, "w" if write else "r", size]
                )
            else:
                self.dropped += 1

    def renamed(self, src: str, dst: str) -> None:
        """A written file renamed (the write-then-rename of a staging folder):
        its writes are listed under the name it ends with."""
        a, b = os.path.abspath(src), os.path.abspath(dst)
        with self.lock:
            ctx = self._written.pop(a, None)
            if ctx is None:
                return
            self._written[b] = ctx
            try:  # the audit event comes before the rename: the file is complete
                size = int(os.stat(a).st_size)
            except OSError:
                size = 0
            self._renamed[b] = size
            for o in reversed(self.opens):
                if o[2] == a and o[3] == "w":
                    o[2], o[4] = b, size
                    break

    def facts(self) -> dict[str, Any]:
        """What goes into the profile's metadata."""
        out: dict[str, Any] = {"files": self.opens}
        if self.dropped:
            out["files_dropped"] = self.dropped
        return out


def _path_of(rec: Any, ctx: int) -> str:
    """The call path of a recorder context as "a/b/c"."""
    names = []
    while ctx >= 0:
        names.append(rec.name[ctx])
        ctx = rec.parent[ctx]
    return "/".join(reversed(names))


__all__ = ["FILES_CONTEXT", "FileLog", "MAX_OPENS", "unlogged"]
