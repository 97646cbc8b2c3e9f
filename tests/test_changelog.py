"""CHANGELOG.md keeps up with the package: its newest section is the version
pyproject.toml and cctviz.__version__ say, and each deprecated name the code
warns about is listed with the version that removes it."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import cctviz

ROOT = Path(__file__).resolve().parents[1]
CHANGELOG = (ROOT / "CHANGELOG.md").read_text()


def test_the_newest_section_is_this_version():
    pyproject = re.search(r'^version = "(.+)"$', (ROOT / "pyproject.toml").read_text(), re.M)
    newest = re.search(r"^## (\S+)", CHANGELOG, re.M).group(1)
    assert newest == pyproject.group(1) == cctviz.__version__


def test_each_deprecation_is_listed_with_its_removal():
    tree = cctviz.Tree.from_parents([-1, 0], ["main", "solve"], {"time": [1.0, 2.0]})
    ens = cctviz.Ensemble.from_trees([tree, tree])
    view = cctviz.CCTView(tree)
    caught = []
    for get in (lambda: ens.rows, lambda: ens.data, lambda: view.data):
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            get()
        caught += [str(w.message) for w in said if issubclass(w.category, DeprecationWarning)]
    for make in (lambda: cctviz.ProfilesView(ensemble=ens),):
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            make()
        caught += [str(w.message) for w in said if issubclass(w.category, DeprecationWarning)]
    assert len(caught) == 4
    for message in caught:
        old = re.match(r"(\w+\.\w+|\w+\(\w+=\.\.\.\)) is renamed", message).group(1)
        removed = re.search(r"removed in (\S+)$", message).group(1)
        listed = "View.data" if old.endswith(".data") and not old.startswith("Ensemble") else old
        line = next((ln for ln in CHANGELOG.splitlines() if f"`{listed}`" in ln), "")
        assert line, f"{old} is not in CHANGELOG.md"
        assert f"Deprecated (removed in {removed})" in CHANGELOG
