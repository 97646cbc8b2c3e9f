"""A run watched while it runs (issue 38): real gloo jobs under ``cctviz run``,
followed by ``cctviz.watch`` in this process and ``cctviz watch`` in another."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import threading
import time
import urllib.request
import warnings
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

import cctviz
from cctviz.errors import ProfileError
from cctviz.model.formats import live_file
from cctviz.readers._live import RankStream

from .conftest import CCTVIZ, EXAMPLE, ROOT, SCRIPTS, follow, run_job, stop

#: the straggler's onset: rank 1 sleeps SLEEP_MS in blocks.1.mlp from step ONSET on
ONSET, SLEEP_MS, STEPS = 30, 40, 60
#: the regression: every rank sleeps this long from step ONSET on. The rule asks
#: for 20% of a step; CI's loaded cores stretch a 141 ms step two- or threefold
#: while the sleep stays, so 40 ms fell below it there (the detection study on a
#: quiet machine is benchmarks/live_watch.py)
REGRESSION_MS = 100
#: the leak: rank 1 keeps this many MB more every step from ONSET on
LEAK_MB = 8
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONWARNINGS": "ignore"}


def start_job(
    out, *script_args: str, flush: str = "0.5", launch: tuple[str, ...] = ()
) -> subprocess.Popen:
    """examples/train.py under ``cctviz run`` on 2 ranks; ``launch``: more
    options of ``cctviz run``."""
    cmd = [*CCTVIZ, "run", "--standalone", "--nproc-per-node", "2", "--out", str(out)]
    cmd += ["--warmup", "2", "--flush", flush, "--expect-steps", str(STEPS), *launch]
    cmd += [str(EXAMPLE), "--steps", str(STEPS), *script_args]
    return subprocess.Popen(
        cmd,
        env=ENV,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # stop() ends the launcher and its workers together
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Scraper(threading.Thread):
    """Scrapes ``url`` every half second, as Prometheus would, until stopped:
    the texts it got."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.url, self.texts, self.done = url, [], threading.Event()

    def run(self) -> None:
        while not self.done.wait(0.5):
            with contextlib.suppress(OSError):
                with urllib.request.urlopen(self.url, timeout=2) as r:
                    self.texts.append(r.read().decode())


@pytest.fixture(scope="module")
def straggler_run(tmp_path_factory):
    """examples/train.py on 2 ranks, rank 1 a straggler from step ONSET; watched
    here, by ``cctviz watch`` in another process and scraped from its
    ``--prometheus`` endpoint."""
    out = tmp_path_factory.mktemp("live") / "straggler"
    port = free_port()
    job = start_job(
        out, "--sleep", f"|1:blocks.1.mlp:{SLEEP_MS}", "--sleep-block", str(ONSET),
        launch=("--prometheus", str(port)),
    )  # fmt: skip
    cli = subprocess.Popen(
        [*CCTVIZ, "watch", str(out), "--every", "0.2", "--wait", "120"],
        env=ENV, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    scraper = Scraper(f"http://127.0.0.1:{port}/metrics")
    scraper.start()
    try:
        w, came, seen = follow(out, job)
        printed, err = cli.communicate(timeout=60)
    finally:
        scraper.done.set()
        scraper.join()
        if cli.poll() is None:
            cli.kill()
            cli.wait()
    return SimpleNamespace(
        out=out, w=w, came=came, seen=seen, printed=printed, err=err, port=port,
        scrapes=scraper.texts,
    )  # fmt: skip


def test_snapshots_grow_while_the_job_runs(straggler_run):
    w, seen = straggler_run.w, straggler_run.seen
    growth = [b for a, b in zip(seen, seen[1:], strict=False) if b > a]
    assert len(growth) >= 3, f"steps seen while running: {seen}"
    assert seen[0] < 2 * STEPS  # the first look came before the end
    steps = w.steps()
    assert sorted(steps["rank"].unique()) == [0, 1]
    assert (steps.groupby("rank").size() == STEPS).all()


def test_straggler_alerted_within_2_s_naming_rank_and_context(straggler_run):
    w, came = straggler_run.w, straggler_run.came
    alerts = w.alerts
    assert list(alerts["kind"]) == ["straggler"], alerts[["kind", "rank", "step", "message"]]
    a = alerts.iloc[0]
    said = a.to_string()  # what a failure shows
    assert a["rank"] == 1 and len(came) == 1 and came[0]["message"] == a["message"], said
    assert ONSET - 6 <= a["step"] <= ONSET + 3, said  # a loaded machine shifts the waits a step
    assert a["context"].endswith("blocks.1/mlp"), said
    # the rank's own clock: what the sleep adds to the context a step (40.2-40.6
    # ms on a quiet machine; a CI run whose steps took 172 ms, the others waiting
    # 132 ms a step, said 61 ms: the rank's compute slowed in that context too)
    assert 0.5 * SLEEP_MS < a["late [s]"] * 1e3 < 2.0 * SLEEP_MS, said
    assert 0 < a["after [s]"] < 2.0, said


def test_a_watch_of_the_ended_run_finds_the_same_straggler(straggler_run):
    """Read after the run, all at once (every rank's last record in), the
    straggler is found as it was while the run ran."""
    out, w = straggler_run.out, straggler_run.w
    again = cctviz.watch(out, wait=5).alerts
    assert list(again["kind"]) == ["straggler"] and again.iloc[0]["rank"] == 1
    assert again.iloc[0]["step"] == w.alerts.iloc[0]["step"]
    assert again.iloc[0]["context"] == w.alerts.iloc[0]["context"]


def test_the_last_seconds_are_the_records_of_those_seconds(straggler_run):
    """``ensemble(last=3)`` of the run read again with 3 s of running sums kept:
    per rank, the steps it counts (a step counts where it starts) are the step
    rows that began within its window (the rank's own step clock: the run has
    ended, no step is open at its last record), its exclusive time adds up to about the
    window's wall time, maxima are left out; a window longer than the run is the
    run."""
    out = straggler_run.out
    w = cctviz.watch(out, wait=5, keep=3.0)
    whole, win = w.ensemble(), w.ensemble(last=3.0)
    tree = win.tree
    step = next(i for i in range(len(tree)) if tree.path(i)[1:] == ("step",))
    calls = win.values("calls")[step]
    for p, r in enumerate(win.profiles["rank"]):
        s = w._streams[int(r)]
        base = s.since(3.0)
        span = win.meta["window_s"][int(r)]
        assert 3.0 <= span < 3.0 + 2 * float(s.meta.get("flush", 1.0)), span
        rows = s.steps()
        began = rows["start_ns"] + s.wall_offset_ns > (base[0] if base else 0)
        began = rows[began & ~rows["warmup"].astype(bool)]
        assert calls[p] == len(began), (r, calls[p], len(began))
        busy = win.values("time")[:, p].sum() / 1e9
        assert 0.8 < busy / span < 1.05, (r, busy, span)
    assert not set(win.exc_metrics) & set(whole.meta.get("aggregation", {}))
    longer = w.ensemble(last=1e6)
    for m in longer.exc_metrics:
        assert np.array_equal(longer.values(m), whole.values(m)), m
    with pytest.raises(ValueError, match="last"):
        w.ensemble(last=0)


def test_final_snapshot_equals_the_post_hoc_read(straggler_run):
    out, w = straggler_run.out, straggler_run.w
    assert w.ended
    live, read = w.ensemble(), cctviz.read(out)
    assert live.profiles.equals(read.profiles)
    assert live.exclusive_rows.equals(read.exclusive_rows)
    assert live.tree.nodes.equals(read.tree.nodes)
    assert live.meta == read.meta
    # every rank's increments alone rebuild its rank file
    for r in (0, 1):
        s = RankStream(live_file(out, r))
        s.update()
        t, f = s.tree(), cctviz.read(out / f"rank-{r:05d}.cctviz")
        assert s.final and not s.problem
        assert t.metrics.equals(f.metrics) and t.callpaths.equals(f.callpaths)


def test_cli_watch_from_another_process(straggler_run):
    out, printed, err = straggler_run.out, straggler_run.printed, straggler_run.err
    lines = printed.splitlines()
    steps = [x for x in lines if x.startswith("step ")]
    assert len(steps) == STEPS - 2, printed[-2000:] + err[-2000:]  # the warm-up steps left out
    alerts = [x for x in lines if x.startswith("ALERT straggler")]
    assert len(alerts) == 1 and "rank 1 is late" in alerts[0], printed[-2000:]
    assert "the run has ended" in lines[-1]
    # cctviz run --expect-steps: a progress bar on stderr, to the last step
    assert cctviz.watch(out, wait=5).expected_steps == STEPS
    bar = err.replace("\r", "\n").splitlines()
    assert any(f"{STEPS}/{STEPS}" in x for x in bar) and not any("step " in x for x in bar), err


def test_cli_watch_steps_of_an_ended_run(straggler_run, tmp_path):
    """``--steps`` says the count where the launch did not: the bar follows it."""
    out = straggler_run.out
    p = subprocess.run(
        [*CCTVIZ, "watch", str(out), "--steps", str(2 * STEPS), "--wait", "5"],
        env=ENV, cwd=ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    assert f"{STEPS}/{2 * STEPS}" in p.stderr.replace("\r", "\n"), p.stderr
    bad = subprocess.run(
        [*CCTVIZ, "watch", str(out), "--steps", "0"], env=ENV, cwd=ROOT,
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert bad.returncode == 2 and "--steps" in bad.stderr


def test_prometheus_endpoint_serves_the_straggler_while_the_job_runs(straggler_run):
    """``cctviz run --prometheus PORT``: scraped while the job ran, labelled by
    job, component and rank; rank 0 waits at the collectives for the straggler,
    the late-rank count rises to 1; the endpoint closes with the job."""
    run = straggler_run
    assert len(run.scrapes) >= 5, f"{len(run.scrapes)} scrapes"
    series = [parse_exposition(t) for t in run.scrapes]
    steps = [max((v for k, v in x.items() if k[0] == "cctviz_steps_total"), default=0)
             for x in series]  # fmt: skip
    assert steps[0] < STEPS and steps[-1] >= STEPS - 10 and steps == sorted(steps), steps
    last = series[-1]
    rank = {r: last[("cctviz_steps_total", run.out.name, "", r)] for r in ("0", "1")}
    assert rank == {"0": pytest.approx(rank["1"], abs=5), "1": rank["1"]}
    waits = {r: sum(v for k, v in last.items() if k[0] == "cctviz_collective_seconds_total"
                    and k[3] == r) for r in ("0", "1")}  # fmt: skip
    # from ONSET on rank 0 waits SLEEP_MS a step for rank 1 (half of it, on loaded cores)
    done = rank["0"] - ONSET
    assert waits["0"] - waits["1"] > 0.5 * done * SLEEP_MS / 1e3, waits
    late = [x.get(("cctviz_late_ranks", run.out.name, ""), 0) for x in series]
    assert max(late) == 1 and late[0] == 0, late
    assert max(x.get(("cctviz_late", run.out.name, "", "1"), 0) for x in series) == 1
    assert max(x.get(("cctviz_late", run.out.name, "", "0"), 0) for x in series) == 0
    assert last[("cctviz_alerts_total", run.out.name, "straggler")] == 1
    with pytest.raises(OSError):  # closed with the job
        urllib.request.urlopen(f"http://127.0.0.1:{run.port}/metrics", timeout=2)


def parse_exposition(text: str) -> dict[tuple, float]:
    """A scrape, by (name, job, component, rank[, context]) or for the alerts
    (name, job, kind), with prometheus_client's own parser."""
    from prometheus_client.parser import text_string_to_metric_families

    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            keys = ("job", "component", "rank", "context", "kind")
            out[(s.name, *(s.labels[k] for k in keys if k in s.labels))] = s.value
    return out


def test_a_regression_of_every_rank_is_alerted_within_2_s(tmp_path):
    """Both ranks spend REGRESSION_MS more in blocks.2.attn from step ONSET on: no
    rank is late, the steps are slower; one regression alert names the step,
    the context and how much."""
    out = tmp_path / "regression"
    both = f"0:blocks.2.attn:{REGRESSION_MS},1:blocks.2.attn:{REGRESSION_MS}"
    w, came, _ = follow(out, start_job(out, "--sleep", f"|{both}", "--sleep-block", str(ONSET)))
    alerts = w.alerts
    # a failure shows the steps' median times, to tell a baseline the load stretched
    times = (w.by_step()["time [s]"] * 1e3).round().astype(int)
    steps_ms = " ".join(f"{k}:{v}" for k, v in times.items())
    # one regression, first; a straggler alert may follow where the loaded machine
    # kept one rank late at the collectives for steps (CI saw one; docs/known-issues.md)
    kinds = list(alerts["kind"])
    assert kinds[:1] == ["regression"] and set(kinds[1:]) <= {"straggler"}, (
        f"{alerts[['kind', 'rank', 'step', 'message']]}\nstep:ms {steps_ms}"
    )
    a = alerts.iloc[0]
    said = f"{a.to_string()}\nstep:ms {steps_ms}"
    assert pd.isna(a["rank"]) and len(came) == len(kinds), said
    assert ONSET - 6 <= a["step"] <= ONSET + 3, said
    assert a["context"].endswith("blocks.2/attn"), said
    # how much: the step grew by about the sleep; the context's own growth is judged
    # against a baseline the loaded machine may have taken on slower or faster steps
    # (CI: 167 ms for a 100 ms sleep, its step +100 ms; docs/known-issues.md)
    assert 0.5 * REGRESSION_MS < a["gap [s]"] * 1e3 < 2.5 * REGRESSION_MS, said
    assert 0.5 * REGRESSION_MS < a["late [s]"] * 1e3 < 2.5 * REGRESSION_MS, said
    assert 0 < a["after [s]"] < 2.0, said


def test_memory_growth_is_alerted_naming_the_rank(tmp_path):
    """Rank 1 keeps LEAK_MB more every step from ONSET on (its RSS sampled at
    20 Hz): one memory alert, of rank 1, from about the step where it began;
    rank 0's memory, sampled too, raises none."""
    out = tmp_path / "leak"
    job = start_job(
        out, "--leak", f"1:blocks.0.mlp:{LEAK_MB}", "--leak-from", str(ONSET),
        launch=("--sample-hz", "20"),
    )  # fmt: skip
    w, came, _ = follow(out, job)
    alerts = w.alerts
    shown = alerts[["kind", "rank", "step", "context", "message"]].to_string()
    memory = alerts[alerts["kind"] == "memory"]
    assert len(memory) == 1 and len(came) == len(alerts), shown
    # writing the leak takes time: on loaded cores rank 1 may also be truly late,
    # and then only there (the context that leaks)
    others = alerts[alerts["kind"] != "memory"]
    assert (others["kind"] == "straggler").all() and (others["rank"] == 1).all(), shown
    assert others["context"].str.endswith("blocks.0/mlp").all(), shown
    a = memory.iloc[0]
    said = a.to_string()
    assert a["rank"] == 1 and "RSS peak grew" in a["message"], said
    assert ONSET - 3 <= a["step"] <= ONSET + 3, said
    assert w.memory.least < a["grown [B]"], said
    assert "/step/" in a["context"], said  # where RSS was read: within a step
    rss = w.ranks_now()["rss [B]"]
    assert rss[1] - rss[0] > 0.5 * (STEPS - ONSET) * LEAK_MB * 2**20, rss


def test_clean_run_raises_no_alert(tmp_path):
    out = tmp_path / "clean"
    w, came, _ = follow(out, start_job(out))
    assert w.alerts.empty and not came, w.alerts[["kind", "rank", "step", "message"]]
    assert len(w.by_step()) == STEPS - 2


def test_killed_rank_leaves_its_flushed_data_readable(tmp_path):
    out = tmp_path / "killed"
    cmd = [*CCTVIZ, "run", "--standalone", "--nproc-per-node", "2", "--out", str(out)]
    cmd += ["--flush", "0.2", str(SCRIPTS / "faulty.py"), "--how", "kill"]
    cmd += ["--fail-rank", "1", "--fail-step", "15", "--steps", "30", "--step-ms", "60"]
    assert run_job(cmd, check=False).returncode != 0
    assert not (out / "rank-00001.cctviz").exists()  # the rank died before writing its file
    w = cctviz.watch(out, wait=5)
    ens = w.ensemble()
    prof = ens.profiles.set_index("rank")
    assert prof.loc[1, "status"] == "cut" and not prof.loc[1, "ok"]
    assert prof.loc[1, "problem"].startswith("no last record: the rank stopped after step")
    done = prof.loc[1, "steps"]
    assert 5 <= done <= 15  # what its flushes had, up to the kill at step 15
    tree = ens.profile(1)
    step = [i for i in range(len(tree)) if tree.path(i)[1:] == ("step",)][0]
    assert tree.metrics.loc[step, "calls"] >= done
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert cctviz.read(out).profiles.set_index("rank").loc[1, "status"] == "missing"


def test_truncated_or_damaged_record_is_read_up_to_it(straggler_run, tmp_path):
    out = straggler_run.out
    whole = RankStream(live_file(out, 0))
    whole.update()
    data = live_file(out, 0).read_bytes()
    cut = tmp_path / "rank-00000.chunks"
    cut.write_bytes(data[:-10])
    s = RankStream(cut)
    assert s.update() == whole.records - 1
    assert s.problem.startswith("an incomplete record at byte") and not s.final
    damaged = bytearray(data)
    damaged[-5] ^= 0xFF
    cut.write_bytes(bytes(damaged))
    s = RankStream(cut)
    assert s.update() == whole.records - 1 and "CRC mismatch" in s.problem
    # a watch of a run whose rank file is gone and whose live file is cut says so
    run = tmp_path / "run"
    shutil.copytree(out, run)
    (run / "rank-00000.cctviz").unlink()
    live_file(run, 0).write_bytes(data[:-10])
    prof = cctviz.watch(run, wait=5).ensemble().profiles.set_index("rank")
    assert prof.loc[0, "status"] == "cut" and "an incomplete record" in prof.loc[0, "problem"]


def test_bad_folders_are_refused_or_waited_for(tmp_path):
    (tmp_path / "notes.txt").write_text("not a run")
    with pytest.raises(ProfileError, match="not a run folder"):
        cctviz.watch(tmp_path)
    with pytest.raises(ProfileError, match="a file"):
        cctviz.watch(tmp_path / "notes.txt")
    t0 = time.monotonic()
    with pytest.raises(TimeoutError, match="no rank has written a record in 0.3 s"):
        cctviz.watch(tmp_path / "not-started-yet", wait=0.3)
    assert time.monotonic() - t0 >= 0.3


def test_a_job_that_ends_before_any_record_is_said_at_once(tmp_path):
    """The launcher cannot start the ranks (its rendezvous port is taken): the
    watch waiting for the run's first record says the job ended, with its exit
    code, instead of waiting out its timeout."""
    out = tmp_path / "no-start"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        cmd = [*CCTVIZ, "run", "--nnodes", "1", "--nproc-per-node", "2", "--master-addr"]
        cmd += ["127.0.0.1", "--master-port", port, "--out", str(out), str(EXAMPLE)]
        assert run_job(cmd, check=False).returncode != 0
    assert not (out / "live").exists()
    t0 = time.monotonic()
    with pytest.raises(ProfileError, match=r"the job ended \(exit code 1\) before any rank"):
        cctviz.watch(out, wait=60)
    assert time.monotonic() - t0 < 30


def test_a_prometheus_port_that_cannot_serve_is_said_before_the_job(tmp_path):
    out = tmp_path / "no-port"
    cmd = [*CCTVIZ, "run", "--standalone", "--nproc-per-node", "1", "--out", str(out)]
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        p = run_job([*cmd, "--prometheus", str(port), str(EXAMPLE)], check=False)
    assert p.returncode == 2 and f"cannot serve on 127.0.0.1:{port}" in p.stderr, p.stderr
    assert not out.exists()  # nothing written, no rank started
    p = run_job([*cmd, "--prometheus", "127.0.0.1:99999", str(EXAMPLE)], check=False)
    assert p.returncode == 2 and "a port of 1-65535, not '127.0.0.1:99999'" in p.stderr


def test_rules_that_cannot_hold_are_refused():
    for bad in (
        lambda: cctviz.live.StragglerRule(steps=0),
        lambda: cctviz.live.StragglerRule(share=float("nan")),
        lambda: cctviz.live.RegressionRule(baseline=0),
        lambda: cctviz.live.BlockedRule(share=1.5),
    ):
        with pytest.raises(ValueError, match="needs"):
            bad()


def test_the_timeline_grows_while_the_job_runs_and_ends_as_its_archive(tmp_path):
    """A traced job (``--trace``) watched: ``Watch.timeline()`` grows while it
    runs, every interval it has closed is the archive's to the nanosecond (the
    same calls of each context, in order, same starts and ends), and once the
    run has ended it is ``cctviz.read_timeline`` of the archive."""
    from cctviz.views.timeline import TimelineView

    out, trace = tmp_path / "traced", tmp_path / "trace"
    job = start_job(out, launch=("--trace", str(trace)))
    w = cctviz.watch(out, wait=120).start(every=0.2)
    sizes, live = [], None
    try:
        while job.poll() is None:
            tl = w.timeline()
            if tl.meta.get("live"):
                sizes.append(len(tl))
                live = tl if len(tl) else live
            time.sleep(0.3)
        assert job.wait() == 0 and w.wait(timeout=30)
        final = w.timeline()
    finally:
        w.close()
        stop(job)
    growth = [b for a, b in zip(sizes, sizes[1:], strict=False) if b > a]
    assert len(growth) >= 3, f"events seen while running: {sizes}"
    assert not final.meta.get("live")
    archive = cctviz.read_timeline(trace)
    assert final.events.equals(archive.events)

    def calls(tl):
        ev = tl.events
        path = np.asarray(tl.tree.callpaths).astype(str)[ev["node"].to_numpy()]
        rank = tl.profiles["rank"].to_numpy()[ev["profile"].to_numpy()]
        out = pd.DataFrame({"rank": rank, "path": path, "start": ev["start"], "end": ev["end"]})
        return out.sort_values(["rank", "path", "start", "end"], kind="stable")

    seen, whole = calls(live), calls(archive)
    last = seen.groupby("rank")["end"].max()  # where a rank's open contexts end for now
    for (rank, path), mine in seen.groupby(["rank", "path"]):
        theirs = whole[(whole["rank"] == rank) & (whole["path"] == path)]
        n = len(mine) - int(mine["end"].iloc[-1] == last[rank])  # the last may be open
        assert (mine["start"].to_numpy() == theirs["start"].to_numpy()[: len(mine)]).all()
        assert (mine["end"].to_numpy()[:n] == theirs["end"].to_numpy()[:n]).all(), (rank, path)
    assert len(TimelineView(live).lanes) == 2
