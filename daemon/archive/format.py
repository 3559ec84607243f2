"""The archive file: `<state>/archives/ab/cd/<ref>` (`.open` while its turn runs), one JSON
object a line, appended as the turn's transcript events arrive, immutable once committed.

| line | written when | holds |
|---|---|---|
| `opened` (first) | the turn starts | format version, ref, execution, turn, time, the policy stamp |
| `prompt` | a `message.user` of the turn | the prompt as the stamp's redaction keeps it |
| `action` | a `message.assistant` of the turn | a step: seq, iteration, timestamp, its blocks |
| `result` | a `tool.result` of the turn | the result, and the step it was paired with |
| `committed` (last) | the turn ended | its end, outcome, expiry, blocked steps, summary |

A step's results are their own lines (a result comes after its call, sometimes after later
replies), so nothing is held in memory that a crash could lose: a daemon killed mid-turn
leaves a `.open` file every line of which is readable (a half-written last line is skipped
and counted). Lines are tagged by `line`; blocks and results are the protocol's own
(`vigil.protocol.api.trace`), already redacted. `FORMAT_VERSION` is bumped when a line's
meaning changes; a checked-in file of every version must keep reading
(tests/fixtures/archive_v1.jsonl).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import msgspec

from vigil.protocol.api.trace import (
    ArchiveStamp,
    TraceBlock,
    TracePrompt,
    TraceResult,
    TurnSummary,
)

FORMAT_VERSION = 1


class _Line(msgspec.Struct, kw_only=True, omit_defaults=True, frozen=True, tag_field="line"):
    """Base of the archive's lines, tagged by `line` (written first)."""


class OpenedLine(_Line, tag="opened"):
    archive_ref: str
    execution_id: str
    turn: int
    opened_at_unix_ms: int
    stamp: ArchiveStamp
    format: int = FORMAT_VERSION


class PromptLine(_Line, tag="prompt"):
    prompt: TracePrompt


class ActionLine(_Line, tag="action"):
    """One reply of the agent: a step. `continued`: the agent's log added these blocks to
    a reply already recorded (same message id, same iteration)."""

    seq: int
    iteration: int
    timestamp: str
    action: list[TraceBlock] = []
    message_id: str | None = None
    model: str | None = None
    stop_reason: str | None = None
    continued: bool = False
    cut_bytes: int = 0


class ResultLine(_Line, tag="result"):
    """A tool result; `seq` is the step it was paired with (0: it came before any step)."""

    seq: int
    timestamp: str
    result: TraceResult


class CommittedLine(_Line, tag="committed"):
    """The turn ended: how, when the archive expires, which steps are replay-blocked (seq →
    reasons) and the summary."""

    committed_at_unix_ms: int
    status: str
    expires_at_unix_ms: int
    summary: TurnSummary
    blocked: dict[int, list[str]] = {}


Line = OpenedLine | PromptLine | ActionLine | ResultLine | CommittedLine

_ENCODER = msgspec.json.Encoder()
_DECODER = msgspec.json.Decoder(Line)


def encode_line(line: _Line) -> bytes:
    """One line's bytes, LF included (JSON escapes every newline inside strings)."""
    return _ENCODER.encode(line) + b"\n"


@dataclass
class Step:
    """A step as read back: its action line and the results paired with it."""

    action: ActionLine
    results: list[TraceResult] = field(default_factory=list)


@dataclass
class ParsedArchive:
    """An archive file read back whole."""

    opened: OpenedLine
    prompts: list[TracePrompt] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    #: Results that came before any step of the turn.
    early_results: list[TraceResult] = field(default_factory=list)
    committed: CommittedLine | None = None
    #: Lines that could not be read (a half-written last one after a crash, damage).
    unreadable: int = 0


class ArchiveFormatError(ValueError):
    """The data is not an archive (its first line is not an `opened` line)."""


def parse(data: bytes) -> ParsedArchive:
    """Read a whole archive file. Unreadable lines are counted and skipped.

    Raises:
        ArchiveFormatError: the first line is not a readable `opened` line.
    """
    lines = data.split(b"\n")
    try:
        opened = _DECODER.decode(lines[0])
    except msgspec.DecodeError:
        opened = None
    if not isinstance(opened, OpenedLine):
        raise ArchiveFormatError("not an archive: its first line is not an `opened` line")
    archive = ParsedArchive(opened=opened)
    by_seq: dict[int, Step] = {}
    for raw in lines[1:]:
        if not raw:
            continue
        try:
            line = _DECODER.decode(raw)
        except msgspec.DecodeError:
            archive.unreadable += 1
            continue
        if isinstance(line, ActionLine):
            step = by_seq[line.seq] = Step(line)
            archive.steps.append(step)
        elif isinstance(line, ResultLine):
            step = by_seq.get(line.seq)
            (step.results if step is not None else archive.early_results).append(line.result)
        elif isinstance(line, PromptLine):
            archive.prompts.append(line.prompt)
        elif isinstance(line, CommittedLine):
            archive.committed = line
        else:
            archive.unreadable += 1  # a second `opened` line
    return archive
