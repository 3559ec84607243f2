"""The daemon and the tools around it: `vigil status`, `daemon`, `service install`,
`protocol schema`, `completion`."""

from __future__ import annotations

import argparse

from .common import json_flag

SHELLS = ("bash", "zsh", "fish")


def cmd_status(args: argparse.Namespace) -> int:
    from .. import output
    from ..autostart import connect

    with connect(autostart=not args.no_autostart) as client:
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
    import os

    from ..autostart import daemon_command

    argv = daemon_command()
    os.execv(argv[0], argv)
    return 1  # not reached


def cmd_protocol_schema(args: argparse.Namespace) -> int:
    from vigil.protocol.schema import export_schema

    from .. import output

    output.emit(export_schema(), True)
    return output.OK


def cmd_service_install(args: argparse.Namespace) -> int:
    from .. import output, service

    written = service.install()
    output.emit({"written": written}, args.json, lambda r: "\n".join(
        [f"wrote {p}" for p in r["written"]] + [
            "now run:  systemctl --user daemon-reload && systemctl --user enable --now vigil.socket",
            "and, so guardians outlive your logout:  loginctl enable-linger $USER"]))
    return output.OK


def cmd_completion(args: argparse.Namespace) -> int:
    """The completion script, generated from the parser itself by shtab (maintained, so
    every command and option added later completes without anyone editing a script)."""
    import sys

    import shtab

    from ..cli import build_parser

    sys.stdout.write(shtab.complete(build_parser(), shell=args.shell))
    return 0


def add_parsers(sub) -> None:
    p = sub.add_parser("status", help="show the daemon's status (starts it if needed)")
    json_flag(p)
    p.set_defaults(handler=cmd_status)

    p = sub.add_parser("daemon", help="run vigild in the foreground (logs on stderr)")
    p.set_defaults(handler=cmd_daemon)

    p = sub.add_parser("service", help="the systemd user service")
    ssub = p.add_subparsers(dest="service_command", metavar="ACTION", required=True)
    q = ssub.add_parser("install", help="write vigil.service and vigil.socket to "
                                        "~/.config/systemd/user")
    json_flag(q)
    q.set_defaults(handler=cmd_service_install)

    p = sub.add_parser("protocol", help="protocol tools for plugin authors")
    psub = p.add_subparsers(dest="protocol_command", metavar="ACTION", required=True)
    q = psub.add_parser("schema", help="print the JSON Schema of every message")
    json_flag(q)
    q.set_defaults(handler=cmd_protocol_schema)

    p = sub.add_parser("completion", help="print a shell completion script (bash, zsh, fish)",
                       description="Print a completion script for your shell, e.g. "
                                   "`vigil completion bash > ~/.local/share/bash-completion/"
                                   "completions/vigil`, `vigil completion fish > "
                                   "~/.config/fish/completions/vigil.fish`, or for zsh into a "
                                   "file named _vigil on your $fpath.")
    p.add_argument("shell", choices=SHELLS, help="bash, zsh or fish")
    p.set_defaults(handler=cmd_completion)
