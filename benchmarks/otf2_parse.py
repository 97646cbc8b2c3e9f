"""Benchmark: OTF2 trace -> per-location calling-context trees (cctviz), against
iterating the ``otf2`` package's own events (the reader Pipit's ``from_otf2`` is
built on) and Pipit itself where it installs.

    .venv/bin/python benchmarks/otf2_parse.py [--events 10000000 1000000] [--locations 8]

What each side does
-------------------
* The trace is synthetic, written with the ``otf2`` writer (cached under
  ``~/.cache/cctviz-bench/``): ``--locations`` MPI ranks, each a ``main`` with
  iterations of ``step > compute > kernel_a, kernel_b``, ``MPI_Send`` (an
  ``MpiSend``), ``MPI_Recv`` (an ``MpiRecv``) and ``MPI_Allreduce``
  (``MpiCollectiveBegin/End``): 18 events per iteration, plus Program events.
* cctviz: ``cctviz.read(folder, format="otf2")``: the Ensemble of ranks with
  time, calls, comm_bytes/bus_bytes/comm_time per context.
* otf2-iterate: ``for loc, ev in otf2.reader.open(anchor).events``, counting
  events: the high-level event objects, no tree and no metrics. Pipit's OTF2
  reader (``pipit.Trace.from_otf2``) iterates these same objects and then
  builds a DataFrame of them, so this is a lower bound of its time.
* pipit: ``pipit.Trace.from_otf2(folder)`` in the venv
  ``~/.cache/cctviz-pipit-venv`` when it holds pipit; the PyPI ``pipit``
  (0.0.1) is an empty placeholder, so the row says "not installed" unless
  Pipit was installed there from its repository.

Each tool runs in a fresh Python process; ``s`` is the work alone (imports
excluded), ``MB`` the child's peak RSS (``VmHWM``) minus that of a child that
only imported the same modules, ``x`` the time ratio against cctviz in the
same run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve()
REPO = HERE.parents[1]
CACHE = Path.home() / ".cache" / "cctviz-bench"
PIPIT_PY = Path.home() / ".cache" / "cctviz-pipit-venv" / "bin" / "python"
PER_ITER = 18


def _peak_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


def write_trace(folder: Path, n_events: int, n_loc: int) -> int:
    """Write the synthetic archive; returns the number of events written."""
    import otf2
    from otf2.enums import CollectiveOp, GroupType, Paradigm, RegionRole

    iters = max(1, (n_events - 6 * n_loc) // (PER_ITER * n_loc))
    with otf2.writer.open(str(folder), timer_resolution=1_000_000_000) as tr:
        d = tr.definitions
        fn = RegionRole.FUNCTION
        main, step, comp = (d.region(n, region_role=fn) for n in ("main", "step", "compute"))
        ka, kb = d.region("kernel_a", region_role=fn), d.region("kernel_b", region_role=fn)
        snd = d.region("MPI_Send", paradigm=Paradigm.MPI)
        rcv = d.region("MPI_Recv", paradigm=Paradigm.MPI)
        ar = d.region("MPI_Allreduce", paradigm=Paradigm.MPI)
        node = d.system_tree_node("node")
        locs = [
            d.location(
                "Master thread", group=d.location_group(f"MPI Rank {r}", system_tree_parent=node)
            )
            for r in range(n_loc)
        ]
        d.group("", group_type=GroupType.COMM_LOCATIONS, paradigm=Paradigm.MPI, members=locs)
        world = d.comm(
            "MPI_COMM_WORLD",
            d.group("", group_type=GroupType.COMM_GROUP, paradigm=Paradigm.MPI, members=locs),
        )
        n = 0
        for r, loc in enumerate(locs):
            w = tr.event_writer_from_location(loc)
            t = 0
            w.program_begin(t, "synthetic", [])
            w.enter(t + 1, main)
            t = 2
            peer = (r + 1) % n_loc
            for _ in range(iters):
                w.enter(t, step)
                w.enter(t + 1, comp)
                w.enter(t + 2, ka)
                w.leave(t + 10, ka)
                w.enter(t + 11, kb)
                w.leave(t + 20, kb)
                w.leave(t + 21, comp)
                w.enter(t + 22, snd)
                w.mpi_send(t + 23, peer, world, 0, 4096)
                w.leave(t + 25, snd)
                w.enter(t + 26, rcv)
                w.mpi_recv(t + 27, peer, world, 0, 4096)
                w.leave(t + 30, rcv)
                w.enter(t + 31, ar)
                w.mpi_collective_begin(t + 32)
                w.mpi_collective_end(t + 38, CollectiveOp.ALLREDUCE, world, 0xFFFFFFFF, 8192, 8192)
                w.leave(t + 40, ar)
                w.leave(t + 41, step)
                t += 42
            w.leave(t, main)
            w.program_end(t + 1, 0)
            n += iters * PER_ITER + 4
    return n


def trace_for(n_events: int, n_loc: int) -> tuple[Path, int]:
    folder = CACHE / f"otf2-{n_events}-{n_loc}"
    meta = folder / "events.json"
    if not meta.is_file():
        import shutil

        shutil.rmtree(folder, ignore_errors=True)
        CACHE.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        n = write_trace(folder, n_events, n_loc)
        meta.write_text(json.dumps({"events": n}))
        print(
            f"wrote {n:,} events to {folder} in {time.perf_counter() - t0:.0f} s", file=sys.stderr
        )
    return folder, json.loads(meta.read_text())["events"]


# ---------------------------------------------------------------- child side
def child_main(tool: str, folder: str, out: str) -> None:
    t0 = time.perf_counter()
    if tool == "cctviz":
        import cctviz

        def work(p: Path) -> dict:
            ens = cctviz.read(p, format="otf2", progress=False)
            return {"nodes": len(ens.tree), "profiles": ens.n_profiles}
    elif tool == "otf2-iterate":
        import otf2

        def work(p: Path) -> dict:
            n = 0
            with otf2.reader.open(str(p / "traces.otf2")) as tr:
                for _loc, _ev in tr.events:
                    n += 1
            return {"events_seen": n}
    else:
        import pipit

        def work(p: Path) -> dict:
            t = pipit.Trace.from_otf2(str(p))
            return {"rows": len(t.events)}

    res: dict = {"import_s": time.perf_counter() - t0, "import_mb": _peak_mb()}
    if folder:
        t1 = time.perf_counter()
        res.update(work(Path(folder)))
        res["s"] = time.perf_counter() - t1
        res["peak_mb"] = _peak_mb()
    Path(out).write_text(json.dumps(res))


def run_child(tool: str, folder: Path | None, timeout: float) -> dict:
    py = str(PIPIT_PY) if tool == "pipit" else sys.executable
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        out = f.name
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    cmd = [py, str(HERE), "--child", tool, str(folder or ""), out]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timeout after {timeout:.0f} s"}
    try:
        if p.returncode != 0:
            tail = (p.stderr or p.stdout).strip().splitlines()[-1:] or ["?"]
            return {"error": tail[0][:160]}
        return json.loads(Path(out).read_text())
    finally:
        Path(out).unlink(missing_ok=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--events", type=int, nargs="+", default=[1_000_000, 10_000_000])
    ap.add_argument("--locations", type=int, default=8)
    ap.add_argument("--timeout", type=float, default=1800)
    args = ap.parse_args()
    tools = ["cctviz", "otf2-iterate"]
    if PIPIT_PY.is_file():
        tools.append("pipit")
    base = {t: run_child(t, None, args.timeout) for t in tools}
    print("| events | locations | tool | s | events/s | x cctviz | MB (total) |")
    print("|---:|---:|---|---:|---:|---:|---:|")
    for n in args.events:
        folder, n_ev = trace_for(n, args.locations)
        res = {t: run_child(t, folder, args.timeout) for t in tools}
        ref = res["cctviz"].get("s")
        for t in tools:
            r = res[t]
            if "error" in r or "error" in base[t]:
                why = r.get("error") or base[t].get("error")
                if t == "pipit" and "No module named 'pipit'" in str(why):
                    why = "not installed (PyPI's pipit 0.0.1 is an empty placeholder)"
                print(f"| {n_ev:,} | {args.locations} | {t} | - | - | - | {why} |")
                continue
            mb = r["peak_mb"] - base[t]["import_mb"]
            x = f"{r['s'] / ref:.2f}" if ref else "-"
            print(
                f"| {n_ev:,} | {args.locations} | {t} | {r['s']:.1f} | {n_ev / r['s']:,.0f} "
                f"| {x} | {mb:,.0f} ({r['peak_mb']:,.0f}) |"
            )
        sys.stdout.flush()


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child_main(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        main()
