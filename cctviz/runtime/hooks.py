"""The torch side of the runtime: hooks that report transitions to a Recorder.

Cheapest first (costs measured on CPU with gloo, docs/architecture.md section 9):

- nn.Module paths: the *global* forward pre/post hooks
  (``register_module_forward_pre_hook``), a few microseconds per call.
- phases: ``torch.autograd.backward``/``grad`` wrapped (backward), the
  global optimizer step pre/post hooks (optimizer; in automatic mode the
  post hook ends the step), ``_BaseDataLoaderIter.__next__`` (data).
- collectives: ``torch.distributed.<op>`` and ``distributed_c10d.<op>``
  wrapped (user code, FSDP1, FSDP2; nested calls such as
  ``all_gather_into_tensor`` -> ``all_gather_single`` count once), and a
  DDP comm hook for the C++ reducer's bucket all-reduces, which no Python
  wrapper sees. Async work: the span from issue to the return of
  ``Work.wait()`` is the collective's ``comm_time``; the wait itself is a
  ``wait`` leaf where the user waits.
- activations (``act_bytes=True``): ``torch.autograd.graph.saved_tensors_hooks``
  (the default hooks of the training thread) see every tensor autograd saves
  for backward; its storage's bytes go to the context on top as ``act_bytes``,
  each storage once per forward pass (views share one), parameters left out
  (they are model states; buffers count). Not where the job's own saved-tensor
  hooks are active (activation offloading, checkpointing that packs): those
  run instead, so nothing is counted inside them, and none are installed where
  hooks were active at start. Off by default: ``torch.func``'s transforms
  refuse to run while saved-tensor hooks are pushed.
- ``mode="detailed"`` adds a ``TorchDispatchMode`` that records every
  aten/c10d op as a leaf (about 4 us per op) and attributes backward time to
  modules through pre-hooks on their outputs' ``grad_fn``.

Nothing here synchronises the device: on CUDA, events are recorded at
transitions and resolved at the end of each step.

Any exception inside a hook is logged once and disables the profiler; the
training job carries on.
"""

from __future__ import annotations

import functools
import inspect
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from ..model.collectives import leaf_name
from ..model.formats import K_COMM, K_FUNC, K_OP, K_REGION
from ..perfmodel.analytic import WRAPPER_SEGMENTS, ModelSpec, module_class_name, unwrap_once
from .comm import COLLECTIVES, bus_factor, collective_bytes
from .recorder import Recorder
from .states import model_states

log = logging.getLogger("cctviz.runtime")

_PENDING_MAX = 4096
#: tracing: where the root (rooted collectives) or the peer (point-to-point) is
#: among the arguments: (position, keyword); ``group_<keyword>`` gives it as a group rank
_ROOT_ARG = {
    "broadcast": (1, "src"),
    "_broadcast_coalesced": (3, "src"),
    "reduce": (1, "dst"),
    "gather": (2, "dst"),
    "scatter": (2, "src"),
    "send": (1, "dst"),
    "isend": (1, "dst"),
    "recv": (1, "src"),
    "irecv": (1, "src"),
}


def relative_names(parent: Any) -> dict[int, str]:
    """``id(submodule) -> path`` below ``parent``, wrapper segments left out.

    A submodule whose path is empty (the module inside a DDP or FSDP1
    wrapper) is the wrapper's own content: it gets no context of its own.
    """
    out: dict[int, str] = {}
    todo = [(parent, "")]
    while todo:
        mod, path = todo.pop()
        ddp = type(mod).__name__ in ("DistributedDataParallel", "DataParallel")
        for nm, ch in mod._modules.items():
            if ch is None or id(ch) in out:
                continue
            if nm in WRAPPER_SEGMENTS or (ddp and nm == "module"):
                p = path
            else:
                p = f"{path}.{nm}" if path else nm
            out[id(ch)] = p
            todo.append((ch, p))
    return out


def _model_spec(module: Any) -> dict[str, Any] | None:
    """What the performance models need of the model (``cctviz.perfmodel``):
    parameter shapes, dtypes and module paths, FSDP2 units, as JSON."""
    try:
        return ModelSpec.from_module(module).to_dict()
    except Exception as e:  # noqa: BLE001 - a model the description cannot read
        log.warning("cctviz: no model description for the performance models: %s", e)
        return None


def tensor_shapes(obj: Any, depth: int = 2) -> list[list[Any]]:
    """``[[shape], dtype]`` of the tensors in ``obj`` (a tensor, or tuples,
    lists and dicts of them, ``depth`` levels down), in order.

    >>> import torch
    >>> tensor_shapes((torch.zeros(2, 3, dtype=torch.int64), {"mask": torch.ones(3)}, 4))
    [[[2, 3], 'int64'], [[3], 'float32']]
    """
    if hasattr(obj, "shape") and hasattr(obj, "dtype") and hasattr(obj, "untyped_storage"):
        return [[[int(d) for d in obj.shape], str(obj.dtype).removeprefix("torch.")]]
    if depth <= 0:
        return []
    if isinstance(obj, dict):
        obj = list(obj.values())
    if isinstance(obj, (list, tuple)):
        return [s for item in obj for s in tensor_shapes(item, depth - 1)]
    return []


def strategy_of(m: Any) -> str | None:
    """``"DDP"``, ``"FSDP"`` (FSDP1), ``"FSDP2"`` (``fully_shard``) or None."""
    for _ in range(8):
        name = type(m).__name__
        if name == "DistributedDataParallel":
            return "DDP"
        if name == "FullyShardedDataParallel":
            return "FSDP"
        if any(b.__name__ == "FSDPModule" for b in type(m).__mro__):
            return "FSDP2"
        inner = unwrap_once(m)  # one wrapper at a time: torch.compile(DDP(model))
        if inner is m:
            return None
        m = inner
    return None


def count_parameters(m: Any) -> int:
    """Parameters of a model, unsharded (FSDP1 flat parameters count their full size)."""
    seen: set[int] = set()
    total = 0
    for p in m.parameters():
        if id(p) in seen:
            continue
        seen.add(id(p))
        full = getattr(p, "_unpadded_unsharded_size", None)  # FSDP1 FlatParameter
        total += int(full.numel()) if full is not None else int(p.numel())
    return total


class TorchHooks:
    """Installs the hooks and forwards what they see to ``rec``.

    ``on_step_end`` runs after every step boundary (the GPU timer resolves
    its events there).
    """

    def __init__(
        self,
        rec: Recorder,
        *,
        mode: str = "light",
        auto_steps: bool = True,
        python_frames: bool = False,
        act_bytes: bool = False,
        clock: Callable[[], int] = time.perf_counter_ns,
        on_phase: Callable[[int], None] | None = None,
        on_step_end: Callable[[], None] | None = None,
        on_fail: Callable[[BaseException], None] | None = None,
    ) -> None:
        if mode not in ("light", "detailed"):
            raise ValueError(f"mode must be 'light' or 'detailed', not {mode!r}")
        self.rec = rec
        self.mode = mode
        self.auto_steps = auto_steps
        self.python_frames = python_frames
        self.act_bytes = act_bytes
        self.clock = clock
        self.on_phase = on_phase
        self.on_step_end = on_step_end
        self.on_fail = on_fail
        self.on = False
        self.main = threading.get_ident()
        self._in_backward = 0
        self._tls = threading.local()
        self._undo: list[Callable[[], None]] = []
        self._mods: list[tuple[Any, int, int]] = []  # (module, depth, ctx) or depth -1
        self._names: dict[int, dict[int, str]] = {}
        self._keep: dict[int, Any] = {}  # modules whose ids are cached
        self._model: Any = None  # the root module (its parameters: the model states)
        self._states_measured = False
        #: the first measured step's module contexts: their inputs' and outputs'
        #: tensor shapes and dtypes (recorded for that step only)
        self._shapes: dict[int, list[Any]] = {}
        self._shapes_open = True
        self._group_size: dict[int, int] = {}
        self._trace_comms: dict[int, tuple[int, list[int]]] = {}
        self._pending: dict[int, tuple[int, int]] = {}
        self._async_pos: dict[str, int | None] = {}
        self._frames: list[tuple[Any, int, int]] = []
        self._code_names: dict[Any, str | None] = {}
        self.world_size: int | None = None
        self.facts: dict[str, Any] = {"strategy": "none"}
        self.failed: BaseException | None = None
        self._saved: set[int] = set()  # storages counted in act_bytes this forward pass
        self._parameter: type | None = None
        self._counting = False

    # ----------------------------------------------------------- plumbing
    def _mine(self) -> bool:
        # transitions come from the main thread, or from autograd threads
        # while the main thread waits in backward()
        return self.on and (threading.get_ident() == self.main or self._in_backward > 0)

    def fail(self, exc: BaseException) -> None:
        """Log, switch everything off, keep the training running."""
        if self.failed is not None:
            return
        self.failed = exc
        log.warning("cctviz: the profiler failed and disabled itself: %r", exc, exc_info=exc)
        self.uninstall()
        if self.on_fail is not None:
            self.on_fail(exc)

    def _patch(self, owner: Any, name: str, new: Any) -> None:
        old = (
            owner.__dict__[name] if name in getattr(owner, "__dict__", {}) else getattr(owner, name)
        )
        setattr(owner, name, new)
        self._undo.append(lambda: setattr(owner, name, old))

    def install(self) -> None:
        import torch

        self.on = True
        mod = torch.nn.modules.module
        h1 = mod.register_module_forward_pre_hook(self._fwd_pre)
        h2 = mod.register_module_forward_hook(self._fwd_post, always_call=True)
        self._undo += [h1.remove, h2.remove]
        from torch.optim import optimizer as optim_mod

        h3 = optim_mod.register_optimizer_step_pre_hook(self._opt_pre)
        h4 = optim_mod.register_optimizer_step_post_hook(self._opt_post)
        self._undo += [h3.remove, h4.remove]
        self._patch(torch.autograd, "backward", self._phase_wrapper(torch.autograd.backward))
        self._patch(torch.autograd, "grad", self._phase_wrapper(torch.autograd.grad))
        from torch.utils.data import dataloader

        it = dataloader._BaseDataLoaderIter
        self._patch(it, "__next__", self._data_wrapper(it.__next__))
        self._install_dist()
        if self.act_bytes:
            self._install_saved()
        if self.mode == "detailed":
            self._install_dispatch()
        if self.python_frames:
            self._install_frames()

    def uninstall(self) -> None:
        self.on = False
        while self._undo:
            try:
                self._undo.pop()()
            except Exception:  # noqa: BLE001 - best effort
                log.debug("cctviz: undo failed", exc_info=True)
        # the job's modules and tensors are the job's again: none kept alive from here
        self._model = None
        self._keep.clear()
        del self._mods[:]

    # ------------------------------------------------------------ modules
    def _fwd_pre(self, module: Any, args: Any) -> None:
        if not self._mine():
            return
        try:
            mods = self._mods
            if mods:
                enc = mods[-1][0]
                names = self._names.get(id(enc))
                if names is None:
                    names = self._names[id(enc)] = relative_names(enc)
                    self._keep[id(enc)] = enc
                name = names.get(id(module))
                if name is None:  # called from a module that does not own it
                    name = module_class_name(module)
                if not name:
                    mods.append((module, -1, -1))
                    return
                depth = self.rec.enter_module(name, root=False)
            else:
                self._root_module(module)
                depth = self.rec.enter_module(module_class_name(module), root=True)
            mods.append((module, depth, self.rec.top))
            if self._shapes_open and depth >= 0:
                self._note_inputs(self.rec.top, module, args)
        except Exception as e:  # noqa: BLE001
            self.fail(e)

    def _root_module(self, module: Any) -> None:
        if id(module) in self._keep:
            return
        self._keep[id(module)] = module
        s = strategy_of(module)
        if self._model is None or s is not None:
            self._model = module
        if s is not None:
            self.facts["strategy"] = s
        if "params" not in self.facts or s is not None:
            self.facts["params"] = count_parameters(module)
            self.facts["model"] = module_class_name(module)
            self.facts["model_spec"] = _model_spec(module)
        if s == "DDP":
            self._ddp_comm_hook(module)
            cap = getattr(module, "bucket_bytes_cap", None)
            if cap is not None:
                self.facts["bucket_bytes"] = int(cap)

    def _note_inputs(self, ctx: int, module: Any, args: Any) -> None:
        """The shapes of a module context's inputs and its class, at its first
        call in the first measured step (the outputs' at its return)."""
        rec = self.rec
        if ctx in self._shapes or not rec.in_step or rec.steps_started <= rec.warmup:
            return
        self._shapes[ctx] = [tensor_shapes(args), None, module_class_name(module)]

    def _close_shapes(self) -> None:
        """At the end of the step that recorded shapes: into the facts, by context path."""
        self._shapes_open = False
        rec = self.rec
        out = {}
        for ctx, (ins, outs, cls) in self._shapes.items():
            path = []
            while ctx >= 0:
                path.append(rec.name[ctx])
                ctx = rec.parent[ctx]
            out["/".join(reversed(path))] = {"in": ins, "out": outs or [], "class": cls}
        self.facts["module_shapes"] = out
        self._shapes.clear()

    def _fwd_post(self, module: Any, args: Any, output: Any) -> None:
        if not self._mine():
            return
        try:
            mods = self._mods
            for k in range(len(mods) - 1, -1, -1):
                if mods[k][0] is module:
                    break
            else:
                return
            _, depth, ctx = mods[k]
            del mods[k:]
            if depth < 0:
                return
            if self.mode == "detailed":
                self._backward_marker(output, depth)
            if self._shapes_open:
                noted = self._shapes.get(ctx)
                if noted is not None and noted[1] is None:
                    noted[1] = tensor_shapes(output)
            self.leave(depth, ctx)
        except Exception as e:  # noqa: BLE001
            self.fail(e)

    # ------------------------------------------------------------- phases
    def _enter(self, phase: str, kind: str = "phase") -> int | None:
        if not self._mine():
            return None
        try:
            if self.on_phase is not None:
                self.on_phase(self.rec.stack[-1])
            if not self.rec.in_step or self.rec._at_step_level():
                del self._mods[:]  # nothing runs below a phase switch
            return self.rec.enter_phase(phase, kind)
        except Exception as e:  # noqa: BLE001
            self.fail(e)
            return None

    def _exit(self, token: int | None) -> None:
        if token is None or not self.on:
            return
        try:
            if self.on_phase is not None:
                self.on_phase(self.rec.stack[-1])
            self.rec.exit_phase(token)
        except Exception as e:  # noqa: BLE001
            self.fail(e)

    def _phase_wrapper(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def backward(*args: Any, **kwargs: Any) -> Any:
            tok = self._enter("backward")
            if tok is None:
                return fn(*args, **kwargs)
            self._saved.clear()  # the next forward pass saves anew
            self._in_backward += 1
            try:
                return fn(*args, **kwargs)
            finally:
                self._in_backward -= 1
                self._exit(tok)

        return backward

    def _data_wrapper(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def __next__(it: Any) -> Any:
            tok = self._enter("data")
            try:
                return fn(it)
            finally:
                self._exit(tok)

        return __next__

    def _opt_pre(self, opt: Any, args: Any, kwargs: Any) -> None:
        stack = self._optimizers()
        stack.append(opt)
        if len(stack) == 1:  # (an optimizer stepped inside another's step is part of it)
            self._tls.opt = self._enter("optimizer")

    def _opt_post(self, opt: Any, args: Any, kwargs: Any) -> None:
        stack = self._optimizers()
        if stack and stack[-1] is opt:
            stack.pop()
        if not self._states_measured and self._mine():
            self._measure_states(opt, stack)
        if stack:  # ZeroRedundancyOptimizer's local optimizer: its step goes on
            return
        tok = getattr(self._tls, "opt", None)
        self._tls.opt = None
        self._exit(tok)
        if self.auto_steps and tok is not None and self.on:
            self.end_step(by_optimizer=True)

    def _optimizers(self) -> list[Any]:
        """The optimizers whose steps this thread is in, outermost first."""
        stack = getattr(self._tls, "optimizers", None)
        if stack is None:
            stack = self._tls.optimizers = []
        return stack

    def _measure_states(self, opt: Any, outer: list[Any]) -> None:
        """Once, after the first (innermost) optimizer step: the states exist.
        ``opt`` holds this rank's states (ZeroRedundancyOptimizer's local one:
        its partition); its name says what wraps it."""
        self._states_measured = True
        try:
            states = model_states(self._model, opt)
        except Exception as e:  # noqa: BLE001 - a model whose tensors it cannot read
            log.warning("cctviz: model states not measured: %r", e)
            return
        for o in reversed(outer):
            states["optimizer"] = f"{type(o).__name__}({states['optimizer']})"
        self.facts.update(states)

    def end_step(self, *, by_optimizer: bool = False) -> None:
        try:
            if self._shapes_open and self._shapes:
                self._close_shapes()
            self.rec.end_step(by_optimizer=by_optimizer)
            self._saved.clear()
            del self._mods[:]
            self._capture_dist()
            if self.on_step_end is not None:
                self.on_step_end()
        except Exception as e:  # noqa: BLE001
            self.fail(e)

    def region(self, name: str) -> int | None:
        """Enter a user region (a step activity, a phase at step level); see :meth:`_exit`."""
        return self._enter(name, K_REGION)

    def leave(self, depth: int | None, ctx: int | None = None) -> None:
        if depth is None or not self.on:
            return
        st = self.rec.stack
        if depth < len(st) and (ctx is None or st[depth] == ctx):
            self.rec.pop(depth)

    # ------------------------------------------------------- distributed
    def _capture_dist(self) -> None:
        if "backend" in self.facts:
            return
        import torch.distributed as dist

        if dist.is_available() and dist.is_initialized():
            self.facts["backend"] = str(dist.get_backend())
            self.facts["world_size"] = dist.get_world_size()
            self.facts["rank"] = dist.get_rank()
            self.world_size = self.facts["world_size"]

    def _install_dist(self) -> None:
        import torch.distributed as dist

        if not dist.is_available():
            return
        from torch.distributed import distributed_c10d as c10d

        for name in COLLECTIVES:
            orig = getattr(c10d, name, None)
            if orig is None:
                orig = getattr(dist, name, None)
            if orig is None or not callable(orig):
                continue
            w = self._collective_wrapper(name, orig)
            for owner in (dist, c10d):
                if getattr(owner, name, None) is orig:
                    self._patch(owner, name, w)
        destroy = c10d.destroy_process_group

        @functools.wraps(destroy)
        def destroy_process_group(*a: Any, **k: Any) -> Any:
            try:
                self._capture_dist()
            except Exception:  # noqa: BLE001
                log.debug("cctviz: could not read the process group", exc_info=True)
            return destroy(*a, **k)

        for owner in (dist, c10d):
            if getattr(owner, "destroy_process_group", None) is destroy:
                self._patch(owner, "destroy_process_group", destroy_process_group)
        work = getattr(dist, "Work", None) or getattr(c10d, "Work", None)
        if work is not None:
            self._patch(work, "wait", self._wait_wrapper(work.wait))

    @staticmethod
    def _group_arg(args: tuple, kwargs: dict) -> Any:
        """The process group a collective is called on (None: the default group)."""
        import torch.distributed as dist

        g = kwargs.get("group", kwargs.get("process_group"))
        if g is None:
            for a in args:
                if isinstance(a, dist.ProcessGroup):
                    g = a
                    break
        return g

    def _group_n(self, args: tuple, kwargs: dict) -> int:
        import torch.distributed as dist

        g = self._group_arg(args, kwargs)
        key = id(g)
        n = self._group_size.get(key)
        if n is None:
            n = dist.get_world_size(g) if g is not None else dist.get_world_size()
            self._group_size[key] = n
            if g is not None:
                self._keep[key] = g
        if self.world_size is None:
            self._capture_dist()
        return n

    def _is_async(self, name: str, fn: Callable[..., Any], args: tuple, kwargs: dict) -> bool:
        if name in ("isend", "irecv"):
            return True
        if "async_op" in kwargs:
            return bool(kwargs["async_op"])
        pos = self._async_pos.get(name, -2)
        if pos == -2:
            try:
                params = list(inspect.signature(fn).parameters)
                pos = params.index("async_op") if "async_op" in params else None
            except (TypeError, ValueError):
                pos = None
            self._async_pos[name] = pos
        return pos is not None and len(args) > pos and bool(args[pos])

    def _collective_wrapper(self, fn_name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        kind = COLLECTIVES[fn_name][0]

        @functools.wraps(fn)
        def collective(*args: Any, **kwargs: Any) -> Any:
            tls = self._tls
            if not self.on or getattr(tls, "comm", 0):
                return fn(*args, **kwargs)
            try:
                n = self._group_n(args, kwargs)
                nbytes = collective_bytes(fn_name, args, kwargs, n)
                is_async = self._is_async(fn_name, fn, args, kwargs)
                leaf = leaf_name(kind, n, self.world_size)
                rec = self.rec
                if self._mine():
                    depth = rec.enter_leaf(leaf, K_COMM)
                    ctx = rec.top
                else:
                    depth, ctx = None, rec.leaf_here(leaf, K_COMM)
                rec.add(ctx, "comm_bytes", nbytes)
                rec.add(ctx, "bus_bytes", nbytes * bus_factor(kind, n))
                if rec.tracing:
                    self._trace_comm(ctx, fn_name, kind, nbytes, n, args, kwargs)
            except Exception as e:  # noqa: BLE001
                self.fail(e)
                return fn(*args, **kwargs)
            tls.comm = 1
            t0 = self.clock()
            try:
                out = fn(*args, **kwargs)
            finally:
                t1 = self.clock()
                tls.comm = 0
                try:
                    if is_async and out is not None:
                        pend = self._pending
                        if len(pend) >= _PENDING_MAX:
                            pend.pop(next(iter(pend)))
                        pend[id(out)] = (ctx, t0)
                    else:
                        rec.add(ctx, "comm_time", t1 - t0)
                    if depth is not None:
                        self.leave(depth, ctx)
                except Exception as e:  # noqa: BLE001
                    self.fail(e)
            return out

        collective.__cctviz_wrapped__ = fn  # type: ignore[attr-defined]
        return collective

    def _trace_comm(
        self, ctx: int, fn_name: str, kind: str, nbytes: int, n: int, args: tuple, kwargs: dict
    ) -> None:
        """Tracing only: the call's communicator, root or peer (ranks in the group) and tag."""
        import torch.distributed as dist

        g = self._group_arg(args, kwargs)
        known = self._trace_comms.get(id(g))
        if known is None:
            world = g is None or g is dist.group.WORLD
            pg = dist.group.WORLD if g is None else g
            members = [int(r) for r in dist.get_process_group_ranks(pg)]
            gname = str(getattr(pg, "group_name", "") or len(self._trace_comms))
            backend = str(dist.get_backend(pg))
            name = "WORLD" if world else f"group {gname}"
            index = {r: k for k, r in enumerate(members)}  # global rank -> rank in the group
            known = (self.rec.comm_group(f"{name} ({backend})", gname, members), index)
            self._trace_comms[id(g)] = known
            self._keep[id(g)] = g
        comm, index = known
        where = -1
        spec = _ROOT_ARG.get(fn_name)
        if spec is not None:
            pos, key = spec
            local = kwargs.get(f"group_{key}")
            if local is not None:
                where = int(local)
            else:
                v = args[pos] if len(args) > pos else kwargs.get(key)
                if v is not None:
                    v = int(v)
                    where = index.get(v, v)
                elif kind not in ("send", "recv"):
                    where = 0  # torch's default root
        tag = 0
        if kind in ("send", "recv"):
            t = args[3] if len(args) > 3 else kwargs.get("tag", 0)
            tag = int(t or 0)
        self.rec.comm_record(ctx, kind, nbytes, n, comm, where, tag)

    def _wait_wrapper(self, wait: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(wait)
        def wait_(work: Any, *args: Any, **kwargs: Any) -> Any:
            info = self._pending.pop(id(work), None) if self.on else None
            if info is None:
                return wait(work, *args, **kwargs)
            depth = wctx = None
            try:
                if self._mine():
                    depth = self.rec.enter_leaf("wait", K_COMM)
                    wctx = self.rec.top
            except Exception as e:  # noqa: BLE001
                self.fail(e)
            try:
                return wait(work, *args, **kwargs)
            finally:
                try:
                    self.rec.add(info[0], "comm_time", self.clock() - info[1])
                    if depth is not None:
                        self.leave(depth, wctx)
                except Exception as e:  # noqa: BLE001
                    self.fail(e)

        return wait_

    def _ddp_comm_hook(self, ddp: Any) -> None:
        """Route the C++ reducer's bucket all-reduces through a Python comm hook we can see."""
        if getattr(ddp, "_comm_hooks", None):
            return  # the user's hook calls torch.distributed, which is wrapped
        import torch.distributed as dist

        pg = getattr(ddp, "process_group", None)

        def hook(state, bucket):  # noqa: ANN001,ANN202 - DDP checks annotations if present
            group = state if state is not None else dist.group.WORLD
            tensor = bucket.buffer()
            tensor.div_(group.size())
            work = dist.all_reduce(tensor, group=group, async_op=True)
            info = self._pending.pop(id(work), None)  # (context, issue time)
            fut = work.get_future()

            def done(f: Any) -> Any:
                if info is not None and self.on:
                    self.rec.add(info[0], "comm_time", self.clock() - info[1])
                return f.value()[0]

            return fut.then(done)

        try:
            ddp.register_comm_hook(pg, hook)
            self.facts["ddp_comm_hook"] = "cctviz"
        except Exception as e:  # noqa: BLE001 - e.g. a builtin hook is registered already
            self.facts["ddp_comm_hook"] = f"not installed ({e}); bucket all-reduces not seen"
            log.warning("cctviz: DDP bucket all-reduces will not be recorded: %s", e)

    # ------------------------------------------------------------ detailed
    def _backward_marker(self, output: Any, depth: int) -> None:
        """Detailed mode: when backward reaches this module's output, its context starts."""
        import torch

        t = output
        if isinstance(t, (tuple, list)):
            t = next((x for x in t if isinstance(x, torch.Tensor) and x.grad_fn is not None), None)
        elif isinstance(t, dict):
            t = next(
                (x for x in t.values() if isinstance(x, torch.Tensor) and x.grad_fn is not None),
                None,
            )
        if not isinstance(t, torch.Tensor) or t.grad_fn is None:
            return
        names = tuple(self.rec.name[c] for c in self.rec.stack[3 : depth + 1])

        def pre(grad_outputs: Any) -> None:
            if self._mine() and self._in_backward:
                self._backward_enter(names)

        t.grad_fn.register_prehook(pre)

    def _backward_enter(self, names: tuple[str, ...]) -> None:
        try:
            rec = self.rec
            st = rec.stack
            # the backward phase context is the deepest "backward" phase on the stack
            for k in range(len(st) - 1, 1, -1):
                if rec.kind[st[k]] == "phase" and rec.name[st[k]] == "backward":
                    break
            else:
                return
            rec.enter_path(k, names)
        except Exception as e:  # noqa: BLE001
            self.fail(e)

    def _install_saved(self) -> None:
        """``act_bytes`` through the training thread's default saved-tensor hooks
        (module docstring), unless the job's own are active already."""
        import torch

        top = getattr(torch._C._autograd, "_top_saved_tensors_default_hooks", None)
        if top is not None and top(True) is not None:
            log.info("cctviz: saved-tensor hooks are active: no act_bytes")
            return
        self._parameter = torch.nn.Parameter
        self._counting = True
        pack, unpack = self._pack, self._unpack
        hooks = torch.autograd.graph.saved_tensors_hooks(pack, unpack)
        try:
            hooks.__enter__()
        except RuntimeError as e:  # e.g. inside disable_saved_tensors_hooks
            log.info("cctviz: no act_bytes: %s", e)
            return

        def remove() -> None:
            # the hook stack is per thread: popped on the thread that pushed it,
            # and only while ours is on top (never the job's); else left in
            # place, counting nothing
            self._counting = False
            mine = top is None or (top(True) or (None,))[0] == pack
            if threading.get_ident() == self.main and mine:
                hooks.__exit__(None, None, None)

        self._undo.append(remove)

    def _pack(self, t: Any) -> Any:
        """A tensor saved for backward: its storage's bytes to the context on top,
        once per forward pass; parameters (and views of them) left out. Returns
        it detached where it has a history: an op's output saved with its
        ``grad_fn`` would hold itself (a cycle no collector frees)."""
        if self._counting and self._mine() and not self._in_backward:
            try:
                self._count_saved(t)
            except Exception as e:  # noqa: BLE001
                self.fail(e)
        return t.detach() if t.requires_grad else t

    def _count_saved(self, t: Any) -> None:
        if isinstance(t, self._parameter) or isinstance(t._base, self._parameter):
            return
        try:
            storage = t.untyped_storage()
            key, nbytes = storage.data_ptr(), storage.nbytes()
        except (RuntimeError, NotImplementedError):  # no storage (sparse, nested, fake)
            return
        if key and key not in self._saved:  # (0: empty, or a subclass's placeholder)
            self._saved.add(key)
            self.rec.add(self.rec.top, "act_bytes", float(nbytes))
            shape = t.shape
            if len(shape) >= 3 and shape[-1] == shape[-2] > 1:  # attention's seq x seq
                self.rec.add(self.rec.top, "act_sq_bytes", float(nbytes))

    @staticmethod
    def _unpack(t: Any) -> Any:
        return t

    def _install_dispatch(self) -> None:
        from torch.utils._python_dispatch import TorchDispatchMode

        hooks = self
        names: dict[Any, str] = {}

        class _OpMode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
                kwargs = kwargs or {}
                if not hooks._mine() or getattr(hooks._tls, "comm", 0):
                    return func(*args, **kwargs)
                name = names.get(func)
                if name is None:
                    name = names[func] = func._schema.name
                try:
                    depth = hooks.rec.enter_leaf(name, K_OP)
                    ctx = hooks.rec.top
                except Exception as e:  # noqa: BLE001
                    hooks.fail(e)
                    return func(*args, **kwargs)
                try:
                    return func(*args, **kwargs)
                finally:
                    hooks.leave(depth, ctx)

        mode = _OpMode()
        mode.__enter__()

        def leave() -> None:
            mode.__exit__(None, None, None)

        self._undo.append(leave)

    # --------------------------------------------------------- python frames
    def _frame_name(self, code: Any) -> str | None:
        name = self._code_names.get(code, False)
        if name is not False:
            return name  # type: ignore[return-value]
        from .pyframes import user_code_name

        name = user_code_name(code)
        self._code_names[code] = name
        return name

    def _install_frames(self) -> None:
        from .pyframes import install

        self._undo.append(install(self))

    def frame_enter(self, frame: Any, code: Any) -> None:
        name = self._frame_name(code)
        if name is None or not self._mine():
            return
        depth = self.rec.push(name, K_FUNC)
        self._frames.append((frame, depth, self.rec.top))

    def frame_exit(self, frame: Any) -> None:
        fr = self._frames
        # usually the top; a generator that yielded may sit above it
        for k in range(len(fr) - 1, max(len(fr) - 9, -1), -1):
            if fr[k][0] is frame:
                _, depth, ctx = fr[k]
                del fr[k:]
                if self.on:
                    self.leave(depth, ctx)
                return
