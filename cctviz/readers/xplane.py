"""XPlane files (``*.xplane.pb``): JAX's, TensorBoard's and xprof's profiles, format ``"xplane"``.

What writes it: ``jax.profiler.trace(dir)`` (and ``start_trace``), TensorFlow's
and xprof's profilers: ``dir/plugins/profile/<run>/<host>.xplane.pb``. The file is
an ``XSpace`` protobuf, decoded here without TensorFlow, jax or protobuf
(:mod:`cctviz.readers._xspace`; fields of a newer schema are skipped, and a
warning names them).

Profiles (a :class:`~cctviz.Ensemble`; ``profiles`` has ``kind``, ``device``,
``rank``, ``host``, ``process_id``):

- one per device (``kind`` ``"device"``, ``rank`` its device id): the XLA
  programs it ran, as a tree ``device`` > jitted function > HLO module > HLO op.
  The jitted function is the module's name less XLA's ``jit_`` prefix (JAX names
  the module of ``jax.jit(f)`` ``jit_f``; a ``pmap``'s is ``jit__fun`` here).
  On XLA's CPU backend the devices' work runs on host threads: an op is an event
  with the stats ``hlo_op``, ``hlo_module`` and ``device_ordinal``; a module
  execution is the ``[k] ...Execute (<module>)`` event with ``global_device_id``
  (where there is none, the module node holds only its ops' time).
- one for the host (``kind`` ``"host"``, ``rank`` -1): its threads (the lines of
  ``/host:CPU``) with their events nested by time, as the Chrome trace reader
  builds a process (:func:`cctviz.readers._threads.process_profiles`): Python
  frames (``python_tracer_level``), JAX's ``PjitFunction(f)`` calls, XLA's
  TraceMe events.

Collectives: HLO ops whose instruction is a collective (``all-reduce``,
``all-gather``, ``reduce-scatter``, ``all-to-all``, ``collective-permute``,
their ``-start``/``-done`` pairs; JAX's ``psum`` lowers to ``all-reduce``) are
kind ``"comm"`` with ``collective`` and ``group_size`` columns and the metrics
``comm_time``, ``comm_bytes`` and ``bus_bytes``, the bytes from the HLO shapes
(:mod:`cctviz.readers._hlo`, nccl-tests' sizes). XLA stores a module's HLO in the
file only where it was compiled while the profiler ran: for a program compiled
before, ops named like a collective (``psum``, ``all-reduce``...) are kind
``"comm"`` without bytes, and a warning says how to get them (start the trace
before the first call, or ``jax.clear_caches()``).

Steps: ``jax.profiler.StepTraceAnnotation`` events (a ``step_num`` stat) give
the ``step`` of every event of the timeline (the step whose interval holds its
start; -1 outside): ``meta["xplane"]["steps"]`` counts them; none is said.

Metrics: ``time`` (exclusive, ``ns``), ``calls``, and the collectives' above.

>>> import cctviz
>>> e = cctviz.read("tests/data/jax-xplane/collectives-2cpu.xplane.pb")
>>> e.profiles[["kind", "device"]].values.tolist()
[['device', 'CPU:0'], ['device', 'CPU:1'], ['host', '/host:CPU']]
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import ProfileError
from ..model.collectives import bus_factor
from ..model.timeline import Timeline
from ..model.tree import Tree
from . import register, register_timeline
from ._chrometrace import TraceEvents
from ._hlo import Instruction, module_collectives
from ._json import file_bytes
from ._protobuf import WireError
from ._threads import process_profiles
from ._xspace import Plane, Space, decode

#: the stats read from events (and from their metadata, where an event lacks one)
STATS = ("hlo_op", "hlo_module", "program_id", "device_ordinal", "global_device_id", "step_num")
_EXECUTE = re.compile(r"Execute \((?P<module>.+)\)$")
_COLLECTIVE_NAME = re.compile(
    r"^(?:all-reduce|all-gather|reduce-scatter|all-to-all|collective-permute|psum|pmax|pmin|"
    r"pmean|all_gather|all_to_all|ppermute|psum_scatter|reduce_scatter)(?:[-_.]|$)"
)
_NAME_KINDS = {
    "psum": "all_reduce", "pmax": "all_reduce", "pmin": "all_reduce", "pmean": "all_reduce",
    "all_gather": "all_gather", "all_to_all": "all_to_all", "ppermute": "collective_permute",
    "psum_scatter": "reduce_scatter", "reduce_scatter": "reduce_scatter",
}  # fmt: skip
_HEAD = re.compile(rb"^\n[\x80-\xff]{0,9}[\x00-\x7f](?:\x08[\x80-\xff]{0,9}[\x00-\x7f])?\x12.(?:/host:|/device:|Task Environment)", re.S)  # fmt: skip


def _sniff(path: Path, h: bytes) -> bool:
    """By name (``*.xplane.pb``: a file so named that is not one is refused by
    the reader, not passed on), or by its first plane's name."""
    return path.name.endswith(".xplane.pb") or bool(_HEAD.match(h))


# ------------------------------------------------------------------ events
def _lookup(mid: np.ndarray, table: dict[int, Any]) -> np.ndarray:
    """``table[m]`` for every metadata id of ``mid`` (None where absent), vectorised."""
    out = np.full(mid.shape[0], None, dtype=object)
    if not table or not mid.size:
        return out
    keys = np.fromiter(table, dtype=np.int64, count=len(table))
    order = np.argsort(keys)
    keys = keys[order]
    values = np.empty(len(table), dtype=object)
    values[:] = list(table.values())
    values = values[order]
    at = np.minimum(np.searchsorted(keys, mid), keys.shape[0] - 1)
    hit = keys[at] == mid
    out[hit] = values[at[hit]]
    return out


def plane_events(plane: Plane) -> pd.DataFrame:
    """All timed events of a plane as columns (computed once, kept on the plane):
    ``line`` (its index in ``plane.lines``), ``name``, ``display_name``, ``start``
    and ``end`` (epoch ns, the picoseconds rounded) and :data:`STATS` (an event's
    own, else its metadata's; None where neither has it). Aggregated events
    (``num_occurrences``, no time) are left out."""
    if plane.events is not None:
        return plane.events
    lines = plane.lines
    sizes = np.asarray([len(line.metadata_id) for line in lines], dtype=np.int64)
    first = np.r_[0, np.cumsum(sizes)[:-1]] if len(lines) else np.empty(0, np.int64)
    cat = lambda xs: np.concatenate(xs) if xs else np.empty(0, np.int64)  # noqa: E731
    mid = cat([line.metadata_id for line in lines])
    offset = cat([line.offset_ps for line in lines])
    dur = cat([line.duration for line in lines])
    base = np.repeat(np.asarray([line.timestamp_ns for line in lines], dtype=np.int64), sizes)
    meta = plane.event_metadata
    frame = pd.DataFrame({
        "line": np.repeat(np.arange(len(lines)), sizes),
        "name": _lookup(mid, {i: m.name for i, m in meta.items()}),
        "display_name": _lookup(mid, {i: m.display_name for i, m in meta.items()}),
        "start": base + (offset + 500) // 1000,
        "end": base + (offset + dur + 500) // 1000,
    })  # fmt: skip
    frame["name"] = frame["name"].fillna("")
    for stat in STATS:
        col = _lookup(mid, {i: m.stats[stat] for i, m in meta.items() if stat in m.stats})
        for k, line in enumerate(lines):  # a loop per line, not per event
            if stat in line.stats:
                at, vals = line.stats[stat]
                v = np.empty(len(vals), dtype=object)
                v[:] = vals
                col[first[k] + np.asarray(at, dtype=np.int64)] = v
        frame[stat] = col
    frame = frame[offset >= 0].reset_index(drop=True)
    plane.events = frame
    return frame


def _host_planes(space: Space) -> list[Plane]:
    return [p for p in space.planes if p.name.startswith("/host:") and p.name != "/host:metadata"]


def _modules(space: Space, path: Path) -> dict[tuple[str, Any], dict[str, Instruction]]:
    """(module name, program id) -> its instructions, from the HLO protos stored."""
    out: dict[tuple[str, Any], dict[str, Instruction]] = {}
    for plane in space.planes:
        if plane.name != "/host:metadata":
            continue
        for em in plane.event_metadata.values():
            proto = em.stats.get("Hlo Proto")
            if not isinstance(proto, bytes):
                continue
            try:
                name, instructions = module_collectives(proto)
            except (WireError, ValueError) as e:
                raise ProfileError(path, f"the HLO of module {em.name!r} is malformed ({e})",
                                   "/host:metadata") from None  # fmt: skip
            m = _PROGRAM.match(em.name)
            program = em.stats.get("program_id", m.group("program") if m else None)
            out[name, None if program is None else str(program)] = instructions
            out.setdefault((name, None), instructions)
    return out


# -------------------------------------------------------------- the devices
_OPS_COLUMNS = ["device", "module", "program", "op", "start", "end"]
_PROGRAM = re.compile(r"^(?P<module>.*)\((?P<program>\d+)\)$")
#: device lines whose events are not ops of the device's programs (TPU)
_OTHER_LINES = ("XLA Modules", "Async XLA Ops", "XLA TraceMe", "Steps", "Overlay", "Tensor Core",
                "_counters_", "Framework Ops", "Framework Name Scope", "Source code")  # fmt: skip


def _ops_frame(ev: pd.DataFrame, device: Any, op: Any, module: Any, program: Any) -> pd.DataFrame:
    return pd.DataFrame({
        "device": device, "module": module, "program": program, "op": op,
        "start": ev["start"].to_numpy(), "end": ev["end"].to_numpy(),
    })  # fmt: skip


def _device_planes(space: Space) -> list[tuple[int, Plane]]:
    """The accelerators' planes with events (``/device:GPU:n``, ``/device:TPU:n``), with n."""
    out = []
    for plane in space.planes:
        m = re.match(r"^/device:[A-Za-z_]+:(\d+)$", plane.name)
        if m and any(len(line.offset_ps) for line in plane.lines):
            out.append((int(m.group(1)), plane))
    return out


def _accelerator_ops(plane: Plane, ordinal: int) -> tuple[list[pd.DataFrame], int]:
    """A GPU's or TPU's ops and module executions: events with an ``hlo_op``
    (GPU kernels: each kernel of an op is a call of it), the events of its
    ``XLA Ops`` line (TPU: the op is the metadata's display name) and of its ``XLA
    Modules`` line (``<module>(<program id>)``). Returns the parts and how many
    events of other lines (kernels of no HLO op) were left out."""
    parts, left = [], 0
    events = plane_events(plane)
    for k, line in enumerate(plane.lines):
        ev = events[events["line"].to_numpy() == k]
        if line.name == "XLA Modules":
            mp = ev["name"].str.extract(_PROGRAM)
            parts.append(
                _ops_frame(ev, ordinal, None, mp["module"].fillna(ev["name"]), mp["program"])
            )
        elif line.name == "XLA Ops":
            shown = ev["display_name"].where(ev["display_name"] != "", ev["hlo_op"])
            parts.append(_ops_frame(ev, ordinal, shown.fillna(ev["name"]), ev["hlo_module"],
                                    ev["program_id"]))  # fmt: skip
        elif line.name not in _OTHER_LINES:
            has = ev["hlo_op"].notna().to_numpy()
            left += int((~has).sum())
            ev = ev[has]
            parts.append(_ops_frame(ev, ordinal, ev["hlo_op"], ev["hlo_module"], ev["program_id"]))
    return parts, left


def _cpu_ops(space: Space) -> list[pd.DataFrame]:
    """XLA's CPU backend: the devices' ops run on host threads (events with
    ``hlo_op`` and ``device_ordinal``); a module's execution on a device is the
    ``[k] ...Execute (<module>)`` event with ``global_device_id``."""
    parts = []
    for plane in _host_planes(space):
        ev = plane_events(plane)
        ops = ev[ev["hlo_op"].notna() & ev["device_ordinal"].notna()]
        parts.append(_ops_frame(ops, ops["device_ordinal"].astype(np.int64), ops["hlo_op"],
                                ops["hlo_module"], ops["program_id"]))  # fmt: skip
        runs = ev[
            ev["global_device_id"].notna() & ev["name"].str.contains("Execute (", regex=False)
        ]
        module = runs["name"].str.extract(_EXECUTE)["module"]
        parts.append(
            _ops_frame(runs, runs["global_device_id"].astype(np.int64), None, module, None)
        )
    return parts


def _device_ops(space: Space) -> tuple[pd.DataFrame, str, int]:
    """Every HLO op and module execution of every device: ``device`` (its
    ordinal), ``module``, ``program``, ``op`` (None for a module execution),
    ``start``, ``end`` (ns), ``parent`` (the row of the module execution that holds
    an op's start, -1: none); an op without a module of its own takes its
    execution's. Returns them, the devices' type (``CPU``, ``GPU``, ``TPU``) and
    how many device events of no HLO op were left out."""
    accelerators = _device_planes(space)
    left = 0
    if accelerators:
        parts = []
        for ordinal, plane in accelerators:
            got, n = _accelerator_ops(plane, ordinal)
            parts += got
            left += n
        kind = accelerators[0][1].name.split(":")[1]
    else:
        parts, kind = _cpu_ops(space), "CPU"
    parts = [p for p in parts if len(p)]
    if not parts:
        return pd.DataFrame(columns=[*_OPS_COLUMNS, "parent"]), kind, left
    ops = pd.concat(parts, ignore_index=True)
    ops["parent"] = _module_parents(ops)
    up = ops["parent"].to_numpy()
    inherit = (up >= 0) & ops["module"].isna().to_numpy()
    for c in ("module", "program"):
        col = ops[c].to_numpy(dtype=object, copy=True)
        col[inherit] = col[up[inherit]]
        ops[c] = col
    ops["module"] = ops["module"].fillna("(no module)")
    # program ids as text (a TPU's are above 2**63), None where unknown
    program = ops["program"].astype(object)
    known = program.notna()
    ops["program"] = program.where(~known, program[known].map(str)).where(known, None)
    return ops, kind, left


def _collective_of(
    ops: pd.DataFrame, modules: dict[tuple[str, Any], dict[str, Instruction]], n_devices: int
) -> tuple[pd.DataFrame, int]:
    """Per distinct (module, program, op): ``kind`` (``"comm"`` or ``"kernel"``),
    ``collective``, ``group_size``, ``bytes`` (NaN where unknown: no HLO, or a
    ``-done``), ``bus_factor``; and how many collectives had no HLO."""
    keys = ops.loc[ops["op"].notna(), ["module", "program", "op"]].drop_duplicates()
    rows, no_hlo = [], 0
    for module, program, op in keys.itertuples(index=False):  # per distinct op, not per event
        ins = modules.get((module, program), modules.get((module, None), {})).get(op)
        if ins is not None:
            kind = ins.kind
            rows.append((module, program, op, "kernel" if kind is None else "comm", kind,
                         None if kind is None else ins.group_size or n_devices,
                         np.nan if ins.nbytes is None else ins.nbytes))  # fmt: skip
        elif _COLLECTIVE_NAME.match(op):
            base = op.split(".")[0].replace("-", "_")  # psum.7 -> psum, all-reduce -> all_reduce
            kind = _NAME_KINDS.get(base, base)
            rows.append((module, program, op, "comm", kind, n_devices, np.nan))
            no_hlo += 1
        else:
            rows.append((module, program, op, "kernel", None, None, np.nan))
    cols = ["module", "program", "op", "kind", "collective", "group_size", "bytes"]
    kinds = pd.DataFrame(rows, columns=cols)
    # nccl-tests' bus factor of each collective's kind and group (0: none or a group of 1)
    kinds["bus_factor"] = [
        bus_factor(k, int(g)) if isinstance(k, str) and g and g > 1 else 0.0
        for k, g in zip(kinds["collective"], kinds["group_size"])
    ]  # per distinct op
    return kinds, no_hlo


def _device_tree(ops: pd.DataFrame, kinds: pd.DataFrame) -> tuple[Tree, np.ndarray]:
    """The devices' tree (``device`` > function > module > op, unified by name) and
    the node of every row of ``ops``."""
    modules = sorted(set(ops["module"]))
    functions = sorted({_function(m) for m in modules})
    op_keys = kinds[["module", "op"]].drop_duplicates().sort_values(["module", "op"])
    n_f, n_m = len(functions), len(modules)
    f_id = {f: 1 + i for i, f in enumerate(functions)}
    m_id = {m: 1 + n_f + i for i, m in enumerate(modules)}
    o_id = {k: 1 + n_f + n_m + i for i, k in enumerate(op_keys.itertuples(index=False, name=None))}
    first = kinds.drop_duplicates(["module", "op"]).set_index(["module", "op"])
    first = first.loc[list(o_id)] if o_id else first
    parent = [-1] + [0] * n_f + [f_id[_function(m)] for m in modules] + [m_id[m] for m, _ in o_id]
    names = ["device", *functions, *modules, *[o for _, o in o_id]]
    kind = ["device"] + ["function"] * n_f + ["module"] * n_m + first["kind"].tolist()
    collective = [None] * (1 + n_f + n_m) + first["collective"].tolist()
    group = [None] * (1 + n_f + n_m) + first["group_size"].tolist()
    tree, new_id = Tree.from_parents_with_ids(
        parent, names, pd.DataFrame(index=range(len(names))), kind=kind,
        columns={"collective": collective, "group_size": group},
        meta={"units": dict(UNITS), "aggregation": dict(AGGREGATION)},
    )  # fmt: skip
    is_op = ops["op"].notna().to_numpy()
    module_node = ops["module"].map(m_id).to_numpy(dtype=np.float64)
    table = pd.DataFrame(list(o_id), columns=["module", "op"]).assign(node=list(o_id.values()))
    op_node = ops[["module", "op"]].merge(table, on=["module", "op"], how="left")["node"]
    node = np.where(is_op, op_node.to_numpy(dtype=np.float64), module_node).astype(np.int64)
    return tree, new_id[node]


def _function(module: str) -> str:
    """The jitted function of a module: its name less XLA's ``jit_`` prefix."""
    return module[4:] if module.startswith("jit_") and len(module) > 4 else module


def _module_parents(ops: pd.DataFrame) -> np.ndarray:
    """For each op, the row of the module execution of its device that holds its
    start (-1: none); -1 for the executions themselves (vectorised per device)."""
    out = np.full(len(ops), -1, dtype=np.int64)
    is_op = ops["op"].notna().to_numpy()
    dev = ops["device"].to_numpy()
    start, end = ops["start"].to_numpy(), ops["end"].to_numpy()
    for d in np.unique(dev):  # a loop per device
        runs = np.flatnonzero((dev == d) & ~is_op)
        if not runs.size:
            continue
        runs = runs[np.argsort(start[runs], kind="stable")]
        mine = np.flatnonzero((dev == d) & is_op)
        k = np.searchsorted(start[runs], start[mine], side="right") - 1
        inside = (k >= 0) & (start[mine] < end[runs[np.maximum(k, 0)]])
        out[mine[inside]] = runs[k[inside]]
    return out


def _steps(space: Space) -> pd.DataFrame:
    """The StepTraceAnnotation intervals (``step_num``), by start."""
    parts = [
        ev.loc[ev["step_num"].notna(), ["start", "end", "step_num"]]
        for ev in (plane_events(plane) for plane in _host_planes(space))
    ]
    steps = (
        pd.concat(parts, ignore_index=True)
        if parts
        else pd.DataFrame(columns=["start", "end", "step_num"])
    )
    return steps.sort_values("start", kind="stable").reset_index(drop=True)


def _step_of(start: np.ndarray, steps: pd.DataFrame) -> np.ndarray:
    s0 = steps["start"].to_numpy(dtype=np.int64)
    s1 = steps["end"].to_numpy(dtype=np.int64)
    k = np.searchsorted(s0, start, side="right") - 1
    inside = (k >= 0) & (start < s1[np.maximum(k, 0)]) if len(s0) else np.zeros(len(start), bool)
    num = steps["step_num"].to_numpy(dtype=np.float64)
    return np.where(inside, num[np.maximum(k, 0)] if len(s0) else -1, -1).astype(np.int64)


# ------------------------------------------------------------------- the host
def _host_columns(plane: Plane, base: int) -> TraceEvents:
    """The host plane's lines as the Chrome reader's columns: one process, a
    thread per line, each event an ``X`` event (microseconds from ``base``)."""
    col = TraceEvents()
    pid = plane.stats.get("process_id", plane.id)
    col.process_names[pid] = plane.name
    ev = plane_events(plane)
    line = ev["line"].to_numpy()
    thread_of = np.zeros(max(len(plane.lines), 1), dtype=np.int32)
    for k in np.unique(line).tolist():  # a loop per line
        ln = plane.lines[k]
        thread_of[k] = col.threads.setdefault((pid, ln.id), len(col.threads))
        col.thread_names[pid, ln.id] = ln.display_name or ln.name
    codes, names = pd.factorize(ev["name"])
    col.names.update({n: i for i, n in enumerate(names)})
    col.x_name.frombytes(codes.astype(np.int32).tobytes())
    col.x_th.frombytes(thread_of[line].tobytes())
    col.x_cat.frombytes(np.zeros(len(ev), np.int32).tobytes())
    start = ev["start"].to_numpy(dtype=np.int64)
    col.x_ts.frombytes(((start - base) / 1e3).tobytes())
    col.x_dur.frombytes(((ev["end"].to_numpy(dtype=np.int64) - start) / 1e3).tobytes())
    col.cats["xplane"] = 0
    return col


# ------------------------------------------------------------------ building
UNITS = {"time": "ns", "calls": "count", "comm_time": "ns", "comm_bytes": "B", "bus_bytes": "B"}
AGGREGATION = {m: "sum" for m in UNITS}


def _decode(path: Path) -> Space:
    raw = file_bytes(path)
    try:
        space = decode(raw)
    except (WireError, ValueError, UnicodeDecodeError) as e:
        raise ProfileError(path, f"not an XPlane protobuf (XSpace): {e}") from None
    if not space.planes:
        raise ProfileError(path, "not an XPlane protobuf (XSpace): it holds no plane")
    if space.unknown:
        said = ", ".join(f"{m} field {f} ({n}x)" for (m, f), n in sorted(space.unknown.items()))
        warnings.warn(
            f"{path}: written by a newer XPlane schema: fields not read: {said}", stacklevel=4
        )
    return space


def _timeline(path: Path) -> Timeline:
    space = _decode(path)
    ops, device_type, left_out = _device_ops(space)
    n_dev = int(ops["device"].nunique()) if len(ops) else 0
    kinds, no_hlo = _collective_of(ops, _modules(space, path), n_dev)
    if no_hlo:
        warnings.warn(
            f"{path}: {no_hlo} collective op(s) without their module's HLO, so without "
            "bytes: XLA stores a module's HLO only where it was compiled while the "
            "profiler ran (start the trace before the program's first call, or call "
            "jax.clear_caches() first)",
            stacklevel=3,
        )
    steps = _steps(space)
    timelines = []
    host_planes = _host_planes(space)
    if len(ops):
        timelines.append(_device_timeline(ops, kinds, steps, space, path, device_type))
    for plane in host_planes:
        if any(len(line.offset_ps) for line in plane.lines):
            timelines.append(_host_timeline(plane, steps, space, path))
    if not timelines:
        raise ProfileError(path, "no event on a host or device plane: nothing to build a tree of")
    tl = Timeline.concat(timelines) if len(timelines) > 1 else timelines[0]
    meta = {
        "format": "xplane", "path": str(path),
        "event_metrics": {m: UNITS[m] for m in ("comm_time", "comm_bytes", "bus_bytes")},
        "xplane": {
            "planes": [p.name for p in space.planes], "hostnames": space.hostnames,
            "steps": int(steps["step_num"].nunique()), "collectives_without_bytes": no_hlo,
            "device_events_without_hlo_op": left_out,
            "errors": space.errors, "warnings": space.warnings,
        },
        "units": dict(UNITS), "aggregation": dict(AGGREGATION),
    }  # fmt: skip
    if not len(steps):
        meta["xplane"]["no_steps"] = "no jax.profiler.StepTraceAnnotation in the trace"
    return Timeline(tl.tree, tl.events, tl.profiles, meta=meta)


def _device_timeline(
    ops: pd.DataFrame,
    kinds: pd.DataFrame,
    steps: pd.DataFrame,
    space: Space,
    path: Path,
    device_type: str,
) -> Timeline:
    tree, node = _device_tree(ops, kinds)
    devices = np.unique(ops["device"].to_numpy())
    profile = np.searchsorted(devices, ops["device"].to_numpy())
    info = ops.merge(kinds, on=["module", "program", "op"], how="left")
    comm = (info["kind"] == "comm").to_numpy()
    dur = (ops["end"] - ops["start"]).to_numpy(dtype=np.float64)
    nbytes = info["bytes"].to_numpy(dtype=np.float64)
    factor = info["bus_factor"].to_numpy(dtype=np.float64)
    events = pd.DataFrame({
        "profile": profile, "node": node, "start": ops["start"], "end": ops["end"],
        "event": np.arange(len(ops)), "parent_event": ops["parent"].to_numpy(),
        "comm_time": np.where(comm & np.isfinite(nbytes), dur, np.nan),
        "comm_bytes": np.where(comm, nbytes, np.nan),
        "bus_bytes": np.where(comm & np.isfinite(nbytes), nbytes * factor, np.nan),
        "collective": info["collective"].to_numpy(dtype=object),
        "step": _step_of(ops["start"].to_numpy(dtype=np.int64), steps),
    })  # fmt: skip
    host = space.hostnames[0] if space.hostnames else None
    pid = next((p.stats.get("process_id") for p in _host_planes(space)), None)
    profiles = pd.DataFrame({
        "kind": "device", "device": [f"{device_type}:{d}" for d in devices], "rank": devices,
        "host": host, "process_id": pid, "file": str(path),
    })  # fmt: skip
    meta = {"event_metrics": {m: UNITS[m] for m in ("comm_time", "comm_bytes", "bus_bytes")}}
    return Timeline(tree, events, profiles, meta=meta)


def _host_timeline(plane: Plane, steps: pd.DataFrame, space: Space, path: Path) -> Timeline:
    base = min(int(line.timestamp_ns) for line in plane.lines if len(line.offset_ps))
    _, trees, frames, _ = process_profiles(path, _host_columns(plane, base))
    tree, frame = trees[0], frames[0]
    frame = frame.assign(profile=0, start=frame["start"] + base, end=frame["end"] + base)
    frame["step"] = _step_of(frame["start"].to_numpy(dtype=np.int64), steps)
    profiles = pd.DataFrame({
        "kind": ["host"], "device": [plane.name], "rank": [-1],
        "host": [space.hostnames[0] if space.hostnames else None],
        "process_id": [plane.stats.get("process_id")], "file": [str(path)],
    })  # fmt: skip
    return Timeline(tree, frame, profiles)


@register("xplane", _sniff, "XPlane protobuf (JAX, TensorBoard, xprof: *.xplane.pb)")
def read_xplane(path: Path) -> Any:
    """Read an XPlane file (``*.xplane.pb``): one profile per device and one for
    the host's threads, as an :class:`~cctviz.Ensemble` (module docstring).

    Example:
        >>> import cctviz
        >>> e = cctviz.read("tests/data/jax-xplane/collectives-2cpu.xplane.pb")
        >>> e.meta["format"], e.tree.unit("comm_bytes")
        ('xplane', 'B')
    """
    tl = _timeline(Path(path))
    ens = tl.ensemble()
    ens.meta.update({k: v for k, v in tl.meta.items() if k not in ("units", "aggregation")})
    return ens


@register_timeline("xplane")
def read_xplane_timeline(path: Path) -> Timeline:
    """An XPlane file as a :class:`~cctviz.model.timeline.Timeline`: the ops and
    module executions of every device and the host's events, in epoch ns, each
    with its ``step``; collectives with ``collective``, ``comm_bytes`` and
    ``bus_bytes``, so that :func:`cctviz.ops.collectives.instances` matches them
    across the devices.

    Example:
        >>> import cctviz
        >>> tl = cctviz.read_timeline("tests/data/jax-xplane/collectives-2cpu.xplane.pb")
        >>> tl.profiles["kind"].tolist()
        ['device', 'device', 'host']
    """
    return _timeline(Path(path))


__all__ = ["read_xplane", "read_xplane_timeline"]
