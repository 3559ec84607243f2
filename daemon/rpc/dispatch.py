"""The dispatch seam: every RPC call passes through `Dispatcher.dispatch`, and only there.

This is where later issues hang authorization (mode authority), telemetry phases and
transcript `tool.call`/`tool.result` events, so handlers stay plain functions of
`(context, params) -> result`. Params are validated against the method registry's type
before the handler runs; a bad one is `invalid_request` naming the field.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

import msgspec

from vigil.protocol.connection import ServerConnection
from vigil.protocol.errors import ErrorCode, VigilError
from vigil.protocol.methods import Method, lookup

log = logging.getLogger("vigild.dispatch")


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
    connection: Any = None  # the daemon-side connection object (for subscriptions/attach)
    #: `await send(frame)` on this call's connection (for handlers that push events).
    send: Any = None
    extras: dict[str, Any] = field(default_factory=dict)


Handler = Callable[[CallContext, Any], Awaitable[Any]]


class _Answered:
    """Returned by a handler that already sent its answer itself (e.g. `attach`, which
    answers first and then streams events on the same call)."""


ANSWERED = _Answered()


@dataclass(frozen=True, slots=True)
class Route:
    method: Method
    handler: Handler
    #: Inline handlers run in the connection's reader task: no task spawn, pipelined order kept.
    #: Only for handlers that never wait on anything but a quick computation.
    inline: bool


class Dispatcher:
    def __init__(self) -> None:
        self._routes: dict[str, Route] = {}
        #: authorize(ctx, method, params): raises to refuse (the mode authority table).
        self.authorize: Callable[[CallContext, str, Any], None] | None = None

    def route(self, name: str, *, inline: bool = False) -> Callable[[Handler], Handler]:
        method = lookup(name)
        if method is None:
            raise KeyError(f"method {name!r} is not in the protocol registry")

        def register(handler: Handler) -> Handler:
            if name in self._routes:
                raise ValueError(f"method {name!r} routed twice")
            self._routes[name] = Route(method, handler, inline)
            return handler

        return register

    def get(self, name: str) -> Route | None:
        return self._routes.get(name)

    async def dispatch(self, conn: ServerConnection, ctx: CallContext, route: Route | None,
                       raw_params: msgspec.Raw | None) -> bytes:
        """Run one call and return the encoded answer frame (result or error)."""
        rid = ctx.request_id
        if route is None:
            return conn.send_error(rid, ErrorCode.METHOD_NOT_FOUND,
                                   f"unknown method {ctx.method!r}", {"method": ctx.method})
        try:
            params = conn.decode_params(raw_params, route.method.params)
            if self.authorize is not None:
                self.authorize(ctx, ctx.method, params)
            result = await route.handler(ctx, params)
            if result is ANSWERED:
                return b""
            return conn.send_result(rid, result)
        except VigilError as exc:
            code = exc.code.value if isinstance(exc.code, ErrorCode) else str(exc.code)
            return conn.send_error(rid, code, exc.message, exc.data)
        except Exception:
            # Contain the failure to this call: one handler's bug must not end the server or
            # even this connection (DESIGN.md trio pitfalls).
            log.exception("handler for %s failed", ctx.method)
            return conn.send_error(rid, ErrorCode.INTERNAL,
                                   f"internal error in {ctx.method}; see the daemon log")
