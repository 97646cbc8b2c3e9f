"""Benchmark: ``perf script`` text -> calling-context trees (cctviz's ``perf``
reader), against the way FlameGraph's ``stackcollapse-perf.pl`` and most
perf importers work: a loop over the lines that folds each sample's stack into
a ``a;b;c`` key and counts the keys (written here in plain Python), and against
reading those folded counts back with cctviz's ``folded`` reader.

    .venv/bin/python benchmarks/perf_script_parse.py [--copies 300]

The text is the real system-wide sample (``../shared/data/linux-perf``, 556
samples, 3,431 lines) repeated ``--copies`` times (300: about 1 M lines,
45 MB). All three run in this process, one after the other; ``x`` is each
one's time over cctviz's in the same run.
"""

from __future__ import annotations

import argparse
import re
import tempfile
import time
from collections import Counter
from pathlib import Path

import cctviz

SAMPLE = (
    Path(__file__).resolve().parents[1] / "../shared/data/linux-perf/system-wide.linux-perf.txt"
)
_HEAD = re.compile(r"^\S.*?\s\d+\.\d+:\s")


def fold_loop(path: Path) -> Counter:
    """The line loop of the usual importers: a stack per sample, counted by key."""
    folded: Counter = Counter()
    frames: list[str] = []
    for line in path.read_text().splitlines():
        if _HEAD.match(line):
            if frames:
                folded[";".join(reversed(frames))] += 1
            frames = []
        elif line.strip():
            sym = line.split(None, 1)[1].rsplit(" (", 1)[0]
            frames.append(sym.split("+0x", 1)[0])
    if frames:
        folded[";".join(reversed(frames))] += 1
    return folded


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--copies", type=int, default=300)
    args = ap.parse_args()
    text = SAMPLE.read_text().rstrip("\n") + "\n\n"
    with tempfile.TemporaryDirectory() as d:
        big = Path(d) / "big.perf.txt"
        big.write_text(text * args.copies)
        lines = (text * args.copies).count("\n")
        t0 = time.perf_counter()
        ens = cctviz.read(big, format="perf")
        t_cctviz = time.perf_counter() - t0
        t0 = time.perf_counter()
        folded = fold_loop(big)
        t_loop = time.perf_counter() - t0
        fpath = Path(d) / "big.folded"
        fpath.write_text("".join(f"{k} {v}\n" for k, v in folded.items()))
        t0 = time.perf_counter()
        cctviz.read(fpath, format="folded")
        t_folded = time.perf_counter() - t0
    n = int(ens.exclusive_rows["cpu-clock samples"].sum())
    assert n == sum(folded.values()), (n, sum(folded.values()))
    print(f"{lines:,} lines, {n:,} samples, {len(ens.tree):,} nodes")
    print(f"{'tool':<34} {'s':>7} {'x':>6}")
    for name, t in (
        ("cctviz perf reader", t_cctviz),
        ("python line loop (fold + count)", t_loop),
        ("  + cctviz folded reader on it", t_loop + t_folded),
    ):
        print(f"{name:<34} {t:7.2f} {t / t_cctviz:6.2f}")


if __name__ == "__main__":
    main()
