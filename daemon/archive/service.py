"""`get_trace` and the turn summaries that `Agent get` and prompt answers carry.

Order of a `get_trace`, and why:
1. The request is checked whole first: exactly one of `archive_ref` / `trace_key`, each
   parsed by the protocol's strict parser (`parse_archive_ref`, `parse_trace_key`), and
   `from_seq`. Anything malformed is `invalid_request` here, before any lookup: no caller
   text ever reaches the catalog or a path (`../x`, upper case, hyphens, 31 characters…).
2. Pending catalog writes are flushed, so a ref just handed out (a receipt) is found.
3. The lookup is keyed by the caller's scope (store/archives.py): another scope's archive
   and one that does not exist are the same `not_found`, word for word.
4. The file is read (a worker thread) only when the mode needs it, and rendered bounded
   (query.py).
"""

from __future__ import annotations

import trio

from vigil.daemon.settings import Settings
from vigil.daemon.store import Store
from vigil.daemon.store.records import ArchiveEntry
from vigil.protocol.api.agent import AgentParams
from vigil.protocol.api.trace import TraceData, TurnSummary, parse_archive_ref, parse_trace_key
from vigil.protocol.errors import ErrorCode, VigilError, invalid_request

from . import query
from .builder import ArchiveBuilder, CatalogWriter
from .files import ArchiveFiles
from .format import ArchiveFormatError, parse

NO_SUCH_ARCHIVE = "no such archive in this scope"


def _absent(field: str) -> VigilError:
    return VigilError(ErrorCode.NOT_FOUND, NO_SUCH_ARCHIVE, {"field": field})


def check_trace_params(params: AgentParams) -> None:
    """Validate a `get_trace` request whole (raises `invalid_request` naming the field)."""
    if (params.archive_ref is None) == (params.trace_key is None):
        raise invalid_request("give exactly one of archive_ref or trace_key", "params.archive_ref")
    if params.archive_ref is not None and parse_archive_ref(params.archive_ref) is None:
        raise invalid_request("archive_ref must be 32 lowercase hexadecimal characters "
                              "(a UUIDv4 without hyphens)", "params.archive_ref")
    if params.trace_key is not None and parse_trace_key(params.trace_key) is None:
        raise invalid_request("trace_key must be {execution_id}:{turn} (32 lowercase "
                              "hexadecimal characters, a colon, a turn number from 1)",
                              "params.trace_key")
    if params.from_seq is not None and params.from_seq < 1:
        raise invalid_request("from_seq must be 1 or more", "params.from_seq")


class TraceService:
    def __init__(self, store: Store, files: ArchiveFiles, builder: ArchiveBuilder,
                 writer: CatalogWriter, settings: Settings):
        self.store = store
        self.files = files
        self.builder = builder
        self.writer = writer
        self.settings = settings

    async def get_trace(self, scope: str, params: AgentParams) -> TraceData:
        """The archive `params` names, at the mode it asks for (validated already by
        `check_trace_params`, which the dispatcher runs before admission)."""
        check_trace_params(params)
        await self.writer.flush()
        if params.archive_ref is not None:
            ref, field = parse_archive_ref(params.archive_ref), "params.archive_ref"
            entry = await trio.to_thread.run_sync(self.store.get_archive, scope, ref)
        else:
            (eid, turn), field = parse_trace_key(params.trace_key), "params.trace_key"
            entry = await trio.to_thread.run_sync(self.store.get_turn_archive, scope, eid, turn)
        if entry is None:
            raise _absent(field)
        mode, _ = query.mode_of(params.mode)
        return await trio.to_thread.run_sync(self._render, entry, params.mode,
                                             params.from_seq or 1, query.needs_file(entry, mode))

    def _render(self, entry: ArchiveEntry, mode: str | None, from_seq: int,
                read: bool) -> TraceData:
        archive = None
        if read:
            found = self.files.read(entry.archive_ref)
            if found is None:
                raise VigilError(ErrorCode.NOT_FOUND,
                                 "the archive's file is missing (removed outside vigil?)",
                                 {"archive_ref": entry.archive_ref})
            try:
                archive = parse(found[0])
            except ArchiveFormatError as exc:
                raise VigilError(ErrorCode.STORAGE_ERROR, f"the archive's file is damaged: {exc}",
                                 {"archive_ref": entry.archive_ref}) from None
        return query.render(entry, archive, mode, from_seq, self.settings)

    # --- the model-context projection ------------------------------------------------------------

    async def latest_summary(self, scope: str, execution_id: str) -> TurnSummary | None:
        """The summary of the execution's latest turn: the one being archived now, else the
        latest in the catalog (committed, or left open by a stopped daemon)."""
        current = self.builder.current(execution_id)
        if current is not None and current.scope == scope:
            return current.summary()
        await self.writer.flush()
        entry = await trio.to_thread.run_sync(self.store.latest_turn_archive, scope, execution_id)
        return None if entry is None else await self._summary(entry)

    async def summary_of(self, scope: str, execution_id: str, ref: str) -> TurnSummary | None:
        """The summary of the execution's archive `ref` (the turn a receipt names), as it
        stands."""
        current = self.builder.current(execution_id)
        if current is not None and current.ref == ref and current.scope == scope:
            return current.summary()
        await self.writer.flush()
        entry = await trio.to_thread.run_sync(self.store.get_archive, scope, ref)
        return None if entry is None else await self._summary(entry)

    async def _summary(self, entry: ArchiveEntry) -> TurnSummary | None:
        if entry.summary is not None:
            return entry.summary
        try:
            data = await trio.to_thread.run_sync(self._render, entry, "summary", 1, True)
        except VigilError:
            return None
        return data.summary
