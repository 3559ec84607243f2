"""`Execution` observe, wait and explain (seeds/000: "Observe several executions in one
call", "Wait for changes across executions", "List, inspect, and explain").

- observe validates the whole request before touching history, refreshes each distinct
  execution once (everything pending is committed), then reads all metadata and pages in
  one catalog transaction. Item failures stay on their item.
- wait is woken by the lifecycle bus, never by polling the store on a timer; outcomes
  `changed`, `timeout` and `resync` are distinct.
- explain evaluates the chosen recognizer over the complete screen.
"""

from __future__ import annotations

import math
from typing import Any

import msgspec
import trio

from vigil.daemon.recognize import Registry
from vigil.daemon.store import (
    Store,
    decode_catalog_cursor,
    encode_catalog_cursor,
    parse_execution_id,
    read_output_page,
    read_screen_page,
)
from vigil.protocol.errors import ErrorCode, VigilError, invalid_request
from vigil.protocol.api.execution import ExecutionResult, ExplainAction, ObserveAction, WaitAction
from vigil.daemon.settings import Settings

from ..runtime.lifecycle import LifecycleBus
from ..recognize.live import recognition_input
from ..runtime.manager import RuntimeManager
from ..rpc.views import recovery_of


def compact(rec) -> dict[str, Any]:
    return {"execution_id": rec.execution_id, "status": rec.status, "exit_code": rec.exit_code,
            "signal": rec.signal, "recognized_state": rec.recognized_state,
            "generation": rec.generation, "observed_at_unix_ms": rec.observed_at_unix_ms,
            "output_pending": rec.output_pending, "output_total_bytes": rec.output_total_bytes}


def _page_dict(page, source: str) -> dict[str, Any]:
    out = msgspec.to_builtins(page)
    out["source"] = source
    return out


#: Which wait events a change entry satisfies.
def _events_of(entry) -> set[str]:
    what = entry.what
    if what == "output":
        return {"output"}
    if what == "exited":
        return {"exited", "state"}
    if what == "unknown":
        return {"unknown", "state"}
    if what == "state":
        return {"state"} | ({entry.state} if entry.state else set())
    return {"state"}


class Observer:
    def __init__(self, store: Store, runtimes: RuntimeManager, bus: LifecycleBus,
                 registry: Registry, settings: Settings):
        self.store = store
        self.runtimes = runtimes
        self.bus = bus
        self.registry = registry
        self.settings = settings

    def _timeout(self, timeout: float | None, default: float, maximum: float) -> float:
        """The request's timeout, validated (spec: finite, 0 through the maximum)."""
        if timeout is None:
            return default
        if not (math.isfinite(timeout) and 0 <= timeout <= maximum):
            raise invalid_request(f"timeout_seconds must be a finite number from 0 through "
                                  f"{maximum:g}", "params.action.timeout_seconds")
        return timeout

    def _budget(self, timeout: float) -> float:
        """Zero means one bounded look: it is granted `zero_deadline_budget_seconds` (250 ms)."""
        return timeout if timeout > 0 else self.settings.zero_deadline_budget_seconds

    # --- observe -------------------------------------------------------------------------------

    async def observe(self, scope: str, action: ObserveAction) -> ExecutionResult:
        s = self.settings
        items = action.items
        if not 1 <= len(items) <= s.observe_items_max:
            raise invalid_request(f"items must hold 1 to {s.observe_items_max} entries, got {len(items)}",
                       "params.action.items")
        seen, total, ids = set(), 0, []
        for i, item in enumerate(items):
            try:
                eid = parse_execution_id(item.execution_id)
            except VigilError as exc:
                raise invalid_request(exc.message, f"params.action.items[{i}].execution_id") from None
            size = s.observe_page_bytes_default if item.page_bytes is None else item.page_bytes
            if not s.observe_page_bytes_min <= size <= s.observe_page_bytes_max:
                raise invalid_request(f"page_bytes must be from {s.observe_page_bytes_min} to "
                           f"{s.observe_page_bytes_max}, got {size}",
                           f"params.action.items[{i}].page_bytes")
            total += size
            if (eid, item.source) in seen:
                raise invalid_request(f"duplicate execution/source pair ({eid}, {item.source})",
                           f"params.action.items[{i}]")
            seen.add((eid, item.source))
            ids.append((eid, size))
        if total > s.observe_total_bytes_max:
            raise invalid_request(f"the page sizes add up to {total} bytes; at most "
                       f"{s.observe_total_bytes_max} are allowed", "params.action.items")
        budget = self._budget(self._timeout(action.timeout_seconds, s.observe_deadline_default,
                                            s.observe_deadline_max))
        with trio.move_on_after(budget) as deadline:
            # Refresh: each distinct live execution's screen is taken now, then everything
            # pending (output, screens, states) is committed in one ingest round.
            for eid in {eid for eid, _ in ids}:
                live = self.runtimes.live.get(eid)
                if live is not None and live.screen is not None:
                    self.runtimes.screen_changed(live, live.screen.snapshot())
            await self.runtimes.ingest.flush()
            detections = {eid: self._detection_text(eid) for eid, _ in ids}
            result = await trio.to_thread.run_sync(self._read_all, scope, items, ids, detections)
        if deadline.cancelled_caught:
            raise VigilError(ErrorCode.TIMEOUT,
                             f"observe did not finish within its {budget:g} s deadline")
        return result

    def _detection_text(self, eid: str) -> str | None:
        live = self.runtimes.live.get(eid)
        if live is None or live.recognition is None or live.recognition.last_input is None:
            return None
        return "\n".join(line.rstrip() for line in live.recognition.last_input.lines).rstrip("\n")

    def _read_all(self, scope, items, ids, detections) -> ExecutionResult:
        out, issues = [], False
        with self.store.catalog() as view:
            for item, (eid, size) in zip(items, ids):
                entry: dict[str, Any] = {"execution_id": eid, "source": item.source,
                                         "errors": [], "status": "ok"}
                rec = view.get(scope, eid)
                if rec is None:
                    entry["errors"].append({"stage": "refresh", "code": "not_found",
                                            "message": "execution not found"})
                else:
                    entry["execution"] = compact(rec)
                    try:
                        if item.source == "output":
                            entry["page"] = _page_dict(
                                read_output_page(view, scope, eid, item.cursor, size), "output")
                        elif item.source == "screen":
                            entry["page"] = _page_dict(
                                read_screen_page(view, scope, eid, item.cursor, size), "screen")
                        else:
                            text = detections.get(eid)
                            if text is None:
                                snap = view.get_screen(scope, eid)
                                text = snap.text if snap else ""
                            data = text.encode()[:size].decode("utf-8", "ignore")
                            entry["page"] = {"source": "detection", "text": data,
                                             "has_more": len(text.encode()) > size}
                    except VigilError as exc:
                        entry["errors"].append({"stage": "read", "code": exc.code.value
                                                if isinstance(exc.code, ErrorCode) else exc.code,
                                                "message": exc.message})
                if entry["errors"]:
                    entry["status"] = "error"
                    issues = True
                out.append(entry)
            cursor = encode_catalog_cursor(self.store.mac_key, self.store.store_epoch, scope,
                                           view.latest_change_seq())
        data = {"items": out, "catalog_cursor": cursor}
        if issues:
            return ExecutionResult(status="completed_with_issues",
                                   code=ErrorCode.EXECUTION_OBSERVATION_ISSUES.value, data=data)
        return ExecutionResult(data=data)

    # --- wait -----------------------------------------------------------------------------------

    async def wait(self, scope: str, action: WaitAction) -> ExecutionResult:
        s = self.settings
        if not 1 <= len(action.execution_ids) <= s.wait_ids_max:
            raise invalid_request(f"execution_ids must hold 1 to {s.wait_ids_max} ids",
                       "params.action.execution_ids")
        ids = []
        for i, value in enumerate(action.execution_ids):
            try:
                ids.append(parse_execution_id(value))
            except VigilError as exc:
                raise invalid_request(exc.message, f"params.action.execution_ids[{i}]") from None
        timeout = self._timeout(action.timeout_seconds, s.wait_timeout_default, s.wait_timeout_max)
        wanted = set(action.events) if action.events else None
        store = self.store
        after = None
        if action.after is not None:
            after = decode_catalog_cursor(store.mac_key, action.after, store.store_epoch, scope)
        # Listen before the first look, so a change committed in between wakes us.
        waiter = self.bus.register(ids)
        try:
            with trio.move_on_after(self._budget(timeout)) as deadline:
                if after is None:
                    after = await trio.to_thread.run_sync(store.latest_change_seq)
                    if timeout == 0:
                        return self._wait_result(scope, "timeout", after, [], [])
                while True:
                    # A fresh event before each look: a change published during the look
                    # sets it, so nothing falls between the look and the sleep.
                    waiter.event = trio.Event()
                    changes = await trio.to_thread.run_sync(
                        lambda: store.changes_since(after, scope, ids))
                    if changes.resync_needed:
                        return self._wait_result(scope, "resync", changes.latest_seq, [], [])
                    hits = [e for e in changes.entries
                            if wanted is None or _events_of(e) & wanted]
                    if hits:
                        records = await trio.to_thread.run_sync(
                            lambda: [r for r in (store.get(scope, eid) for eid in
                                                 dict.fromkeys(e.execution_id for e in hits)) if r])
                        return self._wait_result(scope, "changed", changes.latest_seq, hits, records)
                    after = changes.latest_seq
                    if timeout == 0:
                        break
                    await waiter.event.wait()
            if deadline.cancelled_caught and after is None:
                raise VigilError(ErrorCode.TIMEOUT, "the catalog could not be observed in time")
            return self._wait_result(scope, "timeout", after, [], [])
        finally:
            self.bus.unregister(waiter)

    def _wait_result(self, scope, outcome, seq, entries, records) -> ExecutionResult:
        cursor = encode_catalog_cursor(self.store.mac_key, self.store.store_epoch, scope, seq)
        return ExecutionResult(data={
            "outcome": outcome, "catalog_cursor": cursor,
            "changes": [{"execution_id": e.execution_id, "what": e.what, "state": e.state,
                         "at_unix_ms": e.at_unix_ms, "events": sorted(_events_of(e))}
                        for e in entries],
            "executions": [compact(r) for r in records],
        })

    # --- explain --------------------------------------------------------------------------------

    async def explain(self, scope: str, action: ExplainAction) -> ExecutionResult:
        try:
            eid = parse_execution_id(action.execution_id)
        except VigilError as exc:
            raise invalid_request(exc.message, "params.action.execution_id") from None
        rec = await trio.to_thread.run_sync(self.store.get, scope, eid)
        if rec is None:
            from vigil.daemon.store import ExecutionNotFound

            raise ExecutionNotFound()
        live = self.runtimes.live.get(eid)
        self.registry.reload_if_changed()
        if live is not None and live.screen is not None:
            snap = live.screen.snapshot()
            inp = recognition_input(snap, rec.runtime.child_pid if rec.runtime else None)
            source = "live_screen"
            meta = {"screen_revision": snap.revision, "fidelity": snap.fidelity}
        else:
            stored = await trio.to_thread.run_sync(self.store.get_screen, scope, eid)
            from vigil.daemon.recognize import RecognitionInput

            lines = stored.text.split("\n") if stored else []
            inp = RecognitionInput(lines=lines, title=(stored.title or "") if stored else "",
                                   cursor=(stored.cursor_row, stored.cursor_col) if stored else (0, 0),
                                   exited=rec.status == "exited", exit_code=rec.exit_code)
            source = "persisted_screen"
            meta = {"screen_revision": stored.snapshot if stored else 0,
                    "fidelity": stored.fidelity if stored else "exact"}
        detection = self.registry.detect(action.recognizer, inp)
        data = msgspec.to_builtins(detection)
        data.update({
            "execution_id": eid, "detection_source": source, "recovery": recovery_of(rec),
            "reported_state": rec.recognized_state,
            "observation": dict(meta, observed_at_unix_ms=rec.observed_at_unix_ms,
                                foreground=inp.foreground, foreground_argv=list(inp.foreground_argv),
                                rows=len(inp.lines), errors=[str(e) for e in self.registry.errors]),
        })
        return ExecutionResult(data=data)
