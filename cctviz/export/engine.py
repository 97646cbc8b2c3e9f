"""The drawing engine: the front end's ``scene`` + ``draw`` in an embedded V8.

``cctviz/static/cctviz-export.js`` (built from ``js/`` with the widget's own
drawing code and a small DOM shim) defines ``cctvizExport.renderSVG(json)``.
It runs here in mini-racer, with no browser and no DOM: one V8 context per
process, made on first use, with the bundle's text loaded once. Calls are
serialised by a lock, so threads may share it.
"""

from __future__ import annotations

import atexit
import concurrent.futures
import json
import os
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
_engines: dict[tuple[int, Path], Engine] = {}
_alive: weakref.WeakSet[Engine] = weakref.WeakSet()  # closed at exit (see _close_all)


def _first_line(e: BaseException) -> str:
    lines = [ln for ln in str(e).splitlines() if ln.strip()]
    # mini-racer's message: "<anonymous>:LINE: Error: what\n<source line>\n^\n\nstack"
    for ln in lines:
        if "Error" in ln:
            return ln.strip()
    return lines[0].strip() if lines else type(e).__name__


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
        # made in a thread of its own: MiniRacer adopts the caller's running
        # asyncio loop when there is one (a Jupyter kernel's, Playwright's) and
        # then waits on it from that loop's own thread, for ever; from a fresh
        # thread it starts a loop of its own
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            self._ctx: Any = pool.submit(MiniRacer).result()
        _alive.add(self)
        try:
            self._ctx.eval(text)
            kind = self._ctx.eval(f"typeof (globalThis.{GLOBAL} || {{}}).{ENTRY}")
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
                out = self._ctx.call(f"{GLOBAL}.{ENTRY}", text)
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

    def close(self) -> None:
        """Free the V8 context; the engine cannot draw afterwards."""
        with self._lock:
            ctx, self._ctx = self._ctx, None
        if ctx is not None:
            ctx.close()


@atexit.register
def _close_all() -> None:
    # mini-racer runs V8 callbacks on an event loop in a daemon thread; left to
    # the garbage collector at interpreter exit, closing the context joins that
    # thread after it was frozen, and the process hangs now and then. Close
    # while every thread still runs.
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
