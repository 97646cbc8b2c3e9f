"""Nsight Systems SQLite exports (``nsys export --type sqlite FILE``), format ``"nsys"``.

Format facts (export schema 2.x and later, as ``nsys export`` writes them):

- An SQLite database. Strings are interned in ``StringIds`` (``id``, ``value``);
  threads and processes are "serialized global ids": ``globalTid`` holds the pid in
  bits 24-47 and the tid in bits 0-23 (``globalPid`` is ``globalTid`` with the tid
  bits 0). Times are int64 ns from the start of the capture;
  ``TARGET_INFO_SESSION_START_TIME.utcEpochNs`` says when that was.
- ``CUPTI_ACTIVITY_KIND_RUNTIME``: CUDA runtime and driver API calls (``start``,
  ``end``, ``globalTid``, ``correlationId``, ``nameId``).
- ``CUPTI_ACTIVITY_KIND_KERNEL`` (``demangledName``, ``shortName``), ``_MEMCPY``
  (``bytes``, ``copyKind``), ``_MEMSET`` (``bytes``): GPU work with ``deviceId``,
  ``streamId``, ``globalPid`` and the ``correlationId`` of the API call that
  launched it (correlation ids are per process).
- ``NVTX_EVENTS``: ``eventType`` 59 push/pop ranges (a stack per thread and
  domain), 60 start/end ranges (may overlap, may end on another thread), 34 marks,
  39 thread names (``nvtxNameOsThread``: nsys's MPI trace names the thread "MPI
  Rank N"), 75 domain creation (``text`` = the domain's name, ``domainId``); a
  range's name is ``text`` or ``StringIds[textId]`` (a registered string). Newer
  exports list the event types in ``ENUM_NSYS_EVENT_TYPE``, read where present.
  torch's ``emit_nvtx`` ranges are in the default domain, NCCL's in "NCCL",
  nsys's MPI trace's in "MPI".
- ``ThreadNames`` (``nameId``, ``globalTid``), ``PROCESSES`` (``globalPid``,
  ``pid``, ``name``), ``TARGET_INFO_SYSTEM_ENV`` (``Hostname``...),
  ``EXPORT_META_DATA`` (the nsys version). Which tables exist depends on the nsys
  version and on what was traced: every table here but ``StringIds`` is optional.
- ``.nsys-rep`` (``.qdrep`` before 2021.3) reports are NVIDIA's own container:
  recognised by their name and refused with the command that exports them.

How the profiles are built (the choices):

- One profile per process that has events; its rank is the MPI rank where nsys
  recorded one (a thread named "MPI Rank N"), else the processes are numbered in
  pid order. One process gives a :class:`~cctviz.Tree`, several an
  :class:`~cctviz.Ensemble`, unified by call path.
- Per process, one root per thread, named without ids so that ranks unify:
  ``main thread`` (tid = pid), ``thread 1``, ``thread 2``... in order of their
  first event (kind ``"thread"``; the thread's name in the node column ``label``).
- NVTX ranges (kind ``"region"``; ``domain`` column) and CUDA API calls (kind
  ``"runtime"``) are nested by time on their thread (a start/end range on the
  thread that started it): each goes under the innermost interval that contains
  it whole (the model's :func:`~cctviz.model.build.nest_intervals`,
  ``overlap="outside"``). Intervals that overlap without nesting are siblings.
  A range never ended ends at the last event of the capture
  (``meta["nsys"]["unfinished_ranges"]``).
- Kernels, copies and sets (kinds ``"kernel"``, ``"memcpy"``, ``"memset"``;
  kernels named by ``demangledName``, or ``shortName`` with
  ``kernel_names="short"``; copies ``Memcpy HtoD``...) go under the API call of
  their process with their correlation id (the innermost, where nsys recorded a
  call at two levels, e.g. ``cudaMalloc > cudaMalloc_v3020``; the model's
  :func:`~cctviz.model.gputrace.gpu_trace`); those without one under a root
  ``(unattributed GPU)`` (``meta["nsys"]["unattributed_gpu"]``). Their events
  carry ``device`` (``deviceId``), ``stream`` (``device D stream S``) and
  ``launch_event`` (the event id of the API call, -1 for none).
- Communication: NCCL kernels (``nccl...``) keep kind ``"kernel"`` (what
  :func:`~cctviz.ops.gpu.gpu_breakdown` counts) and add their GPU time as
  ``comm_time``; NCCL-domain ranges and MPI ranges are kind ``"comm"`` with a
  ``collective`` column where the name says one (``MPI_Allreduce`` ->
  ``all_reduce``); MPI communication calls (sends, receives, collectives, waits)
  add their CPU time as ``comm_time`` (NCCL ranges do not: their kernels do, so no
  time counts twice). Message sizes are not in these tables: no ``comm_bytes``.

Metrics (the timeline's; all ns or B, rule ``sum``): ``time`` (an interval's
length less its nested intervals', never below 0), ``calls``, ``gpu_time`` (GPU
duration), ``gpu_bytes`` (bytes copied or set), ``comm_time``.
:func:`read_nsys` is :func:`read_nsys_timeline` aggregated (``.ensemble()``), so
both give the same numbers.

>>> import cctviz
>>> t = cctviz.read("../shared/data/nsys/saxpy-mpi-cuda_nsys_perlmutter0.sqlite")
>>> t.meta["rank"], t.units["gpu_time"]
(0, 'ns')
>>> int(t.metrics["calls"][t.nodes["kind"] == "kernel"].sum())
5
"""

from __future__ import annotations

import re
import sqlite3
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import ProfileError
from ..model._algo import merge_by_path
from ..model.build import nest_intervals
from ..model.collectives import OTF2_OPS, collective_kind
from ..model.ensemble import Ensemble
from ..model.gputrace import gpu_trace
from ..model.timeline import Timeline
from ..model.tree import Tree
from . import register, register_timeline

SQLITE_MAGIC = b"SQLite format 3\x00"
REPORT_SUFFIXES = (".nsys-rep", ".qdrep")
EXPORT_HINT = "nsys export --type sqlite {name}"
#: NVTX event types (``ENUM_NSYS_EVENT_TYPE`` names them in newer exports)
NVTX_TYPES = {
    "NvtxPushPopRange": 59,
    "NvtxStartEndRange": 60,
    "NvtxThread": 39,
    "NvtxDomainCreate": 75,
}
RUNTIME, KERNEL, MEMCPY, MEMSET, NVTX = (
    "CUPTI_ACTIVITY_KIND_RUNTIME",
    "CUPTI_ACTIVITY_KIND_KERNEL",
    "CUPTI_ACTIVITY_KIND_MEMCPY",
    "CUPTI_ACTIVITY_KIND_MEMSET",
    "NVTX_EVENTS",
)
EVENT_TABLES = (RUNTIME, NVTX, KERNEL, MEMCPY, MEMSET)
TID_BITS = 24
#: CUpti_ActivityMemcpyKind -> the name of a copy
COPY_NAMES = {
    1: "Memcpy HtoD",
    2: "Memcpy DtoH",
    3: "Memcpy HtoA",
    4: "Memcpy AtoH",
    5: "Memcpy AtoA",
    6: "Memcpy AtoD",
    7: "Memcpy DtoA",
    8: "Memcpy DtoD",
    9: "Memcpy HtoH",
    10: "Memcpy PtoP",
}
#: units of the per-event metrics (the timeline's; ``time`` is ns)
UNITS = {"gpu_time": "ns", "gpu_bytes": "B", "comm_time": "ns"}
UNATTRIBUTED = "(unattributed GPU)"
_RANK = re.compile(r"^MPI Rank (\d+)$")
_NCCL_KERNEL = re.compile(r"^nccl(?:Dev)?Kernel_([A-Za-z]+)")
_MPI_WAIT = re.compile(r"^MPI_(?:Wait|Test|Probe|Iprobe|Sendrecv)")


# ------------------------------------------------------------------ detection
def _is_report(path: Path) -> bool:
    return path.name.lower().endswith(REPORT_SUFFIXES)


def _sniff(path: Path, head: bytes) -> bool:
    """An SQLite database with nsys's tables, or a ``.nsys-rep``/``.qdrep`` report
    (not SQLite: refused on reading with the command that exports it)."""
    if path.is_dir():
        return False
    if head.startswith(SQLITE_MAGIC):
        try:
            con = _connect(path)
        except ProfileError:
            return False
        try:
            tables = _table_names(con)
        except sqlite3.Error:
            return False
        finally:
            con.close()
        return "StringIds" in tables and bool(tables & set(EVENT_TABLES))
    return _is_report(path)


# ------------------------------------------------------------------ opening
def _check_header(path: Path) -> None:
    """The file is a whole SQLite database: its header's page count fits its size."""
    with open(path, "rb") as f:
        head = f.read(100)
    if not head.startswith(SQLITE_MAGIC):
        if _is_report(path):
            raise ProfileError(
                path,
                "an Nsight Systems report (.nsys-rep) is NVIDIA's own container, which "
                "cctviz does not read; export it to SQLite with "
                f"`{EXPORT_HINT.format(name=path.name)}` and read the .sqlite file",
            )
        raise ProfileError(path, "not an SQLite database (nsys export --type sqlite writes one)")
    if len(head) < 100:
        raise ProfileError(path, f"truncated: {len(head)} bytes, shorter than an SQLite header")
    page = struct.unpack(">H", head[16:18])[0]
    page = 65536 if page == 1 else page
    counter, pages, valid_for = struct.unpack(">I", head[24:28]), head[28:32], head[92:96]
    size = path.stat().st_size
    if page < 512 or page & (page - 1):
        raise ProfileError(path, f"damaged SQLite header: page size {page}", "header")
    if size % page:
        raise ProfileError(path, f"truncated or damaged: {size} bytes is no whole number of pages")
    if struct.pack(">I", counter[0]) == valid_for:
        want = struct.unpack(">I", pages)[0] * page
        if size < want:
            raise ProfileError(path, f"truncated: {size} bytes, the header says {want}")


def _connect(path: Path) -> sqlite3.Connection:
    """A read-only connection (nothing written beside the file, not even a lock)."""
    try:
        return sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro&immutable=1", uri=True)
    except sqlite3.Error as e:
        raise ProfileError(path, f"cannot open the SQLite database ({e})") from e


def _table_names(con: sqlite3.Connection) -> set[str]:
    rows = con.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    return {r[0] for r in rows}


@dataclass
class _Db:
    """An open export: its tables and their columns."""

    path: Path
    con: sqlite3.Connection
    columns: dict[str, set[str]] = field(default_factory=dict)

    def has(self, table: str) -> bool:
        return table in self.columns

    def query(self, sql: str) -> pd.DataFrame:
        try:
            return pd.read_sql_query(sql, self.con)
        except (sqlite3.Error, pd.errors.DatabaseError) as e:  # pandas wraps sqlite's errors
            raise ProfileError(self.path, f"damaged SQLite database ({e})", sql) from e

    def cols(self, table: str, wanted: dict[str, str]) -> str:
        """A select list of ``wanted`` (column -> alias), NULL for absent columns."""
        have = self.columns[table]
        return ", ".join(
            f'"{c}" AS {a}' if c in have else f"NULL AS {a}" for c, a in wanted.items()
        )

    def need(self, table: str, *cols: str) -> None:
        missing = [c for c in cols if c not in self.columns[table]]
        if missing:
            raise ProfileError(self.path, f"table {table} lacks column(s) {missing}", table)


def _open(path: Path) -> _Db:
    _check_header(path)
    con = _connect(path)
    try:
        names = _table_names(con)
        cols = {t: {r[1] for r in con.execute(f'PRAGMA table_info("{t}")')} for t in names}
    except sqlite3.Error as e:
        con.close()
        raise ProfileError(path, f"damaged SQLite database ({e})") from e
    if "StringIds" not in cols or not set(EVENT_TABLES) & set(cols):
        con.close()
        raise ProfileError(
            path,
            "not an Nsight Systems export: no StringIds table and none of "
            f"{', '.join(EVENT_TABLES)}",
        )
    return _Db(path, con, cols)


# ------------------------------------------------------------------ reading tables
def _strings(db: _Db) -> pd.Series:
    s = db.query("SELECT id, value FROM StringIds")
    return pd.Series(s["value"].to_numpy(dtype=object), index=s["id"].to_numpy(dtype=np.int64))


def _lookup(strings: pd.Series, ids: pd.Series) -> np.ndarray:
    """The strings of ``ids`` (None where absent or NULL)."""
    num = pd.to_numeric(ids, errors="coerce")
    out = strings.reindex(num.fillna(-1).to_numpy(dtype=np.int64)).to_numpy(dtype=object)
    out[num.isna().to_numpy()] = None
    return out


def _nvtx_types(db: _Db) -> dict[str, int]:
    """NVTX event type codes: the export's own enum table where it has one."""
    types = dict(NVTX_TYPES)
    if db.has("ENUM_NSYS_EVENT_TYPE") and {"id", "name"} <= db.columns["ENUM_NSYS_EVENT_TYPE"]:
        e = db.query("SELECT id, name FROM ENUM_NSYS_EVENT_TYPE")
        found = dict(zip(e["name"].astype(str), e["id"].astype(int)))
        types.update({k: found[k] for k in types if k in found})
    return types


def _runtime(db: _Db, strings: pd.Series) -> pd.DataFrame:
    if not db.has(RUNTIME):
        return _empty_cpu()
    db.need(RUNTIME, "start", "end", "nameId")
    sel = db.cols(
        RUNTIME,
        {
            "start": "start",
            "end": "end",
            "globalTid": "gtid",
            "correlationId": "corr",
            "nameId": "nid",
        },
    )
    r = db.query(f"SELECT {sel} FROM {RUNTIME}")
    names = _lookup(strings, r["nid"])
    names[pd.isna(names)] = "(unnamed API call)"
    return pd.DataFrame(
        {
            "start": r["start"],
            "end": r["end"],
            "gtid": r["gtid"],
            "name": names,
            "kind": "runtime",
            "corr": pd.to_numeric(r["corr"], errors="coerce").fillna(-1),
            "domain": None,
            "collective": None,
            "comm": False,
        }
    )


def _empty_cpu() -> pd.DataFrame:
    cols = ("start", "end", "gtid", "name", "kind", "corr", "domain", "collective", "comm")
    return pd.DataFrame({c: pd.Series(dtype=object) for c in cols})


def _mpi(names: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For MPI call names: the collective (or None) and whether it communicates."""
    uniq, inv = np.unique(names.astype(str), return_inverse=True)
    kinds, comm = [], []
    for u in uniq:  # a loop per distinct name, not per event
        rest = u[4:] if u.startswith("MPI_") else u
        k = OTF2_OPS.get(rest.upper()) or collective_kind(rest)
        kinds.append(k)
        comm.append(k is not None or bool(_MPI_WAIT.match(u)))
    return np.asarray(kinds, dtype=object)[inv], np.asarray(comm, dtype=bool)[inv]


def _nvtx(db: _Db, strings: pd.Series) -> tuple[pd.DataFrame, pd.DataFrame]:
    """NVTX ranges as intervals, and the thread names NVTX gave (globalTid, name)."""
    if not db.has(NVTX):
        return _empty_cpu(), pd.DataFrame({"gtid": [], "name": []})
    db.need(NVTX, "start", "eventType")
    t = _nvtx_types(db)
    sel = db.cols(
        NVTX,
        {
            "start": "start",
            "end": "end",
            "eventType": "type",
            "globalTid": "gtid",
            "text": "text",
            "textId": "tid_text",
            "domainId": "domain",
        },
    )
    types = (t["NvtxPushPopRange"], t["NvtxStartEndRange"], t["NvtxThread"], t["NvtxDomainCreate"])
    ev = db.query(f"SELECT {sel} FROM {NVTX} WHERE eventType IN ({', '.join(map(str, types))})")
    typ = ev["type"].to_numpy()
    dom = ev[typ == t["NvtxDomainCreate"]]
    domains = dict(zip(dom["domain"], dom["text"]))
    named = ev[typ == t["NvtxThread"]]
    thread_names = pd.DataFrame({"gtid": named["gtid"], "name": named["text"]})
    r = ev[(typ == t["NvtxPushPopRange"]) | (typ == t["NvtxStartEndRange"])]
    text = r["text"].to_numpy(dtype=object)
    registered = _lookup(strings, r["tid_text"])
    name = np.where(pd.isna(text), registered, text)
    name[pd.isna(name)] = "(unnamed range)"
    domain = r["domain"].map(domains).to_numpy(dtype=object)
    domain[pd.isna(domain)] = None
    name = name.astype(object)
    is_mpi = (domain == "MPI") | pd.Series(name).astype(str).str.startswith("MPI_").to_numpy()
    is_nccl = (domain == "NCCL") | pd.Series(name).astype(str).str.startswith("nccl").to_numpy()
    collective = np.full(len(r), None, dtype=object)
    comm_time = np.zeros(len(r), dtype=bool)
    if is_mpi.any():
        collective[is_mpi], comm_time[is_mpi] = _mpi(name[is_mpi])
    if is_nccl.any():
        stripped = pd.Series(name[is_nccl]).astype(str).str.replace(r"^nccl", "", regex=True)
        kinds = {s: collective_kind(s) for s in stripped.unique()}  # per distinct name
        collective[is_nccl] = stripped.map(kinds).to_numpy(dtype=object)
    kind = np.where(is_mpi | is_nccl, "comm", "region")
    out = pd.DataFrame(
        {
            "start": r["start"],
            "end": r["end"],
            "gtid": r["gtid"],
            "name": name,
            "kind": kind,
            "corr": -1,
            "domain": domain,
            "collective": collective,
            "comm": comm_time,
        }
    )
    return out, thread_names


def _gpu(db: _Db, strings: pd.Series, kernel_names: str) -> pd.DataFrame:
    """Kernels, copies and sets: start, end, gpid, corr, name, kind, bytes, stream."""
    parts = []
    base = {
        "start": "start",
        "end": "end",
        "globalPid": "gpid",
        "correlationId": "corr",
        "deviceId": "device",
        "streamId": "stream",
    }
    if db.has(KERNEL):
        col = "shortName" if kernel_names == "short" else "demangledName"
        db.need(KERNEL, "start", "end", col)
        k = db.query(f"SELECT {db.cols(KERNEL, {**base, col: 'nid'})} FROM {KERNEL}")
        names = _lookup(strings, k["nid"])
        names[pd.isna(names)] = "(unnamed kernel)"
        parts.append(k.drop(columns="nid").assign(name=names, kind="kernel", bytes=np.nan))
    if db.has(MEMCPY):
        db.need(MEMCPY, "start", "end", "bytes")
        m = db.query(
            f"SELECT {db.cols(MEMCPY, {**base, 'bytes': 'bytes', 'copyKind': 'ck'})} FROM {MEMCPY}"
        )
        ck = pd.to_numeric(m["ck"], errors="coerce").map(COPY_NAMES).fillna("Memcpy")
        parts.append(m.drop(columns="ck").assign(name=ck.to_numpy(dtype=object), kind="memcpy"))
    if db.has(MEMSET):
        db.need(MEMSET, "start", "end", "bytes")
        s = db.query(f"SELECT {db.cols(MEMSET, {**base, 'bytes': 'bytes'})} FROM {MEMSET}")
        parts.append(s.assign(name="Memset", kind="memset"))
    parts = [p for p in parts if len(p)]
    if not parts:
        return pd.DataFrame(
            {
                c: pd.Series(dtype=object)
                for c in ("start", "end", "gpid", "corr", "device", "stream", "name", "kind")
            }
            | {"bytes": pd.Series(dtype=float)}
        )
    return pd.concat(parts, ignore_index=True)


def _thread_names(db: _Db, strings: pd.Series, nvtx_named: pd.DataFrame) -> pd.Series:
    """globalTid -> the thread's name (ThreadNames, then NVTX's nvtxNameOsThread)."""
    parts = []
    if db.has("ThreadNames") and {"nameId", "globalTid"} <= db.columns["ThreadNames"]:
        t = db.query("SELECT globalTid AS gtid, nameId FROM ThreadNames")
        parts.append(pd.DataFrame({"gtid": t["gtid"], "name": _lookup(strings, t["nameId"])}))
    parts.append(nvtx_named)
    names = pd.concat(parts, ignore_index=True).dropna()
    names = names[names["name"].astype(str) != ""]
    return names.drop_duplicates("gtid", keep="first").set_index("gtid")["name"]


def _scalar(db: _Db, sql: str) -> Any:
    try:
        row = db.con.execute(sql).fetchone()
    except sqlite3.Error:
        return None
    return row[0] if row else None


# ------------------------------------------------------------------ building
def _proc(gid: np.ndarray) -> np.ndarray:
    """The process part of serialized global ids (the tid bits cleared)."""
    return (gid >> TID_BITS) << TID_BITS


def _load(path: Path, kernel_names: str) -> tuple[Tree, pd.DataFrame, pd.DataFrame, dict]:
    if kernel_names not in ("demangled", "short"):
        raise ValueError(f"kernel_names: 'demangled' or 'short', not {kernel_names!r}")
    db = _open(path)
    try:
        strings = _strings(db)
        rt = _runtime(db, strings)
        nv, nvtx_named = _nvtx(db, strings)
        gpu = _gpu(db, strings, kernel_names)
        tnames = _thread_names(db, strings, nvtx_named)
        info = _info(db)
    except sqlite3.Error as e:
        raise ProfileError(path, f"damaged SQLite database ({e})") from e
    finally:
        db.con.close()
    return _build(path, rt, nv, gpu, tnames, info)


def _info(db: _Db) -> dict[str, Any]:
    info: dict[str, Any] = {"processes": {}, "epoch": 0}
    if db.has("TARGET_INFO_SESSION_START_TIME"):
        info["epoch"] = _scalar(db, "SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME") or 0
    if db.has("EXPORT_META_DATA"):
        v = _scalar(db, "SELECT value FROM EXPORT_META_DATA WHERE name = 'EXPORT_PRODUCT_VERSION'")
        if v is not None:
            info["nsys_version"] = str(v)
    if db.has("TARGET_INFO_SYSTEM_ENV"):
        h = _scalar(db, "SELECT value FROM TARGET_INFO_SYSTEM_ENV WHERE name = 'Hostname'")
        if h:
            info["host"] = str(h)
    if db.has("PROCESSES") and {"globalPid", "name"} <= db.columns["PROCESSES"]:
        p = db.query("SELECT globalPid, name FROM PROCESSES").dropna()
        info["processes"] = dict(zip(p["globalPid"].astype(np.int64), p["name"]))
    return info


def _ints(path: Path, df: pd.DataFrame, cols: tuple[str, ...], table: str) -> None:
    for c in cols:
        v = pd.to_numeric(df[c], errors="coerce")
        if len(v) and v.isna().any():
            raise ProfileError(path, f"a {c} that is no integer", table)
        df[c] = v.to_numpy(dtype=np.int64) if len(v) else np.empty(0, np.int64)


def _build(
    path: Path,
    rt: pd.DataFrame,
    nv: pd.DataFrame,
    gpu: pd.DataFrame,
    tnames: pd.Series,
    info: dict[str, Any],
) -> tuple[Tree, pd.DataFrame, pd.DataFrame, dict]:
    cpu = pd.concat([d for d in (rt, nv) if len(d)] or [_empty_cpu()], ignore_index=True)
    cpu = cpu[cpu["gtid"].notna()].reset_index(drop=True)
    if not len(cpu) and not len(gpu):
        raise ProfileError(path, "no CUDA API call, NVTX range, kernel, copy or set")
    last = max(
        pd.to_numeric(cpu["end"], errors="coerce").max() if len(cpu) else 0,
        pd.to_numeric(gpu["end"], errors="coerce").max() if len(gpu) else 0,
    )
    open_end = pd.to_numeric(cpu["end"], errors="coerce").isna().to_numpy()
    cpu.loc[open_end, "end"] = last if pd.notna(last) else cpu.loc[open_end, "start"]
    _ints(path, cpu, ("start", "end", "gtid", "corr"), "CUPTI_ACTIVITY_KIND_RUNTIME/NVTX_EVENTS")
    _ints(path, gpu, ("start", "end"), "CUPTI_ACTIVITY_KIND_KERNEL/MEMCPY/MEMSET")
    bad = np.flatnonzero(cpu["end"].to_numpy() < cpu["start"].to_numpy())
    gbad = np.flatnonzero(gpu["end"].to_numpy() < gpu["start"].to_numpy())
    if bad.size or gbad.size:
        raise ProfileError(path, "an event ends before it starts", "start/end")
    n, g = len(cpu), len(gpu)
    gtid = cpu["gtid"].to_numpy()
    start, end = cpu["start"].to_numpy(), cpu["end"].to_numpy()
    tparent = nest_intervals(gtid, start, end, overlap="outside")["parent"]

    # ---- GPU work -> the innermost API call of its process with its correlation id
    cproc = _proc(gtid)
    gcorr = pd.to_numeric(gpu["corr"], errors="coerce").fillna(-1).to_numpy(dtype=np.int64)
    gpid = pd.to_numeric(gpu["gpid"], errors="coerce")
    own = _proc(gpid.fillna(-1).to_numpy(dtype=np.int64))  # the activity's process
    scoped = g and gpid.notna().all()  # else by correlation id alone
    inner = np.empty(n, dtype=np.int64)  # the call that starts last launches
    inner[np.lexsort((np.arange(n), start))] = np.arange(n)
    gt = gpu_trace(
        cpu["corr"].to_numpy(),
        gcorr,
        device=gpu["device"].to_numpy(dtype=object),
        stream=(
            "device " + gpu["device"].astype(str) + " stream " + gpu["stream"].astype(str)
        ).to_numpy(dtype=object)
        if g
        else np.empty(0, dtype=object),
        cpu_scope=cproc if scoped else None,
        gpu_scope=own if scoped else None,
        cpu_rank=inner,
        group=own,  # unattributed: a root per process
    )
    launcher = gt.launch
    gproc = np.where(launcher >= 0, cproc[np.maximum(launcher, 0)] if n else 0, own)

    # ---- profiles: processes, in rank order where MPI ranks are known, else pid order
    procs = np.unique(np.r_[cproc, gproc]).astype(np.int64)
    tn = tnames.reindex(np.unique(gtid)).dropna().astype(str)
    rank_of_thread = tn.str.extract(_RANK)[0].dropna().astype(np.int64)
    prank = pd.Series(rank_of_thread.to_numpy(), index=_proc(rank_of_thread.index.to_numpy()))
    prank = prank.groupby(level=0).min().reindex(procs)
    ranked = prank.notna().all() and prank.is_unique and len(procs) > 0
    pid = (procs >> TID_BITS) & ((1 << TID_BITS) - 1)
    order = np.lexsort((pid, prank.to_numpy(dtype=float))) if ranked else np.argsort(pid)
    procs, pid = procs[order], pid[order]
    profile_of = pd.Series(np.arange(len(procs)), index=procs)
    profiles = pd.DataFrame(
        {
            "rank": prank.to_numpy()[order].astype(np.int64) if ranked else np.arange(len(procs)),
            "pid": pid,
            "process": [str(info["processes"].get(int(p), "")) or None for p in procs],
        }
    )
    if "host" in info:
        profiles["host"] = info["host"]
    cprof = profile_of.reindex(cproc).to_numpy(dtype=np.int64)
    gprof = profile_of.reindex(gproc).to_numpy(dtype=np.int64)

    # ---- thread roots: main thread (tid = pid), thread 1, 2... by first event
    threads, tinv = np.unique(gtid, return_inverse=True)
    first = np.full(threads.shape[0], np.iinfo(np.int64).max)
    np.minimum.at(first, tinv, start)
    tproc = _proc(threads)
    tmain = (threads & ((1 << TID_BITS) - 1)) == ((threads >> TID_BITS) & ((1 << TID_BITS) - 1))
    tord = np.lexsort((first, ~tmain, tproc))  # per process: the main thread, then by first event
    rank_in = np.empty_like(tord)
    grp_start = np.r_[0, np.flatnonzero(np.diff(tproc[tord])) + 1]
    pos = np.arange(tord.size) - np.repeat(grp_start, np.diff(np.r_[grp_start, tord.size]))
    rank_in[tord] = pos
    has_main = pd.Series(tmain).groupby(tproc).transform("any").to_numpy()
    number = rank_in + (~has_main)  # "thread k" counts from 1 where no main thread
    tname = np.where(tmain, "main thread", np.char.add("thread ", number.astype(str)))
    tlabel = tnames.reindex(threads).to_numpy(dtype=object)

    # ---- unattributed GPU work: a root per process (per profile, in profile order)
    unattributed = gt.unattributed
    uprofs = np.unique(gprof[unattributed])

    # ---- the event forest: thread roots, unattributed roots, CPU events, GPU events
    T, U = threads.shape[0], uprofs.shape[0]
    S = T + U
    total = S + n + g
    parent = np.empty(total, dtype=np.int64)
    parent[:S] = -1
    parent[S : S + n] = np.where(tparent >= 0, tparent + S, tinv)
    group_prof = profile_of.reindex(gt.groups).to_numpy(dtype=np.int64)
    parent[S + n :] = gt.parent(S, T + np.searchsorted(uprofs, group_prof))
    names = np.empty(total, dtype=object)
    names[:T] = tname
    names[T:S] = UNATTRIBUTED
    names[S : S + n] = cpu["name"].to_numpy(dtype=object)
    names[S + n :] = gpu["name"].to_numpy(dtype=object)
    kinds = np.empty(total, dtype=object)
    kinds[:T] = "thread"
    kinds[T:S] = "device"
    kinds[S : S + n] = cpu["kind"].to_numpy(dtype=object)
    kinds[S + n :] = gpu["kind"].to_numpy(dtype=object)
    tkey = np.r_[first, np.full(U, np.iinfo(np.int64).max), start, gpu["start"].to_numpy()]
    gnames = gpu["name"].astype(str)
    nccl = gnames.str.match(_NCCL_KERNEL).to_numpy() & (gpu["kind"].to_numpy() == "kernel")
    gcoll = np.full(g, None, dtype=object)
    if nccl.any():
        op = gnames[nccl].str.extract(_NCCL_KERNEL)[0]
        gcoll[nccl] = op.map({s: collective_kind(s) for s in op.unique()}).to_numpy(dtype=object)
    cols = {
        "label": np.r_[tlabel, np.full(U, None, dtype=object), np.full(n + g, None, dtype=object)],
        "domain": np.r_[
            np.full(S, None, dtype=object),
            cpu["domain"].to_numpy(dtype=object),
            np.full(g, None, dtype=object),
        ],
        "collective": np.r_[
            np.full(S, None, dtype=object), cpu["collective"].to_numpy(dtype=object), gcoll
        ],
    }

    # ---- merge by call path (names from the thread root), siblings by first appearance
    code, uniq_names = pd.factorize(pd.Series(names, dtype=object))
    uid, tb = merge_by_path(parent, code, tkey)
    m = tb.size
    firsts = np.full(m, total, dtype=np.int64)
    np.minimum.at(firsts, uid, np.arange(total))
    columns = {}
    for k, v in cols.items():  # each node keeps its first item's value
        if pd.notna(v).any():
            columns[k] = v[firsts]
    tree, new_id = Tree.from_parents_with_ids(
        tb.parent,
        np.asarray(uniq_names, dtype=object)[tb.code],
        None,
        kind=kinds[firsts],
        columns=columns,
    )

    # ---- events: CPU intervals (timed, nested by parent_event), GPU work beside them
    node = new_id[uid]
    gdur = (gpu["end"] - gpu["start"]).to_numpy(dtype=np.float64)
    cdur = (end - start).astype(np.float64)
    comm = cpu["comm"].to_numpy(dtype=bool)
    gbytes = pd.to_numeric(gpu["bytes"], errors="coerce").to_numpy(dtype=np.float64)
    epoch = int(info.get("epoch") or 0)
    gcols = gt.event_columns(tparent, gdur)
    events = pd.DataFrame(
        {
            "profile": np.r_[cprof, gprof],
            "node": node[S:],
            "start": np.r_[start, gpu["start"].to_numpy()] + epoch,
            "end": np.r_[end, gpu["end"].to_numpy()] + epoch,
            "timed": gcols["timed"],
            "event": np.arange(n + g, dtype=np.int64),
            "parent_event": gcols["parent_event"],
            "gpu_time": gcols["gpu_time"],
            "gpu_bytes": np.r_[np.full(n, np.nan), gbytes],
            "comm_time": np.r_[np.where(comm, cdur, np.nan), np.where(nccl, gdur, np.nan)],
            "collective": np.r_[cpu["collective"].to_numpy(dtype=object), gcoll],
            "stream": gcols["stream"],
            "device": gcols["device"],
            "launch_event": gcols["launch_event"],
        }
    )
    nmeta = {
        "cpu_events": n,
        "gpu_events": g,
        "threads": T,
        "unfinished_ranges": int(open_end.sum()),
        "unattributed_gpu": int(unattributed.sum()),
        "ranks_from": "MPI thread names" if ranked else "pid order",
    }
    if "nsys_version" in info:
        nmeta["version"] = info["nsys_version"]
    return tree, events, profiles, nmeta


# ------------------------------------------------------------------ public readers
@register_timeline("nsys")
def read_nsys_timeline(path: Path, *, kernel_names: str = "demangled") -> Timeline:
    """An Nsight Systems SQLite export as a :class:`~cctviz.model.timeline.Timeline`:
    one profile per process (rank), its NVTX ranges and CUDA API calls on their
    calling contexts, kernels, copies and sets beside them (untimed, with their
    ``gpu_time``, ``gpu_bytes`` and a ``stream`` column: ``device D stream S``).
    Times are ns on the epoch (the capture's start from
    ``TARGET_INFO_SESSION_START_TIME``), so that the files of several ranks line up
    (``read_timeline([rank0, rank1])``). ``.ensemble()`` is what :func:`read_nsys`
    gives.

    Example:
        >>> import cctviz
        >>> tl = cctviz.read_timeline("../shared/data/nsys/saxpy-mpi-cuda_nsys_perlmutter0.sqlite")
        >>> tl.n_profiles, int(tl.profiles["rank"][0]), sorted(tl.event_metrics)
        (1, 0, ['comm_time', 'gpu_bytes', 'gpu_time'])
    """
    path = Path(path)
    tree, events, profiles, nmeta = _load(path, kernel_names)
    profiles["file"] = str(path)
    present = {m: u for m, u in UNITS.items() if np.isfinite(events[m]).any()}
    meta = {"nsys": nmeta, "event_metrics": present, "path": str(path), "format": "nsys"}
    return Timeline(tree, events, profiles, units=present, meta=meta)


@register("nsys", _sniff, "Nsight Systems SQLite export (nsys export --type sqlite)")
def read_nsys(path: Path, *, kernel_names: str = "demangled") -> Tree | Ensemble:
    """Read an Nsight Systems SQLite export: a Tree for one process, an Ensemble of
    the processes (ranks) for several (module docstring).

    Args:
        path: the ``.sqlite`` file ``nsys export --type sqlite report.nsys-rep``
            writes (a ``.nsys-rep`` is refused with that command).
        kernel_names: ``"demangled"`` (the full signature) or ``"short"`` (the
            function name only: template instances merge).

    Example:
        >>> import cctviz
        >>> t = cctviz.read("../shared/data/nsys/saxpy-mpi-cuda_nsys_perlmutter0.sqlite")
        >>> t.nodes["name"].tolist()[:3]  # MPI_Init (nsys's MPI trace) holds the first API call
        ['main thread', 'MPI_Init', 'cuModuleGetLoadingMode']
    """
    tl = read_nsys_timeline(path, kernel_names=kernel_names)
    ens = tl.ensemble()
    meta = {k: v for k, v in tl.meta.items() if k not in ("event_metrics", "path")}
    if ens.n_profiles != 1:
        return Ensemble(ens.tree, ens.exclusive_rows, ens.profiles, meta={**ens.meta, **meta})
    tree = ens.profile(0)
    prof = tl.profiles.iloc[0]
    tree.meta.pop("profile", None)
    tree.meta.update(meta, rank=int(prof["rank"]), pid=int(prof["pid"]))
    if "host" in tl.profiles.columns:
        tree.meta["host"] = str(prof["host"])
    return tree


__all__ = ["read_nsys", "read_nsys_timeline"]
