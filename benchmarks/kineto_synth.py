"""Synthetic Kineto (torch.profiler) traces of a chosen size, for benchmarks.

    python benchmarks/kineto_synth.py out.json --events 1000000 [--ranks 1] [--seed 0] [--gzip]

Writes what ``torch.profiler.profile(activities=[CPU, CUDA], record_shapes=True,
with_stack=True, with_modules=True)`` writes for a DDP training of a small GPT
(12 blocks) on CUDA with NCCL, with gradient accumulation so that the trace
reaches the requested size. Each rank's file holds:

* the header of a recent Kineto trace: ``schemaVersion``, ``deviceProperties``,
  ``distributedInfo`` (``backend``, ``rank``, ``world_size``, ``pg_config``,
  ``nccl_version``), ``record_shapes``; at the end ``traceName``,
  ``displayTimeUnit`` and ``baseTimeNanoseconds``;
* ``M`` events: process name/labels/sort index of the host process and the
  GPU, thread names and sort indices of the two CPU threads and the streams;
* on the main thread: Python frames (``python_function``, with ``Python id``,
  ``Python parent id`` (``null`` at the root), module calls named
  ``nn.Module: Linear_3`` with ``Python module id``) around
  ``ProfilerStep#N`` annotations (``user_annotation``), the forward passes
  (``cpu_op`` nested 2-4 deep, ``record_shapes`` arguments, ``Sequence
  number``) and the optimizer (``Optimizer.step#AdamW.step``);
* on the autograd thread: ``autograd::engine::evaluate_function: XBackward0``
  > ``XBackward0`` > aten ops, linked to their forward op by ``fwdbwd`` flows;
  DDP bucket all-reduces as ``record_param_comms`` (``Collective name``,
  ``In msg nelems``, ``Out msg nelems``, ``dtype``, ``Group size``, ``Process
  Group Name/Description/Ranks``) > ``nccl:all_reduce``;
* ``cuda_runtime`` launches (``cudaLaunchKernel``, ``cudaMemcpyAsync``,
  ``cudaMemsetAsync``) whose ``correlation`` is shared with a ``kernel``,
  ``gpu_memcpy`` or ``gpu_memset`` event on a stream (compute stream 7, NCCL
  stream 20) of the GPU "process" (pid = local device index), linked by
  ``ac2g`` flow events (``s`` at the launch, ``f`` with ``bp: e`` at the
  kernel); a ``gpu_user_annotation`` per step on stream 7; ``[memory]``
  instant events; the profiler's ``Trace`` span and ``Iteration Start``.

Time stamps are microseconds with nanosecond decimals relative to
``baseTimeNanoseconds`` (recent PyTorch; ``ns_resolution=False`` gives the
integer microseconds of older traces). CPU intervals nest exactly; kernels
start after their launch and queue on their stream. Events are written in the
order they end (post-order), one per line, as Kineto does roughly; readers
must sort them. The same seed gives the same file.

Holistic Trace Analysis reads these files: it finds the rank with the regular
expression ``"rank":\\s+(\\d+)`` on the first line holding it (so
``distributedInfo`` is written early, with a space after the colon), needs
``dur`` and ``cat`` on the events it keeps, a ``.json`` or ``.gz`` suffix, and
no negative durations on CPU threads.

>>> import tempfile, json, pathlib
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> counts = make_trace(d / "t.json", 3000, seed=1)
>>> doc = json.loads((d / "t.json").read_text())
>>> n = len(doc["traceEvents"]); n == counts[d / "t.json"] and abs(n - 3000) < 300
True
>>> doc["distributedInfo"]["rank"], sorted({e.get("cat") for e in doc["traceEvents"]} - {None})[:4]
(0, ['Trace', 'ac2g', 'cpu_instant_event', 'cpu_op'])
"""

from __future__ import annotations

import argparse
import gzip as _gzip
import json
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

N_BLOCKS = 12  # GPT-2 small
HIDDEN = 768
SEQ = 1024
BATCH = 8
BUCKET_BLOCKS = 3  # a DDP bucket every 3 blocks' gradients
BASE_TIME_NS = 1_759_000_000_000_000_000
COMPUTE_STREAM = 7
NCCL_STREAM = 20

_DUMP = json.JSONEncoder(separators=(", ", ": "), ensure_ascii=False).encode


class _Writer:
    """Collects one rank's events with their ids; counts what it writes."""

    def __init__(self, out: TextIO | None, rng: random.Random, *, rank: int, world: int, ns: bool):
        self.out = out
        self.rng = rng
        self.rank = rank
        self.world = world
        self.ns = ns
        self.n = 0
        self.first = True
        self.pid = 4000 + 17 * rank
        self.main_tid = self.pid
        self.bwd_tid = self.pid + 211
        self.dev = rank % 8
        self.ext = 0  # External id
        self.ev_idx = 0  # Ev Idx
        self.rf_id = 0  # Record function id
        self.corr = 0  # correlation
        self.py_id = 0  # Python id
        self.seq = 0  # autograd Sequence number
        self.flow = 0  # fwdbwd flow id
        self.module_ids: dict[int, int] = {}  # call order in a forward -> module id
        self.module_seq = 0
        self.stream_free: dict[int, int] = {COMPUTE_STREAM: 0, NCCL_STREAM: 0}
        self.gpu_step_start: int | None = None
        self.allocated = 1 << 30

    def t(self, ns: int) -> float | int:
        return round(ns / 1000, 3) if self.ns else ns // 1000

    def d(self, ns: int) -> float | int:
        return round(ns / 1000, 3) if self.ns else max(ns // 1000, 0)

    def emit(self, ev: dict[str, Any]) -> None:
        self.n += 1
        if self.out is not None:
            self.out.write(("  " if self.first else ",\n  ") + _DUMP(ev))
            self.first = False

    def x(self, cat: str, name: str, pid: int | str, tid: int | str, ts: int, dur: int, args):
        ev = {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid}
        ev["ts"] = self.t(ts)
        ev["dur"] = self.d(dur)
        if args is not None:
            ev["args"] = args
        self.emit(ev)


class _Thread:
    """A CPU thread: a clock and a stack of open intervals, written when closed."""

    def __init__(self, w: _Writer, tid: int, t0: int):
        self.w = w
        self.tid = tid
        self.now = t0
        self.stack: list[list[Any]] = []  # [cat, name, ts, args, python id]
        self.py_stack: list[int] = []

    def gap(self, lo: int = 200, hi: int = 2_000) -> None:
        self.now += self.w.rng.randint(lo, hi)

    def open(self, cat: str, name: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
        self.gap()
        w = self.w
        if args is None:
            args = {}
        if cat == "python_function":
            w.py_id += 1
            parent = self.py_stack[-1] if self.py_stack else None
            args = {"Python parent id": parent, "Python id": w.py_id, **args}
            self.py_stack.append(w.py_id)
        else:
            w.ext += 1
            w.rf_id += 1
            args = {"External id": w.ext, "Record function id": w.rf_id, **args}
        w.ev_idx += 1
        args["Ev Idx"] = w.ev_idx
        self.stack.append([cat, name, self.now, args])
        return args

    def close(self, work: tuple[int, int] = (300, 3_000)) -> None:
        self.gap(*work)
        cat, name, ts, args = self.stack.pop()
        if cat == "python_function":
            self.py_stack.pop()
        self.w.x(cat, name, self.w.pid, self.tid, ts, self.now - ts, args)

    def op(self, name: str, args: dict[str, Any] | None = None, work=(300, 3_000)) -> None:
        self.open("cpu_op", name, args)
        self.close(work)

    def external_id(self) -> int:
        """External id of the innermost open cpu_op / annotation (0 if none)."""
        for cat, _, _, args, *_ in reversed(self.stack):
            if cat != "python_function":
                return args["External id"]
        return 0

    def launch(
        self,
        kernel: str,
        *,
        runtime: str = "cudaLaunchKernel",
        cat: str = "kernel",
        stream: int = COMPUTE_STREAM,
        gpu_ns: tuple[int, int] = (2_000, 60_000),
        extra: dict[str, Any] | None = None,
    ) -> None:
        """A CUDA runtime call on this thread and the GPU activity it queues."""
        w, rng = self.w, self.w.rng
        self.gap()
        w.corr += 1
        ext = self.external_id()
        ts = self.now
        self.now += rng.randint(2_000, 9_000)
        cbid = {"cudaLaunchKernel": 211, "cudaMemcpyAsync": 41, "cudaMemsetAsync": 51}[runtime]
        w.x(
            "cuda_runtime",
            runtime,
            w.pid,
            self.tid,
            ts,
            self.now - ts,
            {"External id": ext, "cbid": cbid, "correlation": w.corr},
        )
        start = max(ts + rng.randint(4_000, 12_000), w.stream_free[stream])
        dur = rng.randint(*gpu_ns)
        w.stream_free[stream] = start + dur
        if w.gpu_step_start is None:
            w.gpu_step_start = start
        args: dict[str, Any] = {
            "External id": ext,
            "queued": 0,
            "device": w.dev,
            "context": 1,
            "stream": stream,
            "correlation": w.corr,
        }
        if cat == "kernel":
            grid = rng.choice((108, 216, 432, 864))
            args.update(
                {
                    "registers per thread": rng.choice((32, 64, 128, 168)),
                    "shared memory": rng.choice((0, 16384, 49152)),
                    "blocks per SM": round(grid / 108, 6),
                    "warps per SM": round(grid / 27, 5),
                    "grid": [grid, 1, 1],
                    "block": [128, 1, 1],
                    "est. achieved occupancy %": rng.choice((12, 25, 50, 100)),
                }
            )
        else:
            nbytes = rng.randint(1 << 10, 1 << 24)
            args.update({"bytes": nbytes, "memory bandwidth (GB/s)": round(nbytes / dur, 6)})
        if extra:
            args.update(extra)
        w.x(cat, kernel, w.dev, stream, start, dur, args)
        w.emit(
            {
                "ph": "s",
                "id": w.corr,
                "pid": w.pid,
                "tid": self.tid,
                "ts": w.t(ts),
                "cat": "ac2g",
                "name": "ac2g",
            }
        )
        w.emit(
            {
                "ph": "f",
                "id": w.corr,
                "pid": w.dev,
                "tid": stream,
                "ts": w.t(start),
                "cat": "ac2g",
                "name": "ac2g",
                "bp": "e",
            }
        )

    def memory(self, nbytes: int) -> None:
        w = self.w
        w.allocated += nbytes
        w.emit(
            {
                "ph": "i",
                "cat": "cpu_instant_event",
                "s": "t",
                "name": "[memory]",
                "pid": w.pid,
                "tid": self.tid,
                "ts": w.t(self.now),
                "args": {
                    "Total Reserved": 4 << 30,
                    "Total Allocated": w.allocated,
                    "Bytes": nbytes,
                    "Addr": 0x7F0000000000 + w.allocated,
                    "Device Id": w.dev,
                    "Device Type": 1,
                    "Ev Idx": w.ev_idx,
                },
            }
        )


# ------------------------------------------------------------ model pieces
def _dims(*shape: Sequence[int]) -> dict[str, Any]:
    types = ["float" if s else "Scalar" for s in shape]
    return {"Input Dims": [list(s) for s in shape], "Input type": types}


def _fwd_args(w: _Writer, *shape: Sequence[int]) -> dict[str, Any]:
    """Arguments of a forward op that autograd records (and its fwdbwd flow id)."""
    w.seq += 1
    return {"Sequence number": w.seq, "Fwd thread id": 0, **_dims(*shape)}


def _flow_start(th: _Thread, args: dict[str, Any], pending: list) -> None:
    """fwdbwd flow start at the forward op that was just opened."""
    w = th.w
    w.flow += 1
    w.emit(
        {
            "ph": "s",
            "id": w.flow,
            "pid": w.pid,
            "tid": th.tid,
            "ts": w.t(th.stack[-1][2]),
            "cat": "fwdbwd",
            "name": "fwdbwd",
        }
    )
    pending.append((w.flow, args["Sequence number"]))


def _module(th: _Thread, kind: str, src: str, line: int) -> None:
    """Open the Python frames of an nn.Module call (closed by _end_module)."""
    w = th.w
    th.open("python_function", "torch/nn/modules/module.py(1736): _wrapped_call_impl")
    th.open("python_function", "torch/nn/modules/module.py(1747): _call_impl")
    w.module_seq += 1  # the same module instances are called in the same order every forward
    mid = w.module_ids.setdefault(w.module_seq, len(w.module_ids))
    th.open("python_function", f"nn.Module: {kind}_{mid}", {"Python module id": mid})
    th.open("python_function", f"{src}({line}): forward")


def _end_module(th: _Thread) -> None:
    for _ in range(4):
        th.close((100, 800))


def _linear(th: _Thread, out_f: int, in_f: int, pending: list) -> None:
    _module(th, "Linear", "torch/nn/modules/linear.py", 125)
    th.open("python_function", "<built-in function linear>")
    th.open("cpu_op", "aten::linear", _dims((BATCH, SEQ, in_f), (out_f, in_f), (out_f,)))
    th.open("cpu_op", "aten::t", _dims((out_f, in_f)))
    th.open("cpu_op", "aten::transpose", _dims((out_f, in_f), (), ()))
    th.op("aten::as_strided", _dims((out_f, in_f), (), (), ()))
    th.close()
    th.close()
    a = th.open(
        "cpu_op", "aten::addmm", _fwd_args(th.w, (out_f,), (BATCH * SEQ, in_f), (in_f, out_f))
    )
    _flow_start(th, a, pending)
    th.launch("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1")
    th.close()
    th.close()
    th.close()
    _end_module(th)


def _elementwise(th: _Thread, kind: str, src: str, op: str, kernel: str, pending: list) -> None:
    _module(th, kind, src, 80)
    a = th.open("cpu_op", op, _fwd_args(th.w, (BATCH, SEQ, HIDDEN)))
    _flow_start(th, a, pending)
    if op == "aten::native_dropout":
        th.op("aten::empty_like", _dims((BATCH, SEQ, HIDDEN), (), (), (), (), ()))
        th.memory(BATCH * SEQ * HIDDEN * 2)
        th.open("cpu_op", "aten::bernoulli_", _dims((BATCH, SEQ, HIDDEN), (), ()))
        th.launch(
            "void at::native::(anonymous namespace)::distribution_elementwise_grid_stride_kernel"
        )
        th.close()
    th.launch(kernel)
    th.close()
    _end_module(th)


def _layer_norm(th: _Thread, pending: list) -> None:
    _elementwise(
        th,
        "LayerNorm",
        "torch/nn/modules/normalization.py",
        "aten::native_layer_norm",
        "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel",
        pending,
    )


def _block(th: _Thread, b: int, pending: list) -> None:
    _module(th, "Block", "model.py", 61)
    _layer_norm(th, pending)
    _module(th, "CausalSelfAttention", "model.py", 35)
    _linear(th, 3 * HIDDEN, HIDDEN, pending)
    th.op("aten::split", _dims((BATCH, SEQ, 3 * HIDDEN), (), ()))
    a = th.open(
        "cpu_op", "aten::scaled_dot_product_attention", _fwd_args(th.w, (BATCH, 12, SEQ, 64))
    )
    _flow_start(th, a, pending)
    th.open("cpu_op", "aten::_scaled_dot_product_flash_attention", _dims((BATCH, 12, SEQ, 64)))
    th.open("cpu_op", "aten::_flash_attention_forward", _dims((BATCH, SEQ, 12, 64)))
    th.launch(
        "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, 4>>",
        gpu_ns=(40_000, 200_000),
    )
    th.close()
    th.close()
    th.close()
    _linear(th, HIDDEN, HIDDEN, pending)
    _end_module(th)
    _layer_norm(th, pending)
    _module(th, "MLP", "model.py", 48)
    _linear(th, 4 * HIDDEN, HIDDEN, pending)
    _elementwise(
        th,
        "GELU",
        "torch/nn/modules/activation.py",
        "aten::gelu",
        "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl>",
        pending,
    )
    _linear(th, HIDDEN, 4 * HIDDEN, pending)
    _elementwise(
        th,
        "Dropout",
        "torch/nn/modules/dropout.py",
        "aten::native_dropout",
        "void at::native::(anonymous namespace)::fused_dropout_kernel_vec",
        pending,
    )
    _end_module(th)
    _end_module(th)


_BACKWARD = {
    "aten::addmm": ("AddmmBackward0", ("aten::mm", "aten::mm", "aten::sum")),
    "aten::native_layer_norm": ("NativeLayerNormBackward0", ("aten::native_layer_norm_backward",)),
    "aten::gelu": ("GeluBackward0", ("aten::gelu_backward",)),
    "aten::native_dropout": ("NativeDropoutBackward0", ("aten::native_dropout_backward",)),
    "aten::scaled_dot_product_attention": (
        "ScaledDotProductFlashAttentionBackward0",
        ("aten::_scaled_dot_product_flash_attention_backward",),
    ),
}


def _backward(bw: _Thread, pending: list, fwd_names: list[str], comm_bytes: int) -> None:
    """Autograd thread: one evaluate_function per forward op, in reverse, and
    a DDP bucket all-reduce every BUCKET_BLOCKS blocks' worth of ops."""
    w = bw.w
    per_bucket = max(1, len(pending) * BUCKET_BLOCKS // N_BLOCKS)
    for k, ((flow, seq), fname) in enumerate(zip(reversed(pending), reversed(fwd_names))):
        node, ops = _BACKWARD[fname]
        bw.open(
            "cpu_op",
            f"autograd::engine::evaluate_function: {node}",
            {"Sequence number": seq, "Fwd thread id": 1},
        )
        w.emit(
            {
                "ph": "f",
                "id": flow,
                "pid": w.pid,
                "tid": bw.tid,
                "ts": w.t(bw.stack[-1][2]),
                "cat": "fwdbwd",
                "name": "fwdbwd",
                "bp": "e",
            }
        )
        bw.open("cpu_op", node, {"Sequence number": seq, "Fwd thread id": 1})
        for op in ops:
            bw.open("cpu_op", op, _dims((BATCH * SEQ, HIDDEN), (HIDDEN, HIDDEN)))
            if op == "aten::mm":
                bw.launch("sm90_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_tilesize128x256x64")
            else:
                bw.launch(f"void at::native::{op[6:]}_kernel<float>")
            bw.close()
        bw.close()
        bw.close()
        if fname == "aten::addmm":
            bw.open(
                "cpu_op", "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad"
            )
            bw.open("cpu_op", "torch::autograd::AccumulateGrad")
            bw.open("cpu_op", "aten::add_", _dims((HIDDEN, HIDDEN), (HIDDEN, HIDDEN), ()))
            bw.launch("void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor>")
            bw.close()
            bw.close()
            bw.close()
        if (k + 1) % per_bucket == 0 or k == len(pending) - 1:
            _allreduce(bw, comm_bytes)


def _allreduce(th: _Thread, nbytes: int) -> None:
    w = th.w
    nelems = nbytes // 4
    ranks = str(list(range(w.world)))
    comm = {
        "Collective name": "allreduce",
        "dtype": "Float",
        "In msg nelems": nelems,
        "Out msg nelems": nelems,
        "Group size": w.world,
        "Process Group Name": "0",
        "Process Group Description": "default_pg",
        "Process Group Ranks": ranks,
        "In split size": "[]",
        "Out split size": "[]",
        "Global rank start": 0,
        "Global rank stride": 1,
    }
    th.open("cpu_op", "record_param_comms", dict(comm))
    th.open("user_annotation", "nccl:all_reduce")
    th.launch(
        "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
        stream=NCCL_STREAM,
        gpu_ns=(50_000, 400_000),
        extra=comm,
    )
    th.close()
    th.close()


def _micro_batch(w: _Writer, main: _Thread, bw: _Thread, blocks: int) -> None:
    """Forward on the main thread, backward on the autograd thread."""
    pending: list[tuple[int, int]] = []
    main.open("python_function", "train.py(74): train_step")
    # input batch to the GPU
    main.open("cpu_op", "aten::to", _dims((BATCH, SEQ), (), (), (), ()))
    main.open("cpu_op", "aten::_to_copy", _dims((BATCH, SEQ), (), (), (), ()))
    main.open("cpu_op", "aten::copy_", _dims((BATCH, SEQ), (BATCH, SEQ), ()))
    main.launch("Memcpy HtoD (Pageable -> Device)", runtime="cudaMemcpyAsync", cat="gpu_memcpy")
    main.close()
    main.close()
    main.close()
    # forward
    w.module_seq = 0
    _module(main, "DistributedDataParallel", "torch/nn/parallel/distributed.py", 1643)
    _module(main, "GPT", "model.py", 90)
    for b in range(blocks):
        _block(main, b, pending)
    _end_module(main)
    _end_module(main)
    fwd_names = _forward_op_names(blocks)
    assert len(fwd_names) == len(pending)
    # loss, backward: the main thread waits in run_backward while the autograd thread works
    main.op("aten::cross_entropy_loss", _dims((BATCH * SEQ, 50304), (BATCH * SEQ,)))
    main.open("python_function", "torch/_tensor.py(626): backward")
    main.open("python_function", "torch/autograd/__init__.py(347): backward")
    main.open("python_function", "<built-in method run_backward of torch._C._EngineBase object>")
    bw.now = main.now
    _backward(bw, pending, fwd_names, comm_bytes=25 << 20)
    main.now = bw.now
    main.close()
    main.close()
    main.close()
    main.close()


def _forward_op_names(blocks: int) -> list[str]:
    per_block = [
        "aten::native_layer_norm",
        "aten::addmm",
        "aten::scaled_dot_product_attention",
        "aten::addmm",
        "aten::native_layer_norm",
        "aten::addmm",
        "aten::gelu",
        "aten::addmm",
        "aten::native_dropout",
    ]
    return per_block * blocks


def _optimizer(main: _Thread) -> None:
    main.open("python_function", "torch/optim/optimizer.py(487): wrapper")
    main.open("user_annotation", "Optimizer.step#AdamW.step")
    main.open("python_function", "torch/optim/adamw.py(209): step")
    for op in (
        "aten::_foreach_lerp_",
        "aten::_foreach_mul_",
        "aten::_foreach_addcmul_",
        "aten::_foreach_sqrt",
        "aten::_foreach_addcdiv_",
    ):
        main.open("cpu_op", op, {"Input Dims": [[], [], []], "Input type": ["TensorList"] * 3})
        for _ in range(3):
            main.launch("void at::native::(anonymous namespace)::multi_tensor_apply_kernel")
        main.close()
    main.close()
    main.close()
    main.close()
    main.open("python_function", "torch/optim/optimizer.py(955): zero_grad")
    main.open("user_annotation", "Optimizer.zero_grad#AdamW.zero_grad")
    main.open("cpu_op", "aten::zero_", _dims((HIDDEN, HIDDEN)))
    main.open("cpu_op", "aten::fill_", _dims((HIDDEN, HIDDEN), ()))
    main.launch("Memset (Device)", runtime="cudaMemsetAsync", cat="gpu_memset")
    main.close()
    main.close()
    main.close()
    main.close()


def _step(w: _Writer, main: _Thread, bw: _Thread, step: int, micro: int, blocks: int) -> None:
    w.gpu_step_start = None
    main.open("user_annotation", f"ProfilerStep#{step}")
    for _ in range(micro):
        _micro_batch(w, main, bw, blocks)
    _optimizer(main)
    name, ts, args = main.stack[-1][1], main.stack[-1][2], main.stack[-1][3]
    main.close()
    # the annotation as the GPU saw it: from its first to its last activity on the stream
    g0 = w.gpu_step_start if w.gpu_step_start is not None else ts
    g1 = max(w.stream_free.values())
    w.x(
        "gpu_user_annotation",
        name,
        w.dev,
        COMPUTE_STREAM,
        g0,
        max(g1 - g0, 0),
        {"External id": args["External id"]},
    )


def _header(rank: int, world: int) -> dict[str, Any]:
    dev = {
        "id": 0,
        "name": "NVIDIA H100 80GB HBM3",
        "totalGlobalMem": 85045542912,
        "computeMajor": 9,
        "computeMinor": 0,
        "maxThreadsPerBlock": 1024,
        "maxThreadsPerMultiprocessor": 2048,
        "regsPerBlock": 65536,
        "warpSize": 32,
        "sharedMemPerBlock": 49152,
        "numSms": 132,
    }
    return {
        "schemaVersion": 1,
        "deviceProperties": [{**dev, "id": i} for i in range(min(world, 8))],
        "distributedInfo": {
            "backend": "nccl",
            "rank": rank,
            "world_size": world,
            "pg_count": 1,
            "pg_config": [
                {
                    "pg_name": "0",
                    "pg_desc": "default_pg",
                    "backend_config": "cuda:nccl",
                    "pg_size": world,
                    "ranks": list(range(world)),
                }
            ],
            "nccl_version": "2.21.5",
        },
        "record_shapes": 1,
    }


def _metadata(w: _Writer, t0: int) -> None:
    ts = w.t(t0)

    def m(name: str, pid: int, tid: int, args: dict[str, Any]) -> None:
        w.emit({"name": name, "ph": "M", "ts": ts, "pid": pid, "tid": tid, "args": args})

    m("process_name", w.pid, 0, {"name": "python3.11"})
    m("process_labels", w.pid, 0, {"labels": "CPU"})
    m("process_sort_index", w.pid, 0, {"sort_index": w.pid})
    m("process_name", w.dev, 0, {"name": "python3.11"})
    m("process_labels", w.dev, 0, {"labels": f"GPU {w.dev}"})
    m("process_sort_index", w.dev, 0, {"sort_index": 5000000 + w.dev})
    for tid, label in ((w.main_tid, "python3.11"), (w.bwd_tid, "pt_autograd_0")):
        m("thread_name", w.pid, tid, {"name": f"thread {tid} ({label})"})
        m("thread_sort_index", w.pid, tid, {"sort_index": tid})
    for s in (COMPUTE_STREAM, NCCL_STREAM):
        m("thread_name", w.dev, s, {"name": f"stream {s} "})
        m("thread_sort_index", w.dev, s, {"sort_index": s})


def _rank_trace(
    out: TextIO | None,
    rng: random.Random,
    rank: int,
    world: int,
    ns: bool,
    plan: tuple[int, int, int],
) -> int:
    steps, micro, blocks = plan
    w = _Writer(out, rng, rank=rank, world=world, ns=ns)
    t0 = 1_000_000_000 + rng.randint(0, 50_000_000)
    if out is not None:
        head = _header(rank, world)
        out.write("{\n")
        for k, v in head.items():
            out.write(f'  "{k}": {_DUMP(v)},\n')
        out.write('  "traceEvents": [\n')
    _metadata(w, t0)
    main = _Thread(w, w.main_tid, t0)
    bw = _Thread(w, w.bwd_tid, t0)
    main.open("python_function", "train.py(140): <module>")
    main.open("python_function", "train.py(121): main")
    main.open("python_function", "train.py(96): train")
    for step in range(steps):
        _step(w, main, bw, 100 + step, micro, blocks)
    for _ in range(3):
        main.close()
    w.x(
        "Trace",
        "PyTorch Profiler (0)",
        "Spans",
        "PyTorch Profiler",
        t0 - 5_000,
        main.now - t0 + 10_000,
        {"Op count": 0},
    )
    w.emit(
        {
            "name": "Iteration Start: PyTorch Profiler",
            "ph": "i",
            "s": "g",
            "pid": "Traces",
            "tid": "Trace PyTorch Profiler",
            "ts": w.t(t0 - 5_000),
        }
    )
    w.emit(
        {
            "name": "Record Window End",
            "ph": "i",
            "s": "g",
            "pid": "",
            "tid": "",
            "ts": w.t(main.now + 5_000),
        }
    )
    if out is not None:
        tail = {
            "traceName": f"/tmp/rank-{rank}.pt.trace.json",
            "displayTimeUnit": "ms",
            "baseTimeNanoseconds": BASE_TIME_NS,
        }
        out.write("\n  ],\n")
        out.write(",\n".join(f'  "{k}": {_DUMP(v)}' for k, v in tail.items()))
        out.write("\n}\n")
    return w.n


def _plan(n_events: int, ns: bool) -> tuple[int, int, int]:
    """(steps, micro-batches per step, blocks) giving about n_events per rank."""
    steps = max(2, min(10, n_events // 20_000))

    def size(steps: int, micro: int, blocks: int) -> int:
        return _rank_trace(None, random.Random(0), 0, 2, ns, (steps, micro, blocks))

    per_step = n_events / steps
    one = size(1, 1, N_BLOCKS) - size(0, 1, N_BLOCKS)  # one step of one micro-batch
    if per_step < one:  # small trace: fewer blocks
        per_block = one - (size(1, 1, N_BLOCKS - 1) - size(0, 1, N_BLOCKS - 1))
        blocks = max(1, min(N_BLOCKS, N_BLOCKS - round((one - per_step) / max(per_block, 1))))
        return steps, 1, blocks
    two = size(1, 2, N_BLOCKS) - size(0, 2, N_BLOCKS)
    per_micro = two - one
    micro = max(1, round((per_step - (one - per_micro)) / per_micro))
    return steps, micro, N_BLOCKS


def make_trace(
    path: str | Path,
    n_events: int,
    *,
    ranks: int | Sequence[int] = 1,
    world_size: int | None = None,
    seed: int = 0,
    gzip: bool = False,
    ns_resolution: bool = True,
) -> dict[Path, int]:
    """Write a synthetic Kineto trace of about ``n_events`` trace events.

    ``ranks``: a count (ranks 0..n-1) or the rank ids to write (sampled ranks
    of a larger job; ``world_size`` defaults to their maximum + 1, at least 8). One
    rank writes the file ``path``; several write ``path`` as a folder of
    ``rank-<r>.pt.trace.json[.gz]`` files sharing the ``n_events`` between them.
    ``gzip=True`` compresses (and adds ``.gz`` to a file name without it).
    Returns ``{file: number of trace events written}``: each file's share of
    ``n_events`` within a few percent (whole micro-batches and steps).

    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> out = make_trace(d / "job", 4000, ranks=[0, 5], world_size=8, gzip=True)
    >>> sorted(p.name for p in out)
    ['rank-0.pt.trace.json.gz', 'rank-5.pt.trace.json.gz']
    """
    path = Path(path)
    rank_ids = list(range(ranks)) if isinstance(ranks, int) else [int(r) for r in ranks]
    if not rank_ids:
        raise ValueError("make_trace: no ranks")
    world = world_size if world_size is not None else max(max(rank_ids) + 1, 8)
    per_rank = max(1, n_events // len(rank_ids))
    plan = _plan(per_rank, ns_resolution)
    if len(rank_ids) == 1:
        if gzip and path.suffix != ".gz":
            path = path.with_name(path.name + ".gz")
        files = [path]
    else:
        path.mkdir(parents=True, exist_ok=True)
        suffix = ".pt.trace.json.gz" if gzip else ".pt.trace.json"
        files = [path / f"rank-{r}{suffix}" for r in rank_ids]
    out: dict[Path, int] = {}
    for r, f in zip(rank_ids, files):
        rng = random.Random(seed * 1_000_003 + r)
        opener = _gzip.open(f, "wt", compresslevel=3) if gzip else open(f, "w")
        with opener as fh:
            out[f] = _rank_trace(fh, rng, r, world, ns_resolution, plan)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("path", help="output file (one rank) or folder (several ranks)")
    ap.add_argument(
        "--events", type=int, default=1_000_000, help="trace events in all (default 1e6)"
    )
    ap.add_argument("--ranks", type=int, default=1)
    ap.add_argument("--world-size", type=int, default=None)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--gzip", action="store_true", help="gzip (also implied by a .gz path)")
    ap.add_argument("--us", action="store_true", help="integer microseconds (older traces)")
    args = ap.parse_args()
    out = make_trace(
        args.path,
        args.events,
        ranks=args.ranks,
        world_size=args.world_size,
        seed=args.seed,
        gzip=args.gzip or args.path.endswith(".gz"),
        ns_resolution=not args.us,
    )
    for f, n in out.items():
        print(f"{f}: {n:,} events, {f.stat().st_size / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
