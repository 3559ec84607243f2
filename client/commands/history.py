"""Reading what ran: `vigil ls`, `show`, `logs`, `wait`, `explain`."""

from __future__ import annotations

import argparse
import time

from ..output import UsageError
from .common import (
    ID_HELP,
    RAW_HELP,
    execution_action,
    exit_status,
    fmt_age,
    fmt_status,
    json_flag,
    open_scope,
    status_colour,
)

#: Records per `list` call when the CLI pages (the daemon's default largest limit).
LIST_PAGE = 1000
#: What `wait --for` accepts (vigil.protocol.api.execution.WaitEvent).
WAIT_EVENTS = ("exited", "awaiting_input", "awaiting_approval", "busy", "unknown", "state",
               "output")
#: Longest single protocol wait (the wire's limit); the CLI repeats them to its deadline.
PROTOCOL_WAIT_MAX = 30.0


# --- ls -----------------------------------------------------------------------------------


def cmd_ls(args: argparse.Namespace) -> int:
    from vigil.protocol.api.execution import ListData

    from .. import output

    if args.limit is not None and args.limit < 1:
        raise UsageError(f"--limit must be at least 1, got {args.limit}")
    want = None if args.all else (args.limit or 50)
    client, scope = open_scope(args)
    with client:
        rows: list = []
        first = None
        while want is None or len(rows) < want:
            n = LIST_PAGE if want is None else min(LIST_PAGE, want - len(rows))
            page = scope.execution({"type": "list", "limit": n, "offset": len(rows)}).data
            first = first or page
            rows += page.executions
            if len(page.executions) < n or len(rows) >= page.total:
                break
    data = ListData(executions=rows, total=first.total, catalog_cursor=first.catalog_cursor,
                    retention_records=first.retention_records,
                    retention_shell_commands=first.retention_shell_commands)
    output.emit(data, args.json, table)
    if not args.json and len(rows) < data.total:
        output.note(f"{len(rows)} of {data.total} retained executions shown, newest first; "
                    "`vigil ls --all` lists them all")
    return output.OK


def table(data) -> str:
    import os

    from ..output import paint, use_colour

    colour = use_colour()
    rows = [("ID", "STATUS", "STARTED", "NAME/COMMAND", None)]
    for e in data.executions:
        rows.append((e.execution_id[:12], fmt_status(e), fmt_age(e.started_unix_ms),
                     e.name or e.command, status_colour(e)))
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    room = None
    if os.isatty(1):
        room = max(10, os.get_terminal_size(1).columns - sum(widths) - 6)
    lines = []
    for r in rows:
        what = r[3].replace("\n", " ")
        if room is not None and len(what) > room:
            what = what[: room - 1] + "…"
        state = paint(f"{r[1]:<{widths[1]}}", r[4], colour)
        lines.append(f"{r[0]:<{widths[0]}}  {state}  {r[2]:<{widths[2]}}  {what}".rstrip())
    return "\n".join(lines)


# --- show ---------------------------------------------------------------------------------


def cmd_show(args: argparse.Namespace) -> int:
    from .. import output

    data = execution_action(args, {"type": "get", "include_env": args.env})

    def human(d) -> str:
        e = d.execution
        out = e.output
        lines = [
            f"id        {e.execution_id}",
            f"name      {e.name}" if e.name else None,
            f"command   {e.command}" + (" [cut]" if e.command_truncated else ""),
            f"cwd       {e.cwd}",
            f"status    {fmt_status(e)}",
            f"reason    {e.start_error}" if e.start_error else None,
            f"started   {fmt_age(e.started_unix_ms)}",
            f"ended     {fmt_age(e.ended_unix_ms)}" if e.ended_unix_ms else None,
            f"reason    {e.unknown_reason}" if e.unknown_reason else None,
            f"output    {out.total_bytes} bytes, {out.retained_bytes} retained"
            + (f", {out.dropped_bytes} dropped" if out.dropped_bytes else ""),
            f"terminal  {e.rows}x{e.cols}",
        ]
        if e.runtime:
            r = e.runtime
            lines.append(f"guardian  pid {r.guardian_pid}, child pid {r.child_pid}")
        if args.env:
            if d.env is None:
                lines.append("env       (not kept for this execution)")
            else:
                lines.append("env")
                lines += [f"  {k}={v}" for k, v in sorted(d.env.items())]
        return "\n".join(line for line in lines if line)

    output.emit(data if args.env else data.execution, args.json,
                lambda _: human(data))
    return output.OK


# --- logs ---------------------------------------------------------------------------------


def cmd_logs(args: argparse.Namespace) -> int:
    from .. import output
    from ..follow import Sink, follow

    client, scope = open_scope(args)
    with client:
        eid = scope.resolve(args.id)
        if args.json:
            pages = []
            cursor = None
            while True:
                action = {"type": "read", "execution_id": eid, "source": "output",
                          "page_bytes": 65536}
                if cursor:
                    action["cursor"] = cursor
                page = scope.execution(action).data.page
                pages.append(page)
                cursor = page.next_cursor
                if not page.has_more or (not page.text and not page.gap):
                    break
            output.emit({"pages": pages}, True)
            return output.OK
        follow(scope, eid, Sink(raw=args.raw), until_now=not args.follow)
    return output.OK


# --- wait ---------------------------------------------------------------------------------


def describe(ex) -> str:
    """What an execution is now, in the words `wait` prints."""
    if ex.status == "exited":
        return fmt_status(ex)
    if ex.status == "unknown":
        return "unknown"
    return ex.recognized_state or "running"


def reached(ex, wanted: list[str]) -> bool:
    """Does `ex` already satisfy the wait: its end (`exited`, `unknown`) or a wanted state
    that holds now? (`state` and `output` are changes: only a new one satisfies them.)"""
    if ex.status in ("exited", "unknown"):
        return ex.status in wanted
    # A running execution's recognized state; `unknown` as a state is not the outcome.
    return ex.recognized_state in wanted and ex.recognized_state not in ("exited", "unknown")


def observe(scope, ids: list[str]):
    return scope.execution({"type": "observe", "items": [
        {"execution_id": i, "page_bytes": 4} for i in ids]}).data


def wait_for(scope, ids: list[str], wanted: list[str], timeout: float | None):
    """Wait until one of `ids` satisfies the wait (see `reached`), repeating protocol waits
    (each at most the wire's 30 s) until the CLI's own deadline. Returns (outcome, lines):
    outcome 'reached', 'changed', 'never' (all ended without reaching it) or 'timeout'."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        seen = observe(scope, ids)
        current = [item.execution for item in seen.items if item.execution is not None]
        hits = [ex for ex in current if reached(ex, wanted)]
        if hits:
            return "reached", [f"{ex.execution_id[:12]} {describe(ex)}" for ex in hits]
        if current and all(ex.status in ("exited", "unknown") for ex in current):
            return "never", [f"{ex.execution_id[:12]} {describe(ex)} (will not change again)"
                             for ex in current]
        cursor = seen.catalog_cursor
        while True:
            left = PROTOCOL_WAIT_MAX if deadline is None else deadline - time.monotonic()
            if left <= 0:
                return "timeout", ["timeout"]
            action = {"type": "wait", "execution_ids": ids, "after": cursor,
                      "timeout_seconds": min(left, PROTOCOL_WAIT_MAX), "events": wanted}
            data = scope.execution(action).data
            cursor = data.catalog_cursor
            if data.outcome == "resync":
                break  # the change log moved on: look at the present again
            if data.outcome == "changed":
                if {"state", "output"} & set(wanted):  # any such change is what was asked
                    lines = []
                    for change in data.changes:
                        line = f"{change.execution_id[:12]} {change.state or change.what}"
                        if line not in lines:
                            lines.append(line)
                    return "changed", lines
                hits = [ex for ex in data.executions if reached(ex, wanted)]
                if hits:
                    return "reached", [f"{ex.execution_id[:12]} {describe(ex)}" for ex in hits]


def wait_until_ended(scope, execution_id: str):
    """The execution's record once it has ended (exited or unknown)."""
    wait_for(scope, [execution_id], ["exited", "unknown"], None)
    return scope.execution({"type": "get", "execution_id": execution_id}).data.execution


def cmd_wait(args: argparse.Namespace) -> int:
    from .. import output

    if args.timeout is not None and not args.timeout >= 0:
        raise UsageError(f"--timeout must be a number of seconds >= 0, got {args.timeout}")
    client, scope = open_scope(args)
    with client:
        ids = [scope.resolve(i) for i in args.ids]
        outcome, lines = wait_for(scope, ids, args.for_ or ["exited", "unknown"], args.timeout)
    output.emit({"outcome": outcome, "lines": lines}, args.json, lambda r: "\n".join(lines))
    return output.OK if outcome in ("reached", "changed") else output.FAILED


# --- explain ------------------------------------------------------------------------------


def cmd_explain(args: argparse.Namespace) -> int:
    from .. import output

    data = execution_action(args, {"type": "explain", "recognizer": args.recognizer})

    def human(d) -> str:
        recovery = d.recovery
        if recovery.recommendation:
            resume = f"{recovery.advice}: {recovery.recommendation}"
        elif recovery.reason:
            resume = f"{recovery.advice} ({recovery.reason.replace('_', ' ')})"
        else:
            resume = recovery.advice
        reported = d.reported_state or "nothing reported yet"
        return "\n".join([
            f"recognizer  {d.recognizer} ({d.selected_by.replace('_', ' ')})",
            f"state       {d.state} (reported: {reported})",
            f"source      {d.source.replace('_', ' ')}, {d.detection_source.replace('_', ' ')}",
            f"rule        {d.rule} (priority {d.priority})" if d.rule
            else f"rule        none matched: {d.reason}",
            f"foreground  {d.observation.foreground or 'not known (the program has ended)'}",
            f"recovery    {resume}",
        ])

    output.emit(data, args.json, human)
    return output.OK


# --- parsers ------------------------------------------------------------------------------


def add_parsers(sub) -> None:
    p = sub.add_parser("ls", help="list this workspace's executions, newest first",
                       description="List this workspace's executions, newest first. Says how "
                                   "many are retained when it shows fewer; older ones are "
                                   "removed by retention (README, Retention).")
    p.add_argument("--limit", type=int, default=None, metavar="N",
                   help="show at most N (default 50)")
    p.add_argument("--all", action="store_true", help="show every retained execution")
    json_flag(p)
    p.set_defaults(handler=cmd_ls)

    p = sub.add_parser("show", help="show one execution")
    p.add_argument("id", help=ID_HELP)
    p.add_argument("--env", action="store_true",
                   help="also show the environment it was started with (may hold secrets)")
    json_flag(p)
    p.set_defaults(handler=cmd_show)

    p = sub.add_parser("logs", help="print an execution's retained output (-f: follow it)")
    p.add_argument("id", help=ID_HELP)
    p.add_argument("-f", "--follow", action="store_true",
                   help="keep streaming live until it exits")
    p.add_argument("--raw", action="store_true", help=RAW_HELP)
    json_flag(p)
    p.set_defaults(handler=cmd_logs)

    p = sub.add_parser(
        "wait", help="wait until executions exit or reach a state",
        description="Wait until one of the executions exits (or, with --for, reaches one of "
                    "the states), then print which one and what it became, e.g. "
                    "`3f2a9c1b07de exited 0`. Answers at once when that already holds; "
                    "exits 1 on timeout or when they all ended without reaching it.")
    p.add_argument("ids", nargs="+", metavar="ID", help=ID_HELP)
    p.add_argument("--for", dest="for_", action="append", choices=WAIT_EVENTS,
                   metavar="STATE", help="wait for this instead of the exit (repeatable): "
                   + ", ".join(WAIT_EVENTS))
    p.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                   help="give up after this long (default: wait as long as it takes)")
    json_flag(p)
    p.set_defaults(handler=cmd_wait)

    p = sub.add_parser("explain", help="how turn recognition sees an execution, and why")
    p.add_argument("id", help=ID_HELP)
    p.add_argument("--recognizer", default="auto",
                   help="recognizer to evaluate with (default: auto, chosen by the program)")
    json_flag(p)
    p.set_defaults(handler=cmd_explain)


__all__ = ["add_parsers", "exit_status", "wait_until_ended"]
