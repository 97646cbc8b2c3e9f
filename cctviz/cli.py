"""Command line: ``cctviz tree FILE``, ``cctviz info FILE``, ``cctviz export FILE -o fig.pdf``,
``cctviz view FILE``, ``cctviz whatif RUN``, ``cctviz watch RUN``, ``cctviz run ...``,
``cctviz demo``."""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from .errors import CCTVizError
from .views.kinds import BUILT_IN_VIEWS


def _cmd_tree(a: argparse.Namespace) -> int:
    from .ops.text import render
    from .readers import read

    obj = read(a.file, format=a.format)
    print(
        render(
            obj,
            a.metric,
            depth=a.depth,
            max_nodes=a.max_nodes or None,
            threshold=a.threshold,
            width=a.width or None,
            second=a.second,
            hint="cli",
        )
    )
    return 0


def _cmd_info(a: argparse.Namespace) -> int:
    from .ops.text import describe, format_info
    from .readers import read

    obj = read(a.file, format=a.format)
    info = describe(obj)
    if a.json:
        print(json.dumps(info, default=str, indent=2))
    else:
        print(f"{a.file}")
        print(format_info(info))
    return 0


def _key_value(text: str, what: str) -> tuple[str, float]:
    """``WHERE=NUMBER`` (the last ``=`` splits: a where may hold one)."""
    where, sep, number = text.rpartition("=")
    try:
        if not sep or not where:
            raise ValueError
        return where, float(number)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{what}: expected WHERE=NUMBER, got {text!r}") from None


def _cmd_whatif(a: argparse.Namespace) -> int:
    import pandas as pd

    from .perfmodel import Balance, Bandwidth, Delay, Scale, replay

    changes: list[Any] = [Balance(w) for w in a.balance]
    changes += [Scale(*_key_value(t, "--scale")) for t in a.scale]
    changes += [Delay(*_key_value(t, "--delay")) for t in a.delay]
    if a.bandwidth:
        changes.append(Bandwidth(a.bandwidth, collective=a.collective))
    try:
        rp = replay(a.run)
    except ValueError as e:
        print(f"cctviz whatif: {e}", file=sys.stderr)
        return 2
    steps = rp.steps[["measured [s]", "replayed [s]"]].copy()
    if changes:
        try:
            predicted = rp.what_if(*changes).steps["replayed [s]"]
        except ValueError as e:
            print(f"cctviz whatif: {e}", file=sys.stderr)
            return 2
        steps["predicted [s]"] = predicted
    from .model.tables import with_units
    from .perfmodel.whatif import describe

    steps = with_units(steps, {c: "s" for c in steps.columns})
    what = "; ".join(describe(c) for c in changes) or "no change"
    print(f"{a.run}: {len(steps)} step(s) replayed; what if: {what}")
    with pd.option_context("display.max_rows", 40, "display.width", 250, "display.max_columns", 12):
        print(steps)
        mean = steps.mean()
        line = f"mean step: measured {mean['measured [s]']:.4g} s, replayed {mean['replayed [s]']:.4g} s"
        if changes:
            gain = 1 - mean["predicted [s]"] / mean["replayed [s]"]
            how = "faster" if gain >= 0 else "slower"
            line += f", predicted {mean['predicted [s]']:.4g} s ({abs(gain):.1%} {how})"
        print(line)
        cp = rp.critical_path()
        print(f"\ncritical path ({cp.length:.4g} s over {len(steps)} step(s)), by context:")
        print(cp.by_context.head(a.top))
        print("\nopportunities (predicted by the replay):")
        print(rp.opportunities(top=a.top))
    return 0


# ------------------------------------------------------------------ export, view
FIGURE_FORMATS = ("svg", "pdf", "png", "html")


def _group_by(text: str) -> Any:
    """``--group-by``: a call-path depth (a number), ``nn.Module`` or
    ``nn.Module:K`` (K module path segments), or a node attribute."""
    if text.isdigit():
        return int(text)
    if text.startswith("nn.Module:") and text.split(":", 1)[1].isdigit():
        return ("nn.Module", int(text.split(":", 1)[1]))
    return text


def _diff(text: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """``--diff COLUMN=A,B``: the profiles whose COLUMN is A against those where it is B."""
    col, sep, values = text.partition("=")
    parts = values.split(",")
    if not sep or not col or len(parts) != 2 or not all(parts):
        raise argparse.ArgumentTypeError(
            f"expected COLUMN=A,B (e.g. world_size=8,64), got {text!r}"
        )

    def value(v: str) -> Any:
        try:
            return int(v)
        except ValueError:
            try:
                return float(v)
            except ValueError:
                return v

    return {col: value(parts[0])}, {col: value(parts[1])}


def _diff_side(obj: Any, side: dict[str, Any]) -> Any:
    """One side of ``--diff COLUMN=A,B`` as the view takes it. ``file=NAME`` matches
    a profile's file by the path as typed, its resolved path, its name or its stem
    (``run-8.json`` and ``run-8`` find ``/data/runs/run-8.json``); a text value matches
    a column case-insensitively when nothing matches exactly."""
    import numpy as np

    from .errors import CCTVizError
    from .model.ensemble import Ensemble

    ((col, want),) = side.items()
    if not isinstance(obj, Ensemble) or col not in obj.profiles.columns:
        return side
    values = obj.profiles[col]
    if (values == want).any():
        return side
    text = values.astype(str).to_numpy(dtype=object)
    if col == "file":
        paths = [Path(v) for v in text]
        hit = np.array(
            [
                want in (p.name, _stem(str(p)))
                or (Path(str(want)).exists() and p.resolve() == Path(str(want)).resolve())
                for p in paths
            ]
        )
    else:
        hit = np.array([v.lower() == str(want).lower() for v in text])
    if not hit.any():
        have = ", ".join(sorted({str(v) for v in values})[:8])
        raise CCTVizError(f"--diff: no profile has {col}={want} (there are: {have})")
    return np.flatnonzero(hit)


def _pair(text: str) -> tuple[str, str]:
    """``A,B``: two non-empty names."""
    parts = [p.strip() for p in text.split(",")]
    if len(parts) != 2 or not all(parts):
        raise argparse.ArgumentTypeError(f"expected two names A,B; got {text!r}")
    return parts[0], parts[1]


def _make_sankey(obj: Any, a: argparse.Namespace) -> Any:
    """A SankeyView of ``obj`` as ``--group-by``, ``--metric``, ``--diff``, ``--query`` ask."""
    import traitlets

    from .errors import CCTVizError
    from .views.sankey import SankeyView

    try:
        diff = None if a.diff is None else tuple(_diff_side(obj, side) for side in a.diff)
        view = SankeyView(
            obj,
            group_by=None if a.group_by is None else _group_by(a.group_by),
            metric=a.color,
            diff=diff,
            diff_labels=a.diff_labels
            or (
                None if a.diff is None else tuple(f"{k}={v}" for d in a.diff for k, v in d.items())
            ),
        )
        if a.query:
            view.selection = a.query
    except (traitlets.TraitError, KeyError, ValueError) as e:
        raise CCTVizError(_message(e)) from None
    return view


def _make_view(obj: Any, a: argparse.Namespace) -> Any:
    """A view of ``obj`` (``--view``) in the state the view options of ``a`` ask for."""
    from .errors import CCTVizError

    if getattr(a, "view", "cct") == "sankey":
        return _make_sankey(obj, a)
    if getattr(a, "view", "cct") == "timeline":
        from .views.timeline import TimelineView

        return TimelineView(obj)
    if getattr(a, "view", "cct") == "profiles":
        from .model.ensemble import Ensemble
        from .views.profiles import ProfilesView

        if not isinstance(obj, Ensemble):
            raise CCTVizError(
                "--view profiles shows profiles side by side: give several PROFILEs, or a "
                "file or folder of several (ranks, runs)"
            )
        return ProfilesView(obj)
    if any(getattr(a, k, None) is not None for k in ("group_by", "diff", "diff_labels")):
        raise CCTVizError("--group-by, --diff and --diff-labels go with --view sankey")
    return _make_cct(obj, a)


def _make_cct(obj: Any, a: argparse.Namespace) -> Any:
    """A CCTView of ``obj`` in the state the view options of ``a`` ask for."""
    import numpy as np
    import traitlets

    from .errors import CCTVizError
    from .views.cct import CCTView

    kw: dict[str, Any] = {"max_nodes": a.max_nodes}
    # the chart trait is being renamed (layout -> chart): pass whichever the view has
    kw["chart" if "chart" in CCTView.class_trait_names() else "layout"] = a.layout
    if a.color:
        kw["color"] = a.color
    if a.size is not None:
        kw["size"] = "" if a.size.lower() in ("", "none") else a.size
    try:
        view = CCTView(obj, **kw)
        if a.color2:
            first = view.color if isinstance(view.color, str) else view.color[0]
            view.color = (first, a.color2)
        tree = view.tree
        top = -1
        if a.focus:
            hits = np.flatnonzero(tree.callpaths.to_numpy() == a.focus)
            if not hits.size:
                example = tree.callpaths.iat[min(1, len(tree) - 1)]
                raise CCTVizError(
                    f"--focus: no node has the call path {a.focus!r} (names from a root"
                    f" joined by '/', e.g. {example!r})"
                )
            top = int(hits[0])
        if a.depth is not None:
            base = int(tree.depth[top]) if top >= 0 else 0
            ids = np.arange(len(tree))
            inner = tree.end > ids + 1
            hide = inner & (tree.depth == base + a.depth - 1)
            if top >= 0:
                hide &= (ids >= top) & (ids < tree.end[top])
            view.collapsed = np.flatnonzero(hide).tolist()
        if top >= 0:
            view.focus = top
        if a.query:
            view.selection = a.query
            if not len(view.selection.ids):
                print(f"cctviz: --query matched no node: {a.query}", file=sys.stderr)
    except traitlets.TraitError as e:
        raise CCTVizError(str(e)) from None
    return view


def _figure_options(a: argparse.Namespace, fmt: str) -> dict[str, Any]:
    """The export options of ``a`` (checked now, before any file is read)."""
    from .errors import ExportOptionError
    from .export import drawing_options

    opts: dict[str, Any] = {"title": a.title}
    for k in ("width", "height", "font_size", "background", "scheme"):
        if getattr(a, k, None) is not None:
            opts[k] = getattr(a, k)
    if getattr(a, "no_legends", False):
        opts["legends"] = False
    if getattr(a, "no_highlight", False):
        opts["highlight"] = False
    drawing_options(**opts)
    if getattr(a, "scale", None) is not None or getattr(a, "dpi", None) is not None:
        if fmt != "png":
            which = "--scale" if a.scale is not None else "--dpi"
            raise ExportOptionError(which, f"only a PNG takes it, not {fmt.upper()}")
        from .export.png import png_scale

        png_scale(a.scale, a.dpi)
        opts.update({k: v for k in ("scale", "dpi") if (v := getattr(a, k)) is not None})
    return opts


def _stem(path: str) -> str:
    """An output name for an input: the file name less its suffixes (.json.gz)."""
    name = Path(path.rstrip("/\\")).name or "profile"
    for suffix in (".gz", ".bz2", ".xz", ".zst"):
        name = name.removesuffix(suffix)
    return Path(name).stem or name


def _outputs(a: argparse.Namespace) -> tuple[str, list[tuple[str, Path]]]:
    """The output format and the (input, output path) pairs of ``cctviz export``."""
    from .errors import CCTVizError
    from .export import FORMATS

    fmt = a.format.lower().lstrip(".") if a.format else None
    if fmt is not None and fmt not in FIGURE_FORMATS:
        raise CCTVizError(
            f"--format: expected one of {', '.join(FIGURE_FORMATS)}; got {a.format!r}"
        )
    out = Path(a.output)
    if len(a.profiles) == 1 and not out.is_dir():
        by_suffix = FORMATS.get(out.suffix.lower())
        if fmt is None and by_suffix is None:
            raise CCTVizError(
                f"-o {a.output}: cannot tell the format: end the name in"
                f" {', '.join(FORMATS)} or give --format"
            )
        if fmt is not None and by_suffix is not None and fmt != by_suffix:
            raise CCTVizError(f"--format {fmt} does not match -o {a.output}")
        return fmt or by_suffix, [(a.profiles[0], out)]
    # several inputs (or -o an existing folder): -o is a folder, one file per input
    if out.exists() and not out.is_dir():
        raise CCTVizError(f"-o {a.output}: with several profiles -o must be a folder")
    fmt = fmt or "svg"
    pairs, seen = [], {}
    for prof in a.profiles:
        target = out / f"{_stem(prof)}.{fmt}"
        if target in seen:
            raise CCTVizError(f"{seen[target]} and {prof} would both be written to {target}")
        seen[target] = prof
        pairs.append((prof, target))
    return fmt, pairs


def _cmd_export(a: argparse.Namespace) -> int:
    from .errors import CCTVizError
    from .export import save
    from .readers import progress_bar, read, read_timeline

    if a.view == "timeline":  # a trace (OTF2), read as a Timeline

        def read(path, format=None):  # noqa: A001, ARG001
            return read_timeline(path)

    if a.view in ("sankey", "profiles") and len(a.profiles) > 1:
        return _export_ensemble(a)
    fmt, pairs = _outputs(a)
    opts = _figure_options(a, fmt)
    if len(pairs) > 1:
        Path(a.output).mkdir(parents=True, exist_ok=True)
    failed = 0
    for prof, target in progress_bar(pairs, None, desc="exporting", unit="file"):
        try:
            view = _make_view(read(prof, format=a.input_format), a)
            save(view, target, format=fmt, **opts)
        except (CCTVizError, OSError) as e:
            if len(pairs) == 1:
                raise
            print(f"cctviz: {_message(e)}", file=sys.stderr)
            failed += 1
    return 2 if failed else 0


def _export_ensemble(a: argparse.Namespace) -> int:
    """``cctviz export --view sankey|profiles A B C -o fig.svg``: one figure of the
    profiles as an ensemble."""
    from .errors import CCTVizError
    from .export import FORMATS, save
    from .readers import read_ensemble

    out = Path(a.output)
    fmt = a.format.lower().lstrip(".") if a.format else FORMATS.get(out.suffix.lower())
    if fmt not in FIGURE_FORMATS:
        raise CCTVizError(
            f"-o {a.output}: with --view {a.view}, several profiles make one figure: end the"
            f" name in {', '.join(FORMATS)} or give --format"
        )
    opts = _figure_options(a, fmt)
    view = _make_view(read_ensemble(a.profiles, format=a.input_format), a)
    save(view, out, format=fmt, **opts)
    return 0


def _cmd_view(a: argparse.Namespace) -> int:
    from .export import save
    from .readers import read, read_timeline

    opts = _figure_options(a, "html")
    if a.output:
        target = Path(a.output)
    else:
        target = Path(tempfile.mkdtemp(prefix="cctviz-")) / f"{_stem(a.profiles[0])}.html"
    from .readers import read_ensemble

    if a.view == "timeline":  # a trace (or several: one timeline), read as a Timeline
        paths = a.profiles[0] if len(a.profiles) == 1 else a.profiles
        data = read_timeline(paths, format=a.input_format)
    elif len(a.profiles) == 1:
        data = read(a.profiles[0], format=a.input_format)
    else:
        data = read_ensemble(a.profiles, format=a.input_format)
    view = _make_view(data, a)
    print(save(view, target, format="html", **opts))
    return 0


def _message(e: BaseException) -> str:
    if isinstance(e, OSError) and e.strerror:
        return f"{e.filename}: {e.strerror}" if e.filename else e.strerror
    return str(e.args[0]) if isinstance(e, KeyError) and e.args else str(e)


def _add_view_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("what the view shows")
    g.add_argument(
        "--view",
        choices=tuple(BUILT_IN_VIEWS),
        default="cct",
        help="the calling-context tree (default), the ensemble Sankey: modules and"
        " how each spreads over the profiles (several PROFILEs make one ensemble),"
        " the profiles (ranks or runs) as points, or the timeline of a trace"
        " (several traces: the ranks of one job)",
    )
    g.add_argument(
        "--group-by",
        metavar="G",
        help="--view sankey: how call sites group into modules: a node attribute"
        " (module, file, name), a call-path depth (2), nn.Module or nn.Module:K"
        " (default: by what the profile holds)",
    )
    g.add_argument(
        "--diff",
        type=_diff,
        metavar="COLUMN=A,B",
        help="--view sankey: compare the profiles whose COLUMN is A with those where it"
        " is B, e.g. file=run-8.json,run-64.json",
    )
    g.add_argument(
        "--diff-labels",
        type=_pair,
        metavar="A,B",
        help="--view sankey --diff: the names the two sides are shown with (default: COLUMN=A, COLUMN=B)",
    )
    g.add_argument(
        "--color",
        "-c",
        metavar="METRIC",
        help="colour metric, e.g. 'time (inc)' (default: inclusive time); with --view"
        " sankey, the metric sizing the nodes",
    )
    g.add_argument(
        "--color2",
        metavar="METRIC",
        help="a second colour metric: a bivariate colour scale of --color and this",
    )
    g.add_argument(
        "--size",
        metavar="METRIC",
        help="node size metric ('none': all alike; default: the colour metric when it adds up)",
    )
    g.add_argument(
        "--query",
        "-q",
        metavar="QUERY",
        help="highlight the nodes this call-path query selects, e.g."
        ' \'MATCH (".", a) WHERE a."name" STARTS WITH "MPI"\'',
    )
    g.add_argument(
        "--focus",
        metavar="PATH",
        help="show only the subtree of the node with this call path (names from a root"
        " joined by '/', e.g. 'main/solve')",
    )
    g.add_argument(
        "--depth",
        "-d",
        type=_depth,
        metavar="N",
        help="show N levels, as `cctviz tree --depth N` does: the top nodes (the roots, or"
        " the focus) are level 1; the nodes of level N are drawn collapsed",
    )
    g.add_argument(
        "--layout",
        choices=("tree", "icicle"),
        default="tree",
        help="node-link tree or icicle (default: tree)",
    )
    g.add_argument(
        "--max-nodes",
        type=int,
        default=2000,
        metavar="N",
        help="level of detail: draw at most N nodes, small siblings folded into"
        " an 'other' node (default: 2000)",
    )
    g.add_argument(
        "--input-format", metavar="FORMAT", help="the profile's format (default: detected)"
    )
    g.add_argument("--title", help="a title above the figure (the HTML page's title too)")


def _depth(text: str) -> int:
    n = int(text)
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {n}")
    return n


def _cmd_watch(a: argparse.Namespace) -> int:
    """``cctviz watch RUN``: a line per step as the ranks end it, the alerts as
    they come, until the run ends (or Ctrl-C); a progress bar on stderr where
    the step count is known (``--steps``, or ``cctviz run --expect-steps``)."""
    import time

    from .live import watch

    try:
        w = watch(a.run, wait=a.wait)
    except TimeoutError as e:
        print(f"cctviz: {e}", file=sys.stderr)
        return 2
    bar = _steps_bar(a.steps or w.expected_steps)
    say = bar.write if bar is not None else functools.partial(print, flush=True)
    shown: dict[str, int] = {}  # per component, the last step printed
    shown_alerts = 0
    try:
        while True:
            ended = w.ended
            w.poll()
            steps = w.by_step()
            for step, row in steps.iterrows():
                if step <= shown.get(row["component"], -1):
                    continue
                say(_step_line(int(step), row))
                shown[row["component"]] = int(step)
            alerts = w.alerts
            for _, al in alerts.iloc[shown_alerts:].iterrows():
                say(f"ALERT {al['kind']}: {al['message']}")
            shown_alerts = len(alerts)
            if bar is not None and shown:  # the steps that every component ended
                bar.update(min(shown.values()) + 1 - bar.n)
            if ended:
                break
            time.sleep(a.every)
    except KeyboardInterrupt:
        return 130
    finally:
        if bar is not None:
            bar.close()
    print(f"cctviz: the run has ended ({len(w.ranks)} ranks, {shown_alerts} alert(s))")
    return 0


def _steps_bar(total: int | None) -> Any:
    """A progress bar of ``total`` steps on stderr (the lines go to stdout); None
    without a total."""
    if not total:
        return None
    from tqdm import tqdm

    class _Bar(tqdm):
        def write(self, line: str) -> None:  # type: ignore[override]
            tqdm.write(line, file=sys.stdout)
            sys.stdout.flush()

    return _Bar(total=total, unit="step", desc="steps", file=sys.stderr, mininterval=0.5)


def _step_line(step: int, row: Any) -> str:
    comp = f"{row['component']} " if row["component"] else ""
    return (
        f"{comp}step {step:>6}  {row['time [s]'] * 1e3:9.1f} ms"
        f"  ({row['min [s]'] * 1e3:.1f}-{row['max [s]'] * 1e3:.1f} over"
        f" {int(row['ranks'])} ranks)  wait {row['wait [s]'] * 1e3:.1f} ms,"
        f" least: rank {int(row['least wait'])}"
    )


def _cmd_demo(a: argparse.Namespace) -> int:
    from .demo import run_demo

    if a.lulesh:
        from .demo import run_lulesh_demo

        run_lulesh_demo(a.out)
    elif a.workflow:
        from .demo import run_workflow_demo

        run_workflow_demo(a.out)
    else:
        run_demo(a.out, nproc=a.nproc, steps=a.steps)
    return 0


def _cmd_run(rest: Sequence[str]) -> int:
    from .runtime.launch import LaunchError, run

    if not rest or rest[0] in ("-h", "--help"):
        from .runtime import launch

        print("usage: cctviz run [torchrun options] [--out DIR] [--mode light|detailed]")
        print(
            "                  [--warmup N] [--per-step] [--python-frames] [--act-bytes] [--trace DIR]"
        )
        print(
            "                  [--mem-peak]  (the allocator's peak per context; on in detailed mode)"
        )
        print(
            "                  [--timeline]  (trace into DIR/timeline: cctviz.read_timeline(DIR))"
        )
        from .runtime.trace import DEFAULT_LIMIT

        print(
            "                  [--timeline-limit N|none]"
            f"  (transitions kept per rank; default {DEFAULT_LIMIT})"
        )
        print("                  [--sample-hz HZ]  (CPU, memory, I/O per context; default 0: off)")
        print("                  [--dataset DIR]  (the run also as a dataset: cctviz.open_dataset)")
        print("                  [--gpu-time phase|context]  (CUDA events per phase (light's")
        print("                  default) or per context (detailed's))")
        print("                  script.py [args]")
        print("       cctviz run [--nproc-per-node N] [--out DIR] [--jax] prog.py [args]")
        print("                  (a JAX program, one that imports jax and not torch: each")
        print("                  process traced by jax.profiler; cctviz.runtime.jaxrun)")
        print("       cctviz run --workflow workflow.toml [--out DIR] [--mode M] [--sample-hz HZ]")
        print("                  [--timeline | --trace DIR] [--timeline-limit N|none]")
        print("                  [--grace S]")
        print("                  (a coupled workflow: cctviz.runtime.workflow)")
        print(launch.__doc__)
        return 0
    try:
        if any(t == "--workflow" or t.startswith("--workflow=") for t in rest):
            from .runtime.workflow import workflow_main

            return workflow_main(rest)
        return run(rest)
    except LaunchError as e:
        print(f"cctviz run: {e}", file=sys.stderr)
        return 2


@contextlib.contextmanager
def _figure_notes() -> Iterator[None]:
    """What a figure could not hold at its font size (FigureFitWarning) as a note
    on stderr ("cctviz: note: ..."), not as a Python warning with a file and line."""
    import warnings

    from .errors import FigureFitWarning

    with warnings.catch_warnings():
        shown = warnings.showwarning

        def show(message, category, filename, lineno, file=None, line=None):  # noqa: ANN001
            if issubclass(category, FigureFitWarning):
                print(f"cctviz: note: {message}", file=sys.stderr)
            else:
                shown(message, category, filename, lineno, file, line)

        warnings.showwarning = show
        warnings.simplefilter("always", FigureFitWarning)
        yield


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "run":  # torchrun's options are not ours to parse
        return _cmd_run(argv[1:])
    p = argparse.ArgumentParser(prog="cctviz", description="Calling-context trees of profiles.")
    sub = p.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("tree", help="print the calling-context tree of a profile")
    t.add_argument("file")
    t.add_argument(
        "--metric",
        "-m",
        default=None,
        help="metric column, e.g. 'gpu_time (inc)' (default: inclusive time, or the first"
        " metric that is not all zero)",
    )
    t.add_argument(
        "--depth", "-d", type=int, default=None, help="show nodes with depth < DEPTH (roots: 0)"
    )
    t.add_argument(
        "--max-nodes",
        "-n",
        type=int,
        default=100,
        help="show at most N nodes, the largest first (0: no limit; default: 100)",
    )
    t.add_argument(
        "--threshold",
        "-t",
        type=float,
        default=0.001,
        help="hide nodes below this fraction of the root (0: show all but zero-valued"
        " subtrees; default: 0.001)",
    )
    t.add_argument(
        "--width",
        "-w",
        type=int,
        default=60,
        help="cut names longer than this in the middle (0: never; default: 60)",
    )
    t.add_argument("--second", default=None, help="another metric, shown in brackets")
    t.add_argument("--format", default=None, help="skip format detection")
    t.set_defaults(fn=_cmd_tree)
    i = sub.add_parser("info", help="format, nodes, metrics and profiles of a file")
    i.add_argument("file")
    i.add_argument("--format", default=None)
    i.add_argument("--json", action="store_true", help="print JSON")
    i.set_defaults(fn=_cmd_info)
    sub.add_parser(
        "run",
        help="run a PyTorch script like torchrun, every rank profiling itself",
        add_help=False,
    )
    d = sub.add_parser("demo", help="run the bundled demo and write its outputs")
    d.add_argument("--out", default="out", help="output folder (default: out)")
    d.add_argument("--nproc", type=int, default=2, help="training processes (default: 2)")
    d.add_argument("--steps", type=int, default=20, help="training steps (default: 20)")
    d.add_argument(
        "--lulesh", action="store_true", help="the LULESH ensemble demo instead (no torch)"
    )
    d.add_argument(
        "--workflow",
        action="store_true",
        help="the coupled workflow demo instead (simulation + training, both bottlenecks)",
    )
    d.set_defaults(fn=_cmd_demo)
    x = sub.add_parser(
        "export",
        help="write a figure (SVG, PDF, PNG or HTML) of profiles' calling-context trees",
        description="Draw the calling-context tree of each profile as the notebook view"
        " draws it, with no browser. PDF and PNG need `pip install 'cctviz[export]'`.",
    )
    x.add_argument("profiles", nargs="+", metavar="PROFILE", help="profile file(s) or folder(s)")
    x.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="OUT",
        help="the output file for one profile (its suffix gives the format); a folder for"
        " several, one file each, named after the profile",
    )
    x.add_argument(
        "--format",
        "-f",
        metavar="F",
        help=f"output format: {', '.join(FIGURE_FORMATS)} (default: -o's suffix; with several"
        " profiles, svg)",
    )
    _add_view_options(x)
    g = x.add_argument_group("the figure")
    g.add_argument(
        "--width",
        metavar="LENGTH",
        help="figure width: points or a length with a unit, e.g. 3.5in, 89mm, 8cm, 252pt,"
        " 600px, or 'natural' (the content's own width; default: 7in, a journal's two"
        " columns); the text keeps --font-size and what does not fit is folded, said under"
        " the figure and on stderr",
    )
    g.add_argument("--height", metavar="LENGTH", help="figure height (default: follows the width)")
    g.add_argument(
        "--font-size", type=float, metavar="PT", help="label font size in points (default: 10)"
    )
    g.add_argument("--no-legends", action="store_true", help="leave the legends out")
    g.add_argument("--no-highlight", action="store_true", help="do not mark the --query selection")
    g.add_argument(
        "--background",
        choices=("white", "transparent"),
        help="page background (default: white)",
    )
    g.add_argument(
        "--scheme",
        choices=("light", "dark"),
        help="colours for a light (default) or a dark page",
    )
    g.add_argument(
        "--scale",
        type=float,
        metavar="S",
        help="PNG only: 4/3 x S pixels per point (default: 2, i.e. 192 dpi)",
    )
    g.add_argument("--dpi", type=float, help="PNG only: pixels per inch instead of --scale")
    x.set_defaults(fn=_cmd_export)
    v = sub.add_parser(
        "view",
        help="write a standalone interactive HTML page of a profile and print its path",
        description="Write one self-contained HTML page (no server, no network) with the"
        " interactive view of a profile: pan, zoom, collapse, tooltips.",
    )
    v.add_argument(
        "profiles",
        nargs="+",
        metavar="PROFILE",
        help="a profile file or folder; several make one ensemble (ranks or runs)",
    )
    v.add_argument(
        "-o",
        "--output",
        metavar="PAGE",
        help="the page to write (default: the first PROFILE's name .html in a new temporary folder)",
    )
    _add_view_options(v)
    v.set_defaults(fn=_cmd_view)
    w = sub.add_parser(
        "whatif",
        help="replay a trace: measured against replayed steps, the critical path, what-if",
        description="Replay a trace (a run folder of cctviz run --timeline, an OTF2 archive,"
        " Kineto traces) from its dependency graph across ranks; print measured against"
        " replayed (and predicted) steps, the critical path by context and the top"
        " opportunities. WHERE is a node-name regular expression (a call path where it"
        " holds '/') or a MATCH query.",
    )
    w.add_argument(
        "run", metavar="RUN", help="a trace: run folder, OTF2 archive, Kineto file or folder"
    )
    w.add_argument(
        "--balance",
        action="append",
        default=[],
        metavar="WHERE",
        help="WHERE takes the median over ranks of its time per step",
    )
    w.add_argument(
        "--scale", action="append", default=[], metavar="WHERE=F", help="WHERE takes F x its time"
    )
    w.add_argument(
        "--delay",
        action="append",
        default=[],
        metavar="WHERE=S",
        help="every call of WHERE takes S seconds longer",
    )
    w.add_argument(
        "--bandwidth", type=float, default=None, metavar="F", help="collective transfers F x faster"
    )
    w.add_argument("--collective", default=None, help="with --bandwidth: only this collective")
    w.add_argument("--top", type=int, default=10, help="rows of the path and the opportunities")
    w.set_defaults(fn=_cmd_whatif)  # fmt: skip
    wa = sub.add_parser(
        "watch",
        help="follow a run while it runs: a line per step, alerts (stragglers, regressions, silent ranks)",
    )
    wa.add_argument("run", metavar="RUN", help="the run folder (cctviz run --out)")
    wa.add_argument("--every", type=float, default=0.5, help="seconds between looks (default 0.5)")
    wa.add_argument(
        "--wait", type=float, default=60.0, help="seconds to wait for the run to start (default 60)"
    )
    wa.add_argument(
        "--steps",
        type=_depth,
        default=None,
        help="the steps the job runs, warm-up included: a progress bar on stderr"
        " (default: what cctviz run --expect-steps said)",
    )
    wa.set_defaults(fn=_cmd_watch)
    a = p.parse_args(argv)
    try:
        with _figure_notes():
            return a.fn(a)
    except BrokenPipeError:  # `cctviz tree FILE | head`: the reader has what it wanted
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except (CCTVizError, KeyError, argparse.ArgumentTypeError) as e:
        print(f"cctviz: {_message(e)}", file=sys.stderr)
        return 2
    except OSError as e:
        if a.cmd not in ("export", "view"):
            raise
        print(f"cctviz: {_message(e)}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
