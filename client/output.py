"""How the CLI speaks: results on stdout (text or `--json`), one-line errors on stderr,
and the exit codes every command shares."""

from __future__ import annotations

import json
import sys
from typing import Any, Callable

#: Exit codes (README, "Exit codes").
OK = 0
FAILED = 1
USAGE = 2
UNREACHABLE = 3


def emit(result: Any, as_json: bool, human: Callable[[Any], str] | None = None) -> None:
    """Print `result` (a typed Struct or plain data): JSON with `--json`, else `human(result)`."""
    if as_json or human is None:
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
