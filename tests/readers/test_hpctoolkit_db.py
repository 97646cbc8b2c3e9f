"""HPCToolkit's 2022+ database (meta.db, profile.db, cct.db): the ping-pong sample.

The oracle is the database itself, parsed here independently of the reader with
``struct`` from the layout in its FORMATS.md: per profile, the value of the
execution-scope (inclusive) metric at the global context (ctx 0), the summary
profile's sum, the identifier tuples, the function-scope values; and the source
file in ``src/`` for the lines the MPI calls are made from.
"""

from __future__ import annotations

import re
import shutil
import struct
from pathlib import Path

import numpy as np
import pytest

import cctviz
from cctviz import Ensemble, ProfileError
from cctviz.readers import detect
from tests.conftest import DATA
from tests.readers.fuzz import fuzz_sample

DB = DATA / "pipit/ping-pong-hpctoolkit"
SRC = (DB / "src/ping-pong.c").read_text().splitlines()


# ------------------------------------------------------------ independent parse
def _u(fmt: str, b: bytes, off: int):
    return struct.unpack_from("<" + fmt, b, off)


def _cstr(b: bytes, off: int) -> str:
    return b[off : b.index(b"\0", off)].decode()


def _metric_ids(meta: bytes) -> dict[str, int]:
    """{scope name: propMetricId} of the first metric; summaries as {("stat", scope, combine): id}."""
    (p_metrics_sec,) = _u("Q", meta, 0x38)
    p, n, sz_m, sz_psi, sz_ss = _u("QIBBB", meta, p_metrics_sec)
    assert n == 1  # CPUTIME only
    _name, p_insts, p_sums, n_insts, n_sums = _u("QQQHH", meta, p)
    out: dict = {}
    for k in range(n_insts):
        p_scope, mid = _u("QH", meta, p_insts + k * sz_psi)
        out[_cstr(meta, _u("Q", meta, p_scope)[0])] = mid
    for k in range(n_sums):
        p_scope, _formula, combine = _u("QQB", meta, p_sums + k * sz_ss)
        (mid,) = _u("H", meta, p_sums + k * sz_ss + 0x12)
        out[("stat", _cstr(meta, _u("Q", meta, p_scope)[0]), combine)] = mid
    return out


def _profiles(prof: bytes) -> list[dict]:
    """Per profile: flags, identifier tuple {kind: logicalId}, values {(ctx, metric): value}."""
    (p_sec,) = _u("Q", prof, 0x18)
    p, n, sz = _u("QIB", prof, p_sec)
    out = []
    for k in range(n):
        base = p + k * sz
        n_vals, p_vals, n_ctxs, p_idx, p_tuple, flags = _u("QQIxxxxQQI", prof, base)
        ids = {}
        if p_tuple:
            (n_ids,) = _u("H", prof, p_tuple)
            for j in range(n_ids):
                kind, _f, logical, _phys = _u("BxHIQ", prof, p_tuple + 8 + 16 * j)
                ids[kind] = logical
        vals = {}
        idx = [_u("IQ", prof, p_idx + 12 * j) for j in range(n_ctxs)]
        for j, (ctx, start) in enumerate(idx):
            stop = idx[j + 1][1] if j + 1 < n_ctxs else n_vals
            for v in range(start, stop):
                mid, val = _u("Hd", prof, p_vals + 10 * v)
                vals[(ctx, mid)] = val
        out.append({"flags": flags, "ids": ids, "values": vals})
    return out


def _cct_totals(cct: bytes, metric: int) -> dict[int, float]:
    """cct.db: the values of ``metric`` at the global context, per profile index."""
    (p_sec,) = _u("Q", cct, 0x18)
    p, _n, _sz = _u("QIB", cct, p_sec)
    n_vals, p_vals, n_met, p_midx = _u("QQHxxxxxxQ", cct, p)  # context 0
    idx = [_u("HQ", cct, p_midx + 10 * j) for j in range(n_met)]
    out = {}
    for j, (mid, start) in enumerate(idx):
        stop = idx[j + 1][1] if j + 1 < n_met else n_vals
        if mid == metric:
            for v in range(start, stop):
                prof, val = _u("Id", cct, p_vals + 12 * v)
                out[prof] = val
    return out


@pytest.fixture(scope="module")
def raw():
    meta = (DB / "meta.db").read_bytes()
    ids = _metric_ids(meta)
    return {
        "ids": ids,
        "profiles": _profiles((DB / "profile.db").read_bytes()),
        "cct": (DB / "cct.db").read_bytes(),
    }


@pytest.fixture(scope="module")
def ens() -> Ensemble:
    return cctviz.read(DB)


def _node(tree, path: tuple[str, ...]) -> int:
    hits = [i for i in range(len(tree)) if tree.path(i) == path]
    assert len(hits) == 1, (path, hits)
    return hits[0]


# ------------------------------------------------------------ tests
def test_shape_profiles_units(ens, raw):
    assert isinstance(ens, Ensemble) and ens.meta["format"] == "hpctoolkit-db"
    assert ens.profiles["rank"].tolist() == [0, 1]
    assert ens.profiles["thread"].tolist() == [0, 0]
    # identifier tuples as profile.db lists them (kind 2 RANK, 3 THREAD; profile 0 the summary)
    tuples = [p["ids"] for p in raw["profiles"]]
    assert raw["profiles"][0]["flags"] & 1 and tuples[0] == {}
    assert sorted((t[2], t[3]) for t in tuples[1:]) == [(0, 0), (1, 0)]
    assert ens.exc_metrics == ["time"] and ens.tree.units == {"time": "s"}
    assert ens.aggregation.get("time", "sum") == "sum"
    n = ens.tree.nodes
    assert set(n["kind"]) == {"function", "loop", "statement"}
    assert n["ctx_id"].is_unique
    assert n.loc[n["kind"] == "function", "module"].iloc[1:].notna().all()  # all but the entry
    assert ens.tree.names[ens.tree.roots].tolist() == ["main thread"]


def test_mpi_calls_under_their_callers(ens):
    """Rank 0 sends then receives (lines 55, 56), rank 1 receives then sends (59, 60),
    inside the two loops of main; MPI_Finalize from line 77 of main."""
    t = ens.tree
    loops = ("main thread", "main", "Loop@ping-pong.c:32", "Loop@ping-pong.c:53")
    assert "for(int i=11" in SRC[32 - 1] and "for(int i=1;" in SRC[53 - 1]
    calls = {}
    for i in t.children(_node(t, loops)).tolist():
        m = re.fullmatch(r"(\d+):P?(MPI_\w+) \[libmpi\.so[.\d]*\]", t.names[i])
        assert m, t.names[i]
        line, fn = int(m.group(1)), m.group(2)
        assert f"{fn}(" in SRC[line - 1], (line, SRC[line - 1])  # the call is on that line
        calls[line] = (fn, i)
    assert {k: v[0] for k, v in calls.items()} == {
        55: "MPI_Send",
        56: "MPI_Recv",
        59: "MPI_Recv",
        60: "MPI_Send",
    }
    d = ens.long_table["time (inc)"]
    for line, (_fn, node) in calls.items():
        r0 = d.get((node, 0), 0.0)
        r1 = d.get((node, 1), 0.0)
        if line in (55, 56):
            assert r0 > 0.01 and r1 == 0.0
        else:
            assert r1 > 0.01 and r0 == 0.0
    fin = _node(t, ("main thread", "main", "77:MPI_Finalize"))
    assert "MPI_Finalize()" in SRC[77 - 1]
    assert d[(fin, 0)] > 0 and d[(fin, 1)] > 0
    # deeper: the library's own call chain below MPI_Recv on rank 1
    recv = calls[59][1]
    kids = [t.names[i] for i in t.children(recv)]
    assert kids == ["137:MPID_Recv [libmpi.so.12.1.1]"]


def test_totals_equal_profile_db(ens, raw):
    ids = raw["ids"]
    ex = ids["execution"]
    root = int(ens.tree.roots[0])
    by_rank = {}
    for p in raw["profiles"][1:]:
        by_rank[p["ids"][2]] = p["values"][(0, ex)]
    # per profile: the root's inclusive time equals the value at the global context
    for k, rank in enumerate(ens.profiles["rank"]):
        got = ens.long_table.loc[(root, k), "time (inc)"]
        assert got == pytest.approx(by_rank[rank], rel=1e-12)
        # and the exclusive values add up to it
        assert ens.long_table.xs(k, level="profile")["time"].sum() == pytest.approx(
            by_rank[rank], rel=1e-9
        )
    # the summary profile: sum over threads at the global context
    summary = raw["profiles"][0]["values"][(0, ids[("stat", "execution", 0)])]
    assert ens.meta["summary"]["time (inc)"]["sum"] == pytest.approx(summary, rel=1e-12)
    assert sum(by_rank.values()) == pytest.approx(summary, rel=1e-12)
    # cct.db holds the same totals, by profile index
    cct = _cct_totals(raw["cct"], ex)
    for k, p in enumerate(raw["profiles"]):
        if k:
            assert cct[k] == pytest.approx(p["values"][(0, ex)], rel=1e-12)


def test_exclusive_matches_function_scope(ens, raw):
    """HPCToolkit's 'function' scope (cost in a function, its lines and loops, not its
    callees) equals the sum of cctviz's exclusive values over the function's
    subtree down to the next function nodes, on every function node and rank."""
    fs = raw["ids"]["function"]
    t = ens.tree
    kind = t.nodes["kind"].to_numpy()
    parent = t.parent
    owner = np.arange(len(t))  # the nearest function node at or above each node
    for i in range(len(t)):  # pre-order: parents first
        if kind[i] != "function" and parent[i] >= 0:
            owner[i] = owner[parent[i]]
    ctx = t.nodes["ctx_id"].to_numpy()
    checked = 0
    for k, rank in enumerate(ens.profiles["rank"]):
        vals = next(p for p in raw["profiles"][1:] if p["ids"][2] == rank)["values"]
        exc = ens.long_table.xs(k, level="profile")["time"].reindex(range(len(t)), fill_value=0.0)
        own = np.zeros(len(t))
        np.add.at(own, owner, exc.to_numpy())
        for i in np.flatnonzero((kind == "function") & (parent >= 0)):
            want = vals.get((int(ctx[i]), fs), 0.0)
            assert own[i] == pytest.approx(want, rel=1e-9, abs=1e-12), t.path(int(i))
            checked += want > 0
    assert checked >= 10  # functions with cost of their own, over both ranks


def test_old_and_new_names_agree_in_form():
    """Call sites are not nodes in either form: a called function is "LINE:name" under
    the caller's function or loop, as the experiment.xml reader names it."""
    old = cctviz.read(DATA / "hatchet/hpctoolkit-cpi-database", progress=False)
    assert any(re.fullmatch(r"\d+:MPI_\w+", n) for n in old.tree.names)
    new = cctviz.read(DB).tree
    assert "77:MPI_Finalize" in set(new.names)
    assert not any(
        k == "statement" and len(new.children(i)) for i, k in enumerate(new.nodes["kind"])
    )


# ------------------------------------------------------------ detection and errors
def test_detection_folder_and_files():
    assert detect(DB) == "hpctoolkit-db"
    for f in ("meta.db", "profile.db", "cct.db"):
        assert detect(DB / f) == "hpctoolkit-db"
        assert cctviz.read(DB / f).n_profiles == 2
    assert detect(DATA / "hatchet/hpctoolkit-cpi-database") == "hpctoolkit"
    with pytest.raises(ProfileError, match="meta.db"):
        cctviz.read(DATA / "hatchet/hpctoolkit-cpi-database", format="hpctoolkit-db")
    with pytest.raises(ProfileError, match="experiment.xml"):
        cctviz.read(DB, format="hpctoolkit")


def _copy(tmp_path: Path) -> Path:
    d = tmp_path / "db"
    shutil.copytree(DB, d)
    for f in d.glob("*.db"):
        f.chmod(0o644)
    return d


@pytest.mark.parametrize("name", ["meta.db", "profile.db", "cct.db"])
def test_truncated_files_name_the_file(tmp_path, name):
    d = _copy(tmp_path)
    data = (DB / name).read_bytes()
    for cut in sorted(
        {0, 8, 16, 0x30, len(data) // 3, len(data) // 2, len(data) - 9, len(data) - 1}
    ):
        (d / name).write_bytes(data[:cut])
        with pytest.raises(ProfileError) as e:
            cctviz.read(d)
        assert e.value.path == str(d / name), e.value


def test_damaged_structures_name_file_and_section(tmp_path):
    d = _copy(tmp_path)
    meta = bytearray((DB / "meta.db").read_bytes())
    (p_ctx,) = struct.unpack_from("<Q", meta, 0x48)
    (p_entries,) = struct.unpack_from("<Q", meta, p_ctx)
    struct.pack_into("<Q", meta, p_entries, 1 << 40)  # an entry point's children size
    (d / "meta.db").write_bytes(bytes(meta))
    with pytest.raises(ProfileError, match="Context section") as e:
        cctviz.read(d)
    assert e.value.path == str(d / "meta.db")
    # a value changed: the profile no longer adds up to its global context
    shutil.copyfile(DB / "meta.db", d / "meta.db")
    prof = bytearray((DB / "profile.db").read_bytes())
    (p_sec,) = struct.unpack_from("<Q", prof, 0x18)
    (p_prof,) = struct.unpack_from("<Q", prof, p_sec)
    (p_vals,) = struct.unpack_from("<Q", prof, p_prof + 48 + 8)  # profile 1's values
    mid, val = struct.unpack_from("<Hd", prof, p_vals + 10)
    struct.pack_into("<Hd", prof, p_vals + 10, mid, val + 1.0)
    (d / "profile.db").write_bytes(bytes(prof))
    with pytest.raises(ProfileError, match="profile 1") as e:
        cctviz.read(d)
    assert e.value.path == str(d / "profile.db")


def test_fuzz(tmp_path):
    stats = fuzz_sample(DB, "hpctoolkit-db", tmp_path, n=150, target="[mpc]*.db")
    assert stats["truncate:error"] == 30
    assert sum(v for k, v in stats.items() if k.endswith(":error")) > 60


# ---------------------------------------- the pre-release layout (early 2022 builds)
PRERELEASE = Path(__file__).resolve().parents[1] / "data" / "hpctoolkit-prerelease"


def test_a_prerelease_database_reads_as_hpcviewer_s_tests_expect():
    """loop-inline from hpcviewer's own test resources (meta.db 4.0 with szMetric
    24): what hpcviewer's DataSummaryTest asserts of it holds here: one profile
    whose node id is 0x7f0101, the whole program's cycles above 1.25e10, and
    context 3's inclusive cycles above 1.25281e10."""
    ens = cctviz.read(PRERELEASE / "loop-inline")
    assert ens.meta["hpctoolkit_db_prerelease"] and ens.meta["hpctoolkit_db_version"] == "4.0"
    assert ens.n_profiles == 1 and int(ens.profiles["node"].iloc[0]) == 0x7F0101
    assert ens.meta["summary"]["cycles (inc)"]["sum"] > 1.25e10
    ctx3 = int(np.flatnonzero(ens.tree.nodes["ctx_id"].to_numpy() == 3)[0])
    assert ens.values("cycles (inc)")[ctx3, 0] > 1.25281e10
    # the top context is the main thread's entry point, as the released format names it
    assert ens.tree.path(ctx3)[0] == "main thread"


def test_a_prerelease_database_of_threads_adds_up_to_its_summary():
    """multithread: a main thread and application threads, two metrics; over the
    profiles, the entry points' inclusive values add up to the file's own summary
    profile (context 0, the whole program)."""
    ens = cctviz.read(PRERELEASE / "multithread")
    tops = ens.tree.nodes["parent"].to_numpy() < 0
    assert {"application thread", "main thread"} <= set(ens.tree.nodes["name"][tops])
    for metric in ("cycles", "instructions"):
        got = ens.values(f"{metric} (inc)")[tops].sum()
        assert got == pytest.approx(ens.meta["summary"][f"{metric} (inc)"]["sum"], rel=1e-9)


@pytest.mark.slow
def test_fuzzed_prerelease_databases_are_read_or_refused(tmp_path):
    fuzz_sample(PRERELEASE / "loop-inline", "hpctoolkit-db", tmp_path, n=100, target="[mp]*.db")
