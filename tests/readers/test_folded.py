"""Folded stacks: hand-made FlameGraph / py-spy raw / perf lines and files
written from the real samples; strict line errors, conservative detection."""

import codecs
import gzip

import numpy as np
import pytest

import cctviz
from cctviz import ProfileError
from cctviz.readers import detect
from tests.conftest import CALIPER_JSON, DATA, HATCHET_JSON
from tests.readers.fuzz import assert_wrong_format_rejected, fuzz_sample

PYSPY_RAW = """\
<module> (train.py:1);main (train.py:40);step (train.py:22);forward (model.py:10) 120
<module> (train.py:1);main (train.py:40);step (train.py:22);backward (torch/_tensor.py:480) 250
<module> (train.py:1);main (train.py:40);load_batch (data.py:8) 31

<module> (train.py:1);main (train.py:40);step (train.py:22) 4
<module> (train.py:1);main (train.py:40);step (train.py:22);forward (model.py:10) 30
"""

PERF = """\
swapper;secondary_startup_64;cpu_startup_entry;do_idle 9010
python3;_start;__libc_start_main;Py_BytesMain;pymain_run_python 12
python3;_start;__libc_start_main;Py_BytesMain;pymain_run_python;PyRun_AnyFileObject 3
"""


def _write(tmp_path, name, text, gz=False):
    p = tmp_path / name
    p.write_bytes(gzip.compress(text.encode()) if gz else text.encode())
    return p


def test_pyspy_raw_lines(tmp_path):
    p = _write(tmp_path, "pyspy.txt", PYSPY_RAW)
    assert detect(p) == "folded"
    t = cctviz.read(p)
    assert t.meta["format"] == "folded" and t.exc_metrics == ["samples"]
    assert len(t) == 6 and len(t.roots) == 1
    m = t.metrics.set_index(t.callpaths)
    # the repeated stack adds up; names keep their spaces and parentheses
    fwd = "<module> (train.py:1)/main (train.py:40)/step (train.py:22)/forward (model.py:10)"
    assert m.loc[fwd, "samples"] == 150
    assert m.loc["<module> (train.py:1)", "samples (inc)"] == 120 + 250 + 31 + 4 + 30
    assert m.loc["<module> (train.py:1)/main (train.py:40)/step (train.py:22)", "samples"] == 4


def test_perf_two_roots_gzipped_and_metric_name(tmp_path):
    p = _write(tmp_path, "perf.folded.gz", PERF, gz=True)
    assert detect(p) == "folded"
    t = cctviz.read(p, metric="cycles")
    assert sorted(t.names[t.roots]) == ["python3", "swapper"]
    assert t.metrics["cycles (inc)"].sum() > 0
    assert t.metrics["cycles"].sum() == 9010 + 12 + 3


def test_decimal_counts_and_blank_lines(tmp_path):
    t = cctviz.read(_write(tmp_path, "f.folded", "\n\na;b 1.5\n  \na 2\n"), format="folded")
    assert t.metrics["samples (inc)"].tolist() == [3.5, 1.5]


@pytest.mark.parametrize(
    "text, line",
    [
        ("a;b 3\na;c\n", 2),  # no count
        ("a;b 3\n\na;c x7\n", 3),  # count is not a number
        ("a;b 3\na;c -2\n", 2),  # negative
        ("a;b 3\n17\n", 2),  # no stack
    ],
)
def test_a_file_of_bad_lines_is_refused_naming_the_first(tmp_path, text, line):
    """Half its lines bad (more than a tenth): no folded-stacks file."""
    p = _write(tmp_path, "bad.folded", text)
    with pytest.raises(ProfileError) as e:
        cctviz.read(p, format="folded")
    assert e.value.where == f"line {line}" and e.value.path == str(p)


@pytest.mark.slow  # py-spy: the main test environment, not the core suite's
def test_a_few_bad_lines_are_skipped_and_named(tmp_path):
    """A real py-spy profile with three broken lines slipped in (a truncated
    write, a stray note): the other lines are read, every sample of them, and
    one warning names the three by line number."""
    from tests.readers.pyspy import RECURSION, pyspy_record

    p, _ = pyspy_record(tmp_path, "raw", program=RECURSION)
    lines = p.read_text().splitlines()
    assert len(lines) >= 30  # so that three are under a tenth
    want = sum(float(x.split()[-1]) for x in lines)  # " 2": samples with no frame too
    broken = [*lines[:5], "main;spin", *lines[5:10], "see the notes x3", *lines[10:], "main;sp"]
    bad = tmp_path / "broken.folded"
    bad.write_text("\n".join(broken) + "\n")
    with pytest.warns(UserWarning, match="3 line") as said:
        t = cctviz.read(bad, format="folded")
    text = str(said[0].message)
    assert all(f"line {k}" in text for k in (6, 12, len(broken))), text
    assert t.metrics["samples"].sum() == want


def test_binary_and_empty_files_are_errors(tmp_path):
    for name, data in [("bin.folded", b"a;b 3\n\x00\x01"), ("empty.folded", b"\n\n")]:
        p = tmp_path / name
        p.write_bytes(data)
        with pytest.raises(ProfileError):
            cctviz.read(p, format="folded")


def test_sniff_is_conservative(tmp_path):
    tau = DATA / "hatchet/tau-cpi-mpi/profile.0.0.0"
    dot = DATA / "hatchet/gprof2dot-cpi/callgrind.dot.64042.0.1"
    csv = _write(tmp_path, "t.csv", "name,time\nmain,12\nsolve,7\n")
    pairs = _write(tmp_path, "pairs.txt", "main 12\nsolve 7\n")  # no ';': not claimed
    text = _write(tmp_path, "notes.txt", "see a;b 3 for details\nnothing here\n")
    from cctviz.readers import head
    from cctviz.readers.folded import _sniff

    for p in (tau, dot, csv, pairs, text, HATCHET_JSON, CALIPER_JSON[0]):
        assert not _sniff(p, head(p)), p
    assert detect(tau) == "tau" and detect(dot) == "gprof-dot"


@pytest.mark.parametrize("sample", [HATCHET_JSON, DATA / "hatchet/tau-cpi-mpi/profile.0.0.0"])
def test_foreign_files_rejected(sample):
    assert_wrong_format_rejected(sample, "folded")


def test_written_file_from_real_sample_reads_back(tmp_path):
    ens = cctviz.read(CALIPER_JSON[0])  # cpi: 127 nodes over several ranks
    p = cctviz.write(ens, tmp_path / "cpi.folded", format="folded", metric="count")
    back = cctviz.read(p)
    sums = ens.exclusive_rows.assign(path=ens.tree.callpaths.to_numpy()[ens.exclusive_rows["node"]])
    want = sums.groupby("path")["count"].sum()
    got = back.metrics.set_index(back.callpaths)["samples"]
    want = want[want > 0]
    got = got[got > 0]
    assert len(got) == len(want)
    assert np.allclose(got.reindex(want.index).to_numpy(), want.to_numpy())


def test_fuzz_written_file(tmp_path):
    t = cctviz.read(HATCHET_JSON)
    p = cctviz.write(t, tmp_path / "h.folded", format="folded")
    stats = fuzz_sample(p, "folded", tmp_path / "fz", n=60, truncation_fails=False)
    assert stats["garbage:error"] + stats["digit:error"] > 0
    assert stats["truncate:ok"] > 0  # a prefix of whole lines is a valid profile


def test_folded_counts_are_sums_without_a_unit(tmp_path):
    p = tmp_path / "x.folded"
    p.write_text("main;solve 3\nmain;io 1\n")
    t = cctviz.read(p)
    assert t.aggregation == {"samples": "sum"} and t.meta["aggregation"] == {"samples": "sum"}
    assert t.units == {} and t.is_additive("samples (inc)")
    assert cctviz.read(p, metric="ticks").aggregation == {"ticks": "sum"}


@pytest.fixture(scope="module")
def pyspy_raw(tmp_path_factory):
    from tests.readers.pyspy import pyspy_record

    return pyspy_record(tmp_path_factory.mktemp("pyspy"), "raw")


def _roots(t):
    m = t.metrics.set_index(t.names)
    return m.loc[t.names[t.roots], "samples (inc)"]


@pytest.mark.slow
def test_real_pyspy_raw_output_counts_every_sample(pyspy_raw):
    """py-spy's raw output reads with every sample it took, those whose stack is
    empty (`` 1``: a thread without a Python frame) under ``(no frames)``."""
    p, samples = pyspy_raw
    assert detect(p) == "folded"
    t = cctviz.read(p)
    assert t.metrics["samples"].sum() == samples  # what py-spy said it took
    lines = p.read_text().splitlines()
    no_stack = sum(int(ln.split()[-1]) for ln in lines if ln[:1] == " ")
    if no_stack:
        assert _roots(t)["(no frames)"] == no_stack
    names = set(t.names)
    assert "spin (work.py:6)" in names or "spin (work.py:5)" in names
    assert any(n.startswith("sleeper (work.py:") for n in names)


@pytest.mark.slow
def test_pyspy_raw_with_comments_in_utf16_as_powershell_writes_it(pyspy_raw, tmp_path):
    """``py-spy record -f raw ... > out.txt`` in PowerShell: a BOM and UTF-16LE;
    a ``#`` header line; an empty-stack line as py-spy writes it."""
    p, samples = pyspy_raw
    text = "# py-spy raw, 200 Hz\n" + p.read_text() + " 4\n"
    ps = tmp_path / "out.txt"
    ps.write_bytes(codecs.BOM_UTF16_LE + text.replace("\n", "\r\n").encode("utf-16-le"))
    assert detect(ps) == "folded"
    t = cctviz.read(ps)
    assert t.metrics["samples"].sum() == samples + 4
    ref = cctviz.read(p)
    assert _roots(t)["(no frames)"] == _roots(ref).get("(no frames)", 0) + 4
    same = t.metrics.set_index(t.callpaths)["samples (inc)"]
    want = ref.metrics.set_index(ref.callpaths)["samples (inc)"]
    assert (
        same.drop("(no frames)")
        .sort_index()
        .equals(want.drop("(no frames)", errors="ignore").sort_index())
    )
