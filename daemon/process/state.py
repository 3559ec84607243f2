"""The daemon's process-wide runtime state (never persisted): identity, location, load."""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path

from vigil.daemon.settings import Settings


@dataclass
class DaemonState:
    settings: Settings
    socket_path: Path
    state_dir: Path
    socket_activated: bool = False
    #: Changes every time a daemon starts: lets clients notice a restart between calls.
    epoch: str = field(default_factory=lambda: secrets.token_hex(8))
    started_monotonic: float = field(default_factory=time.monotonic)
    connections: int = 0
