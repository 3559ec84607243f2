"""One-line logs on stderr, shaped for journald.

Under systemd (`$JOURNAL_STREAM` set) each line starts with the sd-daemon priority prefix
`<N>` that journald turns into the entry's priority, and carries no timestamp (the journal
adds its own). Elsewhere lines carry a UTC timestamp. Either way: one event, one line.
"""

from __future__ import annotations

import logging
import os
import sys

_PRIORITY = {logging.DEBUG: 7, logging.INFO: 6, logging.WARNING: 4, logging.ERROR: 3,
             logging.CRITICAL: 2}


class _JournalFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record).replace("\n", " | ")
        return f"<{_PRIORITY.get(record.levelno, 6)}>{text}"


class _PlainFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return super().format(record).replace("\n", " | ")


def setup(level: str = "INFO") -> None:
    handler = logging.StreamHandler(sys.stderr)
    if os.environ.get("JOURNAL_STREAM"):
        handler.setFormatter(_JournalFormatter("%(name)s: %(message)s"))
    else:
        fmt = _PlainFormatter("%(asctime)s %(levelname)s %(name)s[%(process)d]: %(message)s",
                              "%Y-%m-%dT%H:%M:%S")
        handler.setFormatter(fmt)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(os.environ.get("VIGIL_LOG_LEVEL", level).upper())
