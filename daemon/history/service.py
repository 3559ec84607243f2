"""The `Execution` service: list, get, read, observe, wait and explain (seeds/000: "List,
inspect, and explain", "Read bounded output pages", "Observe several executions in one
call", "Wait for changes across executions").

- Every request is validated whole by `validate` *before* session admission or history
  access (the dispatcher calls it first), so a bad request with a bad thread is
  `invalid_request`, never `not_found`.
- observe refreshes each distinct execution once (its live screen taken, everything pending
  committed), then reads all metadata and pages in one catalog transaction. Item failures
  stay on their item.
- wait is woken by the lifecycle bus (history/longpoll.py), never by polling the store on
  a timer; outcomes `changed`, `timeout` and `resync` are distinct.
- explain evaluates the chosen recognizer over the complete screen.
- observe's and wait's one deadline runs from the moment the call was admitted to the
  dispatcher, so it covers admission, baseline catalog I/O and refresh.

Results are the protocol's typed Structs (`vigil.protocol.api.execution`).
"""

from __future__ import annotations

import math

import msgspec
import trio

from vigil.daemon.recognize import RecognitionInput, Registry
from vigil.daemon.recognize.live import recognition_input
from vigil.daemon.rpc.views import compact_view, execution_view, recovery_of
from vigil.daemon.runtime.lifecycle import LifecycleBus
from vigil.daemon.runtime.manager import RuntimeManager
from vigil.daemon.settings import Settings
from vigil.daemon.transcript.agents import AgentLogs
from vigil.daemon.store import (
    ChangeEntry,
    ExecutionNotFound,
    ExecutionRecord,
    Store,
    decode_catalog_cursor,
    encode_catalog_cursor,
    parse_execution_id,
    read_output_page,
    read_screen_page,
)
from vigil.protocol.api.execution import (
    AgentLogView,
    Change,
    DetectionSummary,
    ExecutionAction,
    ExecutionResult,
    ExplainAction,
    ExplainData,
    GetAction,
    GetData,
    ItemError,
    ListAction,
    ListData,
    Observation,
    ObserveAction,
    ObserveData,
    ObservedItem,
    Page,
    ReadAction,
    ReadData,
    WaitAction,
    WaitData,
)
from vigil.protocol.errors import ErrorCode, VigilError, invalid_request
from vigil.protocol.settings import omitted_wait

from ..telemetry.phases import phase
from .longpoll import poll_until


def _events_of(entry: ChangeEntry) -> list[str]:
    """The wait events a change entry satisfies."""
    what = entry.what
    if what == "output":
        return ["output"]
    if what in ("exited", "unknown"):
        return sorted({what, "state"})
    if what == "state":
        return sorted({"state"} | ({entry.state} if entry.state else set()))
    return ["state"]


def _execution_id(value: str, field: str) -> str:
    try:
        return parse_execution_id(value)
    except VigilError as exc:
        raise invalid_request(exc.message, field) from None


class ExecutionService:
    def __init__(self, store: Store, runtimes: RuntimeManager, bus: LifecycleBus,
                 registry: Registry, settings: Settings, agent_logs: AgentLogs | None = None):
        self.store = store
        self.runtimes = runtimes
        self.bus = bus
        self.registry = registry
        self.settings = settings
        #: The transcript's followers of agents' own logs (what explain says of them).
        self.agent_logs = agent_logs

    # --- validation (before admission) ------------------------------------------------------

    def validate(self, action: ExecutionAction, where: str = "params.action") -> None:
        """Check the whole request; raises `invalid_request` naming the field. Runs before
        the caller's thread is even looked up."""
        s = self.settings
        if isinstance(action, ListAction):
            if action.limit is not None and not 1 <= action.limit <= s.list_limit_max:
                raise invalid_request(f"limit must be between 1 and {s.list_limit_max}, got "
                                      f"{action.limit}", f"{where}.limit")
        elif isinstance(action, (GetAction, ExplainAction)):
            _execution_id(action.execution_id, f"{where}.execution_id")
        elif isinstance(action, ReadAction):
            _execution_id(action.execution_id, f"{where}.execution_id")
            if not (math.isfinite(action.wait_seconds) and
                    0 <= action.wait_seconds <= s.wait_timeout_max):
                raise invalid_request(f"wait_seconds must be between 0 and {s.wait_timeout_max:g}",
                                      f"{where}.wait_seconds")
        elif isinstance(action, ObserveAction):
            self._observe_sizes(action, where)
            self._timeout(action.timeout_seconds, s.observe_deadline_default,
                          s.observe_deadline_max, f"{where}.timeout_seconds")
        elif isinstance(action, WaitAction):
            if not 1 <= len(action.execution_ids) <= s.wait_ids_max:
                raise invalid_request(f"execution_ids must hold 1 to {s.wait_ids_max} ids",
                                      f"{where}.execution_ids")
            for i, value in enumerate(action.execution_ids):
                _execution_id(value, f"{where}.execution_ids[{i}]")
            self._timeout(action.timeout_seconds, s.wait_timeout_default, s.wait_timeout_max,
                          f"{where}.timeout_seconds")

    def _observe_sizes(self, action: ObserveAction, where: str) -> list[tuple[str, int]]:
        s = self.settings
        items = action.items
        if not 1 <= len(items) <= s.observe_items_max:
            raise invalid_request(f"items must hold 1 to {s.observe_items_max} entries, got "
                                  f"{len(items)}", f"{where}.items")
        seen, total, ids = set(), 0, []
        for i, item in enumerate(items):
            eid = _execution_id(item.execution_id, f"{where}.items[{i}].execution_id")
            size = s.observe_page_bytes_default if item.page_bytes is None else item.page_bytes
            if not s.observe_page_bytes_min <= size <= s.observe_page_bytes_max:
                raise invalid_request(f"page_bytes must be from {s.observe_page_bytes_min} to "
                                      f"{s.observe_page_bytes_max}, got {size}",
                                      f"{where}.items[{i}].page_bytes")
            total += size
            if (eid, item.source) in seen:
                raise invalid_request(f"duplicate execution/source pair ({eid}, {item.source})",
                                      f"{where}.items[{i}]")
            seen.add((eid, item.source))
            ids.append((eid, size))
        if total > s.observe_total_bytes_max:
            raise invalid_request(f"the page sizes add up to {total} bytes; at most "
                                  f"{s.observe_total_bytes_max} are allowed", f"{where}.items")
        return ids

    @staticmethod
    def _timeout(timeout: float | None, default: float, maximum: float, field: str) -> float:
        """The request's timeout, validated (spec: finite, 0 through the maximum)."""
        if timeout is None:
            return default
        if not (math.isfinite(timeout) and 0 <= timeout <= maximum):
            raise invalid_request(f"timeout_seconds must be a finite number from 0 through "
                                  f"{maximum:g}", field)
        return timeout

    def _budget(self, timeout: float) -> float:
        """Zero means one bounded look: it is granted `zero_deadline_budget_seconds` (250 ms)."""
        return timeout if timeout > 0 else self.settings.zero_deadline_budget_seconds

    # --- helpers --------------------------------------------------------------------------------

    def _pending(self, rec: ExecutionRecord) -> bool:
        return self.runtimes.output_pending(rec)

    async def _record(self, scope: str, eid: str) -> ExecutionRecord:
        with phase("catalog"):
            rec = await trio.to_thread.run_sync(self.store.get, scope, eid)
        if rec is None:
            raise ExecutionNotFound()
        return rec

    async def _refresh(self, eids) -> None:
        """Take each live execution's current screen, then commit everything pending, so the
        reads that follow see the present (observe's one refresh; screen reads)."""
        with phase("runtime_inspection"):
            for eid in set(eids):
                live = self.runtimes.live.get(eid)
                if live is not None and live.screen is not None:
                    self.runtimes.screen_changed(live, live.screen.snapshot())
            await self.runtimes.ingest.flush()

    def _detection(self, rec: ExecutionRecord) -> DetectionSummary | None:
        """What the live recognizer concluded last; for an ended execution, its last
        reported state (the recognizer that decided it is not running any more)."""
        live = self.runtimes.live.get(rec.execution_id)
        if live is not None and live.recognition is not None and live.recognition.last_detection:
            d = live.recognition.last_detection
            return DetectionSummary(recognizer=d.recognizer, state=d.state, rule=d.rule)
        if rec.recognized_state is not None:
            return DetectionSummary(recognizer="auto", state=rec.recognized_state)
        return None

    def _read_page(self, view, scope: str, rec: ExecutionRecord, source: str,
                   cursor: str | None, size: int | None) -> Page:
        eid = rec.execution_id
        if source == "output":
            return read_output_page(view, scope, eid, cursor, size, pending=self._pending(rec))
        detection = self._detection(rec) if source == "detection" else None
        return read_screen_page(view, scope, eid, cursor, size, source=source, detection=detection)

    # --- list and get ---------------------------------------------------------------------------

    async def list(self, scope: str, action: ListAction) -> ExecutionResult[ListData]:
        limit = action.limit if action.limit is not None else self.settings.list_limit_default
        with phase("catalog"):
            listing = await trio.to_thread.run_sync(self.store.list, scope, limit,
                                                    action.offset)
        budget = self.settings.view_list_command_bytes
        return ExecutionResult(data=ListData(
            executions=[execution_view(r, command_bytes=budget, pending=self._pending(r))
                        for r in listing.records],
            total=listing.total,
            catalog_cursor=encode_catalog_cursor(self.store.mac_key, self.store.store_epoch,
                                                 scope, listing.change_seq),
            retention_records=self.settings.retention_records_per_scope,
            retention_shell_commands=self.settings.retention_shell_commands_per_scope))

    async def get(self, scope: str, action: GetAction) -> ExecutionResult[GetData]:
        rec = await self._record(scope, action.execution_id)
        return ExecutionResult(data=GetData(
            execution=execution_view(rec, command_bytes=self.settings.view_get_command_bytes,
                                     pending=self._pending(rec)),
            recovery=recovery_of(rec),
            env=rec.env if action.include_env else None))

    # --- read -----------------------------------------------------------------------------------

    async def read(self, scope: str, action: ReadAction) -> ExecutionResult[ReadData]:
        eid = action.execution_id
        if action.source != "output":
            await self._refresh([eid])

        def read() -> Page:
            with self.store.catalog() as view:
                rec = view.get(scope, eid)
                if rec is None:
                    raise ExecutionNotFound()
                return self._read_page(view, scope, rec, action.source, action.cursor,
                                       action.page_bytes)

        with phase("catalog"):
            page = await trio.to_thread.run_sync(read)
        if action.wait_seconds > 0 and not page.text and page.has_more and action.source == "output":
            # Long poll (vigil extension): until text, the end, or time.
            async def look() -> Page | None:
                with phase("catalog"):
                    p = await trio.to_thread.run_sync(read)
                return p if p.text or not p.has_more else None

            page = await poll_until(self.bus, [eid], look, action.wait_seconds) or page
        return ExecutionResult(data=ReadData(page=page))

    # --- observe --------------------------------------------------------------------------------

    async def observe(self, scope: str, action: ObserveAction, started: float
                      ) -> ExecutionResult[ObserveData]:
        """Compact status and a page per item; `started` is the trio time the call was
        admitted at (the deadline runs from it)."""
        s = self.settings
        ids = self._observe_sizes(action, "params.action")
        budget = self._budget(self._timeout(action.timeout_seconds, s.observe_deadline_default,
                                            s.observe_deadline_max, "params.action.timeout_seconds"))
        with trio.move_on_after(max(0.0, started + budget - trio.current_time())) as deadline:
            await self._refresh(eid for eid, _ in ids)
            with phase("catalog"):
                result = await trio.to_thread.run_sync(self._read_all, scope, action, ids)
        if deadline.cancelled_caught:
            raise VigilError(ErrorCode.TIMEOUT,
                             f"observe did not finish within its {budget:g} s deadline")
        return result

    def _read_all(self, scope: str, action: ObserveAction, ids) -> ExecutionResult[ObserveData]:
        out: list[ObservedItem] = []
        with self.store.catalog() as view:
            for item, (eid, size) in zip(action.items, ids):
                errors: list[ItemError] = []
                compact = page = None
                rec = view.get(scope, eid)
                if rec is None:
                    errors.append(ItemError(stage="refresh", code=ErrorCode.NOT_FOUND,
                                            message="execution not found"))
                else:
                    compact = compact_view(rec, pending=self._pending(rec))
                    try:
                        page = self._read_page(view, scope, rec, item.source, item.cursor, size)
                    except VigilError as exc:
                        errors.append(ItemError(stage="read", code=exc.code, message=exc.message))
                out.append(ObservedItem(execution_id=eid, source=item.source,
                                        status="error" if errors else "ok", errors=errors,
                                        execution=compact, page=page))
            cursor = encode_catalog_cursor(self.store.mac_key, self.store.store_epoch, scope,
                                           view.latest_change_seq())
        data = ObserveData(items=out, catalog_cursor=cursor)
        if any(item.errors for item in out):
            return ExecutionResult(status="completed_with_issues",
                                   code=ErrorCode.EXECUTION_OBSERVATION_ISSUES, data=data)
        return ExecutionResult(data=data)

    # --- wait -----------------------------------------------------------------------------------

    async def wait(self, scope: str, action: WaitAction, started: float,
                   profile: str = "local") -> ExecutionResult[WaitData]:
        """`profile` is the caller's wait profile: an omitted timeout takes its default
        (5 s; 50 s for ChatGPT/Codex HTTP, capped at the maximum); an explicit one is
        never raised. The answer reports the timeout and events applied."""
        s = self.settings
        ids = list(dict.fromkeys(action.execution_ids))
        timeout = self._timeout(action.timeout_seconds,
                                omitted_wait(s, profile, s.wait_timeout_default, s.wait_timeout_max),
                                s.wait_timeout_max, "params.action.timeout_seconds")
        wanted = set(action.events) if action.events else None
        store = self.store
        after = None
        if action.after is not None:
            after = decode_catalog_cursor(store.mac_key, action.after, store.store_epoch, scope)

        def answer(outcome: str, seq: int, entries=(), records=()) -> ExecutionResult[WaitData]:
            return ExecutionResult(data=WaitData(
                outcome=outcome,
                catalog_cursor=encode_catalog_cursor(store.mac_key, store.store_epoch, scope, seq),
                changes=[Change(execution_id=e.execution_id, what=e.what, state=e.state,
                                at_unix_ms=e.at_unix_ms, events=_events_of(e)) for e in entries],
                executions=[compact_view(r, pending=self._pending(r)) for r in records],
                effective_timeout_seconds=timeout, events=action.events))

        position = [after]

        async def look() -> ExecutionResult[WaitData] | None:
            with phase("catalog"):
                return await _look()

        async def _look() -> ExecutionResult[WaitData] | None:
            if position[0] is None:
                position[0] = await trio.to_thread.run_sync(store.latest_change_seq)
                return None
            changes = await trio.to_thread.run_sync(
                lambda: store.changes_since(position[0], scope, ids))
            if changes.resync_needed:
                return answer("resync", changes.latest_seq)
            hits = [e for e in changes.entries if wanted is None or set(_events_of(e)) & wanted]
            if hits:
                records = await trio.to_thread.run_sync(
                    lambda: [r for r in (store.get(scope, eid) for eid in
                                         dict.fromkeys(e.execution_id for e in hits)) if r])
                return answer("changed", changes.latest_seq, hits, records)
            position[0] = changes.latest_seq
            return None

        remaining = max(0.0, started + self._budget(timeout) - trio.current_time())
        if timeout == 0:
            # One bounded catalog observation, no lifecycle wait.
            with trio.move_on_after(remaining):
                return await look() or answer("timeout", position[0])
            raise VigilError(ErrorCode.TIMEOUT, "the catalog could not be observed in time")
        found = await poll_until(self.bus, ids, look, remaining)
        if found is not None:
            return found
        if position[0] is None:
            raise VigilError(ErrorCode.TIMEOUT, "the catalog could not be observed in time")
        return answer("timeout", position[0])

    # --- explain --------------------------------------------------------------------------------

    async def explain(self, scope: str, action: ExplainAction) -> ExecutionResult[ExplainData]:
        eid = action.execution_id
        rec = await self._record(scope, eid)
        live = self.runtimes.live.get(eid)
        self.registry.reload_if_changed()
        if live is not None and live.screen is not None:
            with phase("runtime_inspection"):
                snap = live.screen.snapshot()
                inp = recognition_input(snap, rec.runtime.child_pid if rec.runtime else None)
            source, revision, fidelity = "live_screen", snap.revision, snap.fidelity
        else:
            with phase("catalog"):
                stored = await trio.to_thread.run_sync(self.store.get_screen, scope, eid)
            lines = stored.text.split("\n") if stored else []
            inp = RecognitionInput(lines=lines, title=(stored.title or "") if stored else "",
                                   cursor=(stored.cursor_row, stored.cursor_col) if stored else (0, 0),
                                   exited=rec.status == "exited", exit_code=rec.exit_code)
            source = "persisted_screen"
            revision = stored.snapshot if stored else 0
            fidelity = stored.fidelity if stored else "exact"
        detection = self.registry.detect(action.recognizer, inp)
        return ExecutionResult(data=ExplainData(
            **msgspec.structs.asdict(detection),
            execution_id=eid, detection_source=source, recovery=recovery_of(rec),
            reported_state=rec.recognized_state,
            observation=Observation(
                screen_revision=revision, fidelity=fidelity,
                observed_at_unix_ms=rec.observed_at_unix_ms, foreground=inp.foreground,
                foreground_argv=list(inp.foreground_argv), rows=len(inp.lines),
                errors=[str(e) for e in self.registry.errors]),
            agent_log=self._agent_log(eid)))

    def _agent_log(self, eid: str) -> AgentLogView | None:
        status = self.agent_logs.status.get(eid) if self.agent_logs is not None else None
        return None if status is None else msgspec.convert(
            msgspec.structs.asdict(status), AgentLogView)
