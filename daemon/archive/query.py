"""The three widths an archive is read at (seeds/002, "Query modes"), bounded server-side.

| mode | the answer holds |
|---|---|
| `summary` (default) | the turn's summary: counts, tool names, statuses, terminal state |
| `tool_calls` | and each step's calls (names, call ids, the arguments the stamp's redaction kept) with each result's status — no result payload, no text |
| `detail` | and everything the redaction kept: prompts, text, reasoning, arguments, results |

An unknown mode falls back to `summary` (`mode_fallback`), never to a wider one. Whatever the
mode, the answer's compact JSON is at most `trace_render_chars_max` characters (24,000): each
payload is first cut to `trace_payload_chars`, then steps are added from `from_seq` while
they fit; a step that does not fit whole is shown with its payloads cut further if its
structure fits, else it and the rest are left out (`next_seq`, `omitted_steps`). The caller
chooses a width, never a size.

Sizes are measured on the encoded bytes, which are never fewer than the characters, so
the bound holds for any text.
"""

from __future__ import annotations

from typing import Any

import msgspec

from vigil.daemon.settings import Settings
from vigil.daemon.store.records import ArchiveEntry
from vigil.protocol.api.trace import (
    TRACE_MODES,
    TraceData,
    TracePrompt,
    TraceResult,
    TraceStep,
    TraceText,
    TraceThinking,
    TraceToolUse,
    TurnSummary,
)

from .format import ParsedArchive, Step
from .pairing import Shape, blocked_steps, summarize

_JSON = msgspec.json.Encoder()
_replace = msgspec.structs.replace
#: Placeholders as wide as any figure filled in after the measure.
_WIDE = 10**15


def mode_of(requested: str | None) -> tuple[str, bool]:
    """(the mode answered, whether the requested one was unknown)."""
    if requested is None or requested == "":
        return "summary", False
    if requested in TRACE_MODES:
        return requested, False
    return "summary", True


def needs_file(entry: ArchiveEntry, mode: str) -> bool:
    """A committed archive's summary is in its catalog entry: `summary` reads no file."""
    return mode != "summary" or entry.summary is None


def summary_of(entry: ArchiveEntry, archive: ParsedArchive | None) -> TurnSummary:
    if archive is None or (archive.committed is None and entry.summary is not None):
        assert entry.summary is not None
        return entry.summary
    if archive.committed is not None:
        return archive.committed.summary
    shapes = [Shape.of(step) for step in archive.steps]
    early = [r.tool_id for r in archive.early_results]
    return summarize(archive_ref=entry.archive_ref, execution_id=entry.execution_id,
                     turn=entry.turn, shapes=shapes, early_results=early,
                     blocked=blocked_steps(shapes, early, complete=False), state="open",
                     status=None, failed=False)


def render(entry: ArchiveEntry, archive: ParsedArchive | None, requested: str | None,
           from_seq: int, settings: Settings) -> TraceData:
    """The answer to `get_trace` for `entry` (and its file when the mode needs it)."""
    mode, fallback = mode_of(requested)
    summary = summary_of(entry, archive)
    committed = archive.committed if archive is not None else None
    data = TraceData(
        archive_ref=entry.archive_ref, trace_key=f"{entry.execution_id}:{entry.turn}",
        execution_id=entry.execution_id, turn=entry.turn, mode=mode, mode_fallback=fallback,
        state=summary.state, stamp=entry.stamp, opened_at_unix_ms=entry.opened_at_unix_ms,
        committed_at_unix_ms=(committed.committed_at_unix_ms if committed is not None
                              else entry.committed_at_unix_ms),
        expires_at_unix_ms=entry.expires_at_unix_ms, summary=summary, from_seq=from_seq)
    cap = settings.trace_render_chars_max
    budget = cap - len(_JSON.encode(_replace(data, next_seq=_WIDE, omitted_steps=_WIDE,
                                             truncated=True, rendered_chars=_WIDE)))
    if mode != "summary" and archive is not None:
        data = _fill(data, archive, mode, from_seq, budget, settings.trace_payload_chars)
    return _measured(data)


def _measured(data: TraceData) -> TraceData:
    """`data` with `rendered_chars` set to the length of its own compact JSON."""
    chars = 0
    while True:  # the figure's own digits count: settles within a few rounds
        data = _replace(data, rendered_chars=chars)
        length = len(_JSON.encode(data).decode("utf-8"))
        if length == chars:
            return data
        chars = length


def _fill(data: TraceData, archive: ParsedArchive, mode: str, from_seq: int, budget: int,
          payload_chars: int) -> TraceData:
    detail = mode == "detail"
    blocked = (archive.committed.blocked if archive.committed is not None else blocked_steps(
        [Shape.of(s) for s in archive.steps], [r.tool_id for r in archive.early_results],
        complete=False))
    prompts: list[TracePrompt] = []
    if detail:
        for prompt in archive.prompts:
            item = _cap_prompt(prompt, payload_chars)
            size = len(_JSON.encode(item)) + 1
            if size > budget:
                break
            prompts.append(item)
            budget -= size
    steps: list[TraceStep] = []
    wanted = [s for s in archive.steps if s.action.seq >= from_seq]
    next_seq = None
    for index, step in enumerate(wanted):
        item = _project(step, blocked.get(step.action.seq, []), detail, payload_chars)
        size = len(_JSON.encode(item)) + 1
        if size > budget:
            item = _shrink(item, budget - 1)
            size = 0 if item is None else len(_JSON.encode(item)) + 1
            if item is None or size > budget:
                next_seq = step.action.seq
                break
        steps.append(item)
        budget -= size
    omitted = 0 if next_seq is None else len(wanted) - len(steps)
    return _replace(data, prompts=prompts, steps=steps, next_seq=next_seq, omitted_steps=omitted,
                    truncated=next_seq is not None or any(_cut(s) for s in steps))


def _project(step: Step, reasons: list[str], detail: bool, limit: int) -> TraceStep:
    """A step at the mode's width, each payload cut to `limit`."""
    a = step.action
    if detail:
        action = [_cap_block(b, limit) for b in a.action]
        results = [_cap_result(r, limit) for r in step.results]
        return TraceStep(seq=a.seq, iteration=a.iteration, timestamp=a.timestamp, action=action,
                         results=results, replay_blocked=bool(reasons), blocked_reasons=reasons,
                         message_id=a.message_id, model=a.model, stop_reason=a.stop_reason,
                         cut_bytes=a.cut_bytes)
    calls = [_cap_block(b, limit) for b in a.action if isinstance(b, TraceToolUse)]
    results = [_replace(r, content=None, truncated=False, masked=0) for r in step.results]
    return TraceStep(seq=a.seq, iteration=a.iteration, timestamp=a.timestamp, action=calls,
                     results=results, replay_blocked=bool(reasons), blocked_reasons=reasons)


def _cap_text(text: str | None, limit: int) -> tuple[str | None, bool]:
    if text is None or len(text) <= limit:
        return text, False
    return text[:limit], True


def _cap_block(block, limit: int):
    if isinstance(block, TraceToolUse):
        if block.input is None:
            return block
        text = block.input if block.input_truncated else None
        if text is None:
            encoded = _JSON.encode(block.input)
            if len(encoded) <= limit:
                return block
            text = encoded.decode("utf-8", "replace")
        cut, more = _cap_text(text, limit)
        return _replace(block, input=cut, input_truncated=block.input_truncated or more)
    text, more = _cap_text(block.text, limit)
    return _replace(block, text=text, truncated=block.truncated or more) if more else block


def _cap_result(result: TraceResult, limit: int) -> TraceResult:
    content, more = _cap_text(result.content, limit)
    return _replace(result, content=content, truncated=True) if more else result


def _cap_prompt(prompt: TracePrompt, limit: int) -> TracePrompt:
    text, more = _cap_text(prompt.text, limit)
    return _replace(prompt, text=text, truncated=True) if more else prompt


def _shrink(step: TraceStep, room: int) -> TraceStep | None:
    """`step` with its longest payloads cut (the shorter ones kept whole while they fit)
    until its JSON takes at most `room` bytes, or None when not even its structure fits."""
    base = len(_JSON.encode(_limited(step, 0)))
    if base > room:
        return None
    limit = _level([_payload_size(b) for b in step.action] + [
        len(r.content) for r in step.results if r.content is not None], room - base)
    for _ in range(8):
        item = _limited(step, limit)
        over = len(_JSON.encode(item)) - room
        if over <= 0:
            return item
        limit = max(0, limit - over)  # escapes made it longer than its characters
    return None


def _limited(step: TraceStep, limit: int) -> TraceStep:
    return _replace(step, action=[_cap_block(b, limit) for b in step.action],
                    results=[_cap_result(r, limit) for r in step.results])


def _level(sizes: list[int], room: int) -> int:
    """The largest cut that keeps the sum of the payloads, each cut to it, within `room`."""
    left = len(sizes)
    for size in sorted(sizes):
        share = room // left
        if size > share:
            return share
        room -= size
        left -= 1
    return max(sizes, default=0)


def _payload_size(block: Any) -> int:
    if isinstance(block, TraceToolUse):
        if block.input is None:
            return 0
        return len(block.input) if isinstance(block.input, str) else len(_JSON.encode(block.input))
    return 0 if block.text is None else len(block.text)


def _cut(step: TraceStep) -> bool:
    return any(getattr(b, "truncated", False) or getattr(b, "input_truncated", False)
               for b in step.action) or any(r.truncated for r in step.results)
