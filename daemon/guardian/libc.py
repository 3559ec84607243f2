"""The two C library calls the guardian makes, without the ctypes package.

`prctl(PR_SET_CHILD_SUBREAPER)` (reap orphaned grandchildren ourselves) and the raw
`rt_sigaction` syscall (reset the two real-time signals glibc reserves, which `signal`
refuses to touch) have no stdlib wrapper. ctypes' Python half (ctypes/__init__.py and what it
imports) costs a guardian about 0.5 MiB of private memory; its C core `_ctypes`, which that
half is built on, costs 0.1 MiB and is all two calls need: one integer-returning C function
type and the process's own symbol table.
"""

from __future__ import annotations

import os

import _ctypes


class _Int(_ctypes._SimpleCData):
    _type_ = "i"  # C int: what ctypes.c_int is


class _Function(_ctypes.CFuncPtr):
    """A C function returning int, saving errno for `get_errno` (ctypes.CDLL's default)."""

    _flags_ = _ctypes.FUNCFLAG_CDECL | _ctypes.FUNCFLAG_USE_ERRNO
    _restype_ = _Int


class _Process:
    """The symbols of this process (libc included): what ctypes.CDLL(None) looks up."""

    _handle = _ctypes.dlopen(None, os.RTLD_NOW)


_PROCESS = _Process()


def call(name: str, *args) -> int:
    """Call C function `name` with int, bytes (a pointer to them) or None (NULL) arguments.

    Raises:
        OSError: it returned -1 (with its errno).
    """
    result = _Function((name, _PROCESS))(*args)
    if result == -1:
        err = _ctypes.get_errno()
        raise OSError(err, f"{name}: {os.strerror(err)}")
    return result
