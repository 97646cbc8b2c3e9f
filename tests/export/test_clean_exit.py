"""A process that exported a figure exits cleanly, however it ends.

mini-racer initialises V8 on the thread of its first call; a context made there
and freed from another thread after that one ended crashed the process in
``mr_free_context`` (exit code 139 after a correct SVG, every time, on the
Hatchet literal file). These tests run real exports of real files in fresh
processes, many times over, and end them every way a user's process ends: a
normal exit, ``sys.exit``, an uncaught exception, a pytest-xdist worker, and a
Jupyter kernel shut down and restarted.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from ..conftest import DATA, ROOT

pytestmark = pytest.mark.slow

#: (file, suffix) pairs: ten formats, four export formats, 20 processes in all
CASES = [
    ("hatchet/json/hatchet-graph-literal.json", "svg"),
    ("hatchet/json/hatchet-graph-literal.json", "pdf"),
    ("hatchet/json/hatchet-graph-literal.json", "png"),
    ("hatchet/json/hatchet-graph-literal.json", "html"),
    ("hatchet/caliper-lulesh-json/lulesh-annotation-profile.json", "svg"),
    ("hatchet/caliper-lulesh-json/lulesh-annotation-profile.json", "png"),
    ("hatchet/cprofile-hatchet-pstats/cprofile-cycle.pstats", "svg"),
    ("hatchet/cprofile-hatchet-pstats/cprofile-cycle.pstats", "pdf"),
    ("hatchet/pyinstrument-hatchet-json", "svg"),
    ("hatchet/pyinstrument-hatchet-json", "html"),
    ("hatchet/tau-cpi-mpi", "svg"),
    ("hatchet/tau-cpi-mpi", "pdf"),
    ("pipit/ping-pong-otf2", "svg"),
    ("pipit/ping-pong-otf2", "png"),
    ("scorep-cube/call_tree_test/call_tree_test.cubex", "svg"),
    ("scorep-cube/call_tree_test/call_tree_test.cubex", "html"),
    ("hatchet/gprof2dot-cpi/callgrind.dot.64042.0.1", "svg"),
    ("hatchet/timemory", "pdf"),
    ("kineto/hta_call_stack_backward_thread.json", "svg"),
    ("kineto/hta_call_stack_backward_thread.json", "png"),
]

ENV = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONFAULTHANDLER": "1"}


def _python(code: str, *args: str, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        env=ENV,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _died(rc: int) -> str:
    """'' when ``rc`` is an exit code, else what killed the process."""
    if rc < 0:
        return f"killed by {signal.Signals(-rc).name}"
    if rc > 128 and rc - 128 in {s.value for s in signal.Signals}:
        return f"died of {signal.Signals(rc - 128).name} (exit code {rc})"
    return ""


EXPORT = """
import sys
from cctviz.cli import main
sys.exit(main(["export", sys.argv[1], "-o", sys.argv[2]]))
"""


def test_twenty_processes_export_and_exit_0(tmp_path):
    formats = {Path(f).parts[0] + "/" + Path(f).parts[1] for f, _ in CASES}
    assert len(formats) >= 6 and {s for _, s in CASES} == {"svg", "pdf", "png", "html"}

    def one(i_case):
        i, (rel, suffix) = i_case
        out = tmp_path / f"fig{i}.{suffix}"
        return rel, out, _python(EXPORT, str(DATA / rel), str(out))

    with ThreadPoolExecutor(2) as pool:
        runs = list(pool.map(one, enumerate(CASES)))
    bad = [
        f"{rel} -> {out.suffix}: rc {run.returncode} {_died(run.returncode)}\n{run.stderr[-800:]}"
        for rel, out, run in runs
        if run.returncode != 0
    ]
    assert not bad, "\n\n".join(bad)
    for _, out, _ in runs:
        assert out.stat().st_size > 500, out


@pytest.mark.parametrize(
    ("ending", "want_rc"),
    [("return", 0), ("sys.exit(0)", 0), ("sys.exit(3)", 3), ("raise RuntimeError('late')", 1)],
)
def test_every_way_a_script_ends(tmp_path, ending, want_rc):
    """Two views, three exports each, then the script ends so: the exit code is the
    script's own, never a signal's."""
    code = f"""
    import sys
    import cctviz
    def main():
        t = cctviz.read(sys.argv[1])
        ens = cctviz.read(sys.argv[2])
        for i, view in enumerate([cctviz.CCTView(t), cctviz.SankeyView(ens)]):
            for suffix in ("svg", "pdf", "png"):
                view.save(sys.argv[3] + f"/v{{i}}.{{suffix}}")
        {ending}
    main()
    """
    run = _python(
        code,
        str(DATA / "hatchet/json/hatchet-graph-literal.json"),
        str(DATA / "hatchet/caliper-lulesh-json/lulesh-annotation-profile.json"),
        str(tmp_path),
    )
    assert run.returncode == want_rc, f"{_died(run.returncode)}\n{run.stderr[-1500:]}"
    assert len(list(tmp_path.glob("v*.*"))) == 6
    if want_rc == 1:
        assert "RuntimeError: late" in run.stderr and "Fatal Python error" not in run.stderr


def test_an_engine_used_from_threads_that_ended(tmp_path):
    """Engines made and used from short-lived threads (a thread pool shut down
    before exit): the process still exits 0."""
    code = """
    import sys, concurrent.futures
    import cctviz
    from cctviz.export import engine
    t = cctviz.read(sys.argv[1])
    def draw(_):
        return len(cctviz.CCTView(t).save(sys.argv[2]).read_bytes())
    with concurrent.futures.ThreadPoolExecutor(3) as pool:
        sizes = list(pool.map(draw, range(6)))
    assert len(set(sizes)) == 1
    mine = engine.Engine(engine.EXPORT_BUNDLE)  # a second context, closed at exit
    dropped = engine.Engine(engine.EXPORT_BUNDLE)  # one left to the garbage collector
    assert "<svg" in dropped.render_svg(cctviz.export.payload(cctviz.CCTView(t)))
    del dropped
    import gc; gc.collect()
    """
    run = _python(
        code, str(DATA / "hatchet/json/hatchet-graph-literal.json"), str(tmp_path / "a.svg")
    )
    assert run.returncode == 0, f"{_died(run.returncode)}\n{run.stderr[-1500:]}"


def test_a_pytest_worker_that_exported_exits_cleanly(tmp_path):
    """pytest-xdist workers that exported: no 'worker crashed', exit 0."""
    (tmp_path / "test_exports.py").write_text(
        textwrap.dedent(
            f"""
            import pytest, cctviz
            FILE = {str(DATA / "hatchet/json/hatchet-graph-literal.json")!r}

            @pytest.mark.parametrize("suffix", ["svg", "pdf", "png", "html"])
            def test_export(tmp_path, suffix):
                out = cctviz.CCTView(cctviz.read(FILE)).save(tmp_path / ("f." + suffix))
                assert out.stat().st_size > 500
            """
        )
    )
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "2", "-p", "no:cacheprovider", "-q", str(tmp_path)],
        cwd=tmp_path,
        env=ENV,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-1000:]
    assert "4 passed" in run.stdout and "crashed" not in run.stdout


@pytest.mark.parametrize("how", ["shutdown", "restart"])
def test_a_jupyter_kernel_that_exported_stops_cleanly(tmp_path, how):
    """A kernel that exported, shut down (or restarted) as JupyterLab does it:
    the kernel process exits 0 and the restarted kernel exports again."""
    from jupyter_client.manager import KernelManager

    km = KernelManager(kernel_name="python3")
    km.start_kernel(env=ENV, cwd=str(tmp_path))
    try:
        kc = km.client()
        kc.start_channels()
        kc.wait_for_ready(timeout=120)
        code = (
            "import cctviz\n"
            f"v = cctviz.CCTView(cctviz.read({str(DATA / 'hatchet/json/hatchet-graph-literal.json')!r}))\n"
            "print(sum(v.save(f'k.{s}').stat().st_size > 500 for s in ('svg', 'pdf', 'png')))"
        )

        def export_in_kernel() -> str:
            out: list[str] = []
            reply = kc.execute_interactive(
                code,
                timeout=120,
                output_hook=lambda m: out.append(m["content"].get("text", "")),
            )
            assert reply["content"]["status"] == "ok", reply["content"]
            return "".join(out).strip()

        assert export_in_kernel() == "3"
        proc = km.provisioner.process  # the kernel's Popen
        if how == "shutdown":
            kc.stop_channels()
            km.shutdown_kernel(now=False)  # a shutdown_request, as the UI sends
            assert proc.wait(timeout=60) == 0, _died(proc.returncode)
        else:
            km.restart_kernel(now=False)
            assert proc.wait(timeout=60) == 0, _died(proc.returncode)
            kc.stop_channels()
            kc = km.client()
            kc.start_channels()
            kc.wait_for_ready(timeout=120)
            assert export_in_kernel() == "3"
            kc.stop_channels()
    finally:
        if km.has_kernel:
            km.shutdown_kernel(now=True)
