"""Named keys: the names `input.keys`, `BashCommand send_specials` and `vigil keys` accept,
and the bytes a terminal sends for each (xterm, normal cursor mode). Sans-IO and in the
protocol so that a client can list and check names before sending.
"""

from __future__ import annotations

#: Key name (lower case, `-` separated) → bytes.
NAMED_KEYS = {
    "enter": b"\r", "tab": b"\t", "escape": b"\x1b", "backspace": b"\x7f", "space": b" ",
    "key-up": b"\x1b[A", "key-down": b"\x1b[B", "key-right": b"\x1b[C", "key-left": b"\x1b[D",
    "home": b"\x1b[H", "end": b"\x1b[F", "page-up": b"\x1b[5~", "page-down": b"\x1b[6~",
    "delete": b"\x1b[3~", "insert": b"\x1b[2~",
}


class UnknownKey(ValueError):
    """A key name that is not in the table; the message lists the names."""


def key_bytes(name: str) -> bytes:
    """Bytes for a key name: the table above, or Ctrl-<letter> (Ctrl-c → 0x03).

    Raises:
        UnknownKey: not a key name.
    """
    key = name.strip().lower().replace("_", "-")
    if key in NAMED_KEYS:
        return NAMED_KEYS[key]
    if key.startswith("ctrl-") and len(key) == 6 and ("a" <= key[5] <= "z" or key[5] in "[\\]"):
        return bytes([ord(key[5].upper()) & 0x1F])
    raise UnknownKey(f"unknown key {name!r}; known: {', '.join(sorted(NAMED_KEYS))}, Ctrl-a…Ctrl-z")
