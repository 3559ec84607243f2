"""Codex's rollout (`~/.codex/sessions/YYYY/MM/DD/rollout-….jsonl`) → transcript events.

The format, as the reference page (../shared/reference/agent-session-logs.md) has it: each
line is `{"timestamp", "type", "payload"}`; `response_item`s are what the model saw and
said, `event_msg`s what the UI was told, plus `session_meta`, `turn_context` and
`compacted`. Visible content appears twice (`user_message` and a user `message`,
`agent_message` and an assistant `message`, `agent_reasoning` and a `reasoning` item) and
is taken once, the other copy counted in `duplicates`: the assistant side from the
`response_item`s (they hold the whole reply: reasoning, text and tool calls, in order), the
person's prompt from whichever of the two comes first (the other, with the same text, is the
duplicate), so a version that writes only one of them loses nothing. The mapping:

================================================  ==========================================
line                                              events
================================================  ==========================================
consecutive assistant-side `response_item`s       one `message.assistant` (the items of one
(`reasoning`, assistant `message`,                model response), blocks in order:
`function_call`, `custom_tool_call`,              `thinking` (the summary texts, or
`local_shell_call`, `web_search_call`)            `redacted` when only encrypted), `text`,
                                                  `tool_use`; then one `tool.call` each
`function_call_output`, `custom_tool_call_output`  `tool.result` (`exit_code` from an
                                                  `Exit code: N` line or a JSON
                                                  `metadata.exit_code`; no `is_error`: Codex
                                                  has no such flag)
user `message`, `event_msg` `user_message`        `message.user`, once (see above); text
                                                  wrapped in a tag is context, not the
                                                  person: `injected` is the tag
                                                  (`environment_context`,
                                                  `user_instructions`, …)
developer `message`                               `message.user`, `injected: developer`
`compacted`                                       `message.user`, `injected:
                                                  compact_summary`, its `message` (the
                                                  `replacement_history` is not repeated)
`event_msg` `task_complete` / `turn_aborted`      `TurnEnded(task_complete / aborted)`
`session_meta`, `turn_context`, `token_count`, …  skipped, counted (`ignored_types`); the
                                                  first `session_meta` names the session,
                                                  `turn_context` the model
================================================  ==========================================

Decisions where the page is silent:

* The reply being gathered is released by any line that is not an assistant-side item or
  an echo (a tool output, a user message, `token_count`, which Codex writes after every
  model response, `task_complete`, …), or by `release()`.
* `function_call.arguments` is a JSON string: parsed into `tool_input`; when it does not
  parse, `tool_input` is the string as written and `input_error` says why.
* A line longer than `transcript_line_max_bytes` is recorded from its head: a tool output
  as a `tool.result` with empty content, a message as an event without blocks, a tool call
  as a `tool_use` with no input; `cut_bytes` is the line's length. A cut `compacted` record
  (they reach tens of MB) is only counted.
"""

from __future__ import annotations

import collections
import re
from typing import Any, Final

import msgspec

from vigil.protocol.transcript import (
    AGENT_EMITTED, Block, TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock, utc_timestamp,
)
from vigil.daemon.transcript.providers.lines import CutLine
from vigil.daemon.transcript.providers.normalizer import Normalizer, wrapped_tag

__all__ = ["CodexNormalizer"]


class _Line(msgspec.Struct):
    timestamp: str | None = None
    type: str = ""
    payload: msgspec.Raw = msgspec.Raw(b"null")


class _Text(msgspec.Struct):
    """A content item of a message, a summary or reasoning content part."""

    type: str = ""
    text: str | None = None


class _Item(msgspec.Struct):
    """A `response_item` payload (only the fields we read)."""

    type: str = ""
    id: str | None = None
    role: str | None = None
    content: list[_Text] | None = None
    summary: list[_Text] | None = None
    encrypted_content: str | None = None
    name: str | None = None
    arguments: Any = None
    input: Any = None
    call_id: str | None = None
    output: Any = None
    action: Any = None


class _Event(msgspec.Struct):
    """An `event_msg` payload (only the fields we read)."""

    type: str = ""
    message: Any = None
    turn_id: str | None = None
    last_agent_message: str | None = None


class _SessionMeta(msgspec.Struct):
    id: str | None = None


class _TurnContext(msgspec.Struct):
    model: str | None = None
    turn_id: str | None = None


class _Compacted(msgspec.Struct):
    message: str | None = None


_ITEM = msgspec.json.Decoder(_Item)
_EVENT = msgspec.json.Decoder(_Event)
_SESSION_META = msgspec.json.Decoder(_SessionMeta)
_TURN_CONTEXT = msgspec.json.Decoder(_TurnContext)
_COMPACTED = msgspec.json.Decoder(_Compacted)
_ANY = msgspec.json.Decoder()

_ASSISTANT_SIDE: Final = frozenset({
    "reasoning", "function_call", "custom_tool_call", "local_shell_call", "web_search_call",
})
_TOOL_OUTPUTS: Final = frozenset({"function_call_output", "custom_tool_call_output"})
#: `event_msg` copies of the assistant side, which is taken from the `response_item`s.
_ECHOES: Final = frozenset({"agent_message", "agent_reasoning", "agent_reasoning_raw_content"})
#: `event_msg` kinds known to carry nothing we map; each ends the reply being gathered.
_EVENTS_IGNORED: Final = frozenset({"token_count", "task_started", "context_compacted"})

#: How many of the person's recent prompts are remembered to recognize the second copy.
_RECENT_PROMPTS = 8

#: How much of a tool's output is searched for its exit code (it is on the first lines).
_EXIT_CODE_SCAN = 1024
_EXIT_LINE = re.compile(r"^Exit code: (-?\d+)\s*$", re.MULTILINE)

_HEAD_STRING = {name: re.compile(rb'"' + name.encode() + rb'":"([^"\\]{1,200})"')
                for name in ("timestamp", "type", "role", "call_id", "name", "turn_id")}
_HEAD_PAYLOAD_TYPE = re.compile(rb'"payload":\{"type":"([^"\\]{1,200})"')


def _head(head: bytes, name: str) -> str | None:
    m = _HEAD_STRING[name].search(head)
    return m[1].decode("utf-8", "replace") if m else None


def _exit_code(output: str) -> int | None:
    """The exit code a shell tool's output reports: an `Exit code: N` line, or the JSON
    object form `{"output": …, "metadata": {"exit_code": N}}`."""
    head = output[:_EXIT_CODE_SCAN]
    if head.startswith("{"):
        try:
            obj = _ANY.decode(output)
        except msgspec.DecodeError:
            obj = None
        if isinstance(obj, dict) and isinstance(obj.get("metadata"), dict):
            code = obj["metadata"].get("exit_code")
            if isinstance(code, int) and not isinstance(code, bool):
                return code
    m = _EXIT_LINE.search(head)
    return int(m[1]) if m else None


class CodexNormalizer(Normalizer):
    """Codex's rollout → `AgentEvent`s (see the module doc)."""

    provider = "codex"
    _decoder = msgspec.json.Decoder(_Line)
    _openers = (b'{"timestamp":',)
    _mapped = frozenset({"response_item", "event_msg", "compacted", "session_meta",
                         "turn_context"})
    _ignored = frozenset({"session_meta", "turn_context", "compacted", "compacted:replacement_history"}) \
        | {f"event_msg:{k}" for k in _EVENTS_IGNORED}

    #: The reply key: every assistant-side item joins the reply until something releases it.
    _REPLY = "codex-reply"

    def __init__(self, **kwargs: Any):
        super().__init__(**kwargs)
        self._model: str | None = None
        self._turn_id: str | None = None
        self._meta_seen = False
        # (which copy, text) of recent prompts not yet matched by their other copy.
        self._prompts: collections.deque[tuple[str, str]] = collections.deque(maxlen=_RECENT_PROMPTS)

    def _kind_of(self, obj: Any) -> str | None:
        kind = obj.get("type") if isinstance(obj, dict) else None
        return kind if isinstance(kind, str) else None

    def _on_line(self, offset: int, line: _Line) -> None:
        kind = line.type
        try:
            if kind == "response_item":
                self._response_item(offset, utc_timestamp(line.timestamp), _ITEM.decode(line.payload))
            elif kind == "event_msg":
                self._event(offset, utc_timestamp(line.timestamp), _EVENT.decode(line.payload))
            elif kind == "session_meta":
                meta = _SESSION_META.decode(line.payload)
                if not self._meta_seen:  # the first one is authoritative (reference page)
                    self._meta_seen = True
                    self.session_id = self.session_id or meta.id
                self._skip("session_meta")
            elif kind == "turn_context":
                self._release_reply()
                context = _TURN_CONTEXT.decode(line.payload)
                self._model = context.model or self._model
                self._turn_id = context.turn_id or self._turn_id
                self._skip("turn_context")
            elif kind == "compacted":
                self._release_reply()
                self._compacted(offset, utc_timestamp(line.timestamp),
                                _COMPACTED.decode(line.payload))
            else:
                self._skip(kind or "(no type)")
        except msgspec.DecodeError as exc:
            self._invalid(offset, f"unexpected {kind} payload: {exc}")

    # --- response items --------------------------------------------------------------------

    def _response_item(self, offset: int, timestamp: str | None, item: _Item) -> None:
        kind = item.type
        if kind == "message":
            if item.role == "assistant":
                blocks: list[Block] = [TextBlock(text=t, fidelity=AGENT_EMITTED)
                                       for t in self._texts(item.content, "output_text")]
                self._reply_item(offset, timestamp, blocks, message_id=item.id)
            else:
                self._release_reply()
                self._message_user(offset, timestamp, item)
        elif kind in _ASSISTANT_SIDE:
            self._reply_item(offset, timestamp, [self._assistant_block(item)])
        elif kind in _TOOL_OUTPUTS:
            self._release_reply()
            self._tool_output(offset, timestamp, item)
        else:
            self._skip(f"response_item:{kind}")

    def _reply_item(self, offset: int, timestamp: str | None, blocks: list[Block],
                    message_id: str | None = None) -> None:
        self._add_to_reply(self._REPLY, offset, blocks, message_id=message_id, model=self._model,
                           timestamp=timestamp, turn_id=self._turn_id)

    def _assistant_block(self, item: _Item) -> Block:
        kind = item.type
        if kind == "reasoning":
            texts = self._texts(item.summary, "summary_text") or \
                self._texts(item.content, "reasoning_text")
            if texts:
                return ThinkingBlock(text="\n\n".join(texts), fidelity=AGENT_EMITTED)
            return ThinkingBlock(text="", redacted=True, fidelity=AGENT_EMITTED)
        if kind == "function_call":
            tool_input, error = item.arguments, None
            if isinstance(tool_input, str):
                try:
                    tool_input = _ANY.decode(tool_input)
                except msgspec.DecodeError as exc:
                    error = f"arguments are not JSON ({exc}); tool_input is the text as written"
            return ToolUseBlock(tool_name=item.name or "", tool_id=item.call_id or "",
                                tool_input=tool_input, input_error=error,
                                fidelity=AGENT_EMITTED)
        if kind == "custom_tool_call":
            return ToolUseBlock(tool_name=item.name or "", tool_id=item.call_id or "",
                                tool_input=item.input, fidelity=AGENT_EMITTED)
        if kind == "local_shell_call":
            return ToolUseBlock(tool_name="local_shell", tool_id=item.call_id or item.id or "",
                                tool_input=item.action, fidelity=AGENT_EMITTED)
        # web_search_call: no call id and no output item; recorded as a call without result.
        return ToolUseBlock(tool_name="web_search", tool_id=item.id or "",
                            tool_input=item.action, fidelity=AGENT_EMITTED)

    def _tool_output(self, offset: int, timestamp: str | None, item: _Item) -> None:
        output, images, is_error = item.output, 0, None
        if isinstance(output, dict):  # older versions: {"content": …, "success": bool}
            success = output.get("success")
            is_error = (not success) if isinstance(success, bool) else None
            output = output.get("content")
        if isinstance(output, list):
            parts = [p for p in output if isinstance(p, dict)]
            images = sum(1 for p in parts if p.get("type") == "input_image")
            text = "\n".join(p["text"] for p in parts if isinstance(p.get("text"), str))
        elif isinstance(output, str):
            text = output
        else:
            text = "" if output is None else msgspec.json.encode(output).decode()
        self._tool_result(offset, ToolResultBlock(
            tool_id=item.call_id or "", tool_content=text, is_error=is_error,
            exit_code=_exit_code(text), omitted_images=images, fidelity=AGENT_EMITTED),
            self._source(timestamp, turn_id=self._turn_id))

    def _message_user(self, offset: int, timestamp: str | None, item: _Item) -> None:
        texts, images = [], 0
        for part in item.content or ():
            if part.type in ("input_text", "output_text", "text"):
                texts.append(part.text or "")
            elif part.type == "input_image":
                images += 1
            else:
                self._unknown_block(part.type)
        if item.role == "user":
            injected = wrapped_tag(texts[0]) if texts else None
            if injected is None and self._second_copy("response_item", "\n".join(texts)):
                return
        else:
            injected = item.role or "(no role)"
        self._user(offset, [TextBlock(text=t, fidelity=AGENT_EMITTED) for t in texts],
                   self._source(timestamp, turn_id=self._turn_id), injected=injected,
                   omitted_images=images)

    def _second_copy(self, copy: str, text: str) -> bool:
        """True (counted as a duplicate) when `text` is the other copy of a prompt already
        recorded from the other kind of line; else remember it as recorded from `copy`."""
        for entry in self._prompts:
            if entry[1] == text and entry[0] != copy:
                self._prompts.remove(entry)
                self.stats.duplicates += 1
                return True
        self._prompts.append((copy, text))
        return False

    def _compacted(self, offset: int, timestamp: str | None, record: _Compacted) -> None:
        if record.message:
            self._user(offset, [TextBlock(text=record.message, fidelity=AGENT_EMITTED)],
                       self._source(timestamp, turn_id=self._turn_id), injected="compact_summary")
        else:
            self._skip("compacted:replacement_history")

    def _texts(self, parts: list[_Text] | None, wanted: str) -> list[str]:
        texts = []
        for part in parts or ():
            if part.type == wanted or part.type == "text":
                texts.append(part.text or "")
            else:
                self._unknown_block(part.type)
        return texts

    # --- events ----------------------------------------------------------------------------

    def _event(self, offset: int, timestamp: str | None, event: _Event) -> None:
        kind = event.type
        if kind == "user_message":
            self._release_reply()
            text = event.message if isinstance(event.message, str) else ""
            if not self._second_copy("event_msg", text):
                self._user(offset, [TextBlock(text=text, fidelity=AGENT_EMITTED)],
                           self._source(timestamp, turn_id=self._turn_id))
        elif kind in _ECHOES:
            self.stats.duplicates += 1
        elif kind == "task_complete":
            self._release_reply()
            self._turn_ended("task_complete", offset, timestamp,
                             turn_id=event.turn_id or self._turn_id,
                             last_message=event.last_agent_message)
            self._turn_id = None
        elif kind == "turn_aborted":
            self._release_reply()
            self._turn_ended("aborted", offset, timestamp, turn_id=event.turn_id or self._turn_id)
            self._turn_id = None
        elif kind in _EVENTS_IGNORED:
            self._release_reply()
            if kind == "task_started" and event.turn_id:
                self._turn_id = event.turn_id
            self._skip(f"event_msg:{kind}")
        else:
            self._skip(f"event_msg:{kind}")

    # --- a line past the limit -------------------------------------------------------------

    def _on_cut(self, cut: CutLine) -> None:
        head = cut.head
        kind = _head(head, "type") or "(no type)"
        timestamp = utc_timestamp(_head(head, "timestamp"))
        m = _HEAD_PAYLOAD_TYPE.search(head)
        item = m[1].decode("utf-8", "replace") if m else None
        source = self._source(timestamp, turn_id=self._turn_id)
        if kind == "event_msg":
            self._cut_event(cut, item, timestamp)
        elif kind != "response_item":
            if kind == "compacted":
                self._release_reply()
            self._skip(kind)
        elif item in _TOOL_OUTPUTS:
            self._release_reply()
            self._tool_result(cut.offset, ToolResultBlock(
                tool_id=_head(head, "call_id") or "", tool_content="", fidelity=AGENT_EMITTED),
                source, cut_bytes=cut.length)
        elif item == "message" and _head(head, "role") == "assistant":
            self._add_to_reply(self._REPLY, cut.offset, [], model=self._model,
                               timestamp=timestamp, turn_id=self._turn_id, cut_bytes=cut.length)
        elif item == "message":
            self._release_reply()
            role = _head(head, "role")
            self._user(cut.offset, [], source, cut_bytes=cut.length,
                       injected=None if role == "user" else role)
        elif item in _ASSISTANT_SIDE:
            block = ToolUseBlock(tool_name=_head(head, "name") or item, tool_id=_head(head, "call_id") or "",
                                 tool_input=None, fidelity=AGENT_EMITTED,
                                 input_error=f"the log line ({cut.length} bytes) is longer than "
                                             f"transcript_line_max_bytes: input not read")
            blocks: list[Block] = [] if item == "reasoning" else [block]
            self._add_to_reply(self._REPLY, cut.offset, blocks, model=self._model,
                               timestamp=timestamp, turn_id=self._turn_id, cut_bytes=cut.length)
        else:
            self._skip(f"response_item:{item}")

    def _cut_event(self, cut: CutLine, kind: str | None, timestamp: str | None) -> None:
        """An `event_msg` past the limit: a turn's end still ends the turn; a prompt's copy
        is counted as the duplicate of its `response_item` (which comes out cut itself)."""
        if kind in ("task_complete", "turn_aborted"):
            self._release_reply()
            self._turn_ended("task_complete" if kind == "task_complete" else "aborted",
                             cut.offset, timestamp, turn_id=_head(cut.head, "turn_id") or self._turn_id)
            self._turn_id = None
        elif kind == "user_message" or kind in _ECHOES:
            if kind == "user_message":
                self._release_reply()
            self.stats.duplicates += 1
        else:
            if kind in _EVENTS_IGNORED:
                self._release_reply()
            self._skip(f"event_msg:{kind}")
