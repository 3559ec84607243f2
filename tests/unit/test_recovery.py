"""Conversation-recovery advice: one test per row of the spec table and per rejected shape."""

from __future__ import annotations

import msgspec
import pytest

from vigil.daemon.agent.recovery import RecoveryAdvice, advise
from vigil.daemon.settings import Settings

U = "123e4567-e89b-42d3-a456-426614174000"
V = "9b2f7c1e-0d4a-4e8b-9c3f-5a6b7c8d9e0f"
CWD = "/home/u/project"


# --- the spec table -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("launch", "selector", "resume"),
    [
        (["claude", "--session-id", U], "--session-id", ["claude", "--resume", U]),
        (["claude", "--resume", U], "--resume", ["claude", "--resume", U]),
        (["claude", "-r", U], "-r", ["claude", "--resume", U]),
        (["codex", "resume", U], "resume", ["codex", "resume", U]),
    ],
)
@pytest.mark.parametrize("as_text", [False, True])
def test_spec_table_rows(launch, selector, resume, as_text):
    if as_text:
        got = advise(None, " ".join(launch), CWD)
    else:
        got = advise(launch, None, CWD)
    assert got == RecoveryAdvice(
        advice="explicit_target",
        source="launch_argument",
        current_conversation_verified=False,
        agent=launch[0],
        selector=selector,
        conversation_id=U,
        resume_argv=resume,
        recommendation=" ".join(resume),
        cwd=CWD,
        reason=None,
    )


def test_explicit_record_is_exact_json_and_round_trips():
    got = advise(["claude", "--session-id", U], None, CWD)
    data = msgspec.json.encode(got)
    assert msgspec.json.decode(data) == {
        "advice": "explicit_target",
        "source": "launch_argument",
        "current_conversation_verified": False,
        "agent": "claude",
        "selector": "--session-id",
        "conversation_id": U,
        "resume_argv": ["claude", "--resume", U],
        "recommendation": f"claude --resume {U}",
        "cwd": CWD,
        "reason": None,
    }
    assert msgspec.json.decode(data, type=RecoveryAdvice) == got


def test_quoted_uuid_in_shell_text_is_a_literal_word():
    got = advise(None, f"claude --resume '{U}'", CWD)
    assert got.advice == "explicit_target" and got.conversation_id == U


def test_argv_wins_over_command_text():
    got = advise(["codex", "resume", U], "claude; rm -rf /", CWD)
    assert got.advice == "explicit_target" and got.agent == "codex"


# --- best effort ----------------------------------------------------------------------------


@pytest.mark.parametrize("program", ["claude", "codex"])
def test_bare_launch_is_best_effort_without_recommendation(program):
    for got in (advise([program], None, CWD), advise(None, f"  {program} ", CWD)):
        assert got == RecoveryAdvice(advice="best_effort", agent=program, cwd=CWD, reason="no_selector")
        assert got.resume_argv is None and got.recommendation is None and got.source is None


# --- rejected shapes ------------------------------------------------------------------------

TEXT_REJECTIONS = [
    # command lists
    (f"claude --resume {U}; ls", "command_list"),
    (f"claude --resume {U} && ls", "command_list"),
    (f"claude --resume {U} || ls", "command_list"),
    (f"claude --resume {U} &", "command_list"),
    (f"claude --resume {U}\nls", "command_list"),
    # pipelines
    (f"claude --resume {U} | tee log", "pipeline"),
    (f"echo hi | claude --resume {U}", "pipeline"),
    # substitutions
    ("claude --resume $(cat id)", "substitution"),
    ("claude --resume `cat id`", "substitution"),
    ("claude --resume ${ID}", "substitution"),
    ("claude --resume $ID", "substitution"),
    (f"claude --resume '{U}' <(true)", "substitution"),
    # redirections
    (f"claude --resume {U} > out", "redirection"),
    (f"claude --resume {U} 2>&1", "redirection"),
    (f"claude --resume {U} < in", "redirection"),
    # other shell syntax
    ("claude --resume *", "shell_syntax"),
    (f"claude --resume {U} # note", "shell_syntax"),
    (f"claude --resume \\{U}", "shell_syntax"),
    (f"(claude --resume {U})", "shell_syntax"),
    (f"claude --resume {{{U}}}", "shell_syntax"),
    (f"~/bin/claude --resume {U}", "shell_syntax"),
    (f"claude --resume {U}\x07", "shell_syntax"),
    ("claude --resume 'unterminated", "unparseable_command"),
    ("", "empty_command"),
    ("   ", "empty_command"),
]


@pytest.mark.parametrize(("text", "reason"), TEXT_REJECTIONS)
def test_shell_text_rejections(text, reason):
    got = advise(None, text, CWD)
    assert (got.advice, got.reason) == ("unavailable", reason)
    assert got.resume_argv is None and got.conversation_id is None and got.source is None


ARGV_REJECTIONS = [
    # extra flags and arguments
    (["claude", "--resume", U, "--verbose"], "unsupported_arguments", "claude"),
    (["claude", "--dangerously-skip-permissions", "--resume", U], "unsupported_arguments", "claude"),
    (["claude", "--resume", U, "fix the bug"], "unsupported_arguments", "claude"),
    (["claude", f"--resume={U}"], "unsupported_arguments", "claude"),
    (["claude", f"--session-id={U}"], "unsupported_arguments", "claude"),
    (["claude", "--verbose"], "unsupported_arguments", "claude"),
    (["claude", "--", "--resume", U], "unsupported_arguments", "claude"),
    (["codex", "resume", U, "continue please"], "unsupported_arguments", "codex"),
    (["codex", "resume", U, "--full-auto"], "unsupported_arguments", "codex"),
    (["codex", "exec", "hi"], "unsupported_arguments", "codex"),
    (["codex", "fix the bug"], "unsupported_arguments", "codex"),
    # wrappers
    (["env", "claude", "--resume", U], "wrapped_launch", None),
    (["env", "FOO=1", "claude", "--resume", U], "wrapped_launch", None),
    (["npx", "claude", "--resume", U], "wrapped_launch", None),
    (["sudo", "claude", "--resume", U], "wrapped_launch", None),
    (["timeout", "60", "codex", "resume", U], "wrapped_launch", None),
    (["nohup", "/usr/bin/claude", "--resume", U], "wrapped_launch", None),
    (["FOO=1", "claude", "--resume", U], "environment_assignment", None),
    # paths to the program
    (["/usr/bin/claude", "--resume", U], "program_path", "claude"),
    (["./codex", "resume", U], "program_path", "codex"),
    (["/usr/bin/claude"], "program_path", "claude"),
    # other programs
    (["bash", "-c", "claude"], "wrapped_launch", None),
    (["vim", "x"], "unsupported_program", None),
    (["Claude", "--resume", U], "unsupported_program", None),
    # conflicting selectors
    (["claude", "--session-id", U, "--resume", V], "conflicting_selectors", "claude"),
    (["claude", "--resume", U, "--resume", U], "conflicting_selectors", "claude"),
    (["claude", "-r", U, "--session-id", U], "conflicting_selectors", "claude"),
    (["claude", "--continue", "--resume", U], "conflicting_selectors", "claude"),
    (["codex", "resume", "--last", U], "conflicting_selectors", "codex"),
    # implicit selectors are never chosen
    (["claude", "--continue"], "implicit_selector", "claude"),
    (["claude", "-c"], "implicit_selector", "claude"),
    (["codex", "resume", "--last"], "implicit_selector", "codex"),
    # missing values
    (["claude", "--resume"], "missing_selector_value", "claude"),
    (["claude", "-r"], "missing_selector_value", "claude"),
    (["claude", "--session-id"], "missing_selector_value", "claude"),
    (["codex", "resume"], "missing_selector_value", "codex"),
    (["claude", "--resume", "--verbose"], "unsupported_arguments", "claude"),
    # not UUIDs
    (["claude", "--resume", "my-session"], "invalid_conversation_id", "claude"),
    (["codex", "resume", "my-thread-name"], "invalid_conversation_id", "codex"),
    (["claude", "--resume", U.replace("-", "")], "invalid_conversation_id", "claude"),
    (["claude", "--resume", "{" + U + "}"], "invalid_conversation_id", "claude"),
    (["claude", "--resume", "urn:uuid:" + U], "invalid_conversation_id", "claude"),
    (["claude", "--resume", U + "0"], "invalid_conversation_id", "claude"),
    (["claude", "--resume", U[:-1] + "g"], "invalid_conversation_id", "claude"),
    (["claude", "--resume", U + "\n"], "invalid_conversation_id", "claude"),
    # non-canonical UUIDs
    (["claude", "--resume", U.upper()], "non_canonical_uuid", "claude"),
    (["codex", "resume", "123E4567-e89b-42d3-a456-426614174000"], "non_canonical_uuid", "codex"),
    # malformed input
    ([], "empty_command", None),
    (["claude", 3], "unparseable_command", None),
]


@pytest.mark.parametrize(("argv", "reason", "agent"), ARGV_REJECTIONS)
def test_argv_rejections(argv, reason, agent):
    got = advise(argv, None, CWD)
    assert got == RecoveryAdvice(advice="unavailable", agent=agent, cwd=CWD, reason=reason)


def test_no_launch_at_all():
    assert advise(None, None, CWD) == RecoveryAdvice(advice="unavailable", cwd=CWD, reason="empty_command")


@pytest.mark.parametrize("cwd", ["relative/dir", "", "/a\x00b", None])
def test_invalid_cwd(cwd):
    got = advise(["claude", "--resume", U], None, cwd)
    assert got == RecoveryAdvice(advice="unavailable", reason="invalid_cwd")


def test_record_bound():
    small = Settings(recovery_record_max_bytes=512)
    at_limit = advise(["claude", "--resume", U], None, CWD, settings=small)
    assert at_limit.advice == "explicit_target"
    assert len(msgspec.json.encode(at_limit)) <= 512
    long_cwd = "/" + "d" * 400
    got = advise(["claude", "--resume", U], None, long_cwd, settings=small)
    assert got == RecoveryAdvice(advice="unavailable", reason="record_too_large")
    # The default 16 KiB bound: a control-character cwd escapes to 6 bytes per char in JSON.
    escaped = "/" + "\x01" * 3000
    got = advise(["claude", "--resume", U], None, escaped)
    assert (got.advice, got.reason, got.cwd) == ("unavailable", "record_too_large", None)
    assert len(msgspec.json.encode(got)) <= Settings().recovery_record_max_bytes
