"""Exceptions raised by cctviz.

Every problem with an input file is a :class:`ProfileError` that names the
file, the place in it and what was expected, so a user can fix the input
without reading a traceback.
"""

from __future__ import annotations

import os


class CCTVizError(Exception):
    """Base class of every error cctviz raises on purpose."""


class ProfileError(CCTVizError, ValueError):
    """A profile file (or in-memory profile) could not be read.

    Args:
        path: file the problem is in (``None`` for in-memory input).
        problem: what is wrong, and what was expected instead.
        where: place in the file: a JSON path (``nodes[12].parent``), a line
            and column, a table and row.

    Example:
        >>> e = ProfileError("p.json", "expected a list", where="nodes")
        >>> str(e)
        'p.json: at nodes: expected a list'
    """

    def __init__(self, path: str | os.PathLike | None, problem: str, where: str | None = None):
        self.path = None if path is None else os.fspath(path)
        self.problem = problem
        self.where = where
        head = self.path if self.path is not None else "<in-memory profile>"
        loc = f" at {where}:" if where else ""
        super().__init__(f"{head}:{loc} {problem}")

    def __reduce__(self) -> tuple:
        # pickled as it is (raised in a worker process or a Dask task, re-raised
        # here), not by re-calling __init__ with the message
        return _restore, (type(self), self.args, dict(self.__dict__))


def _restore(cls: type, args: tuple, state: dict) -> BaseException:
    """A pickled :class:`ProfileError` (or subclass) as it was.

    >>> import pickle
    >>> e = pickle.loads(pickle.dumps(ProfileError("p.json", "bad", where="x")))
    >>> (type(e).__name__, e.path, e.where, str(e))
    ('ProfileError', 'p.json', 'x', 'p.json: at x: bad')
    """
    e = cls.__new__(cls)
    Exception.__init__(e, *args)
    e.__dict__.update(state)
    return e


class UnknownFormatError(ProfileError):
    """No reader recognised the file."""


class ReaderBugError(ProfileError):
    """A reader failed on a file with an internal exception: a bug in cctviz,
    not a fault it found in the file. Still a :class:`ProfileError` (it names
    the file, and code that catches bad input catches it), but its message says
    whose fault it is and carries the exception.

    Example:
        >>> e = ReaderBugError("t.json", "kineto", KeyError("ts"))
        >>> "a bug in cctviz" in str(e) and "KeyError: 'ts'" in str(e)
        True
    """

    def __init__(self, path: str | os.PathLike, reader: str, error: BaseException):
        self.error = error
        super().__init__(
            path,
            f"cctviz's {reader} reader failed ({type(error).__name__}: {error}); this is "
            "a bug in cctviz, not a fault found in the file: please report it with the file",
        )


class QueryError(CCTVizError, ValueError):
    """A call-path query is malformed; the message points at the offending part."""


class WorkerError(CCTVizError, RuntimeError):
    """A worker process of a parallel read stopped without an answer (killed, or
    it could not start); the message says the usual causes."""


class ExportError(CCTVizError):
    """A figure could not be exported: the drawing bundle is missing or failed,
    or the output cannot be written as asked."""


class ExportOptionError(ExportError, ValueError):
    """An export option has a wrong name or value; the message names the option.

    Example:
        >>> str(ExportOptionError("width", "expected a length such as '3.5in', got 'wide'"))
        "width: expected a length such as '3.5in', got 'wide'"
    """

    def __init__(self, option: str, problem: str):
        self.option = option
        super().__init__(f"{option}: {problem}")


class MissingDependencyError(ExportError, ImportError):
    """An optional package needed for an output format is not installed."""


class FigureFitWarning(UserWarning):
    """An exported figure could not hold everything at the font size asked for:
    it folded levels or nodes, or grew wider or taller than asked. The figure's
    caption says the same; the text on the page keeps the size asked for."""
