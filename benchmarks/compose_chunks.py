"""How ``read_ensemble(files, out=dir)`` chunks its files: peak memory and time
by chunk size, against the whole ensemble read into memory.

    python benchmarks/compose_chunks.py [--files 1500] [--source 64cores]

The files: ``--files`` links to one real LULESH profile of
``../shared/data/hatchet-tutorial/lulesh-scaling`` (``--source``: the
64-rank one by default, 135 kB, 64 profiles), so 1,500 of them are 96,000
profiles and 202 MB on disk. Each case runs in a fresh process (this file with
``--child``) so that its peak RSS (``VmHWM``) is its own; printed: the chunks,
the seconds of the compose (or the read) alone, and the peak RSS, with the ratio
to the in-memory read. The cases: in memory (``read_ensemble(files)``), then
``out=`` with chunks of 2,000 files (the old default: every file in one chunk
here), of 100 files, and of ``--bytes`` MiB on disk each (the default,
``cctviz.readers.CHUNK_BYTES``, 32 MiB, among them).

Measured 2026-12-07 on this machine (2 cores), 1,500 files (202 MB, 96,000
profiles); 158 MB of RSS after the imports in each::

    memory        1 chunk:   8.2 s, peak RSS 1045 MB (1.00x in memory)
    files=2000    1 chunk:   5.8 s, peak RSS 1045 MB (1.00x)
    files=100    15 chunks:  4.8 s, peak RSS  279 MB (0.27x)
    bytes=8      25 chunks:  4.7 s, peak RSS  272 MB (0.26x)
    bytes=32      7 chunks:  4.4 s, peak RSS  366 MB (0.35x)   (the default)
    bytes=64      4 chunks:  4.6 s, peak RSS  538 MB (0.52x)
    bytes=256     1 chunk:   6.4 s, peak RSS 1045 MB (1.00x)

A chunk's parsed files take about 6 times their bytes on disk (JSON here); the
default bounds the compose near 200 MB above the imports whatever the count.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from compose import _rss_kib  # noqa: E402

LULESH = ROOT.parent / "shared" / "data" / "hatchet-tutorial" / "lulesh-scaling"


def child(files_dir: str, case: str, out: str) -> None:
    import cctviz
    from cctviz.dataset.compose import chunks_of
    from cctviz.readers import CHUNK_BYTES

    files = sorted(Path(files_dir).iterdir())
    base = (_rss_kib("VmRSS") or 0) / 1024
    t0 = time.perf_counter()
    if case == "memory":
        ens = cctviz.read_ensemble(files, progress=False)
        n, chunks = ens.n_profiles, 1
    else:
        kind, _, value = case.partition("=")
        kw = {"chunk_files": int(value), "chunk_bytes": None} if kind == "files" else {}
        if kind == "bytes":
            kw = {"chunk_bytes": int(float(value) * 2**20)}
        ds = cctviz.read_ensemble(files, out=out, progress=False, **kw)
        n = ds.n_profiles
        chunks = len(chunks_of(files, kw.get("chunk_bytes", CHUNK_BYTES), kw.get("chunk_files")))
    took = time.perf_counter() - t0
    peak = (_rss_kib("VmHWM") or 0) / 1024
    print(json.dumps({"profiles": n, "chunks": chunks, "s": took, "peak": peak, "base": base}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=1500)
    ap.add_argument("--source", default="64cores")
    ap.add_argument("--bytes", type=float, nargs="+", default=[8, 32, 64, 256])
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        child(*a.child)
        return
    src = next(LULESH.glob(f"*-{a.source}.json"))
    with tempfile.TemporaryDirectory() as d:
        files = Path(d) / "files"
        files.mkdir()
        for k in range(a.files):
            (files / f"p{k:05d}.json").symlink_to(src)
        mb = a.files * src.stat().st_size / 1e6
        print(f"{a.files:,} links to {src.name} ({mb:.0f} MB on disk)")
        cases = ["memory", "files=2000", "files=100", *[f"bytes={b:g}" for b in a.bytes]]
        ref = None
        for case in cases:
            out = Path(d) / case.replace("=", "-")
            cmd = [sys.executable, __file__, "--child", str(files), case, str(out)]
            res = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
            ref = ref or res
            print(
                f"  {case:<12} {res['profiles']:>7,} profiles, {res['chunks']:>4} chunk(s):"
                f" {res['s']:6.1f} s, peak RSS {res['peak']:6.0f} MB"
                f" ({res['peak'] / ref['peak']:.2f}x in memory; {res['base']:.0f} MB after imports)",
                flush=True,
            )


if __name__ == "__main__":
    main()
