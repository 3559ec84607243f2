"""Body encodings: msgpack (default) and JSON, with encoders and decoders built once.

A decoder per (encoding, type) pair is cached, so validating a request's params costs one
dict lookup and one C-level decode. Validation errors are rewritten once, here, into
`invalid_request` naming the offending field.
"""

from __future__ import annotations

import enum
from typing import Any

import msgspec

from .errors import ErrorCode, RemoteProtocolError


class Encoding(str, enum.Enum):
    MSGPACK = "msgpack"
    JSON = "json"


_ENCODERS = {
    Encoding.MSGPACK: msgspec.msgpack.Encoder(),
    Encoding.JSON: msgspec.json.Encoder(),
}
_DECODERS: dict[tuple[Encoding, Any], Any] = {}


def encoder(encoding: Encoding) -> Any:
    return _ENCODERS[encoding]


def decoder(encoding: Encoding, type_: Any = Any) -> Any:
    key = (encoding, type_)
    dec = _DECODERS.get(key)
    if dec is None:
        module = msgspec.msgpack if encoding is Encoding.MSGPACK else msgspec.json
        dec = _DECODERS[key] = module.Decoder(type_)
    return dec


def sniff_encoding(body: bytes) -> Encoding:
    """Guess the encoding of the first frame (`hello`) from its first byte.

    A msgpack map starts with 0x80–0x8f, 0xde or 0xdf; a JSON object with `{` or white space.
    `{` (0x7b) in msgpack would be the integer 123, never a valid hello, so the guess is exact
    for every well-formed hello and harmless for anything else.
    """
    if body[:1] in (b"{", b" ", b"\t", b"\r", b"\n"):
        return Encoding.JSON
    return Encoding.MSGPACK


def decode_as(body: bytes | msgspec.Raw, type_: Any, encoding: Encoding, where: str = "$") -> Any:
    """Decode `body` as `type_`; a bad value raises `invalid_request` naming the field.

    `where` is the path of `body` inside the message (for example `$.params`), so that the
    error names the field as the client sent it.
    """
    try:
        return decoder(encoding, type_).decode(body)
    except msgspec.ValidationError as exc:
        message = str(exc)
        field = None
        marker = " - at `$"
        if marker in message:
            head, _, tail = message.partition(marker)
            field = (where + tail.rstrip("`")).removeprefix("$.")
            message = f"{head} - at `{where}{tail}"
        elif where != "$":
            field = where.removeprefix("$.")
            message = f"{message} - at `{where}`"
        raise RemoteProtocolError(
            ErrorCode.INVALID_REQUEST, message, {"field": field} if field else None
        ) from None
    except msgspec.DecodeError as exc:
        raise RemoteProtocolError(
            ErrorCode.INVALID_REQUEST, f"undecodable {encoding.value} body: {exc}"
        ) from None
    except RecursionError:
        raise RemoteProtocolError(ErrorCode.INVALID_REQUEST, too_deep(encoding)) from None


def too_deep(encoding: Encoding) -> str:
    """The message for a body nested past the decoder's limit. msgspec decodes nested
    containers recursively and raises RecursionError at the interpreter's recursion limit
    (about 1,000 levels), which is neither a DecodeError nor the client's field: every
    decode of peer bytes must catch it and answer this."""
    return f"undecodable {encoding.value} body: nested deeper than the decoder's recursion limit"
