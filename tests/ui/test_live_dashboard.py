"""The live dashboard in a real JupyterLab while a real traced gloo job runs
(issue 38): the status, the tree, the flow and the timeline's newest seconds
follow the run; a selection is shared and kept."""

from __future__ import annotations

import re
import time
from pathlib import Path

from .test_view_fixes import shoot

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "train.py"
STATUS = ".cctviz-live-status"


def step_of(text: str) -> int:
    m = re.search(r"step (\d+)", text)
    return int(m.group(1)) if m else -1


def test_dashboard_updates_while_the_job_runs(lab, tmp_path):
    out, trace = tmp_path / "run", tmp_path / "trace"
    cells = [
        "import os, subprocess, sys, cctviz\n"
        f"cmd = [sys.executable, '-m', 'cctviz.cli', 'run', '--standalone', '--nproc-per-node',"
        f" '2', '--out', {str(out)!r}, '--flush', '0.5', '--trace', {str(trace)!r},"
        f" {str(EXAMPLE)!r}, '--steps', '400']\n"
        "job = subprocess.Popen(cmd, env={**os.environ, 'OMP_NUM_THREADS': '1'},"
        " stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)",
        "w = cctviz.watch(" + repr(str(out)) + ", wait=120)\nd = w.dashboard(last=3)\nd",
    ]
    with lab.open_notebook(cells) as nb:
        try:
            nb.run_all()
            page = nb.page
            status = page.locator(STATUS)
            status.wait_for()
            page.locator(".cctviz-cct svg").first.wait_for()
            first = status.inner_text()
            deadline = time.monotonic() + 60
            while step_of(status.inner_text()) <= step_of(first) or step_of(first) < 0:
                assert time.monotonic() < deadline, f"the status stayed {first!r}"
                if step_of(first) < 0:
                    first = status.inner_text()
                time.sleep(0.5)
            later = status.inner_text()
            assert later.startswith("2 ranks, running") and step_of(later) > step_of(first) >= 0
            # the tree view shows the run's contexts as they come, the Sankey their flow
            assert page.locator(".cctviz-cct").get_by_text("blocks.0").count() >= 1
            page.locator(".cctviz-sankey svg.cctviz-sankey-fig").first.wait_for()
            # linked: a selection from Python shows in both, and stays as the data grows
            nb.kernel_eval("d.cct.selection = d.cct.tree.query([{'name': 'blocks.1'}])")
            picked = nb.kernel_eval("print(len(d.sankey.selection.ids), d.sankey.selected_groups)")
            assert not picked.startswith("0 "), picked
            refreshed = int(nb.kernel_eval("print(d.refreshes)"))
            deadline = time.monotonic() + 30
            while int(nb.kernel_eval("print(d.refreshes)")) == refreshed:
                assert time.monotonic() < deadline, "no refresh after the selection"
                time.sleep(0.5)
            kept = nb.kernel_eval("print(d.sankey.selection.ids.size, d.cct.selection.ids.size)")
            assert kept.split()[0] == kept.split()[1] != "0", kept
            assert int(nb.kernel_eval("print(d.refreshes)")) >= 2
            # the timeline: both ranks, its newest 3 s, drawn again as it grows; the
            # tree shows that window (what the link scopes it to)
            drawn = page.locator("div.cctviz-timeline[data-rendered]").first
            drawn.wait_for()
            before = int(drawn.get_attribute("data-rendered"))
            deadline = time.monotonic() + 30
            while int(drawn.get_attribute("data-rendered")) <= before:
                assert time.monotonic() < deadline, "the timeline was not drawn again"
                time.sleep(0.5)
            said = nb.kernel_eval(
                "with d._refreshing:\n"
                "    w0, w1 = d.timeline.window\n"
                "    shown = d.cct.shown.values('time').sum()\n"
                "    window = d.timeline.brushed_timeline().ensemble().values('time').sum()\n"
                "    print(len(d.timeline.lanes), round(w1 - w0, 6), shown == window > 0)"
            )
            assert said.split() == ["2", "3.0", "True"], said
            assert page.locator(".cctviz-timeline text.cctviz-lane-label").count() == 2
            shoot(page, "live-dashboard")
            shoot(page.locator("div.cctviz-timeline").first, "live-dashboard-timeline")
        finally:
            # the launcher and the ranks it started: their process group
            nb.kernel_eval(
                "import signal; os.killpg(job.pid, signal.SIGKILL); job.wait(); d.close()"
            )
