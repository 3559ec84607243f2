"""The daemon process's memory policy, set once at start by the composition root (main.py)."""

from __future__ import annotations


def limit_malloc_arenas(arenas: int = 2) -> None:
    """Cap glibc's malloc arenas. Store reads and writes run in trio worker threads, and
    glibc gives each thread its own arena (up to 8 per core): under 50 clients the daemon's
    anonymous memory grew ~14 MiB a round, to 104 MiB, against ~40 MiB flat with two arenas
    (tests/reliability/test_load.py). A no-op where malloc is not glibc's."""
    try:
        import ctypes

        ctypes.CDLL(None).mallopt(-8, arenas)  # M_ARENA_MAX
    except (OSError, AttributeError):
        pass
