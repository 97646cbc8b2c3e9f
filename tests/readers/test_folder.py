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
    assert ens.exclusive_rows.equals(ref.exclusive_rows) and ens.profiles.equals(ref.profiles)
    assert ens.tree.nodes.equals(ref.tree.nodes)
    # the folder is the source; the format is its files'
    assert {k: v for k, v in ens.meta.items() if k != "source"} == ref.meta
    assert ref.meta["format"] == "caliper-json" and "source" not in ref.meta
    for m in (ens.meta, ens.tree.meta):
        assert m["format"] == "caliper-json" and m["source"] == str(folder)
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
    (tmp_path / "notes.md").write_text("not a profile\x00")
    with pytest.raises(ProfileError, match="mixes formats"):
        cctviz.read(tmp_path)
    (tmp_path / "b.json").unlink()
    # notes and documentation beside the profiles are left out
    assert cctviz.read(tmp_path).n_profiles == 8


KINETO_RANKS = [DATA / f"kineto/hta_trace_filter_sampled_rank-{r}.json.gz" for r in (0, 1)]


def _rank_folder(tmp_path):
    """torch.profiler's per-rank traces of one job (as tensorboard_trace_handler
    writes them), with a README and the job's metadata beside them."""
    for p in KINETO_RANKS:
        shutil.copy(p, tmp_path / p.name)
    (tmp_path / "README.md").write_text("# traces of the job\n")
    (tmp_path / "job.json").write_text('{"world_size": 3, "nodes": 1}')
    return tmp_path


def test_a_crashed_ranks_empty_file_is_refused_by_name(tmp_path):
    """A rank that crashed before writing left an empty file: the folder used to
    read as fewer ranks, silently."""
    folder = _rank_folder(tmp_path)
    assert cctviz.read(folder).n_profiles == 2  # README and metadata left out
    assert cctviz.read_timeline(folder).n_profiles == 2
    empty = folder / "hta_trace_filter_sampled_rank-2.json.gz"
    empty.write_bytes(b"")
    for fn in (cctviz.read, cctviz.read_timeline):
        with pytest.raises(ProfileError, match="is empty") as e:
            fn(folder)
        assert e.value.path == str(empty)


def test_a_trace_cut_short_in_a_folder_is_refused_by_name(tmp_path):
    import gzip

    folder = _rank_folder(tmp_path)
    whole = gzip.decompress(KINETO_RANKS[1].read_bytes())
    cut = folder / "rank-2.json"
    cut.write_bytes(whole[: len(whole) // 3])  # the kill came mid-write
    with pytest.raises(ProfileError, match="truncated") as e:
        cctviz.read(folder)
    assert e.value.path == str(cut)
    cut.unlink()
    gz = folder / "rank-2.json.gz"  # a gzip stream opened, nothing written into it
    gz.write_bytes(gzip.compress(b""))
    with pytest.raises(ProfileError, match="no profile cctviz recognises") as e:
        cctviz.read(folder)
    assert e.value.path == str(gz)
    gz.unlink()
    # a folder format inside is one source: its own files are not judged one by one
    shutil.copytree(DATA / "hatchet/tau-cpi-mpi", tmp_path / "tau-run")
    with pytest.raises(ProfileError, match="mixes formats"):
        cctviz.read(folder)


def test_a_database_inside_a_folder_is_one_profile_source(tmp_path):
    """A folder format (TAU, HPCToolkit) inside a folder counts once, not once per file."""
    shutil.copytree(DATA / "hatchet/tau-cpi-mpi", tmp_path / "run1" / "tau")
    shutil.copytree(DATA / "hatchet/tau-cpi-mpi", tmp_path / "run2")
    ens = cctviz.read(tmp_path)
    assert ens.n_profiles == 2 * 4  # two runs of 4 ranks
    assert sorted(set(ens.profiles["file"])) == [str(tmp_path / "run1/tau"), str(tmp_path / "run2")]
    # what the files share stays: their format, and the units cctviz assumed for them
    assert ens.meta["format"] == "tau" and ens.meta["source"] == str(tmp_path)
    assert "microseconds" in ens.meta["units_assumed"]["time"]
    assert ens.tree.units["time"] == "us"


@pytest.mark.parametrize(
    "folder,fmt,n",
    [("thicket/rajaperf", "cali", 18), ("thicket/mpi_scaling_cali", "cali", 5)],
)
def test_a_folder_of_cali_files_says_its_format_and_source(folder, fmt, n):
    ens = cctviz.read(DATA / folder)
    assert ens.n_profiles == n
    for m in (ens.meta, ens.tree.meta):
        assert m["format"] == fmt
        assert m["source"] == str(DATA / folder)
    assert cctviz.readers.detect(DATA / folder) == "folder"


def test_a_folder_of_databases_says_its_format(tmp_path):
    shutil.copytree(DATA / "hatchet/hpctoolkit-cpi-database", tmp_path / "a")
    shutil.copytree(DATA / "hatchet/hpctoolkit-cpi-database", tmp_path / "b")
    ens = cctviz.read(tmp_path)
    assert ens.n_profiles == 2 * 4
    assert ens.meta["format"] == "hpctoolkit" and ens.meta["source"] == str(tmp_path)


def test_many_small_files_print_no_progress_bar(tmp_path, capsys, monkeypatch):
    """50 tiny profiles read in a fraction of a second: no bar (it used to appear
    from 50 files on, however fast the read)."""
    files = []
    for k in range(50):
        p = tmp_path / f"p{k:02d}.folded"
        p.write_text(f"main;solve {k + 1}\nmain;io 3\n")
        files.append(p)
    # no timing here: under load 50 reads may take a second; the bar must wait for the delay
    monkeypatch.setattr(cctviz.readers, "PROGRESS_DELAY", 3600.0)
    ens = cctviz.read_ensemble(files)
    assert ens.n_profiles == 50
    assert cctviz.read(tmp_path).n_profiles == 50
    err = capsys.readouterr().err
    assert "reading profiles" not in err and "%|" not in err
    monkeypatch.setattr(cctviz.readers, "PROGRESS_DELAY", 0.0)  # as if a second had passed
    cctviz.read_ensemble(files[:3])
    assert "reading profiles" in capsys.readouterr().err
    cctviz.read_ensemble(files[:3], progress=False)
    assert capsys.readouterr().err == ""


def test_progress_is_accepted_for_every_format():
    """``progress=`` goes to the readers with a bar; the others ignore it (it was a
    ProfileError 'unexpected content' for a single timemory or Caliper file)."""
    for f in (
        DATA / "hatchet/timemory/wall.tree.json",
        DATA / "hatchet/gprof2dot-cpi/callgrind.dot.64042.0.1",
        DATA / "hatchet/tau-cpi-mpi",
    ):
        obj = cctviz.read(f, progress=True)
        assert len(obj.tree if isinstance(obj, cctviz.Ensemble) else obj) > 0
    assert cctviz.read(DATA / "hatchet/hpctoolkit-cpi-database", progress=False).n_profiles == 4
    with pytest.raises(ProfileError, match="unexpected keyword argument 'colour'"):
        cctviz.read(DATA / "hatchet/timemory/wall.tree.json", colour="red")
