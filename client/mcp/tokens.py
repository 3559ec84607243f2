"""Bearer tokens of the MCP HTTP server: `vigil token create|list|revoke`.

Each token is a principal `http:<name>` (seeds/000: HTTP history is isolated by
authenticated principal). A token is 32 random bytes, shown once at creation; only its
SHA-256 is stored — a fast hash is enough for a secret of 256 random bits, which no
dictionary holds — in `<state>/mcp-tokens.json`, written 0600 (write, fsync, rename) in the
0700 state directory. Verification compares digests in constant time and re-reads the file
when it changed, so a revoked token stops working on the next request, without a restart.

stdlib only: `vigil token` must not load the MCP SDK.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

from vigil.protocol import paths

FILE_NAME = "mcp-tokens.json"
#: A token's name becomes its principal `http:<name>` (`vigil.protocol.api.daemon`).
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
PREFIX = "vigil_"


class TokenError(ValueError):
    """A bad name, a duplicate, or an unknown token name; the message says which, and
    `code` how the CLI answers it (a bad name is bad usage: exit 2; the others exit 1)."""

    def __init__(self, message: str, code: str = "invalid_request"):
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class TokenEntry:
    name: str
    sha256: str
    created_unix_ms: int

    @property
    def principal(self) -> str:
        return f"http:{self.name}"


def default_path() -> Path:
    return Path(paths.state_dir()) / FILE_NAME


def digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogateescape")).hexdigest()


class TokenStore:
    def __init__(self, path: Path | None = None):
        self.path = Path(path or default_path())
        self._cache: tuple[float, int, list[TokenEntry]] | None = None

    def entries(self) -> list[TokenEntry]:
        """Every token (name, digest, creation), read again whenever the file changed."""
        try:
            st = self.path.stat()
        except FileNotFoundError:
            return []
        if self._cache is not None and self._cache[:2] == (st.st_mtime, st.st_size):
            return self._cache[2]
        raw = json.loads(self.path.read_text())
        entries = [TokenEntry(e["name"], e["sha256"], e["created_unix_ms"]) for e in raw["tokens"]]
        self._cache = (st.st_mtime, st.st_size, entries)
        return entries

    def create(self, name: str) -> str:
        """A new token for `name` (returned once, never stored)."""
        if not NAME.fullmatch(name):
            raise TokenError(f"token names are 1-64 letters, digits and _.- starting with a "
                             f"letter or digit, not {name!r}")
        entries = self.entries()
        if any(e.name == name for e in entries):
            raise TokenError(f"a token named {name!r} exists; revoke it first", "conflict")
        token = PREFIX + secrets.token_urlsafe(32)
        self._write(entries + [TokenEntry(name, digest(token), time.time_ns() // 1_000_000)])
        return token

    def revoke(self, name: str) -> None:
        entries = self.entries()
        if not any(e.name == name for e in entries):
            raise TokenError(f"no token named {name!r}", "not_found")
        self._write([e for e in entries if e.name != name])

    def verify(self, token: str) -> TokenEntry | None:
        """The entry of `token`, or None; every entry is compared (constant time each)."""
        want = digest(token)
        found = None
        for entry in self.entries():
            if hmac.compare_digest(entry.sha256, want):
                found = entry
        return found

    def _write(self, entries: list[TokenEntry]) -> None:
        paths.check_private_dir(str(self.path.parent))
        body = json.dumps({"tokens": [{"name": e.name, "sha256": e.sha256,
                                       "created_unix_ms": e.created_unix_ms} for e in entries]},
                          indent=1)
        tmp = self.path.with_name(f".{self.path.name}.{secrets.token_hex(4)}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        try:
            os.write(fd, body.encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, self.path)
        self._cache = None
