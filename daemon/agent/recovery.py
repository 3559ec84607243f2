"""Conversation-recovery advice for a launched execution (spec: "Recover an explicitly
selected conversation").

Pure: no I/O, no clock, no realpath. Given what was launched (an argument vector, or the
shell text a persistent shell received) and the recorded working directory, say whether the
launch selected a conversation explicitly, and if so which command would resume *that*
conversation. The advice is evidence about the launch argument only: it never claims the
conversation is still current (``current_conversation_verified`` is always false), and
nothing here runs, replays or restarts anything.

The accepted shapes are exactly the spec's table of direct literal launches:

=================================  ===========================
launch                             recommendation
=================================  ===========================
``claude --session-id <uuid>``     ``claude --resume <uuid>``
``claude --resume <uuid>``         ``claude --resume <uuid>``
``claude -r <uuid>``               ``claude --resume <uuid>``
``codex resume <uuid>``            ``codex resume <uuid>``
=================================  ===========================

A bare ``claude`` or ``codex`` is ``best_effort`` (no recommendation). Everything else is
``unavailable`` with a finite ``reason`` (see `UnavailableReason`).

Decisions where the spec is silent (each has a test):

* **Program must be the literal word.** ``/usr/bin/claude`` or ``./claude`` is
  ``unavailable`` (``program_path``): the recommendation ``claude …`` would run whatever
  ``claude`` is on PATH, which need not be the binary that was launched; and a path is not
  the spec's "direct literal launch".
* **UUID means canonical lowercase 8-4-4-4-12 hex.** Uppercase or mixed case is
  ``unavailable`` (``non_canonical_uuid``) rather than normalised: the advice must target the
  recorded launch argument, and lowercasing could name a different session on a
  case-sensitive store, while keeping the uppercase spelling targets a form whose backend
  handling is unverified. Braced, URN or hyphenless forms are not UUIDs here
  (``invalid_conversation_id``).
* **``--opt=value`` spellings are not in the table** (``unsupported_arguments``).
* **Two selectors, even equal ones, conflict** (``conflicting_selectors``); an implicit
  selector (``claude --continue``/``-c``, ``codex resume --last``) is ``implicit_selector``
  alone and ``conflicting_selectors`` together with an explicit one. Recovery never picks
  "most recent" itself.
* **If ``argv`` is given it is authoritative**; ``command_text`` is used only when
  ``argv`` is None. Shell text is first rejected if it holds any character outside a
  conservative allowlist (so command lists, pipelines, substitutions, redirections, globs,
  comments, escapes never reach the tokenizer), then split with ``shlex`` in POSIX mode.
* **The record is bounded** by ``Settings.recovery_record_max_bytes`` (spec: 16 KiB) as
  compact JSON; a larger one becomes ``unavailable`` (``record_too_large``) with ``cwd``
  dropped, which always fits (the setting's minimum is 256 bytes).
"""

from __future__ import annotations

import re
import shlex
from typing import Literal

import msgspec

from vigil.daemon.settings import DEFAULTS, Settings

from vigil.protocol.api.execution import RecoveryAdvice

__all__ = ["Advice", "RecoveryAdvice", "UnavailableReason", "advise"]

Advice = Literal["explicit_target", "best_effort", "unavailable"]

#: Every reason a non-explicit advice can carry. ``no_selector`` is the only best-effort one.
UnavailableReason = Literal[
    "no_selector",  # best_effort: bare `claude` / `codex`
    "empty_command",
    "unparseable_command",  # shlex could not split it (unbalanced quote), or argv not strings
    "substitution",  # $(…), `…`, ${…}, $VAR, <(…)
    "command_list",  # ; && || & newline
    "pipeline",  # |
    "redirection",  # < >
    "shell_syntax",  # any other character outside the allowlist (glob, comment, escape…)
    "environment_assignment",  # FOO=bar claude …
    "wrapped_launch",  # env/sudo/npx/timeout/… claude …: claude or codex not first
    "program_path",  # /usr/bin/claude, ./codex
    "unsupported_program",
    "unsupported_arguments",  # extra flags or positionals, --opt=value spellings
    "conflicting_selectors",
    "implicit_selector",  # --continue, -c, resume --last
    "missing_selector_value",  # claude --resume, codex resume
    "invalid_conversation_id",  # not a UUID
    "non_canonical_uuid",  # a UUID, but not lowercase
    "invalid_cwd",  # not an absolute path without NUL
    "record_too_large",
]


_ENCODER = msgspec.json.Encoder()

# Canonical UUID text: 8-4-4-4-12 hex digits (RFC 9562 §4). Lowercase is the canonical
# output form; the case-insensitive match only exists to give uppercase its own reason.
_UUID_ANY_CASE = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_UUID_CANONICAL = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")

# Characters allowed in shell text before tokenizing: letters, digits, blanks, quotes and
# a few punctuation marks that no POSIX shell (nor bash/zsh) expands outside a word's
# start. Everything else — $ ` ; & | < > ( ) { } [ ] * ? ~ # ! \ ^ newline, control
# characters, non-ASCII — is refused, so the tokenizer only ever sees literal words.
_SHELL_ALLOWED = re.compile(r"[A-Za-z0-9 \t'\"._/:=@+,%-]*")

_PROGRAMS = ("claude", "codex")
_CLAUDE_EXPLICIT = ("--session-id", "--resume", "-r")
_CLAUDE_IMPLICIT = ("--continue", "-c")


def advise(
    argv: list[str] | None,
    command_text: str | None,
    cwd: str,
    *,
    settings: Settings = DEFAULTS,
) -> RecoveryAdvice:
    """Recovery advice for a launch.

    Args:
        argv: the literal argument vector that was executed, if known (authoritative).
        command_text: the shell text that was accepted, used only when ``argv`` is None.
        cwd: the recorded working directory (absolute), kept in the advice.
        settings: for ``recovery_record_max_bytes``.

    Returns:
        A `RecoveryAdvice`; never raises for any input.
    """
    if not isinstance(cwd, str) or not cwd.startswith("/") or "\x00" in cwd:
        return RecoveryAdvice(advice="unavailable", reason="invalid_cwd")
    advice = _classify(argv, command_text)
    advice.cwd = cwd
    if len(_ENCODER.encode(advice)) > settings.recovery_record_max_bytes:
        return RecoveryAdvice(advice="unavailable", reason="record_too_large")
    return advice


def _unavailable(reason: UnavailableReason, agent: str | None = None) -> RecoveryAdvice:
    return RecoveryAdvice(advice="unavailable", reason=reason, agent=agent)


def _classify(argv: list[str] | None, command_text: str | None) -> RecoveryAdvice:
    if argv is not None:
        if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
            return _unavailable("unparseable_command")
        words = argv
    elif command_text is None:
        return _unavailable("empty_command")
    else:
        if not isinstance(command_text, str):
            return _unavailable("unparseable_command")
        rejected = _shell_syntax(command_text)
        if rejected is not None:
            return _unavailable(rejected)
        try:
            words = shlex.split(command_text, comments=False, posix=True)
        except ValueError:
            return _unavailable("unparseable_command")
    if not words:
        return _unavailable("empty_command")
    return _classify_words(words)


def _shell_syntax(text: str) -> UnavailableReason | None:
    """The first kind of shell syntax found in ``text``, or None if it is plain words."""
    if "$" in text or "`" in text or "<(" in text or ">(" in text:
        return "substitution"
    if ";" in text or "&&" in text or "||" in text or "\n" in text or "\r" in text:
        return "command_list"
    if "<" in text or ">" in text:
        return "redirection"
    if "|" in text:
        return "pipeline"
    if "&" in text:  # a trailing `&` makes an asynchronous list
        return "command_list"
    if _SHELL_ALLOWED.fullmatch(text) is None:
        return "shell_syntax"
    return None


def _classify_words(words: list[str]) -> RecoveryAdvice:
    program = words[0]
    base = program.rsplit("/", 1)[-1]
    if program in _PROGRAMS:
        if program == "claude":
            return _claude(words[1:])
        return _codex(words[1:])
    if "/" in program and base in _PROGRAMS:
        return _unavailable("program_path", agent=base)
    if "=" in program and not program.startswith("="):
        return _unavailable("environment_assignment")
    if any(w.rsplit("/", 1)[-1] in _PROGRAMS for w in words[1:]):
        return _unavailable("wrapped_launch")
    return _unavailable("unsupported_program")


def _claude(args: list[str]) -> RecoveryAdvice:
    if not args:
        return RecoveryAdvice(advice="best_effort", reason="no_selector", agent="claude")
    explicit: list[tuple[str, str | None]] = []
    implicit = 0
    extras = 0
    i = 0
    while i < len(args):
        word = args[i]
        if word in _CLAUDE_EXPLICIT:
            # Like commander.js: a following word that starts with `-` is not a value.
            value = args[i + 1] if i + 1 < len(args) and not args[i + 1].startswith("-") else None
            explicit.append((word, value))
            i += 2 if value is not None else 1
        elif word in _CLAUDE_IMPLICIT:
            implicit += 1
            i += 1
        else:
            extras += 1
            i += 1
    if len(explicit) + implicit > 1:
        return _unavailable("conflicting_selectors", agent="claude")
    if extras:
        return _unavailable("unsupported_arguments", agent="claude")
    if implicit:
        return _unavailable("implicit_selector", agent="claude")
    selector, value = explicit[0]
    return _explicit("claude", selector, value, ["claude", "--resume"])


def _codex(args: list[str]) -> RecoveryAdvice:
    if not args:
        return RecoveryAdvice(advice="best_effort", reason="no_selector", agent="codex")
    if args[0] != "resume":
        return _unavailable("unsupported_arguments", agent="codex")
    rest = args[1:]
    positionals = [w for w in rest if not w.startswith("-")]
    has_last = "--last" in rest
    others = [w for w in rest if w.startswith("-") and w != "--last"]
    if (has_last and positionals) or rest.count("--last") > 1:
        return _unavailable("conflicting_selectors", agent="codex")
    if others or len(positionals) > 1:  # `codex resume <id> <prompt>` replays a prompt
        return _unavailable("unsupported_arguments", agent="codex")
    if has_last:
        return _unavailable("implicit_selector", agent="codex")
    return _explicit("codex", "resume", positionals[0] if positionals else None, ["codex", "resume"])


def _explicit(agent: str, selector: str, value: str | None, prefix: list[str]) -> RecoveryAdvice:
    if value is None:
        return _unavailable("missing_selector_value", agent=agent)
    if _UUID_CANONICAL.fullmatch(value) is None:
        if _UUID_ANY_CASE.fullmatch(value) is not None:
            return _unavailable("non_canonical_uuid", agent=agent)
        return _unavailable("invalid_conversation_id", agent=agent)
    resume_argv = [*prefix, value]
    return RecoveryAdvice(
        advice="explicit_target",
        source="launch_argument",
        current_conversation_verified=False,
        agent=agent,  # type: ignore[arg-type]
        selector=selector,
        conversation_id=value,
        resume_argv=resume_argv,
        recommendation=shlex.join(resume_argv),
    )

