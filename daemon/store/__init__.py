"""vigil.daemon.store — the LMDB execution history (DESIGN.md, "Store").

Synchronous; called from trio worker threads, one transaction per call.

- `records`: persisted Structs (`ExecutionRecord`, `RuntimeIdentity`, `StoredScreen`) and ids.
- `store`: `Store` (open, create/get/list/update, `commit_batch`, changes, recovery).
- `cursor`: authenticated opaque cursors.
- `pages`: bounded UTF-8-safe output, screen and scrollback pages.
- `scrollback`: the rendered scrollback lines of each execution (`ScrollbackUpdate`).
"""

from .cursor import (
    CATALOG,
    PAGE,
    CursorFields,
    decode_catalog_cursor,
    decode_cursor,
    encode_catalog_cursor,
    encode_cursor,
)
from .errors import CURSOR_MESSAGE, CursorError, ExecutionNotFound, InvalidArgument, StoreError
from .pages import read_output_page, read_output_tail, read_screen_page, read_scrollback_page
from .records import (
    RECORD_SCHEMA,
    ChangeEntry,
    ExecutionRecord,
    RuntimeIdentity,
    StoredScreen,
    new_execution_id,
    parse_execution_id,
    scope_hash,
)
from .scrollback import ScrollbackUpdate
from .store import BatchResult, CatalogView, Changes, ExecutionUpdate, Listing, Store, wall_clock_ms

__all__ = [
    "BatchResult",
    "CATALOG",
    "CURSOR_MESSAGE",
    "CatalogView",
    "ChangeEntry",
    "Changes",
    "CursorError",
    "CursorFields",
    "ExecutionNotFound",
    "ExecutionRecord",
    "ExecutionUpdate",
    "InvalidArgument",
    "Listing",
    "PAGE",
    "RECORD_SCHEMA",
    "RuntimeIdentity",
    "ScrollbackUpdate",
    "StoredScreen",
    "Store",
    "StoreError",
    "decode_catalog_cursor",
    "decode_cursor",
    "encode_catalog_cursor",
    "encode_cursor",
    "new_execution_id",
    "parse_execution_id",
    "read_output_page",
    "read_output_tail",
    "read_screen_page",
    "read_scrollback_page",
    "scope_hash",
    "wall_clock_ms",
]
