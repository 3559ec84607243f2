"""Finding the session log of an agent vigil started (reference page, "Finding the log").

Neither Claude Code nor Codex can be told where to write without changing its argv, and
vigil never changes argv, so the log is found by matching what the tool writes against what
vigil knows of the execution: its canonical cwd, its start time and the environment it ran
with (which says where the tool keeps its files). A log is a candidate when

* it is in the tool's directory for that cwd: Claude's project directory (`slug` of the cwd),
  Codex's `sessions/` tree;
* it was modified at or after the start (less `transcript_log_mtime_slack_seconds`: file
  times come from the kernel's coarse clock, a tick behind);
* and either its first conversation line (Claude) or `session_meta` (Codex) has the same cwd
  and a timestamp at or after the start (a **new** session: read from offset 0), or it began
  before the start and its newest lines, those at or after the start, are in that cwd (a
  **resumed** session appending to an older file: read from the first of those lines).

Exactly one candidate is the log. Two or more cannot be told apart: the verdict is
`ambiguous`, with every candidate and why it matched, so `explain` can say so, and none is
attached (recording another agent's conversation as this one's would be worse than
recording none). What can tell them apart is given by the caller: the session id the launch
named (`claude --session-id/--resume <id>`, `codex resume <id>`), and whether the launch can
have resumed a session at all.

Pure functions over a directory tree: they read files and directories, never write, keep no
state, and take the environment as a mapping, so tests build trees in temporary directories.
The verdict is a snapshot: a tool creates its file when the first prompt is saved, so a
caller asks again until it is `found` (or the execution ends).
"""

from __future__ import annotations

import os
import pwd
import unicodedata
from pathlib import Path
from typing import Literal, Mapping

import msgspec

from vigil.daemon.settings import DEFAULTS, Settings
from vigil.protocol.transcript import timestamp_from_unix_ms, timestamp_to_unix_ms
from vigil.daemon.transcript.providers.lines import LineFramer

__all__ = [
    "Candidate", "Discovery", "Provider", "Rejected", "claude_config_dir", "claude_project_dirs",
    "claude_project_slug", "codex_home", "codex_rollout_files", "find_session_log",
]

Provider = Literal["claude", "codex"]

#: Claude Code cuts a project directory name longer than this and appends `-<hash>`; we match
#: on the prefix (reference page).
CLAUDE_SLUG_MAX = 200


class Candidate(msgspec.Struct, kw_only=True, frozen=True):
    """A log that matches the execution.

    Args:
        path: the log file.
        session_id: the provider's session id (Claude: the file's name; Codex: the
            `session_meta` id).
        resumed: the session began before the execution (it appends to an older file).
        start_offset: where the execution's part of the log begins: 0 for a new session, the
            first line at or after the start for a resumed one. Follow from here.
        first_timestamp: the timestamp of that first line.
        reason: why it matched, in words.
    """

    path: str
    session_id: str | None
    resumed: bool
    start_offset: int
    first_timestamp: str | None
    reason: str


class Rejected(msgspec.Struct, kw_only=True, frozen=True):
    """A log modified since the start that is not this execution's, and why."""

    path: str
    reason: str


class Discovery(msgspec.Struct, kw_only=True, frozen=True):
    """The verdict of one search.

    Args:
        provider: `claude` or `codex`.
        cwd: the execution's cwd searched for.
        started: the execution's start, UTC `…Z`.
        verdict: `found` (exactly one candidate: `log`), `none`, or `ambiguous` (two or more
            candidates, none attached).
        log: the candidate when `found`.
        candidates: every candidate (two or more when ambiguous).
        rejected: logs modified since the start that did not match, with the reason.
        searched: the directories looked in.
        unmodified: logs not modified since the start (not examined).
    """

    provider: str
    cwd: str
    started: str
    verdict: Literal["found", "none", "ambiguous"]
    log: Candidate | None
    candidates: list[Candidate]
    rejected: list[Rejected]
    searched: list[str]
    unmodified: int

    def explain(self) -> list[str]:
        """The verdict in lines for `Execution explain`."""
        where = ", ".join(self.searched) or "(no directory)"
        if self.verdict == "found" and self.log is not None:
            lines = [f"{self.provider} session log: {self.log.path} ({self.log.reason})"]
        elif self.verdict == "ambiguous":
            lines = [f"{self.provider} session log: ambiguous, none attached: "
                     f"{len(self.candidates)} logs in {self.cwd} since {self.started} "
                     f"cannot be told apart"]
            lines += [f"  candidate {c.path}: {c.reason}" for c in self.candidates]
        else:
            lines = [f"{self.provider} session log: none for {self.cwd} since {self.started} "
                     f"in {where} ({len(self.rejected)} examined, {self.unmodified} not "
                     f"modified since the start)"]
        lines += [f"  not this one: {r.path}: {r.reason}" for r in self.rejected]
        return lines


# --- where the tools write -----------------------------------------------------------------


def _home(env: Mapping[str, str]) -> Path:
    """`HOME` of the environment, else the user's home from the password database (what
    Node's `os.homedir()` and Rust's `home_dir()` fall back to)."""
    home = env.get("HOME")
    return Path(home) if home else Path(pwd.getpwuid(os.getuid()).pw_dir)


def claude_config_dir(env: Mapping[str, str]) -> Path:
    """`$CLAUDE_CONFIG_DIR`, default `~/.claude`."""
    explicit = env.get("CLAUDE_CONFIG_DIR")
    return Path(explicit) if explicit else _home(env) / ".claude"


def codex_home(env: Mapping[str, str]) -> Path:
    """`$CODEX_HOME`, default `~/.codex`."""
    explicit = env.get("CODEX_HOME")
    return Path(explicit) if explicit else _home(env) / ".codex"


def claude_project_slug(cwd: str) -> str:
    """Claude Code's project directory name for a (canonical) cwd: NFC, then every
    character outside `[A-Za-z0-9]` replaced by `-` (runs kept, `/a/my_app` → `-a-my-app`).

    Claude Code does this on JavaScript strings, whose characters are UTF-16 code units: a
    character beyond the BMP (an emoji) is two of them and becomes `--`. Longer than
    `CLAUDE_SLUG_MAX` it is cut and given a hash suffix: see `claude_project_dirs`.
    """
    out = []
    for ch in unicodedata.normalize("NFC", cwd):
        if ch.isascii() and ch.isalnum():
            out.append(ch)
        else:
            out.append("--" if ord(ch) > 0xFFFF else "-")
    return "".join(out)


def claude_project_dirs(config_dir: Path, cwd: str) -> list[Path]:
    """The existing project directories of `cwd`: the slug itself, or, for a slug longer
    than `CLAUDE_SLUG_MAX`, every directory named `<its first 200 characters>-<hash>` (the
    hash is not recomputed: a second cwd with the same prefix is told apart by the cwd its
    logs record)."""
    projects = config_dir / "projects"
    slug = claude_project_slug(cwd)
    if len(slug) <= CLAUDE_SLUG_MAX:
        return [projects / slug] if (projects / slug).is_dir() else []
    prefix = slug[:CLAUDE_SLUG_MAX] + "-"
    try:
        names = sorted(e.name for e in os.scandir(projects) if e.name.startswith(prefix) and e.is_dir())
    except OSError:
        return []
    return [projects / name for name in names]


def _claude_logs(directory: Path) -> list[Path]:
    """Session files of a project directory. `agent-*.jsonl` beside them are older versions'
    subagent logs (newer ones live in `<session>/subagents/`): not the session."""
    try:
        return sorted(Path(e.path) for e in os.scandir(directory)
                      if e.name.endswith(".jsonl") and not e.name.startswith("agent-")
                      and e.is_file())
    except OSError:
        return []


def codex_rollout_files(home: Path) -> list[Path]:
    """Every rollout Codex may still append to: `sessions/YYYY/MM/DD/rollout-*.jsonl` and the
    older `sessions/rollout-*.jsonl`. All date folders are listed, not only recent ones: a
    resumed session appends to its file in the folder of the day it began. Compressed
    (`.jsonl.zst`) and `archived_sessions/` rollouts are not written to any more."""
    found: list[Path] = []

    def walk(directory: Path, depth: int) -> None:
        try:
            entries = list(os.scandir(directory))
        except OSError:
            return
        for entry in entries:
            if entry.name.startswith("rollout-") and entry.name.endswith(".jsonl"):
                if entry.is_file():
                    found.append(Path(entry.path))
            elif depth < 3 and entry.name.isdigit() and entry.is_dir():
                walk(Path(entry.path), depth + 1)

    walk(home / "sessions", 0)
    return sorted(found)


# --- reading a candidate -------------------------------------------------------------------


class _ClaudeProbe(msgspec.Struct):
    type: str = ""
    cwd: str | None = None
    timestamp: str | None = None
    sessionId: str | None = None
    isSidechain: bool | None = None


class _CodexPayload(msgspec.Struct):
    id: str | None = None
    timestamp: str | None = None
    cwd: str | None = None
    source: object = None


class _CodexProbe(msgspec.Struct):
    timestamp: str | None = None
    type: str = ""
    payload: _CodexPayload | None = None


_CLAUDE_PROBE = msgspec.json.Decoder(_ClaudeProbe)
_CODEX_PROBE = msgspec.json.Decoder(_CodexProbe)


def _probes(path: Path, decoder: msgspec.json.Decoder, settings: Settings, *, tail: bool):
    """(offset, probe) of the whole lines within the first or last
    `transcript_discovery_scan_bytes` of the file that `decoder` reads (the others are not
    what a probe looks for). A tail read starting mid-file skips its first, partial, line."""
    scan = settings.transcript_discovery_scan_bytes
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        start = max(0, size - scan) if tail else 0
        f.seek(start)
        data = f.read(scan)
    lines = [ln for ln in LineFramer(settings.transcript_line_max_bytes, start).feed(data)
             if isinstance(ln, tuple)]
    if tail and start > 0:
        lines = lines[1:]
    for offset, raw in lines:
        try:
            yield offset, decoder.decode(raw)
        except msgspec.DecodeError:
            continue


def _same_dir(recorded: str | None, cwd: str) -> bool:
    """The cwd a log recorded is the execution's canonical cwd (spelled the same after NFC
    and normalization, or resolving to it)."""
    if not recorded:
        return False
    a = os.path.normpath(unicodedata.normalize("NFC", recorded))
    b = os.path.normpath(unicodedata.normalize("NFC", cwd))
    return a == b or os.path.realpath(a) == os.path.realpath(b)


def _seconds_after(ts_ms: int, start_ms: int) -> str:
    return f"{(ts_ms - start_ms) / 1000:.1f} s after the start"


def _probe_claude(path: Path, cwd: str, start_ms: int, settings: Settings) -> Candidate | Rejected:
    first = next((probe for _, probe in _probes(path, _CLAUDE_PROBE, settings, tail=False)
                  if probe.type in ("user", "assistant") and probe.timestamp), None)
    if first is None:
        return Rejected(path=str(path), reason=f"no conversation line in its first "
                                               f"{settings.transcript_discovery_scan_bytes} bytes yet")
    session_id = first.sessionId or path.stem
    if first.isSidechain:
        return Rejected(path=str(path), reason="a side chain (subagent) log")
    first_ms = timestamp_to_unix_ms(first.timestamp or "")
    if first_ms is not None and first_ms >= start_ms:
        if not _same_dir(first.cwd, cwd):
            return Rejected(path=str(path), reason=f"a session in {first.cwd!r}, not {cwd!r}")
        return Candidate(path=str(path), session_id=session_id, resumed=False, start_offset=0,
                         first_timestamp=first.timestamp,
                         reason=f"new session {session_id} in {cwd}, first line at "
                                f"{first.timestamp}, {_seconds_after(first_ms, start_ms)}")
    recent = []
    for offset, probe in _probes(path, _CLAUDE_PROBE, settings, tail=True):
        ts_ms = timestamp_to_unix_ms(probe.timestamp or "")
        if probe.type in ("user", "assistant") and ts_ms is not None and ts_ms >= start_ms:
            recent.append((offset, probe.timestamp, ts_ms, probe.cwd))
    return _resumed(path, cwd, start_ms, session_id, first.timestamp, recent)


def _resumed(path: Path, cwd: str, start_ms: int, session_id: str | None, began: str | None,
             recent: list[tuple[int, str | None, int, str | None]]) -> Candidate | Rejected:
    """The verdict on a log that began before the start, from its lines at or after it:
    (offset, timestamp, unix ms, cwd in effect)."""
    if not recent:
        return Rejected(path=str(path), reason=f"session {session_id} began at {began}, before "
                                               f"the start, and has no line since")
    strangers = sorted({c or "(none)" for _, _, _, c in recent if not _same_dir(c, cwd)})
    if strangers:
        return Rejected(path=str(path), reason=f"session {session_id} resumed in "
                                               f"{', '.join(map(repr, strangers))}, not {cwd!r}")
    offset, timestamp, ts_ms, _ = recent[0]
    return Candidate(path=str(path), session_id=session_id, resumed=True, start_offset=offset,
                     first_timestamp=timestamp,
                     reason=f"resumed session {session_id} (began at {began}) in {cwd}, "
                            f"appended from byte {offset} at {timestamp}, "
                            f"{_seconds_after(ts_ms, start_ms)}")


def _find_key(obj: object, key: str, depth: int = 4) -> object:
    """The value of `key` anywhere in nested dicts (a subagent `source` nests it)."""
    if not isinstance(obj, dict) or depth == 0:
        return None
    if key in obj:
        return obj[key]
    return next((v for v in (_find_key(x, key, depth - 1) for x in obj.values()) if v is not None), None)


def _probe_codex(path: Path, cwd: str, start_ms: int, settings: Settings) -> Candidate | Rejected:
    # The first session_meta is authoritative (reference page).
    meta = next((probe for _, probe in _probes(path, _CODEX_PROBE, settings, tail=False)
                 if probe.type == "session_meta" and probe.payload is not None), None)
    if meta is None or meta.payload is None:
        return Rejected(path=str(path), reason=f"no session_meta in its first "
                                               f"{settings.transcript_discovery_scan_bytes} bytes")
    payload = meta.payload
    if isinstance(payload.source, dict):  # `cli`, `exec`, `mcp` are strings
        parent = _find_key(payload.source, "parent_thread_id")
        return Rejected(path=str(path), reason=f"a subagent's rollout (parent thread {parent})")
    began = payload.timestamp or meta.timestamp
    began_ms = timestamp_to_unix_ms(began or "")
    if began_ms is not None and began_ms >= start_ms:
        if not _same_dir(payload.cwd, cwd):
            return Rejected(path=str(path), reason=f"a session in {payload.cwd!r}, not {cwd!r}")
        return Candidate(path=str(path), session_id=payload.id, resumed=False, start_offset=0,
                         first_timestamp=began,
                         reason=f"new session {payload.id} in {cwd}, session_meta at {began}, "
                                f"{_seconds_after(began_ms, start_ms)}")
    # Resumed: the cwd in effect is the latest turn_context's, else the session's.
    recent = []
    in_effect = payload.cwd
    for offset, probe in _probes(path, _CODEX_PROBE, settings, tail=True):
        ts_ms = timestamp_to_unix_ms(probe.timestamp or "")
        if probe.type == "turn_context" and probe.payload is not None and probe.payload.cwd:
            in_effect = probe.payload.cwd
        if ts_ms is not None and ts_ms >= start_ms:
            recent.append((offset, probe.timestamp, ts_ms, in_effect))
    return _resumed(path, cwd, start_ms, payload.id, began, recent)


# --- the search ----------------------------------------------------------------------------


def find_session_log(provider: Provider, *, cwd: str, started_unix_ms: int,
                     env: Mapping[str, str], session_id: str | None = None,
                     may_resume: bool = True, settings: Settings = DEFAULTS) -> Discovery:
    """Find the session log of the `provider` agent an execution runs.

    Args:
        provider: `claude` or `codex` (what the recognizer says the execution is).
        cwd: the execution's canonical cwd (realpath).
        started_unix_ms: when the execution started.
        env: the environment it ran with (`CLAUDE_CONFIG_DIR`, `CODEX_HOME`, `HOME`).
        session_id: the session the launch named, if it did (`claude --session-id <id>`,
            `claude --resume <id>`, `codex resume <id>`): only that session can match.
        may_resume: False when the launch cannot have resumed a session (a bare `claude`
            with no `--resume`/`--continue`): a log that began before the start is then
            another process's, not a candidate. True when unsure.
        settings: the scan and slack settings.

    Returns:
        The `Discovery`: `found` with its `log`, `none`, or `ambiguous`.
    """
    slack_ns = int(settings.transcript_log_mtime_slack_seconds * 1e9)
    since_ns = started_unix_ms * 1_000_000 - slack_ns
    if provider == "claude":
        directories = claude_project_dirs(claude_config_dir(env), cwd)
        searched = [str(d) for d in directories] or [
            str(claude_config_dir(env) / "projects" / claude_project_slug(cwd)[:CLAUDE_SLUG_MAX])]
        files = [f for d in directories for f in _claude_logs(d)]
        probe = _probe_claude
    elif provider == "codex":
        searched = [str(codex_home(env) / "sessions")]
        files = codex_rollout_files(codex_home(env))
        probe = _probe_codex
    else:
        raise ValueError(f"unknown provider {provider!r}: claude or codex")
    candidates: list[Candidate] = []
    rejected: list[Rejected] = []
    unmodified = 0
    for path in files:
        try:
            if os.stat(path).st_mtime_ns < since_ns:
                unmodified += 1
                continue
            verdict = probe(path, cwd, started_unix_ms, settings)
        except OSError as exc:
            rejected.append(Rejected(path=str(path), reason=f"unreadable: {exc.strerror}"))
            continue
        if isinstance(verdict, Candidate):
            if session_id is not None and verdict.session_id != session_id:
                verdict = Rejected(path=verdict.path, reason=f"session {verdict.session_id}, "
                                                             f"the launch named {session_id}")
            elif verdict.resumed and not may_resume:
                verdict = Rejected(path=verdict.path, reason=f"{verdict.reason}; but the launch "
                                                             f"did not resume a session")
        (candidates if isinstance(verdict, Candidate) else rejected).append(verdict)
    if len(candidates) == 1:
        outcome, log = "found", candidates[0]
    else:
        outcome, log = ("ambiguous" if candidates else "none"), None
    return Discovery(provider=provider, cwd=cwd, started=timestamp_from_unix_ms(started_unix_ms),
                     verdict=outcome, log=log, candidates=candidates,
                     rejected=rejected, searched=searched, unmodified=unmodified)

