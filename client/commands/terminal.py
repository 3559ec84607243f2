"""An execution's terminal: `vigil attach`, `screen`, `send`, `keys`, `kill`."""

from __future__ import annotations

import argparse

from vigil.protocol.keys import KEY_HELP

from ..output import UsageError
from .common import ID_HELP, call_on, json_flag, open_scope


def cmd_attach(args: argparse.Namespace) -> int:
    import os
    import sys

    from .. import output
    from ..attach import DEFAULT_DETACH, attach, describe_key, parse_detach_key

    try:
        key = parse_detach_key(args.detach_key) if args.detach_key else DEFAULT_DETACH
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if not os.isatty(0) or not os.isatty(1):
        raise UsageError("attach needs a terminal on stdin and stdout (it puts it in raw "
                         "mode); to read output use `vigil logs -f ID`, to type use "
                         "`vigil send` or `vigil keys`")
    client, scope = open_scope(args)
    with client:
        eid = scope.resolve(args.id)
        why = attach(scope, eid, key)
    # Leave the terminal as `tmux detach` does: the program's alternate screen, modes and
    # colours undone, the notice on a fresh line at the bottom.
    sys.stdout.buffer.write(restore_terminal(os.get_terminal_size(1).lines))
    sys.stdout.buffer.flush()
    if why == "detached":
        notice = (f"detached from {eid[:12]} with {describe_key(key)}; it keeps running "
                  f"(attach again: vigil attach {eid[:12]})")
    else:
        notice = f"{why} from {eid[:12]}"
    sys.stderr.write(f"[vigil: {notice}]\n")
    sys.stderr.flush()
    return output.OK


def restore_terminal(rows: int) -> bytes:
    """What undoes a full-screen program's hold on the terminal: leave the alternate
    screen (restoring the cursor saved on entering it), attributes and colours off, cursor
    shown, normal cursor keys and keypad, no bracketed paste, no mouse reporting, autowrap
    on, the whole screen scrolling — then a fresh line at the bottom."""
    return ("\x1b[?1049l\x1b[0m\x1b[?25h\x1b[?1l\x1b>\x1b[?2004l"
            "\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1006l\x1b[?7h\x1b[r"
            f"\x1b[{rows};1H\n").encode()


def cmd_screen(args: argparse.Namespace) -> int:
    from .. import output

    result = call_on(args, "screen", ansi=args.ansi)
    output.emit(result, args.json,
                lambda r: r.ansi if args.ansi and r.ansi is not None else r.text)
    return output.OK


def cmd_send(args: argparse.Namespace) -> int:
    from .. import output

    result = call_on(args, "input", text=args.text, keys=["Enter"] if args.enter else [])
    output.emit(result, args.json, lambda r: "")
    return output.OK


def cmd_keys(args: argparse.Namespace) -> int:
    from vigil.protocol.keys import UnknownKey, key_bytes

    from .. import output

    for name in args.keys:  # checked here first: a typo is bad usage, nothing is sent
        try:
            key_bytes(name)
        except UnknownKey as exc:
            raise UsageError(str(exc)) from None
    output.emit(call_on(args, "input", keys=args.keys), args.json, lambda r: "")
    return output.OK


def parse_signal(text: str) -> int | str:
    """A signal number or name (INT, SIGINT, int), checked here: a typo is bad usage."""
    import signal

    if text.isdigit():
        number = int(text)
        if 1 <= number <= signal.SIGRTMAX:
            return number
    else:
        name = text.upper()
        name = name if name.startswith("SIG") else "SIG" + name
        if name in signal.Signals.__members__:
            return name.removeprefix("SIG")
    raise UsageError(f"unknown signal {text!r} (a name such as TERM, INT, KILL, HUP, or a "
                     "number)")


def cmd_kill(args: argparse.Namespace) -> int:
    from .. import output

    result = call_on(args, "signal", signal=parse_signal(args.signal))
    output.emit(result, args.json, lambda r: "" if r.delivered else
                f"not delivered: {r.reason or 'the process group is gone'}")
    return output.OK


def add_parsers(sub) -> None:
    p = sub.add_parser(
        "attach", help="watch and type into a live execution (detach: Ctrl-\\)",
        description="Put this terminal on the execution's terminal, as tmux attach does: "
                    "its screen, live output, your keys. The detach key (Ctrl-\\) leaves it "
                    "running and gives your terminal back as it was. Needs a terminal.")
    p.add_argument("id", help=ID_HELP)
    p.add_argument("--detach-key", default=None, metavar="KEY",
                   help="detach key, e.g. Ctrl-] or C-a (default Ctrl-\\)")
    p.set_defaults(handler=cmd_attach)

    p = sub.add_parser("screen", help="print an execution's terminal screen as it is now")
    p.add_argument("id", help=ID_HELP)
    p.add_argument("--ansi", action="store_true",
                   help="with colours and attributes (live executions only)")
    json_flag(p)
    p.set_defaults(handler=cmd_screen)

    p = sub.add_parser("send", help="type text into an execution's terminal")
    p.add_argument("id", help=ID_HELP)
    p.add_argument("text", help="the text to type (UTF-8)")
    p.add_argument("--enter", action="store_true", help="press Enter after the text")
    json_flag(p)
    p.set_defaults(handler=cmd_send)

    p = sub.add_parser("keys", help="press keys in an execution's terminal (tmux names: "
                                    "C-c, Up, F1, M-x, q…)",
                       description="Press keys in the execution's terminal, in order.",
                       epilog=KEY_HELP)
    p.add_argument("id", help=ID_HELP)
    p.add_argument("keys", nargs="+", metavar="KEY", help="key names (see below)")
    json_flag(p)
    p.set_defaults(handler=cmd_keys)

    p = sub.add_parser("kill", help="send a signal to an execution's process group")
    p.add_argument("id", help=ID_HELP)
    p.add_argument("-s", "--signal", default="TERM", metavar="SIGNAL",
                   help="signal name or number (default TERM)")
    json_flag(p)
    p.set_defaults(handler=cmd_kill)
