"""The loop every agent-log normalizer shares: lines in, repaired if need be, events out.

A provider module (`claude.py`, `codex.py`) says how one parsed line maps to transcript
events; this base does the rest, the same way for both:

* framing (`lines.LineFramer`): lines held until their LF arrives, cut past the limit;
* decoding with the provider's typed msgspec decoder, and when a line does not decode, the
  repairs the reference page calls for, in order: strip a byte-order mark and NUL padding,
  escape raw NUL and control bytes (which JSON forbids inside strings), drop stray NULs,
  read the last whole line of a line another write was interleaved into. A line still not
  JSON is counted (`invalid_lines`) with its offset and error, never raised;
* the reply being built: one assistant reply (one API response) can be spread over several
  lines; its blocks are gathered until a line of another reply or of the other side
  arrives, or until `release()` (the caller's hold time ran out, the turn ended), and then
  come out as one `message.assistant` followed by one `tool.call` per `tool_use` block;
* the counters (`NormalizerStats`) and the offset to resume from.

Sans-IO and synchronous: `feed(bytes) -> items`, cheap enough for a worker thread on a
timer (`follow.LogFollower` is the I/O around it).
"""

from __future__ import annotations

import collections
import re
from typing import Any, ClassVar

import msgspec

from vigil.daemon.settings import DEFAULTS, Settings
from vigil.protocol.transcript import (
    AGENT_EMITTED, AgentSource, Block, MessageAssistantPayload, MessageUserPayload,
    ToolCallPayload, ToolResultBlock, ToolResultPayload, ToolUseBlock,
)
from vigil.daemon.transcript.providers.items import (
    AgentEvent, AgentEventType, Item, LogReset, NormalizerStats, TurnEnded,
)
from vigil.daemon.transcript.providers.lines import CutLine, Line, LineFramer

__all__ = ["Normalizer", "wrapped_tag"]

#: How many recently recorded reply ids are remembered to mark a late line `continued`.
_RECENT_REPLIES = 64

_CONTROL_BYTES = re.compile(rb"[\x00-\x1f]")
_STRIP = b"\xef\xbb\xbf\x00 \t\r"  # a BOM's bytes, NUL padding, whitespace: never a JSON start
_OPENING_TAG = re.compile(r"\s*<([A-Za-z][\w.-]*)>")
_ANY = msgspec.json.Decoder()


def wrapped_tag(text: str) -> str | None:
    """The tag name when `text` starts with `<tag>` and closes it later: the shape of the
    context agents inject on the user side (`<command-name>`, `<system-reminder>`,
    `<environment_context>`, `<user_instructions>`, …). A person rarely types that."""
    m = _OPENING_TAG.match(text)
    if m and f"</{m[1]}>" in text:
        return m[1]
    return None


def _repairs(raw: bytes, openers: tuple[bytes, ...]):
    """Candidate repairs of a line that is not JSON, mildest first."""
    line = raw.strip(_STRIP)
    if line != raw:
        yield line
    if _CONTROL_BYTES.search(line):
        yield _CONTROL_BYTES.sub(lambda m: b"\\u%04x" % m[0][0], line)
        if b"\x00" in line:
            yield line.replace(b"\x00", b"")
    # Another write interleaved into this one: the last line start in it may be whole.
    starts = [line.rfind(opener) for opener in openers]
    last = max(starts, default=-1)
    if last > 0:
        yield line[last:]


class _Reply:
    """The assistant reply being gathered (see the module doc)."""

    __slots__ = ("key", "offset", "message_id", "model", "timestamp", "request_id", "turn_id",
                 "sidechain", "session_id", "stop_reason", "blocks", "entry_ids", "cut_bytes")

    def __init__(self, key: object, offset: int):
        self.key = key
        self.offset = offset
        self.message_id = self.model = self.timestamp = self.request_id = None
        self.turn_id = self.session_id = self.stop_reason = None
        self.sidechain = False
        self.blocks: list[Block] = []
        self.entry_ids: list[str] = []
        self.cut_bytes = 0


class Normalizer:
    """Base of the per-provider normalizers.

    Args:
        session_id: the provider's session id when it is known beforehand (discovery read
            it, or reading resumes mid-file past the line that names it).
        offset: the log offset the first fed byte has (a line boundary).
        settings: `transcript_line_max_bytes` is read.

    Subclasses set `provider`, `_decoder` (the typed decoder of one line), `_openers` (how
    their lines start), `_mapped`/`_ignored` (line kinds they turn into events / know to
    carry none), and implement `_on_line`, `_on_cut` and `_kind_of`.
    """

    provider: ClassVar[str]
    _decoder: ClassVar[msgspec.json.Decoder]
    _openers: ClassVar[tuple[bytes, ...]]
    _mapped: ClassVar[frozenset[str]]
    _ignored: ClassVar[frozenset[str]]

    def __init__(self, *, session_id: str | None = None, offset: int = 0,
                 settings: Settings = DEFAULTS):
        self.session_id = session_id
        self.stats = NormalizerStats()
        self.line_max_bytes = settings.transcript_line_max_bytes
        self._framer = LineFramer(settings.transcript_line_max_bytes, offset)
        self._out: list[Item] = []
        self._reply: _Reply | None = None
        self._recent_replies: collections.deque[str] = collections.deque(maxlen=_RECENT_REPLIES)
        self._open_tool_ids: dict[str, None] = {}

    # --- the API ---------------------------------------------------------------------------

    def feed(self, data: bytes) -> list[Item]:
        """Items that the bytes appended to the log complete (possibly none: a half-written
        line, or a reply still being gathered, waits)."""
        for line in self._framer.feed(data):
            self._read(line)
        return self._take()

    def release(self) -> list[Item]:
        """Items of the reply being gathered, now (the caller's hold time ran out, or it
        knows the turn ended). A later line of the same reply comes out `continued`."""
        self._release_reply()
        return self._take()

    def close(self) -> list[Item]:
        """Items of everything left: the log ended. An unterminated last line is read if it
        is complete JSON, counted in `truncated_lines` if not."""
        last = self._framer.finish()
        if last is not None:
            self._read(last, unterminated=True)
        self._release_reply()
        return self._take()

    def reset(self, reason: str) -> list[Item]:
        """The log was truncated or replaced (`reason`): the reply being gathered comes
        out, a half-written line is dropped (counted), reading starts again at offset 0,
        and a `LogReset` says so."""
        self._release_reply()
        previous = self._framer.offset
        dropped = self._framer.reset(0)
        if dropped:
            self.stats.truncated_lines += 1
            self.stats.last_problem = (f"half-written line of {dropped} bytes dropped: "
                                       f"the log was {reason} at byte {previous}")
        self._out.append(LogReset(reason=reason, previous_offset=previous, dropped_bytes=dropped))
        return self._take()

    @property
    def holding(self) -> bool:
        """A reply is being gathered (`release` would produce items)."""
        return self._reply is not None

    @property
    def offset(self) -> int:
        """The log offset just past the last byte fed."""
        return self._framer.offset

    @property
    def resume_offset(self) -> int:
        """Where a new reader should start to miss nothing and repeat nothing: the start of
        the reply being gathered or of the half-written line, else the end of what was fed.
        (Lines between a held reply and the end produced no items: anything that would have
        released the reply first.)"""
        offsets = [self._framer.offset]
        if self._reply is not None:
            offsets.append(self._reply.offset)
        partial = self._framer.partial_offset
        if partial is not None:
            offsets.append(partial)
        return min(offsets)

    @property
    def unanswered_tool_ids(self) -> list[str]:
        """`tool_id`s of the calls recorded that have no result yet (dangling once the log
        ended)."""
        return list(self._open_tool_ids)

    # --- for the providers -----------------------------------------------------------------

    def _on_line(self, offset: int, line: Any) -> None:
        raise NotImplementedError

    def _on_cut(self, cut: CutLine) -> None:
        raise NotImplementedError

    def _kind_of(self, obj: Any) -> str | None:
        """The kind (line type) of a line decoded as plain JSON, for counting a line that is
        JSON but not the typed shape."""
        raise NotImplementedError

    def _source(self, timestamp: str | None, **fields: Any) -> AgentSource:
        return AgentSource(provider=self.provider, session_id=self.session_id,
                           timestamp=timestamp, **fields)

    def _emit(self, type: AgentEventType, payload: Any, offset: int) -> None:
        self._out.append(AgentEvent(type=type, payload=payload, offset=offset))
        self.stats.events += 1

    def _user(self, offset: int, blocks: list[Block], source: AgentSource, *,
              injected: str | None = None, omitted_images: int = 0, cut_bytes: int = 0) -> None:
        self._emit("message.user", MessageUserPayload(
            fidelity=AGENT_EMITTED, blocks=blocks, injected=injected,
            omitted_images=omitted_images, cut_bytes=cut_bytes, source=source), offset)

    def _tool_result(self, offset: int, block: ToolResultBlock, source: AgentSource,
                     cut_bytes: int = 0) -> None:
        self._open_tool_ids.pop(block.tool_id, None)
        self._emit("tool.result", ToolResultPayload(
            fidelity=AGENT_EMITTED, blocks=[block], cut_bytes=cut_bytes, source=source), offset)

    def _turn_ended(self, reason: Any, offset: int, timestamp: str | None, **fields: Any) -> None:
        self._out.append(TurnEnded(provider=self.provider, reason=reason, timestamp=timestamp,
                                   offset=offset, session_id=self.session_id, **fields))

    def _add_to_reply(self, key: object, offset: int, blocks: list[Block], *,
                      message_id: str | None = None, model: str | None = None,
                      timestamp: str | None = None, entry_id: str | None = None,
                      request_id: str | None = None, turn_id: str | None = None,
                      sidechain: bool = False, stop_reason: str | None = None,
                      cut_bytes: int = 0) -> None:
        """Add a line's blocks to the reply being gathered; a different `key` (another
        reply) releases the current one first."""
        reply = self._reply
        if reply is not None and reply.key != key:
            self._release_reply()
            reply = None
        if reply is None:
            reply = self._reply = _Reply(key, offset)
            reply.timestamp, reply.session_id = timestamp, self.session_id
            reply.request_id, reply.turn_id, reply.sidechain = request_id, turn_id, sidechain
        reply.blocks.extend(blocks)
        reply.cut_bytes += cut_bytes
        if entry_id:
            reply.entry_ids.append(entry_id)
        reply.message_id = reply.message_id or message_id
        reply.model = reply.model or model
        reply.stop_reason = stop_reason or reply.stop_reason

    def _release_reply(self) -> None:
        reply = self._reply
        if reply is None:
            return
        self._reply = None
        source = AgentSource(provider=self.provider, session_id=reply.session_id,
                             timestamp=reply.timestamp, entry_ids=reply.entry_ids,
                             request_id=reply.request_id, turn_id=reply.turn_id,
                             sidechain=reply.sidechain)
        continued = reply.message_id is not None and reply.message_id in self._recent_replies
        self._emit("message.assistant", MessageAssistantPayload(
            fidelity=AGENT_EMITTED, blocks=reply.blocks, message_id=reply.message_id,
            model=reply.model, stop_reason=reply.stop_reason, continued=continued,
            cut_bytes=reply.cut_bytes, source=source), reply.offset)
        if reply.message_id is not None and not continued:
            self._recent_replies.append(reply.message_id)
        for block in reply.blocks:
            if type(block) is ToolUseBlock:
                self._open_tool_ids[block.tool_id] = None
                self._emit("tool.call", ToolCallPayload(
                    fidelity=AGENT_EMITTED, blocks=[block], source=source), reply.offset)
        if reply.stop_reason == "end_turn":
            self._turn_ended("end_turn", reply.offset, reply.timestamp,
                             message_id=reply.message_id)

    def _skip(self, kind: str) -> None:
        """Count a line not turned into events: known to carry none, or of a kind this
        version does not know."""
        counts = self.stats.ignored_types if kind in self._ignored else self.stats.unknown_types
        counts[kind] = counts.get(kind, 0) + 1

    def _unknown_block(self, kind: str) -> None:
        counts = self.stats.unknown_blocks
        counts[kind] = counts.get(kind, 0) + 1

    def _invalid(self, offset: int, why: str) -> None:
        self.stats.invalid_lines += 1
        self.stats.last_problem = f"line at byte {offset}: {why}"

    # --- reading one line ------------------------------------------------------------------

    def _take(self) -> list[Item]:
        out, self._out = self._out, []
        return out

    def _read(self, line: Line | CutLine, unterminated: bool = False) -> None:
        if type(line) is CutLine:
            self.stats.cut_lines += 1
            self._on_cut(line)
            return
        offset, raw = line
        if not raw:
            return
        self.stats.lines += 1
        try:
            obj = self._decoder.decode(raw)
        except msgspec.ValidationError as exc:
            self._misshapen(offset, raw, exc)
            return
        except msgspec.DecodeError as exc:
            obj = self._repaired(offset, raw, exc, unterminated)
            if obj is None:
                return
        self._on_line(offset, obj)

    def _repaired(self, offset: int, raw: bytes, error: Exception, unterminated: bool) -> Any:
        for candidate in _repairs(raw, self._openers):
            try:
                obj = self._decoder.decode(candidate)
            except msgspec.ValidationError as exc:
                self.stats.repaired_lines += 1
                self._misshapen(offset, candidate, exc)
                return None
            except msgspec.DecodeError:
                continue
            self.stats.repaired_lines += 1
            return obj
        if unterminated:
            self.stats.truncated_lines += 1
            self.stats.last_problem = (f"line at byte {offset}: the log ended inside it "
                                       f"({len(raw)} bytes, not complete JSON: {error})")
        elif not raw.strip(_STRIP):
            self._invalid(offset, f"{len(raw)} bytes of NUL padding or blanks")
        else:
            self._invalid(offset, f"not JSON: {error}")
        return None

    def _misshapen(self, offset: int, raw: bytes, error: Exception) -> None:
        """A line that is JSON but not the shape its provider's decoder expects: a line of a
        kind we do not map (counted as skipped), or a mapped kind gone wrong (invalid)."""
        try:
            kind = self._kind_of(_ANY.decode(raw))
        except msgspec.DecodeError:
            kind = None
        if kind is not None and kind not in self._mapped:
            self._skip(kind)
        else:
            self._invalid(offset, f"unexpected shape: {error}")
