"""OTF2 reader on the Score-P ping-pong traces, checked against the ``otf2``
package's own event-by-event view of the same archives."""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import otf2
import pytest

import cctviz
from cctviz import ProfileError
from tests.conftest import DATA
from tests.readers.fuzz import assert_wrong_format_rejected, fuzz_sample

PP = DATA / "pipit/ping-pong-otf2"
PAPI = DATA / "pipit/ping-pong-otf2-papi"
SAMPLES = [PP, PAPI]


def oracle(folder: Path) -> dict:
    """Per location, what otf2's reader reports event by event."""
    out: dict = defaultdict(
        lambda: {
            "send": [0, 0],
            "recv": [0, 0],
            "enter": Counter(),
            "program": [None, None],
            "first": None,
            "last": None,
            "metrics": {},
        }
    )
    with otf2.reader.open(str(folder / "traces.otf2")) as tr:
        res = tr.timer_resolution
        for loc, ev in tr.events:
            o = out[loc._ref]
            name = type(ev).__name__
            if name in ("Enter", "Leave"):
                o["first"] = ev.time if o["first"] is None else o["first"]
                o["last"] = ev.time
            if name == "Enter":
                o["enter"][ev.region.name] += 1
            elif name in ("MpiSend", "MpiIsend"):
                o["send"][0] += 1
                o["send"][1] += ev.msg_length
            elif name in ("MpiRecv", "MpiIrecv"):
                o["recv"][0] += 1
                o["recv"][1] += ev.msg_length
            elif name == "ProgramBegin":
                o["program"][0] = ev.time
            elif name == "ProgramEnd":
                o["program"][1] = ev.time
            elif name == "Metric":
                for mem, v in zip(ev.metric.members, ev.values):
                    o["metrics"][mem.name] = v  # accumulated from the start: the last is the total
    return {"locations": dict(out), "ns_per_tick": 1e9 / res}


@pytest.fixture(scope="module", params=SAMPLES, ids=lambda p: p.name)
def pair(request):
    return cctviz.read(request.param), oracle(request.param)


def _per_profile(ens, metric, mask):
    d = ens.long_table.reset_index()
    nodes = np.flatnonzero(mask)
    d = d[d["node"].isin(nodes)]
    return d.groupby("profile")[metric].sum()


def test_ensemble_of_ranks(pair):
    ens, orc = pair
    assert ens.meta["format"] == "otf2"
    assert ens.n_profiles == len(orc["locations"]) == 2
    assert ens.profiles["rank"].tolist() == [0, 1]
    assert ens.profiles["thread"].tolist() == [0, 0]
    assert ens.profiles["process"].tolist() == ["MPI Rank 0", "MPI Rank 1"]
    assert ens.meta["world_size"] == 2
    assert ens.tree.units["time"] == "ns" and ens.tree.units["comm_bytes"] == "B"


def test_sends_and_receives_per_rank_equal_the_events(pair):
    ens, orc = pair
    t = ens.tree
    for kind in ("send", "recv"):
        mask = ((t.nodes["kind"] == "comm") & (t.nodes["collective"] == kind)).to_numpy()
        calls = _per_profile(ens, "calls", mask)
        nbytes = _per_profile(ens, "comm_bytes", mask)
        bus = _per_profile(ens, "bus_bytes", mask)
        for p, loc in enumerate(ens.profiles["location"]):
            n, b = orc["locations"][loc][kind]
            assert n > 0
            assert calls[p] == n
            assert nbytes[p] == b
            assert bus[p] == b  # point-to-point: bus factor 1
    # the leaves hang under the MPI call that issued them
    comm = t.nodes[t.nodes["kind"] == "comm"]
    parents = set(t.nodes.loc[comm["parent"], "name"])
    assert parents == {"MPI_Send", "MPI_Recv"}


def test_visits_equal_enter_counts(pair):
    ens, orc = pair
    t = ens.tree
    regions = (t.nodes["kind"] != "comm") & (t.nodes["kind"] != "root")
    d = ens.long_table.reset_index()
    d = d[d["node"].isin(np.flatnonzero(regions.to_numpy()))]
    names = t.nodes["name"].to_numpy()
    for p, loc in enumerate(ens.profiles["location"]):
        got = Counter()
        for node, calls in d[d["profile"] == p][["node", "calls"]].itertuples(index=False):
            got[names[node]] += int(calls)
        assert got == orc["locations"][loc]["enter"]


def test_root_inclusive_time_is_the_program_span(pair):
    ens, orc = pair
    d = ens.long_table.reset_index()
    root = d[d["node"] == 0].set_index("profile")["time (inc)"]
    for p, loc in enumerate(ens.profiles["location"]):
        b, e = orc["locations"][loc]["program"]
        assert b is not None and e is not None
        assert root[p] == pytest.approx((e - b) * orc["ns_per_tick"], rel=1e-12)
    # and the exclusive times add up to it: nothing counted twice
    tot = d.groupby("profile")["time"].sum()
    assert np.allclose(tot.to_numpy(), root.to_numpy(), rtol=1e-12)


def test_papi_counters_are_metrics_with_the_traces_totals():
    ens, orc = cctviz.read(PAPI), oracle(PAPI)
    counters = ["PAPI_TOT_CYC", "PAPI_L2_TCM", "PAPI_BR_MSP"]
    d = ens.long_table.reset_index()
    for c in counters:
        assert ens.tree.units[c] == "count"
        assert ens.tree.aggregation.get(c, "sum") == "sum"
        tot = d.groupby("profile")[c].sum()
        for p, loc in enumerate(ens.profiles["location"]):
            assert tot[p] == orc["locations"][loc]["metrics"][c]
    # cycles are spent where time is: MPI_Init (the longest region) has the most
    t = ens.tree
    own = t.metrics["PAPI_TOT_CYC"]
    regions = t.nodes["kind"].isin(["function", "region"])
    assert t.nodes["name"][own[regions].idxmax()] == "MPI_Init"
    assert "PAPI_TOT_CYC" not in cctviz.read(PP).tree.metrics


def test_anchor_file_and_folder_read_alike():
    a, b = cctviz.read(PP), cctviz.read(PP / "traces.otf2")
    assert a.tree.nodes["name"].tolist() == b.tree.nodes["name"].tolist()
    assert np.array_equal(a.long_table.to_numpy(), b.long_table.to_numpy())


def _write_trace(path: Path) -> None:
    """A small trace with the events the samples lack: Isend/Irecv, collectives,
    an OpenMP-like second thread without Program events."""
    from otf2.enums import CollectiveOp, Paradigm, RegionRole

    with otf2.writer.open(str(path), timer_resolution=1_000_000_000) as tr:
        main = tr.definitions.region("main", region_role=RegionRole.FUNCTION)
        isend = tr.definitions.region("MPI_Isend", paradigm=Paradigm.MPI)
        irecv = tr.definitions.region("MPI_Irecv", paradigm=Paradigm.MPI)
        wait = tr.definitions.region("MPI_Waitall", paradigm=Paradigm.MPI)
        allred = tr.definitions.region("MPI_Allreduce", paradigm=Paradigm.MPI)
        work = tr.definitions.region("work", region_role=RegionRole.FUNCTION)
        node = tr.definitions.system_tree_node("node")
        groups = [
            tr.definitions.location_group(f"MPI Rank {r}", system_tree_parent=node)
            for r in range(2)
        ]
        locs = [tr.definitions.location("Master thread", group=g) for g in groups]
        thread = tr.definitions.location("OMP thread 1", group=groups[0])
        mpi_locs = tr.definitions.group(
            "", group_type=otf2.GroupType.COMM_LOCATIONS, paradigm=Paradigm.MPI, members=locs
        )
        world_g = tr.definitions.group(
            "", group_type=otf2.GroupType.COMM_GROUP, paradigm=Paradigm.MPI, members=locs
        )
        world = tr.definitions.comm("MPI_COMM_WORLD", world_g)
        assert mpi_locs is not None
        for r, loc in enumerate(locs):
            w = tr.event_writer_from_location(loc)
            w.program_begin(0, "app", [])
            w.enter(10, main)
            w.enter(20, isend)
            w.mpi_isend(21, 1 - r, world, 0, 1000, 7)
            w.leave(30, isend)
            w.enter(40, irecv)
            w.mpi_irecv_request(41, 8)
            w.leave(50, irecv)
            w.enter(60, wait)
            w.mpi_isend_complete(65, 7)
            w.mpi_irecv(70, 1 - r, world, 0, 3000, 8)
            w.leave(80, wait)
            w.enter(90, allred)
            w.mpi_collective_begin(91)
            w.mpi_collective_end(99, CollectiveOp.ALLREDUCE, world, 0xFFFFFFFF, 400, 400)
            w.leave(100, allred)
            w.leave(110, main)
            w.program_end(120, 0)
        w = tr.event_writer_from_location(thread)
        w.enter(15, work)
        w.leave(55, work)
        w.enter(60, work)
        w.leave(75, work)


def test_nonblocking_collectives_and_threads(tmp_path):
    _write_trace(tmp_path / "t")
    ens = cctviz.read(tmp_path / "t")
    assert ens.n_profiles == 3
    prof = ens.profiles
    assert prof[["rank", "thread"]].values.tolist() == [[0, 0], [1, 0], [0, 1]]
    t = ens.tree
    d = ens.long_table.reset_index().merge(
        t.nodes[["name", "kind"]], left_on="node", right_index=True
    )
    r0 = d[d["profile"] == 0].set_index("name")
    # an isend under MPI_Isend, its time up to the completion; the irecv where it was posted
    assert r0.loc["send", "comm_bytes"] == 1000 and r0.loc["send", "comm_time"] == 44
    assert t.nodes["name"][t.nodes.loc[t.nodes["name"] == "send", "parent"].iloc[0]] == "MPI_Isend"
    assert r0.loc["recv", "comm_bytes"] == 3000 and r0.loc["recv", "comm_time"] == 29
    assert t.nodes["name"][t.nodes.loc[t.nodes["name"] == "recv", "parent"].iloc[0]] == "MPI_Irecv"
    # the all_reduce: 400 B, bus factor 2(n-1)/n = 1 on 2 ranks, Begin..End
    ar = r0.loc["all_reduce"]
    assert (ar["comm_bytes"], ar["bus_bytes"], ar["comm_time"], ar["calls"]) == (400, 400, 8, 1)
    assert t.nodes.loc[t.nodes["name"] == "all_reduce", "group_size"].iloc[0] == 2
    # root: ProgramEnd - ProgramBegin on the ranks; first Enter..last Leave on the thread
    root = d[d["node"] == 0].set_index("profile")["time (inc)"]
    assert root.tolist() == [120, 120, 60]
    th = d[d["profile"] == 2].set_index("name")
    assert th.loc["work", "calls"] == 2 and th.loc["work", "time"] == 55
    assert th.loc["app", "time"] == 5  # the gap between the two visits


def test_unbalanced_leave_is_an_error(tmp_path):
    from otf2.enums import RegionRole

    with otf2.writer.open(str(tmp_path / "bad"), timer_resolution=1000) as tr:
        r = tr.definitions.region("f", region_role=RegionRole.FUNCTION)
        g = tr.definitions.location_group(
            "p", system_tree_parent=tr.definitions.system_tree_node("n")
        )
        w = tr.event_writer_from_location(tr.definitions.location("t", group=g))
        w.leave(5, r)
    with pytest.raises(ProfileError, match="Leave event without a matching Enter") as e:
        cctviz.read(tmp_path / "bad")
    assert "traces.otf2" in e.value.path


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: p.name)
def test_fuzzed_archives_give_profile_errors(sample, tmp_path):
    for k, target in enumerate(("traces.*", "traces/*")):  # anchor + global defs; per location
        stats = fuzz_sample(sample, "otf2", tmp_path / str(k), n=30, target=target)
        assert sum(v for k, v in stats.items() if k.endswith(":error")) > 0


def test_other_formats_are_refused():
    for other in (
        DATA / "hatchet/caliper-lulesh-cali/lulesh-annotation-profile.cali",
        DATA / "hatchet/hpctoolkit-cpi-database",
        DATA / "kineto/hta_call_stack_backward_thread.json",
        PP / "traces.def",
    ):
        assert_wrong_format_rejected(other, "otf2")


def test_communication_by_context_of_the_score_p_trace():
    """cctviz.ops.comm.by_context on the ping-pong: 8 sends and 8 receives of
    4,177,920 B per rank in all, under MPI_Send and MPI_Recv of main."""
    from cctviz.ops.comm import by_context

    t = by_context(cctviz.read(DATA / "pipit" / "ping-pong-otf2")).set_index("operation")
    assert t.loc["send", "context"].endswith("/MPI_Send") and t.loc["recv", "context"].endswith(
        "/MPI_Recv"
    )
    assert (t["calls_mean"] == 8).all() and np.allclose(t["MB_mean"], 4.17792)


def _archive(path: Path, name: str = "traces", meter: bool = False, messenger: bool = False):
    """An archive written with the otf2 writer: one rank's thread in ``main``; with
    ``meter``, a METRIC location of its process sampling a power gauge (absolute)
    and an energy counter (accumulated from the start), as Score-P's metric plugins
    write them; with ``messenger``, a thread of MPI records without any region."""
    from otf2.enums import LocationType, MetricMode, MetricType, Paradigm, RecorderKind, RegionRole

    with otf2.writer.open(str(path), archive_name=name, timer_resolution=1_000_000_000) as tr:
        d = tr.definitions
        main = d.region("main", region_role=RegionRole.FUNCTION)
        g = d.location_group("MPI Rank 0", system_tree_parent=d.system_tree_node("node"))
        loc = d.location("Master thread", group=g)
        w = tr.event_writer_from_location(loc)
        w.program_begin(0, "app", [])
        w.enter(10, main)
        w.leave(110, main)
        w.program_end(120, 0)
        if meter:
            power = d.metric_member(
                "power",
                "",
                metric_type=MetricType.OTHER,
                metric_mode=MetricMode.ABSOLUTE_POINT,
                unit="W",
            )
            energy = d.metric_member(
                "energy",
                "",
                metric_type=MetricType.OTHER,
                metric_mode=MetricMode.ACCUMULATED_START,
                unit="J",
            )
            cls = d.metric_class([power, energy], recorder_kind=RecorderKind.ABSTRACT)
            mw = tr.event_writer_from_location(
                d.location("power meter", type=LocationType.METRIC, group=g)
            )
            for t, vals in ((0, [100.0, 0.0]), (50, [150.0, 5.0]), (100, [120.0, 12.0])):
                mw.metric(t, cls, vals)
        if messenger:
            d.group(
                "", group_type=otf2.GroupType.COMM_LOCATIONS, paradigm=Paradigm.MPI, members=[loc]
            )
            cg = d.group(
                "", group_type=otf2.GroupType.COMM_GROUP, paradigm=Paradigm.MPI, members=[loc]
            )
            world = d.comm("MPI_COMM_WORLD", cg)
            mw = tr.event_writer_from_location(d.location("comm thread", group=g))
            mw.mpi_send(20, 0, world, 0, 1000)
            mw.mpi_recv(30, 0, world, 0, 3000)
    return path


def test_a_metric_location_is_its_processs_values_not_a_thread(tmp_path):
    """A meter (location type METRIC) is no profile: its samples go to its process's
    root by their mode (a gauge's peak, rule max; an accumulated counter's total,
    rule sum), and to the timeline as counter tracks."""
    p = _archive(tmp_path / "m", meter=True)
    ens = cctviz.read(p)
    assert ens.n_profiles == 1 and ens.profiles["location_name"].tolist() == ["Master thread"]
    assert ens.meta["metric_locations"] == ["power meter"]
    assert ens.aggregation["power"] == "max" and ens.aggregation["energy"] == "sum"
    assert ens.tree.units["power"] == "W" and ens.tree.units["energy"] == "J"
    root = ens.long_table.loc[(0, 0)]
    assert root["power (inc)"] == 150.0 and root["energy (inc)"] == 12.0
    tl = cctviz.read_timeline(p)
    c = tl.counters
    assert sorted(set(c["track"])) == ["energy", "power"] and (c["profile"] == 0).all()
    assert c[c["track"] == "power"]["value"].tolist() == [100.0, 150.0, 120.0]
    assert c[c["track"] == "power"]["ts"].tolist() == [0, 50, 100]


def test_a_thread_of_messages_only_is_read(tmp_path):
    """MPI records on a location without Enter/Leave: leaves under its root, each an
    instant; its span from the first to the last record."""
    p = _archive(tmp_path / "c", messenger=True)
    ens = cctviz.read(p)
    assert ens.profiles["location_name"].tolist() == ["Master thread", "comm thread"]
    d = ens.long_table.xs(1, level="profile")
    names = ens.tree.nodes["name"]
    by = d.assign(name=names[d.index].to_numpy()).set_index("name")
    assert by.loc["send", "comm_bytes"] == 1000 and by.loc["recv", "comm_bytes"] == 3000
    assert by.loc["send", "comm_time"] == 0 and by.loc["app", "time (inc)"] == 10
    ev = cctviz.read_timeline(p).events
    leaves = ev[(ev["profile"] == 1) & ev["comm_bytes"].notna()]
    assert leaves["start"].tolist() == [20, 30] and (leaves["end"] == leaves["start"]).all()


def test_an_anchor_not_named_traces(tmp_path):
    """``archive_name`` (Score-P: the experiment's name) gives ``<name>.otf2``: read
    by file or folder; two archives side by side and no traces.otf2: say which."""
    _archive(tmp_path / "run", name="myrun")
    assert cctviz.readers.detect(tmp_path / "run") == "otf2"
    a, b = cctviz.read(tmp_path / "run"), cctviz.read(tmp_path / "run" / "myrun.otf2")
    assert a.tree.nodes["name"].tolist() == b.tree.nodes["name"].tolist() == ["app", "main"]
    assert cctviz.read_timeline(tmp_path / "run").n_profiles == 1
    _archive(tmp_path / "run", name="other")
    with pytest.raises(ProfileError, match="2 OTF2 archives"):
        cctviz.read(tmp_path / "run", format="otf2")
