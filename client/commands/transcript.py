"""`vigil transcript [ID]`: a run's exchange transcript — the CLI thread's own without an ID,
else an execution's (an id or a unique prefix) — rendered for people (steps, prompts,
replies, tool calls and their results; child runs indented with `--tree`), or as the raw
JSONL lines with `--json` (what `jq` reads). Event types this version does not know are
shown with their type, never skipped."""

from __future__ import annotations

import argparse
import sys

from vigil.protocol.errors import ErrorCode, RemoteError

from .. import output

_TEXT_MAX = 200


def _summary(event) -> str:
    import json

    p = event.payload if isinstance(event.payload, dict) else {}
    t = event.type
    blocks = p.get("blocks") or []
    if t in ("run.started", "step.started"):
        what = p.get("kind", "")
        extra = p.get("command") or p.get("workspace_root") or ""
        cmd = next((b.get("command") for b in blocks if b.get("type") == "command"), None)
        return f"{what} {cmd or extra}".rstrip()
    if t in ("run.completed", "step.completed", "step.call_workflow.completed"):
        out = p.get("status") or p.get("kind") or ""
        code = p.get("exit_code")
        if code is None:
            code = next((b.get("exit_code") for b in blocks if b.get("type") == "command"), None)
        return f"{out}" + (f" {code}" if code is not None else "")
    if t == "step.call_workflow.started":
        return f"{p.get('kind', '')} {event.child_run_id[:12] if event.child_run_id else ''} " \
               f"{p.get('command') or ''}".rstrip()
    parts = []
    for b in blocks:
        kind = b.get("type")
        if kind in ("text", "thinking", "stream"):
            parts.append(("(thinking) " if kind == "thinking" else "") + b.get("text", ""))
        elif kind == "tool_use":
            args = b.get("tool_input")
            if isinstance(args, dict):  # the scope pair every call quotes says nothing here
                args = {k: v for k, v in args.items() if k not in ("thread_id", "workspace_root")}
            parts.append(f"{b.get('tool_name')}({json.dumps(args)})")
        elif kind == "tool_result":
            parts.append(("error: " if b.get("is_error") else "") + str(b.get("tool_content", "")))
        elif kind == "command":
            parts.append(b.get("command", ""))
    text = " ".join(parts).replace("\n", " ")
    fidelity = p.get("fidelity")
    mark = "" if fidelity in (None, "router") else " [agent]"
    return (text[:_TEXT_MAX] + ("…" if len(text) > _TEXT_MAX else "")) + mark


def render(event, indent: int = 0) -> str:
    time_of_day = event.timestamp[11:19]
    path = f" {event.path}" if event.path else ""
    return f"{'  ' * indent}{event.seq:>4} {time_of_day}{path} {event.type}: {_summary(event)}"


def _pages(scope, run_id: str):
    after = 0
    while True:
        page = scope.call("transcript", run_id=run_id, after_seq=after)
        yield from page.events
        after = page.next_seq
        if not page.has_more:
            return


def _print(event, args, indent: int) -> None:
    import json

    if args.json:
        sys.stdout.write(json.dumps(_plain(event), separators=(",", ":")) + "\n")
    else:
        sys.stdout.write(render(event, indent) + "\n")


def _plain(event) -> dict:
    import msgspec

    return {k: v for k, v in msgspec.to_builtins(event).items() if v is not None}


def _tree(scope, run_id: str, args, indent: int, seen: set[str]) -> None:
    seen.add(run_id)
    for event in _pages(scope, run_id):
        _print(event, args, indent)
        child = event.child_run_id
        if (args.tree and event.type == "step.call_workflow.started" and child
                and child not in seen):
            try:
                _tree(scope, child, args, indent + 1, seen)
            except RemoteError as exc:  # a child this thread may not read
                if exc.code != ErrorCode.NOT_FOUND:
                    raise


def cmd_transcript(args: argparse.Namespace) -> int:
    from vigil.protocol.api.transcript import TranscriptEnd, TranscriptStreamEvent

    from ..autostart import connect
    from ..scope import Scope

    client = connect(autostart=not args.no_autostart)
    with client:
        scope = Scope(client, args.workspace)
        run_id = scope.thread_id if args.id is None else scope.resolve(args.id)
        if not args.follow:
            _tree(scope, run_id, args, 0, set())
            sys.stdout.flush()
            return output.OK
        page = scope.call("transcript", run_id=run_id, follow=True)
        for event in page.events:
            _print(event, args, 0)
        sys.stdout.flush()
        while not page.completed:
            pushed = client.next_event(TranscriptStreamEvent)
            if isinstance(pushed, TranscriptEnd):
                break
            _print(pushed.event, args, 0)
            sys.stdout.flush()
    return output.OK


def add_parsers(sub) -> None:
    p = sub.add_parser("transcript", help="show a run's exchange transcript (steps, prompts, "
                                          "replies, tool calls)")
    p.add_argument("id", nargs="?", default=None,
                   help="execution id or a unique prefix (default: this workspace's CLI thread)")
    p.add_argument("-f", "--follow", action="store_true",
                   help="keep printing events as they are written, until the run completes")
    p.add_argument("--tree", action="store_true",
                   help="follow child runs (executions started for it) and show them indented")
    p.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                   help="print the raw JSONL events (one object a line, as in the file)")
    p.set_defaults(handler=cmd_transcript)
