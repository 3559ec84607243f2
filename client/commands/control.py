"""Steering an execution's life: `vigil pause`, `resume`, `cancel`, `rerun`, and `approve`
(seeds/002, `POST /executions/:id/cancel|pause|resume|approve`, "Replay and rerun")."""

from __future__ import annotations

import argparse

from .common import ID_HELP, call_on, json_flag, open_scope


def cmd_control(args: argparse.Namespace) -> int:
    from .. import output
    from .common import signal_name

    result = call_on(args, args.control)

    def human(r) -> str:
        if r.action == "cancel":
            e = r.execution
            how = signal_name(e.signal) if e.signal is not None else f"exit {e.exit_code}"
            if e.status == "running":
                how = "still running"
            return f"{r.execution_id} cancelled ({how})"
        return f"{r.execution_id} {'paused' if r.action == 'pause' else 'resumed'}"

    output.emit(result, args.json, human)
    return output.OK


def cmd_rerun(args: argparse.Namespace) -> int:
    from .. import output

    result = call_on(args, "rerun")
    output.emit(result, args.json, lambda r: r.execution.execution_id)
    return output.OK


def cmd_approve(args: argparse.Namespace) -> int:
    from .. import output

    client, scope = open_scope(args)
    with client:
        eid = scope.resolve(args.id)
        result = scope.call("Agent", action="approve", target=eid,
                            approval_id=args.approval_id)
    output.emit(result, args.json, lambda r: (
        f"{eid} approval {args.approval_id}: {r.data.receipt.delivery}"
        + (" (from the receipt: not sent again)" if r.data.replayed else "")))
    return output.OK


def add_parsers(sub) -> None:
    for name, what in (("pause", "stop an execution's process group (SIGSTOP) until resumed"),
                       ("resume", "continue a paused execution (SIGCONT)")):
        p = sub.add_parser(name, help=what)
        p.add_argument("id", help=ID_HELP)
        json_flag(p)
        p.set_defaults(handler=cmd_control, control=name)

    p = sub.add_parser(
        "cancel", help="end an execution: SIGTERM, then SIGKILL after the grace",
        description="Cancel an execution: SIGTERM to its process group, then SIGKILL if it "
                    "is still running after cancel_grace_seconds (docs/settings.md). Its "
                    "outcome is recorded as cancelled; answers once it is.")
    p.add_argument("id", help=ID_HELP)
    json_flag(p)
    p.set_defaults(handler=cmd_control, control="cancel")

    p = sub.add_parser(
        "rerun", help="run an execution again: same argv, cwd, environment and size",
        description="Start a new execution like an old one — the same argv, working "
                    "directory, environment and terminal size — and print its id. A command "
                    "of the persistent shell runs again in the shell, as its next "
                    "generation. The old record stays as it was; `vigil show` links both.")
    p.add_argument("id", help=ID_HELP)
    json_flag(p)
    p.set_defaults(handler=cmd_rerun)

    p = sub.add_parser(
        "approve", help="answer an agent's approval prompt with its approve keys, once",
        description="For an execution recognized as awaiting approval: press the approve "
                    "keys its recognizer manifest names, once per APPROVAL_ID. Asking again "
                    "with the same id answers from the receipt and sends nothing.")
    p.add_argument("id", help=ID_HELP)
    p.add_argument("approval_id", metavar="APPROVAL_ID",
                   help="your id for this approval (e.g. the step it approves)")
    json_flag(p)
    p.set_defaults(handler=cmd_approve)
