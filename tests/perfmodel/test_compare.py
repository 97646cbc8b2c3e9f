"""wait_transfer on hand-made ensembles: sub-groups, several runs, a predicted transfer."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import cctviz
from cctviz.perfmodel.compare import wait_transfer


def rank(times: dict[str, float], calls: dict[str, float]) -> cctviz.Tree:
    names = ["step", *times]
    t = cctviz.Tree.from_parents(
        [-1] + [0] * len(times),
        names,
        {
            "time": [0.0, *times.values()],
            "comm_time": [0.0, *times.values()],
            "calls": [1.0, *calls.values()],
        },
        meta={"units": {"time": "ms", "comm_time": "ms"}},
    )
    t.nodes["kind"] = ["step"] + ["comm"] * len(times)
    return t


def test_sub_groups_runs_and_a_predicted_transfer():
    # run a: ranks 0-2; the "pair" all-reduce is ranks 0 and 1 only. run b: 2 ranks.
    a = [
        rank({"all_reduce": 9.0, "pair": 4.0}, {"all_reduce": 1, "pair": 1}),
        rank({"all_reduce": 7.0, "pair": 3.0}, {"all_reduce": 1, "pair": 1}),
        rank({"all_reduce": 2.0, "pair": 0.0}, {"all_reduce": 1, "pair": 0}),
    ]
    b = [rank({"all_reduce": 5.0}, {"all_reduce": 1}), rank({"all_reduce": 6.0}, {"all_reduce": 1})]
    ens = cctviz.Ensemble.from_trees(
        a + b, profiles=pd.DataFrame({"rank": [0, 1, 2, 0, 1], "run": ["a"] * 3 + ["b"] * 2})
    )
    wt = wait_transfer(ens)
    t = wt.table.set_index(["run", "context"])
    assert t.loc[("a", "step/all_reduce"), "waited_least"] == "rank 2"
    assert t.loc[("a", "step/all_reduce"), "transfer [s]"] == pytest.approx(
        2e-3
    )  # 2 ms, in seconds
    # rank 2 is not in the pair: it is neither the fastest nor waiting there
    assert t.loc[("a", "step/pair"), "ranks"] == 2 and t.loc[
        ("a", "step/pair"), "transfer [s]"
    ] == pytest.approx(3e-3)
    assert t.loc[("a", "step/pair"), "waited_least"] == "rank 1"
    pair = int(t.loc[("a", "step/pair"), "node"])
    assert wt.ensemble.values("comm_wait")[pair].tolist() == [1.0, 0.0, 0.0, 0.0, 0.0]
    # each run on its own: run b's fastest is its own rank 0
    assert t.loc[("b", "step/all_reduce"), "transfer [s]"] == pytest.approx(5e-3)
    assert t.loc[("b", "step/all_reduce"), "waited_least"] == "rank 0"
    # a model that says 1.5 ms: the fastest rank waited 0.5 ms too
    node = int(t.loc[("a", "step/all_reduce"), "node"])
    pred = np.zeros(len(ens.tree))
    pred[node] = 1.5
    wp = wait_transfer(ens, transfer=pred)
    assert wp.ensemble.values("comm_wait")[node, :3].tolist() == [7.5, 5.5, 0.5]
    assert wp.ensemble.tree.unit("comm_wait") == "ms"


def test_bad_input_is_refused():
    ens = cctviz.Ensemble.from_trees([rank({"x": 1.0}, {"x": 1})])
    with pytest.raises(KeyError, match="comm_bytes"):
        wait_transfer(ens, metric="comm_bytes")
    with pytest.raises(ValueError, match="3 values for 2 nodes"):
        wait_transfer(ens, transfer=[1.0, 2.0, 3.0])


def test_the_package_exposes_the_models():
    import importlib

    pm = importlib.import_module("cctviz").perfmodel  # lazily, as cctviz.perfmodel
    assert pm.annotate is importlib.import_module("cctviz.perfmodel.compare").annotate
    assert callable(pm.fit_scaling) and callable(pm.wait_transfer) and callable(pm.memory)


def test_fit_interconnect_takes_the_waiting_out_first():
    """Three all-reduce contexts of known sizes on 3 ranks; rank 2 is late at each,
    so the others wait 5 ms on top of the alpha-beta transfer. The fit on the
    transfer recovers alpha and the bus bandwidth; a fit on the raw times would not."""
    from cctviz.model.collectives import bus_factor
    from cctviz.perfmodel.analytic import fit_alpha_beta
    from cctviz.perfmodel.compare import fit_interconnect

    alpha, bw, late_ms = 20e-6, 2e9, 5.0
    sizes = {"small": 1e3, "mid": 1e5, "big": 4e6}  # bytes per call, 2 calls each
    f = bus_factor("all_reduce", 3)
    xfer = {k: 2 * (alpha + f * s / bw) * 1e3 for k, s in sizes.items()}  # ms

    def one(r):
        # step > region (one per size) > all_reduce
        t = cctviz.Tree.from_parents(
            [-1, 0, 0, 0, 1, 2, 3],
            ["step", *sizes, "all_reduce", "all_reduce", "all_reduce"],
            {
                "time": [0.0] * 7,
                "comm_time": [0.0] * 4 + [xfer[k] + (0 if r == 2 else late_ms) for k in sizes],
                "comm_bytes": [0.0] * 4 + [2 * s for s in sizes.values()],
                "calls": [1.0] * 4 + [2.0, 2.0, 2.0],
            },
            meta={"units": {"time": "ms", "comm_time": "ms", "comm_bytes": "B"}},
        )
        # from_parents numbers nodes in pre-order: kinds by name
        kind = {"step": "step", "all_reduce": "comm"}
        t.nodes["kind"] = [kind.get(str(n), "region") for n in t.names]
        return t

    ens = cctviz.Ensemble.from_trees([one(r) for r in range(3)], profiles={"rank": [0, 1, 2]})
    net = fit_interconnect(ens)
    assert net.alpha == pytest.approx(alpha, rel=1e-6) and net.bandwidth == pytest.approx(
        bw, rel=1e-6
    )
    raw = fit_alpha_beta(
        [2 * s for s in sizes.values()],
        [(xfer[k] + late_ms) / 1e3 for k in sizes],
        "all_reduce",
        3,
        calls=[2, 2, 2],
    )
    assert raw.alpha > 100 * alpha  # the waiting passes for latency
