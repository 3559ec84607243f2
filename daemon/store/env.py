"""The LMDB environment: opening it safely, its named databases, and transactions that are
safe to use from trio worker threads.

Rules this module enforces (DESIGN.md, "Pitfalls seen on these machines", LMDB):

- Every transaction begins and ends inside one call on one thread (`read()` is a context
  manager used within one call; `write(fn)` runs `fn(txn)` and commits in the same thread).
  A txn begun in one thread and committed in another deadlocked the next writer.
- `MapFullError` (raised by a put or at commit) abandons the whole transaction, grows the map
  while *no* other transaction of this process is open (`set_mapsize` with a read txn open
  is silently unsafe), and runs `fn` again from scratch. `_Gate` is the shared/exclusive lock
  that makes "no other txn open" true.
- No `writemap` (synced commits got up to 8x slower as the file grew).
- OS errors are translated here, once, into `StoreError` with a sentence a user can act on.
"""

from __future__ import annotations

import errno
import os
import secrets
import struct
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator, TypeVar

import lmdb

from vigil.daemon.settings import Settings
from vigil.protocol.paths import PrivateDirError, open_private_file

from .errors import StoreError
from .integrity import DataFileDamaged, NotAnLmdbFile, check_data_file

T = TypeVar("T")

#: Version of the store layout (named dbs, key formats, meta keys). A store with a larger
#: number was written by a newer vigil: refused, never reset (pueue's rule).
STORE_SCHEMA = 1
MAGIC = b"vigil-store"

#: Named databases. DESIGN.md's table, plus the indexes and tables added since:
#:   scopes: scope hash -> ScopeUsage (records and retained bytes per scope, kept exact in
#:           the txn that changes them, so retention never has to scan a scope to decide);
#:   expiry: terminal_at_ms(u64) + execution id -> b"" (oldest terminal record first, so the
#:           lazy 24 h expiry costs one cursor.first() when nothing is due);
#:   timings: execution id + kind + offset -> arrival times of output and terminal sizes
#:           (timings.py; added after schema 1 without a bump: a store without it gets it
#:           created on open, and its records read as untimed);
#:   events: execution id + seq(u64) -> one entry of the execution's log (events.py; added
#:           after schema 1 the same way: created on open, read as empty when absent).
#:   scrollback: execution id (header) and id + line number(u64) -> a rendered scrollback line
#:           (scrollback.py; added the same way: created on open).
#: and the turn archives' catalog (archives.py): `archives` (scope hash + ref -> entry),
#: `archive_expiry` (expires_ms + scope hash + ref -> b"", for the cleanup) and `turns`
#: (scope hash + execution id + turn -> TurnRecord, removed with the execution). Adding a
#: named db keeps the store schema: an older vigil opens the store and ignores them.
DB_NAMES = (b"meta", b"executions", b"by_scope", b"output", b"screens", b"changes", b"receipts", b"scopes", b"expiry", b"threads",
            b"timings", b"events", b"scrollback", b"archives", b"archive_expiry", b"turns")

#: errno values that mean "the disk (or the user's quota/file size limit) is full". EIO is
#: among them because LMDB turns a short write (what a full disk gives) into EIO at commit.
_FULL_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO}
_FULL_TEXTS = ("No space left", "File too large", "Disk quota", "Input/output error")
_READONLY_ERRNOS = {errno.EACCES, errno.EPERM, errno.EROFS}

U64 = struct.Struct(">Q")

#: The files LMDB keeps in the store directory (subdir=True).
ENV_FILES = ("data.mdb", "lock.mdb")


class _Gate:
    """Shared/exclusive lock: transactions hold it shared, a map resize holds it exclusive.

    Writer-preferring (a waiting resize blocks new transactions) so that a steady stream of
    readers cannot starve the writer that needs to grow the map. A thread that already
    holds it shared and asks for exclusive is a bug (it would deadlock): it raises.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._shared = 0
        self._exclusive = False
        self._waiting_exclusive = 0
        self._local = threading.local()

    @contextmanager
    def shared(self) -> Iterator[None]:
        if getattr(self._local, "depth", 0):
            raise RuntimeError("nested store transaction in one thread (would deadlock a map resize)")
        with self._cond:
            while self._exclusive or self._waiting_exclusive:
                self._cond.wait()
            self._shared += 1
        self._local.depth = 1
        try:
            yield
        finally:
            self._local.depth = 0
            with self._cond:
                self._shared -= 1
                if not self._shared:
                    self._cond.notify_all()

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        if getattr(self._local, "depth", 0):
            raise RuntimeError("map resize requested inside a store transaction")
        with self._cond:
            self._waiting_exclusive += 1
            try:
                while self._exclusive or self._shared:
                    self._cond.wait()
            finally:
                self._waiting_exclusive -= 1
            self._exclusive = True
        try:
            yield
        finally:
            with self._cond:
                self._exclusive = False
                self._cond.notify_all()


def _describe_os_error(exc: BaseException, path: Path) -> str | None:
    code = getattr(exc, "errno", None)
    text = str(exc)
    if code in _FULL_ERRNOS or any(t in text for t in _FULL_TEXTS):
        return (
            f"could not write the vigil store {path}: the disk is full (or a quota/file-size limit "
            "was hit, or the disk failed); the last change was not saved, nothing saved before is "
            "lost; free space and retry"
        )
    if code in _READONLY_ERRNOS or "Permission denied" in text or "Read-only file system" in text:
        return f"the vigil store {path} is read-only here; reads work, changes cannot be saved"
    return None


class LmdbEnv:
    """One opened store environment: named db handles, meta values, safe transactions."""

    def __init__(self, path: Path, settings: Settings) -> None:
        self.path = path
        self.settings = settings
        self.readonly = False
        self._gate = _Gate()
        self._write_lock = threading.Lock()
        self._prepare_dir()
        self._check_data_file()
        self.env = self._open_env()
        try:
            self.dbs = self._open_dbs()
            self._read_meta()
        except lmdb.Error as exc:
            # Damage the start-up check cannot see (it reads roots, not every page).
            self.env.close()
            raise StoreError(self._damaged(f"LMDB reports {exc}")) from exc
        except BaseException:
            self.env.close()
            raise

    # --- opening ------------------------------------------------------------------------------

    def _prepare_dir(self) -> None:
        path = self.path
        if path.is_symlink() or (path.exists() and not path.is_dir()):
            raise StoreError(f"{path} is not a directory, so it is not a vigil store; move it away")
        try:
            path.mkdir(mode=0o700, parents=True, exist_ok=True)
            st = path.stat()
        except OSError as exc:
            raise StoreError(f"cannot create the vigil store directory {path}: {exc.strerror}") from exc
        if st.st_uid != os.geteuid():
            raise StoreError(f"the vigil store directory {path} belongs to uid {st.st_uid}, not to us")
        if st.st_mode & 0o077:
            try:
                os.chmod(path, 0o700)  # ours, but too open: private by construction
            except OSError as exc:
                raise StoreError(f"cannot make {path} private (0700): {exc.strerror}") from exc
        # LMDB opens its two files itself, following links: check them first. The directory
        # is ours and 0700, so nobody else can swap a file in between.
        for name in ENV_FILES:
            file = os.path.join(path, name)
            if os.path.lexists(file):
                try:
                    os.close(open_private_file(file, os.O_RDONLY))
                except PrivateDirError as exc:
                    raise StoreError(exc.message) from None

    def _damaged(self, what: str) -> str:
        file = self.path / "data.mdb"
        return (f"the vigil store file {file} is damaged: {what}; vigil left it untouched and "
                f"will not start on it: move the store aside (mv {self.path} {self.path}.damaged) "
                "to start with an empty one, or restore it from a backup")

    def _check_data_file(self) -> None:
        """Refuse a damaged data.mdb before LMDB maps it (integrity.py says how and why)."""
        file = self.path / "data.mdb"
        if not file.exists():
            return  # a new store
        try:
            check_data_file(str(file))
        except NotAnLmdbFile as exc:
            raise StoreError(
                f"{self.path} holds a file that is not a vigil store ({exc}); it was left "
                "untouched: move it away or point VIGIL_STATE_DIR elsewhere") from None
        except DataFileDamaged as exc:
            raise StoreError(self._damaged(str(exc))) from None
        except OSError as exc:
            raise StoreError(f"cannot read the vigil store file {file}: {exc.strerror}") from None

    def _open_env(self) -> lmdb.Environment:
        s = self.settings
        common = dict(
            subdir=True,
            max_dbs=len(DB_NAMES) + 4,
            mode=0o600,
            readahead=False,  # random access over a file larger than RAM: don't pollute the cache
            writemap=False,  # DESIGN pitfall: synced commits 8x slower as the file grows
            metasync=True,
            sync=True,
        )
        old_umask = os.umask(0o077)  # files 0600 whatever the caller's umask
        try:
            try:
                return lmdb.open(str(self.path), map_size=s.store_initial_map_bytes, **common)
            except (lmdb.InvalidError, lmdb.VersionMismatchError, lmdb.CorruptedError) as exc:
                raise StoreError(
                    f"{self.path} holds a file that is not a vigil store ({exc.__class__.__name__}); "
                    "it was left untouched: move it away or point VIGIL_STATE_DIR elsewhere"
                ) from exc
            except lmdb.Error as exc:
                msg = _describe_os_error(exc, self.path)
                if msg is None or "read-only" not in msg:
                    raise StoreError(f"cannot open the vigil store {self.path}: {exc}") from exc
            # Read-only files or directory: open for reading. A read-only lock file cannot
            # hold our reader slot, so fall back to no locking (no writer can exist here).
            self.readonly = True
            for lock in (True, False):
                try:
                    return lmdb.open(str(self.path), readonly=True, lock=lock, **common)
                except lmdb.Error as exc:
                    last = exc
            raise StoreError(f"cannot open the vigil store {self.path} even for reading: {last}") from last
        finally:
            os.umask(old_umask)

    def _open_dbs(self) -> dict[str, object]:
        env = self.env
        with env.begin(write=False) as txn:
            names = {bytes(k) for k, _ in txn.cursor()}
        if names and b"meta" not in names:
            raise StoreError(
                f"{self.path} is an LMDB environment but not a vigil store; it was left untouched: "
                "move it away or point VIGIL_STATE_DIR elsewhere"
            )
        if self.readonly:
            if not names:
                raise StoreError(f"the vigil store {self.path} is empty and read-only")
            return {n.decode(): env.open_db(n, create=False) for n in DB_NAMES if n in names}
        dbs = {}
        with env.begin(write=True) as txn:
            for n in DB_NAMES:
                dbs[n.decode()] = env.open_db(n, txn=txn, create=True)
            meta = dbs["meta"]
            if not names:  # a brand-new store: create its identity once
                txn.put(b"magic", MAGIC, db=meta)
                txn.put(b"schema", U64.pack(STORE_SCHEMA), db=meta)
                txn.put(b"epoch", secrets.token_bytes(16), db=meta)
                txn.put(b"mac_key", secrets.token_bytes(32), db=meta)
                txn.put(b"change_seq", U64.pack(0), db=meta)
                txn.put(b"changes_low", U64.pack(0), db=meta)
            else:
                self._check_meta(txn, meta)  # before anything could be written to it
        return dbs

    def _check_meta(self, txn, meta) -> None:
        if txn.get(b"magic", db=meta) != MAGIC:
            raise StoreError(
                f"{self.path} is an LMDB environment but not a vigil store; it was left untouched: "
                "move it away or point VIGIL_STATE_DIR elsewhere"
            )
        raw = txn.get(b"schema", db=meta)
        schema = U64.unpack(raw)[0] if raw is not None and len(raw) == 8 else None
        if schema is None:
            raise StoreError(f"the vigil store {self.path} has no readable schema version; left untouched")
        if schema > STORE_SCHEMA:
            raise StoreError(
                f"the vigil store {self.path} has schema {schema}, newer than this vigil supports "
                f"({STORE_SCHEMA}); upgrade vigil (the store was left untouched)"
            )

    def _read_meta(self) -> None:
        meta = self.dbs["meta"]
        with self.env.begin(write=False) as txn:
            self._check_meta(txn, meta)
            self.store_epoch = bytes(txn.get(b"epoch", db=meta))
            self.mac_key = bytes(txn.get(b"mac_key", db=meta))
        if len(self.store_epoch) != 16 or len(self.mac_key) != 32:
            raise StoreError(f"the vigil store {self.path} has a damaged identity (epoch/key); left untouched")

    # --- transactions -------------------------------------------------------------------------

    @contextmanager
    def read(self) -> Iterator[lmdb.Transaction]:
        """A read transaction for the duration of the `with` block, in this thread only."""
        with self._gate.shared():
            txn = self.env.begin(write=False)
            try:
                yield txn
            finally:
                txn.abort()

    def write(self, fn: Callable[[lmdb.Transaction], T]) -> T:
        """Run `fn(txn)` in one write transaction and commit it, growing the map if needed.

        `fn` may run more than once (after a map resize), so it must derive everything from
        the txn and must not mutate its arguments.

        Raises:
            StoreError: read-only store, disk full, map at its maximum, or another LMDB
                error. The transaction was abandoned; nothing committed before is lost.
        """
        if self.readonly:
            raise StoreError(f"the vigil store {self.path} is read-only here; reads work, changes cannot be saved")
        with self._write_lock:
            while True:
                try:
                    with self._gate.shared():
                        txn = self.env.begin(write=True)
                        try:
                            result = fn(txn)
                            txn.commit()
                        except BaseException:
                            txn.abort()
                            raise
                    return result
                except lmdb.MapFullError:
                    self._grow()
                except lmdb.Error as exc:
                    msg = _describe_os_error(exc, self.path)
                    raise StoreError(msg or f"the vigil store {self.path} failed: {exc}") from exc
                except OSError as exc:
                    msg = _describe_os_error(exc, self.path)
                    raise StoreError(msg or f"the vigil store {self.path} failed: {exc}") from exc

    def map_size(self) -> int:
        return self.env.info()["map_size"]

    def _grow(self) -> None:
        current = self.map_size()
        limit = self.settings.store_max_map_bytes
        if current >= limit:
            raise StoreError(
                f"the vigil store {self.path} reached its maximum size ({limit} bytes, "
                "store_max_map_bytes); the last change was not saved"
            )
        with self._gate.exclusive():
            self.env.set_mapsize(min(limit, current * 2))

    def close(self) -> None:
        self.env.close()
