"""The sdist ships the built bundles and the font, so installing it needs no npm.

The sdist is built offline (``python -m build --sdist --no-isolation``, with
hatchling and hatch-jupyter-builder from the test extra) from a copy of the
checkout: the files git tracks or would (not ignored) plus the built
``cctviz/static`` (git ignores it).
Then pip builds and installs a wheel from that sdist, again offline and with no
``npm`` on PATH: the jupyter-builder hook must find every bundle and skip.
A fresh virtualenv with all dependencies would need the network and minutes;
``--no-deps --target`` checks the same packaging question in seconds.
The wheel carries the bundled sample profiles (``cctviz.examples``) with their
licences, and the installed package reads them.
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
    files = subprocess.run(  # tracked, and new files not yet committed (not ignored)
        [git, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        check=True,
        capture_output=True,
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


def _examples_files() -> list[str]:
    """Every file of cctviz/examples in the checkout, as a path in the package."""
    root = ROOT / "cctviz" / "examples"
    return sorted(
        str(p.relative_to(ROOT))
        for p in root.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    )


def test_the_wheel_ships_the_examples_and_reads_them(sdist, tmp_path):
    """Built from the sdist (as pip does), the wheel holds every sample and its
    licence, and an install of it reads them with no checkout around."""
    import zipfile

    env = {**os.environ, "PATH": str(Path(sys.executable).parent)}
    wheels = tmp_path / "wheels"
    run = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-index"]
        + ["--no-build-isolation", "--wheel-dir", str(wheels), str(sdist)],
        env=env,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    (wheel,) = wheels.glob("cctviz-*.whl")
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
    want = _examples_files()
    assert "cctviz/examples/__init__.py" in want
    assert any(n.endswith("/LICENSE") for n in want)
    assert not [n for n in want if n not in names], "examples missing from the wheel"
    # the project's licence in the dist-info, the font's beside the font
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names), sorted(names)[-8:]
    assert "cctviz/fonts/LICENSE" in names
    with tarfile.open(sdist) as tar:
        in_sdist = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    assert not [n for n in want if n not in in_sdist], "examples missing from the sdist"

    site = tmp_path / "site"
    run = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index"]
        + ["--target", str(site), str(wheel)],
        env=env,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    check = (
        "import cctviz, cctviz.examples as e\n"
        "assert cctviz.__file__.startswith(SITE), cctviz.__file__\n"
        "for name in e.SAMPLES:\n"
        "    assert e.licence(name).is_file(), name\n"
        "    if not e.sample(name).needs:\n"
        "        cctviz.read(e.path(name))\n"
        "print(len(e.available()), 'samples')\n"
        # a figure for a paper from the installed wheel alone: no node, no browser
        "from cctviz.export import save\n"
        "save(cctviz.CCTView(cctviz.read(e.path('kripke-hpctoolkit'))), 'fig.svg')\n"
        "svg = open('fig.svg', encoding='utf-8').read()\n"
        "assert svg.lstrip().startswith('<svg') or '<svg' in svg[:400], svg[:200]\n"
        "print('exported', len(svg), 'bytes')\n"
    ).replace("SITE", repr(str(site)))
    run = subprocess.run(
        [sys.executable, "-c", check],
        env={**env, "PYTHONPATH": str(site)},
        cwd=tmp_path,  # no checkout around
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    from cctviz import examples

    assert f"{len(examples.SAMPLES)} samples" in run.stdout
    assert "exported" in run.stdout and not shutil.which("node", path=env["PATH"])
