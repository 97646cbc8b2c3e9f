"""A folder of profiles of one format reads as one Ensemble (the registry's folder rule)."""

import shutil

import pytest

import cctviz
from cctviz import ProfileError, UnknownFormatError
from tests.conftest import DATA, HATCHET_JSON, LULESH_SCALING


def test_folder_of_runs_is_the_ensemble_of_its_files():
    folder = DATA / "hatchet-tutorial/lulesh-scaling"
    ens = cctviz.read(folder, progress=False)
    ref = cctviz.read_ensemble(LULESH_SCALING, progress=False)
    assert ens == ref
    # 1 + 8 + 27 + ... + 512 ranks over the eight runs
    assert ens.n_profiles == sum(k**3 for k in range(1, 9))
    assert sorted(set(ens.profiles["file"])) == [str(p) for p in LULESH_SCALING]


def test_folder_with_format_given_reads_every_file(tmp_path):
    for cores in (1, 8):
        p = (
            DATA
            / f"hatchet-tutorial/lulesh-scaling/lulesh-annotation-profile-{cores}core{'s' * (cores > 1)}.json"
        )
        shutil.copy(p, tmp_path / p.name)
    ens = cctviz.read(tmp_path, format="caliper-json")
    assert ens.n_profiles == 1 + 8


def test_mixed_and_empty_folders_are_errors(tmp_path):
    with pytest.raises(UnknownFormatError, match=str(tmp_path)):
        cctviz.read(tmp_path)
    shutil.copy(
        DATA / "hatchet-tutorial/lulesh-scaling/lulesh-annotation-profile-8cores.json",
        tmp_path / "a.json",
    )
    shutil.copy(HATCHET_JSON, tmp_path / "b.json")
    (tmp_path / "notes.txt").write_text("not a profile\x00")
    with pytest.raises(ProfileError, match="mixes formats"):
        cctviz.read(tmp_path)
    (tmp_path / "b.json").unlink()
    # files no reader recognises are left out
    assert cctviz.read(tmp_path).n_profiles == 8


def test_a_database_inside_a_folder_is_one_profile_source(tmp_path):
    """A folder format (TAU, HPCToolkit) inside a folder counts once, not once per file."""
    shutil.copytree(DATA / "hatchet/tau-cpi-mpi", tmp_path / "run1" / "tau")
    shutil.copytree(DATA / "hatchet/tau-cpi-mpi", tmp_path / "run2")
    ens = cctviz.read(tmp_path)
    assert ens.n_profiles == 2 * 4  # two runs of 4 ranks
    assert sorted(set(ens.profiles["file"])) == [str(tmp_path / "run1/tau"), str(tmp_path / "run2")]
