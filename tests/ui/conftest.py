"""Browser fixtures: headless Chromium (Playwright), the kernel-less widget harness,
and a real JupyterLab.

- `browser` (session): Debian's Chromium with the project's flags.
- `page` (function): a fresh page in its own browser context.
- `widget_page` (function): factory `widget_page(*widgets) -> WidgetPage`, each call a
  new page; fails the test (at teardown) on console errors, page errors, dialogs
  or Python exceptions while handling front-end messages.
- `lab` (session): a JupyterLab (see lab.py) whose root holds `toywidget.py`.

Playwright's sync API keeps its asyncio loop marked as *running* in this thread
between its calls, so while a session-scoped Playwright is alive any other test in
the same process (`pytest -n 2` mixes them) would fail in `asyncio.run()` ("cannot be
called from a running event loop"). The hooks below park that mark after each test
of this folder and restore it before the next one (and before session teardown).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

import cctviz

from .harness import HarnessServer, WidgetPage, chromium_path, launch_browser

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]

_parked: list = []  # Playwright's loop while no test of this folder runs


def _park() -> None:
    loop = asyncio._get_running_loop()
    if loop is not None:
        _parked.append(loop)
        asyncio._set_running_loop(None)


def _unpark() -> None:
    if _parked:
        asyncio._set_running_loop(_parked.pop())


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item):
    _unpark()
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item, nextitem):
    _unpark()
    yield
    _park()


@pytest.fixture(scope="session")
def _playwright():
    # never skipped: a browser test skipped in CI is a test that does not exist
    from playwright import sync_api

    if chromium_path() is None:
        pytest.fail(
            "no chromium for the browser tests: `apt-get install chromium` "
            "(scripts/test.sh does it) or set CCTVIZ_CHROMIUM"
        )
    with sync_api.sync_playwright() as p:
        yield p
        _unpark()  # session teardown may run in the teardown of a test elsewhere


@pytest.fixture(scope="session")
def browser(_playwright):
    b = launch_browser(_playwright)
    yield b
    _unpark()
    b.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1000, "height": 700})
    context.set_default_timeout(15_000)
    p = context.new_page()
    yield p
    context.close()


@pytest.fixture(scope="session")
def harness_server():
    with HarnessServer() as server:
        yield server


@pytest.fixture
def widget_page(browser, harness_server):
    contexts, pages = [], []

    def make(*widgets) -> WidgetPage:
        context = browser.new_context(viewport={"width": 1000, "height": 700})
        context.set_default_timeout(15_000)
        contexts.append(context)
        wp = WidgetPage(context.new_page(), harness_server.url)
        pages.append(wp)
        for w in widgets:
            wp.show(w)
        return wp

    yield make
    try:
        for wp in pages:
            wp.check()
    finally:
        for context in contexts:
            context.close()


@pytest.fixture(scope="session")
def lab(browser):
    from .lab import JupyterLab

    server = JupyterLab(browser)
    server.write("toywidget.py", (HERE / "toywidget.py").read_text())
    yield server
    _unpark()
    server.close()


@pytest.fixture(scope="session")
def runtime_run(tmp_path_factory):
    """`cctviz run` of the bundled GPT example: one CPU rank, warm-up and 3 steps."""
    out = tmp_path_factory.mktemp("view-fixes") / "run"
    cmd = [
        sys.executable, "-m", "cctviz.cli", "run", "--standalone", "--nproc-per-node", "1",
        "--out", str(out), "--warmup", "1", str(ROOT / "examples" / "train.py"), "--steps", "3",
    ]  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONWARNINGS": "ignore"}
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env, cwd=ROOT)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-4000:]
    return cctviz.read(out)
