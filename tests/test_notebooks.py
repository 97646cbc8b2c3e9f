"""Every notebook in notebooks/ runs top to bottom (so none rots)."""

import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


def test_there_are_notebooks():
    assert NOTEBOOKS


#: a value with a unit of time or size, as the outputs print them ("53.5 s", "3.73 MB")
QUOTED = re.compile(r"(?<![\w.])\d+(?:\.\d+)? (?:s|ms|us|ns|kB|MB|GB)\b")

#: per notebook, code run after "Run All" that checks the notebook ends in a state
#: worth clicking (it prints "OK")
AFTER_RUN_ALL = {
    "04-ensemble-sankey.ipynb": (
        "profiles.selected_profiles = [0, 1]  # as a brush in the profiles view does\n"
        "assert tree.selected_profiles == [0, 1] == sankey.selected_profiles, 'views unlinked'\n"
        "print('OK')"
    ),
}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_executes(path):
    nb = nbformat.read(path, as_version=4)
    check = AFTER_RUN_ALL.get(path.name)
    if check:
        nb.cells.append(nbformat.v4.new_code_cell(check))
    NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    ).execute()
    if check:
        last = nb.cells.pop()
        assert "OK" in "".join(o.get("text", "") for o in last.get("outputs", [])), last.outputs
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    # the prose quotes only numbers the notebook shows: every value with a unit
    # in its text ("53.5 s") is in some output
    shown = " ".join(
        o.get("text", "") + "".join(str(v) for v in o.get("data", {}).values()) for o in outputs
    )
    for c in nb.cells:
        if c.cell_type == "markdown":
            for quoted in QUOTED.findall(c.source):
                assert quoted in shown, f"{path.name}: the text says {quoted!r}, no output shows it"
    assert len(outputs) >= sum(c.cell_type == "code" for c in nb.cells) - 1  # cells show something


#: what a notebook imports or reads -> the extra of pyproject.toml that brings it
NEEDS = {
    "hatchet": "llnl-hatchet",
    "IPython": "jupyterlab",
    "cctviz": None,
    "ipywidgets": None,
    "pandas": None,
    "numpy": None,
    "jax": "jax[cpu]",  # 03-readers profiles a JAX program
}
STDLIB = {"glob", "json", "pathlib", "re", "tempfile", "os", "sys", "math", "subprocess",
          "functools", "textwrap"}  # fmt: skip


def test_notebooks_need_only_what_the_readme_commands_install():
    """The demo command installs cctviz[torch,export,notebooks] (the test command all
    of .[test]): every package a notebook imports, and the Score-P readers notebook 06
    uses, come with the notebooks extra."""
    import re

    import tomllib

    root = NOTEBOOKS[0].parents[1]
    extras = tomllib.loads((root / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    demo = (root / "scripts" / "demo.sh").read_text()
    assert re.search(r'setup_env "[^"]*\bnotebooks\b', demo), (
        "the demo installs the notebooks extra"
    )
    wanted = " ".join(extras["notebooks"])
    for path in NOTEBOOKS:
        nb = nbformat.read(path, as_version=4)
        code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
        for mod in set(re.findall(r"^\s*(?:import|from)\s+([A-Za-z_]\w*)", code, re.M)) - STDLIB:
            assert mod in NEEDS, f"{path.name} imports {mod}: say in NEEDS which extra brings it"
            if NEEDS[mod]:
                assert NEEDS[mod] in wanted, (path.name, mod)
        text = code + "".join(c.source for c in nb.cells)
        if re.search(r"otf2|\.cubex|scorep", text, re.I):
            assert "scorep" in wanted, path.name
        if ".cali" in text:
            assert "caliper" in wanted, path.name
        if re.search(r"open_dataset|to_dataset|out=", text):  # DuckDB computes datasets
            assert "scale" in wanted, path.name
