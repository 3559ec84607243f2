"""Threads and their scopes: who may see which executions.

A scope is (principal, thread_id, canonical workspace_root). `Initialize` canonicalizes the
workspace (realpath; it must be a directory) and opens a thread: new, resumed by id, or
resumed by a stable name. Every later call must quote the exact pair; a wrong workspace for
a real thread is answered exactly like a thread that does not exist (same code, same message,
same data), so the answer is no oracle for which threads exist.

The principal is the connection's (`hello`), never the request's: a thread belongs to the
principal that opened it, and another principal quoting its id — with the right workspace
or not — gets that same answer. Everything stored is keyed by the scope, so executions,
cursors and receipts of another principal are out of reach as well.

Threads are persisted in the store, so a thread survives a daemon restart — within bounds:
a thread name and a tool allowlist have wire limits, a principal holds at most
`threads_per_principal_max` threads, and a thread no call used for
`thread_idle_expiry_seconds` is forgotten (in memory and in the store) and from then on
answered exactly like one that never existed. When a thread was last used is kept in
memory and written through only now and then (`_touch`), so a call costs no store write.
"""

from __future__ import annotations

import hashlib
import os
import secrets
from typing import Callable

import msgspec

from vigil.daemon.settings import Settings
from vigil.protocol.api.daemon import LOCAL_PRINCIPAL
from vigil.protocol.errors import ErrorCode, VigilError


class ThreadRecord(msgspec.Struct, kw_only=True):
    """A persisted thread. `schema` lets later versions read old records."""

    thread_id: str
    workspace_root: str
    principal: str = LOCAL_PRINCIPAL
    name: str = ""
    mode: str = "wcgw"
    profile: str = "full"
    tools: list[str] | None = None
    created_unix_ms: int = 0
    #: When a call last used the thread, as last written (see Scopes._touch); 0 = never.
    last_used_unix_ms: int = 0
    schema: int = 1
    #: The thread's persistent shell (BashCommand): its execution and its marker nonce.
    #: Internal: never shown to clients.
    shell_execution_id: str | None = None
    shell_nonce: str | None = None
    #: The execution this thread was opened from (its caller runs under vigil): the
    #: thread's transcript is a child run of that execution's.
    parent_run_id: str | None = None

    @property
    def scope(self) -> str:
        return scope_key(self.principal, self.thread_id, self.workspace_root)


def scope_key(principal: str, thread_id: str, workspace_root: str) -> str:
    """A fixed-size key naming the scope (32 hex chars); no part of it is recoverable."""
    h = hashlib.blake2b(digest_size=16)
    for part in (principal, thread_id, workspace_root):
        h.update(part.encode("utf-8", "surrogateescape") + b"\0")
    return h.hexdigest()


def canonical_workspace(path: str) -> str:
    """realpath of `path`; it must be an absolute path to an existing directory.

    Raises:
        VigilError(invalid_request): relative, missing or not a directory.
    """
    if not path or not os.path.isabs(path):
        raise VigilError(ErrorCode.INVALID_REQUEST,
                         f"workspace_root must be an absolute path, got {path!r}",
                         {"field": "params.workspace_root"})
    real = os.path.realpath(path)
    if not os.path.isdir(real):
        raise VigilError(ErrorCode.INVALID_REQUEST,
                         f"workspace_root {path!r} is not a directory",
                         {"field": "params.workspace_root"})
    return real


def thread_not_found() -> VigilError:
    # One message for "no such thread" and "thread of another workspace": no oracle.
    return VigilError(ErrorCode.NOT_FOUND, "no such thread for this workspace; call Initialize",
                      {"field": "params.thread_id"})


def new_thread_id() -> str:
    return secrets.token_hex(16)


def _too_long(what: str, size: int, limit: int, setting: str, field: str) -> VigilError:
    return VigilError(ErrorCode.INVALID_REQUEST,
                      f"{what} {size} bytes; at most {limit} are accepted ({setting})",
                      {"field": field})


def check_thread_params(thread_name: str, tools: list[str] | None, limits: Settings) -> None:
    """Refuse a thread name or tool allowlist past the wire limits, naming the field.

    Raises:
        VigilError(invalid_request): with data {"field": ...}.
    """
    size = len(thread_name.encode("utf-8", "surrogateescape"))
    if size > limits.thread_name_max_bytes:
        raise _too_long("thread_name is", size, limits.thread_name_max_bytes,
                        "thread_name_max_bytes", "params.thread_name")
    if tools is None:
        return
    if len(tools) > limits.thread_tools_max:
        raise VigilError(ErrorCode.INVALID_REQUEST,
                         f"tools lists {len(tools)} tools; at most {limits.thread_tools_max} are "
                         "accepted (thread_tools_max)", {"field": "params.tools"})
    for i, tool in enumerate(tools):
        size = len(tool.encode("utf-8", "surrogateescape"))
        if size > limits.tool_name_max_bytes:
            raise _too_long("a tool name of", size, limits.tool_name_max_bytes,
                            "tool_name_max_bytes", f"params.tools[{i}]")


class Scopes:
    """All live threads, in memory, written through to the store on every change."""

    def __init__(self, threads: list[ThreadRecord], save: Callable[[ThreadRecord], None],
                 delete: Callable[[str], None], clock_ms: Callable[[], int], settings: Settings):
        self._save = save
        self._delete = delete
        self._clock_ms = clock_ms
        self._settings = settings
        self._expiry_ms = int(settings.thread_idle_expiry_seconds * 1000)
        #: Write a thread's last use at most this often: a tenth of the expiry, at most hourly.
        self._touch_ms = min(self._expiry_ms // 10, 3600_000)
        self._by_id = {t.thread_id: t for t in threads}
        #: thread_id -> when a call last used it (ms); the persisted value lags behind.
        self._last_used = {t.thread_id: max(t.last_used_unix_ms, t.created_unix_ms) for t in threads}
        self._sweep(self._clock_ms())

    def open(self, workspace_root: str, *, thread_id: str = "", thread_name: str = "",
             mode: str = "wcgw", profile: str = "full", tools: list[str] | None = None,
             change_mode: bool = False, principal: str = LOCAL_PRINCIPAL
             ) -> tuple[ThreadRecord, bool]:
        """Return (thread, resumed). A given thread_id must exist for that workspace and
        belong to `principal`.

        Raises:
            VigilError: invalid_request (a name or allowlist past its limit, a bad workspace),
                not_found (no such thread for this workspace and principal, or expired),
                limit_exceeded (a new thread past threads_per_principal_max).
        """
        check_thread_params(thread_name, tools, self._settings)
        workspace = canonical_workspace(workspace_root)
        now = self._clock_ms()
        if thread_id:
            thread = self._live(thread_id, now)
            if thread is None or thread.workspace_root != workspace or thread.principal != principal:
                raise thread_not_found()
            if change_mode:
                thread = msgspec.structs.replace(thread, mode=mode, profile=profile, tools=tools)
                self._by_id[thread_id] = thread
                self._save(thread)
            return self._touch(thread, now), True
        self._sweep(now)
        if thread_name:
            for thread in self._by_id.values():
                if (thread.name == thread_name and thread.workspace_root == workspace
                        and thread.principal == principal):
                    return self._touch(thread, now), True
        held = sum(1 for t in self._by_id.values() if t.principal == principal)
        if held >= self._settings.threads_per_principal_max:
            raise VigilError(
                ErrorCode.LIMIT_EXCEEDED,
                f"this principal already has {held} threads, the most allowed "
                "(threads_per_principal_max); resume one by thread_id or thread_name, or let "
                "idle ones expire (thread_idle_expiry_seconds)",
                {"field": "params.thread_name", "limit": "threads_per_principal_max",
                 "threads": held})
        thread = ThreadRecord(thread_id=new_thread_id(), workspace_root=workspace,
                              principal=principal, name=thread_name, mode=mode, profile=profile,
                              tools=tools, created_unix_ms=now, last_used_unix_ms=now)
        self._save(thread)
        self._by_id[thread.thread_id] = thread
        self._last_used[thread.thread_id] = now
        return thread, False

    def update(self, thread: ThreadRecord, **changes) -> ThreadRecord:
        thread = msgspec.structs.replace(thread, **changes)
        self._by_id[thread.thread_id] = thread
        self._save(thread)
        return thread

    def get(self, thread_id: str) -> ThreadRecord | None:
        """The thread with this id, whoever it belongs to (callers check ownership)."""
        return self._by_id.get(thread_id)

    def all(self) -> list[ThreadRecord]:
        return list(self._by_id.values())

    def check(self, thread_id: str, workspace_root: str,
              principal: str = LOCAL_PRINCIPAL) -> ThreadRecord:
        """The thread for this exact pair of this principal, or `not_found` (identical for
        every mismatch, and for a thread that expired)."""
        now = self._clock_ms()
        thread = self._live(thread_id, now)
        if thread is None or thread.workspace_root != workspace_root or thread.principal != principal:
            raise thread_not_found()
        return self._touch(thread, now)

    # --- expiry -------------------------------------------------------------------------------

    def _live(self, thread_id: str, now: int) -> ThreadRecord | None:
        """The thread, unless it is unknown or has expired (then it is forgotten now)."""
        thread = self._by_id.get(thread_id)
        if thread is not None and now - self._last_used[thread_id] > self._expiry_ms:
            self._forget(thread_id)
            return None
        return thread

    def _sweep(self, now: int) -> None:
        """Forget every expired thread (before counting a principal's threads)."""
        for thread_id, used in list(self._last_used.items()):
            if now - used > self._expiry_ms:
                self._forget(thread_id)

    def _forget(self, thread_id: str) -> None:
        del self._by_id[thread_id]
        del self._last_used[thread_id]
        self._delete(thread_id)

    def _touch(self, thread: ThreadRecord, now: int) -> ThreadRecord:
        """Note a use; write it through only when the stored value is `_touch_ms` old, so a
        restart loses at most that much of a thread's idle time, and a call costs no write."""
        self._last_used[thread.thread_id] = now
        if now - thread.last_used_unix_ms >= self._touch_ms:
            thread = self.update(thread, last_used_unix_ms=now)
        return thread
