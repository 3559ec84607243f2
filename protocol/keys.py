"""Named keys: the names `input.keys`, `BashCommand send_specials` and `vigil keys` accept,
and the bytes a terminal sends for each (xterm, normal cursor mode). Sans-IO and in the
protocol so that a client can list and check names before sending (`vigil keys --help`
prints `KEY_HELP`).

The names are tmux's (`send-keys`): `Enter`, `Escape`, `Tab`, `BTab`, `Space`, `BSpace`,
`Up`/`Down`/`Left`/`Right`, `Home`/`End`, `PPage`/`NPage`, `IC`/`DC`, `F1`–`F12`, with the
modifier prefixes `C-` (Ctrl), `M-` (Meta/Alt) and `S-` (Shift) — `C-c`, `M-x`, `C-Up`,
`S-F5` — and any single character as itself (`q`, `:`, `é`). vigil's earlier spellings
(`Key-up`, `Page-down`, `Ctrl-c`, `Backspace`, `Delete`, `Insert`) keep working. Names are
case-insensitive; a single character is taken exactly (`q` is not `Q`).

Modified cursor and function keys use xterm's encoding: the parameter is 1 + Shift(1) +
Meta(2) + Ctrl(4), as in `ESC [ 1 ; 5 A` for C-Up (what tmux sends to an xterm-like pane).
"""

from __future__ import annotations

#: Keys whose bytes take no modifier parameter: name → bytes.
PLAIN_KEYS = {
    "enter": b"\r", "tab": b"\t", "btab": b"\x1b[Z", "escape": b"\x1b", "space": b" ",
    "bspace": b"\x7f",
}

#: Cursor and function keys in xterm's parameterised forms: name → (prefix, final). The key
#: is `ESC [ final` (or `prefix` when given) unmodified, `ESC [ 1 ; m final` modified —
#: or, for the `~` keys, `ESC [ n ~` and `ESC [ n ; m ~`.
_CSI_KEYS = {
    "up": ("", "A"), "down": ("", "B"), "right": ("", "C"), "left": ("", "D"),
    "home": ("", "H"), "end": ("", "F"),
    "f1": ("\x1bOP", "P"), "f2": ("\x1bOQ", "Q"), "f3": ("\x1bOR", "R"), "f4": ("\x1bOS", "S"),
}
_TILDE_KEYS = {
    "ic": 2, "dc": 3, "ppage": 5, "npage": 6, "f5": 15, "f6": 17, "f7": 18, "f8": 19,
    "f9": 20, "f10": 21, "f11": 23, "f12": 24,
}

#: Other spellings (vigil's earlier names and common ones) → the tmux name.
ALIASES = {
    "return": "enter", "esc": "escape", "backspace": "bspace", "bs": "bspace",
    "key-up": "up", "key-down": "down", "key-right": "right", "key-left": "left",
    "page-up": "ppage", "pageup": "ppage", "pgup": "ppage",
    "page-down": "npage", "pagedown": "npage", "pgdn": "npage",
    "insert": "ic", "delete": "dc", "shift-tab": "btab",
}

#: Modifier prefixes (lower case) → modifier bit (xterm: Shift 1, Meta 2, Ctrl 4).
_MODIFIERS = {"c-": 4, "ctrl-": 4, "^": 4, "m-": 2, "meta-": 2, "alt-": 2, "s-": 1,
              "shift-": 1}

#: Ctrl with a character that is not a letter (as a terminal sends it).
_CTRL_PUNCT = {"@": 0, " ": 0, "[": 0x1B, "\\": 0x1C, "]": 0x1D, "^": 0x1E, "_": 0x1F,
               "?": 0x7F}

#: Every key name, in the order `vigil keys --help` lists them.
KEY_NAMES = ("Enter", "Escape", "Tab", "BTab", "Space", "BSpace", "Up", "Down", "Left",
             "Right", "Home", "End", "PPage", "NPage", "IC", "DC",
             *(f"F{n}" for n in range(1, 13)))

KEY_HELP = (
    "KEY is a tmux key name: " + ", ".join(KEY_NAMES) + "; with modifiers C- (Ctrl), "
    "M- (Meta/Alt) and S- (Shift), e.g. C-c, C-d, M-x, C-Up, S-F5; or any single character "
    "(q, :, y). Older spellings work too: Ctrl-c, Key-up, Page-down, Backspace, Delete, "
    "Insert. Names are case-insensitive; a single character is sent exactly."
)


class UnknownKey(ValueError):
    """A key name that is not in the table; the message lists the names."""


def key_bytes(name: str) -> bytes:
    """Bytes for one key name (see the module docstring).

    Raises:
        UnknownKey: not a key name.
    """
    if len(name) == 1:
        return name.encode("utf-8", "surrogateescape")
    mods = 0
    rest = name
    while len(rest) > 1:
        lower = rest.lower()
        prefix = next((p for p in _MODIFIERS if lower.startswith(p) and len(rest) > len(p)),
                      None)
        if prefix is None:
            break
        mods |= _MODIFIERS[prefix]
        rest = rest[len(prefix):]
    data = _modified(rest, mods)
    if data is None:
        raise UnknownKey(f"unknown key {name!r}; known: {', '.join(KEY_NAMES)}, with the "
                         "prefixes C-, M-, S- (C-c, M-x), or one character")
    return data


def _modified(base: str, mods: int) -> bytes | None:
    """`base` (a name or one character) with the modifier bits `mods`, or None."""
    if len(base) == 1:
        char = base
        if mods & 4:
            if char.isascii() and char.isalpha():
                code = ord(char.lower()) & 0x1F
            elif char in _CTRL_PUNCT:
                code = _CTRL_PUNCT[char]
            else:
                return None
            char_bytes = bytes([code])
        elif mods & 1:
            char_bytes = char.upper().encode("utf-8", "surrogateescape")
        else:
            char_bytes = char.encode("utf-8", "surrogateescape")
        return b"\x1b" + char_bytes if mods & 2 else char_bytes
    key = base.lower().replace("_", "-")
    key = ALIASES.get(key, key)
    if key in PLAIN_KEYS:
        if key == "tab" and mods == 1:
            return PLAIN_KEYS["btab"]
        if key == "space" and mods & 4:
            return b"\x1b\x00" if mods & 2 else b"\x00"
        if mods & ~2:
            return None
        return (b"\x1b" if mods & 2 else b"") + PLAIN_KEYS[key]
    param = 1 + mods
    if key in _CSI_KEYS:
        plain, final = _CSI_KEYS[key]
        if not mods:
            return (plain or f"\x1b[{final}").encode()
        return f"\x1b[1;{param}{final}".encode()
    if key in _TILDE_KEYS:
        number = _TILDE_KEYS[key]
        return (f"\x1b[{number}~" if not mods else f"\x1b[{number};{param}~").encode()
    return None
