"""One node, one number: the mean, spread, minimum, maximum and imbalance cost of a
node are the same in ens.stats, the CCT view's payload, the Sankey's nodes, the text
tree (render(), what `cctviz tree` prints) and the exported SVGs of both views, on
real ensembles: LULESH scaling runs, the RAJAPerf runs and a `cctviz run` of the GPT
example."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

import cctviz
from cctviz.model.units import format_value
from tests.conftest import DATA, LULESH_SCALING

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def runtime_run(traced_ddp_run):
    return cctviz.read(traced_ddp_run)


@pytest.fixture(scope="module", params=["lulesh", "rajaperf", "runtime"])
def ensemble(request):
    if request.param == "lulesh":
        return cctviz.read_ensemble(LULESH_SCALING[:4])
    if request.param == "rajaperf":
        return cctviz.read_ensemble(DATA / "thicket" / "rajaperf")
    return request.getfixturevalue("runtime_run")


def _nodes(ens, metric: str, k: int = 5) -> pd.DataFrame:
    """The k heaviest nodes whose name is unique in the tree (a Sankey grouped by
    name then has them as super nodes of their own) and that two profiles or more have."""
    st = ens.stats(metric)
    counts = pd.Series(ens.tree.names).value_counts()
    unique = set(counts[counts == 1].index)
    cand = st[st["name"].isin(unique) & (st["n"] >= 2) & (st["mean"] > 0)]
    assert len(cand) >= 3
    return cand.nlargest(k, "mean")


def _flat(text: str) -> str:
    """Spaces collapsed, and none after "[" or before "]" (values are padded to align)."""
    return re.sub(r"\s+\]", "]", re.sub(r"\[\s+", "[", re.sub(r"\s+", " ", text)))


def test_one_node_shows_one_number_everywhere(ensemble, tmp_path):
    ens = ensemble
    metric = ens.tree.metric_column(None)
    unit = ens.tree.unit(metric.removesuffix(" (inc)"))
    fmt = lambda v: format_value(v, unit)  # noqa: E731
    picked = _nodes(ens, metric)

    tree_view = cctviz.CCTView(ens, color=metric, max_nodes=len(ens.tree))
    d = tree_view._data
    row_of = {int(n): r for r, n in enumerate(np.frombuffer(d["id"], dtype="<i4"))}
    spread = {
        k: np.frombuffer(d["spread"][k], dtype="<f4") for k in ("mean", "min", "max", "std", "cost")
    }
    sankey = cctviz.SankeyView(ens, group_by="name", metric=metric)
    groups = sankey.nodes.set_index("group")
    text = _flat(ens.render(metric, max_nodes=None, threshold=0))
    # at their natural sizes, every node drawn
    tree_svg = tree_view.save(tmp_path / "tree.svg", width=None).read_text(encoding="utf-8")
    sankey_svg = sankey.save(tmp_path / "sankey.svg", width=None).read_text(encoding="utf-8")

    for node, st in picked.iterrows():
        name = st["name"]
        want = {k: float(st[k]) for k in ("mean", "min", "max", "std", "cost")}
        # the tree view's payload (float32 buffers)
        r = row_of[int(node)]
        for k, v in want.items():
            assert spread[k][r] == pytest.approx(v, rel=1e-6, abs=1e-9, nan_ok=True), (name, k)
        # the Sankey's super node of that one call site
        g = groups.loc[name]
        for k, v in want.items():
            assert g[k] == pytest.approx(v, rel=1e-9, abs=1e-12, nan_ok=True), (name, k)
        # the text tree: mean [min .. max]
        assert f"{fmt(want['mean'])} [{fmt(want['min'])} .. {fmt(want['max'])}]" in text, name
        # the exported figures
        assert f'aria-label="{name}, {metric} {fmt(want["mean"])}' in tree_svg, name
        assert (
            f'aria-label="{name}, mean {fmt(want["mean"])}, min {fmt(want["min"])}, max {fmt(want["max"])}'
            in sankey_svg
        ), name
