"""Write the payloads of the JavaScript figure tests (tests/js/fixtures/*.json).

Each fixture is what ``cctviz.export.payload(view)`` gives for a small view of a
real profile in ../shared/data: ``tests/js/figure.test.js`` renders it with the
export bundle's code and compares with the checked-in SVG next to it, and
``tests/test_js_fixtures.py`` checks that Python still makes these payloads.

    python scripts/js_fixtures.py [--check]

``--check`` compares the data, floats within a relative 1e-6 (:func:`same`): the
last bits of a PCA differ between machines, and the figures show them rounded.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data"
OUT = ROOT / "tests" / "js" / "fixtures"


def fixtures() -> dict[str, dict]:
    """name -> payload (with ``expect_labels``: names the figure must show)."""
    import cctviz
    from cctviz.export import payload

    out: dict[str, dict] = {}
    cpi = cctviz.read(DATA / "hatchet" / "caliper-cpi-json" / "cpi-callpath-profile.json")
    view = cctviz.CCTView(cpi, selection=[1])
    out["cpi-tree"] = payload(view, title="cpi (Caliper JSON)")
    out["cpi-tree"]["expect_labels"] = [str(n) for n in view.tree.names[:3]]

    lulesh = cctviz.read(
        DATA / "hatchet-tutorial" / "lulesh-scaling" / "lulesh-annotation-profile-8cores.json"
    )
    view = cctviz.CCTView(lulesh, chart="icicle", max_nodes=40)
    out["lulesh-icicle"] = payload(view, width="6in", font_size=8)
    out["lulesh-icicle"]["expect_labels"] = [str(view.tree.names[0])]

    files = sorted((DATA / "hatchet-tutorial" / "lulesh-scaling").glob("*.json"))[:4]
    ens = cctviz.read_ensemble(files)
    view = cctviz.CCTView(ens, max_nodes=25)
    out["lulesh-ensemble"] = payload(view, scheme="dark")
    out["lulesh-ensemble"]["expect_labels"] = [str(view.tree.names[0])]

    # the ensemble Sankey: 64 ranks by load module, a module selected, a brushed range
    kripke = cctviz.read(DATA / "hatchet-tutorial" / "hpctoolkit-kripke-database-2589696")
    view = cctviz.SankeyView(kripke, selected_groups=[1])
    view.brush = {"node": 1, "lo": float(view.per_profile.loc[1].median()), "hi": 1e30}
    out["kripke-sankey"] = payload(view, width="7in")
    out["kripke-sankey"]["expect_labels"] = ["kripke"]
    # diff mode: LULESH on 8 against 64 cores
    scaling = sorted((DATA / "hatchet-tutorial" / "lulesh-scaling").glob("*.json"))
    two = [f for f in scaling if f.name.endswith(("-8cores.json", "-64cores.json"))]
    runs = cctviz.read_ensemble(two)
    view = cctviz.SankeyView(
        runs, diff=({"run": 0}, {"run": 1}), diff_labels=("8 cores", "64 cores")
    )
    out["lulesh-sankey-diff"] = payload(view, scheme="dark")
    out["lulesh-sankey-diff"]["expect_labels"] = ["main", "lulesh.cycle"]
    # the profiles view of those runs
    view = cctviz.ProfilesView(runs)
    out["lulesh-profiles"] = payload(view, width="4in")
    out["lulesh-profiles"]["expect_labels"] = ["run"]
    return out


def same(a, b, rel: float = 1e-6) -> bool:
    """Whether two payloads are equal, their floats within ``rel`` of each other:
    a PCA or a float32 buffer differs in its last bits between CPUs and BLAS builds
    (what the figures show of them is rounded far above that).

    >>> same({"x": [0.5271643369822704, 1]}, {"x": [0.527164336982270, 1]}), same([1.0], [1.1])
    (True, False)
    """
    if isinstance(a, float) or isinstance(b, float):
        if not isinstance(a, (int, float)) or not isinstance(b, (int, float)):
            return False
        return math.isclose(a, b, rel_tol=rel, abs_tol=1e-12)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k], rel) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y, rel) for x, y in zip(a, b))
    return a == b


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--check", action="store_true", help="compare with the files instead of writing"
    )
    a = ap.parse_args(argv)
    OUT.mkdir(parents=True, exist_ok=True)
    stale = []
    for name, p in fixtures().items():
        text = json.dumps(p, indent=1, sort_keys=True) + "\n"
        path = OUT / f"{name}.json"
        if a.check:
            if not path.exists() or not same(json.loads(path.read_text()), json.loads(text)):
                stale.append(path.name)
        else:
            path.write_text(text)
    if stale:
        print(f"stale fixtures (run scripts/js_fixtures.py): {', '.join(stale)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
