"""The sdist ships the built bundles and the font, so installing it needs no npm.

The sdist is built offline (``python -m build --sdist --no-isolation``, with
hatchling and hatch-jupyter-builder from the test extra) from a copy of the
checkout: the tracked files plus the built ``cctviz/static`` (git ignores it).
Then pip builds and installs a wheel from that sdist, again offline and with no
``npm`` on PATH: the jupyter-builder hook must find every bundle and skip.
A fresh virtualenv with all dependencies would need the network and minutes;
``--no-deps --target`` checks the same packaging question in seconds.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from tests.export.conftest import ORIGINAL_PATH, ROOT

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    from pip._vendor import tomli as tomllib

BUNDLES = ["cctviz.js", "cctviz.css", "cctviz-export.js", "cctviz-standalone.js"]
FONTS = ["LiberationSans-Regular.ttf", "LiberationSans-Bold.ttf"]


def test_the_build_hook_skips_only_when_every_bundle_exists():
    conf = tomllib.loads((ROOT / "pyproject.toml").read_text())
    hook = conf["tool"]["hatch"]["build"]["hooks"]["jupyter-builder"]
    want = sorted(f"cctviz/static/{b}" for b in BUNDLES)
    assert sorted(hook["skip-if-exists"]) == want
    assert sorted(hook["ensured-targets"]) == want
    sdist = conf["tool"]["hatch"]["build"]["targets"]["sdist"]
    assert "cctviz/static" not in sdist.get("exclude", [])
    assert {"cctviz/static/*", "cctviz/fonts/*"} <= set(sdist["artifacts"])


def _checkout_copy(dest: Path) -> Path:
    git = shutil.which("git", path=ORIGINAL_PATH)
    assert git, "git is needed to list the checkout's files"
    files = subprocess.run(
        [git, "ls-files", "-z"], cwd=ROOT, check=True, capture_output=True
    ).stdout.split(b"\0")
    for rel in filter(None, (f.decode() for f in files)):
        src = ROOT / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    for folder in ("cctviz/static", "cctviz/fonts"):
        if (ROOT / folder).is_dir():
            shutil.copytree(ROOT / folder, dest / folder, dirs_exist_ok=True)
    return dest


@pytest.fixture(scope="module")
def sdist(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("sdist")
    src = _checkout_copy(base / "src")
    env = {**os.environ, "PATH": str(Path(sys.executable).parent)}  # no npm, no node
    env.pop("SKIP_JUPYTER_BUILDER", None)
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "build",
            "--sdist",
            "--no-isolation",
            "--outdir",
            str(base / "dist"),
        ],
        cwd=src,
        env=env,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    (out,) = (base / "dist").glob("cctviz-*.tar.gz")
    return out


def test_sdist_holds_the_bundles_and_the_font(sdist):
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    for b in BUNDLES:
        assert f"cctviz/static/{b}" in names
    for f in FONTS:
        assert f"cctviz/fonts/{f}" in names
    assert {"js/index.js", "package.json", "package-lock.json", "pyproject.toml"} <= names
    assert not any(n.startswith(("node_modules/", ".venv/")) for n in names)


def test_installing_the_sdist_needs_no_npm(sdist, tmp_path):
    assert shutil.which("npm") is None and shutil.which("node") is None
    site = tmp_path / "site"
    env = {**os.environ, "PATH": str(Path(sys.executable).parent)}
    run = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index"]
        + ["--no-build-isolation", "--target", str(site), str(sdist)],
        env=env,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    for b in BUNDLES:
        assert (site / "cctviz" / "static" / b).is_file()
    for f in FONTS:
        assert (site / "cctviz" / "fonts" / f).is_file()
    assert (site / "cctviz" / "export" / "engine.py").is_file()
