"""The dispatch seam: every RPC call passes through `Dispatcher.dispatch`, and only there.

In order, for every call: the params are validated against the method registry's type (a
bad one is `invalid_request` naming the field); for a scoped method the thread is resolved
once from `(thread_id, workspace_root)` into `ctx.thread` (a mismatch reads exactly like a
thread that does not exist) and the route's declared authority is checked; then the handler
runs. Usage telemetry hangs here (`telemetry/`: every call's events, its phases timed
wherever they happen while it is current), and so do router-fidelity transcript events
(every scoped call's `tool.call` / `tool.result` in its thread's transcript, the call's
`usage_call_id` as their `tool_id`), so handlers stay plain functions of
`(context, params) -> typed result`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

import msgspec
import trio

from vigil.protocol.api.daemon import LOCAL_PRINCIPAL
from vigil.protocol.connection import ServerConnection
from vigil.protocol.errors import ErrorCode, VigilError
from vigil.protocol.methods import Method, lookup

from ..telemetry import phases
from ..telemetry.calls import CallUsage, new_call_id
from ..transcript.recorder import Recorder
from ..telemetry.usage_log import UsageLog
from . import authority
from .authority import Authority, Need
from .scopes import Scopes, ThreadRecord

log = logging.getLogger("vigild.dispatch")

#: Methods of the daemon about itself — liveness and health probes, not work — leave no
#: usage events: a monitor pinging every second would otherwise fill the log with nothing
#: about anyone's workflow. Every other call (the spec's tools, and vigil's own methods on
#: executions) is logged.
UNLOGGED_METHODS = frozenset({"hello", "ping", "status"})


@dataclass(slots=True)
class Peer:
    """Who is calling: from SO_PEERCRED, checked before a byte was read."""

    pid: int
    uid: int
    gid: int
    connection_id: int


@dataclass(slots=True)
class CallContext:
    """Everything a handler may know about the call besides its params."""

    peer: Peer
    method: str
    request_id: int | str | None
    #: The daemon-side connection (its negotiated protocol; encoding for pushed events).
    connection: ServerConnection | None = None
    #: `await send(frame)` on this call's connection (for handlers that push events).
    send: Any = None
    #: The caller's thread, resolved once by the dispatcher for every scoped method.
    thread: ThreadRecord | None = None
    #: trio time at which the dispatcher took the call (deadlines that must cover
    #: admission run from it).
    started: float = 0.0
    #: The call's `usage_call_id`: ties its usage events and its transcript tool events.
    call_id: str = ""
    extras: dict[str, Any] = field(default_factory=dict)

    @property
    def principal(self) -> str:
        """Whom the call acts for: the connection's principal (`hello`), `local` by default."""
        return self.connection.principal if self.connection is not None else LOCAL_PRINCIPAL

    @property
    def wait_profile(self) -> str:
        """Whose default an omitted wait takes (`hello`)."""
        return self.connection.wait_profile if self.connection is not None else "local"

    @property
    def scope(self) -> str:
        """The scope key of the caller's thread (scoped methods only)."""
        assert self.thread is not None, f"{self.method} is not a scoped method"
        return self.thread.scope


Handler = Callable[[CallContext, Any], Awaitable[Any]]


class _Answered:
    """Returned by a handler that already sent its answer itself (e.g. `attach`, which
    answers first and then streams events on the same call)."""


ANSWERED = _Answered()


@dataclass(frozen=True, slots=True)
class Route:
    method: Method
    handler: Handler
    #: What the route needs (declared at registration; see authority.py).
    authority: Authority
    #: Inline handlers run in the connection's reader task: no task spawn, pipelined order kept.
    #: Only for handlers that never wait on anything but a quick computation.
    inline: bool
    #: Checks the whole request before the thread is looked up (raises invalid_request).
    validate: Callable[[Any], None] | None = None


#: Methods that leave no router-fidelity transcript events: reading a transcript is not a
#: step of the workflow it reads (and following one would record itself).
UNRECORDED_METHODS = frozenset({"transcript"})


class Dispatcher:
    def __init__(self, scopes: Scopes, usage: UsageLog | None = None,
                 transcripts: Recorder | None = None) -> None:
        self._routes: dict[str, Route] = {}
        self._scopes = scopes
        self._usage = usage
        self._transcripts = transcripts

    def route(self, name: str, *, authority: Authority, inline: bool = False,
              validate: Callable[[Any], None] | None = None) -> Callable[[Handler], Handler]:
        """Register the handler of `name`. `authority` is required: a route that does not
        declare what it needs cannot be registered."""
        method = lookup(name)
        if method is None:
            raise KeyError(f"method {name!r} is not in the protocol registry")
        if not (isinstance(authority, Need) or callable(authority)):
            raise TypeError(f"method {name!r}: authority must be a Need or a function of "
                            f"the params, not {authority!r}")

        def register(handler: Handler) -> Handler:
            if name in self._routes:
                raise ValueError(f"method {name!r} routed twice")
            self._routes[name] = Route(method, handler, authority, inline, validate)
            return handler

        return register

    def get(self, name: str) -> Route | None:
        return self._routes.get(name)

    @property
    def method_names(self) -> list[str]:
        return sorted(self._routes)

    def admit(self, route: Route, ctx: CallContext, params: Any) -> None:
        """Resolve the caller's thread and check the route's authority (raises `not_found`
        for an unknown thread or a workspace mismatch, `forbidden` without authority)."""
        need = authority.need_of(route.authority, params)
        if need is Need.UNSCOPED:
            return
        ctx.thread = self._scopes.check(params.thread_id, params.workspace_root, ctx.principal)
        authority.check(ctx.thread, need)

    async def dispatch(self, conn: ServerConnection, ctx: CallContext, route: Route | None,
                       raw_params: msgspec.Raw | None) -> bytes:
        """Run one call and return the encoded answer frame (result or error).

        With the usage log on, the call is recorded (`telemetry.calls`): its phases are
        timed wherever they happen while it is current, and its terminal event written
        here — `abandoned` when the caller went away and the call was cancelled.
        """
        ctx.started = trio.current_time()
        if route is None or ctx.method in UNLOGGED_METHODS:
            return await self._run(conn, ctx, route, raw_params, None)
        ctx.call_id = new_call_id()
        if self._usage is None or not self._usage.enabled:
            return await self._run(conn, ctx, route, raw_params, None)
        usage = CallUsage(self._usage, ctx.method, conn.client_name, ctx.principal, ctx.call_id)
        token = phases.CURRENT.set(usage.record)
        try:
            return await self._run(conn, ctx, route, raw_params, usage)
        except BaseException:
            usage.abandoned()
            raise
        finally:
            phases.CURRENT.reset(token)

    async def _run(self, conn: ServerConnection, ctx: CallContext, route: Route | None,
                   raw_params: msgspec.Raw | None, usage: CallUsage | None) -> bytes:
        rid = ctx.request_id
        if route is None:
            return self._error(conn, rid, usage, ErrorCode.METHOD_NOT_FOUND,
                               f"unknown method {ctx.method!r}", {"method": ctx.method})
        try:
            params = conn.decode_params(raw_params, route.method.params)
            if usage is not None:
                usage.started(params)
            if route.validate is not None:
                route.validate(params)  # the whole request, before admission or history
            if route.authority is not Need.UNSCOPED:  # else nothing to admit
                with phases.phase("session_admission"):
                    self.admit(route, ctx, params)
            record = self._recording(ctx)
            if record is not None:
                record.tool_call(ctx.thread.thread_id, ctx.call_id, ctx.method, params)
            try:
                result = await route.handler(ctx, params)
            except VigilError as exc:
                if record is not None:
                    record.tool_result(ctx.thread.thread_id, ctx.call_id,
                                       {"error": {"code": exc.code, "message": exc.message}},
                                       error=True)
                raise
            if record is not None:
                record.tool_result(ctx.thread.thread_id, ctx.call_id,
                                   None if result is ANSWERED else result, error=False)
            if result is ANSWERED:
                if usage is not None:
                    usage.answered(None, 0)
                return b""
            with phases.phase("response_finalization"):
                frame = conn.send_result(rid, result)
            if usage is not None:
                usage.answered(result, len(frame))
            return frame
        except VigilError as exc:
            return self._error(conn, rid, usage, exc.code, exc.message, exc.data)
        except Exception:
            # Contain the failure to this call: one handler's bug must not end the server or
            # even this connection (DESIGN.md trio pitfalls).
            log.exception("handler for %s failed", ctx.method)
            return self._error(conn, rid, usage, ErrorCode.INTERNAL,
                               f"internal error in {ctx.method}; see the daemon log", {})

    def _recording(self, ctx: CallContext) -> Recorder | None:
        """The recorder, when this call belongs in its thread's transcript."""
        if (self._transcripts is None or ctx.thread is None
                or ctx.method in UNRECORDED_METHODS):
            return None
        return self._transcripts

    @staticmethod
    def _error(conn: ServerConnection, rid, usage: CallUsage | None, code, message: str,
               data: dict) -> bytes:
        frame = conn.send_error(rid, code, message, data)
        if usage is not None:
            usage.failed(str(code), data, len(frame))
        return frame
