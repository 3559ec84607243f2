"""The guardian's side of its wire, in the standard library alone: msgpack, frames, messages.

Why not msgspec, which the daemon uses for the same messages (wire.py)? Memory. An idle
guardian is one small process per execution and agents run tens of them; every MiB a
guardian holds is multiplied. Importing msgspec costs a guardian about 3 MiB of private
memory (its C core imports typing, re, enum, datetime, decimal, uuid, dataclasses at
start), against about 3 MiB for the whole bare interpreter (tests/bench/bench_guardian_memory.py
prints both). So the guardian speaks the same bytes with this module:

- `pack`/`unpack`: the msgpack subset the wire uses (nil, bool, int, float, str, bin,
  array, map), decoding with a depth bound instead of a RecursionError;
- `FrameDecoder`/`encode_frame`: the same u32 length prefix as vigil.protocol.frames,
  whose module imports vigil.protocol.errors (and with it enum, another MiB);
- `Message` and the field types: declarations generated from wire.py's Structs into
  litewire.py (by generate.py, checked by a test), validated on decode with the messages
  msgspec gives ("Expected `int` >= 1 - at `$.rows`"), so both ends refuse alike.

Encoding is exact msgpack, so the daemon decodes it with msgspec and the wire Structs; a
test round-trips every message type both ways.
"""

from __future__ import annotations

import struct

_U8, _U16, _U32, _U64 = struct.Struct(">B"), struct.Struct(">H"), struct.Struct(">I"), struct.Struct(">Q")
_I8, _I16, _I32, _I64 = struct.Struct(">b"), struct.Struct(">h"), struct.Struct(">i"), struct.Struct(">q")
_F32, _F64 = struct.Struct(">f"), struct.Struct(">d")

#: Deepest nesting decoded; the wire's messages are 3 levels deep at most. msgspec raises
#: RecursionError near 1,000; a bound returns an error instead.
MAX_DEPTH = 32


class WireDecodeError(ValueError):
    """A body or frame is not valid. `code` is an ErrorCode value (`invalid_request`,
    `method_not_found` for a type this build does not know, `frame_too_large`,
    `malformed_frame`); `message` says what and where."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


# --- frames ------------------------------------------------------------------------------


def encode_frame(body: bytes) -> bytes:
    """Prefix `body` with its u32 big-endian length (vigil.protocol.frames' format)."""
    return _U32.pack(len(body)) + body


class FrameDecoder:
    """Bytes in, whole frame bodies out; the announced length is checked before any buffer
    is reserved for it (as vigil.protocol.frames.FrameDecoder does)."""

    __slots__ = ("_buf", "max_frame_bytes")

    def __init__(self, max_frame_bytes: int):
        self._buf = bytearray()
        self.max_frame_bytes = max_frame_bytes

    def feed(self, data: bytes) -> None:
        self._buf += data

    def next_frame(self) -> bytes | None:
        """The next complete body, or None until more bytes arrive.

        Raises:
            WireDecodeError: frame_too_large; the stream cannot be trusted after it.
        """
        buf = self._buf
        if len(buf) < 4:
            return None
        (length,) = _U32.unpack_from(buf)
        if length > self.max_frame_bytes:
            raise WireDecodeError("frame_too_large", f"announced frame of {length} bytes exceeds "
                                                     f"the maximum of {self.max_frame_bytes} bytes")
        if len(buf) < 4 + length:
            return None
        body = bytes(buf[4:4 + length])
        del buf[:4 + length]
        return body


# --- msgpack -----------------------------------------------------------------------------


def pack(obj) -> bytes:
    out = bytearray()
    _pack(obj, out)
    return bytes(out)


def _pack(obj, out: bytearray) -> None:
    if obj is None:
        out += b"\xc0"
    elif obj is True:
        out += b"\xc3"
    elif obj is False:
        out += b"\xc2"
    elif isinstance(obj, int):
        _pack_int(obj, out)
    elif isinstance(obj, float):
        out += b"\xcb" + _F64.pack(obj)
    elif isinstance(obj, str):
        data = obj.encode("utf-8", "surrogatepass")
        n = len(data)
        if n < 32:
            out.append(0xA0 | n)
        elif n < 0x100:
            out += b"\xd9" + _U8.pack(n)
        elif n < 0x10000:
            out += b"\xda" + _U16.pack(n)
        else:
            out += b"\xdb" + _U32.pack(n)
        out += data
    elif isinstance(obj, (bytes, bytearray, memoryview)):
        n = len(obj)
        if n < 0x100:
            out += b"\xc4" + _U8.pack(n)
        elif n < 0x10000:
            out += b"\xc5" + _U16.pack(n)
        else:
            out += b"\xc6" + _U32.pack(n)
        out += obj
    elif isinstance(obj, (list, tuple)):
        _pack_len(len(obj), 0x90, b"\xdc", b"\xdd", out)
        for item in obj:
            _pack(item, out)
    elif isinstance(obj, dict):
        _pack_len(len(obj), 0x80, b"\xde", b"\xdf", out)
        for key, value in obj.items():
            _pack(key, out)
            _pack(value, out)
    elif isinstance(obj, Message):
        obj._pack(out)
    else:
        raise TypeError(f"cannot encode {type(obj).__name__} as msgpack")


def _pack_len(n: int, fix: int, b16: bytes, b32: bytes, out: bytearray) -> None:
    if n < 16:
        out.append(fix | n)
    elif n < 0x10000:
        out += b16 + _U16.pack(n)
    else:
        out += b32 + _U32.pack(n)


def _pack_int(n: int, out: bytearray) -> None:
    if 0 <= n < 0x80:
        out.append(n)
    elif -32 <= n < 0:
        out.append(n & 0xFF)
    elif n >= 0:
        for limit, tag, fmt in ((0x100, b"\xcc", _U8), (0x10000, b"\xcd", _U16),
                                (0x100000000, b"\xce", _U32), (1 << 64, b"\xcf", _U64)):
            if n < limit:
                out += tag + fmt.pack(n)
                return
        raise OverflowError(f"{n} does not fit msgpack's 64 bits")
    else:
        for limit, tag, fmt in ((1 << 7, b"\xd0", _I8), (1 << 15, b"\xd1", _I16),
                                (1 << 31, b"\xd2", _I32), (1 << 63, b"\xd3", _I64)):
            if n >= -limit:
                out += tag + fmt.pack(n)
                return
        raise OverflowError(f"{n} does not fit msgpack's 64 bits")


class _Malformed(Exception):
    pass


def unpack(body: bytes):
    """Decode one msgpack value that fills `body` exactly.

    Raises:
        WireDecodeError: invalid_request, with msgspec's wording for truncated or trailing data.
    """
    try:
        value, end = _unpack(body, 0, 0)
    except _Malformed as exc:
        raise WireDecodeError("invalid_request", str(exc)) from None
    except (IndexError, struct.error):
        raise WireDecodeError("invalid_request", "Input data was truncated") from None
    if end != len(body):
        raise WireDecodeError("invalid_request", f"Input data was not fully consumed "
                                                 f"({len(body) - end} bytes left)")
    return value


def _unpack(data: bytes, pos: int, depth: int):
    if depth > MAX_DEPTH:
        raise _Malformed(f"nested deeper than {MAX_DEPTH} levels")
    b = data[pos]
    pos += 1
    if b < 0x80:
        return b, pos
    if b >= 0xE0:
        return b - 0x100, pos
    if 0xA0 <= b < 0xC0:
        return _str(data, pos, b & 0x1F)
    if 0x90 <= b < 0xA0:
        return _array(data, pos, b & 0x0F, depth)
    if 0x80 <= b < 0x90:
        return _map(data, pos, b & 0x0F, depth)
    if b == 0xC0:
        return None, pos
    if b == 0xC2:
        return False, pos
    if b == 0xC3:
        return True, pos
    fixed = _FIXED.get(b)
    if fixed is not None:
        fmt = fixed
        return fmt.unpack_from(data, pos)[0], pos + fmt.size
    sized = _SIZED.get(b)
    if sized is None:
        raise _Malformed(f"invalid or unsupported msgpack byte 0x{b:02x}")
    kind, fmt = sized
    (n,) = fmt.unpack_from(data, pos)
    pos += fmt.size
    if kind == "str":
        return _str(data, pos, n)
    if kind == "bin":
        if pos + n > len(data):
            raise IndexError
        return bytes(data[pos:pos + n]), pos + n
    if kind == "array":
        return _array(data, pos, n, depth)
    return _map(data, pos, n, depth)


_FIXED = {0xCA: _F32, 0xCB: _F64, 0xCC: _U8, 0xCD: _U16, 0xCE: _U32, 0xCF: _U64,
          0xD0: _I8, 0xD1: _I16, 0xD2: _I32, 0xD3: _I64}
_SIZED = {0xC4: ("bin", _U8), 0xC5: ("bin", _U16), 0xC6: ("bin", _U32),
          0xD9: ("str", _U8), 0xDA: ("str", _U16), 0xDB: ("str", _U32),
          0xDC: ("array", _U16), 0xDD: ("array", _U32), 0xDE: ("map", _U16), 0xDF: ("map", _U32)}


def _str(data: bytes, pos: int, n: int):
    if pos + n > len(data):
        raise IndexError
    try:
        return bytes(data[pos:pos + n]).decode("utf-8"), pos + n
    except UnicodeDecodeError:
        raise _Malformed("invalid UTF-8 in a str") from None


def _array(data: bytes, pos: int, n: int, depth: int):
    items = []
    for _ in range(n):
        item, pos = _unpack(data, pos, depth + 1)
        items.append(item)
    return items, pos


def _map(data: bytes, pos: int, n: int, depth: int):
    items = {}
    for _ in range(n):
        key, pos = _unpack(data, pos, depth + 1)
        value, pos = _unpack(data, pos, depth + 1)
        try:
            items[key] = value
        except TypeError:
            raise _Malformed("a map key must be a str or a number") from None
    return items, pos


# --- field types ---------------------------------------------------------------------------


class Invalid(Exception):
    """A value does not fit its field: `message` in msgspec's words, `path` like `$.rows`."""

    def __init__(self, message: str, path: str):
        super().__init__(message)
        self.message = message
        self.path = path

    def __str__(self) -> str:
        return f"{self.message} - at `{self.path}`" if self.path != "$" else self.message


_NAMES = {type(None): "null", bool: "bool", int: "int", float: "float", str: "str",
          bytes: "bytes", list: "array", dict: "object"}


def _got(value) -> str:
    return _NAMES.get(type(value), type(value).__name__)


def _expect(value, type_: type, name: str, path: str) -> None:
    """Refuse a value that is not exactly of `type_` (bool is not an int, as in msgspec)."""
    if type(value) is not type_:
        raise Invalid(f"Expected `{name}`, got `{_got(value)}`", path)


class Int:
    __slots__ = ("ge", "le")
    name = "int"

    def __init__(self, ge: int | None = None, le: int | None = None):
        self.ge, self.le = ge, le

    def check(self, value, path: str):
        _expect(value, int, "int", path)
        if self.ge is not None and value < self.ge:
            raise Invalid(f"Expected `int` >= {self.ge}", path)
        if self.le is not None and value > self.le:
            raise Invalid(f"Expected `int` <= {self.le}", path)
        return value


class Float:
    __slots__ = ("ge", "le")
    name = "float"

    def __init__(self, ge: float | None = None, le: float | None = None):
        self.ge, self.le = ge, le

    def check(self, value, path: str):
        if type(value) not in (int, float):
            raise Invalid(f"Expected `float`, got `{_got(value)}`", path)
        value = float(value)
        if self.ge is not None and value < self.ge:
            raise Invalid(f"Expected `float` >= {self.ge}", path)
        if self.le is not None and value > self.le:
            raise Invalid(f"Expected `float` <= {self.le}", path)
        return value


class _Exact:
    __slots__ = ("type", "name")

    def __init__(self, type_, name: str):
        self.type, self.name = type_, name

    def check(self, value, path: str):
        _expect(value, self.type, self.name, path)
        return value


Str = _Exact(str, "str")
Bytes = _Exact(bytes, "bytes")
Bool = _Exact(bool, "bool")
Null = _Exact(type(None), "null")


class List:
    __slots__ = ("item",)
    name = "array"

    def __init__(self, item):
        self.item = item

    def check(self, value, path: str):
        _expect(value, list, "array", path)
        return [self.item.check(v, f"{path}[{i}]") for i, v in enumerate(value)]


class Tuple:
    __slots__ = ("items",)
    name = "array"

    def __init__(self, *items):
        self.items = items

    def check(self, value, path: str):
        _expect(value, list, "array", path)
        if len(value) != len(self.items):
            raise Invalid(f"Expected `array` of length {len(self.items)}, got {len(value)}", path)
        return tuple(t.check(v, f"{path}[{i}]") for i, (t, v) in enumerate(zip(self.items, value)))


class Dict:
    __slots__ = ("key", "value")
    name = "object"

    def __init__(self, key, value):
        self.key, self.value = key, value

    def check(self, value, path: str):
        _expect(value, dict, "object", path)
        return {self.key.check(k, f"{path}[...]"): self.value.check(v, f"{path}[{k!r}]")
                for k, v in value.items()}


class Optional:
    """`X | None`, the only unions the wire uses."""

    __slots__ = ("type", "name")

    def __init__(self, type_):
        self.type = type_
        self.name = f"{type_.name} | null"

    def check(self, value, path: str):
        if value is None:
            return None
        try:
            return self.type.check(value, path)
        except Invalid as exc:
            if exc.path == path and ", got `" in exc.message:  # the type, not a bound
                raise Invalid(f"Expected `{self.name}`, got `{_got(value)}`", path) from None
            raise


class Nested:
    """A field holding another message (a Struct in wire.py)."""

    __slots__ = ("cls",)
    name = "object"

    def __init__(self, cls):
        self.cls = cls

    def check(self, value, path: str):
        _expect(value, dict, "object", path)
        return self.cls._from_map(value, path)


# --- messages --------------------------------------------------------------------------------


class Code(str):
    """An error code that also answers `.value`, as vigil.protocol.errors.ErrorCode members
    do (that module imports enum); litewire.ErrorCode holds one per code."""

    __slots__ = ()

    @property
    def value(self) -> str:
        return str(self)


#: The default of a field that has none.
REQUIRED = object()


class Message:
    """Base of the generated message classes: keyword construction with defaults, equality,
    msgpack maps in declaration order (the tag first, as msgspec writes them)."""

    __slots__ = ()
    #: The tag value for tagged messages (in the `type` field), else None.
    TAG: str | None = None
    TAG_FIELD = "type"
    #: (name, type, default) per field; a default of `list` or `dict` is a fresh one per
    #: message, REQUIRED means none.
    FIELDS: tuple = ()

    def __init__(self, **values):
        for name, _type, default in self.FIELDS:
            if name in values:
                value = values.pop(name)
            elif default is REQUIRED:
                raise TypeError(f"{type(self).__name__} is missing required argument {name!r}")
            else:
                value = default() if default in (list, dict) else default
            setattr(self, name, value)
        if values:
            raise TypeError(f"{type(self).__name__} has no field {next(iter(values))!r}")

    def __eq__(self, other) -> bool:
        return type(other) is type(self) and all(
            getattr(self, name) == getattr(other, name) for name, _, _ in self.FIELDS)

    def __repr__(self) -> str:
        inner = ", ".join(f"{name}={getattr(self, name)!r}" for name, _, _ in self.FIELDS)
        return f"{type(self).__name__}({inner})"

    def _pack(self, out: bytearray) -> None:
        tagged = self.TAG is not None
        _pack_len(len(self.FIELDS) + tagged, 0x80, b"\xde", b"\xdf", out)
        if tagged:
            _pack(self.TAG_FIELD, out)
            _pack(self.TAG, out)
        for name, _type, _default in self.FIELDS:
            _pack(name, out)
            _pack(getattr(self, name), out)

    @classmethod
    def _from_map(cls, data: dict, path: str = "$"):
        values = {}
        for name, type_, default in cls.FIELDS:
            if name in data:
                values[name] = type_.check(data[name], f"{path}.{name}")
            elif default is REQUIRED:
                where = "" if path == "$" else f" - at `{path}`"
                raise Invalid(f"Object missing required field `{name}`{where}", "$")
        return cls(**values)


def replace(message: Message, **changes) -> Message:
    """A copy of `message` with some fields changed (msgspec.structs.replace's equivalent)."""
    values = {name: getattr(message, name) for name, _, _ in message.FIELDS}
    values.update(changes)
    return type(message)(**values)


def encode(message: Message) -> bytes:
    out = bytearray()
    message._pack(out)
    return bytes(out)


def decode_tagged(body: bytes, union: tuple) -> Message:
    """Decode one of `union`'s tagged messages, with wire.py's error codes and words.

    Raises:
        WireDecodeError: `method_not_found` for a well-formed message of an unknown type,
            `invalid_request` for anything else ("invalid resize message: ...").
    """
    value = unpack(body)
    if type(value) is not dict:
        raise WireDecodeError("invalid_request", f"malformed message: Expected `object`, got "
                                                 f"`{_got(value)}`")
    tag = value.get("type")
    by_tag = {cls.TAG: cls for cls in union}
    cls = by_tag.get(tag)
    if cls is None:
        if isinstance(tag, str) and tag:
            raise WireDecodeError("method_not_found", f"unknown message type {tag!r}")
        raise WireDecodeError("invalid_request", "invalid untagged message: Object missing "
                                                 "required field `type`")
    try:
        return cls._from_map(value)
    except Invalid as exc:
        raise WireDecodeError("invalid_request", f"invalid {tag} message: {exc}") from None


def decode_as(body: bytes, cls, what: str) -> Message:
    """Decode an untagged (or singly tagged) message of class `cls`.

    Raises:
        WireDecodeError: invalid_request, "invalid <what>: ...".
    """
    value = unpack(body)
    if type(value) is not dict:
        raise WireDecodeError("invalid_request", f"invalid {what}: Expected `object`, got "
                                                 f"`{_got(value)}`")
    try:
        return cls._from_map(value)
    except Invalid as exc:
        raise WireDecodeError("invalid_request", f"invalid {what}: {exc}") from None
