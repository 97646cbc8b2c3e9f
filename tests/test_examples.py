"""The bundled samples (cctviz.examples): each reads, has its licence beside it, is a
byte copy of the test data it came from, and the notebooks and README need nothing else."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import cctviz
from cctviz import examples

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"

#: the modules a sample's extra brings (cctviz[caliper], cctviz[scorep])
EXTRA_MODULES = {"caliper": ["caliperreader"], "scorep": ["otf2", "pycubexr"]}

#: where each sample's files are in the test data: sample folder -> test-data folder
FROM = {
    "lulesh-scaling": "hatchet-tutorial/lulesh-scaling",
    "kripke-hpctoolkit": "hatchet-tutorial",
    "kineto-nccl-ranks": "kineto",
    "mpi-scaling-cali": "thicket/mpi_scaling_cali",
    "cprofile-cycle": "hatchet/cprofile-hatchet-pstats",
    "pingpong-otf2": "pipit",
    "pingpong-hpctoolkit": "pipit",
    "kripke-cube": "scorep-cube",
    "saxpy-nsys": "nsys",
}

#: what the licence text of each kind says
LICENCE_TEXT = {
    "MIT": "Permission is hereby granted, free of charge",
    "BSD-3-Clause": "Redistribution and use in source and binary forms",
}

#: the whole of cctviz/examples stays small: it ships in every wheel
BUDGET_BYTES = 5_000_000

NAMES = list(examples.SAMPLES)


def _needs(name: str) -> None:
    for module in EXTRA_MODULES.get(examples.sample(name).needs, []):
        pytest.importorskip(module)


def _data_files(name: str) -> list[Path]:
    folder = examples.sample(name).folder
    return sorted(
        p for p in folder.rglob("*") if p.is_file() and p.name not in examples.LICENCE_FILES
    )


def test_the_listing_names_every_sample_and_its_licence():
    table = examples.available()
    assert table.index.tolist() == NAMES
    assert set(table["licence"]) <= set(LICENCE_TEXT)
    assert (table["files"] > 0).all() and (table["size [B]"] > 0).all()
    assert table.loc["kripke-hpctoolkit", "files"] == 65  # experiment.xml + 64 ranks
    readme = (examples.ROOT / "README.md").read_text()
    for name in NAMES:
        assert f"`{name}/`" in readme, f"cctviz/examples/README.md does not list {name}"


@pytest.mark.parametrize("name", NAMES)
def test_each_sample_reads(name):
    _needs(name)
    data = cctviz.read(examples.path(name))
    assert data.n_profiles >= 1 if hasattr(data, "n_profiles") else len(data) > 0
    found = examples.files(name)
    assert found and all(p.exists() for p in found)


@pytest.mark.parametrize("name", [n for n in NAMES if "read_timeline" in examples.sample(n).reads])
def test_timeline_samples_read_as_timelines(name):
    _needs(name)
    files = examples.files(name)
    tl = cctviz.read_timeline(files if len(files) > 1 else files[0])
    assert len(tl.events) > 0 and tl.n_profiles >= 1


def test_the_samples_hold_what_the_notebooks_say():
    runs = cctviz.read_ensemble(examples.files("lulesh-scaling"), progress=False)
    assert runs.n_profiles == 1 + 8 + 27 + 64
    assert cctviz.read(examples.path("kripke-hpctoolkit")).n_profiles == 64
    ranks = cctviz.read_ensemble(examples.files("kineto-nccl-ranks"), progress=False)
    assert ranks.profiles["rank"].tolist() == [0, 1]


@pytest.mark.parametrize("name", NAMES)
def test_each_sample_has_its_licence_beside_it(name):
    s = examples.sample(name)
    text = examples.licence(name).read_text()
    assert examples.licence(name).parent == s.folder
    assert LICENCE_TEXT[s.licence] in text
    holder = s.copyright.split(" (")[0]  # "Lawrence Livermore ..., LLC (2017-2021)"
    assert holder in " ".join(text.split()), f"{name}: {holder!r} not in its LICENSE"


@pytest.mark.skipif(not SHARED.is_dir(), reason="the test data folder is not beside the checkout")
@pytest.mark.parametrize("name", NAMES)
def test_each_sample_is_copied_unchanged(name):
    """Byte for byte the file of the test data it came from (whose README names the
    upstream project); a licence that the test data keeps beside it is the same too."""
    folder = examples.sample(name).folder
    for p in _data_files(name):
        src = SHARED / FROM[name] / p.relative_to(folder)
        assert src.read_bytes() == p.read_bytes(), f"{p} differs from {src}"
    upstream = SHARED / FROM[name].split("/")[0] / "LICENSE"
    if upstream.is_file():
        assert upstream.read_text() == examples.licence(name).read_text()


def test_nothing_else_is_bundled_and_it_stays_small():
    known = {examples.sample(n).folder for n in NAMES}
    total = 0
    for p in examples.ROOT.rglob("*"):
        if not p.is_file() or "__pycache__" in p.parts:
            continue
        total += p.stat().st_size
        rel = p.relative_to(examples.ROOT)
        assert (
            rel.parts[0] in ("__init__.py", "README.md") or examples.ROOT / rel.parts[0] in known
        ), f"{rel}: a file of no listed sample"
    assert total < BUDGET_BYTES, f"cctviz/examples is {total:,} bytes"


def test_an_unknown_name_lists_the_names():
    with pytest.raises(KeyError, match="lulesh-scaling"):
        examples.path("lulesh")


#: how a notebook or the README would reach for data that is not in a clone
OUTSIDE = re.compile(r"\.\./shared|shared/data|parents\[\d\] / \"shared\"")


def test_notebooks_and_the_readme_need_only_the_bundled_samples():
    paths = [ROOT / "README.md", *sorted((ROOT / "notebooks").iterdir())]
    for p in paths:
        if p.is_file() and p.suffix in (".md", ".ipynb", ".py"):
            found = OUTSIDE.findall(p.read_text())
            assert not found, f"{p.name} reads the test data folder: {found}"
