"""`vigil top` against a real daemon, headless: Textual's own pilot drives the dashboard in
this process (its stream and calls go over the real socket), and the test reads the table.
Three executions change state live (busy → exited 0, failed 1, killed with the `k` key); the CLI refuses to draw without a terminal."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time

import pytest

from tests.support.executions import Gate, Session, cli_env, workspace  # noqa: F401 (fixture)

pytest.importorskip("textual")

from textual.widgets import DataTable  # noqa: E402

from vigil.client.top import TopApp, scope_opener  # noqa: E402

DEADLINE = 20.0


async def until(pilot, condition, what: str) -> None:
    """Let the app run until `condition()` holds; fail at the deadline (a real observation
    of the table each time, never a fixed wait)."""
    deadline = time.monotonic() + DEADLINE
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await pilot.pause(0.02)


def cell(app: TopApp, eid: str, column: str) -> str | None:
    table = app.query_one(DataTable)
    if eid not in table.rows:
        return None
    return str(table.get_cell(eid, column))


def test_top_shows_three_executions_changing_state_live(home, daemon, workspace, monkeypatch):
    for key, value in home.env.items():
        monkeypatch.setenv(key, value)
    s = Session(home, workspace)
    gates = [Gate(home.root / f"gate{i}") for i in range(3)]

    async def scenario() -> None:
        app = TopApp(scope_opener(str(workspace), autostart=False), all_workspaces=False)
        async with app.run_test(size=(200, 30)) as pilot:
            await until(pilot, lambda: app.subscriptions == 1, "the subscription")
            ids = [s.run(command=f"echo started-{i}; read x < {gate.path}; echo after-{i}; "
                                 f"exit {i}")["execution_id"] for i, gate in enumerate(gates)]
            for i, eid in enumerate(ids):
                await until(pilot, lambda: cell(app, eid, "line") == f"started-{i}",
                            f"row {i} and its first line")
                await until(pilot, lambda: cell(app, eid, "state") == "busy",
                            f"row {i} recognized busy")
                command = f"echo started-{i}; read x < {gates[i].path}; echo after-{i}; exit {i}"
                assert cell(app, eid, "command") == command[:60]
            await asyncio.to_thread(gates[0].open)
            await until(pilot, lambda: cell(app, ids[0], "state") == "exited 0", "row 0's end")
            assert cell(app, ids[0], "line") == "after-0"
            await asyncio.to_thread(gates[1].open)
            await until(pilot, lambda: cell(app, ids[1], "state") == "failed 1", "row 1's end")
            assert cell(app, ids[2], "state") == "busy"
            # The third is paused and resumed, then killed from the dashboard: its row
            # selected, `p`, `r`, `k`.
            table = app.query_one(DataTable)
            table.move_cursor(row=table.get_row_index(ids[2]))
            assert app.selected() == ids[2]
            await pilot.press("p")
            await until(pilot, lambda: app.message == f"paused {ids[2][:12]}", "the pause")
            assert s.get(ids[2])["paused"] is True
            await pilot.press("p")  # paused twice: the daemon's refusal, said in the footer
            await until(pilot, lambda: app.message.startswith(f"pause {ids[2][:12]}: "),
                        "the refusal")
            await pilot.press("r")
            await until(pilot, lambda: app.message == f"resumed {ids[2][:12]}", "the resume")
            assert s.get(ids[2])["paused"] is False
            await pilot.press("k")
            await until(pilot, lambda: cell(app, ids[2], "state") == "killed (15)",
                        "row 2 killed")
            assert app.message == f"sent SIGTERM to {ids[2][:12]}"
            assert app.view.stale == set() and app.view.dropped_total == 0
            await pilot.press("q")

    try:
        asyncio.run(scenario())
    finally:
        s.close()


def test_top_needs_a_terminal(home, daemon, workspace, cli_env):
    got = subprocess.run([sys.executable, "-m", "vigil.client.cli", "top"], capture_output=True,
                         text=True, env=cli_env, stdin=subprocess.DEVNULL)
    assert got.returncode == 2
    assert "vigil top needs a terminal (use `vigil ls` in scripts)" in got.stderr
