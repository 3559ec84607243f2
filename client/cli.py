"""`vigil`: the command-line client.

Every command takes `--json`. Exit codes: 0 ok, 1 a failed operation, 2 bad usage,
3 daemon unreachable — each failure with one line on stderr and no traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, Callable

from vigil.protocol.errors import RemoteError, VigilError
from vigil.protocol.version import VERSION

from . import cmd_exec, output
from .connection import DaemonUnreachable

Handler = Callable[[argparse.Namespace], int]
_COMMANDS: dict[str, Handler] = {}


def _json_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                        help="print machine-readable JSON")


def connect(args: argparse.Namespace):
    from .autostart import connect as _connect

    return _connect(autostart=not getattr(args, "no_autostart", False))


# --- commands ------------------------------------------------------------------------------


def cmd_status(args: argparse.Namespace) -> int:
    with connect(args) as client:
        result = client.call_typed("status", {})

    def human(r) -> str:
        store = r.store
        return "\n".join([
            f"vigild {r.version} (protocol {r.protocol}), pid {r.pid}, "
            f"up {r.uptime_seconds:.1f} s",
            f"socket     {r.socket}" + ("  (socket-activated)" if r.socket_activated else ""),
            f"state dir  {r.state_dir}",
            f"clients    {r.connections}",
            "store      ok" if store.ok else
            f"store      FAILING since {store.failing_since_unix_ms} ({store.failed_commits} "
            f"failed commits): {store.last_error}; output and exits are kept and retried",
        ])

    output.emit(result, args.json, human)
    return output.OK


def cmd_daemon(args: argparse.Namespace) -> int:
    from .autostart import daemon_command

    argv = daemon_command()
    os.execv(argv[0], argv)
    return output.FAILED  # not reached


def cmd_protocol_schema(args: argparse.Namespace) -> int:
    from vigil.protocol.schema import export_schema

    output.emit(export_schema(), True)
    return output.OK


def cmd_service_install(args: argparse.Namespace) -> int:
    from . import service

    written = service.install()
    output.emit({"written": written}, args.json, lambda r: "\n".join(
        [f"wrote {p}" for p in r["written"]] + [
            "now run:  systemctl --user daemon-reload && systemctl --user enable --now vigil.socket",
            "and, so guardians outlive your logout:  loginctl enable-linger $USER"]))
    return output.OK


# --- parser --------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="vigil", description="run and watch terminal work")
    parser.add_argument("--version", action="version", version=f"vigil {VERSION}")
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")
    parser.add_argument("--no-autostart", action="store_true",
                        help="fail (exit 3) instead of starting vigild when it is not running")
    parser.add_argument("--workspace", default=None,
                        help="workspace whose executions to act on (default: $VIGIL_WORKSPACE, "
                             "else the enclosing git repository, else the current directory)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    cmd_exec.add_parsers(sub, _json_flag)
    from .commands import mcp as mcp_commands, report as report_commands
    from .commands import trace as trace_commands, transcript as transcript_commands

    mcp_commands.add_parsers(sub)
    report_commands.add_parsers(sub)
    transcript_commands.add_parsers(sub)
    trace_commands.add_parsers(sub)

    p = sub.add_parser("status", help="show the daemon's status (starts it if needed)")
    _json_flag(p)
    p.set_defaults(handler=cmd_status)

    p = sub.add_parser("daemon", help="run vigild in the foreground")
    p.set_defaults(handler=cmd_daemon)

    p = sub.add_parser("protocol", help="protocol tools")
    psub = p.add_subparsers(dest="protocol_command", metavar="ACTION", required=True)
    q = psub.add_parser("schema", help="print the JSON Schema of every message")
    _json_flag(q)
    q.set_defaults(handler=cmd_protocol_schema)

    p = sub.add_parser("service", help="systemd user service")
    ssub = p.add_subparsers(dest="service_command", metavar="ACTION", required=True)
    q = ssub.add_parser("install", help="write vigil.service and vigil.socket to ~/.config/systemd/user")
    _json_flag(q)
    q.set_defaults(handler=cmd_service_install)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "handler"):
        parser.print_help(sys.stderr)
        return output.USAGE
    args.json = getattr(args, "json", False)
    try:
        return args.handler(args)
    except DaemonUnreachable as exc:
        output.error(exc.message)
        return output.UNREACHABLE
    except RemoteError as exc:
        output.error(f"{exc.code}: {exc.message}")
        return output.FAILED
    except VigilError as exc:
        output.error(exc.message)
        return output.FAILED
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return output.OK


if __name__ == "__main__":
    sys.exit(main())
