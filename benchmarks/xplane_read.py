"""Benchmark: an XPlane file read by cctviz against xprof's own conversion of the
same file to trace-viewer JSON.

    .venv/bin/python benchmarks/xplane_read.py [--steps 200] [--rounds 3]

What each side does
-------------------
* cctviz: ``cctviz.read_timeline(path)``: the protobuf decoded in Python
  (``cctviz/readers/_xspace.py``), one profile per device and the host's, the
  collectives' bytes from the HLO, events on a unified tree.
* xprof: ``xprof.convert.raw_to_tool_data.xspace_to_tool_data([path],
  "trace_viewer@", {"use_saved_result": False})``, the conversion TensorBoard's
  and xprof's trace viewer run (C++), its output the trace-viewer JSON; each
  round on a fresh copy of the file, as xprof caches its result beside it.
  (xprof is in the ``benchmark`` extra.)

Files: the three committed samples (CPU, MI300, TPU) and one made now by
``tests/data/jax-xplane/collectives.py`` with ``--steps`` steps (a longer
trace). Each time is the best of ``--rounds``, in this process after one warm-up
read of each (imports excluded); ``x`` = cctviz's time / xprof's.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data"
FILES = {
    "CPU x2 (jax, 2 steps)": DATA / "jax-xplane" / "collectives-2cpu.xplane.pb",
    "MI300 x8 (TraceLens)": DATA / "xplane-tracelens-mi300" / "tw003.xplane.pb",
    "TPU v6e x4 (xprof)": DATA / "xplane-xprof-tpu" / "tpu_inference_2.xplane.pb",
}


def _made_now(steps: int, work: Path) -> Path:
    script = DATA / "jax-xplane" / "collectives.py"
    subprocess.run([sys.executable, str(script), str(work / "made"), "64", str(steps)], check=True)
    return next((work / "made").glob("plugins/profile/*/*.xplane.pb"))


def _best(fn, rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()

    import cctviz

    try:
        from xprof.convert.raw_to_tool_data import xspace_to_tool_data
    except ImportError:
        sys.exit("xprof is not installed: pip install -e '.[benchmark]'")

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        files = dict(FILES)
        files[f"CPU x2 (jax, {a.steps} steps)"] = _made_now(a.steps, work)

        def xprof_once(path: Path) -> None:
            copy = work / "copy" / path.name
            shutil.rmtree(copy.parent, ignore_errors=True)
            copy.parent.mkdir()
            shutil.copy(path, copy)
            data, _ = xspace_to_tool_data([str(copy)], "trace_viewer@", {"use_saved_result": False})
            assert data, f"xprof converted nothing of {path}"

        print(f"{'file':28} {'MB':>6} {'events':>8} {'cctviz s':>9} {'xprof s':>8} {'x':>6}")
        for label, path in files.items():
            tl = cctviz.read_timeline(path)  # warm-up (and the event count)
            xprof_once(path)
            ours = _best(lambda p=path: cctviz.read_timeline(p), a.rounds)
            theirs = _best(lambda p=path: xprof_once(p), a.rounds)
            mb = path.stat().st_size / 1e6
            print(
                f"{label:28} {mb:6.2f} {len(tl.events):8d} {ours:9.3f} {theirs:8.3f} {ours / theirs:6.2f}"
            )


if __name__ == "__main__":
    main()
