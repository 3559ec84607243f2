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

Threads are persisted in the store, so a thread survives a daemon restart.
"""

from __future__ import annotations

import hashlib
import os
import secrets
from typing import Callable

import msgspec

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


class Scopes:
    """All threads, in memory, written through to the store on every change."""

    def __init__(self, threads: list[ThreadRecord], save: Callable[[ThreadRecord], None],
                 clock_ms: Callable[[], int]):
        self._by_id = {t.thread_id: t for t in threads}
        self._save = save
        self._clock_ms = clock_ms

    def open(self, workspace_root: str, *, thread_id: str = "", thread_name: str = "",
             mode: str = "wcgw", profile: str = "full", tools: list[str] | None = None,
             change_mode: bool = False, principal: str = LOCAL_PRINCIPAL
             ) -> tuple[ThreadRecord, bool]:
        """Return (thread, resumed). A given thread_id must exist for that workspace and
        belong to `principal`."""
        workspace = canonical_workspace(workspace_root)
        if thread_id:
            thread = self._by_id.get(thread_id)
            if thread is None or thread.workspace_root != workspace or thread.principal != principal:
                raise thread_not_found()
            if change_mode:
                thread = msgspec.structs.replace(thread, mode=mode, profile=profile, tools=tools)
                self._by_id[thread_id] = thread
                self._save(thread)
            return thread, True
        if thread_name:
            for thread in self._by_id.values():
                if (thread.name == thread_name and thread.workspace_root == workspace
                        and thread.principal == principal):
                    return thread, True
        thread = ThreadRecord(thread_id=new_thread_id(), workspace_root=workspace,
                              principal=principal, name=thread_name, mode=mode, profile=profile, tools=tools,
                              created_unix_ms=self._clock_ms())
        self._save(thread)
        self._by_id[thread.thread_id] = thread
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
        every mismatch)."""
        thread = self._by_id.get(thread_id)
        if thread is None or thread.workspace_root != workspace_root or thread.principal != principal:
            raise thread_not_found()
        return thread
