"""The layering of docs/architecture.md section 1 holds, and the import-linter contract that checks it bites.

The contract is ``[tool.importlinter]`` in pyproject.toml (with the contract type of
:mod:`tests.layering`); scripts/test.sh runs ``lint-imports`` on the real tree. Here it
also runs on temporary copies of the package with one upward import slipped in, each of
which must break it.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT = "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"


def lint(where: Path) -> subprocess.CompletedProcess:
    """``lint-imports`` run in ``where``, on the cctviz package found there."""
    env = {**os.environ, "PYTHONPATH": str(where)}
    return subprocess.run(
        [sys.executable, "-c", LINT, "--no-cache", "--no-logo"],
        cwd=where,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def copy_tree(dst: Path) -> Path:
    """What lint-imports needs: the package, pyproject.toml and the contract type."""
    shutil.copytree(
        ROOT / "cctviz", dst / "cctviz", ignore=shutil.ignore_patterns("__pycache__", "static")
    )
    shutil.copy(ROOT / "pyproject.toml", dst)
    (dst / "tests").mkdir()
    for name in ("__init__.py", "layering.py"):
        shutil.copy(ROOT / "tests" / name, dst / "tests" / name)
    return dst


def add_module_level_import(path: Path, statement: str) -> None:
    text = path.read_text()
    anchor = "from __future__ import annotations\n"
    assert anchor in text, f"{path}: no place to add an import"
    path.write_text(text.replace(anchor, f"{anchor}\n{statement}\n", 1))


def test_contract_is_kept_on_the_real_tree():
    p = lint(ROOT)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "3 kept, 0 broken" in p.stdout


# (file in cctviz/, statement added at module level, what the report must say)
VIOLATIONS = {
    "model imports views": (
        "model/nodeset.py",
        "import cctviz.views",
        "cctviz.model is not allowed to import cctviz.views",
    ),
    "a facade import moved to module level": (
        "model/tree.py",
        "from ..ops.query import apply_query",
        "cctviz.model.tree -> cctviz.ops.query (l.",
    ),
    "a reader imports the runtime": (
        "readers/cctviz_run.py",
        "from ..runtime.runfolder import update_run_file",
        "cctviz.readers is not allowed to import cctviz.runtime",
    ),
    "a reader imports a writer": (
        "readers/native.py",
        "from ..writers.native import write_native",
        "cctviz.readers is not allowed to import cctviz.writers",
    ),
    "a reader imports another reader": (
        "readers/cali.py",
        "from .caliper_json import read_caliper_json",
        "cctviz.readers.cali -> cctviz.readers.caliper_json (l.",
    ),
    "ops import the model's facade package": (
        "ops/diff.py",
        "import cctviz",
        "cctviz.ops.diff is not allowed to import cctviz",
    ),
}


@pytest.mark.parametrize("case", sorted(VIOLATIONS))
def test_contract_breaks_on_a_new_upward_import(tmp_path, case):
    where = copy_tree(tmp_path)
    ok = lint(where)
    assert ok.returncode == 0, ok.stdout + ok.stderr  # the copy itself passes
    rel, statement, message = VIOLATIONS[case]
    add_module_level_import(where / "cctviz" / rel, statement)
    p = lint(where)
    assert p.returncode != 0
    assert "BROKEN" in p.stdout and message in p.stdout, p.stdout + p.stderr


def test_function_level_allowance_covers_functions_only(tmp_path):
    # the same upward import inside a new function is allowed; the report names no line
    where = copy_tree(tmp_path)
    tree = where / "cctviz" / "model" / "tree.py"
    tree.write_text(tree.read_text() + "\n\ndef _q():\n    from ..ops.query import apply_query\n")
    p = lint(where)
    assert p.returncode == 0, p.stdout + p.stderr


def test_contract_breaks_on_an_unplaced_subpackage(tmp_path):
    where = copy_tree(tmp_path)
    (where / "cctviz" / "unplaced").mkdir()
    (where / "cctviz" / "unplaced" / "__init__.py").write_text('"""Not in any layer."""\n')
    p = lint(where)
    assert p.returncode != 0
    assert "not listed as layers" in p.stdout and "cctviz.unplaced" in p.stdout, p.stdout


def test_contract_breaks_on_a_stale_function_level_entry(tmp_path):
    where = copy_tree(tmp_path)
    cfg = where / "pyproject.toml"
    entry = '  "cctviz.model.tree -> cctviz.ops.diff",\n'
    assert entry in cfg.read_text()
    cfg.write_text(
        cfg.read_text().replace(entry, entry + '  "cctviz.model.nodeset -> cctviz.views",\n')
    )
    p = lint(where)
    assert p.returncode != 0
    assert "match no import" in p.stdout and "cctviz.model.nodeset -> cctviz.views" in p.stdout


def test_function_level_import_lines_sees_functions_only():
    from tests.layering import function_level_import_lines

    lines = function_level_import_lines("cctviz.model.tree")
    src = (ROOT / "cctviz" / "model" / "tree.py").read_text()
    body = ast.parse(src).body
    module_level = {n.lineno for n in body if isinstance(n, (ast.Import, ast.ImportFrom))}
    in_functions = {
        k + 1 for k, s in enumerate(src.splitlines()) if s.strip().startswith("from ..ops.query")
    }
    assert module_level and not (lines & module_level)
    assert in_functions and in_functions <= lines


@pytest.mark.parametrize("module", ["cctviz.readers", "cctviz.writers", "cctviz"])
def test_reading_imports_neither_runtime_nor_torch_nor_views(module):
    code = (
        f"import sys, {module}; "
        "print(sorted(m for m in sys.modules if m == 'torch' or m.startswith"
        "(('cctviz.runtime', 'cctviz.views', 'torch.'))))"
    )
    p = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        cwd=ROOT,
    )
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "[]"
