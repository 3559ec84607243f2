"""CLI commands over executions: run, ls, show, logs, kill."""

from __future__ import annotations

import argparse
import signal as _signal
import sys
import time
from typing import Any

from vigil.protocol.errors import ErrorCode, VigilError

from . import output


def _scope(args):
    from .autostart import connect
    from .scope import Scope

    client = connect(autostart=not args.no_autostart)
    return client, Scope(client, args.workspace)


def exit_status(execution: dict[str, Any]) -> int:
    """The shell convention: the exit code, or 128+N for signal N; unknown is a failure."""
    if execution["status"] == "exited":
        if execution["signal"] is not None:
            return 128 + execution["signal"]
        return execution["exit_code"] if execution["exit_code"] is not None else 1
    return 1


def fmt_status(e: dict[str, Any]) -> str:
    if e["status"] == "exited":
        if e["signal"] is not None:
            try:
                return f"killed ({_signal.Signals(e['signal']).name})"
            except ValueError:
                return f"killed (signal {e['signal']})"
        return f"exited {e['exit_code']}"
    if e["status"] == "unknown":
        return "unknown"
    state = e.get("recognized_state")
    return f"running ({state})" if state else "running"


def fmt_age(ms: int | None) -> str:
    if not ms:
        return "-"
    secs = max(0, time.time() - ms / 1000)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if secs >= size:
            return f"{int(secs // size)}{unit} ago"
    return f"{int(secs)}s ago"


def cmd_run(args: argparse.Namespace) -> int:
    if args.argv[:1] == ["--"]:
        args.argv = args.argv[1:]
    if not args.argv:
        raise VigilError(ErrorCode.INVALID_REQUEST, "nothing to run: vigil run [options] -- CMD ARGS...")
    env = {}
    for item in args.env or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise VigilError(ErrorCode.INVALID_REQUEST, f"--env expects KEY=VALUE, got {item!r}")
        env[key] = value
    client, scope = _scope(args)
    with client:
        params: dict[str, Any] = {"argv": args.argv, "env": env, "name": args.name or ""}
        if args.cwd:
            import os

            params["cwd"] = os.path.abspath(args.cwd)
        execution = scope.call("run", **params)["execution"]
        if not args.wait:
            output.emit(execution, args.json, lambda e: e["execution_id"])
            return output.OK
        final = follow(scope, execution["execution_id"], sys.stdout.buffer if not args.json else None)
        if args.json:
            output.emit(final, True)
        return exit_status(final)


def output_pages(scope, execution_id: str, *, follow: bool):
    """Yield the execution's output pages from the start.

    Following, each read long-polls in the daemon (`wait_seconds`), which wakes on new output
    or the exit, until the execution has ended and everything was read: nothing here polls
    on a timer. Without following, it stops at what is retained now.
    """
    cursor = None
    while True:
        action: dict[str, Any] = {"type": "read", "execution_id": execution_id,
                                  "source": "output", "page_bytes": 65536}
        if follow:
            action["wait_seconds"] = 30.0
        if cursor:
            action["cursor"] = cursor
        page = scope.execution(action)["data"]["page"]
        yield page
        cursor = page["next_cursor"]
        if not page["has_more"] or (not follow and not page["text"] and not page.get("gap")):
            return


def write_page(page: dict[str, Any], sink) -> None:
    """A page's text to `sink`; a retention gap is said on stderr."""
    if page.get("gap"):
        sys.stderr.write(f"vigil: {page['gap']['bytes_skipped']} bytes of output are no longer "
                         "retained\n")
    if page["text"]:
        sink.write(page["text"].encode("utf-8", "surrogateescape"))
        sink.flush()


def follow(scope, execution_id: str, sink) -> dict[str, Any]:
    """Stream output to `sink` (None: just wait) until the execution ends; the final record."""
    for page in output_pages(scope, execution_id, follow=True):
        if sink is not None:
            write_page(page, sink)
    return scope.execution({"type": "get", "execution_id": execution_id})["data"]["execution"]


def cmd_ls(args: argparse.Namespace) -> int:
    client, scope = _scope(args)
    with client:
        data = scope.execution({"type": "list", "limit": args.limit})["data"]

    def human(d):
        rows = [("ID", "STATUS", "STARTED", "NAME/COMMAND")]
        for e in d["executions"]:
            rows.append((e["execution_id"][:12], fmt_status(e), fmt_age(e["started_unix_ms"]),
                         e["name"] or e["command"]))
        widths = [max(len(r[i]) for r in rows) for i in range(3)]
        return "\n".join(f"{r[0]:<{widths[0]}}  {r[1]:<{widths[1]}}  {r[2]:<{widths[2]}}  {r[3]}"
                         for r in rows)

    output.emit(data, args.json, human)
    return output.OK


def cmd_show(args: argparse.Namespace) -> int:
    client, scope = _scope(args)
    with client:
        eid = scope.resolve(args.id)
        e = scope.execution({"type": "get", "execution_id": eid})["data"]["execution"]

    def human(e):
        out = e["output"]
        lines = [
            f"id        {e['execution_id']}",
            f"name      {e['name']}" if e["name"] else None,
            f"command   {e['command']}",
            f"cwd       {e['cwd']}",
            f"status    {fmt_status(e)}",
            f"started   {fmt_age(e['started_unix_ms'])}",
            f"ended     {fmt_age(e['ended_unix_ms'])}" if e["ended_unix_ms"] else None,
            f"reason    {e['unknown_reason']}" if e["unknown_reason"] else None,
            f"output    {out['total_bytes']} bytes, {out['retained_bytes']} retained"
            + (f", {out['dropped_bytes']} dropped" if out["dropped_bytes"] else ""),
            f"terminal  {e['cols']}x{e['rows']}",
        ]
        if e["runtime"]:
            r = e["runtime"]
            lines.append(f"guardian  pid {r['guardian_pid']}, child pid {r['child_pid']}")
        return "\n".join(line for line in lines if line)

    output.emit(e, args.json, human)
    return output.OK


def cmd_logs(args: argparse.Namespace) -> int:
    client, scope = _scope(args)
    with client:
        eid = scope.resolve(args.id)
        if args.follow:
            follow(scope, eid, sys.stdout.buffer)
            return output.OK
        pages = []
        for page in output_pages(scope, eid, follow=False):
            if args.json:
                pages.append(page)
            else:
                write_page(page, sys.stdout.buffer)
        if args.json:
            output.emit({"pages": pages}, True)
        sys.stdout.flush()
    return output.OK


def _call_on(args: argparse.Namespace, method: str, **params: Any) -> Any:
    """Call `method` on the execution named (by id or unique prefix) in `args.id`."""
    client, scope = _scope(args)
    with client:
        return scope.call(method, execution_id=scope.resolve(args.id), **params)


def cmd_kill(args: argparse.Namespace) -> int:
    sig = args.signal.upper().removeprefix("SIG") if not args.signal.isdigit() else int(args.signal)
    output.emit(_call_on(args, "signal", signal=sig), args.json, lambda r: "")
    return output.OK


def cmd_screen(args: argparse.Namespace) -> int:
    result = _call_on(args, "screen", ansi=args.ansi, history=args.history)

    def human(r):
        history = r.get("scrollback") or []
        if args.ansi and r.get("ansi") is not None:
            lines = r.get("scrollback_ansi") or history
            return "".join(line + "\r\n" for line in lines) + r["ansi"]
        return "".join(line + "\n" for line in history) + r["text"]

    output.emit(result, args.json, human)
    return output.OK


def cmd_attach(args: argparse.Namespace) -> int:
    from .attach import DEFAULT_DETACH, attach, parse_detach_key

    try:
        key = parse_detach_key(args.detach_key) if args.detach_key else DEFAULT_DETACH
    except ValueError as exc:
        raise VigilError(ErrorCode.INVALID_REQUEST, str(exc)) from None
    client, scope = _scope(args)
    with client:
        eid = scope.resolve(args.id)
        why = attach(scope, eid, key)
    sys.stderr.write(f"\r\n[vigil: {why} from {eid[:12]}]\r\n")
    return output.OK


def cmd_send(args: argparse.Namespace) -> int:
    result = _call_on(args, "input", text=args.text, keys=["Enter"] if args.enter else [])
    output.emit(result, args.json, lambda r: "")
    return output.OK


def cmd_keys(args: argparse.Namespace) -> int:
    output.emit(_call_on(args, "input", keys=args.keys), args.json, lambda r: "")
    return output.OK


def cmd_sh(args: argparse.Namespace) -> int:
    """Run COMMAND in this workspace's CLI thread shell (BashCommand), or attach to it."""
    client, scope = _scope(args)
    with client:
        if not args.command:
            result = scope.call("BashCommand", action={"type": "status_check"}, wait_for_seconds=0)
            from .attach import attach

            why = attach(scope, result["shell_execution_id"])
            sys.stderr.write(f"\r\n[vigil: {why} from the shell]\r\n")
            return output.OK
        text = " ".join(args.command)
        result = scope.call("BashCommand", action={"type": "command", "command": text},
                            wait_for_seconds=args.timeout)
    if args.json:
        output.emit(result, True)
    else:
        sys.stdout.write(result["output"].replace("\r\n", "\n"))
        if result["status"] == "running":
            sys.stderr.write(f"vigil: still running (generation {result['generation']}, "
                             f"execution {result['execution_id'][:12]})\n")
            return output.FAILED
    return result["exit_code"] if result["status"] == "completed" else output.OK


WAIT_EVENTS = ("state", "output", "exited", "awaiting_input", "awaiting_approval", "busy", "unknown")


def cmd_wait(args: argparse.Namespace) -> int:
    client, scope = _scope(args)
    with client:
        ids = [scope.resolve(i) for i in args.ids]
        action: dict[str, Any] = {"type": "wait", "execution_ids": ids,
                                  "timeout_seconds": args.timeout}
        if args.for_:
            action["events"] = args.for_
        # The baseline is "now": a state already reached counts too, so look first.
        listing = scope.execution({"type": "observe", "timeout_seconds": args.timeout,
                                   "items": [{"execution_id": i, "page_bytes": 4} for i in ids]})
        for item in listing["data"]["items"]:
            ex = item.get("execution") or {}
            if args.for_ and (ex.get("recognized_state") in args.for_ or
                              ("exited" in args.for_ and ex.get("status") == "exited")):
                output.emit({"outcome": "already", "executions": [ex]}, args.json,
                            lambda r: f"{ex['execution_id'][:12]} {ex.get('recognized_state')}")
                return output.OK
        action["after"] = listing["data"]["catalog_cursor"]
        data = scope.execution(action)["data"]

    def human(d):
        if d["outcome"] != "changed":
            return d["outcome"]
        return "\n".join(f"{c['execution_id'][:12]} {c['what']}" + (f" {c['state']}" if c["state"] else "")
                         for c in d["changes"])

    output.emit(data, args.json, human)
    return output.OK if data["outcome"] == "changed" else output.FAILED


def cmd_explain(args: argparse.Namespace) -> int:
    client, scope = _scope(args)
    with client:
        eid = scope.resolve(args.id)
        data = scope.execution({"type": "explain", "execution_id": eid,
                                "recognizer": args.recognizer})["data"]

    def human(d):
        return "\n".join([
            f"recognizer  {d['recognizer']} ({d['selected_by']})",
            f"state       {d['state']} (reported: {d['reported_state']})",
            f"source      {d['source']}, {d['detection_source']}",
            f"rule        {d['rule']} (priority {d['priority']})" if d["rule"] else f"reason      {d['reason']}",
            f"foreground  {d['observation']['foreground']}",
            f"recovery    {d['recovery']['advice']}"
            + (f": {d['recovery']['recommendation']}" if d["recovery"].get("recommendation") else
               f" ({d['recovery']['reason']})" if d["recovery"].get("reason") else ""),
        ])

    output.emit(data, args.json, human)
    return output.OK


def cmd_prompt(args: argparse.Namespace) -> int:
    client, scope = _scope(args)
    with client:
        eid = scope.resolve(args.id)
        params: dict[str, Any] = {"action": "prompt", "backend": "native", "target": eid,
                                  "prompt_id": args.prompt_id, "text": args.text,
                                  "timeout_seconds": args.timeout, "recognizer": args.recognizer}
        if args.wait_for:
            params["wait_for"] = args.wait_for
        data = scope.call("Agent", **params)["data"]
    receipt = data["receipt"]

    def human(_):
        return "\n".join([
            f"prompt     {receipt['prompt_id']}" + ("  (stored receipt: nothing sent)" if data["replayed"] else ""),
            f"delivery   {receipt['delivery']}",
            f"activity   {receipt['activity']} ({receipt['activity_reason']})",
            f"condition  {receipt['condition']}",
            f"generation {receipt['generation']}",
        ])

    output.emit(data, args.json, human)
    return output.OK if receipt["condition"] not in ("timed_out", "pending") else output.FAILED


def add_parsers(sub, json_flag) -> None:
    p = sub.add_parser("prompt", help="submit a prompt to an agent TUI once, and print the receipt")
    p.add_argument("id", help="execution id or a unique prefix")
    p.add_argument("text")
    p.add_argument("--prompt-id", required=True, help="your id for this prompt: the same id "
                   "and text never send twice")
    p.add_argument("--wait-for", action="append",
                   choices=("awaiting_input", "awaiting_approval", "exited"))
    p.add_argument("--timeout", type=float, default=30.0)
    p.add_argument("--recognizer", default="auto")
    json_flag(p)
    p.set_defaults(handler=cmd_prompt)

    p = sub.add_parser("wait", help="wait for a change of one or more executions")
    p.add_argument("ids", nargs="+", metavar="ID")
    p.add_argument("--for", dest="for_", action="append", choices=WAIT_EVENTS,
                   help="only these events/states (repeatable)")
    p.add_argument("--timeout", type=float, default=30.0, help="seconds, 0–30 (default 30)")
    json_flag(p)
    p.set_defaults(handler=cmd_wait)

    p = sub.add_parser("explain", help="how turn recognition sees an execution")
    p.add_argument("id", help="execution id or a unique prefix")
    p.add_argument("--recognizer", default="auto")
    json_flag(p)
    p.set_defaults(handler=cmd_explain)

    p = sub.add_parser("attach", help="watch and type into a live execution (detach: Ctrl-\\)")
    p.add_argument("id", help="execution id or a unique prefix")
    p.add_argument("--detach-key", default=None, help="detach key, e.g. Ctrl-] (default Ctrl-\\)")
    p.set_defaults(handler=cmd_attach)

    p = sub.add_parser("send", help="type text into an execution's terminal")
    p.add_argument("id", help="execution id or a unique prefix")
    p.add_argument("text")
    p.add_argument("--enter", action="store_true", help="press Enter after the text")
    json_flag(p)
    p.set_defaults(handler=cmd_send)

    p = sub.add_parser("keys", help="press named keys (Enter, Ctrl-c, Key-up, Tab, Escape…)")
    p.add_argument("id", help="execution id or a unique prefix")
    p.add_argument("keys", nargs="+")
    json_flag(p)
    p.set_defaults(handler=cmd_keys)

    p = sub.add_parser("sh", help="run COMMAND in this workspace's persistent shell "
                                  "(no COMMAND: attach to it)")
    p.add_argument("command", nargs=argparse.REMAINDER)
    p.add_argument("--timeout", type=float, default=300.0,
                   help="seconds to wait for the command (default 300)")
    json_flag(p)
    p.set_defaults(handler=cmd_sh)

    p = sub.add_parser("screen", help="print an execution's current screen")
    p.add_argument("id", help="execution id or a unique prefix")
    p.add_argument("--ansi", action="store_true", help="with colours and attributes (live only)")
    p.add_argument("--history", type=int, default=0, metavar="N",
                   help="also print the last N lines that scrolled off the top (live only)")
    json_flag(p)
    p.set_defaults(handler=cmd_screen)

    p = sub.add_parser("run", help="start a command under a guardian and print its id")
    p.add_argument("--cwd", help="working directory (default: the workspace root)")
    p.add_argument("--env", action="append", metavar="K=V", help="add an environment variable")
    p.add_argument("--name", help="a name to show in listings")
    p.add_argument("--wait", action="store_true",
                   help="stream the output and exit with the command's status (128+N for signal N)")
    p.add_argument("argv", nargs=argparse.REMAINDER, metavar="-- CMD ARGS")
    json_flag(p)
    p.set_defaults(handler=cmd_run)

    p = sub.add_parser("ls", help="list executions of this workspace, newest first")
    p.add_argument("--limit", type=int, default=50)
    json_flag(p)
    p.set_defaults(handler=cmd_ls)

    p = sub.add_parser("show", help="show one execution")
    p.add_argument("id", help="execution id or a unique prefix")
    json_flag(p)
    p.set_defaults(handler=cmd_show)

    p = sub.add_parser("logs", help="print an execution's retained output")
    p.add_argument("id", help="execution id or a unique prefix")
    p.add_argument("-f", "--follow", action="store_true", help="follow until it exits")
    json_flag(p)
    p.set_defaults(handler=cmd_logs)

    p = sub.add_parser("kill", help="signal an execution's process group")
    p.add_argument("id", help="execution id or a unique prefix")
    p.add_argument("-s", "--signal", default="TERM", help="signal name or number (default TERM)")
    json_flag(p)
    p.set_defaults(handler=cmd_kill)
