"""``cctviz run``: torchrun with every rank profiling itself.

``cctviz run [torchrun options] [cctviz options] script.py [script args]``
hands the torchrun options to ``torch.distributed.run`` unchanged (one node
or many, static or elastic rendezvous) and starts each worker as
``python -m cctviz.runtime.worker [cctviz options] script.py [args]``, which
profiles the script in-process and writes its rank file. The cctviz options
(``--out``, ``--mode``, ``--warmup``, ``--per-step``, ``--python-frames``,
``--trace``) may appear anywhere before the script.

``--trace DIR`` also writes an OTF2 trace of the job into ``DIR`` (needs
``cctviz[scorep]``): each rank logs its transitions, the last rank to stop
writes the archive, and the launcher writes it after the job if no rank
did (a rank died); see :mod:`cctviz.runtime.trace`. ``--timeline`` traces
into ``OUT/timeline`` instead (``cctviz.read_timeline(OUT)``).

``--timeline-limit N`` caps each rank's trace at ``N`` transitions (default
one million, :data:`cctviz.runtime.trace.DEFAULT_LIMIT`; ``none``: no cap).
Past it the rank's trace stops, closed at the cut, and its metadata says so
(``timeline_dropped``, ``timeline_cut_ns``); the profiles stay complete.

``--dataset DIR`` converts the run folder into a dataset folder when the job
ends (``cctviz.open_dataset(DIR)``: statistics out of core), a chunk of ranks at
a time (:func:`cctviz.readers.cctviz_run.run_to_dataset`).

``--sample-hz HZ`` samples each rank's CPU, memory, file/pipe I/O and
context switches ``HZ`` times a second, charged to its current context
(:mod:`cctviz.runtime.sampler`; ``cpu_util``, ``rss_peak``,
``io_read_bytes``, ``io_write_bytes`` per context). Off (0) by default for
``cctviz run``.

``--flush S`` appends each rank's increments to ``OUT/live/`` every ``S``
seconds (default 1; ``off``: none), from a writer thread, so that
``cctviz.watch(OUT)`` and ``cctviz watch OUT`` follow the run while it runs
(:mod:`cctviz.runtime.live`). ``--prometheus [ADDR:]PORT`` serves the run,
watched, to Prometheus while the job runs (127.0.0.1 by default;
:mod:`cctviz.runtime.prometheus`). ``--expect-steps N`` says how many steps the
job will run (warm-up included; ``run.json``'s ``expected_steps``): ``cctviz
watch`` then shows how far it is.

On several nodes give ``--out`` a folder every node can write (a shared
file system): each rank writes its own file there.

A JAX program (its script imports jax and not torch, or ``--jax``) runs under
:mod:`cctviz.runtime.jaxrun` instead: ``--nproc-per-node`` processes on this
machine, each traced by ``jax.profiler``, without torch.
"""

from __future__ import annotations

import datetime as _dt
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..model.formats import RANK_GLOB, TIMELINE_DIR
from .live import parse_flush

#: our options: name -> takes a value
OPTIONS = {
    "--out": True,
    "--mode": True,
    "--warmup": True,
    "--per-step": False,
    "--python-frames": False,
    "--act-bytes": False,
    "--mem-peak": False,
    "--trace": True,
    "--timeline": False,
    "--timeline-limit": True,
    "--sample-hz": True,
    "--gpu-time": True,
    "--dataset": True,
    "--flush": True,
    "--expect-steps": True,
    "--prometheus": True,
    "--jax": False,
}


class LaunchError(ValueError):
    """Bad ``cctviz run`` command line."""


def _torchrun_options() -> dict[str, bool]:
    """torchrun's option strings -> whether they take a value."""
    from torch.distributed.run import get_args_parser

    out: dict[str, bool] = {}
    for a in get_args_parser()._actions:
        for s in a.option_strings:
            out[s] = a.nargs != 0
    return out


def split_command(argv: Sequence[str]) -> tuple[list[str], dict[str, Any], str, list[str], bool]:
    """Split a ``cctviz run`` command line.

    Returns ``(torchrun_tokens, cctviz_options, script, script_args, is_module)``.

    >>> t, o, s, a, m = split_command(
    ...     ["--nproc-per-node", "2", "--out", "d", "--mode=detailed", "train.py", "--out", "x"])
    >>> t, o["out"], o["mode"], s, a, m
    (['--nproc-per-node', '2'], 'd', 'detailed', 'train.py', ['--out', 'x'], False)
    """
    torch_opts = _torchrun_options()
    ours: dict[str, Any] = {}
    tokens: list[str] = []
    module = False
    i = 0
    argv = list(argv)
    while i < len(argv):
        t = argv[i]
        key, eq, val = t.partition("=")
        if key in OPTIONS:
            if OPTIONS[key]:
                if not eq:
                    if i + 1 >= len(argv):
                        raise LaunchError(f"{key} needs a value")
                    i += 1
                    val = argv[i]
                ours[key[2:].replace("-", "_")] = val
            else:
                ours[key[2:].replace("-", "_")] = True
            i += 1
            continue
        if key in ("-m", "--module"):
            module = True
            i += 1
            continue
        if key in ("--no-python", "--no_python"):
            raise LaunchError("--no-python: cctviz profiles Python scripts only")
        if t.startswith("-"):
            if key not in torch_opts:
                raise LaunchError(f"unknown option {t!r} (not a torchrun or cctviz option)")
            tokens.append(t)
            if torch_opts[key] and not eq:
                if i + 1 >= len(argv):
                    raise LaunchError(f"{key} needs a value")
                tokens.append(argv[i + 1])
                i += 1
            i += 1
            continue
        return tokens, ours, t, argv[i + 1 :], module
    raise LaunchError("no training script given")


def parse_hz(text: str | None) -> float:
    """``--sample-hz``: samples per second, >= 0 (0 or absent: no sampler).

    >>> parse_hz("10"), parse_hz(None)
    (10.0, 0.0)
    """
    if text is None:
        return 0.0
    try:
        hz = float(text)
    except ValueError:
        hz = -1.0
    if not hz >= 0 or hz == float("inf"):
        raise LaunchError(f"--sample-hz needs a number of samples per second >= 0, not {text!r}")
    return hz


def parse_steps(text: str | None) -> int | None:
    """``--expect-steps N``: the steps the job will run, warm-up included (a
    watch's progress), a positive integer.

    >>> parse_steps("60"), parse_steps(None)
    (60, None)
    """
    return None if text is None else _positive(text, "--expect-steps needs a positive integer")


def _positive(text: str, need: str) -> int:
    """``text`` as an integer >= 1; a :class:`LaunchError` saying ``need`` else."""
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise LaunchError(f"{need}, not {text!r}")
    return n


def parse_limit(text: str | None) -> int | None:
    """``--timeline-limit``: a positive integer, or ``none`` for no cap (default
    :data:`~cctviz.runtime.trace.DEFAULT_LIMIT` when not given).

    >>> parse_limit("500"), parse_limit("none"), parse_limit(None)
    (500, None, 1000000)
    """
    from .trace import DEFAULT_LIMIT

    if text is None:
        return DEFAULT_LIMIT
    if str(text).strip().lower() == "none":
        return None
    return _positive(text, "--timeline-limit needs a positive integer or 'none'")


def prepare_trace(trace: Path, *, clean: bool) -> None:
    """Check that ``--trace DIR`` can take a new archive (the otf2 package is
    there, no archive in it yet); ``clean``: remove the raw files a crashed run left."""
    from .trace import ARCHIVE, RAW_DIR, require_otf2

    try:
        require_otf2()
    except ImportError as e:
        raise LaunchError(f"--trace: {e}") from None
    if (trace / f"{ARCHIVE}.otf2").exists():
        raise LaunchError(f"--trace: {trace} holds an OTF2 archive already; give a new folder")
    if clean and (trace / RAW_DIR).is_dir():
        import shutil

        shutil.rmtree(trace / RAW_DIR)


def finish_trace(trace: Path) -> None:
    """After the job: write the archive of the ranks that did not (a rank
    died, or none completed the set), and say where it is."""
    from .trace import ARCHIVE, merge_when_complete

    try:
        merge_when_complete(trace, force=True)
    except Exception as e:  # noqa: BLE001 - the profiles are written; say what failed
        print(f"cctviz: could not write the OTF2 trace: {e!r}", file=sys.stderr)
    if (trace / f"{ARCHIVE}.otf2").exists():
        print(f"cctviz: OTF2 trace in {trace}/{ARCHIVE}.otf2", file=sys.stderr)


def serve_prometheus(out: Path, endpoint: tuple[str, int]) -> Any:
    """``--prometheus``: the run served to Prometheus while the job runs
    (:class:`cctviz.runtime.prometheus.Exporter`); a :class:`LaunchError`
    where it cannot (no prometheus_client, the port taken)."""
    from .prometheus import Exporter

    try:
        exporter = Exporter(out, *endpoint)
    except (ImportError, OSError) as e:
        raise LaunchError(str(e)) from None
    print(f"cctviz: Prometheus metrics at {exporter.address}", file=sys.stderr, flush=True)
    return exporter


def _opt(tokens: list[str], *names: str) -> str | None:
    for k, t in enumerate(tokens):
        key, eq, val = t.partition("=")
        if key in names:
            return val if eq else (tokens[k + 1] if k + 1 < len(tokens) else None)
    return None


def node_rank_of(tokens: list[str]) -> str:
    """The ``--node-rank`` among torchrun's options (``"0"`` when not given)."""
    return _opt(tokens, "--node-rank", "--node_rank") or "0"


def jax_command(argv: Sequence[str]) -> tuple[str, list[str], int, Path] | None:
    """``(script, args, processes, out)`` where ``argv`` runs a JAX program (its
    script imports jax and not torch, or ``--jax`` is given): those run under
    :mod:`cctviz.runtime.jaxrun`, without torch. None for any other program.

    >>> jax_command(["--nproc-per-node", "2", "--jax", "--out", "d", "p.py", "-x"])[1:]
    (['-x'], 2, PosixPath('d'))
    """
    from .jaxrun import looks_like_jax

    argv = list(argv)
    values: dict[str, str] = {}
    forced, i = False, 0
    while i < len(argv) and argv[i].startswith("-"):
        key, eq, val = argv[i].partition("=")
        if key == "--jax":
            forced, i = True, i + 1
            continue
        takes = OPTIONS.get(key, key in ("--nproc-per-node", "--nproc_per_node", "--nnodes"))
        if takes and not eq:
            val = argv[i + 1] if i + 1 < len(argv) else ""
            i += 1
        values[key] = val
        i += 1
    if i >= len(argv):
        return None
    script = argv[i]
    try:
        source = Path(script).read_text(errors="replace") if Path(script).is_file() else ""
    except OSError:
        source = ""
    if not forced and not looks_like_jax(source):
        return None
    other = sorted(set(values) - {"--out", "--nproc-per-node", "--nproc_per_node", "--nnodes"})
    if other:
        raise LaunchError(
            f"{', '.join(other)}: not for JAX programs (give --nproc-per-node and --out)"
        )
    if values.get("--nnodes", "1") != "1":
        raise LaunchError("a JAX program runs on this machine only: --nnodes must be 1")
    nproc = _positive(values.get("--nproc-per-node") or values.get("--nproc_per_node") or "1",
                      "--nproc-per-node needs a positive integer")  # fmt: skip
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    out = Path(values.get("--out") or f"cctviz-run-{Path(script).stem}-{stamp}")
    return script, argv[i + 1 :], nproc, out


def run(argv: Sequence[str]) -> int:
    """Run ``cctviz run`` with ``argv`` (everything after ``run``); returns the exit code."""
    jax = jax_command(argv)
    if jax is not None:
        from .jaxrun import JaxRunError, run_jax

        try:
            return run_jax(*jax, argv=argv)
        except JaxRunError as e:
            raise LaunchError(str(e)) from None
    import torch
    from torch.distributed import run as torchrun
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError

    from .runfolder import update_run_file

    tokens, ours, script, script_args, module = split_command(argv)
    mode = ours.get("mode", "light")
    if mode not in ("light", "detailed"):
        raise LaunchError(f"--mode must be light or detailed, not {mode!r}")
    try:
        warmup = int(ours.get("warmup", 0))
    except ValueError:
        raise LaunchError(f"--warmup needs an integer, not {ours['warmup']!r}") from None
    sample_hz = parse_hz(ours.get("sample_hz"))
    try:
        flush = parse_flush(ours.get("flush"))
    except ValueError as e:
        raise LaunchError(str(e)) from None
    expect_steps = parse_steps(ours.get("expect_steps"))
    endpoint = None
    if ours.get("prometheus"):
        from .prometheus import parse_endpoint

        try:
            endpoint = parse_endpoint(ours["prometheus"])
        except ValueError as e:
            raise LaunchError(str(e)) from None
    if not module and not Path(script).is_file():
        raise LaunchError(f"{script}: no such script")
    stem = script.rsplit(".", 1)[-1] if module else Path(script).stem
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    out = Path(ours.get("out") or f"cctviz-run-{stem}-{stamp}")
    trace = Path(ours["trace"]) if ours.get("trace") else None
    limit = parse_limit(ours.get("timeline_limit"))
    if "timeline_limit" in ours and trace is None and not ours.get("timeline"):
        raise LaunchError("--timeline-limit: give --timeline (or --trace DIR) as well")
    if trace is None and ours.get("timeline"):  # the trace inside the run: read_timeline(out)
        trace = out / TIMELINE_DIR
    if trace is not None:
        prepare_trace(trace, clean=node_rank_of(tokens) == "0")
    nnodes = _opt(tokens, "--nnodes") or "1"
    nproc = _opt(tokens, "--nproc-per-node", "--nproc_per_node") or "1"
    node_rank = node_rank_of(tokens)
    worker = ["-m", "cctviz.runtime.worker", "--out", str(out), "--mode", mode]
    worker += ["--warmup", str(warmup)]
    worker += ["--per-step"] if ours.get("per_step") else []
    worker += ["--python-frames"] if ours.get("python_frames") else []
    worker += ["--act-bytes"] if ours.get("act_bytes") else []
    worker += ["--mem-peak"] if ours.get("mem_peak") else []
    worker += ["--module"] if module else []
    worker += ["--trace", str(trace)] if trace is not None else []
    worker += ["--timeline-limit", str(limit)] if trace is not None else []
    worker += ["--sample-hz", str(sample_hz)] if sample_hz else []
    worker += ["--flush", str(flush)]
    if ours.get("gpu_time"):
        if ours["gpu_time"] not in ("phase", "context"):
            raise LaunchError(f"--gpu-time: phase or context, not {ours['gpu_time']!r}")
        worker += ["--gpu-time", ours["gpu_time"]]
    args = torchrun.parse_args([*tokens, *worker, script, *script_args])
    # a port that cannot serve is said before anything is written or started
    exporter = serve_prometheus(out, endpoint) if endpoint and node_rank == "0" else None
    out.mkdir(parents=True, exist_ok=True)
    if node_rank == "0":
        facts: dict[str, Any] = {
            "run": out.name,
            "command": " ".join(["cctviz", "run", *argv]),
            "nnodes": nnodes,
            "nproc_per_node": nproc,
            "mode": mode,
            "warmup": warmup,
            "sample_hz": sample_hz,
            "flush": flush,
            "torch_version": torch.__version__,
            "launched": _dt.datetime.now(_dt.timezone.utc).isoformat(),
        }
        if trace is not None:
            facts["trace"] = str(trace)
            facts["timeline_limit"] = limit
        if expect_steps:  # cctviz watch shows how far the job is
            facts["expected_steps"] = expect_steps
        if nnodes.isdigit() and nproc.isdigit():
            facts["expected_world_size"] = int(nnodes) * int(nproc)
        update_run_file(out, facts)
    print(f"cctviz: profiling {script} ({mode} mode) into {out}/", file=sys.stderr, flush=True)
    code = 1  # until the job returns
    try:
        torchrun.run(args)
        code = 0
    except ChildFailedError as e:
        print(f"cctviz: the job failed: {e}", file=sys.stderr)
    except Exception as e:  # noqa: BLE001 - the launcher's own failure (rendezvous): said
        print(f"cctviz: the job could not run: {type(e).__name__}: {e}", file=sys.stderr)
    finally:  # every rank is gone: a watch takes one without its last record as cut
        if node_rank == "0":
            ended = _dt.datetime.now(_dt.timezone.utc).isoformat()
            update_run_file(out, {"ended": ended, "exit_code": code})
        if exporter is not None:
            exporter.close()
    if trace is not None:
        finish_trace(trace)
    n = len(list(out.glob(RANK_GLOB)))
    print(
        f"cctviz: {n} rank file(s) in {out}/; look at them with `cctviz tree {out}`",
        file=sys.stderr,
    )
    if ours.get("dataset") and node_rank == "0" and n:
        code = max(code, write_dataset_of(out, Path(ours["dataset"])))
    return code


def write_dataset_of(out: Path, dataset: Path) -> int:
    """``--dataset``: the run folder converted into a dataset folder; 0, or 1 with
    the reason printed (the rank files stay, whatever happens)."""
    from ..errors import ProfileError
    from ..readers.cctviz_run import run_to_dataset

    try:
        run_to_dataset(out, dataset, progress=False)
    except (ProfileError, ImportError) as e:
        print(f"cctviz: could not write the dataset: {e}", file=sys.stderr)
        return 1
    print(f"cctviz: dataset in {dataset}/; open it with cctviz.open_dataset", file=sys.stderr)
    return 0
