"""`vigil run`: start a command under its own guardian, as the caller would have run it.

A run is the caller's command: it gets the caller's environment and working directory at
submit time (as `pueue add` does; `--clean-env`, `--env K=V`, `--cwd` adjust them) and, when
stdout is a terminal, that terminal's size. With `--wait` the output streams live and the
CLI exits with the command's status; Ctrl-C interrupts the command, Ctrl-\\ detaches.
"""

from __future__ import annotations

import argparse
import os

from ..output import UsageError
from .common import RAW_HELP, SIZE_HELP, caller_size, exit_status, json_flag, open_scope


def parse_env(items: list[str] | None) -> dict[str, str]:
    env = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"--env expects KEY=VALUE, got {item!r}")
        env[key] = value
    return env


def cmd_run(args: argparse.Namespace) -> int:
    from .. import output

    argv = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
    if not argv:
        raise UsageError("nothing to run: vigil run [options] -- CMD [ARGS...]")
    extra = parse_env(args.env)
    env = {} if args.clean_env else dict(os.environ)
    env.update(extra)
    rows, cols = caller_size(args)
    cwd = os.path.abspath(args.cwd) if args.cwd else os.getcwd()
    params = dict(argv=argv, env=env, env_base="none", cwd=cwd, rows=rows, cols=cols,
                  name=args.name or "")
    client, scope = open_scope(args)
    with client:
        if not args.wait or args.json:
            execution = scope.call("run", **params).execution
            if execution.start_error:
                output.note(execution.start_error)
            if not args.wait:
                output.emit(execution, args.json, lambda e: e.execution_id)
                return exit_status(execution) if execution.start_error else output.OK
            from .history import wait_until_ended

            final = wait_until_ended(scope, execution.execution_id)
            output.emit(final, True)
            return exit_status(final)
        from ..follow import Detached, Sink, run_and_follow

        try:
            execution, final = run_and_follow(scope, params, Sink(raw=args.raw))
        except Detached as exc:
            eid = exc.execution_id[:12]
            output.note(f"detached from {eid}; it keeps running. Follow it again with: "
                        f"vigil logs -f {eid}")
            return output.OK
    if final.start_error:
        output.note(final.start_error)
    if final.status == "unknown":
        output.note(f"the outcome of {final.execution_id[:12]} is unknown: "
                    f"{final.unknown_reason or 'its guardian vanished'}")
    return exit_status(final)


def add_parsers(sub) -> None:
    p = sub.add_parser(
        "run", help="start a command under its own guardian (prints its id; --wait follows it)",
        description="Start CMD under its own guardian, with your environment, working "
                    "directory and terminal size. Prints the execution id; with --wait, "
                    "streams the output and exits with the command's status (128+N for "
                    "signal N, 127/126 when it cannot be started). While waiting, Ctrl-C "
                    "interrupts the command and Ctrl-\\ detaches (it keeps running).")
    p.add_argument("--wait", action="store_true",
                   help="stream the output live and exit with the command's status")
    p.add_argument("--raw", action="store_true", help=RAW_HELP)
    p.add_argument("--cwd", metavar="DIR",
                   help="working directory (default: the current directory)")
    p.add_argument("--env", action="append", metavar="K=V",
                   help="set an environment variable (repeatable)")
    p.add_argument("--clean-env", action="store_true",
                   help="start from an empty environment instead of yours (only --env "
                        "variables, and TERM)")
    p.add_argument("--size", metavar="ROWSxCOLS", help=SIZE_HELP)
    p.add_argument("--name", help="a name to show in listings instead of the command")
    p.add_argument("argv", nargs=argparse.REMAINDER, metavar="-- CMD [ARGS...]",
                   help="the command and its arguments")
    json_flag(p)
    p.set_defaults(handler=cmd_run)
