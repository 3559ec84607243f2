"""`vigil sh`: this workspace's persistent shell (the spec's BashCommand), from the CLI."""

from __future__ import annotations

import argparse

from .common import RAW_HELP, SIZE_HELP, caller_size, json_flag, open_scope


def cmd_sh(args: argparse.Namespace) -> int:
    import sys

    from vigil.protocol.errors import ErrorCode, RemoteError

    from .. import output

    client, scope = open_scope(args)
    with client:
        status = scope.call("BashCommand", action={"type": "status_check"}, wait_for_seconds=0)
        shell_id = status.shell_execution_id
        rows, cols = caller_size(args)
        if rows is not None:
            scope.call("resize", execution_id=shell_id, rows=rows, cols=cols)
        if not args.command:
            from .terminal import cmd_attach

            args.id = shell_id
            args.detach_key = None
            client.close()
            return cmd_attach(args)
        text = " ".join(args.command)
        try:
            result = scope.call("BashCommand", action={"type": "command", "command": text},
                                wait_for_seconds=args.timeout)
        except RemoteError as exc:
            if exc.code != ErrorCode.BUSY:
                raise
            running = (exc.data or {}).get("execution_id") or ""
            raise RemoteError(exc.code, busy_message(running[:12], shell_id[:12]),
                              exc.data) from None
    if args.json:
        output.emit(result, True)
    else:
        text = result.output.encode("utf-8", "surrogateescape")
        if not args.raw and not sys.stdout.isatty():
            from ..plaintext import PlainText

            plain = PlainText()
            text = plain.feed(text) + plain.end()
        sys.stdout.buffer.write(text)
        sys.stdout.flush()
    if result.status == "running":
        output.note(f"still running after {args.timeout:g} s: follow it with `vigil logs -f "
                    f"{result.execution_id[:12]}`, interrupt it with `vigil keys "
                    f"{shell_id[:12]} C-c`")
        return output.FAILED
    if result.shell_exited:
        output.note(f"the command ended the shell (exit status {result.exit_code}); the next "
                    "`vigil sh` starts a new one, in the workspace root, without this one's "
                    "variables")
    return result.exit_code if result.status == "completed" else output.OK


def busy_message(command_id: str, shell_id: str) -> str:
    """The shell is busy, said with the CLI's commands (not the RPC's actions)."""
    return (f"the shell is still running a command ({command_id}): follow it with "
            f"`vigil logs -f {command_id}`, interrupt it with `vigil keys {shell_id} C-c`, "
            "or type into it with `vigil sh` (attach)")


def add_parsers(sub) -> None:
    p = sub.add_parser(
        "sh", help="run COMMAND in this workspace's persistent shell (no COMMAND: attach)",
        description="Run COMMAND in this workspace's persistent shell, whose working "
                    "directory and variables persist between commands (as BashCommand does "
                    "for agents); prints its output and exits with its status. Without "
                    "COMMAND, attach to the shell.")
    p.add_argument("command", nargs=argparse.REMAINDER, metavar="COMMAND",
                   help="shell command line (its words are joined with spaces)")
    p.add_argument("--timeout", type=float, default=300.0, metavar="SECONDS",
                   help="how long to wait for the command (default 300; it keeps running "
                        "after)")
    p.add_argument("--raw", action="store_true", help=RAW_HELP)
    p.add_argument("--size", metavar="ROWSxCOLS", help=SIZE_HELP)
    json_flag(p)
    p.set_defaults(handler=cmd_sh)
