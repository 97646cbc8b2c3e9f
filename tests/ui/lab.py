"""A real JupyterLab for end-to-end widget tests (after ../shared/recipes/jupyterlab_e2e.py).

The server runs this interpreter (`sys.executable -m jupyter lab`) on 127.0.0.1 with an
empty token and `--LabApp.expose_app_in_browser=True` (gives `window.jupyterapp`),
in a temporary root, with Jupyter's config/data/runtime/settings/workspace folders
isolated in a sibling temporary folder. Notebooks carry the kernelspec "python3",
which jupyter_client launches with the server's `sys.executable`, i.e. this venv.

JupyterLab only: Notebook 7 (the `notebook` package, `/notebooks/...` pages) is not
a test dependency, so the widgets are not checked there.

Usage (the session-scoped `lab` fixture from tests/ui/conftest.py)::

    with lab.open_notebook(["from toywidget import Toy", "w = Toy()\\nw"]) as nb:
        nb.run_all()
        nb.page.locator(".toy button.inc").click()
        assert nb.kernel_wait("print(w.count)", "1") == "1"
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import nbformat

# Finds the notebook panel of `path` in the page's JupyterLab.
_FIND = """
  const app = window.jupyterapp;
  const find = (path) => [...app.shell.widgets("main")].find(
    (w) => w.context && w.context.path === path && w.sessionContext);
  // a code cell's error outputs, or that it did not run
  const cellErrors = (cell, what) => {
    const errors = [];
    for (const out of cell.model.outputs.toJSON()) {
      if (out.output_type === "error")
        errors.push(`${what}: ${out.ename}: ${out.evalue}\\n${out.traceback.join("\\n")}`);
    }
    if (!errors.length && cell.model.executionCount === null) errors.push(`${what} did not run`);
    return errors;
  };
"""


class CellError(AssertionError):
    """A cell or a kernel_eval raised in the kernel."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class JupyterLab:
    """A JupyterLab server plus a Playwright browser to open notebooks in."""

    def __init__(self, browser: Any, root: Path | None = None, startup_timeout: float = 90) -> None:
        self.browser = browser
        self._tmp = Path(tempfile.mkdtemp(prefix="cctviz-lab-"))
        self.root = Path(root) if root is not None else self._tmp / "root"
        self.root.mkdir(parents=True, exist_ok=True)
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._names = itertools.count(1)
        self._open: list[LabNotebook] = []
        self.proc = self._start(startup_timeout)

    def _start(self, timeout: float) -> subprocess.Popen:
        state = self._tmp / "state"
        env = dict(os.environ)
        for var, sub in [
            ("JUPYTER_CONFIG_DIR", "config"),
            ("JUPYTER_DATA_DIR", "data"),
            ("JUPYTER_RUNTIME_DIR", "runtime"),
            ("JUPYTERLAB_SETTINGS_DIR", "settings"),
            ("JUPYTERLAB_WORKSPACES_DIR", "workspaces"),
        ]:
            (state / sub).mkdir(parents=True, exist_ok=True)
            env[var] = str(state / sub)
        # No news/update toasts over the widgets (and no network requests).
        settings = state / "settings" / "@jupyterlab" / "apputils-extension"
        settings.mkdir(parents=True, exist_ok=True)
        (settings / "notification.jupyterlab-settings").write_text(
            json.dumps({"checkForUpdates": False, "fetchNews": "false", "doNotDisturbMode": True})
        )
        env["PYTHONUNBUFFERED"] = "1"
        cmd = [
            sys.executable,
            "-m",
            "jupyterlab",  # not `jupyter lab`: that execs a script whose shebang says python3
            "--no-browser",
            "--allow-root",
            f"--port={self.port}",
            "--ServerApp.port_retries=0",
            "--ServerApp.ip=127.0.0.1",
            "--IdentityProvider.token=",
            "--ServerApp.password=",
            "--ServerApp.disable_check_xsrf=True",
            "--LabApp.expose_app_in_browser=True",
            "--JupyterNotebookApp.expose_app_in_browser=True",  # Notebook 7's pages
            f"--ServerApp.root_dir={self.root}",
        ]
        self.log_path = self._tmp / "lab.log"
        with open(self.log_path, "w") as log:
            proc = subprocess.Popen(
                cmd, cwd=self.root, env=env, stdout=log, stderr=subprocess.STDOUT
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                break
            try:
                urllib.request.urlopen(f"{self.url}/api/status", timeout=1)
                return proc
            except OSError:
                time.sleep(0.25)
        proc.kill()
        proc.wait()
        raise RuntimeError(f"JupyterLab did not start:\n{self.log()}")

    def log(self) -> str:
        """The server's log so far (for failure messages)."""
        return self.log_path.read_text(errors="replace")

    def write(self, name: str, text: str) -> Path:
        """Write a file into the lab root (e.g. a module the kernel imports)."""
        path = self.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path

    def open_notebook(
        self, path_or_cells: str | Path | list, timeout: float = 90_000, ui: str = "lab"
    ):
        """Open a notebook in a fresh page and wait for its kernel to be ready.

        `path_or_cells`: a path of a notebook in the root (relative), a notebook
        anywhere (copied into the root), or a list of cell sources/nbformat cells.
        `ui`: "lab" (JupyterLab) or "notebook" (Notebook 7's one-notebook page,
        served by the same server).
        """
        n = next(self._names)
        if isinstance(path_or_cells, (list, tuple)):
            nb = nbformat.v4.new_notebook()
            nb.cells = [
                nbformat.v4.new_code_cell(c) if isinstance(c, str) else c for c in path_or_cells
            ]
            rel = f"nb{n}.ipynb"
        else:
            src = Path(path_or_cells)
            if not src.is_absolute() and (self.root / src).exists():
                src = self.root / src
            nb = nbformat.read(src, as_version=4)
            rel = str(src.relative_to(self.root)) if src.is_relative_to(self.root) else src.name
        # The kernelspec avoids the "Select Kernel" dialog; python3 is this venv.
        nb.metadata["kernelspec"] = {
            "name": "python3",
            "display_name": "Python 3",
            "language": "python",
        }
        nbformat.write(nb, self.root / rel)

        context = self.browser.new_context(viewport={"width": 1280, "height": 900})
        page = context.new_page()
        notebook = LabNotebook(self, page, rel)
        self._open.append(notebook)
        # A fresh workspace per page: nothing restored from earlier tests.
        if ui == "notebook":
            page.goto(f"{self.url}/notebooks/{rel}")
        else:
            page.goto(f"{self.url}/lab/workspaces/w{n}/tree/{rel}")
        page.wait_for_function("() => window.jupyterapp !== undefined", timeout=timeout)
        page.evaluate(
            """async (path) => {"""
            + _FIND
            + """
              await app.restored;
              let nb = find(path);
              for (let i = 0; !nb && i < 100; i++) {
                await new Promise((r) => setTimeout(r, 100));
                nb = find(path);
              }
              if (!nb) nb = await app.commands.execute("docmanager:open", {path, factory: "Notebook"});
              app.shell.activateById(nb.id);
              await nb.context.ready;
              await nb.sessionContext.ready;
              const kernel = nb.sessionContext.session && nb.sessionContext.session.kernel;
              if (!kernel) throw new Error("no kernel for " + path);
              await kernel.info;
            }""",
            rel,
        )
        return notebook

    def close(self) -> None:
        """Close open notebooks (shutting their kernels down), then stop the server."""
        for nb in list(self._open):
            try:
                nb.close()
            except Exception:  # noqa: BLE001 - teardown keeps going
                pass
        if self.proc.poll() is None:
            self.proc.terminate()  # SIGTERM: the server shuts its kernels down
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self._tmp, ignore_errors=True)


class LabNotebook:
    """One notebook open in its own page (browser context) of a JupyterLab."""

    def __init__(self, lab: JupyterLab, page: Any, path: str) -> None:
        self.lab = lab
        self.page = page
        self.path = path

    def run_all(self, timeout: float = 120_000) -> None:
        """Run all cells and wait for them; raise CellError on an error output."""
        self.page.set_default_timeout(timeout)
        errors = self.page.evaluate(
            """async (path) => {"""
            + _FIND
            + """
              const nb = find(path);
              app.shell.activateById(nb.id);
              await app.commands.execute("notebook:run-all-cells");
              const errors = [];
              nb.content.widgets.forEach((cell, i) => {
                if (cell.model.type === "code") errors.push(...cellErrors(cell, `cell ${i}`));
              });
              return errors;
            }""",
            self.path,
        )
        if errors:
            raise CellError("\n".join(errors))

    def run_cell(self, source: str, timeout: float = 120_000) -> None:
        """Append a code cell with `source` to the notebook, run it and wait for it;
        raise CellError on an error output (e.g. to display a widget once more)."""
        self.page.set_default_timeout(timeout)
        errors = self.page.evaluate(
            """async ([path, source]) => {"""
            + _FIND
            + """
              const nb = find(path);
              app.shell.activateById(nb.id);
              const model = nb.content.model;
              model.sharedModel.insertCell(model.cells.length, {cell_type: "code", source});
              nb.content.activeCellIndex = model.cells.length - 1;
              await app.commands.execute("notebook:run-cell");
              return cellErrors(nb.content.widgets[model.cells.length - 1], "the cell");
            }""",
            [self.path, source],
        )
        if errors:
            raise CellError("\n".join(errors))

    def set_theme(self, theme: str, timeout: float = 30_000) -> None:
        """Switch JupyterLab's theme ("JupyterLab Dark", "JupyterLab Light") and wait
        until the page wears it. The choice is a user setting: it outlives the page."""
        self.page.evaluate(
            "async (theme) => { await window.jupyterapp.commands.execute("
            "'apputils:change-theme', {theme}); }",
            theme,
        )
        self.page.wait_for_function(
            "(theme) => document.body.dataset.jpThemeName === theme",
            arg=theme,
            timeout=timeout,
        )

    def kernel_eval(self, code: str) -> str:
        """Run `code` in this notebook's kernel (not in a cell); return its stdout."""
        result = self.page.evaluate(
            """async ([path, code]) => {"""
            + _FIND
            + """
              const kernel = find(path).sessionContext.session.kernel;
              let out = "", err = null;
              const future = kernel.requestExecute({code, store_history: false});
              future.onIOPub = (msg) => {
                const t = msg.header.msg_type;
                if (t === "stream" && msg.content.name === "stdout") out += msg.content.text;
                if (t === "error") err = `${msg.content.ename}: ${msg.content.evalue}\\n` +
                  msg.content.traceback.join("\\n");
              };
              const reply = await future.done;
              if (reply.content.status !== "ok" && !err) err = reply.content.status;
              return {out, err};
            }""",
            [self.path, code],
        )
        if result["err"]:
            raise CellError(result["err"])
        return result["out"]

    def kernel_wait(self, code: str, expected: str, timeout: float = 30) -> str:
        """Re-run `code` until its stripped stdout is `expected`.

        Front-end updates reach the kernel asynchronously (ipywidgets sends one
        message at a time and buffers the rest until the kernel is idle), so a
        value clicked in the page may not be in the kernel yet.
        """
        deadline = time.monotonic() + timeout
        while True:
            out = self.kernel_eval(code).strip()
            if out == expected or time.monotonic() > deadline:
                return out
            time.sleep(0.1)

    def close(self) -> None:
        """Shut the kernel down and close the page."""
        if self in self.lab._open:
            self.lab._open.remove(self)
        try:
            if not self.page.is_closed():
                self.page.evaluate(
                    "async (path) => {" + _FIND + "await find(path)?.sessionContext.shutdown(); }",
                    self.path,
                )
        finally:
            self.page.context.close()

    def __enter__(self) -> LabNotebook:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
