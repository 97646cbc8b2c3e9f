"""mpi4py calls in the runtime: recorded as ``torch.distributed``'s are.

When a profiled process imports ``mpi4py.MPI`` (or has imported it before the
profiler starts), its point-to-point and collective calls on ``COMM_WORLD``,
``COMM_SELF`` and the communicators made from them (``Dup``, ``Split``,
``Create``...) become communication leaves (kind ``"comm"``) under the
caller's current context, named by the kind of the call
(:func:`cctviz.model.collectives.leaf_name`: ``all_reduce``, ``broadcast``,
``send``, ``recv``; ``sendrecv`` for ``Sendrecv``), with ``calls``,
``comm_time`` (ns, from the call to its return), ``comm_bytes`` and
``bus_bytes`` (B, nccl-tests' factors), exactly the metrics the torch hooks
record (:mod:`cctviz.runtime.hooks`).

mpi4py's communicator classes are C extension types whose methods cannot be
replaced, so the profiler subclasses ``MPI.Intracomm`` with wrapping methods
and puts an instance of it, on the same MPI handle, in the module's
``COMM_WORLD`` and ``COMM_SELF``; the calls that make new communicators give
instances of the subclass too. Code that kept a reference to the original
``COMM_WORLD`` from before the profiler started is not seen.

Bytes follow the table of :mod:`cctviz.model.collectives` (the buffer a call is
about, per rank):

- upper-case methods (buffers): the buffer's ``nbytes`` (a buffer
  specification ``[data, count, datatype]`` counts ``count`` elements of the
  datatype's size); ``MPI.IN_PLACE`` counts the other buffer; gathers count
  ``n`` x the part sent, scatters ``n`` x the part received;
- lower-case methods (Python objects): the size of the pickles the call
  serialises and deserialises, seen through ``MPI.pickle`` (no second
  pickling): for point-to-point calls all of them; for collectives this
  rank's contribution (its first pickle, else the first it receives), scaled
  as above. ``irecv`` deserialises in ``wait()``, outside the call: 0 bytes;
- ``Sendrecv``: the bytes sent plus the bytes received.

Non-blocking calls (``Isend``, ``Irecv``...) count the time to issue them;
the waits on their requests are not recorded (mpi4py's ``Request`` cannot be
wrapped without copying its handle). With a timeline (``--timeline``) the
calls are contexts of the trace, without message records.

>>> import numpy as np
>>> buffer_bytes(np.zeros(10)), buffer_bytes([np.zeros(10), 4, _Datatype(8)])
(80, 32)
>>> call_bytes("all_gather", sent=80, received=None, n=4)
320
"""

from __future__ import annotations

import functools
import importlib.abc
import pickle
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..model.collectives import bus_factor, leaf_name
from ..model.formats import K_COMM

#: the point-to-point kind a ``Sendrecv`` is recorded as (both directions' bytes)
SENDRECV = "sendrecv"
_P2P = ("send", "recv", SENDRECV)

#: mpi4py method -> (kind, send buffer (position, keyword), receive buffer (position, keyword));
#: lower-case methods move pickled objects (their bytes come from ``MPI.pickle``)
MPI_CALLS: dict[str, tuple[str, tuple[int, str] | None, tuple[int, str] | None]] = {
    **dict.fromkeys(
        ("Send", "Ssend", "Bsend", "Rsend", "Isend", "Issend", "Ibsend", "Irsend"),
        ("send", (0, "buf"), None),
    ),
    **dict.fromkeys(("Recv", "Irecv"), ("recv", None, (0, "buf"))),
    "Sendrecv": (SENDRECV, (0, "sendbuf"), (3, "recvbuf")),
    "Sendrecv_replace": (SENDRECV, (0, "buf"), (0, "buf")),
    **dict.fromkeys(("Bcast", "Ibcast"), ("broadcast", (0, "buf"), None)),
    **dict.fromkeys(("Reduce", "Ireduce"), ("reduce", (0, "sendbuf"), (1, "recvbuf"))),
    **dict.fromkeys(("Allreduce", "Iallreduce"), ("all_reduce", (0, "sendbuf"), (1, "recvbuf"))),
    **dict.fromkeys(("Gather", "Igather"), ("gather", (0, "sendbuf"), (1, "recvbuf"))),
    **dict.fromkeys(("Allgather", "Iallgather"), ("all_gather", (0, "sendbuf"), (1, "recvbuf"))),
    **dict.fromkeys(("Scatter", "Iscatter"), ("scatter", (0, "sendbuf"), (1, "recvbuf"))),
    **dict.fromkeys(("Alltoall", "Ialltoall"), ("all_to_all", (0, "sendbuf"), (1, "recvbuf"))),
    "Reduce_scatter_block": ("reduce_scatter", (0, "sendbuf"), (1, "recvbuf")),
    **dict.fromkeys(("Barrier", "Ibarrier", "barrier"), ("barrier", None, None)),
    **dict.fromkeys(("send", "ssend", "isend", "issend"), ("send", None, None)),
    **dict.fromkeys(("recv", "irecv"), ("recv", None, None)),
    "sendrecv": (SENDRECV, None, None),
    "bcast": ("broadcast", None, None),
    "reduce": ("reduce", None, None),
    "allreduce": ("all_reduce", None, None),
    "gather": ("gather", None, None),
    "allgather": ("all_gather", None, None),
    "scatter": ("scatter", None, None),
    "alltoall": ("all_to_all", None, None),
}
#: methods that make a communicator: their result is wrapped too
_MAKERS = ("Dup", "Split", "Split_type", "Create", "Create_group", "Clone", "Idup")


class _Datatype:
    """A stand-in for an MPI datatype in examples (anything with ``Get_size``)."""

    def __init__(self, size: int) -> None:
        self.size = size

    def Get_size(self) -> int:  # noqa: N802 - mpi4py's spelling
        return self.size


def buffer_bytes(buf: Any) -> int | None:
    """Bytes of an mpi4py buffer argument: a buffer (``nbytes`` of its memoryview)
    or a specification ``[data, datatype]``, ``[data, count, datatype]``,
    ``[data, (count, displacement), datatype]``; None for ``MPI.IN_PLACE``,
    ``None`` and anything else.

    >>> buffer_bytes(bytearray(16)), buffer_bytes([bytearray(16), (2, 0), _Datatype(4)])
    (16, 8)
    >>> buffer_bytes(None) is None
    True
    """
    if buf is None:
        return None
    if isinstance(buf, (list, tuple)) and buf:
        if len(buf) == 3 and hasattr(buf[2], "Get_size"):
            count = buf[1][0] if isinstance(buf[1], (list, tuple)) and buf[1] else buf[1]
            if isinstance(count, int):
                return count * int(buf[2].Get_size())
        return buffer_bytes(buf[0])
    try:
        return memoryview(buf).nbytes
    except TypeError:
        return None


def call_bytes(kind: str, sent: int | None, received: int | None, n: int) -> int:
    """Bytes of one call of ``kind`` on ``n`` ranks from the bytes this rank sent and
    received (None: not known, as ``MPI.IN_PLACE``), by the table of
    :mod:`cctviz.model.collectives`: gathers count the whole gathered buffer,
    scatters the whole scattered one, a ``sendrecv`` both directions.

    >>> call_bytes("sendrecv", 8, 8, 2), call_bytes("all_reduce", None, 64, 4)
    (16, 64)
    >>> call_bytes("scatter", None, 10, 4), call_bytes("barrier", None, None, 4)
    (40, 0)
    """
    s, r = sent or 0, received or 0
    if kind == SENDRECV:
        return s + r
    if kind in ("gather", "all_gather"):
        return n * s if sent is not None else r
    if kind in ("scatter", "reduce_scatter"):
        return n * r if received is not None else s
    return s if sent is not None else r


def _arg(args: Sequence[Any], kwargs: Mapping[str, Any], where: tuple[int, str] | None) -> Any:
    if where is None:
        return None
    pos, key = where
    return args[pos] if len(args) > pos else kwargs.get(key)


class MpiHooks:
    """Wraps mpi4py's communicators for one :class:`~cctviz.runtime.hooks.TorchHooks`
    (its recorder, clock, thread rules and failure handling), module docstring."""

    def __init__(self, hooks: Any) -> None:
        self.hooks = hooks
        self.world: int | None = None
        self._finder: _Finder | None = None

    def install(self) -> None:
        """Wrap now if ``mpi4py.MPI`` is imported, else when it is."""
        mod = sys.modules.get("mpi4py.MPI")
        if mod is not None:
            self.wrap(mod)
            return
        self._finder = _Finder(self)
        sys.meta_path.insert(0, self._finder)
        self.hooks._undo.append(self._remove_finder)

    def _remove_finder(self) -> None:
        if self._finder in sys.meta_path:
            sys.meta_path.remove(self._finder)

    def wrap(self, MPI: Any) -> None:  # noqa: N803 - the module's own name
        """Put wrapping communicators in ``MPI.COMM_WORLD``/``COMM_SELF`` and hook ``MPI.pickle``."""
        hooks = self.hooks
        if not hooks.on:
            return
        self._remove_finder()
        cls = self._comm_class(MPI)
        self.world = MPI.COMM_WORLD.Get_size()
        hooks.facts["mpi"] = MPI.Get_library_version().split("\n")[0].split(",")[0].strip()
        for name in ("COMM_WORLD", "COMM_SELF"):
            hooks._patch(MPI, name, cls(getattr(MPI, name)))
        self._hook_pickle(MPI)

    def _comm_class(self, MPI: Any) -> type:  # noqa: N803
        base = MPI.Intracomm
        ns: dict[str, Any] = {}
        for name in MPI_CALLS:
            fn = getattr(base, name, None)
            if callable(fn):
                ns[name] = self._wrapper(name, fn)
        cls = type("ProfiledIntracomm", (base,), ns)
        for name in _MAKERS:
            fn = getattr(base, name, None)
            if callable(fn):
                setattr(cls, name, _maker(fn, base, cls))
        return cls

    def _hook_pickle(self, MPI: Any) -> None:  # noqa: N803
        """Count the pickles mpi4py makes and reads (``MPI.pickle``) while a call runs."""
        tls = self.hooks._tls
        proto = MPI.pickle.PROTOCOL

        def dumps(obj: Any, *a: Any, **k: Any) -> bytes:
            b = pickle.dumps(obj, *a, **k) if (a or k) else pickle.dumps(obj, proto)
            p = getattr(tls, "mpi_pickles", None)
            if p is not None:
                p.append(len(b))
            return b

        def loads(buf: Any, *a: Any, **k: Any) -> Any:
            p = getattr(tls, "mpi_pickles", None)
            if p is not None:
                p.append(-memoryview(buf).nbytes)
            return pickle.loads(buf, *a, **k)

        MPI.pickle.__init__(dumps, loads)
        self.hooks._undo.append(lambda: MPI.pickle.__init__(pickle.dumps, pickle.loads))

    def _wrapper(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        kind, send, recv = MPI_CALLS[name]
        objects = name[0].islower()
        hooks = self.hooks

        @functools.wraps(fn)
        def call(comm: Any, *args: Any, **kwargs: Any) -> Any:
            tls = hooks._tls
            if not hooks.on or getattr(tls, "comm", 0):
                return fn(comm, *args, **kwargs)
            try:
                n = comm.Get_size()
                rec = hooks.rec
                leaf = leaf_name(kind, n, self.world)
                if hooks._mine():
                    depth = rec.enter_leaf(leaf, K_COMM)
                    ctx = rec.top
                else:
                    depth, ctx = None, rec.leaf_here(leaf, K_COMM)
                nbytes = 0
                if not objects:
                    sent = buffer_bytes(_arg(args, kwargs, send))
                    nbytes = call_bytes(kind, sent, buffer_bytes(_arg(args, kwargs, recv)), n)
            except Exception as e:  # noqa: BLE001
                hooks.fail(e)
                return fn(comm, *args, **kwargs)
            tls.comm = 1
            tls.mpi_pickles = pickles = [] if objects else None
            t0 = hooks.clock()
            try:
                return fn(comm, *args, **kwargs)
            finally:
                t1 = hooks.clock()
                tls.comm = 0
                tls.mpi_pickles = None
                try:
                    if objects:
                        nbytes = _pickled_bytes(kind, pickles, n)
                    rec.add(ctx, "comm_bytes", nbytes)
                    rec.add(ctx, "bus_bytes", nbytes * bus_factor(_bus_kind(kind), n))
                    rec.add(ctx, "comm_time", t1 - t0)
                    if depth is not None:
                        hooks.leave(depth, ctx)
                except Exception as e:  # noqa: BLE001
                    hooks.fail(e)

        call.__cctviz_wrapped__ = fn  # type: ignore[attr-defined]
        return call


def _bus_kind(kind: str) -> str:
    return "send" if kind == SENDRECV else kind


def _pickled_bytes(kind: str, pickles: list[int], n: int) -> int:
    """Bytes of a lower-case call from the sizes of its pickles (> 0 made, < 0 read)."""
    if kind in _P2P:
        return sum(abs(b) for b in pickles)
    made = next((b for b in pickles if b > 0), None)
    got = next((-b for b in pickles if b < 0), None)
    if kind in ("gather", "all_gather", "scatter", "reduce_scatter"):
        # this rank's part: what it made (gather) or the first part it received (scatter)
        part = made if kind in ("gather", "all_gather") else got
        return n * part if part is not None else (made or got or 0)
    return made if made is not None else (got or 0)


def _maker(fn: Callable[..., Any], base: type, cls: type) -> Callable[..., Any]:
    """A communicator-making method whose result is a ``cls`` (wrapped) as well."""

    @functools.wraps(fn)
    def make(comm: Any, *args: Any, **kwargs: Any) -> Any:
        out = fn(comm, *args, **kwargs)
        if type(out) is base:
            return cls(out)
        return out

    return make


class _Finder(importlib.abc.MetaPathFinder):
    """Wraps ``mpi4py.MPI`` as soon as it is imported (then leaves ``sys.meta_path``)."""

    def __init__(self, owner: MpiHooks) -> None:
        self.owner = owner

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name != "mpi4py.MPI":
            return None
        spec = None
        for finder in sys.meta_path:  # the others, in order (mpi4py's wheels add one of
            find = getattr(finder, "find_spec", None)  # their own: the MPI ABI's module)
            if finder is not self and find is not None:
                spec = find(name, path, target)
                if spec is not None:
                    break
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return None
        loader = spec.loader
        exec_module = loader.exec_module
        owner = self.owner

        def exec_and_wrap(module: Any) -> None:
            exec_module(module)
            try:
                owner.wrap(module)
            except Exception as e:  # noqa: BLE001 - never break the user's import
                owner.hooks.fail(e)

        loader.exec_module = exec_and_wrap  # type: ignore[method-assign]
        return spec


__all__ = ["MPI_CALLS", "MpiHooks", "buffer_bytes", "call_bytes"]
