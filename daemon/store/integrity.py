"""Is `data.mdb` whole? Read its meta pages ourselves before LMDB maps the file.

LMDB trusts its file: it maps it and follows page numbers. A file cut short (a full disk
during a copy, a bad restore) makes the first access past its end a SIGBUS that kills the
daemon without a log line; garbage over its pages surfaces as whichever exception the first
read happens to hit; a zero-length file is taken for a new environment and silently becomes
an empty store. LMDB 0.9 keeps no checksums, so what can be checked cheaply is consistency:

- the two meta pages (pages 0 and 1) have a meta header, LMDB's magic and data version 1,
  and the same page size;
- the newest meta (the larger transaction id, as LMDB picks it) names a last page that lies
  inside the file: otherwise it was truncated;
- the root page of each database — the free-page list, the main database, and every named
  database listed in the main database's leaf — lies inside that range and has a tree page
  header that carries its own page number.

That is a few `pread`s of 16 bytes, whatever the store's size. Deeper pages are not walked
(a start must not cost a read of the whole file); LMDB's own errors for them are translated
where the store reads.

Layout (lmdb.h / mdb.c of LMDB 0.9, 64-bit): a page starts with a 16-byte header
`{pgno u64, pad u16, flags u16, lower u16, upper u16}`; a meta page's body is `MDB_meta`
`{magic u32, version u32, address u64, mapsize u64, dbs[2] MDB_db, last_pg u64, txnid u64}`
with `MDB_db` `{pad u32, flags u16, depth u16, branch_pages u64, leaf_pages u64,
overflow_pages u64, entries u64, root u64}` (48 bytes; FREE's `pad` holds the page size). A
leaf node is `{lo u16, hi u16, flags u16, ksize u16, key, data}`, its offset listed in the
u16 array after the page header; a named database's node has flag F_SUBDATA and an MDB_db
as data. Little-endian: LMDB writes host order, and vigil runs on little-endian Linux.
"""

from __future__ import annotations

import os
import struct

PAGE_HEADER = struct.Struct("<QHHHH")
DB = struct.Struct("<IHHQQQQQ")
META = struct.Struct("<IIQQ48s48sQQ")
NODE = struct.Struct("<HHHH")
META_MAGIC = 0xBEEFC0DE
DATA_VERSION = 1
P_BRANCH, P_LEAF, P_META = 0x01, 0x02, 0x08
F_SUBDATA = 0x02
P_INVALID = 2**64 - 1
#: LMDB refuses page sizes outside these (MIN_PAGESIZE is 512 in 0.9; MAX_PAGESIZE 64 KiB).
PAGE_SIZE_MIN, PAGE_SIZE_MAX = 512, 65536
#: A B-tree of 2^64 entries with two keys a page is 64 levels deep: anything deeper is garbage.
DEPTH_MAX = 64


class DataFileDamaged(Exception):
    """`data.mdb` is not whole; the message says what is wrong (the caller adds the advice)."""


class NotAnLmdbFile(DataFileDamaged):
    """Its first page is no LMDB meta page at all (neither the flag nor the magic): some other
    file, rather than a damaged store."""


def check_data_file(path: str) -> None:
    """Check `path` (an LMDB `data.mdb`) as the module doc says; return if it looks whole.

    Call with no LMDB environment open on it (the daemon holds the state dir's lock).

    Raises:
        DataFileDamaged: empty, truncated, a damaged meta page, or a damaged root page;
            NotAnLmdbFile (a subclass) when it is no LMDB file at all.
        OSError: it cannot be read at all.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        _Checker(fd, os.fstat(fd).st_size).run()
    finally:
        os.close(fd)


class _Checker:
    def __init__(self, fd: int, size: int):
        self.fd = fd
        self.size = size
        self.page_size = 0
        self.last_pg = 0

    def read(self, offset: int, length: int) -> bytes:
        data = os.pread(self.fd, length, offset)
        if len(data) < length:
            raise DataFileDamaged(f"it ends at byte {self.size}, inside the page at byte {offset} "
                                  f"(it was truncated)")
        return data

    def run(self) -> None:
        if self.size == 0:
            raise DataFileDamaged("it is empty (0 bytes), so it holds no history (an interrupted "
                                  "first start, or a truncation)")
        first = self.meta(0, 0)
        page_size = DB.unpack(first[4])[0]
        if page_size & (page_size - 1) or not PAGE_SIZE_MIN <= page_size <= PAGE_SIZE_MAX:
            raise DataFileDamaged(f"meta page 0 gives a page size of {page_size} bytes")
        self.page_size = page_size
        second = self.meta(1, page_size)
        if DB.unpack(second[4])[0] != page_size:
            raise DataFileDamaged(f"meta page 1 gives a page size of {DB.unpack(second[4])[0]} "
                                  f"bytes, meta page 0 {page_size}")
        newest = max(first, second, key=lambda m: m[7])
        self.last_pg = newest[6]
        need = (self.last_pg + 1) * page_size
        if self.last_pg < 1 or need > self.size:
            raise DataFileDamaged(f"it is {self.size} bytes, but its last transaction needs {need} "
                                  f"bytes (it was truncated)")
        self.root(DB.unpack(newest[4]), "the free-page database")
        main = DB.unpack(newest[5])
        leaf = self.root(main, "the main database")
        if leaf is not None:
            for name, db in self.named_databases(leaf):
                self.root(db, f"the database {name!r}")

    def meta(self, number: int, offset: int) -> tuple:
        page = self.read(offset, PAGE_HEADER.size + META.size)
        _pgno, _pad, flags, _lower, _upper = PAGE_HEADER.unpack_from(page)
        if number == 0 and not flags & P_META and META.unpack_from(page, PAGE_HEADER.size)[0] != META_MAGIC:
            raise NotAnLmdbFile("its first page is not an LMDB meta page")
        if not flags & P_META:
            raise DataFileDamaged(f"meta page {number} is not an LMDB meta page (flags 0x{flags:x})")
        meta = META.unpack_from(page, PAGE_HEADER.size)
        if meta[0] != META_MAGIC:
            raise DataFileDamaged(f"meta page {number} is not an LMDB meta page (bad magic "
                                  f"0x{meta[0]:08x})")
        if meta[1] != DATA_VERSION:
            raise DataFileDamaged(f"meta page {number} is of LMDB data version {meta[1]}, not "
                                  f"{DATA_VERSION}")
        return meta

    def root(self, db: tuple, what: str) -> bytes | None:
        """Check a database's root page; return the page if it is a leaf (else None)."""
        _pad, _flags, depth, *_counts, entries, root = db
        if root == P_INVALID:
            if depth or entries:
                raise DataFileDamaged(f"{what} has {entries} entries but no root page")
            return None
        if not 2 <= root <= self.last_pg or not 1 <= depth <= DEPTH_MAX:
            raise DataFileDamaged(f"{what} has its root at page {root} and depth {depth}; the file "
                                  f"has pages up to {self.last_pg}")
        page = self.read(root * self.page_size, self.page_size)
        pgno, _pad, flags, _lower, _upper = PAGE_HEADER.unpack_from(page)
        if pgno != root or not flags & (P_BRANCH | P_LEAF) or flags & P_META:
            raise DataFileDamaged(f"page {root}, the root of {what}, is not a tree page (header "
                                  f"says page {pgno}, flags 0x{flags:x})")
        return page if flags & P_LEAF else None

    def named_databases(self, leaf: bytes) -> list[tuple[str, tuple]]:
        """(name, MDB_db) of every named database in the main database's leaf page."""
        _pgno, _pad, _flags, lower, upper = PAGE_HEADER.unpack_from(leaf)
        if not PAGE_HEADER.size <= lower <= upper <= self.page_size:
            raise DataFileDamaged(f"the main database's page has free space from {lower} to {upper}")
        found = []
        for i in range((lower - PAGE_HEADER.size) // 2):
            (at,) = struct.unpack_from("<H", leaf, PAGE_HEADER.size + 2 * i)
            if not upper <= at <= self.page_size - NODE.size:
                raise DataFileDamaged(f"the main database's node {i} lies outside its page")
            lo, hi, flags, ksize = NODE.unpack_from(leaf, at)
            key_at = at + NODE.size
            if flags & F_SUBDATA:
                if (lo | hi << 16) != DB.size or key_at + ksize + DB.size > self.page_size:
                    raise DataFileDamaged(f"the main database's node {i} is not a database record")
                name = leaf[key_at:key_at + ksize].decode("utf-8", "replace")
                found.append((name, DB.unpack_from(leaf, key_at + ksize)))
        return found
