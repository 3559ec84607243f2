"""`vigil prompt`: submit a prompt to an agent TUI once, with a receipt."""

from __future__ import annotations

import argparse

from .common import ID_HELP, json_flag, open_scope


def cmd_prompt(args: argparse.Namespace) -> int:
    from .. import output

    client, scope = open_scope(args)
    with client:
        eid = scope.resolve(args.id)
        params = {"action": "prompt", "backend": "native", "target": eid,
                  "prompt_id": args.prompt_id, "text": args.text,
                  "timeout_seconds": args.timeout, "recognizer": args.recognizer}
        if args.wait_for:
            params["wait_for"] = args.wait_for
        data = scope.call("Agent", **params).data
    receipt = data.receipt

    def human(_) -> str:
        return "\n".join([
            f"prompt     {receipt.prompt_id}"
            + ("  (stored receipt: nothing sent)" if data.replayed else ""),
            f"delivery   {receipt.delivery}"
            + (f" ({receipt.delivery_reason})" if receipt.delivery_reason else ""),
            f"activity   {receipt.activity} ({receipt.activity_reason})",
            f"condition  {receipt.condition}",
            f"generation {receipt.generation}",
        ])

    output.emit(data, args.json, human)
    return output.OK if receipt.condition not in ("timed_out", "pending") else output.FAILED


def add_parsers(sub) -> None:
    p = sub.add_parser("prompt", help="submit a prompt to an agent TUI once, and print the receipt")
    p.add_argument("id", help=ID_HELP)
    p.add_argument("text", help="the prompt text")
    p.add_argument("--prompt-id", required=True, metavar="ID",
                   help="your id for this prompt: the same id and text are never sent twice")
    p.add_argument("--wait-for", action="append", metavar="STATE",
                   choices=("awaiting_input", "awaiting_approval", "exited"),
                   help="wait until the agent reaches this state (repeatable): "
                        "awaiting_input, awaiting_approval, exited")
    p.add_argument("--timeout", type=float, default=30.0, metavar="SECONDS",
                   help="how long to wait for delivery and the condition (default 30)")
    p.add_argument("--recognizer", default="auto",
                   help="recognizer that decides the agent's state (default: auto)")
    json_flag(p)
    p.set_defaults(handler=cmd_prompt)
