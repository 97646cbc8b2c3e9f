"""The drawing engine: the front end's ``scene`` + ``draw`` in an embedded V8.

``cctviz/static/cctviz-export.js`` (built from ``js/`` with the widget's own
drawing code and a small DOM shim) defines ``cctvizExport.renderSVG(json)``.
It runs here in mini-racer, with no browser and no DOM: one V8 context per
process, made on first use, with the bundle's text loaded once.

Every call into V8 (initialising it, making, using and freeing a context) runs
on one thread per process, :class:`V8Thread`, that lives until the process
ends. mini-racer initialises V8 in the thread of its first call; a context made
there and freed from another thread after that one ended crashes the process in
``mr_free_context`` (SIGSEGV at exit, seen with mini-racer 0.12 to 0.14 once a
drawing had used enough of V8). On its own thread V8 is also safe from the
caller's asyncio loop (a Jupyter kernel's), which mini-racer would adopt.
"""

from __future__ import annotations

import atexit
import json
import os
import queue
import threading
import weakref
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import ExportError

STATIC = Path(__file__).resolve().parent.parent / "static"
#: the export bundle (``npm run build`` writes it)
EXPORT_BUNDLE = STATIC / "cctviz-export.js"
#: the global object the bundle defines, and its entry point
GLOBAL = "cctvizExport"
ENTRY = "renderSVG"

_lock = threading.Lock()
_v8_lock = threading.Lock()  # guards _v8_thread (get_engine holds _lock meanwhile)
_v8_thread: V8Thread | None = None
_engines: dict[tuple[int, Path], Engine] = {}
_alive: weakref.WeakSet[Engine] = weakref.WeakSet()  # closed at exit (see _close_all)


def _first_line(e: BaseException) -> str:
    lines = [ln for ln in str(e).splitlines() if ln.strip()]
    # mini-racer's message: "<anonymous>:LINE: Error: what\n<source line>\n^\n\nstack"
    for ln in lines:
        if "Error" in ln:
            return ln.strip()
    return lines[0].strip() if lines else type(e).__name__


class V8Thread:
    """One daemon thread that runs every V8 call of this process, in order.

    It lives until the process ends (daemon threads still run while ``atexit``
    closes the engines), so V8 is initialised, used and torn down on one thread.
    A forked child makes its own (see :func:`v8_thread`).

    Example:
        >>> v8_thread().run(sum, [1, 2])
        3
    """

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._serve, name="cctviz-v8", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            fn, args, done, out = self._jobs.get()
            try:
                out.append((True, fn(*args)))
            except BaseException as e:  # handed back to the caller
                out.append((False, e))
            done.set()

    def submit(self, fn: Any, *args: Any) -> None:
        """``fn(*args)`` on the V8 thread, later, with nobody waiting for it (its
        result and any exception dropped): what a finalizer may do (see
        :meth:`Engine.__del__`)."""
        self._jobs.put((fn, args, threading.Event(), []))

    def run(self, fn: Any, *args: Any) -> Any:
        """``fn(*args)`` on the V8 thread; its result, or its exception raised here."""
        if threading.current_thread() is self._thread:
            return fn(*args)
        if not self._thread.is_alive():  # made by the parent of a forked process
            raise ExportError("the V8 thread of this engine is gone (it was made before a fork)")
        done, out = threading.Event(), []
        self._jobs.put((fn, args, done, out))
        while not done.wait(1.0):  # a V8 thread that died never answers: say so
            if not self._thread.is_alive():
                raise ExportError("the V8 thread of this process stopped (mini-racer failed)")
        ok, value = out[0]
        if not ok:
            raise value
        return value


def v8_thread() -> V8Thread:
    """The process's :class:`V8Thread`, started on first use."""
    global _v8_thread
    with _v8_lock:
        if _v8_thread is None:
            _v8_thread = V8Thread()
        return _v8_thread


def _forget_after_fork() -> None:
    # the child has none of the parent's threads: its V8 thread and engines are new
    global _v8_thread, _lock, _v8_lock
    _lock, _v8_lock = threading.Lock(), threading.Lock()
    _v8_thread = None
    _engines.clear()
    _alive.clear()  # the parent's engines: their V8 lives in the parent


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)


class Engine:
    """A V8 context with a drawing bundle loaded.

    Args:
        bundle: the bundle file (an IIFE defining ``globalThis.cctvizExport``).

    Example:
        >>> import cctviz
        >>> from cctviz.export.payload import payload
        >>> view = cctviz.CCTView(cctviz.Tree.from_parents([-1], ["main"], {"time": [1.0]}))
        >>> engine = Engine(EXPORT_BUNDLE)
        >>> "<text" in engine.render_svg(payload(view))
        True
    """

    def __init__(self, bundle: str | os.PathLike[str]) -> None:
        self.bundle = Path(bundle)
        try:
            text = self.bundle.read_text(encoding="utf-8")
        except OSError as e:
            raise ExportError(
                f"the export bundle {self.bundle} cannot be read ({e.strerror or e}): it is built"
                " by `pip install -e .` or `npm run build` in the repository"
            ) from None
        from py_mini_racer import MiniRacer

        self._lock = threading.Lock()
        # made, used and freed on the V8 thread (see the module's docstring)
        self._v8 = v8_thread()
        self._ctx: Any = self._v8.run(MiniRacer)
        _alive.add(self)
        try:
            self._v8.run(self._ctx.eval, text)
            kind = self._v8.run(self._ctx.eval, f"typeof (globalThis.{GLOBAL} || {{}}).{ENTRY}")
        except Exception as e:  # JSEvalException, JSParseException, ...
            self.close()
            raise ExportError(
                f"the export bundle {self.bundle} failed to load: {_first_line(e)}"
            ) from e
        if kind != "function":
            self.close()
            raise ExportError(f"the export bundle {self.bundle} does not define {GLOBAL}.{ENTRY}")

    def render_svg(self, payload: Mapping[str, Any] | str) -> str:
        """The SVG document (text) the bundle draws for ``payload``.

        ``payload`` is the dict of :func:`cctviz.export.payload` or its JSON.
        """
        text = (
            payload
            if isinstance(payload, str)
            else json.dumps(payload, allow_nan=False, ensure_ascii=False, separators=(",", ":"))
        )
        with self._lock:
            if self._ctx is None:
                raise ExportError(f"the engine of {self.bundle} was closed")
            try:
                out = self._v8.run(self._ctx.call, f"{GLOBAL}.{ENTRY}", text)
            except Exception as e:
                raise ExportError(
                    f"{self.bundle.name} ({self.bundle}): {GLOBAL}.{ENTRY} failed: {_first_line(e)}"
                ) from e
        if not isinstance(out, str):
            raise ExportError(
                f"{self.bundle.name} ({self.bundle}): {GLOBAL}.{ENTRY} returned"
                f" {type(out).__name__}, not an SVG string"
            )
        return out

    def __del__(self) -> None:
        # An engine dropped without close(): free its context on the V8 thread, not
        # in whichever thread the garbage collector runs (a crash, see above), and
        # never wait for it. The collector may run this on mini-racer's own
        # callback thread while the V8 thread waits in a MiniRacer() for a callback
        # from that very thread: waiting here would deadlock both.
        ctx, self._ctx = getattr(self, "_ctx", None), None
        if ctx is not None:
            try:
                self._v8.submit(ctx.close)
            except Exception:  # the V8 thread is gone (interpreter exit, a fork)
                pass

    def close(self) -> None:
        """Free the V8 context; the engine cannot draw afterwards."""
        with self._lock:
            ctx, self._ctx = self._ctx, None
        if ctx is not None:
            self._v8.run(ctx.close)


@atexit.register
def _close_all() -> None:
    # Left to the garbage collector at interpreter exit, a context would be
    # freed after the daemon threads (the V8 thread, mini-racer's event loop)
    # were frozen: the process hangs or crashes. Close while they still run.
    with _lock:
        engines = list(_alive)
        _engines.clear()
    for eng in engines:
        try:
            eng.close()
        except Exception:  # exiting anyway
            pass


def get_engine(bundle: str | os.PathLike[str] | None = None) -> Engine:
    """The process's engine for ``bundle`` (default :data:`EXPORT_BUNDLE`), made once.

    Example:
        >>> get_engine() is get_engine()
        True
    """
    path = Path(EXPORT_BUNDLE if bundle is None else bundle).resolve()
    key = (os.getpid(), path)  # a forked child makes its own V8
    with _lock:
        eng = _engines.get(key)
        if eng is None:
            eng = _engines[key] = Engine(path)
        return eng


def render_svg(
    payload: Mapping[str, Any] | str, bundle: str | os.PathLike[str] | None = None
) -> str:
    """Draw ``payload`` with the process's engine (see :func:`get_engine`).

    Example:
        >>> import cctviz
        >>> from cctviz.export.payload import payload
        >>> view = cctviz.CCTView(cctviz.Tree.from_parents([-1], ["main"], {"time": [1.0]}))
        >>> render_svg(payload(view, width="3.5in")).count("252pt")
        1
    """
    return get_engine(bundle).render_svg(payload)
