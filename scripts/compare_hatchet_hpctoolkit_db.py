"""Compare cctviz's ``hpctoolkit-db`` reader with Hatchet's ``from_hpctoolkit_latest``.

Hatchet is not a dependency: install it in a separate venv and run this script twice::

    python3 -m venv /tmp/hvenv && /tmp/hvenv/bin/pip install llnl-hatchet
    /tmp/hvenv/bin/python scripts/compare_hatchet_hpctoolkit_db.py dump DB /tmp/hatchet.json
    .venv/bin/python scripts/compare_hatchet_hpctoolkit_db.py compare DB /tmp/hatchet.json

``dump`` writes Hatchet's per-context values (its default, summary-profile mode:
the sum over threads); ``compare`` matches them to cctviz's nodes by context id
and prints the differences of the inclusive time summed over the profiles.
"""

from __future__ import annotations

import json
import sys


def dump(db: str, out: str) -> None:
    import hatchet as ht

    gf = ht.GraphFrame.from_hpctoolkit_latest(db)
    df = gf.dataframe.reset_index()
    rows = [
        {
            "ctx": int(n._hatchet_nid),
            "name": str(n.frame.get("name")),
            "inc": float(i),
            "exc": None if e != e else float(e),
        }
        for n, i, e in zip(df["node"], df["time (inc)"], df["time"])
    ]
    with open(out, "w") as f:
        json.dump({"hatchet": ht.__version__, "rows": rows}, f)


def compare(db: str, dumped: str) -> None:
    import numpy as np

    import cctviz

    with open(dumped) as f:
        h = json.load(f)
    ens = cctviz.read(db)
    t = ens.tree
    inc = (
        ens.long_table["time (inc)"]
        .groupby(level="node")
        .sum()
        .reindex(range(len(t)), fill_value=0)
    )
    ours = dict(zip(t.nodes["ctx_id"].tolist(), inc.tolist()))
    matched = [(r, ours[r["ctx"]]) for r in h["rows"] if r["ctx"] in ours]
    diff = np.array([abs(r["inc"] - v) for r, v in matched])
    print(f"hatchet {h['hatchet']}: {len(h['rows'])} nodes; cctviz: {len(t)} nodes")
    print(
        f"matched by context id: {len(matched)}; max |inclusive difference|: "
        f"{np.nanmax(diff):.3g} s; Hatchet NaN (no value): {int(np.isnan(diff).sum())}"
    )
    print(f"hatchet nodes with an exclusive time: {sum(r['exc'] is not None for r in h['rows'])}")
    root = int(t.roots[0])
    print(f"root: hatchet {h['rows'][0]['inc']!r}, cctviz sum over ranks {inc[root]!r}")
    for r, v in matched:
        if abs(r["inc"] - v) > 1e-9:
            # a line that is a call site with cost of its own: cctviz hangs the callee from
            # the enclosing function or loop (as experiment.xml's C elements), so the
            # statement's inclusive value is its own cost only
            print("  differs:", r["ctx"], r["name"], r["inc"], v)


if __name__ == "__main__":
    {"dump": dump, "compare": compare}[sys.argv[1]](sys.argv[2], sys.argv[3])
