"""`vigil`: the command-line client.

The commands live in `vigil.client.commands`, one module per family; each module's
`add_parsers(sub)` registers its commands here, and `vigil --help` lists them by group
(`GROUPS`; a command in no group is listed under "more").

Every command takes `--json`. Exit codes: 0 ok, 1 a failed operation, 2 bad usage, 3 the
daemon unreachable — each failure with one line on stderr and no traceback, or with
`--json` an `{"error": {"code", "message"}}` object on stdout and the same exit code.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from vigil.protocol.version import VERSION

from . import output
from .commands import MODULES
from .output import UsageError

#: How `vigil --help` groups the commands (title → command names, in order).
GROUPS = {
    "start work": ("run", "sh"),
    "watch": ("ls", "show", "logs", "events", "screen", "wait", "explain", "top"),
    "interact": ("attach", "send", "keys", "kill", "prompt"),
    "control": ("pause", "resume", "cancel", "rerun", "approve"),
    "agents and records": ("mcp", "token", "transcript", "trace", "report", "export", "tmp"),
    "the daemon and tools": ("status", "daemon", "service", "protocol", "completion"),
}


def _help_width() -> int:
    """What argparse would compute (COLUMNS, else the terminal, less 2), found once: its
    formatter otherwise imports shutil and asks the terminal at every add_argument."""
    import os

    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        try:
            columns = os.get_terminal_size(2).columns
        except OSError:
            columns = 80
    return max(columns - 2, 20)


class Formatter(argparse.HelpFormatter):
    width: int | None = None

    def __init__(self, prog: str) -> None:
        if Formatter.width is None:
            Formatter.width = _help_width()
        super().__init__(prog, width=Formatter.width)


class ListFormatter(Formatter, argparse.RawDescriptionHelpFormatter):
    """The top level's: its epilog is the command list, already laid out."""


class Parser(argparse.ArgumentParser):
    """argparse that raises `UsageError` instead of exiting, so bad usage is reported the
    one way every error is (exit 2; JSON with --json). Subparsers inherit the class."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("formatter_class", Formatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str):
        raise UsageError(message, self.format_usage())


class TopParser(Parser):
    """The top-level parser: its help lists the commands by group (the epilog) instead of
    argparse's one flat list. The subparsers keep their help (completion generators read it)."""

    commands: argparse.Action | None = None

    def format_help(self) -> str:
        saved, self.commands.help = self.commands.help, argparse.SUPPRESS
        try:
            return super().format_help()
        finally:
            self.commands.help = saved


class _Skipped:
    """Stands in for the parser of a command that is not being run: every method call
    (add_argument, set_defaults, add_subparsers…) is accepted and does nothing."""

    def __getattr__(self, name):
        return lambda *args, **kwargs: self


class _OnlyCommand:
    """The subparsers action as command modules see it, building only `wanted`'s parser:
    `vigil ls` need not build the other twenty (argparse builds parsers slowly). The
    others' one-line help is still recorded, for the command list."""

    def __init__(self, sub, wanted: str):
        self.sub = sub
        self.wanted = wanted
        self.helps: dict[str, str] = {}

    def add_parser(self, name: str, **kwargs):
        self.helps[name] = kwargs.get("help") or ""
        if name == self.wanted or self.wanted in kwargs.get("aliases", ()):
            return self.sub.add_parser(name, **kwargs)
        return _Skipped()


#: Top-level options that take a value (so the word after them is not the command).
_VALUED = ("--workspace",)


def command_in(argv: list[str]) -> str | None:
    """The command `argv` runs, when that is plain from the words before it; None when
    every parser is needed (help, version, no command, or anything unusual)."""
    words = iter(argv)
    for word in words:
        if word in ("-h", "--help", "--version", "--"):
            return None
        if word in _VALUED:
            next(words, None)
        elif word.startswith(_VALUED) and "=" in word or word in ("--json", "--no-autostart"):
            continue
        elif word.startswith("-"):
            return None
        else:
            return word
    return None


def build_parser(command: str | None = None) -> Parser:
    """The whole parser, or with `command` one that can parse only that command (which
    is all `main` needs to run it)."""
    parser = TopParser(prog="vigil", description="Run and watch terminal work under guardians "
                                              "that outlive the daemon.",
                       formatter_class=ListFormatter,
                    usage="vigil [--json] [--no-autostart] [--workspace DIR] COMMAND ...")
    parser.add_argument("--version", action="version", version=f"vigil {VERSION}")
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")
    parser.add_argument("--no-autostart", action="store_true",
                        help="fail (exit 3) instead of starting vigild when it is not running")
    parser.add_argument("--workspace", default=None, metavar="DIR",
                        help="workspace whose executions to act on (default: $VIGIL_WORKSPACE, "
                             "else the enclosing git repository, else the current directory)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser,
                                help="the command (see the list below)")
    parser.commands = sub
    target = sub if command is None else _OnlyCommand(sub, command)
    for name in MODULES:
        importlib.import_module(f".commands.{name}", __package__).add_parsers(target)
    if command is not None:
        if command in sub.choices:
            return parser
        return build_parser()  # not a command: the full parser says which ones there are
    parser.epilog = command_list(sub) + (
        "\n\n`vigil COMMAND --help` tells more. Exit codes: 0 done, 1 failed, 2 bad usage, "
        "3 daemon unreachable;\n`run --wait` and `sh` exit with the command's own status.")
    return parser


def command_list(sub) -> str:
    """The commands by group, each with its one-line help (argparse keeps a subparser's
    help on its `_choices_actions` entry: the one place it is recorded)."""
    helps = {a.dest: a.help or "" for a in sub._choices_actions}
    width = max(map(len, helps), default=0) + 2
    grouped = {name for names in GROUPS.values() for name in names}
    sections = [(title, [n for n in names if n in helps]) for title, names in GROUPS.items()]
    sections.append(("more", [n for n in helps if n not in grouped]))
    lines = []
    for title, names in sections:
        if names:
            lines.append(f"{title}:")
            lines += [f"  {n:<{width}}{helps[n]}" for n in names]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    # Known before parsing, so that even a parse error is reported as JSON when asked.
    as_json = "--json" in (argv[: argv.index("--")] if "--" in argv else argv)
    try:
        parser = build_parser(command_in(argv))
        args = parser.parse_args(argv)
        if not hasattr(args, "handler"):
            if as_json:
                raise UsageError("a command is required")
            parser.print_help(sys.stderr)
            return output.USAGE
        args.json = getattr(args, "json", False)
        as_json = args.json
        return args.handler(args)
    except UsageError as exc:
        if as_json:
            output.fail("usage", exc.message, True)
        else:
            sys.stderr.write(exc.usage)
            output.error(f"error: {exc.message}")
        return output.USAGE
    except KeyboardInterrupt:
        return output.INTERRUPTED
    except BrokenPipeError:
        return output.OK
    except Exception as exc:  # the client's own exceptions, imported only when raised
        return _failure(exc, as_json)


def _failure(exc: Exception, as_json: bool) -> int:
    from vigil.protocol.errors import ErrorCode, RemoteError, VigilError

    from .connection import DaemonUnreachable

    if isinstance(exc, DaemonUnreachable):
        output.fail(str(exc.code), exc.message, as_json, prefix_code=False)
        return output.UNREACHABLE
    if isinstance(exc, RemoteError):
        output.fail(str(exc.code), exc.message, as_json)
        # The daemon refusing a request built from the command line is bad usage.
        return output.USAGE if exc.code == ErrorCode.INVALID_REQUEST else output.FAILED
    if isinstance(exc, VigilError):
        output.fail(str(exc.code), exc.message, as_json, prefix_code=False)
        return output.USAGE if exc.code == ErrorCode.INVALID_REQUEST else output.FAILED
    raise exc


if __name__ == "__main__":
    sys.exit(main())
