"""How the CLI speaks: results on stdout (text or `--json`), one-line errors on stderr (or,
with `--json`, an `{"error": {"code", "message"}}` object on stdout), the exit codes every
command shares, and vigil's own colours (only on a terminal, never with `NO_COLOR`)."""

from __future__ import annotations

import os
import sys
from typing import Any, Callable

#: Exit codes (README, "Exit codes").
OK = 0
FAILED = 1
USAGE = 2
UNREACHABLE = 3
#: A command the user interrupted with Ctrl-C (128 + SIGINT, as a shell reports it).
INTERRUPTED = 130


class UsageError(Exception):
    """Bad usage, found by the CLI itself (exit 2): a missing argument, a malformed value,
    a name that does not exist. `usage` is the command's usage line, when there is one."""

    def __init__(self, message: str, usage: str = ""):
        super().__init__(message)
        self.message = message
        self.usage = usage


def emit(result: Any, as_json: bool, human: Callable[[Any], str] | None = None) -> None:
    """Print `result` (a typed Struct or plain data): JSON with `--json`, else `human(result)`."""
    if as_json or human is None:
        import json

        import msgspec

        data = msgspec.to_builtins(result, str_keys=True)
        sys.stdout.write(json.dumps(data, indent=None if not sys.stdout.isatty() else 2,
                                    sort_keys=True, default=str) + "\n")
    else:
        text = human(result)
        if text:
            sys.stdout.write(text if text.endswith("\n") else text + "\n")


def error(message: str) -> None:
    sys.stderr.write(f"vigil: {message}\n")


def fail(code: str, message: str, as_json: bool, *, prefix_code: bool = True) -> None:
    """Report a failure: `{"error": {"code", "message"}}` on stdout with `--json`, else one
    line on stderr (`vigil: CODE: MESSAGE`, or without the code)."""
    if as_json:
        import json

        sys.stdout.write(json.dumps({"error": {"code": code, "message": message}}) + "\n")
    else:
        error(f"{code}: {message}" if prefix_code else message)


def note(message: str) -> None:
    """A remark for the person (a gap in the output, how to follow a job again): stderr,
    so it never mixes with a command's output."""
    sys.stderr.write(f"vigil: {message}\n")
    sys.stderr.flush()


# --- colours ----------------------------------------------------------------------------------

_SGR = {"red": "31", "green": "32", "yellow": "33", "blue": "34", "magenta": "35",
        "cyan": "36", "dim": "2", "bold": "1"}


def use_colour(stream=None) -> bool:
    """Colours only on a terminal, and never when `NO_COLOR` is set (no-color.org)."""
    stream = stream or sys.stdout
    return not os.environ.get("NO_COLOR") and stream.isatty()


def paint(text: str, colour: str | None, on: bool) -> str:
    if not on or not colour:
        return text
    return f"\x1b[{_SGR[colour]}m{text}\x1b[0m"
