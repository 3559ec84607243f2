"""Native prompts, submitted once per prompt id, with receipts (seeds/000, "Submit a
native prompt once").

Order of a submission, and why:
1. The receipt key is (execution, generation, prompt_id). A stored receipt with the same
   payload digest is returned as is — nothing is sent again, also after a daemon restart
   (receipts live in LMDB); a different payload is refused.
2. Readiness: the target is live and its recognizer says `awaiting_input` now.
3. The receipt is persisted as `uncertain` *before* the first byte is written, so a crash
   mid-send leaves an honest "uncertain", never a silent resend.
4. The text is written (inside bracketed paste when the program enabled DECSET 2004), then
   Enter as a separate write after `prompt_enter_settle_seconds` (Ink-based TUIs drop an
   Enter glued to the text). Both accepted by the guardian (it answers every numbered
   command) → `delivered`; the text refused whole (its input buffer is full, the child
   exited) → `refused`; no answer in time, or the text in and Enter refused → `uncertain`.
   A guardian too old to confirm (protocol v1) is refused up front: no silent fallback.
5. Activity is strict: only a recognizer detection of work (`busy`) or approval after the
   Enter counts. If the text itself resembles a work/approval marker of the manifest, echo
   could fake that, so activity stays `unconfirmed` for the receipt's lifetime.
6. The inline wait ends on a requested state reached *after* activity (a stale idle screen
   never satisfies it), on exit, on a generation change, or at the timeout.

`approve` (seeds/002, `POST /executions/:id/approve`) follows the same order for an
execution recognized as `awaiting_approval`: the keys its manifest names (`approve_keys`)
are pressed once per `approval_id`, behind a receipt persisted `uncertain` first; a repeat
of the id is answered from the receipt. Approval receipts live beside prompt receipts under
a key no prompt id can spell (`!approve/<id>`).
"""

from __future__ import annotations

import hashlib
import re

import msgspec
import trio

from vigil.daemon.recognize import Registry, marker_resembles
from vigil.daemon.store import ExecutionNotFound, Store, parse_execution_id
from vigil.protocol.api.agent import AgentParams, Receipt
from vigil.protocol.api.shell import PromptResult, TurnResult
from vigil.protocol.errors import ErrorCode, VigilError, invalid_request
from vigil.protocol.keys import key_bytes
from vigil.daemon.settings import Settings

from ..recognize.live import recognition_input
from ..telemetry.phases import phase
from ..runtime.manager import RuntimeManager
from ..archive.builder import ArchiveBuilder
from ..transcript.recorder import Recorder

_PROMPT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}")
#: Receipt-key prefix of approvals: '!' and '/' are outside _PROMPT_ID, so no prompt id
#: can collide with an approval id.
_APPROVAL_KEY = "!approve/"
_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(Receipt)
DEFAULT_WAIT_FOR = ["awaiting_input", "awaiting_approval", "exited"]


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


class _Watch:
    """Follows detections after the Enter and decides activity and the wait's condition."""

    def __init__(self, wait_for: list[str], resembles: bool, generation: int, live,
                 registry: Registry | None = None, recognizer: str = "auto",
                 strict: bool = True):
        #: strict: awaiting_input counts only after activity (a prompt's wait); not strict:
        #: any requested state ends it (a plain turn wait).
        self.strict = strict
        self.registry = registry
        self.recognizer = recognizer
        self.wait_for = set(wait_for)
        self.resembles = resembles
        self.generation = generation
        self.live = live
        self.activity = False
        self.condition: str | None = None
        self.changed = trio.Event()
        #: (archive ref, turn) of the agent turn the delivered text opened, when archived.
        self.archive: tuple[str, int] | None = None

    def _as_named(self, detection, inp):
        """`detection` as the recognizer the caller named judges `inp` (undebounced), with
        the kernel evidence auto's detection was made with; None when the caller asked for
        auto (its debounced report stands)."""
        if self.recognizer != "auto" and self.registry is not None and inp is not None:
            return self.registry.detect(self.recognizer, inp, detection.kernel)
        return None

    def on_detection(self, detection, reported: str | None, inp=None) -> None:
        named = self._as_named(detection, inp)
        if named is not None:
            detection, reported = named, named.state
        if self.live.record.generation != self.generation:
            self._decide("generation_changed")
            return
        if detection.state in ("busy", "awaiting_approval"):
            if not self.activity:
                self.activity = True
                self.changed.set()
        if detection.state == "awaiting_approval" and "awaiting_approval" in self.wait_for:
            self._decide("awaiting_approval")
        elif (reported == "awaiting_input" and (self.activity or not self.strict)
              and "awaiting_input" in self.wait_for):
            self._decide("awaiting_input")

    def _decide(self, condition: str) -> None:
        if self.condition is None:
            self.condition = condition
            self.changed.set()


def _verdict(watch: _Watch, delivery: str) -> tuple[str, str, str]:
    """(activity, its reason, condition) of a prompt once its wait ended."""
    if watch.activity and not watch.resembles:
        activity, reason = "confirmed", "work or approval observed after submission"
    elif watch.resembles:
        activity, reason = "unconfirmed", "the text resembles a work or approval marker"
    else:
        activity, reason = "unconfirmed", "no work or approval observed after submission"
    condition = watch.condition or ("timed_out" if delivery == "delivered" else "pending")
    return activity, reason, condition


class _LeftApproval(_Watch):
    """Watches detections after approve keys: the first state other than
    `awaiting_approval` (or `unknown`) is where the program went: the `condition`."""

    def __init__(self, live, registry: Registry, recognizer: str):
        super().__init__([], False, live.record.generation, live, registry, recognizer)

    def on_detection(self, detection, reported: str | None, inp=None) -> None:
        detection = self._as_named(detection, inp) or detection
        if detection.state not in ("awaiting_approval", "unknown"):
            self._decide(detection.state)


class PromptService:
    def __init__(self, store: Store, runtimes: RuntimeManager, registry: Registry,
                 settings: Settings, transcripts: Recorder | None = None,
                 archives: ArchiveBuilder | None = None):
        self.store = store
        self.runtimes = runtimes
        self.registry = registry
        self.settings = settings
        #: Told of every delivered prompt (a turn of the agent starts: `message.user`).
        self.transcripts = transcripts
        #: Names the archive of the turn a prompt opened (its receipt carries the ref).
        self.archives = archives

    def _validate(self, params: AgentParams, *, need_text: bool) -> tuple[str, str, float]:
        s = self.settings
        if not params.target:
            raise invalid_request("a native prompt needs an explicit target execution id", "params.target")
        try:
            eid = parse_execution_id(params.target)
        except VigilError as exc:
            raise invalid_request(exc.message, "params.target") from None
        if not params.prompt_id or not _PROMPT_ID.fullmatch(params.prompt_id):
            raise invalid_request("prompt_id is required: 1-128 characters of letters, digits and _.:-, "
                       "starting with a letter or digit", "params.prompt_id")
        if need_text:
            if params.text is None or not params.text:
                raise invalid_request("text is required", "params.text")
            size = len(params.text.encode("utf-8", "surrogateescape"))
            if size > s.prompt_text_max_bytes:
                raise invalid_request(f"text is {size} bytes; the limit is {s.prompt_text_max_bytes}",
                           "params.text")
        timeout = 10.0 if params.timeout_seconds is None else params.timeout_seconds
        if not 0 <= timeout <= s.prompt_wait_max_seconds:
            raise invalid_request(f"timeout_seconds must be from 0 through {s.prompt_wait_max_seconds:g}",
                       "params.timeout_seconds")
        return eid, params.prompt_id, timeout

    async def _record(self, scope: str, eid: str):
        rec = await trio.to_thread.run_sync(self.store.get, scope, eid)
        if rec is None:
            raise ExecutionNotFound()
        return rec

    async def _load(self, eid: str, generation: int, prompt_id: str) -> Receipt | None:
        with phase("catalog"):
            raw = await trio.to_thread.run_sync(self.store.get_receipt, eid, generation, prompt_id)
        return None if raw is None else _decoder.decode(raw)

    async def _save(self, receipt: Receipt) -> None:
        await trio.to_thread.run_sync(self.store.put_receipt, receipt.execution_id,
                                      receipt.generation, receipt.prompt_id, _encoder.encode(receipt))

    async def prompt(self, scope: str, params: AgentParams) -> tuple[Receipt, bool]:
        """Submit (or find) the receipt; returns (receipt, replayed)."""
        eid, prompt_id, timeout = self._validate(params, need_text=True)
        # Commit what is pending first (a shell's new generation, its latest output), so the
        # receipt binds to the generation that is current now, not one a moment old.
        await self.runtimes.ingest.flush()
        rec = await self._record(scope, eid)
        existing = await self._load(eid, rec.generation, prompt_id)
        if existing is not None:
            if existing.payload_digest != digest(params.text):
                raise VigilError(ErrorCode.CONFLICT,
                                 f"prompt_id {prompt_id!r} was already used with a different "
                                 "payload in this generation; choose a new prompt_id",
                                 {"prompt_id": prompt_id})
            return existing, True
        live, snap, detection = await self._ready(rec, params.recognizer)
        resembles = marker_resembles(params.text, self.registry.get(detection.recognizer))
        now = self.store.clock()
        wait_for = list(params.wait_for or DEFAULT_WAIT_FOR)
        receipt = Receipt(
            prompt_id=prompt_id, execution_id=eid, generation=rec.generation,
            runtime_id=rec.runtime.runtime_id if rec.runtime else "",
            payload_digest=digest(params.text), delivery="uncertain", activity="unconfirmed",
            activity_reason="not observed yet", condition="pending",
            bracketed_paste=snap.bracketed_paste, submitted_at_unix_ms=now,
            updated_at_unix_ms=now, recognizer=params.recognizer, wait_for=wait_for)
        await self._save(receipt)  # LIMIT_EXCEEDED past receipts_per_generation: nothing sent
        watch = _Watch(wait_for, resembles, rec.generation, live, self.registry,
                       params.recognizer)
        delivery, why = await self._deliver_and_wait(eid, live, snap, params.text, watch, timeout)
        receipt = self._conclude(receipt, watch, delivery, why)
        if watch.archive is not None:
            ref, turn = watch.archive
            receipt = msgspec.structs.replace(receipt, archive_ref=ref, trace_key=f"{eid}:{turn}")
        await self._save(receipt)
        self.runtimes.events.add(eid, "info" if delivery == "delivered" else "warn", "prompt",
                                 f"prompt {prompt_id}: {delivery}, activity {receipt.activity}, "
                                 f"then {receipt.condition}", prompt_id=prompt_id,
                                 delivery=delivery)
        return receipt, False

    async def _ready(self, rec, recognizer: str):
        """The target's live runtime, its current screen and detection, if it waits for
        input now; else `conflict` (not running), `unavailable` (a guardian that cannot
        confirm delivery) or `busy` (not waiting for input) — nothing sent in each case."""
        eid = rec.execution_id
        live = self.runtimes.live.get(eid)
        if live is None or live.screen is None or rec.is_terminal:
            raise VigilError(ErrorCode.CONFLICT, "the target is not running",
                             {"execution_id": eid, "status": rec.status})
        if live.link is not None and not live.link.confirms:
            # spec: a missing capability on an older guardian is explicit; no silent
            # fallback to unprotected raw input.
            raise VigilError(ErrorCode.UNAVAILABLE,
                             "the target's guardian (protocol v1) cannot confirm delivery, "
                             "which prompts need; restart the execution under this vigil",
                             {"execution_id": eid, "input_sent": False})
        snap, detection = await self._detect(rec, live, recognizer)
        if detection.state != "awaiting_input":
            raise VigilError(ErrorCode.BUSY,
                             f"the target is not ready for input: recognizer "
                             f"{detection.recognizer!r} says {detection.state!r}",
                             {"state": detection.state, "recognizer": detection.recognizer,
                              "rule": detection.rule, "input_sent": False})
        return live, snap, detection

    async def _detect(self, rec, live, recognizer: str):
        """The live screen, parsed up to now, and what `recognizer` says about it (with a
        fresh look at the kernel where the screen alone does not decide)."""
        keeper = live.screen.keeper
        keeper.catch_up()
        snap = keeper.snapshot()
        self.registry.reload_if_changed()
        inp = recognition_input(snap, rec.runtime.child_pid if rec.runtime else None)
        if live.recognition is not None:
            return snap, await live.recognition.judge(recognizer, inp)
        return snap, self.registry.detect(recognizer, inp)

    async def _deliver_and_wait(self, eid: str, live, snap, text: str, watch: _Watch,
                                timeout: float) -> tuple[str, str | None]:
        """Write the text (bracketed when the program asked for it), then Enter, then wait
        for `watch` to decide; returns (delivery, why not delivered)."""
        data = text.encode("utf-8", "surrogateescape")
        body = b"\x1b[200~" + data + b"\x1b[201~" if snap.bracketed_paste else data
        delivery, why = "uncertain", None
        try:
            try:
                with phase("native_prompt_rpc"):
                    await self.runtimes.send_input(eid, body)
            except VigilError as exc:
                # The guardian refused the text whole (nothing of it was written), or did
                # not answer in time (it may still write it: uncertain, never resent).
                refused = exc.code not in (ErrorCode.TIMEOUT, ErrorCode.BUSY)
                delivery, why = ("refused" if refused else "uncertain"), exc.message
                raise
            if self.transcripts is not None:
                # The text passed vigil's seam: the turn starts with it (before Enter, so the
                # agent's own account of the prompt always follows it in the transcript).
                self.transcripts.prompt_delivered(eid, text)
                turn = self.archives.current(eid) if self.archives is not None else None
                if turn is not None:
                    watch.archive = (turn.ref, turn.turn)
            await trio.sleep(self.settings.prompt_enter_settle_seconds)
            if live.recognition is not None:
                live.recognition.listeners.append(watch.on_detection)
            try:
                with phase("native_prompt_rpc"):
                    await self.runtimes.send_input(eid, b"\r")
            except VigilError as exc:
                # The text is in; whether Enter followed is not known for sure.
                why = f"the text was accepted but Enter was not: {exc.message}"
                raise
            delivery = "delivered"
        except VigilError:
            pass
        try:
            if delivery == "delivered":
                await self._wait(watch, live, timeout)
        finally:
            if live.recognition is not None and watch.on_detection in live.recognition.listeners:
                live.recognition.listeners.remove(watch.on_detection)
        return delivery, why

    async def _wait(self, watch: _Watch, live, timeout: float) -> None:
        with phase("wait_sleep"), trio.move_on_after(timeout):
            async with trio.open_nursery() as nursery:
                async def ended():
                    await live.done.wait()
                    watch._decide("exited")
                nursery.start_soon(ended)
                while watch.condition is None:
                    watch.changed = trio.Event()
                    await watch.changed.wait()
                nursery.cancel_scope.cancel()

    def _conclude(self, receipt: Receipt, watch: _Watch, delivery: str, why: str | None) -> Receipt:
        activity, reason, condition = _verdict(watch, delivery)
        return msgspec.structs.replace(receipt, delivery=delivery, delivery_reason=why,
                                       activity=activity, activity_reason=reason,
                                       condition=condition, updated_at_unix_ms=self.store.clock())

    # --- approvals ------------------------------------------------------------------------------

    async def approve(self, scope: str, params: AgentParams) -> tuple[Receipt, bool, list[str]]:
        """Press the manifest's approve keys once per approval id: (receipt, replayed, keys).

        Raises:
            VigilError: `invalid_request` (target, approval_id, timeout), `not_found`,
                `conflict` (not running, or not awaiting approval now: nothing sent),
                `unavailable` (the recognizer names no approve keys, or the guardian cannot
                confirm delivery).
        """
        if params.backend != "native":
            raise invalid_request("approve is a native action: Herdr targets are answered "
                                  "in Herdr", "params.backend")
        if not params.approval_id or not _PROMPT_ID.fullmatch(params.approval_id):
            raise invalid_request("approval_id is required: 1-128 characters of letters, "
                                  "digits and _.:-, starting with a letter or digit",
                                  "params.approval_id")
        eid, _, timeout = self._validate(
            msgspec.structs.replace(params, prompt_id=params.approval_id), need_text=False)
        key = _APPROVAL_KEY + params.approval_id
        await self.runtimes.ingest.flush()
        rec = await self._record(scope, eid)
        existing = await self._load(eid, rec.generation, key)
        if existing is not None:
            return (msgspec.structs.replace(existing, prompt_id=params.approval_id), True,
                    list(existing.wait_for))
        live = self.runtimes.live.get(eid)
        if live is None or live.screen is None or rec.is_terminal:
            raise VigilError(ErrorCode.CONFLICT, "the target is not running",
                             {"execution_id": eid, "status": rec.status})
        snap, detection = await self._detect(rec, live, params.recognizer)
        if detection.state != "awaiting_approval":
            raise VigilError(ErrorCode.CONFLICT,
                             f"the target is not awaiting approval: recognizer "
                             f"{detection.recognizer!r} says {detection.state!r}",
                             {"state": detection.state, "recognizer": detection.recognizer,
                              "input_sent": False})
        keys = list(self.registry.get(detection.recognizer).approve_keys)
        if not keys:
            raise VigilError(ErrorCode.UNAVAILABLE,
                             f"recognizer {detection.recognizer!r} names no approve keys "
                             "(approve_keys in its manifest)",
                             {"recognizer": detection.recognizer, "input_sent": False})
        now = self.store.clock()
        receipt = Receipt(
            prompt_id=key, execution_id=eid, generation=rec.generation,
            runtime_id=rec.runtime.runtime_id if rec.runtime else "",
            payload_digest=digest(" ".join(keys)), delivery="uncertain",
            activity="unconfirmed", activity_reason="not observed yet", condition="pending",
            bracketed_paste=snap.bracketed_paste, submitted_at_unix_ms=now,
            updated_at_unix_ms=now, recognizer=params.recognizer, wait_for=keys)
        await self._save(receipt)  # LIMIT_EXCEEDED past receipts_per_generation: nothing sent
        left = _LeftApproval(live, self.registry, params.recognizer)
        if live.recognition is not None:
            live.recognition.listeners.append(left.on_detection)
        delivery, why = "uncertain", None
        try:
            try:
                with phase("native_prompt_rpc"):
                    await self.runtimes.send_input(eid, b"".join(key_bytes(k) for k in keys))
                delivery = "delivered"
            except VigilError as exc:
                refused = exc.code not in (ErrorCode.TIMEOUT, ErrorCode.BUSY)
                delivery, why = ("refused" if refused else "uncertain"), exc.message
            if delivery == "delivered":
                await self._wait(left, live, timeout)
        finally:
            if live.recognition is not None and left.on_detection in live.recognition.listeners:
                live.recognition.listeners.remove(left.on_detection)
        confirmed = left.condition is not None
        receipt = msgspec.structs.replace(
            receipt, delivery=delivery, delivery_reason=why,
            activity="confirmed" if confirmed else "unconfirmed",
            activity_reason="the approval prompt went away after the keys" if confirmed
            else "the program still asks for approval",
            condition=left.condition or ("timed_out" if delivery == "delivered" else "pending"),
            updated_at_unix_ms=self.store.clock())
        await self._save(receipt)
        self.runtimes.events.add(eid, "info" if delivery == "delivered" else "warn", "approve",
                                 f"approval {params.approval_id}: pressed {' '.join(keys)} "
                                 f"({delivery}; then {receipt.condition})",
                                 approval_id=params.approval_id, delivery=delivery)
        return msgspec.structs.replace(receipt, prompt_id=params.approval_id), False, keys

    # --- BashCommand's generic prompt and turn wait ------------------------------------------

    async def submit(self, scope: str, eid: str, text: str, *, recognizer: str,
                     wait_for: list[str] | None, timeout: float) -> PromptResult:
        """Type `text` and Enter into `eid` when it waits for input, then wait (strictly:
        activity first) for its turn. The same delivery and activity rules as a native
        prompt, without a receipt: nothing is stored, nothing deduplicated."""
        await self.runtimes.ingest.flush()
        rec = await self._record(scope, eid)
        live, snap, detection = await self._ready(rec, recognizer)
        resembles = marker_resembles(text, self.registry.get(detection.recognizer))
        watch = _Watch(list(wait_for or DEFAULT_WAIT_FOR), resembles, rec.generation, live,
                       self.registry, recognizer)
        delivery, why = await self._deliver_and_wait(eid, live, snap, text, watch, timeout)
        activity, reason, condition = _verdict(watch, delivery)
        self.runtimes.events.add(eid, "info" if delivery == "delivered" else "warn", "prompt",
                                 f"prompt (no receipt): {delivery}, activity {activity}, "
                                 f"then {condition}", delivery=delivery)
        return PromptResult(execution_id=eid, generation=rec.generation, delivery=delivery,
                            activity=activity, activity_reason=reason, condition=condition,
                            bracketed_paste=snap.bracketed_paste,
                            effective_timeout_seconds=timeout, delivery_reason=why)

    async def wait_for_turn(self, scope: str, eid: str, *, recognizer: str,
                            wait_for: list[str] | None, timeout: float) -> TurnResult:
        """Until `eid` reaches a `wait_for` state (at once if it already has: no activity
        is needed), exits, or `timeout` passes. With `auto`, the reported (debounced) state
        decides, as `list` and `wait` see it; a named recognizer judges each screen."""
        states = list(wait_for or DEFAULT_WAIT_FOR)
        await self.runtimes.ingest.flush()
        rec = await self._record(scope, eid)
        live = self.runtimes.live.get(eid)

        def answer(condition: str, state: str) -> TurnResult:
            return TurnResult(execution_id=eid, generation=rec.generation, condition=condition,
                              state=state, recognizer=recognizer, effective_timeout_seconds=timeout,
                              wait_for=states)

        if live is None or live.screen is None or rec.is_terminal:
            return answer("exited", "exited")
        _, detection = await self._detect(rec, live, recognizer)
        now = rec.recognized_state if recognizer == "auto" else detection.state
        if now in states:
            return answer(now, now)
        watch = _Watch(states, False, rec.generation, live, self.registry, recognizer,
                       strict=False)
        if live.recognition is not None:
            live.recognition.listeners.append(watch.on_detection)
        try:
            await self._wait(watch, live, timeout)
        finally:
            if live.recognition is not None and watch.on_detection in live.recognition.listeners:
                live.recognition.listeners.remove(watch.on_detection)
        condition = watch.condition or "timed_out"
        if condition == "exited":
            return answer("exited", "exited")
        _, detection = await self._detect(rec, live, recognizer)
        return answer(condition, live.record.recognized_state if recognizer == "auto"
                      else detection.state)

    async def wait_receipt(self, scope: str, params: AgentParams) -> Receipt:
        """Observe a receipt without sending anything (waiting up to timeout for it to settle)."""
        eid, prompt_id, timeout = self._validate(params, need_text=False)
        rec = await self._record(scope, eid)
        receipt = None
        for generation in range(rec.generation, -1, -1):
            receipt = await self._load(eid, generation, prompt_id)
            if receipt is not None:
                break
        if receipt is None:
            raise VigilError(ErrorCode.NOT_FOUND, "no receipt with that prompt_id for this target",
                             {"prompt_id": prompt_id})
        if receipt.condition in ("pending", "timed_out") and receipt.delivery == "delivered":
            live = self.runtimes.live.get(eid)
            if live is not None and live.record.generation != receipt.generation:
                receipt = msgspec.structs.replace(receipt, condition="generation_changed",
                                                  updated_at_unix_ms=self.store.clock())
                await self._save(receipt)
            elif live is None:
                receipt = msgspec.structs.replace(receipt, condition="exited",
                                                  updated_at_unix_ms=self.store.clock())
                await self._save(receipt)
            elif timeout > 0 and live.recognition is not None:
                watch = _Watch(receipt.wait_for or DEFAULT_WAIT_FOR, False, receipt.generation, live,
                               self.registry, receipt.recognizer)
                watch.activity = receipt.activity == "confirmed"
                live.recognition.listeners.append(watch.on_detection)
                try:
                    await self._wait(watch, live, timeout)
                finally:
                    live.recognition.listeners.remove(watch.on_detection)
                if watch.condition is not None:
                    receipt = msgspec.structs.replace(
                        receipt, condition=watch.condition,
                        activity="confirmed" if watch.activity and receipt.activity_reason !=
                        "the text resembles a work or approval marker" else receipt.activity,
                        updated_at_unix_ms=self.store.clock())
                    await self._save(receipt)
        return receipt
