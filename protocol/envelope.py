"""The envelopes every frame after the handshake is made of.

Requests `{id, method, params}` are answered by `{id, result}` or `{id, error}`; the daemon
may push `{method: "event", params}` for subscriptions. Unknown fields are ignored and new
fields must carry defaults, so old and new peers keep understanding each other.
"""

from __future__ import annotations

from typing import Any

import msgspec


class ErrorBody(msgspec.Struct, omit_defaults=True):
    """A failed request: one finite code, a one-line message, optional structured data."""

    code: str
    message: str
    data: dict[str, Any] = {}


class RequestEnvelope(msgspec.Struct):
    """A call: the id is chosen by the client and echoed in the answer."""

    method: str
    id: int | str | None = None
    params: msgspec.Raw = msgspec.Raw()


class ResultEnvelope(msgspec.Struct):
    """A successful answer to request `id`."""

    id: int | str | None
    result: Any


class ErrorEnvelope(msgspec.Struct):
    """A failed answer to request `id` (`id` is null when the request had none readable)."""

    id: int | str | None
    error: ErrorBody


class EventEnvelope(msgspec.Struct):
    """A server-pushed notification for a subscription."""

    params: Any
    method: str = "event"


class IncomingEnvelope(msgspec.Struct):
    """What a client receives: any of result, error or event, told apart by their fields.
    `result` and `params` stay raw until the client decodes them as the type it expects; an
    empty Raw means the field was absent."""

    id: int | str | None = None
    result: msgspec.Raw = msgspec.Raw()
    error: ErrorBody | None = None
    method: str | None = None
    params: msgspec.Raw = msgspec.Raw()
