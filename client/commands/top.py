"""`vigil top`: a live full-screen dashboard of this workspace's executions (or, with
`--all`, of every workspace's), from the daemon's `subscribe` stream. The dashboard itself
(client/top.py, on Textual) is imported only when the command runs."""

from __future__ import annotations

import argparse


def cmd_top(args: argparse.Namespace) -> int:
    import sys

    from .. import output

    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise output.UsageError("vigil top needs a terminal (use `vigil ls` in scripts)")
    from ..top import run

    return run(args)


def add_parsers(sub) -> None:
    p = sub.add_parser(
        "top", help="live dashboard of executions: state, last line, age, CPU",
        description="A live full-screen view of the executions: state (busy, awaiting input, "
                    "awaiting approval, or how it ended), age, CPU of the process group, the "
                    "latest step or tool, the last output line. Keys: a attach, k kill "
                    "(TERM), K kill -9, q quit.")
    p.add_argument("--all", action="store_true",
                   help="every workspace's executions, not only this workspace's")
    p.set_defaults(handler=cmd_top)
