"""Linux ``perf script`` text: the speedscope samples (with and without pid/tid,
system-wide) and files made here by ``perf record``, each checked against an
independent line-by-line parse of the same text; detection, errors, fuzzing."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pytest

import cctviz
from cctviz import ProfileError
from cctviz.cli import main
from cctviz.readers import detect, head
from cctviz.readers.folded import _sniff as folded_sniff
from tests.conftest import DATA
from tests.readers.fuzz import fuzz_sample

PERF = DATA / "linux-perf"
SIMPLE = PERF / "simple.linux-perf.txt"
WITH_PID = PERF / "simple-with-pid.linux-perf.txt"
SYSTEM = PERF / "system-wide.linux-perf.txt"

_HEAD = re.compile(
    r"^\s*(.+?)\s+(\d+)(?:/(\d+))?\s+(?:\[\d+\]\s+)?\d+\.\d+:\s+(?:(\d+)\s+)?(\S+?):(?:\s|$)"
)


def independent_parse(path: Path) -> dict:
    """A plain state machine over the lines (not the reader's code): per
    (comm, first number) and event, the samples and summed periods; per
    root-first stack of symbols (offsets cut), the samples."""
    samples: Counter = Counter()
    periods: defaultdict = defaultdict(float)
    stacks: Counter = Counter()
    threads: defaultdict = defaultdict(set)
    cur = None
    frames: list[str] = []

    def flush():
        if cur is not None:
            stacks[(cur, tuple(reversed(frames)) or ("[no stack]",))] += 1

    for line in path.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        m = _HEAD.match(line)
        if m:
            flush()
            comm, num, tid, period, event = m.groups()
            cur = ((comm, int(num)), event)
            samples[cur] += 1
            periods[cur] += float(period) if period else float("nan")
            threads[(comm, int(num))].add(tid or num)
            frames = []
            continue
        ip, _, rest = line.strip().partition(" ")
        sym, _, dso = rest.rpartition(" (")
        sym = re.sub(r"\+0x[0-9a-f]+$", "", sym)
        dso = dso.rstrip(")")
        frames.append(f"[unknown] ({dso})" if sym == "[unknown]" else sym)
    flush()
    return {"samples": samples, "periods": periods, "stacks": stacks, "threads": threads}


def _per_profile(obj) -> tuple[list[tuple[str, int]], dict[str, np.ndarray]]:
    """Each profile's (comm, number) and each metric's total per profile."""
    if isinstance(obj, cctviz.Tree):
        who = obj.meta.get("pid", obj.meta.get("tid"))
        return [(obj.meta["comm"], who)], {
            m: np.array([obj.metrics[m].sum()]) for m in obj.exc_metrics
        }
    pr = obj.profiles
    who = "pid" if "pid" in pr.columns else "tid"
    keys = list(zip(pr["comm"], pr[who].astype(int)))
    rows = obj.exclusive_rows
    tot = {
        m: rows.groupby("profile")[m].sum().reindex(range(len(pr))).to_numpy()
        for m in obj.exc_metrics
    }
    return keys, tot


def check_against_independent_parse(path: Path, obj=None) -> dict:
    ref = independent_parse(path)
    obj = cctviz.read(path) if obj is None else obj
    keys, tot = _per_profile(obj)
    assert sorted(keys) == sorted({p for p, _ in ref["samples"]})
    for (proc, event), n in ref["samples"].items():
        k = keys.index(proc)
        assert tot[f"{event} samples"][k] == n, (proc, event)
        period = ref["periods"][(proc, event)]
        if np.isfinite(period):
            assert tot[event][k] == pytest.approx(period)
        else:
            assert event not in tot
    return ref


def _paths(tree: cctviz.Tree) -> list[tuple[str, ...]]:
    names = tree.nodes["name"].tolist()
    parent = tree.nodes["parent"].to_numpy()
    out = []
    for i in range(len(tree)):
        path, j = [], i
        while j >= 0:
            path.append(names[j])
            j = parent[j]
        out.append(tuple(reversed(path)))
    return out


def test_simple_one_sample_root_first():
    t = cctviz.read(SIMPLE)
    assert detect(SIMPLE) == "perf" and isinstance(t, cctviz.Tree)
    assert t.meta["format"] == "perf" and t.meta["comm"] == "simple-terminat"
    assert t.meta["tid"] == 10 and "pid" not in t.meta
    # perf prints the innermost frame first; the tree goes root first
    assert t.nodes["name"].tolist() == [
        "[unknown] ([unknown])",
        "__libc_start_main",
        "main",
        "_Z5deltav",
        "_Z4betav",
    ]
    assert t.nodes["parent"].tolist() == [-1, 0, 1, 2, 3]
    assert t.nodes["module"].tolist()[1:3] == ["libc-2.27.so", "simple-terminates"]
    assert t.nodes["dso"].iat[2] == "/workdir/simple-terminates"
    assert t.units == {"cpu-clock": "ns", "cpu-clock samples": "samples"}
    assert t.aggregation == {"cpu-clock": "sum", "cpu-clock samples": "sum"}
    assert t.metrics["cpu-clock (inc)"].iat[0] == 1001001  # the header's period, in ns
    assert t.metrics["cpu-clock"].iat[4] == 1001001 and t.metrics["cpu-clock"].iat[3] == 0
    check_against_independent_parse(SIMPLE, t)


def test_with_pid_tid_counts_per_stack():
    t = cctviz.read(WITH_PID)
    assert isinstance(t, cctviz.Tree)
    assert (t.meta["comm"], t.meta["pid"], t.meta["threads"]) == ("simple-terminat", 9, 1)
    assert t.exc_metrics == ["cpu-clock samples"]  # no period in this file: no period metric
    ref = check_against_independent_parse(WITH_PID, t)
    want = Counter()
    for (_, stack), n in ref["stacks"].items():
        want[stack] += n
    got = dict(zip(_paths(t), t.metrics["cpu-clock samples"]))
    assert {p: v for p, v in got.items() if v} == dict(want)
    assert sum(want.values()) == 137
    m = t.metrics.set_index(t.callpaths)["cpu-clock samples (inc)"]
    main_path = "[unknown] ([unknown])/__libc_start_main/main"
    assert m[main_path] == 136  # one sample is in the kernel alone


def test_system_wide_one_profile_per_process():
    ens = cctviz.read(SYSTEM)
    assert isinstance(ens, cctviz.Ensemble)
    assert ens.profiles[["comm", "tid"]].values.tolist() == [["swapper", 0], ["simple-terminat", 9]]
    ref = check_against_independent_parse(SYSTEM, ens)
    assert sum(ref["samples"].values()) == 556
    swapper = ens.profile(0)
    # the idle task's samples in kernel code, by the module of their leaf frame
    kernel = swapper.nodes["module"] == "[kernel.kallsyms]"
    want = sum(
        n
        for ((proc, _), stack), n in ref["stacks"].items()
        if proc == ("swapper", 0) and stack[-1] == "[unknown] ([kernel.kallsyms])"
    )
    assert swapper.metrics.loc[kernel, "cpu-clock samples"].sum() == want
    assert want > 0.99 * ref["samples"][(("swapper", 0), "cpu-clock")]  # it is the idle task


def test_info_command(capsys):
    assert main(["info", str(SYSTEM)]) == 0
    out = capsys.readouterr().out
    assert "Ensemble (perf)" in out and "profile columns: comm, tid" in out
    assert re.search(r"^cpu-clock +ns +sum +278 ms$", out, re.M)
    assert re.search(r"^cpu-clock samples +samples +sum +278 samples$", out, re.M)


def _write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_several_events_periods_and_header_forms(tmp_path):
    text = (
        "# ========\n# captured on : a day\n# ========\n#\n"
        "my app 12/13 [001] 100.000001:     3000 cycles:u: \n"
        "\t  4005d1 work+0x11 (/opt/app)\n\t  400400 main (/opt/app)\n\n"
        "my app 12/12 [000] 100.000002:     5000 cycles:u: \n"
        "\t  400400 main+0x4 (/opt/app)\n\n"
        "my app 12/13 [001] 100.000003:      700 instructions:u: \n"
        "\t  4005d1 work+0x1 (/opt/app)\n\t  400400 main (/opt/app)\n"
    )
    p = _write(tmp_path, "two-events.txt", text)
    assert detect(p) == "perf"
    t = cctviz.read(p)
    assert (t.meta["comm"], t.meta["pid"], t.meta["threads"]) == ("my app", 12, 2)
    assert t.meta["events"] == ["cycles:u", "instructions:u"]
    assert t.units["cycles:u"] == "events" and t.units["instructions:u samples"] == "samples"
    m = t.metrics.set_index(t.callpaths)
    assert m.loc["main/work", "cycles:u"] == 3000 and m.loc["main", "cycles:u"] == 5000
    assert m.loc["main/work", "instructions:u samples"] == 1
    assert m.loc["main", "cycles:u (inc)"] == 8000
    check_against_independent_parse(p, t)


def test_stackless_samples(tmp_path):
    # perf script -G (no call graph): the header ends with the sample's frame;
    # no frame at all: the sample still counts, under "[no stack]"
    text = (
        "          python  5724 32784.418111:          1 page-faults:  ffffffff8175336a elf_load+0x28a ([kernel.kallsyms])\n"
        "          python  5724 32784.418196:          2 page-faults:  ffffffff8175336a elf_load+0x2 ([kernel.kallsyms])\n"
        "          python  5724 32784.418218:          4 page-faults: \n"
    )
    t = cctviz.read(_write(tmp_path, "g.txt", text), format="perf")
    m = t.metrics.set_index(t.callpaths)
    assert m.loc["elf_load", "page-faults"] == 3 and m.loc["elf_load", "page-faults samples"] == 2
    assert m.loc["[no stack]", "page-faults"] == 4


@pytest.mark.parametrize(
    "text, line, what",
    [
        ("a 1 1.000001: 10 cycles:\n\t 4005 main (/x)\nnot a frame\n", 3, "expected a sample"),
        ("\t 4005 main (/x)\na 1 1.000001: 10 cycles:\n", 1, "before the first sample"),
        ("a 1 1.000001: 10 cycles:\n\t zz main (/x)\n", 2, "expected a sample"),
    ],
)
def test_bad_lines_are_named(tmp_path, text, line, what):
    p = _write(tmp_path, "bad.txt", text)
    with pytest.raises(ProfileError) as e:
        cctviz.read(p, format="perf")
    assert e.value.where == f"line {line}" and what in e.value.problem and e.value.path == str(p)


def test_not_perf_text_is_refused(tmp_path):
    for text in ("", "\n\n# only comments\n", "main;solve 12\n"):
        with pytest.raises(ProfileError):
            cctviz.read(_write(tmp_path, "x.txt", text), format="perf")
    p = tmp_path / "bin.txt"
    p.write_bytes(b"a 1 1.000001: 10 cycles:\n\x00\x01")
    with pytest.raises(ProfileError, match="binary"):
        cctviz.read(p, format="perf")


def test_folded_and_perf_keep_to_their_files(tmp_path):
    for sample in (SIMPLE, WITH_PID, SYSTEM):
        assert not folded_sniff(sample, head(sample))
    folded = cctviz.write(cctviz.read(SYSTEM).profile(1), tmp_path / "p.folded", format="folded")
    assert detect(folded) == "folded"
    with pytest.raises(ProfileError):
        cctviz.read(folded, format="perf")


def test_fuzz(tmp_path):
    stats = fuzz_sample(SYSTEM, "perf", tmp_path, n=60, truncation_fails=False)
    assert stats["garbage:error"] + stats["digit:error"] > 0
    assert stats["truncate:ok"] > 0  # a prefix of whole samples is a valid profile


_WORK = """
import math, threading
def spin():
    s = 0.0
    for i in range(400_000):
        s += math.sqrt(i)
ts = [threading.Thread(target=spin) for _ in range(2)]
[t.start() for t in ts]
spin()
[t.join() for t in ts]
"""


@pytest.mark.slow
def test_real_perf_record(tmp_path):
    """A real ``perf record -g`` of a threaded Python program, two events; its
    ``perf script`` text in four forms (default, ``-F +pid``, ``-G``, and
    without the time field, as older perf printed it: the same trees, no
    timeline)."""
    perf = shutil.which("perf")
    assert perf, "perf is not installed (Debian: apt-get install linux-perf)"
    data = tmp_path / "perf.data"
    script = _write(tmp_path, "work.py", _WORK)
    rec = [perf, "record", "-q", "-o", str(data), "-e", "cpu-clock,page-faults", "-F", "997", "-g"]
    subprocess.run([*rec, "--", sys.executable, str(script)], check=True, timeout=120)
    texts = {}
    forms = {"default": [], "pid": ["-F", "+pid"], "nograph": ["-G"],
             "notime": ["-F", "comm,tid,period,event,ip,sym,dso"]}  # fmt: skip
    for name, extra in forms.items():
        out = subprocess.run(
            [perf, "script", "-i", str(data), *extra], check=True, capture_output=True, timeout=120
        ).stdout
        texts[name] = _write(tmp_path, f"{name}.txt", out.decode())
        assert detect(texts[name]) == "perf"
    by_tid = cctviz.read(texts["default"])
    ref = check_against_independent_parse(texts["default"], by_tid)
    by_pid = cctviz.read(texts["pid"])
    check_against_independent_parse(texts["pid"], by_pid)
    # perf's default prints the thread id: a profile per thread; with +pid, one per process
    python = [k for k in ref["threads"] if k[0].startswith("python")]
    assert len(python) >= 2
    assert by_pid.meta.get("threads", 0) >= 2 if isinstance(by_pid, cctviz.Tree) else True
    tree = by_pid if isinstance(by_pid, cctviz.Tree) else by_pid.tree
    assert {"cpu-clock", "cpu-clock samples", "page-faults samples"} <= set(tree.exc_metrics)
    assert tree.units["cpu-clock"] == "ns"
    assert tree.nodes["module"].astype(str).str.startswith("libpython").any()
    # without the time field: the same profiles and counts; no timeline
    untimed = cctviz.read(texts["notime"])
    assert untimed.meta["timestamps"] is False and by_tid.meta["timestamps"] is True
    assert untimed.profiles.equals(by_tid.profiles)
    for m in by_tid.exc_metrics:
        assert np.array_equal(untimed.values(m), by_tid.values(m)), m
    with pytest.raises(cctviz.ProfileError, match="no time"):
        cctviz.read_timeline(texts["notime"])
    # without the call graph every sample is still counted, on one frame
    flat = cctviz.read(texts["nograph"])
    keys, tot = _per_profile(flat)
    assert tot["cpu-clock samples"].sum() == sum(
        n for (_, ev), n in ref["samples"].items() if ev == "cpu-clock"
    )


# ------------------------------------------------------------------ timeline
_TIMED = re.compile(
    r"^\s*(.+?)\s+(\d+)(?:/(\d+))?\s+(?:\[\d+\]\s+)?(\d+)\.(\d+):\s+(?:\d+\s+)?(\S+?):"
)


def samples_in_time(path: Path) -> dict:
    """Per (comm, pid, tid): its samples of the first event, in time order, as
    (ns, root-first stack); read line by line (not the reader's code)."""
    out: defaultdict = defaultdict(list)
    first_event = None
    cur = None
    for line in path.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        m = _TIMED.match(line)
        if m:
            comm, num, tid, sec, frac, event = m.groups()
            first_event = first_event or event
            cur = None
            if event == first_event:
                ns = int(sec) * 10**9 + int(frac.ljust(9, "0")[:9])
                cur = [ns, []]
                out[(comm, int(num), int(tid or num))].append(cur)
            continue
        if cur is not None:
            _, _, rest = line.strip().partition(" ")
            sym, _, dso = rest.rpartition(" (")
            sym = re.sub(r"\+0x[0-9a-f]+$", "", sym)
            cur[1].insert(0, f"[unknown] ({dso.rstrip(')')})" if sym == "[unknown]" else sym)
    return {k: sorted(v, key=lambda s: s[0]) for k, v in out.items()}


@pytest.mark.parametrize("path", [WITH_PID, SYSTEM], ids=lambda p: p.name)
def test_timeline_charges_each_sample_until_the_next(path):
    """``read_timeline``: per thread, a context's time is the sum over the samples
    whose stack passes through it of the gap to the thread's next sample (the
    last: the median gap), computed here from the text."""
    tl = cctviz.read_timeline(path)
    ens = tl.ensemble()
    inc = ens.values("time (inc)")
    paths = _paths(ens.tree)
    got_profiles = [tuple(r) for r in tl.profiles[["comm", "pid", "tid"]].itertuples(index=False)]
    want_all = samples_in_time(path)
    assert sorted(got_profiles) == sorted(want_all)
    for k, who in enumerate(got_profiles):
        samples = want_all[who]
        t = np.array([s[0] for s in samples])
        gaps = np.diff(t)
        gaps = np.append(gaps, np.median(gaps) if gaps.size else 0)
        want: Counter = Counter()
        for (_, stack), g in zip(samples, gaps, strict=True):
            for d in range(1, len(stack or ["[no stack]"]) + 1):
                want[tuple((stack or ["[no stack]"])[:d])] += g
        got = {p: inc[i, k] for i, p in enumerate(paths) if inc[i, k] > 0}
        assert set(got) == {p for p, v in want.items() if v > 0}, who
        for p, v in got.items():
            assert v == pytest.approx(want[p], abs=1), (who, p)
    # the intervals nest: every event lies inside its parent context's interval
    ev = tl.events
    assert (ev["end"] > ev["start"]).all()
