"""`vigil trace REF`: one agent turn's durable archive (`Agent get_trace`), for people — the
summary, then with `--mode tool_calls` each step's calls and their statuses, with `--mode
detail` the prompts, replies and results the archive's redaction kept — or as the answer's
JSON with `--json`.

REF is an archive ref (32 hex, as a receipt or `Agent get` names it), a trace key
`EXECUTION:TURN` (EXECUTION an id or a unique prefix), or an execution (an id or a unique
prefix): its latest turn. A 32-hex REF that names no archive is tried as an execution.
"""

from __future__ import annotations

import argparse

from .. import output

_LINE = 160

#: `vigil.protocol.api.trace.TRACE_MODES`, spelled out so that building the CLI's parsers
#: imports no protocol module (a test checks the two agree).
MODES = ("summary", "tool_calls", "detail")


def _when(unix_ms: int) -> str:
    import datetime as dt

    return dt.datetime.fromtimestamp(unix_ms / 1000, dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def _short(text: str | None, size: int) -> str:
    if text is None:
        return f"[{size} bytes withheld]"
    text = text.replace("\n", " ")
    return text[:_LINE] + ("…" if len(text) > _LINE else "")


def render(d) -> str:
    import json

    from vigil.protocol.api.trace import TraceToolUse

    s = d.summary
    head = (f"archive {d.archive_ref} (turn {d.turn} of {d.execution_id}), {d.state}"
            + (f", {s.status}" if s.status else "") + (" [failed]" if s.failed else ""))
    lines = [head,
             f"policy {d.stamp.retention_class}/{d.stamp.redaction} v{d.stamp.policy_version}; "
             f"expires {_when(d.expires_at_unix_ms)}",
             f"{s.steps} steps, {s.iterations} iterations, {s.tool_calls} tool calls "
             f"({s.tool_errors} errors, {s.results_missing} without result), "
             f"{s.replay_blocked_steps} replay-blocked"
             + (": " + ", ".join(f"{t.name}×{t.calls}" for t in s.tools) if s.tools else "")]
    if d.mode_fallback:
        lines.append("(unknown mode: summary shown)")
    for p in d.prompts:
        lines.append(f"prompt ({p.fidelity}): {_short(p.text, p.bytes)}")
    for step in d.steps:
        mark = f" REPLAY-BLOCKED ({', '.join(step.blocked_reasons)})" if step.replay_blocked else ""
        lines.append(f"{step.seq:>4} it {step.iteration} {step.timestamp[11:19]}{mark}")
        for block in step.action:
            if isinstance(block, TraceToolUse):
                args = block.input if isinstance(block.input, str) else json.dumps(block.input)
                lines.append(f"       {block.name} {block.tool_id} "
                             f"{_short(args if block.input is not None else None, block.input_bytes)}")
            else:
                lines.append(f"       {block.type}: {_short(block.text, block.bytes)}")
        for r in step.results:
            body = "" if r.content is None and d.mode != "detail" else f": {_short(r.content, r.bytes)}"
            lines.append(f"       → {r.status} {r.tool_id}{body}")
    if d.next_seq is not None:
        lines.append(f"[{d.omitted_steps} more steps: add --from {d.next_seq}]")
    return "\n".join(lines)


def cmd_trace(args: argparse.Namespace) -> int:
    from vigil.protocol.api.trace import parse_archive_ref
    from vigil.protocol.errors import ErrorCode, RemoteError, VigilError

    from ..autostart import connect
    from ..scope import Scope

    client = connect(autostart=not args.no_autostart)
    with client:
        scope = Scope(client, args.workspace)
        params = {"action": "get_trace", "mode": args.mode, "from_seq": args.from_seq}
        ref = args.ref
        data = None
        if ":" in ref:
            execution, _, turn = ref.rpartition(":")
            data = scope.call("Agent", trace_key=f"{scope.resolve(execution)}:{turn}", **params).data
        elif parse_archive_ref(ref) is not None:
            try:
                data = scope.call("Agent", archive_ref=ref, **params).data
            except RemoteError as exc:
                if exc.code != ErrorCode.NOT_FOUND:
                    raise
        if data is None:
            turn = scope.call("Agent", action="get", target=scope.resolve(ref)).data.turn
            if turn is None:
                raise VigilError(ErrorCode.NOT_FOUND, f"{ref} names no archive and no execution "
                                                      "with an agent turn")
            data = scope.call("Agent", archive_ref=turn.archive_ref, **params).data
    output.emit(data, args.json, render)
    return output.OK


def add_parsers(sub) -> None:
    p = sub.add_parser("trace", help="show an agent turn's archive (summary, tool calls, detail)")
    p.add_argument("ref", help="archive ref, EXECUTION:TURN, or an execution (its latest turn)")
    p.add_argument("--mode", choices=MODES, default="summary",
                   help="summary (default): counts and tools; tool_calls: each step's calls and "
                        "statuses; detail: everything the archive's redaction kept")
    p.add_argument("--from", dest="from_seq", type=int, default=None, metavar="SEQ",
                   help="start at this step (an answer is bounded; it says where to go on)")
    p.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                   help="print the answer as JSON")
    p.set_defaults(handler=cmd_trace)
