"""Helpers for the agent-log normalizer tests: feed a log in given pieces, end it."""

from __future__ import annotations

from vigil.daemon.settings import Settings
from vigil.daemon.transcript.providers import Normalizer


def normalize(cls: type[Normalizer], data: bytes, sizes=None, **settings) -> tuple[list, Normalizer]:
    """Every item of `data` fed to a fresh `cls` in pieces of `sizes` (whole by default),
    then the log's end; and the normalizer, for its counters."""
    n = cls(settings=Settings(**settings))
    items, i = [], 0
    for size in sizes or [len(data)]:
        items += n.feed(data[i:i + size])
        i += size
    return items + n.close(), n
