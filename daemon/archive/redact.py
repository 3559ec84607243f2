"""Redaction at the producer (seeds/002, "Redaction modes"): what reaches an archive file is
already redacted, so a later policy can never turn what was written into something more
exposed.

| mode | payloads (text, thinking, prompts, results) | tool arguments |
|---|---|---|
| `strict` | none: their size in bytes only | none: the size of their JSON only |
| `balanced` | cut to `archive_balanced_payload_chars`; bearer tokens and private keys masked | sensitive keys' values masked, token-like values masked, then cut |
| `diagnostic` | cut to `archive_diagnostic_payload_chars`; nothing masked | cut; nothing masked |

Sensitive keys (balanced): a key whose name, lower-cased with `-` read as `_`, contains
`password`, `passwd`, `secret`, `token`, `api_key`, `apikey`, `authorization`, `cookie`,
`private_key` or `credential` — at any depth of the arguments — has its value replaced by
`[masked]`, whatever its type. Token-like values (balanced, in every string kept): an
`Authorization`-style bearer token (`Bearer <token>` → `Bearer [masked]`) and a PEM private
key block (`-----BEGIN … PRIVATE KEY-----` to its END line, or to the end of the text when
cut: `[masked private key]`). Masking happens on the whole original, before the cut, so a
cut never leaves half a secret behind.

Sizes are UTF-8 bytes of the original (for arguments: of their compact JSON); limits are in
characters, as the rendering cap is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import msgspec

from vigil.protocol.api.trace import RedactionMode

MASK = "[masked]"
SENSITIVE_KEY_PARTS = ("password", "passwd", "secret", "token", "api_key", "apikey",
                       "authorization", "cookie", "private_key", "credential")
_BEARER = re.compile(r"(?i)\b(bearer)\s+[A-Za-z0-9\-._~+/]{8,}=*")
_PRIVATE_KEY = re.compile(
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?:.*?-----END [A-Z0-9 ]*PRIVATE KEY-----|.*\Z)",
    re.DOTALL)
_JSON = msgspec.json.Encoder()


def sensitive_key(name: str) -> bool:
    key = name.lower().replace("-", "_")
    return any(part in key for part in SENSITIVE_KEY_PARTS)


def mask_values(text: str) -> tuple[str, int]:
    """`text` with bearer tokens and private keys masked, and how many were."""
    count = 0
    if "PRIVATE KEY-----" in text:
        text, n = _PRIVATE_KEY.subn("[masked private key]", text)
        count += n
    if "earer" in text or "EARER" in text:
        text, n = _BEARER.subn(lambda m: f"{m[1]} {MASK}", text)
        count += n
    return text, count


@dataclass(frozen=True, slots=True)
class Kept:
    """A payload as the archive keeps it: `text` None when nothing of it may be kept."""

    text: str | None
    bytes: int
    truncated: bool = False
    masked: int = 0


@dataclass(frozen=True, slots=True)
class KeptInput:
    """Tool arguments as the archive keeps them (see `TraceToolUse`)."""

    value: Any
    bytes: int
    truncated: bool = False
    masked: int = 0


class Redactor:
    """The redaction of one archive: its mode and payload limit are fixed when the archive
    opens (they are part of its stamp)."""

    def __init__(self, mode: RedactionMode, payload_chars: int):
        self.mode = mode
        self.limit = 0 if mode == "strict" else payload_chars
        self.masking = mode == "balanced"

    def text(self, text: str) -> Kept:
        """A text payload (a reply, reasoning, a prompt, a tool result)."""
        size = len(text.encode("utf-8", "surrogatepass"))
        if self.mode == "strict":
            return Kept(None, size)
        masked = 0
        if self.masking:
            text, masked = mask_values(text)
        if len(text) > self.limit:
            return Kept(text[:self.limit], size, True, masked)
        return Kept(text, size, False, masked)

    def arguments(self, value: Any) -> KeptInput:
        """A tool call's arguments (any JSON value; raw text for tools that take text)."""
        try:
            original = _JSON.encode(value)
        except (TypeError, msgspec.EncodeError):
            value = str(value)
            original = _JSON.encode(value)
        if self.mode == "strict":
            return KeptInput(None, len(original))
        masked = 0
        if self.masking:
            value, masked = _mask_tree(value)
            encoded = _JSON.encode(value).decode("utf-8", "replace") if masked else None
        else:
            encoded = None
        if encoded is None:
            encoded = original.decode("utf-8", "replace")
        if len(encoded) > self.limit:
            return KeptInput(encoded[:self.limit], len(original), True, masked)
        return KeptInput(value, len(original), False, masked)


def _mask_tree(value: Any) -> tuple[Any, int]:
    """A copy of a JSON value with sensitive keys' values and token-like strings masked."""
    if isinstance(value, dict):
        out, count = {}, 0
        for key, item in value.items():
            if isinstance(key, str) and sensitive_key(key):
                out[key] = MASK
                count += 1
            else:
                out[key], n = _mask_tree(item)
                count += n
        return out, count
    if isinstance(value, list):
        items, count = [], 0
        for item in value:
            masked, n = _mask_tree(item)
            items.append(masked)
            count += n
        return items, count
    if isinstance(value, str):
        return mask_values(value)
    return value, 0
