"""Python function frames as contexts (``--python-frames``).

Only *user code* gets a context: functions whose file is not in the
standard library, not in site-packages, not in cctviz and not synthetic
(``<frozen ...>``, ``<string>``). The callback still runs for every call, so
this mode is for finding where in your own code time goes, not for
always-on use.

Python 3.12+ uses ``sys.monitoring`` (events are switched off per code
object that is not user code, so library calls cost nothing after their
first call); older versions use ``sys.setprofile``. Both only see the main
thread.
"""

from __future__ import annotations

import os
import sys
import sysconfig
from collections.abc import Callable
from typing import Any

_LIB_DIRS = tuple(
    os.path.realpath(p) + os.sep
    for p in {
        sysconfig.get_paths().get(k)
        for k in ("stdlib", "platstdlib", "purelib", "platlib")
        if sysconfig.get_paths().get(k)
    }
)
_OWN_DIR = os.path.realpath(os.path.dirname(os.path.dirname(__file__))) + os.sep


def is_user_file(filename: str) -> bool:
    """Whether code from ``filename`` is the user's (not stdlib, site-packages or cctviz)."""
    if not filename or filename.startswith("<"):
        return False
    real = os.path.realpath(filename)
    if real.startswith(_OWN_DIR):
        return False
    return not real.startswith(_LIB_DIRS) and "site-packages" not in real


def user_code_name(code: Any) -> str | None:
    """``"Trainer.step (train.py:42)"`` for user code, None otherwise.

    >>> def f(): pass
    >>> user_code_name(f.__code__) is None  # defined in a doctest: synthetic file
    True
    >>> user_code_name(is_user_file.__code__) is None  # cctviz itself
    True
    """
    if not is_user_file(code.co_filename):
        return None
    qual = getattr(code, "co_qualname", code.co_name)
    return f"{qual} ({os.path.basename(code.co_filename)}:{code.co_firstlineno})"


def install(hooks: Any) -> Callable[[], None]:
    """Report user-code frames to ``hooks.frame_enter``/``frame_exit``; returns an undo."""
    if sys.version_info >= (3, 12):
        return _install_monitoring(hooks)
    return _install_setprofile(hooks)


def _install_setprofile(hooks: Any) -> Callable[[], None]:
    enter, leave = hooks.frame_enter, hooks.frame_exit

    def profiler(frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            enter(frame, frame.f_code)
        elif event == "return":
            leave(frame)

    prev = sys.getprofile()
    sys.setprofile(profiler)
    return lambda: sys.setprofile(prev)


def _install_monitoring(hooks: Any) -> Callable[[], None]:  # pragma: no cover - Python 3.12+
    mon = sys.monitoring  # type: ignore[attr-defined]
    tool = None
    for t in (mon.PROFILER_ID, 3, 4, 5):
        try:
            mon.use_tool_id(t, "cctviz")
            tool = t
            break
        except ValueError:
            continue
    if tool is None:
        raise RuntimeError("no free sys.monitoring tool id for cctviz")
    disable = mon.DISABLE
    name_of = hooks._frame_name
    enter, leave = hooks.frame_enter, hooks.frame_exit

    def start(code: Any, offset: int) -> Any:
        if name_of(code) is None:
            return disable
        enter(sys._getframe(1), code)
        return None

    def stop(code: Any, offset: int, value: Any) -> Any:
        if name_of(code) is None:
            return disable
        leave(sys._getframe(1))
        return None

    def unwind(code: Any, offset: int, exc: Any) -> None:  # PY_UNWIND cannot be disabled
        if name_of(code) is not None:
            leave(sys._getframe(1))

    ev = mon.events
    mon.register_callback(tool, ev.PY_START, start)
    mon.register_callback(tool, ev.PY_RESUME, start)
    mon.register_callback(tool, ev.PY_RETURN, stop)
    mon.register_callback(tool, ev.PY_YIELD, stop)
    mon.register_callback(tool, ev.PY_UNWIND, unwind)
    events = ev.PY_START | ev.PY_RESUME | ev.PY_RETURN | ev.PY_YIELD | ev.PY_UNWIND
    mon.set_events(tool, events)

    def undo() -> None:
        mon.set_events(tool, 0)
        for e in (ev.PY_START, ev.PY_RESUME, ev.PY_RETURN, ev.PY_YIELD, ev.PY_UNWIND):
            mon.register_callback(tool, e, None)
        mon.free_tool_id(tool)

    return undo
