"""The records the store persists, as msgspec Structs, and the identifiers they carry.

Schema evolution (msgspec's rule, pueue's promise): records are msgpack *maps* (not
array_like) so a field can be added later; every field added after schema 1 must have a
default; a field is never renamed or re-typed. `schema` is written into each record so that
a record from a newer vigil is recognised and refused rather than misread. A checked-in
record of every schema version (tests/fixtures/store_record_v*.msgpack) must keep decoding:
we have to be able to restore old state at all costs.

Saved vs runtime-only state: everything in these Structs is saved. Runtime-only state
(screens in memory, waiters, guardian connections) lives in the daemon, never here.
"""

from __future__ import annotations

import hashlib
import uuid
from typing import Literal

import msgspec

from vigil.protocol.api.trace import ArchiveStamp, TurnSummary

from .errors import InvalidArgument, StoreError

#: Version of `ExecutionRecord` written by this code. Bump it when a field is added, and
#: add a fixture of the new version; never change the meaning of an existing field.
RECORD_SCHEMA = 1
#: Versions of `ArchiveEntry` and `TurnRecord` (the same rule; fixtures
#: tests/fixtures/store_archive_v*.msgpack and store_turn_v*.msgpack).
ARCHIVE_SCHEMA = 1
TURN_SCHEMA = 1

Status = Literal["running", "exited", "unknown"]
Kind = Literal["standalone", "shell", "shell_command"]
TERMINAL_STATUSES = frozenset({"exited", "unknown"})
#: The kinds in the persistent shell's retention pool (retention.py): the shells and their
#: commands, kept under a cap of their own so they never push standalone runs out.
SHELL_POOL_KINDS = frozenset({"shell", "shell_command"})


class RuntimeIdentity(msgspec.Struct, kw_only=True, frozen=True):
    """One guardian, identified so that pid reuse can never be mistaken for it (DESIGN: Identity).

    The guardian package has its own wire twin of this; the daemon converts between them.
    Recovery compares the whole identity, never a pid alone.
    """

    runtime_id: str
    boot_id: str
    guardian_pid: int
    #: Field 22 of /proc/PID/stat: with boot_id, tells a reused pid from the original.
    guardian_start_ticks: int
    child_pid: int


class ExecutionRecord(msgspec.Struct, kw_only=True, frozen=True):
    """One accepted command: what ran, where, under which scope, and what became of it.

    Fields marked *store-managed* are maintained by the store (output accounting, times of
    persisted change); a caller's update of them is refused.
    """

    schema: int = RECORD_SCHEMA
    execution_id: str
    #: The scope key chosen by the daemon (principal + thread + workspace). Never authority
    #: by itself: the daemon derives it from the verified session on every call.
    scope: str
    thread_id: str
    workspace_root: str
    #: Display form of the command; `argv` is the literal vector when there is one.
    command: str
    argv: list[str] | None = None
    cwd: str
    name: str | None = None
    kind: Kind = "standalone"
    status: Status = "running"
    exit_code: int | None = None
    signal: int | None = None
    unknown_reason: str | None = None
    #: Also the listing order key (by_scope), so it never changes after creation.
    started_unix_ms: int
    ended_unix_ms: int | None = None
    #: Store-managed: when the exited/unknown outcome was first recorded; retention's clock.
    terminal_at_unix_ms: int | None = None
    #: Store-managed: time of the latest observation that produced a persisted change. An
    #: unchanged poll leaves it alone (spec: it is not a liveness heartbeat).
    observed_at_unix_ms: int = 0
    runtime: RuntimeIdentity | None = None
    #: Foreground occupants of the runtime so far (DESIGN: Identity).
    generation: int = 0
    #: Store-managed: every byte the execution produced, retained or not (next offset).
    output_total_bytes: int = 0
    #: Store-managed: oldest offset still retained (== output_total_bytes when none is).
    output_retained_start: int = 0
    #: Store-managed: bytes not retained: pruned by retention plus guardian ring gaps.
    #: Invariant: output_total_bytes - output_dropped_bytes == bytes stored.
    output_dropped_bytes: int = 0
    #: Store-managed: the most recent guardian gaps as [start, end) offsets, capped at
    #: Settings.store_gaps_kept; gaps older than the retained start are forgotten.
    gaps: list[tuple[int, int]] = []
    #: Store-managed: commits that persisted new output for this execution (the activity a
    #: capture covers: equal values saw the same output).
    output_activity_seq: int = 0
    #: Never written since schema 1's first release: whether output is pending is runtime
    #: knowledge (uncommitted bytes, a guardian ahead of the store), computed when a record
    #: is shown. Kept so that old records decode.
    output_pending: bool = False
    rows: int | None = None
    cols: int | None = None
    recognized_state: str | None = None
    #: Store-managed: size of the persisted screen snapshot (counts toward scope retention).
    screen_bytes: int = 0
    #: Store-managed: sequence of the persisted screen snapshot (0: none yet).
    screen_snapshot: int = 0
    #: Store-managed: seq of this execution's latest 'output' change entry (coalescing).
    output_change_seq: int = 0
    #: For a command of a persistent shell: the offset in the shell's output stream where
    #: this command's own output begins (None until the shell announced the start). Added
    #: with a default, so schema-1 records without it still decode.
    shell_offset: int | None = None
    #: The environment the execution was started with (the caller's, for a CLI `run`).
    #: Private to the record: no view shows it unless asked (`Execution get` with
    #: `include_env`), and it is never logged or put in an error. Null for records made
    #: before vigil kept it, and for shell commands (they run in the shell's environment).
    env: dict[str, str] | None = None
    #: Why the command could not be started (then `exited` 127 or 126), as a shell says it.
    start_error: str | None = None
    #: Stopped by `pause` (SIGSTOP to the process group) and not resumed since.
    paused: bool = False
    #: `cancel` was asked for: once it has ended, its outcome reads as cancelled.
    cancelled: bool = False
    #: The execution this one reruns (`rerun`); set at creation, never changed.
    rerun_of: str | None = None

    @property
    def is_terminal(self) -> bool:
        return self.status in TERMINAL_STATUSES

    @property
    def in_shell_pool(self) -> bool:
        return self.kind in SHELL_POOL_KINDS

    @property
    def output_stored_bytes(self) -> int:
        return self.output_total_bytes - self.output_dropped_bytes


#: Fields a caller may not set through `update`/`commit_batch` (identity or store-managed).
STORE_MANAGED = frozenset(
    {
        "schema",
        "execution_id",
        "scope",
        "thread_id",
        "workspace_root",
        "command",
        "argv",
        "kind",
        "started_unix_ms",
        "terminal_at_unix_ms",
        "observed_at_unix_ms",
        "output_total_bytes",
        "output_retained_start",
        "output_dropped_bytes",
        "gaps",
        "screen_bytes",
        "screen_snapshot",
        "output_change_seq",
        "output_activity_seq",
        "output_pending",
        "env",
        "rerun_of",
    }
)
UPDATABLE = frozenset(ExecutionRecord.__struct_fields__) - STORE_MANAGED


class StoredScreen(msgspec.Struct, kw_only=True, frozen=True):
    """The last visible screen of an execution, as the store keeps it (the screen keeper's
    live `vigil.daemon.screen.ScreenSnapshot`, converted in runtime/manager.py).

    `snapshot` increases with every change so that a screen cursor from an older snapshot is
    answered with `resync_required` rather than a page of a different screen.
    """

    schema: int = 1
    snapshot: int
    text: str
    rows: int
    cols: int
    cursor_row: int = 0
    cursor_col: int = 0
    #: 'exact' or 'fast_forwarded' (DESIGN: Output path and the screen).
    fidelity: str = "exact"
    title: str | None = None
    captured_unix_ms: int = 0
    #: True when the text was cut to Settings.retention_screen_bytes (the top was dropped).
    truncated: bool = False
    #: Offset in the output stream up to which this screen shows every byte (null when not
    #: known: the keeper had bytes left to parse). A re-attaching daemon restores the screen
    #: from this text and replays the guardian's ring from here.
    output_offset: int | None = None


class ChangeEntry(msgspec.Struct, kw_only=True, frozen=True):
    """One persisted change, as `changes_since` reports it (the catalog for wait)."""

    seq: int
    execution_id: str
    #: 'created', 'output', 'state', 'exited', 'unknown', 'screen', 'pruned' or 'removed'.
    what: str
    #: recognized_state after a 'state' change (lets wait filter awaiting_input & co).
    state: str | None = None
    at_unix_ms: int = 0


class ArchiveEntry(msgspec.Struct, kw_only=True, frozen=True):
    """The catalog's record of one turn archive (daemon/archive/): whose it is, which turn,
    the policy stamped on it, and when the cleanup removes it.

    Kept in db `archives` under the owner's scope hash and the ref, so a lookup made for
    another scope cannot even read it. `expires_at_unix_ms` is decided once — at the
    opening (provisionally, from the failed-turn lifetime) and at the commit (from the
    turn's end and outcome) — from the stamp, never from the configuration of the day.
    """

    schema: int = ARCHIVE_SCHEMA
    archive_ref: str
    scope: str
    execution_id: str
    turn: int
    stamp: ArchiveStamp
    opened_at_unix_ms: int
    committed_at_unix_ms: int | None = None
    expires_at_unix_ms: int
    #: The model-context projection, set when the turn is committed.
    summary: TurnSummary | None = None


class TurnRecord(msgspec.Struct, kw_only=True, frozen=True):
    """An agent turn of an execution (db `turns`, beside the receipts and removed with the
    execution): what a `trace_key` (`{execution_id}:{turn}`) reads."""

    schema: int = TURN_SCHEMA
    archive_ref: str
    opened_at_unix_ms: int


# --- identifiers ------------------------------------------------------------------------------

_HEX = frozenset("0123456789abcdef")


def new_execution_id() -> str:
    """A fresh execution id: uuid4 as 32 lowercase hex characters."""
    return uuid.uuid4().hex


def parse_execution_id(value: object) -> str:
    """Return `value` if it is an execution id (exactly 32 lowercase hex characters).

    Anything else (upper case, dashes, braces, wrong length, non-str) is refused, so that
    one execution has exactly one spelling and keys cannot be smuggled through it.

    Raises:
        InvalidArgument: not an execution id.
    """
    if isinstance(value, str) and len(value) == 32 and _HEX.issuperset(value):
        return value
    raise InvalidArgument("execution_id must be 32 lowercase hexadecimal characters")


def id_bytes(execution_id: str) -> bytes:
    """The 16-byte key form of a (valid) execution id."""
    return bytes.fromhex(parse_execution_id(execution_id))


def scope_hash(scope: str) -> bytes:
    """16-byte key prefix of a scope: fixed width so by_scope ranges scan in order.

    BLAKE2b-128 with a personalisation string: collisions are out of reach, and a listing
    still checks the record's own `scope` field, so even one could not leak a record.
    """
    return hashlib.blake2b(scope.encode("utf-8"), digest_size=16, person=b"vigil-scope").digest()


# --- encoding ---------------------------------------------------------------------------------

_encoder = msgspec.msgpack.Encoder()
_record_decoder = msgspec.msgpack.Decoder(ExecutionRecord)
_screen_decoder = msgspec.msgpack.Decoder(StoredScreen)
_archive_decoder = msgspec.msgpack.Decoder(ArchiveEntry)
_turn_decoder = msgspec.msgpack.Decoder(TurnRecord)


def encode(obj: msgspec.Struct) -> bytes:
    return _encoder.encode(obj)


def decode_record(raw: bytes) -> ExecutionRecord:
    """Decode a persisted record, refusing one written by a newer vigil.

    Raises:
        StoreError: the bytes are not a record, or its schema is newer than RECORD_SCHEMA.
    """
    try:
        rec = _record_decoder.decode(raw)
    except msgspec.DecodeError as exc:
        raise StoreError(f"unreadable execution record: {exc}") from None
    if rec.schema > RECORD_SCHEMA:
        raise StoreError(
            f"execution record schema {rec.schema} is newer than this vigil supports ({RECORD_SCHEMA})"
        )
    return rec


def decode_screen(raw: bytes) -> StoredScreen:
    try:
        return _screen_decoder.decode(raw)
    except msgspec.DecodeError as exc:
        raise StoreError(f"unreadable screen snapshot: {exc}") from None


def decode_archive(raw: bytes) -> ArchiveEntry:
    """Decode an archive catalog entry, refusing one written by a newer vigil.

    Raises:
        StoreError: not an entry, or its schema is newer than ARCHIVE_SCHEMA.
    """
    try:
        entry = _archive_decoder.decode(raw)
    except msgspec.DecodeError as exc:
        raise StoreError(f"unreadable archive catalog entry: {exc}") from None
    if entry.schema > ARCHIVE_SCHEMA:
        raise StoreError(f"archive catalog entry schema {entry.schema} is newer than this vigil "
                         f"supports ({ARCHIVE_SCHEMA})")
    return entry


def decode_turn(raw: bytes) -> TurnRecord:
    """Decode a turn record, refusing one written by a newer vigil.

    Raises:
        StoreError: not a turn record, or its schema is newer than TURN_SCHEMA.
    """
    try:
        turn = _turn_decoder.decode(raw)
    except msgspec.DecodeError as exc:
        raise StoreError(f"unreadable turn record: {exc}") from None
    if turn.schema > TURN_SCHEMA:
        raise StoreError(f"turn record schema {turn.schema} is newer than this vigil supports "
                         f"({TURN_SCHEMA})")
    return turn
