"""Text for people (cctviz.ops.text): render() on real profiles, short reprs,
names and call paths cut to fit."""

from __future__ import annotations

import re

import numpy as np
import pytest

import cctviz
from cctviz import Ensemble, Tree
from cctviz.model.units import TIME
from cctviz.ops.text import ellipsize, render, short_path, split_callpath
from tests.conftest import DATA, HATCHET_JSON, LULESH_SCALING

KRIPKE = DATA / "hatchet-tutorial" / "hpctoolkit-kripke-database-2589696"
RESNET = DATA / "kineto" / "kineto_tb_resnet50_2021.json.gz"
GLYPH = re.compile(r"[├└]─ ")
TIME_VALUE = re.compile(r"^([+-]?\d+(?:\.\d+)?) (s|ms|us|ns)$")


@pytest.fixture(scope="module")
def kripke():
    return cctviz.read(KRIPKE)


@pytest.fixture(scope="module")
def resnet():
    return cctviz.read(RESNET)


def node_lines(text: str) -> list[tuple[int, str, str]]:
    """(depth, value columns, name) of every node line of a render."""
    lines = [ln for ln in text.splitlines() if not ln.startswith("#")]
    glyphs = [m.start() for ln in lines if (m := GLYPH.search(ln))]
    base = min(glyphs) if glyphs else len(lines[0]) - len(lines[0].lstrip())
    out = []
    for ln in lines:
        m = GLYPH.search(ln)
        if m is None:
            out.append((0, ln[:base], ln[base:]))
        else:
            out.append(((m.start() - base) // 3 + 1, ln[:base], ln[m.end() :]))
    return out


def seconds(value: str) -> float:
    """A rendered time ("79.0 s", "93.2 us") in seconds."""
    m = TIME_VALUE.match(value.strip())
    assert m, f"not a time with its unit: {value!r}"
    return float(m.group(1)) * TIME[m.group(2)]


def first_column(left: str) -> str:
    return left.split("[")[0].strip()


def assert_siblings_sorted(rows: list[tuple[int, float]]) -> int:
    """Every node's value is <= its previous sibling's; returns the number of
    sibling pairs checked (so a test sees that there were some)."""
    prev: dict[int, float] = {}
    pairs = 0
    for depth, v in rows:
        for d in [d for d in prev if d > depth]:
            del prev[d]
        if depth in prev:
            assert v <= prev[depth], (depth, v, prev[depth])
            pairs += 1
        prev[depth] = v
    return pairs


def test_kripke_children_largest_first_with_units(kripke):
    text = kripke.render()
    rows = node_lines(text)
    assert 20 < len(rows) <= 100
    values = [(d, seconds(first_column(left))) for d, left, _ in rows]
    assert assert_siblings_sorted(values) >= 5
    # in file order the 93 us timers came before the 79 s kernels; now the kernels lead
    kernels = [n for _, _, n in rows if n.startswith("Kernel_3d_DGZ::")]
    assert kernels[:3] == [
        "Kernel_3d_DGZ::scattering",
        "Kernel_3d_DGZ::LTimes",
        "Kernel_3d_DGZ::LPlusTimes",
    ]
    assert rows[0][2] == "<program root>" and first_column(rows[0][1]) == "192 s"


def test_kripke_folds_zero_chains_and_hides_small_nodes(kripke):
    text = kripke.render()
    assert "MPI_Init" not in text and "PMPI_Init" not in text
    assert "# not shown:" in text and "11 zero-valued nodes" in text
    assert "below 0.1% of the root" in text
    # shown at threshold 0: the chain MPI_Init -> PMPI_Init -> ... is one line
    full = kripke.render(threshold=0, max_nodes=None)
    lines = [ln for ln in full.splitlines() if "MPI_Init" in ln]
    assert len(lines) == 1 and "MPI_Init  (10 zero-valued nodes below, folded)" in lines[0]
    zero_lines = [ln for d, ln, _ in node_lines(full) if re.match(r"^0 \w+$", first_column(ln))]
    assert len(zero_lines) == 1


def test_kripke_numbers_are_scaled_never_raw(kripke):
    text = kripke.render(threshold=0.0001, max_nodes=300)
    for _, left, _ in node_lines(text):
        assert not re.search(r"\d{5,}|\d\.\d{4,}", left), left  # at most 3-4 significant digits
        mean, spread = left.split("[", 1) if "[" in left else (left, "")
        seconds(mean)
        for part in re.findall(r"(?<![\d.])\d+(?:\.\d+)? [a-z]+", spread):
            seconds(part)
    assert "191854648" not in text and ".000" not in text


def test_names_capped_with_a_middle_ellipsis(resnet, kripke):
    for tree, width in ((resnet, 40), (kripke, 30)):
        long = [n for n in getattr(tree, "tree", tree).names if len(n) > width]
        assert long
        text = tree.render(width=width, threshold=0, max_nodes=None)
        names = [n.split("  (")[0] for _, _, n in node_lines(text)]
        assert max(len(n) for n in names) == width
        cut = [n for n in names if "…" in n]
        assert cut and all(len(n) == width for n in cut)
    # the start and the end of a name survive
    name = max(resnet.names, key=len)
    short = ellipsize(name, 60)
    assert len(short) == 60 and name.startswith(short[:29]) and name.endswith(short[30:])


def test_kineto_render_is_short_and_points_to_gpu_time(resnet):
    text = resnet.render()
    rows = node_lines(text)
    assert len(rows) == 100  # not the 502 lines of everything
    assert all(len(n) <= 60 for _, _, n in rows)
    footer = text.splitlines()[-2:]
    assert (
        footer[0].startswith("# not shown:")
        and "with gpu_time: metric='gpu_time (inc)'" in (footer[0])
    )
    assert "max_nodes=" in footer[1] and "threshold=" in footer[1]
    gpu = resnet.render("gpu_time (inc)")
    values = [seconds(first_column(left)) for _, left, _ in node_lines(gpu)]
    assert (
        gpu.startswith("# gpu_time (inc), each value with its unit (recorded in us)")
        and min(values) > 0
    )


def test_default_metric_of_a_gpu_only_trace(resnet):
    """CPU times all zero, GPU times not: the default shows the GPU time."""
    t = Tree.from_parents(
        resnet.parent,
        resnet.names,
        {"time": np.zeros(len(resnet)), "gpu_time": resnet.metrics["gpu_time"].to_numpy()},
        meta={"units": resnet.units},
    )
    text = t.render()
    assert text.startswith("# gpu_time (inc), each value with its unit (recorded in us);")
    rows = node_lines(text)
    total = resnet.metrics["gpu_time (inc)"].iat[0] * 1e-6
    assert seconds(first_column(rows[0][1])) == pytest.approx(total, rel=5e-3)
    assert all(seconds(first_column(left)) > 0 for _, left, _ in rows)


def test_threshold_depth_and_ties():
    t = cctviz.read(HATCHET_JSON)  # foo 135 (qux 60, waldo 55, bar 20), waldo 30
    text = t.render(threshold=0.2, header=False)
    assert [n for _, _, n in node_lines(text)] == [
        "foo",
        "qux",
        "quux",
        "corge",
        "waldo",
        "fred",
    ]  # 33 = 20% of the 165 of both roots: the second root (30) is hidden
    assert "below 20% of the root" in text and "threshold=0.02" in text
    assert [d for d, _, _ in node_lines(t.render(depth=1))] == [0, 0]
    ties = Tree.from_parents([-1, 0, 0, 0], ["main", "b", "a", "c"], {"time": [0, 1.0, 1.0, 2.0]})
    assert [n for _, _, n in node_lines(ties.render())] == ["main", "c", "b", "a"]


def test_max_nodes_keeps_the_largest(kripke):
    k = 15
    rows = node_lines(kripke.render(max_nodes=k))
    assert len(rows) == k
    mean = np.sort(np.nan_to_num(kripke.stats("time (inc)")["mean"].to_numpy()))[::-1] * 1e-6
    shown = [seconds(first_column(left)) for _, left, _ in rows]
    assert min(shown) == pytest.approx(mean[k - 1], rel=5e-3)
    assert min(shown) >= mean[k] * (1 - 5e-3)


def test_ensemble_spread_and_imbalance_cue_by_cost():
    def rank(solve: float, small: float) -> Tree:
        return Tree.from_parents(
            [-1, 0, 0], ["main", "solve", "small"], {"time": [1.0, solve, small]},
            meta={"units": {"time": "s"}},
        )  # fmt: skip

    ens = Ensemble.from_trees([rank(10, 0.1), rank(10, 0.1), rank(10, 0.1), rank(30, 0.2)])
    text = ens.render()
    lines = {n: left for _, left, n in node_lines(text)}
    assert "xR +C: imbalance max/mean" in text
    assert lines["solve"].split() == ["15.0", "s", "[10.0", "s", "..", "30.0", "s]", "x2.00", "+15.0", "s"]  # fmt: skip
    # x1.60 by ratio, but max - mean (75 ms) is below 1% of the root (161 ms): no cue
    assert not re.search(r"x\d", lines["small"]) and "[100 ms .. 200 ms]" in lines["small"]
    assert "mean over 4 profiles [min .. max]" in text.splitlines()[0]
    assert not re.search(r"x\d", ens.render(imbalance=None))


def test_diff_header_names_a_and_b():
    a = Tree.from_parents([-1, 0, 0], ["main", "f", "g"], {"time": [1.0, 5.0, 1.0]},
                          meta={"units": {"time": "ms"}})  # fmt: skip
    b = Tree.from_parents([-1, 0, 0], ["main", "f", "g"], {"time": [1.0, 2.0, 3.0]},
                          meta={"units": {"time": "ms"}})  # fmt: skip
    text = cctviz.diff(a, b, labels=("new", "old")).render()
    assert text.splitlines()[0].startswith(
        "# time (inc), each value with its unit (recorded in ms), difference a - b (a = new, b = old);"
    )
    rows = {n: first_column(left) for _, left, n in node_lines(text)}
    assert rows == {"main": "+1.00 ms", "f": "+3.00 ms", "g": "-2.00 ms"}
    assert [n for _, _, n in node_lines(text)] == ["main", "f", "g"]  # by magnitude
    # labels from the files when none are given
    files = [DATA / "kineto" / f"hta_trace_filter_sampled_rank-{r}.json.gz" for r in (0, 1)]
    d = cctviz.diff(*(cctviz.read(p) for p in files))
    text = d.render()
    assert f"a = {files[0].name}, b = {files[1].name}" in text.splitlines()[0]
    values = [first_column(left) for _, left, _ in node_lines(text)]
    assert any(v.startswith("+") for v in values) and any(v.startswith("-") for v in values)
    mags = [(dd, abs(seconds(v))) for (dd, _, _), v in zip(node_lines(text), values)]
    assert assert_siblings_sorted(mags) >= 5


def test_short_str_and_ipython_display(kripke, resnet):
    from IPython.lib.pretty import pretty

    for obj, var in ((kripke, "ens"), (resnet, "tree")):
        s = str(obj)
        lines = s.splitlines()
        assert 20 <= len(lines) <= 30
        assert len(node_lines(s)) == 25
        assert lines[-1].startswith(f"# more: {var}.render(max_nodes=")
        assert pretty(obj) == s
        assert "\n" not in repr(obj) and repr(obj).startswith(f"<cctviz.{type(obj).__name__}:")


def test_metrics_without_inclusive_form_and_without_metrics():
    t = Tree.from_parents(
        [-1, 0, 0], ["main", "a", "b"], {"ratio": [0.5, 0.25, 0.75]},
        meta={"aggregation": {"ratio": "none"}},
    )  # fmt: skip
    text = t.render()
    assert text.splitlines()[0] == "# ratio; 3 nodes, 3 shown"
    assert [n for _, _, n in node_lines(text)] == ["main", "b", "a"]
    bare = Tree.from_parents([-1, 0, 1], ["main", "a", "b"])
    assert bare.render() == "# no metrics; 3 nodes, 3 shown\nmain\n└─ a\n   └─ b"
    assert render(Tree.from_parents([], [])) == "(empty tree)"


def test_count_units_and_unknown_units():
    t = Tree.from_parents(
        [-1, 0], ["main", "f"], {"calls": [1.0, 12345.0], "time": [0.0, 2.5e9]},
        meta={"units": {"calls": "count"}},
    )  # fmt: skip
    calls = t.render("calls (inc)")
    assert [first_column(left) for _, left, _ in node_lines(calls)] == ["12.3 k", "12.3 k"]
    assert t.render().startswith("# time (inc) [unit unknown];")
    assert [first_column(left) for _, left, _ in node_lines(t.render())] == ["2.50 G", "2.50 G"]


def test_short_path_keeps_the_leaf():
    t = cctviz.read(LULESH_SCALING[-1]).tree
    paths = t.callpaths.tolist()
    assert max(len(p) for p in paths) > 60
    for i, p in enumerate(paths):
        s = short_path(p, 40)
        assert len(s) <= 40
        leaf = split_callpath(p)[-1]
        assert s.endswith(leaf) or (len(leaf) > 37 and s.endswith(leaf[-10:]))
        assert s == p or "…" in s
        assert short_path(t.path(i), 40) == s or "\\" in p
    assert short_path(r"main/a\/b/c", 100) == r"main/a\/b/c"
    assert split_callpath(r"a\\/b") == ["a\\\\", "b"]
