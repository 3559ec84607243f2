"""`vigil report`: summarize the usage log (`vigil.client.report`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from vigil.protocol.errors import ErrorCode, VigilError

from .. import output


def cmd_report(args: argparse.Namespace) -> int:
    from vigil.protocol import paths

    from ..report import build_report, log_files, read_lines, render_text

    if args.last is not None and args.last < 0:
        raise VigilError(ErrorCode.INVALID_REQUEST, "--last must be 0 (all) or more")
    if args.since_minutes < 0:
        raise VigilError(ErrorCode.INVALID_REQUEST, "--since-minutes must be 0 (all) or more")
    if args.log is not None:
        files = [Path(args.log)]
        if not files[0].exists():
            raise VigilError(ErrorCode.NOT_FOUND, f"no usage log at {args.log}")
    else:
        files = log_files(Path(paths.state_dir()) / "usage.jsonl", include_rotated=True)
    report = build_report(read_lines(files), last=args.last or None,
                          since_minutes=args.since_minutes)
    output.emit(report, args.json, render_text)
    return output.OK


def add_parsers(sub) -> None:
    p = sub.add_parser("report", help="summarize the usage log (calls, workflows, reads, "
                                      "observations, waits, partial results)")
    p.add_argument("--log", default=None, metavar="PATH",
                   help="a usage log (default: <state>/usage.jsonl and its rotated files)")
    p.add_argument("--last", type=int, default=10000, metavar="N",
                   help="only the last N calls (auxiliary events are skipped first; 0: all; "
                        "default 10000)")
    p.add_argument("--since-minutes", type=float, default=0, metavar="M",
                   help="only calls of the last M minutes (0, the default: no limit)")
    p.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                   help="print machine-readable JSON")
    p.set_defaults(handler=cmd_report)
