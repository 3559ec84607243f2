"""Shared helpers for the store tests (no tests here; imported by test_store_*.py)."""

from __future__ import annotations

from pathlib import Path

from vigil.daemon.store import ExecutionRecord, Store, new_execution_id
from vigil.daemon.settings import Settings

T0 = 1_700_000_000_000  # a fixed "now" in unix ms


class FakeClock:
    """A clock the test moves by hand (unix ms)."""

    def __init__(self, now: int = T0) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += int(seconds * 1000)


def open_store(tmp_path: Path, clock: FakeClock | None = None, **overrides) -> Store:
    settings = Settings(**{"store_initial_map_bytes": 8 << 20, **overrides})
    return Store.open(tmp_path / "state", settings, clock or FakeClock())


def new_record(scope: str = "local\0t1\0/w", started: int = T0, **fields) -> ExecutionRecord:
    base = dict(
        execution_id=new_execution_id(),
        scope=scope,
        thread_id="t1",
        workspace_root="/w",
        command="echo hi",
        argv=["echo", "hi"],
        cwd="/w",
        started_unix_ms=started,
    )
    base.update(fields)
    return ExecutionRecord(**base)
