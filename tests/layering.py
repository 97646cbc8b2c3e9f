"""An import-linter contract type for cctviz's layers (configured in pyproject.toml).

``layers_with_function_level_imports`` is import-linter's ``layers`` contract
plus one option, ``function_level_imports``: import expressions that may go
upwards *only inside a function body*. The model's methods are a thin facade
over the layers above it (``Tree.query`` imports ``cctviz.ops.query`` when it
is called, ``Tree.write`` the writers); such an import runs at call time, when
every layer is loaded, so it creates no import-time dependency. Plain
``ignore_imports`` would drop the whole edge, so a new module-level import of
the same module would pass unseen; here every import statement behind a listed
edge is looked up in the importer's source, and those at module level (or in a
class body) stay in the graph and break the contract like any other upward
import. A listed expression that matches nothing breaks it too (stale entry).

Run by ``lint-imports`` from the repository root, which puts the current
folder on ``sys.path`` (so ``tests.layering`` imports, and the package
analysed is the one in this folder).
"""

from __future__ import annotations

import ast
import importlib.util
from functools import cache
from pathlib import Path

from importlinter import ContractCheck, fields, output
from importlinter.contracts.layers import LayersContract


@cache
def _source_file(module: str) -> Path:
    """The file of ``module`` (a package's ``__init__.py``), found as grimp finds packages."""
    root, *rest = module.split(".")
    spec = importlib.util.find_spec(root)
    if spec is None or not spec.submodule_search_locations:
        raise ValueError(f"{root}: not an importable package")
    base = Path(next(iter(spec.submodule_search_locations))).joinpath(*rest)
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    raise ValueError(f"{module}: no source file under {base}")


@cache
def function_level_import_lines(module: str) -> frozenset[int]:
    """Lines of the import statements of ``module`` that sit inside a function body."""
    tree = ast.parse(_source_file(module).read_text(encoding="utf-8"))
    lines: set[int] = set()
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            for node in ast.walk(fn):
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    lines.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return frozenset(lines)


class LayersWithFunctionLevelImports(LayersContract):
    """import-linter's layers contract; ``function_level_imports`` are allowed in functions only."""

    function_level_imports = fields.SetField(
        subfield=fields.ImportExpressionField(), required=False
    )

    def check(self, graph, verbose: bool) -> ContractCheck:
        unmatched: list[str] = []
        for expression in sorted(self.function_level_imports or (), key=str):
            matches = graph.find_matching_direct_imports(import_expression=str(expression))
            if not matches:
                unmatched.append(str(expression))
            for m in matches:
                importer, imported = m["importer"], m["imported"]
                details = graph.get_import_details(importer=importer, imported=imported)
                inside = function_level_import_lines(importer)
                graph.remove_import(importer=importer, imported=imported)
                for d in details:  # the module-level ones stay: they break the layers
                    if d["line_number"] not in inside:
                        graph.add_import(
                            importer=importer,
                            imported=imported,
                            line_number=d["line_number"],
                            line_contents=d["line_contents"],
                        )
        check = super().check(graph, verbose)
        if unmatched:
            check.kept = False
        check.metadata["unmatched_function_level_imports"] = unmatched
        return check

    def render_broken_contract(self, check: ContractCheck) -> None:
        unmatched = check.metadata.get("unmatched_function_level_imports") or []
        if unmatched:
            output.print("function_level_imports that match no import (remove them):")
            output.new_line()
            for expression in unmatched:
                output.print_error(f"- {expression}", bold=False)
            output.new_line()
        super().render_broken_contract(check)
