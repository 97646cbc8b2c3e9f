"""Command line: ``cctviz tree FILE``, ``cctviz info FILE``, ``cctviz run ...``, ``cctviz demo``."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence

from .errors import CCTVizError


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


def _cmd_demo(a: argparse.Namespace) -> int:
    from .demo import run_demo

    if a.lulesh:
        from .demo import run_lulesh_demo

        run_lulesh_demo(a.out)
    else:
        run_demo(a.out, nproc=a.nproc, steps=a.steps)
    return 0


def _cmd_run(rest: Sequence[str]) -> int:
    from .runtime.launch import LaunchError, run

    if not rest or rest[0] in ("-h", "--help"):
        from .runtime import launch

        print("usage: cctviz run [torchrun options] [--out DIR] [--mode light|detailed]")
        print("                  [--warmup N] [--per-step] [--python-frames] script.py [args]")
        print(launch.__doc__)
        return 0
    try:
        return run(rest)
    except LaunchError as e:
        print(f"cctviz run: {e}", file=sys.stderr)
        return 2


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
    d.set_defaults(fn=_cmd_demo)
    a = p.parse_args(argv)
    try:
        return a.fn(a)
    except BrokenPipeError:  # `cctviz tree FILE | head`: the reader has what it wanted
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except CCTVizError as e:
        print(f"cctviz: {e}", file=sys.stderr)
        return 2
    except KeyError as e:
        print(f"cctviz: {e.args[0] if e.args else e}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
