"""`vigil top`: a live full-screen dashboard of executions, on Textual (imported by this
command only, so every other command stays fast).

One row per execution — id, state (the recognizer's while it runs: busy, awaiting input,
awaiting approval; the outcome once it ended), age, CPU, the latest step or tool, the last
output line, the command — kept current from a `subscribe` stream read in a worker thread.
Executions that missed events (`DROPPED`, a gap in their `seq`, a reconnect after the daemon
went away) are merged from `trace_snapshot`, so the table never shows a gap as a state.

CPU is read here, from /proc, once a second: the CPU time of the execution's whole process
group (its command and everything the command started), as a percentage of one core.

Keys: `a` attach (the dashboard steps aside for `vigil attach` and comes back), `k` kill
(SIGTERM to the process group), `K` SIGKILL, `q` quit. Pause, resume and approve are not
offered: the daemon has no such methods yet.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from typing import Any, Callable

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Footer, Header, Static

from vigil.protocol.api.projection import ProjectionEvent, SubscribeResult, TraceSnapshotResult
from vigil.protocol.errors import VigilError

from .connection import DaemonUnreachable
from .projection import ProjectionView, state_text

COLUMNS = (("id", "ID"), ("state", "STATE"), ("age", "AGE"), ("cpu", "CPU%"),
           ("activity", "STEP/TOOL"), ("line", "LAST LINE"), ("command", "COMMAND"))
#: How long the stream waits before connecting again after losing the daemon.
RECONNECT_SECONDS = 1.0


def group_cpu_ticks() -> dict[int, int]:
    """utime + stime (clock ticks) of every process, summed by process group."""
    ticks: dict[int, int] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue  # gone meanwhile
        fields = stat[stat.rfind(b")") + 2:].split()
        pgrp = int(fields[2])
        ticks[pgrp] = ticks.get(pgrp, 0) + int(fields[11]) + int(fields[12])
    return ticks


def age_text(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds // 60 % 60:02d}m"


class TopApp(App):
    """Args:
        connect: opens a connection and the CLI's scope `(client, scope)` for a workspace
            (None: the command's own).
        all_workspaces: show every workspace's executions (`--all`).
    """

    TITLE = "vigil top"
    BINDINGS = [
        Binding("q", "quit", "quit"),
        Binding("a", "attach", "attach"),
        Binding("k", "kill('TERM')", "kill"),
        Binding("K", "kill('KILL')", "kill -9"),
        Binding("p", "control('pause')", "pause"),
        Binding("r", "control('resume')", "resume"),
    ]

    def __init__(self, connect: Callable[[str | None], tuple[Any, Any]], all_workspaces: bool,
                 attach_argv: Callable[[str, str], list[str]] | None = None):
        super().__init__()
        self._connect = connect
        self._all = all_workspaces
        self._attach_argv = attach_argv
        self.view = ProjectionView()
        self.message = ""
        self._stop = threading.Event()
        self._calls_lock = threading.Lock()
        self._calls: dict[str | None, tuple[Any, Any]] = {}
        self._cpu_prev: tuple[float, dict[int, int]] | None = None
        self.cpu: dict[str, float] = {}
        #: Subscriptions made so far (a test waits for the first; reconnects add one each).
        self.subscriptions = 0

    # --- layout ------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Header()
        yield DataTable(id="executions", cursor_type="row", zebra_stripes=True)
        yield Static(id="message")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        for key, label in COLUMNS:
            table.add_column(label, key=key)
        self.set_interval(1.0, self._tick)
        threading.Thread(target=self._stream, name="vigil-top-stream", daemon=True).start()

    def on_unmount(self) -> None:
        self._stop.set()
        with self._calls_lock:
            for client, _ in self._calls.values():
                client.close()
            self._calls.clear()

    # --- the stream (a worker thread: the client is blocking) -------------------------------

    def _stream(self) -> None:
        while not self._stop.is_set():
            try:
                client, scope = self._connect(None)
            except (DaemonUnreachable, VigilError) as exc:
                self._say(f"daemon unreachable: {exc}; retrying")
                self._stop.wait(RECONNECT_SECONDS)
                continue
            try:
                with client:
                    answer = client.call_typed("subscribe", scope.params(
                        all_workspaces=self._all))
                    self._ui(self._subscribed, answer)
                    while not self._stop.is_set():
                        self._ui(self._apply, client.next_event(ProjectionEvent))
                        if self.view.stale:
                            self._merge_stale()
            except DaemonUnreachable as exc:
                if self._stop.is_set():
                    return
                self._say(f"{exc}; reconnecting")
                self.view.stale.update(self.view.rows)  # what happened meanwhile is merged
                self._stop.wait(RECONNECT_SECONDS)

    def _ui(self, fn: Callable, *args) -> None:
        try:
            self.call_from_thread(fn, *args)
        except RuntimeError:  # the app is gone (quit while an event was in flight)
            self._stop.set()

    def _say(self, text: str) -> None:
        self._ui(self._show_message, text)

    def _merge_stale(self) -> None:
        for eid in list(self.view.stale):
            row = self.view.rows.get(eid)
            try:
                snap = self._call(row.workspace_root if row else None, "trace_snapshot",
                                  execution_id=eid, after_seq=row.seq if row else 0,
                                  all_workspaces=self._all)
            except VigilError:
                self.view.stale.discard(eid)  # forgotten by the daemon: keep what we have
                continue
            self._ui(self._merged, snap)

    def _call(self, workspace: str | None, method: str, **params) -> Any:
        """A call on the connection for `workspace`'s CLI scope (opened on first use)."""
        key = None if workspace is None or not self._all else workspace
        with self._calls_lock:
            if key not in self._calls:
                self._calls[key] = self._connect(key)
            client, scope = self._calls[key]
            try:
                return client.call_typed(method, scope.params(**params))
            except DaemonUnreachable:
                client.close()
                del self._calls[key]
                raise

    # --- on the UI thread ---------------------------------------------------------------------

    def _subscribed(self, answer: SubscribeResult) -> None:
        self.subscriptions += 1
        self.view.reset(answer.executions)
        for eid in list(self.view.rows):
            self._render_row(eid)
        self._show_message(f"{len(answer.executions)} executions; live")

    def _apply(self, event) -> None:
        eid = self.view.apply(event)
        if eid is not None:
            self._render_row(eid)
        elif type(event).__name__ == "DroppedEvent":
            self._show_message(f"{self.view.dropped_total} events dropped by the daemon for "
                               f"this view (slow terminal); merging")

    def _merged(self, snap: TraceSnapshotResult) -> None:
        self._render_row(self.view.merge(snap))

    def _show_message(self, text: str) -> None:
        self.message = text
        self.query_one("#message", Static).update(text)

    def _cells(self, eid: str) -> dict[str, str]:
        row = self.view.rows[eid]
        end = row.ended_unix_ms / 1000 if row.ended_unix_ms else time.time()
        cpu = self.cpu.get(eid)
        return {"id": eid[:12], "state": state_text(row),
                "age": age_text(end - row.started_unix_ms / 1000),
                "cpu": "" if cpu is None or row.outcome else f"{cpu:.0f}",
                "activity": self.view.activity.get(eid, ""), "line": row.last_line[:60],
                "command": row.command[:60]}

    def _render_row(self, eid: str) -> None:
        table = self.query_one(DataTable)
        cells = self._cells(eid)
        if eid not in table.rows:
            table.add_row(*(cells[key] for key, _ in COLUMNS), key=eid)
            return
        for key, value in cells.items():
            table.update_cell(eid, key, value)

    def _tick(self) -> None:
        now = time.monotonic()
        ticks = group_cpu_ticks()
        if self._cpu_prev is not None:
            then, before = self._cpu_prev
            hz = os.sysconf("SC_CLK_TCK")
            for eid, row in self.view.rows.items():
                if row.pid is not None and not row.outcome:
                    used = ticks.get(row.pid, 0) - before.get(row.pid, 0)
                    self.cpu[eid] = max(0.0, 100.0 * used / hz / max(now - then, 1e-3))
        self._cpu_prev = (now, ticks)
        for eid, row in self.view.rows.items():
            if not row.outcome:
                self._render_row(eid)

    # --- keys ---------------------------------------------------------------------------------

    def selected(self) -> str | None:
        table = self.query_one(DataTable)
        if not table.row_count:
            return None
        return table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value

    def action_kill(self, signal: str) -> None:
        self._control_selected("signal", f"sent SIG{signal} to", "kill", signal=signal)

    def action_control(self, method: str) -> None:
        """`pause` (SIGSTOP to its process group) or `resume` (SIGCONT)."""
        self._control_selected(method, f"{method}d", method)

    def _control_selected(self, method: str, done: str, what: str, **params: Any) -> None:
        eid = self.selected()
        if eid is not None:
            threading.Thread(target=self._control, args=(eid, method, done, what, params),
                             daemon=True).start()

    def _control(self, eid: str, method: str, done: str, what: str,
                 params: dict[str, Any]) -> None:
        """One call off the UI thread; its outcome (or the daemon's refusal) in the footer."""
        row = self.view.rows.get(eid)
        try:
            self._call(row.workspace_root if row else None, method, execution_id=eid, **params)
            self._say(f"{done} {eid[:12]}")
        except VigilError as exc:
            self._say(f"{what} {eid[:12]}: {exc.message}")

    def action_attach(self) -> None:
        eid = self.selected()
        row = self.view.rows.get(eid) if eid else None
        if row is None or self._attach_argv is None:
            return
        if row.outcome:
            self._show_message(f"{eid[:12]} has ended: nothing to attach to")
            return
        with self.suspend():
            subprocess.run(self._attach_argv(row.workspace_root, eid))


def scope_opener(default_workspace: str | None, autostart: bool = True):
    """What `TopApp` connects with: a workspace (None: `default_workspace`, else the CLI's
    default) → (client, the CLI's scope there)."""
    from .autostart import connect
    from .scope import Scope

    def open_scope(workspace: str | None):
        client = connect(autostart=autostart)
        try:
            return client, Scope(client, workspace or default_workspace)
        except BaseException:
            client.close()
            raise

    return open_scope


def attach_argv(workspace: str, eid: str) -> list[str]:
    return [sys.executable, "-m", "vigil.client.cli", "--workspace", workspace, "attach", eid]


def run(args) -> int:
    """The `vigil top` handler's body: the dashboard, until `q`."""
    TopApp(scope_opener(args.workspace, not args.no_autostart), args.all, attach_argv).run()
    return 0
