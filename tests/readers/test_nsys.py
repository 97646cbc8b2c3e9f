"""The Nsight Systems reader on the real SQLite export, checked against SQL on the
file itself, and on copies of it edited with sqlite3 (two ranks, nested NVTX
ranges, missing tables, an NCCL kernel), since no nsys runs here."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest

import cctviz
from cctviz import ProfileError
from cctviz.model.build import nest_intervals
from cctviz.readers import detect
from tests.conftest import DATA
from tests.readers.fuzz import assert_wrong_format_rejected, fuzz_sample

SAMPLE = DATA / "nsys" / "saxpy-mpi-cuda_nsys_perlmutter0.sqlite"
PID_SHIFT = 1 << 24  # the pid bits of a serialized global id


def sql(path: Path, query: str) -> list[tuple]:
    with sqlite3.connect(path) as con:
        return con.execute(query).fetchall()


def one(path: Path, query: str):
    return sql(path, query)[0][0]


def copy(tmp_path: Path, name: str = "copy.sqlite") -> Path:
    dest = tmp_path / name
    shutil.copyfile(SAMPLE, dest)
    dest.chmod(0o644)
    return dest


def edit(path: Path, *statements: str) -> Path:
    con = sqlite3.connect(path)
    with con:
        for s in statements:
            con.execute(s)
    con.close()
    return path


def total(tree, metric: str, kind: str | None = None) -> float:
    m = tree.metrics[metric]
    if kind is not None:
        m = m[(tree.nodes["kind"] == kind).to_numpy()]
    return float(m.sum())


def node(tree, name: str) -> int:
    hits = np.flatnonzero((tree.nodes["name"] == name).to_numpy())
    assert hits.size == 1, (name, hits)
    return int(hits[0])


def path_of(tree, i: int) -> list[str]:
    names, parent = tree.nodes["name"].tolist(), tree.nodes["parent"].tolist()
    out = []
    while i >= 0:
        out.append(names[i])
        i = parent[i]
    return out[::-1]


@pytest.fixture(scope="module")
def tree():
    return cctviz.read(SAMPLE)


# ------------------------------------------------------------------ the real sample
def test_detected_and_described(tree):
    assert detect(SAMPLE) == "nsys"
    assert isinstance(tree, cctviz.Tree)
    assert tree.meta["format"] == "nsys"
    # the rank is the MPI rank nsys named the thread with
    (name,) = sql(
        SAMPLE,
        "SELECT s.value FROM ThreadNames t JOIN StringIds s ON s.id = t.nameId "
        "WHERE s.value LIKE 'MPI Rank %'",
    )[0]
    assert tree.meta["rank"] == int(name.rsplit(" ", 1)[1])
    assert tree.meta["pid"] == one(SAMPLE, "SELECT pid FROM PROCESSES WHERE name LIKE '%saxpy%'")
    assert tree.meta["host"] == one(
        SAMPLE, "SELECT value FROM TARGET_INFO_SYSTEM_ENV WHERE name = 'Hostname'"
    )
    assert tree.meta["nsys"]["version"] == one(
        SAMPLE, "SELECT value FROM EXPORT_META_DATA WHERE name = 'EXPORT_PRODUCT_VERSION'"
    )
    assert {tree.units[m] for m in ("time", "gpu_time", "comm_time")} == {"ns"}
    assert tree.units["gpu_bytes"] == "B"


def test_kernels_sit_under_the_launch_inside_the_nvtx_range(tree):
    kernel = node(
        tree,
        one(
            SAMPLE,
            "SELECT value FROM StringIds WHERE id = "
            "(SELECT demangledName FROM CUPTI_ACTIVITY_KIND_KERNEL)",
        ),
    )
    assert tree.nodes["kind"][kernel] == "kernel"
    assert path_of(tree, kernel) == [
        "main thread",
        "saxpy",  # the application's NVTX range around the launch
        "cudaLaunchKernel",
        "cudaLaunchKernel_v7000",  # the innermost call of the correlation id
        "saxpy(double *, double *, double *, double, int)",
    ]
    assert tree.nodes["kind"][node(tree, "saxpy")] == "region"
    short = cctviz.read(SAMPLE, kernel_names="short")
    assert "saxpy" in short.nodes["name"][short.nodes["kind"] == "kernel"].tolist()


def test_mpi_ranges_are_communication(tree):
    send, recv, init = node(tree, "MPI_Send"), node(tree, "MPI_Recv"), node(tree, "MPI_Init")
    assert tree.nodes["collective"][send] == "send" and tree.nodes["collective"][recv] == "recv"
    assert tree.nodes["domain"][send] == one(
        SAMPLE, "SELECT text FROM NVTX_EVENTS WHERE eventType = 75"
    )
    assert {tree.nodes["kind"][i] for i in (send, recv, init)} == {"comm"}
    # MPI_Init is an MPI call but no communication: no comm_time
    assert tree.metrics["comm_time"][init] == 0
    for i, name in ((send, "MPI_Send"), (recv, "MPI_Recv")):
        dur = one(
            SAMPLE,
            "SELECT sum(n.end - n.start) FROM NVTX_EVENTS n JOIN StringIds s "
            f"ON s.id = n.textId WHERE s.value = '{name}'",
        )
        assert tree.metrics["comm_time"][i] == dur
        assert tree.metrics["time (inc)"][i] == dur  # the range's own durations, summed


def test_totals_equal_sql_on_the_file(tree):
    kernels = one(SAMPLE, "SELECT sum(end - start) FROM CUPTI_ACTIVITY_KIND_KERNEL")
    copies = one(SAMPLE, "SELECT sum(end - start) FROM CUPTI_ACTIVITY_KIND_MEMCPY")
    assert total(tree, "gpu_time", "kernel") == kernels
    assert total(tree, "gpu_time") == kernels + copies
    assert total(tree, "gpu_bytes") == one(
        SAMPLE, "SELECT sum(bytes) FROM CUPTI_ACTIVITY_KIND_MEMCPY"
    )
    assert total(tree, "calls", "runtime") == one(
        SAMPLE, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME"
    )
    ranges = one(SAMPLE, "SELECT count(*) FROM NVTX_EVENTS WHERE eventType IN (59, 60)")
    assert total(tree, "calls", "region") + total(tree, "calls", "comm") == ranges
    assert total(tree, "calls", "kernel") == one(
        SAMPLE, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL"
    )
    # the thread's inclusive time: its top-level intervals (no API call runs outside
    # the NVTX ranges here but those between them), summed by SQL
    top = one(
        SAMPLE,
        "SELECT sum(a.end - a.start) FROM (SELECT start, end FROM NVTX_EVENTS WHERE eventType = 59 "
        "UNION ALL SELECT start, end FROM CUPTI_ACTIVITY_KIND_RUNTIME) a WHERE NOT EXISTS "
        "(SELECT 1 FROM (SELECT start, end FROM NVTX_EVENTS WHERE eventType = 59 UNION ALL "
        "SELECT start, end FROM CUPTI_ACTIVITY_KIND_RUNTIME) b WHERE b.start <= a.start "
        "AND b.end >= a.end AND (b.start < a.start OR b.end > a.end))",
    )
    assert tree.metrics["time (inc)"][node(tree, "main thread")] == top


def test_timeline_aggregates_to_the_tree(tree):
    tl = cctviz.read_timeline(SAMPLE)
    assert tl.n_profiles == 1 and int(tl.profiles["rank"][0]) == tree.meta["rank"]
    n_cpu = one(
        SAMPLE,
        "SELECT (SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME) + "
        "(SELECT count(*) FROM NVTX_EVENTS WHERE eventType IN (59, 60))",
    )
    n_gpu = one(
        SAMPLE,
        "SELECT (SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL) + "
        "(SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY)",
    )
    ev = tl.events
    assert int(ev["timed"].sum()) == n_cpu and int((~ev["timed"]).sum()) == n_gpu
    # on the epoch: the session's start plus the file's ns
    epoch = one(SAMPLE, "SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME")
    first = one(SAMPLE, "SELECT min(start) FROM CUPTI_ACTIVITY_KIND_RUNTIME")
    assert tl.span[0] == epoch + min(
        first, one(SAMPLE, "SELECT min(start) FROM NVTX_EVENTS WHERE eventType IN (59, 60)")
    )
    streams = sql(SAMPLE, "SELECT DISTINCT deviceId, streamId FROM CUPTI_ACTIVITY_KIND_KERNEL")
    assert set(ev.loc[~ev["timed"], "stream"]) == {f"device {d} stream {s}" for d, s in streams}
    ens = tl.ensemble()
    for m in ("time", "calls", "gpu_time", "gpu_bytes", "comm_time"):
        np.testing.assert_array_equal(ens.profile(0).metrics[m].to_numpy(), tree.metrics[m])
    win = tl.window(*tl.span)
    assert win.ensemble().values("time").sum() == tree.metrics["time"].sum()


# ------------------------------------------------------------------ edited copies
def two_ranks(tmp_path: Path) -> Path:
    """The sample with a second process: every row of the first copied with its
    pid + 1 (and its main thread's tid, which is the pid), 1 s later, its thread
    named "MPI Rank 1" (correlation ids repeat)."""
    p = copy(tmp_path, "two-ranks.sqlite")
    shift, later = PID_SHIFT + 1, 1_000_000_000
    return edit(
        p,
        "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME (start, end, eventClass, globalTid, "
        f"correlationId, nameId, returnValue) SELECT start + {later}, end + {later}, eventClass, "
        f"globalTid + {shift}, correlationId, nameId, returnValue FROM CUPTI_ACTIVITY_KIND_RUNTIME",
        "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, textId, domainId) "
        f"SELECT start + {later}, end + {later}, eventType, text, globalTid + {shift}, textId, "
        "domainId FROM NVTX_EVENTS WHERE eventType IN (59, 60)",
        f"INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL SELECT start + {later}, end + {later}, deviceId, "
        f"contextId, streamId, correlationId, globalPid + {PID_SHIFT}, demangledName, shortName, "
        "mangledName, launchType, cacheConfig, registersPerThread, gridX, gridY, gridZ, blockX, "
        "blockY, blockZ, staticSharedMemory, dynamicSharedMemory, localMemoryPerThread, "
        "localMemoryTotal, gridId, sharedMemoryExecuted, graphNodeId, sharedMemoryLimitConfig "
        "FROM CUPTI_ACTIVITY_KIND_KERNEL",
        f"INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY (start, end, deviceId, contextId, streamId, "
        f"correlationId, globalPid, bytes, copyKind) SELECT start + {later}, end + {later}, "
        f"deviceId, contextId, streamId, correlationId, globalPid + {PID_SHIFT}, bytes, copyKind "
        "FROM CUPTI_ACTIVITY_KIND_MEMCPY",
        "INSERT INTO StringIds (id, value) VALUES (100000, 'MPI Rank 1')",
        f"INSERT INTO ThreadNames (nameId, priority, globalTid) SELECT 100000, priority, "
        f"globalTid + {shift} FROM ThreadNames WHERE nameId = "
        "(SELECT id FROM StringIds WHERE value = 'MPI Rank 0')",
    )


def test_two_processes_are_two_ranks(tmp_path, tree):
    p = two_ranks(tmp_path)
    ens = cctviz.read(p)
    assert isinstance(ens, cctviz.Ensemble) and ens.n_profiles == 2
    assert ens.profiles["rank"].tolist() == [0, 1]
    assert ens.profiles["pid"].tolist() == [tree.meta["pid"], tree.meta["pid"] + 1]
    # the ranks unify by call path (thread roots are named without ids), and each
    # has the sample's tree: the copy's kernels found their own launches
    assert len(ens.tree) == len(tree)
    for r in (0, 1):
        one_rank = ens.profile(r)
        assert len(one_rank) == len(tree)
        for m in ("time", "calls", "gpu_time", "comm_time"):
            assert total(one_rank, m) == total(tree, m), (r, m)
    assert ens.meta["nsys"]["unattributed_gpu"] == 0
    tl = cctviz.read_timeline(p)
    assert tl.n_profiles == 2
    np.testing.assert_array_equal(tl.ensemble().values("gpu_time"), ens.values("gpu_time"))


def test_nested_push_pop_and_open_start_end_ranges(tmp_path, tree):
    p = copy(tmp_path)
    gtid = one(p, "SELECT globalTid FROM CUPTI_ACTIVITY_KIND_RUNTIME LIMIT 1")
    t0, t1 = (
        one(p, "SELECT min(start) FROM NVTX_EVENTS WHERE textId = 85"),
        one(p, "SELECT max(end) FROM NVTX_EVENTS WHERE textId = 68"),
    )
    last = max(
        one(p, f"SELECT max(end) FROM {t}")  # the capture's last event, before the edit
        for t in (
            "CUPTI_ACTIVITY_KIND_MEMCPY",
            "CUPTI_ACTIVITY_KIND_KERNEL",
            "CUPTI_ACTIVITY_KIND_RUNTIME",
            "NVTX_EVENTS",
        )
    )
    edit(
        p,
        # push "step" around all the sends and receives, "exchange" inside it
        f"INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid) VALUES "
        f"({t0 - 10}, {t1 + 10}, 59, 'step', {gtid}), ({t0 - 5}, {t1 + 5}, 59, 'exchange', {gtid})",
        # a start/end range never ended
        f"INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid) VALUES "
        f"({t1 + 20}, NULL, 60, 'tail', {gtid})",
    )
    t = cctviz.read(p)
    step, exchange, tail = node(t, "step"), node(t, "exchange"), node(t, "tail")
    assert path_of(t, exchange) == ["main thread", "step", "exchange"]
    sends = np.flatnonzero((t.nodes["name"] == "MPI_Send").to_numpy())
    assert [path_of(t, int(i))[:3] for i in sends] == [["main thread", "step", "exchange"]]
    assert t.metrics["time (inc)"][step] == t1 - t0 + 20
    assert t.metrics["time"][step] == 10  # what the inner range leaves
    assert t.meta["nsys"]["unfinished_ranges"] == 1
    assert t.metrics["time (inc)"][tail] == last - (t1 + 20)  # ends with the capture
    assert total(t, "gpu_time") == total(tree, "gpu_time")  # nothing else moved


def test_missing_tables_and_unattributed_work(tmp_path, tree):
    p = copy(tmp_path)
    corr = one(p, "SELECT correlationId FROM CUPTI_ACTIVITY_KIND_KERNEL LIMIT 1")
    edit(
        p,
        "DROP TABLE NVTX_EVENTS",
        "DROP TABLE ThreadNames",
        "DROP TABLE PROCESSES",
        "DROP TABLE TARGET_INFO_SESSION_START_TIME",
        "DROP TABLE CUPTI_ACTIVITY_KIND_MEMSET",
        f"DELETE FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE correlationId = {corr}",
    )
    t = cctviz.read(p)
    assert not (t.nodes["kind"] == "region").any() and not (t.nodes["kind"] == "comm").any()
    assert t.meta["rank"] == 0 and t.meta["nsys"]["ranks_from"] == "pid order"
    assert t.meta["nsys"]["unattributed_gpu"] == 1
    lost = node(t, "(unattributed GPU)")
    dur = one(p, f"SELECT end - start FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE correlationId = {corr}")
    assert t.metrics["gpu_time (inc)"][lost] == dur
    assert total(t, "gpu_time") == total(tree, "gpu_time")
    assert total(t, "calls", "runtime") == one(
        p, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME"
    )
    tl = cctviz.read_timeline(p)
    assert tl.span[0] == one(p, "SELECT min(start) FROM CUPTI_ACTIVITY_KIND_RUNTIME")  # no epoch


def test_nccl_kernels_are_communication(tmp_path, tree):
    p = copy(tmp_path)
    name = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm *, unsigned long, ncclWork *)"
    edit(
        p,
        f"UPDATE StringIds SET value = '{name}' WHERE id = (SELECT demangledName FROM "
        "CUPTI_ACTIVITY_KIND_KERNEL LIMIT 1)",
    )
    t = cctviz.read(p)
    k = node(t, name)
    assert t.nodes["kind"][k] == "kernel" and t.nodes["collective"][k] == "all_reduce"
    kernels = one(p, "SELECT sum(end - start) FROM CUPTI_ACTIVITY_KIND_KERNEL")
    assert t.metrics["comm_time"][k] == t.metrics["gpu_time"][k] == kernels
    assert total(t, "comm_time") == total(tree, "comm_time") + kernels
    from cctviz.ops.gpu import gpu_breakdown

    gb = gpu_breakdown(cctviz.read_timeline(p))
    assert float(gb["compute"].iloc[0]) == 0  # the only kernels communicate


# ------------------------------------------------------------------ bad input
def test_report_files_are_refused_with_the_export_command(tmp_path):
    rep = tmp_path / "run.nsys-rep"
    rep.write_bytes(bytes(range(256)) * 16)  # not SQLite: what nsys writes is its own container
    assert detect(rep) == "nsys"
    with pytest.raises(ProfileError) as info:
        cctviz.read(rep)
    assert info.value.path == str(rep)
    assert "nsys export --type sqlite run.nsys-rep" in str(info.value)


def test_other_sqlite_files_are_not_nsys(tmp_path):
    other = tmp_path / "other.sqlite"
    edit(other, "CREATE TABLE t (x INTEGER)", "INSERT INTO t VALUES (1)")
    with pytest.raises(ProfileError):
        detect(other)
    e = assert_wrong_format_rejected(other, "nsys")
    assert "not an Nsight Systems export" in str(e)


def test_truncated_copy_names_the_file(tmp_path):
    p = tmp_path / "cut.sqlite"
    p.write_bytes(SAMPLE.read_bytes()[: 4096 * 3 + 17])
    with pytest.raises(ProfileError, match="truncated") as info:
        cctviz.read(p, format="nsys")
    assert info.value.path == str(p)


def test_fuzz(tmp_path):
    stats = fuzz_sample(SAMPLE, "nsys", tmp_path, n=40)
    assert stats["truncate:error"] == 8
    assert stats["garbage:error"] + stats["garbage:ok"] == 8


# ------------------------------------------------------------------ nesting
def brute_parent(thread, start, end):
    """The innermost interval of the same thread containing each whole, by brute force
    (ties: the earlier of equal intervals is the outer)."""
    n = len(start)
    order = sorted(range(n), key=lambda i: (thread[i], start[i], -end[i], i))
    rank = {i: k for k, i in enumerate(order)}
    out = []
    for i in range(n):
        best = -1
        for j in range(n):
            if j == i or thread[j] != thread[i] or rank[j] > rank[i]:
                continue
            if start[j] <= start[i] and end[j] >= end[i]:
                if best < 0 or rank[j] > rank[best]:
                    best = j
        out.append(best)
    return out


@pytest.mark.parametrize("seed", range(20))
def test_nesting_matches_brute_force(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 60))
    thread = rng.integers(0, 3, n)
    start = rng.integers(0, 50, n)
    end = start + rng.integers(0, 30, n)  # zero-length, nested, overlapping, equal
    got = nest_intervals(thread, start, end, overlap="outside")["parent"]
    assert got.tolist() == brute_parent(thread, start, end)
