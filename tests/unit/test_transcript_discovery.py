"""Finding an agent's session log: trees built in temporary directories, one test per rule
of the reference page's "Finding the log" and per way a candidate is told apart."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from vigil.daemon.settings import Settings
from vigil.protocol.transcript import timestamp_from_unix_ms
from vigil.daemon.transcript.providers import Candidate, Rejected, find_session_log
from vigil.daemon.transcript.providers.discovery import (
    claude_config_dir, claude_project_dirs, claude_project_slug, codex_home, codex_rollout_files,
)

START = 1748772000000  # 2025-06-01T10:00:00.000Z
CWD = "/work/project"
S1 = "11111111-1111-4111-8111-111111111111"
S2 = "22222222-2222-4222-8222-222222222222"


def ts(seconds_after_start: float) -> str:
    return timestamp_from_unix_ms(START + int(seconds_after_start * 1000))


def touch(path: Path, seconds_after_start: float) -> None:
    ns = (START + int(seconds_after_start * 1000)) * 1_000_000
    os.utime(path, ns=(ns, ns))


def jsonl(*objs) -> bytes:
    return b"".join(json.dumps(o, separators=(",", ":")).encode() + b"\n" for o in objs)


def claude_line(kind: str, when: float, session: str, cwd: str = CWD, **kw) -> dict:
    return {"parentUuid": None, "isSidechain": False, "cwd": cwd, "sessionId": session,
            "type": kind, "message": {"role": kind, "content": "x"}, "uuid": f"u{when}",
            "timestamp": ts(when), **kw}


@pytest.fixture
def home(tmp_path) -> Path:
    return tmp_path / "home"


def claude_log(home: Path, session: str, lines: bytes, modified: float = 5, cwd: str = CWD,
               name: str | None = None) -> Path:
    directory = home / ".claude" / "projects" / claude_project_slug(cwd)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / (name or f"{session}.jsonl")
    path.write_bytes(lines)
    touch(path, modified)
    return path


def find(provider, home, **kw):
    kw.setdefault("cwd", CWD)
    kw.setdefault("started_unix_ms", START)
    kw.setdefault("env", {"HOME": str(home)})
    return find_session_log(provider, **kw)


# --- where ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("cwd", "slug"), [
    ("/a/my_app", "-a-my-app"),
    ("/home/u/My Project.v2", "-home-u-My-Project-v2"),
    ("/w/cafe\u0301", "-w-caf-"),     # NFC first: é is one character, replaced once
    ("/w/\U0001F600x", "-w---x"),     # beyond the BMP: two UTF-16 units, two dashes
    ("/w/a--b", "-w-a--b"),           # runs are not collapsed
])
def test_claude_slug(cwd, slug):
    assert claude_project_slug(cwd) == slug


def test_config_directories_from_the_environment(tmp_path):
    assert claude_config_dir({"HOME": "/h"}) == Path("/h/.claude")
    assert claude_config_dir({"HOME": "/h", "CLAUDE_CONFIG_DIR": "/c"}) == Path("/c")
    assert codex_home({"HOME": "/h"}) == Path("/h/.codex")
    assert codex_home({"HOME": "/h", "CODEX_HOME": "/x"}) == Path("/x")
    assert claude_config_dir({}) == Path(os.path.expanduser("~")) / ".claude"


def test_long_cwd_matches_every_directory_of_its_200_character_prefix(tmp_path):
    long_cwd = "/" + "d" * 240
    prefix = claude_project_slug(long_cwd)[:200]
    projects = tmp_path / "projects"
    for name in (prefix + "-abc123", prefix + "-zz9", prefix[:-1] + "e-abc123", prefix):
        (projects / name).mkdir(parents=True)
    assert claude_project_dirs(tmp_path, long_cwd) == [projects / (prefix + "-abc123"),
                                                       projects / (prefix + "-zz9")]


def test_long_cwd_candidates_are_told_apart_by_their_cwd(home):
    long_cwd = "/" + "d" * 240
    other_cwd = long_cwd + "x"  # same 200-character prefix, another directory
    projects = home / ".claude" / "projects"
    prefix = claude_project_slug(long_cwd)[:200]
    for name, cwd, session in ((prefix + "-h1", long_cwd, S1), (prefix + "-h2", other_cwd, S2)):
        (projects / name).mkdir(parents=True)
        path = projects / name / f"{session}.jsonl"
        path.write_bytes(jsonl(claude_line("user", 1, session, cwd=cwd)))
        touch(path, 2)
    got = find("claude", home, cwd=long_cwd)
    assert got.verdict == "found"
    assert got.log.path == str(projects / (prefix + "-h1") / f"{S1}.jsonl")
    assert got.rejected == [Rejected(path=str(projects / (prefix + "-h2") / f"{S2}.jsonl"),
                                     reason=f"a session in {other_cwd!r}, not {long_cwd!r}")]


# --- Claude --------------------------------------------------------------------------------


def test_claude_new_session_is_found(home):
    path = claude_log(home, S1, jsonl(
        {"type": "file-history-snapshot", "snapshot": {}},
        claude_line("user", 1.5, S1), claude_line("assistant", 2, S1)))
    got = find("claude", home)
    assert got.verdict == "found"
    assert got.log == Candidate(
        path=str(path), session_id=S1, resumed=False, start_offset=0, first_timestamp=ts(1.5),
        reason=f"new session {S1} in {CWD}, first line at {ts(1.5)}, 1.5 s after the start")
    assert got.explain() == [f"claude session log: {path} ({got.log.reason})"]


def test_claude_logs_not_modified_since_the_start_are_not_examined(home):
    claude_log(home, S1, jsonl(claude_line("user", -100, S1)), modified=-10)
    got = find("claude", home)
    assert (got.verdict, got.unmodified, got.rejected) == ("none", 1, [])
    directory = home / ".claude" / "projects" / "-work-project"
    assert got.explain() == [f"claude session log: none for {CWD} since {ts(0)} in {directory} "
                             f"(0 examined, 1 not modified since the start)"]


def test_mtime_slack_lets_a_coarse_clock_through(home):
    path = claude_log(home, S1, jsonl(claude_line("user", 0.5, S1)), modified=-1)
    assert find("claude", home).log.path == str(path)
    settings = Settings(transcript_log_mtime_slack_seconds=0)
    assert find("claude", home, settings=settings).verdict == "none"


def test_claude_old_session_without_new_lines_is_rejected(home):
    path = claude_log(home, S1, jsonl(claude_line("user", -60, S1)))
    got = find("claude", home)
    assert got.verdict == "none"
    assert got.rejected == [Rejected(path=str(path), reason=(
        f"session {S1} began at {ts(-60)}, before the start, and has no line since"))]


def test_claude_resumed_session_matches_on_its_newest_lines(home):
    old = jsonl(claude_line("user", -60, S1), claude_line("assistant", -59, S1))
    new = jsonl(claude_line("user", 3, S1), claude_line("assistant", 4, S1))
    path = claude_log(home, S1, old + new)
    got = find("claude", home)
    assert got.verdict == "found"
    assert got.log == Candidate(
        path=str(path), session_id=S1, resumed=True, start_offset=len(old), first_timestamp=ts(3),
        reason=f"resumed session {S1} (began at {ts(-60)}) in {CWD}, appended from byte "
               f"{len(old)} at {ts(3)}, 3.0 s after the start")
    no_resume = find("claude", home, may_resume=False)
    assert no_resume.verdict == "none"
    assert no_resume.rejected == [Rejected(path=str(path), reason=(
        f"{got.log.reason}; but the launch did not resume a session"))]


def test_claude_resume_window_reads_only_the_tail(home):
    old = jsonl(*[claude_line("user", -60 + i / 100, S1) for i in range(400)])
    new = jsonl(claude_line("user", 3, S1))
    claude_log(home, S1, old + new)
    got = find("claude", home, settings=Settings(transcript_discovery_scan_bytes=64 * 1024))
    assert (got.log.resumed, got.log.start_offset) == (True, len(old))


def test_claude_new_session_in_another_cwd_is_rejected(home):
    # The slug of /work/project_ is the slug of /work/project- too: the lines say which.
    path = claude_log(home, S1, jsonl(claude_line("user", 1, S1, cwd="/work/project-")),
                      cwd="/work/project-")
    got = find("claude", home, cwd="/work/project_")
    assert got.rejected == [Rejected(path=str(path), reason=(
        "a session in '/work/project-', not '/work/project_'"))]


def test_claude_two_new_sessions_are_ambiguous_and_explained(home):
    a = claude_log(home, S1, jsonl(claude_line("user", 1, S1)))
    b = claude_log(home, S2, jsonl(claude_line("user", 2, S2)))
    got = find("claude", home)
    assert (got.verdict, got.log) == ("ambiguous", None)
    assert [c.path for c in got.candidates] == [str(a), str(b)]
    assert got.explain() == [
        f"claude session log: ambiguous, none attached: 2 logs in {CWD} since {ts(0)} "
        f"cannot be told apart",
        f"  candidate {a}: new session {S1} in {CWD}, first line at {ts(1)}, 1.0 s after the start",
        f"  candidate {b}: new session {S2} in {CWD}, first line at {ts(2)}, 2.0 s after the start",
    ]
    named = find("claude", home, session_id=S2)
    assert (named.verdict, named.log.path) == ("found", str(b))
    assert named.rejected == [Rejected(path=str(a), reason=f"session {S1}, the launch named {S2}")]


def test_claude_subagent_and_side_chain_logs_are_not_the_session(home):
    claude_log(home, S1, jsonl(claude_line("user", 1, S1)), name="agent-a1b2.jsonl")
    side = claude_log(home, S2, jsonl(claude_line("user", 1, S2, isSidechain=True)))
    got = find("claude", home)
    assert got.verdict == "none"
    assert got.rejected == [Rejected(path=str(side), reason="a side chain (subagent) log")]


def test_claude_file_without_a_conversation_line_yet(home):
    path = claude_log(home, S1, jsonl({"type": "file-history-snapshot", "snapshot": {}}))
    assert find("claude", home).rejected == [Rejected(path=str(path), reason=(
        "no conversation line in its first 8388608 bytes yet"))]


def test_claude_config_dir_from_the_environment(home, tmp_path):
    custom = tmp_path / "custom"
    directory = custom / "projects" / "-work-project"
    directory.mkdir(parents=True)
    (directory / f"{S1}.jsonl").write_bytes(jsonl(claude_line("user", 1, S1)))
    touch(directory / f"{S1}.jsonl", 1)
    got = find("claude", home, env={"HOME": str(home), "CLAUDE_CONFIG_DIR": str(custom)})
    assert got.log.path == str(directory / f"{S1}.jsonl")


def test_no_project_directory(home):
    got = find("claude", home)
    assert (got.verdict, got.searched) == ("none", [str(home / ".claude/projects/-work-project")])


# --- Codex ---------------------------------------------------------------------------------


def codex_lines(session: str, began: float, cwd: str = CWD, source="cli", later=()) -> bytes:
    meta = {"timestamp": ts(began), "type": "session_meta", "payload": {
        "id": session, "timestamp": ts(began), "cwd": cwd, "originator": "codex_cli_rs",
        "source": source}}
    return jsonl(meta, *later)


def rollout(home: Path, day: str, session: str, lines: bytes, modified: float = 5) -> Path:
    directory = home / ".codex" / "sessions" / day
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"rollout-{day.replace('/', '-')}T12-00-00-{session}.jsonl"
    path.write_bytes(lines)
    touch(path, modified)
    return path


def test_codex_rollout_files_lists_dated_and_flat_rollouts_only(home):
    a = rollout(home, "2025/06/01", S1, b"")
    b = rollout(home, "2024/12/31", S2, b"")
    sessions = home / ".codex" / "sessions"
    (sessions / "rollout-2024-01-01T00-00-00-x.jsonl").write_bytes(b"")
    (sessions / "2025" / "06" / "01" / "rollout-old.jsonl.zst").write_bytes(b"")
    (sessions / "2025" / "06" / "01" / "notes.txt").write_bytes(b"")
    (home / ".codex" / "archived_sessions").mkdir()
    (home / ".codex" / "archived_sessions" / "rollout-z.jsonl").write_bytes(b"")
    assert codex_rollout_files(home / ".codex") == sorted(
        [a, b, sessions / "rollout-2024-01-01T00-00-00-x.jsonl"])


def test_codex_new_session_is_found(home):
    path = rollout(home, "2025/06/01", S1, codex_lines(S1, 0.25))
    got = find("codex", home)
    assert got.log == Candidate(
        path=str(path), session_id=S1, resumed=False, start_offset=0, first_timestamp=ts(0.25),
        reason=f"new session {S1} in {CWD}, session_meta at {ts(0.25)}, 0.2 s after the start")
    assert got.searched == [str(home / ".codex" / "sessions")]


def test_codex_subagent_rollout_is_not_the_session(home):
    rollout(home, "2025/06/01", S1, codex_lines(S1, 1))
    sub = rollout(home, "2025/06/01", S2, codex_lines(
        S2, 2, source={"subagent": {"thread_spawn": {"parent_thread_id": S1, "depth": 1}}}))
    got = find("codex", home)
    assert got.verdict == "found" and got.log.session_id == S1
    assert got.rejected == [Rejected(path=str(sub), reason=f"a subagent's rollout (parent thread {S1})")]


def test_codex_resumed_session_in_its_old_date_folder(home):
    old = codex_lines(S1, -86400, later=[
        {"timestamp": ts(-86399), "type": "turn_context", "payload": {"cwd": CWD, "model": "m"}}])
    new = jsonl({"timestamp": ts(2), "type": "turn_context", "payload": {"cwd": CWD, "model": "m"}},
                {"timestamp": ts(3), "type": "event_msg", "payload": {"type": "user_message", "message": "go"}})
    path = rollout(home, "2025/05/31", S1, old + new)
    got = find("codex", home)
    assert got.log == Candidate(
        path=str(path), session_id=S1, resumed=True, start_offset=len(old), first_timestamp=ts(2),
        reason=f"resumed session {S1} (began at {ts(-86400)}) in {CWD}, appended from byte "
               f"{len(old)} at {ts(2)}, 2.0 s after the start")


def test_codex_resumed_in_another_cwd_is_rejected(home):
    new = jsonl({"timestamp": ts(2), "type": "turn_context", "payload": {"cwd": "/elsewhere"}})
    path = rollout(home, "2025/05/31", S1, codex_lines(S1, -86400) + new)
    assert find("codex", home).rejected == [Rejected(path=str(path), reason=(
        f"session {S1} resumed in '/elsewhere', not {CWD!r}"))]


def test_codex_two_sessions_ambiguous_then_named(home):
    a = rollout(home, "2025/06/01", S1, codex_lines(S1, 1))
    b = rollout(home, "2025/06/01", S2, codex_lines(S2, 1))
    got = find("codex", home)
    assert got.verdict == "ambiguous" and [c.path for c in got.candidates] == [str(a), str(b)]
    assert find("codex", home, session_id=S1).log.path == str(a)


def test_codex_home_from_the_environment_and_a_file_without_session_meta(home, tmp_path):
    custom = tmp_path / "codex"
    directory = custom / "sessions" / "2025" / "06" / "01"
    directory.mkdir(parents=True)
    bare = directory / "rollout-2025-06-01T12-00-00-x.jsonl"
    bare.write_bytes(jsonl({"timestamp": ts(1), "type": "event_msg", "payload": {"type": "x"}}))
    touch(bare, 1)
    got = find("codex", home, env={"HOME": str(home), "CODEX_HOME": str(custom)})
    assert got.rejected == [Rejected(path=str(bare), reason="no session_meta in its first 8388608 bytes")]


def test_unknown_provider_is_refused(home):
    with pytest.raises(ValueError, match="unknown provider 'gemini': claude or codex"):
        find("gemini", home)
