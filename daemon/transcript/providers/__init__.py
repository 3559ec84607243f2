"""Agent-emitted transcript events: an agent's own session log, found and normalized.

One normalizer per provider (`claude.ClaudeNormalizer`, `codex.CodexNormalizer`) over the
shared loop in `normalizer.py`; `discovery.find_session_log` finds the log of an execution;
`follow.LogFollower` reads it as it grows. The formats are described in
../shared/reference/agent-session-logs.md.
"""

from __future__ import annotations

from vigil.daemon.settings import DEFAULTS, Settings
from vigil.daemon.transcript.providers.claude import ClaudeNormalizer
from vigil.daemon.transcript.providers.codex import CodexNormalizer
from vigil.daemon.transcript.providers.discovery import (
    Candidate, Discovery, Provider, Rejected, find_session_log,
)
from vigil.daemon.transcript.providers.follow import LogFollower
from vigil.daemon.transcript.providers.items import (
    AgentEvent, Item, LogReset, NormalizerStats, TurnEnded,
)
from vigil.daemon.transcript.providers.normalizer import Normalizer

__all__ = [
    "AgentEvent", "Candidate", "ClaudeNormalizer", "CodexNormalizer", "Discovery", "Item",
    "LogFollower", "LogReset", "Normalizer", "NormalizerStats", "Provider", "Rejected",
    "TurnEnded", "find_session_log", "follow_log", "normalizer_for",
]

_NORMALIZERS: dict[str, type[Normalizer]] = {"claude": ClaudeNormalizer, "codex": CodexNormalizer}


def normalizer_for(provider: Provider, *, session_id: str | None = None, offset: int = 0,
                   settings: Settings = DEFAULTS) -> Normalizer:
    """A fresh normalizer for `provider` whose first fed byte is at `offset` of the log.

    Raises:
        ValueError: not a provider with a normalizer.
    """
    try:
        cls = _NORMALIZERS[provider]
    except KeyError:
        raise ValueError(f"no normalizer for {provider!r}: claude or codex") from None
    return cls(session_id=session_id, offset=offset, settings=settings)


def follow_log(provider: Provider, log: Candidate, *, offset: int | None = None,
               settings: Settings = DEFAULTS) -> LogFollower:
    """A follower of a discovered log, from its `start_offset` (or from `offset`, a
    `resume_offset` kept across a daemon restart)."""
    start = log.start_offset if offset is None else offset
    return LogFollower(log.path, normalizer_for(provider, session_id=log.session_id,
                                                offset=start, settings=settings),
                       offset=start, settings=settings)
