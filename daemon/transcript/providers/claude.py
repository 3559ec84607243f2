"""Claude Code's session log (`~/.claude/projects/<slug>/<session>.jsonl`) → transcript events.

The format, as the reference page (../shared/reference/agent-session-logs.md) has it: one
JSON object a line; conversation lines are `user`, `assistant` and `system`, each with
`uuid`, `sessionId`, `timestamp` and a `message`; everything else is metadata (`summary`,
`file-history-snapshot`, `progress`, …). The mapping:

=========================================  ===============================================
line                                       events
=========================================  ===============================================
`assistant` lines sharing `message.id`     one `message.assistant`, blocks in line order
                                           (`thinking`, `redacted_thinking` → `thinking`;
                                           `text`; `tool_use`, `server_tool_use` →
                                           `tool_use`), then one `tool.call` per `tool_use`;
                                           `stop_reason: end_turn` → `TurnEnded(end_turn)`
`user` with `tool_result` blocks           one `tool.result` each (`is_error` as written;
                                           text of a list content joined by LF; images
                                           counted, not copied)
`user` with text (string or blocks)        `message.user`; not the person →
                                           `injected`: `compact_summary`
                                           (`isCompactSummary`), `meta` (`isMeta`),
                                           `interrupted` (`[Request interrupted…`, also a
                                           `TurnEnded(interrupted)`), or the tag the text is
                                           wrapped in (`command-name`, `system-reminder`, …)
`system` (compaction boundaries, errors)   skipped, counted by `system:<subtype>`
metadata lines                             skipped, counted (`ignored_types`)
anything else                              skipped, counted (`unknown_types`)
=========================================  ===============================================

Decisions where the page is silent:

* A reply is released when a line of another reply or a `user`/`system` line arrives, when a
  line carries a `stop_reason` (the response is complete), or on `release()`. Claude Code
  often writes `stop_reason: null` on every line of a reply, so the last reply of a turn
  waits for the caller's hold time or its explicit `release()`.
* The conversation is a tree (rewinds leave dead branches), but the transcript records what
  was written, in the order written: every line is an event; `source.entry_ids` keeps the
  `uuid`s for whoever wants to rebuild the tree. Side-chain lines are marked `sidechain`.
* An assistant line of model `<synthetic>` (an API error Claude Code reports as a reply) is
  recorded as the reply it claims to be; its `model` says what it is.
* A line longer than `transcript_line_max_bytes` (an image, a huge tool output) is recorded
  from what its first bytes say (`lines.CUT_HEAD_BYTES`): a `tool.result` with empty content
  for each `tool_use_id` seen, else a `message.user`/`message.assistant` with no blocks; the
  event's `cut_bytes` is the line's length.
"""

from __future__ import annotations

import re
from typing import Any, Final

import msgspec

from vigil.protocol.transcript import (
    AGENT_EMITTED, Block, TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock, utc_timestamp,
)
from vigil.daemon.transcript.providers.lines import CutLine
from vigil.daemon.transcript.providers.normalizer import Normalizer, wrapped_tag

__all__ = ["ClaudeNormalizer"]


class _Block(msgspec.Struct):
    """A content block of a Claude message (only the fields we read)."""

    type: str = ""
    text: str | None = None
    thinking: str | None = None
    id: str | None = None
    name: str | None = None
    input: Any = None
    tool_use_id: str | None = None
    content: str | list[_Block] | None = None
    is_error: bool | None = None


class _Message(msgspec.Struct):
    id: str | None = None
    model: str | None = None
    content: str | list[_Block] | None = None
    stop_reason: str | None = None


class _Line(msgspec.Struct):
    """One line of a Claude Code session log (only the fields we read)."""

    type: str = ""
    uuid: str | None = None
    sessionId: str | None = None
    timestamp: str | None = None
    isSidechain: bool | None = None
    isMeta: bool | None = None
    isCompactSummary: bool | None = None
    requestId: str | None = None
    subtype: str | None = None
    message: _Message | None = None


#: Line types known to carry no conversation (reference page: metadata lines).
_METADATA: Final = frozenset({
    "summary", "tag", "custom-title", "ai-title", "queue-operation", "file-history-snapshot",
    "progress", "attachment",
})

_INTERRUPTED = "[Request interrupted"
_HEAD_TYPE = re.compile(rb'"type":"(user|assistant|system|[a-z][\w-]*)"')
_HEAD_FIELD = {name: re.compile(rb'"' + name.encode() + rb'":"([^"\\]{1,200})"')
               for name in ("uuid", "sessionId", "timestamp", "requestId")}
_HEAD_TOOL_USE_ID = re.compile(rb'"tool_use_id":"([^"\\]{1,200})"')
_HEAD_MESSAGE_ID = re.compile(rb'"message":\{(?:[^{}]*?)"id":"([^"\\]{1,200})"')


def _head_field(head: bytes, name: str) -> str | None:
    m = _HEAD_FIELD[name].search(head)
    return m[1].decode("utf-8", "replace") if m else None


class ClaudeNormalizer(Normalizer):
    """Claude Code's session log → `AgentEvent`s (see the module doc)."""

    provider = "claude"
    _decoder = msgspec.json.Decoder(_Line)
    _openers = (b'{"parentUuid":', b'{"type":', b'{"uuid":')
    _mapped = frozenset({"user", "assistant"})
    _ignored = _METADATA | {"system"}

    def _kind_of(self, obj: Any) -> str | None:
        kind = obj.get("type") if isinstance(obj, dict) else None
        return kind if isinstance(kind, str) else None

    def _on_line(self, offset: int, line: _Line) -> None:
        if line.sessionId:
            self.session_id = line.sessionId
        kind = line.type
        if kind == "assistant":
            self._assistant(offset, line)
        elif kind == "user":
            self._release_reply()
            self._user_line(offset, line)
        elif kind == "system":
            self._release_reply()
            self._skip(f"system:{line.subtype}" if line.subtype else "system")
        else:
            self._skip(kind or "(no type)")

    def _skip(self, kind: str) -> None:
        if kind.startswith("system:"):
            counts = self.stats.ignored_types
            counts[kind] = counts.get(kind, 0) + 1
        else:
            super()._skip(kind)

    # --- assistant -------------------------------------------------------------------------

    def _assistant(self, offset: int, line: _Line) -> None:
        msg = line.message
        if msg is None:
            self._invalid(offset, "an assistant line without a message")
            return
        content = msg.content
        if isinstance(content, str):
            blocks: list[Block] = [TextBlock(text=content, fidelity=AGENT_EMITTED)]
        else:
            blocks = [b for b in map(self._assistant_block, content or ()) if b is not None]
        # A reply without an id cannot be merged with anything: a key of its own.
        self._add_to_reply(msg.id or object(), offset, blocks, message_id=msg.id,
                           model=msg.model, timestamp=utc_timestamp(line.timestamp),
                           entry_id=line.uuid, request_id=line.requestId,
                           sidechain=bool(line.isSidechain), stop_reason=msg.stop_reason)
        if msg.stop_reason:
            self._release_reply()

    def _assistant_block(self, block: _Block) -> Block | None:
        kind = block.type
        if kind == "text":
            return TextBlock(text=block.text or "", fidelity=AGENT_EMITTED)
        if kind == "thinking":
            return ThinkingBlock(text=block.thinking or "", fidelity=AGENT_EMITTED)
        if kind == "redacted_thinking":
            return ThinkingBlock(text="", redacted=True, fidelity=AGENT_EMITTED)
        if kind in ("tool_use", "server_tool_use"):
            return ToolUseBlock(tool_name=block.name or "", tool_id=block.id or "",
                                tool_input=block.input if block.input is not None else {},
                                fidelity=AGENT_EMITTED)
        self._unknown_block(kind)
        return None

    # --- user ------------------------------------------------------------------------------

    def _user_line(self, offset: int, line: _Line) -> None:
        msg = line.message
        if msg is None:
            self._invalid(offset, "a user line without a message")
            return
        timestamp = utc_timestamp(line.timestamp)
        source = self._source(timestamp, entry_ids=[line.uuid] if line.uuid else [],
                              sidechain=bool(line.isSidechain))
        content = msg.content
        texts: list[str] = []
        images = 0
        if isinstance(content, str):
            texts.append(content)
        else:
            for block in content or ():
                kind = block.type
                if kind == "text":
                    texts.append(block.text or "")
                elif kind == "tool_result":
                    text, result_images = self._result_content(block.content)
                    self._tool_result(offset, ToolResultBlock(
                        tool_id=block.tool_use_id or "", tool_content=text,
                        is_error=block.is_error, omitted_images=result_images,
                        fidelity=AGENT_EMITTED), source)
                elif kind == "image":
                    images += 1
                else:
                    self._unknown_block(kind)
        if not texts and not images:
            return
        injected = self._injected(line, texts[0] if texts else "")
        self._user(offset, [TextBlock(text=t, fidelity=AGENT_EMITTED) for t in texts], source,
                   injected=injected, omitted_images=images)
        if injected == "interrupted":
            self._turn_ended("interrupted", offset, timestamp)

    @staticmethod
    def _injected(line: _Line, first_text: str) -> str | None:
        if line.isCompactSummary:
            return "compact_summary"
        if line.isMeta:
            return "meta"
        if first_text.startswith(_INTERRUPTED):
            return "interrupted"
        return wrapped_tag(first_text)

    def _result_content(self, content: str | list[_Block] | None) -> tuple[str, int]:
        if content is None:
            return "", 0
        if isinstance(content, str):
            return content, 0
        texts, images = [], 0
        for block in content:
            if block.type == "text":
                texts.append(block.text or "")
            elif block.type == "image":
                images += 1
            else:
                self._unknown_block(block.type)
        return "\n".join(texts), images

    # --- a line past the limit -------------------------------------------------------------

    def _on_cut(self, cut: CutLine) -> None:
        head = cut.head
        m = _HEAD_TYPE.search(head)
        kind = m[1].decode() if m else "(no type)"
        if session_id := _head_field(head, "sessionId"):
            self.session_id = session_id
        timestamp = utc_timestamp(_head_field(head, "timestamp"))
        uuid = _head_field(head, "uuid")
        if kind == "assistant":
            m = _HEAD_MESSAGE_ID.search(head)
            message_id = m[1].decode("utf-8", "replace") if m else None
            self._add_to_reply(message_id or object(), cut.offset, [], message_id=message_id,
                               timestamp=timestamp, entry_id=uuid,
                               request_id=_head_field(head, "requestId"), cut_bytes=cut.length)
        elif kind == "user":
            self._release_reply()
            source = self._source(timestamp, entry_ids=[uuid] if uuid else [])
            tool_ids = [t.decode("utf-8", "replace") for t in _HEAD_TOOL_USE_ID.findall(head)]
            for tool_id in tool_ids:
                self._tool_result(cut.offset, ToolResultBlock(
                    tool_id=tool_id, tool_content="", fidelity=AGENT_EMITTED), source,
                    cut_bytes=cut.length)
            if not tool_ids:
                self._user(cut.offset, [], source, cut_bytes=cut.length)
        else:
            if kind == "system":
                self._release_reply()
            self._skip(kind)
