"""Tables with units (issue 35, item 7): every DataFrame a public function returns
states the unit of each measured column and shows it (docs/architecture.md
section 3), on real data; rows of several processes say mean or total.

The runtime's tables (``workflow.summary``, ``perfmodel.annotate``) are checked
where their runs are made: tests/runtime/test_workflow_summary.py and
tests/runtime/test_perfmodel_runtime.py."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

import cctviz
from cctviz.model.tables import UnitTable, with_units
from cctviz.ops import collectives, comm, diff, flat, gpu, idle
from cctviz.perfmodel import analytic, compare, scaling
from tests.conftest import CALIPER_JSON, DATA, LULESH_SCALING
from tests.table_units import assert_units

KINETO = sorted((DATA / "kineto").glob("hta_trace_filter_sampled_rank-*.json.gz"))
PING_PONG = DATA / "pipit" / "ping-pong-otf2"
LULESH = next(p for p in CALIPER_JSON if "lulesh" in p.name)


@pytest.fixture(scope="module")
def lulesh():
    return cctviz.read(LULESH)


@pytest.fixture(scope="module")
def kineto():
    return cctviz.read_timeline(KINETO)


@pytest.fixture(scope="module")
def scaling_runs():
    return cctviz.read_ensemble(
        LULESH_SCALING, metadata=lambda p: {"cores": int(re.search(r"(\d+)core", p.name)[1])}
    )


def _model_tables(lulesh, scaling_runs):
    ens = lulesh
    a, b = scaling_runs.profile(0), scaling_runs.profile(1)
    models = scaling.fit_scaling(scaling_runs, parameter="cores")
    hot = ens.tree.query([{"name": "Calc.*"}])
    return {
        "Ensemble.stats(time (inc))": ens.stats("time (inc)"),
        "Ensemble.stats(time)": ens.stats("time"),
        "Tree.flat_profile": ens.tree.flat_profile(),
        "ops.flat.flat_profile": flat.flat_profile(a),
        "NodeSet.to_frame": hot.to_frame(),
        "ops.diff.diff_table": diff.diff_table(a, b),
        "perfmodel.scaling_table": scaling.scaling_table(scaling_runs, parameter="cores"),
        "ScalingModels.table": models.table(at=[512]),
        "perfmodel.wait_transfer(ensemble)": compare.wait_transfer(
            _comm_ensemble(), metric="comm_time"
        ).table,
    }


def _comm_ensemble():
    def rank(wait):
        t = cctviz.Tree.from_parents(
            [-1, 0],
            ["step", "all_reduce"],
            {"time": [1.0, wait], "comm_time": [0.0, wait], "calls": [1.0, 1.0]},
            meta={"units": {"time": "ms", "comm_time": "ms"}},
        )
        t.nodes["kind"] = ["step", "comm"]
        return t

    return cctviz.Ensemble.from_trees([rank(9.0), rank(1.0)], profiles={"rank": [0, 1]})


def _timeline_tables(tl):
    inst = collectives.instances(tl)
    ens = tl.ensemble()
    return {
        "ops.collectives.instances": inst,
        "ops.collectives.stragglers": collectives.stragglers(inst),
        "ops.collectives.wait_causes": collectives.wait_causes(tl, inst),
        "ops.collectives.message_sizes": collectives.message_sizes(tl),
        "ops.collectives.message_sizes(context)": collectives.message_sizes(tl, by="context"),
        "ops.gpu.gpu_breakdown": gpu.gpu_breakdown(tl),
        "ops.idle.idle_time": idle.idle_time(tl),
        "perfmodel.wait_transfer(timeline)": compare.wait_transfer(tl).table,
        "perfmodel.wait_transfer(its ensemble)": compare.wait_transfer(ens).table,
        "ops.comm.by_context": comm.by_context(ens),
        "ops.comm.bandwidth": comm.bandwidth(ens),
        "Ensemble.stats(comm_bytes (inc))": ens.stats("comm_bytes (inc)"),
    }


def _analytic_tables():
    model = analytic.ModelSpec(params=1_000_000)
    par = analytic.ParallelSpec(world_size=4, strategy="zero3")
    return {
        "perfmodel.communication": analytic.communication(model, par),
        "MemoryEstimate.frame": analytic.memory(model, par).frame(),
    }


def _replay_tables():
    import warnings

    from cctviz.perfmodel import ReplayWarning, replay

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ReplayWarning)  # no step markers: one step
        rp = replay(PING_PONG)
    cp = rp.critical_path()
    return {
        "Replay.steps": rp.steps,
        "CriticalPath.segments": cp.segments,
        "CriticalPath.by_context": cp.by_context,
        "Replay.opportunities": rp.opportunities(top=3),
    }


def test_every_public_table_states_and_shows_its_units(lulesh, kineto, scaling_runs):
    tables = {
        **_model_tables(lulesh, scaling_runs),
        **_timeline_tables(kineto),
        **_analytic_tables(),
        "ops.comm.by_context(OTF2)": comm.by_context(cctviz.read(PING_PONG)),
        **_replay_tables(),
    }
    for what, table in tables.items():
        assert len(table), what  # real rows, not an empty frame that passes anything
        assert_units(table, what)


def test_views_tables(lulesh):
    view = cctviz.CCTView(lulesh, selection=[0, 1, 2])
    assert_units(view.selected, "CCTView.selected")
    sankey = cctviz.SankeyView(lulesh)
    assert_units(sankey.nodes, "SankeyView.nodes")
    assert_units(sankey.per_profile, "SankeyView.per_profile")
    dots = cctviz.ProfilesView(lulesh)
    assert_units(dots.coordinates, "ProfilesView.coordinates")


def test_a_dataset_s_statistics(tmp_path):
    ds = cctviz.read_ensemble(LULESH_SCALING, out=tmp_path / "d", progress=False)
    assert_units(ds.stats("time (inc)"), "DatasetEnsemble.stats")


def test_stats_keep_their_names_and_numbers_and_show_units(lulesh):
    """ens.stats(): the columns every view and user reads keep their names and
    their numbers (in the metric's unit); the notebook shows "5.89 s", not
    5890000.0 (LULESH's Caliper profile is in microseconds)."""
    st = lulesh.stats("time (inc)")
    assert list(st.columns[:4]) == ["name", "mean", "std", "min"]
    assert st.attrs["unit"] == "us" and st.attrs["units"]["mean"] == "us"
    assert "imbalance" not in st.attrs["units"] and "n" not in st.attrs["units"]
    raw = float(st.loc[0, "mean"])
    assert raw > 1e6  # the number stays in us
    html = st._repr_html_()
    assert cctviz.model.units.format_value(raw, "us") in html and f"{raw:.6e}" not in html
    # what users do with it keeps the units: filter, sort, head, a column subset
    top = st[st["mean"] > 0].sort_values("cost", ascending=False).head(3)[["name", "mean"]]
    assert top.attrs["units"]["mean"] == "us" and " s</td>" in top._repr_html_()
    # and what changes the values' unit drops them rather than mislabel them
    assert "units" not in (st[["mean", "max"]] / 1e6).attrs
    assert "units" not in st[["mean", "max"]].rank().attrs
    assert type(pd.DataFrame(st)) is pd.DataFrame


def test_a_table_never_shows_a_unit_on_the_wrong_column():
    """pandas maps dict formatters by position in the whole frame when it elides
    columns; the table's formatters follow the elided columns."""
    cols = {f"c{i}": np.arange(3) * 1e9 for i in range(30)}
    cols["count"] = np.arange(3)
    t = with_units(pd.DataFrame(cols), {f"c{i}": "ns" for i in range(30)})
    with pd.option_context("display.max_columns", 6):
        text = repr(t)
        html = t._repr_html_()
    last = text.splitlines()[1:4]
    assert all(line.rstrip().split()[-1] in "012" for line in last), text  # count: plain
    assert "<td>2.00 s</td>" in html and html.count("<td>2</td>") == 1


def test_rows_of_several_processes_say_mean_or_total(kineto):
    """Aggregates are named as such: per context over calls (wait_causes) and per
    size bin (message_sizes) are totals; per context over profiles (by_context)
    and per rank over calls and ranks (wait_transfer) are means."""
    causes = collectives.wait_causes(kineto)
    assert {"wait_total", "most_waited_for_wait_total", "arrival_spread_total"} <= set(
        causes.columns
    )
    assert "bytes_total" in collectives.message_sizes(kineto).columns
    assert {"calls_mean", "MB_mean", "ms_mean"} <= set(comm.by_context(kineto.ensemble()).columns)
    assert {"wait_mean [s]", "wait_max [s]"} <= set(compare.wait_transfer(kineto).table.columns)
    # what the table used to call "bytes" is the sum of the bin's calls
    sizes = collectives.message_sizes(kineto)
    inst = collectives.instances(kineto)
    assert sizes["bytes_total"].sum() >= inst["bytes"].sum()


def test_a_unit_table_is_a_dataframe():
    t = with_units(pd.DataFrame({"wait": [1e9]}), {"wait": "ns"})
    assert isinstance(t, UnitTable) and isinstance(t, pd.DataFrame)
    assert t.to_string().split()[-1] == "1.000000e+09"  # to_string: the raw numbers
    assert "1.00 s" in repr(t)


def test_a_join_keeps_both_sides_units_and_a_new_column_loses_its_own():
    """pandas keeps ``attrs`` through a join only where both sides have the same:
    the UnitTable keeps each side's units (a node's times joined with its
    bandwidths, notebook 02); a column set anew drops its unit rather than show a
    wrong one; a header that names its unit shows its numbers as they are."""
    import pandas as pd

    from cctviz.model.tables import with_units

    times = with_units(pd.DataFrame({"time": [2.5e9, 1e6]}), {"time": "ns"})
    rates = with_units(pd.DataFrame({"algbw": [0.3, 0.5]}), {"algbw": "GB/s"})
    both = times.join(rates)
    assert both.attrs["units"] == {"time": "ns", "algbw": "GB/s"}
    text = str(both)
    assert "2.50 s" in text and "300 MB/s" in text
    merged = times.reset_index().merge(rates.reset_index(), on="index")
    assert merged.attrs["units"] == {"time": "ns", "algbw": "GB/s"}
    both["time"] = both["time"] / 1e9  # now in s, which the table cannot know
    assert "time" not in both.attrs["units"] and "2.50 s" not in str(both)
    named = with_units(pd.DataFrame({"wait_mean [s]": [0.0124]}), {"wait_mean [s]": "s"})
    assert "12.4 ms" not in str(named) and "0.0124" in str(named)
