"""Execution logs through the real daemon (seeds/002, "Execution logs"): what vigil did and
saw for one execution, levelled, kept with it (bounded), paged by offset and limit and
filtered by level — `Execution events` and `vigil events`; and `list` by state."""

import re

from tests.support.executions import (  # noqa: F401  (fixtures)
    Session,
    cli_env,
    remote_error,
    session,
    workspace,
)


def events(session, eid: str, **params) -> dict:
    return session.execution({"type": "events", "execution_id": eid, **params})["data"]


def test_the_log_says_what_happened_in_order(session):
    eid = session.run(command="exit 3")["execution_id"]
    session.wait_exit(eid)
    log = events(session, eid)
    kinds = [e["kind"] for e in log["events"]]
    # A recognized state may come between, depending on what the screen showed.
    assert [k for k in kinds if k != "state"] == ["started", "guardian_connected", "exited"]
    assert [e["seq"] for e in log["events"]] == list(range(len(kinds)))
    first, last = log["events"][0], log["events"][-1]
    assert (first["level"], first["message"]) == \
        ("info", f"started (standalone, 50x200) in {session.workspace_root}")
    assert (last["level"], last["message"], last["data"]) == \
        ("warn", "exited 3", {"exit_code": 3, "cancelled": False})
    assert (log["next_offset"], log["has_more"], log["first_offset"], log["dropped"]) == \
        (len(kinds), False, 0, 0)


def test_paging_by_offset_and_limit_and_the_level_filter(session, home, cli_env):
    eid = session.run(command="echo up; exec sleep 100")["execution_id"]
    session.read_until(eid, lambda p: p["text"] == "up\r\n")
    for _ in range(3):
        session.call("pause", execution_id=eid)
        session.call("resume", execution_id=eid)
    session.call("signal", execution_id=eid, signal="KILL")
    session.wait_exit(eid)
    whole = events(session, eid)["events"]
    assert len(whole) >= 10

    paged, offset = [], 0
    while True:
        page = events(session, eid, offset=offset, limit=3)
        paged += page["events"]
        assert len(page["events"]) <= 3
        offset = page["next_offset"]
        if not page["has_more"]:
            break
    assert paged == whole
    assert events(session, eid, offset=offset)["events"] == []
    assert events(session, eid, offset=10_000)["next_offset"] == 10_000

    warn = events(session, eid, level="warn")["events"]
    assert [(e["level"], e["kind"], e["message"]) for e in warn] == \
        [("warn", "exited", "ended by signal 9")]
    controls = [(e["kind"], e["message"]) for e in whole
                if e["kind"] in ("paused", "resumed", "signal")]
    assert controls == [("signal", "SIGSTOP sent to the process group"),
                        ("paused", "paused: SIGSTOP sent to the process group"),
                        ("signal", "SIGCONT sent to the process group"),
                        ("resumed", "resumed: SIGCONT sent to the process group")] * 3 + \
        [("signal", "SIGKILL sent to the process group")]

    out = home.cli("events", eid[:8], "--level", "warn", env=cli_env)
    assert out.returncode == 0, out.stderr
    assert re.fullmatch(r"\s*\d+  \d\d:\d\d:\d\d\.\d{3}  WARN   ended by signal 9\n", out.stdout)


def test_the_log_is_bounded_oldest_first(home, workspace):
    home.write_config("execution_events_max = 16\n")
    home.start_daemon()
    s = Session(home, workspace)
    try:
        eid = s.run(command="echo up; exec sleep 100")["execution_id"]
        s.read_until(eid, lambda p: p["text"] == "up\r\n")
        for _ in range(10):
            s.call("pause", execution_id=eid)
            s.call("resume", execution_id=eid)
        log = events(s, eid)
        assert len(log["events"]) == 16
        assert log["first_offset"] == log["dropped"] == log["events"][0]["seq"] > 0
        assert [e["seq"] for e in log["events"]] == \
            list(range(log["first_offset"], log["first_offset"] + 16))
        s.call("cancel", execution_id=eid)
    finally:
        s.close()


def test_bad_events_requests_are_refused(session, home, cli_env):
    eid = session.run(argv=["true"])["execution_id"]
    err = remote_error(events, session, eid, limit=0)
    assert (err.code, err.message, err.data["field"]) == \
        ("invalid_request", "limit must be between 1 and 1000, got 0", "params.action.limit")
    err = remote_error(events, session, eid, level="loud")
    assert err.code == "invalid_request"
    err = remote_error(events, session, eid, offset=-1)
    assert err.code == "invalid_request"
    err = remote_error(events, session, "0" * 32)
    assert err.code == "not_found"
    bad = home.cli("events", eid, "--limit", "0", env=cli_env)
    assert (bad.returncode, bad.stderr) == (2, "vigil: error: --limit must be at least 1, got 0\n")


def test_list_by_state_active_and_history(session, home, cli_env):
    done = session.run(argv=["true"])["execution_id"]
    session.wait_exit(done)
    live = session.run(command="echo up; exec sleep 100")["execution_id"]
    session.read_until(live, lambda p: p["text"] == "up\r\n")
    session.call("pause", execution_id=live)

    def ids(state=None):
        action = {"type": "list"} if state is None else {"type": "list", "state": state}
        data = session.execution(action)["data"]
        return [e["execution_id"] for e in data["executions"]], data["total"]

    assert ids() == ([live, done], 2)
    assert ids("active") == ([live], 1)
    assert ids("history") == ([done], 1)
    err = remote_error(session.execution, {"type": "list", "state": "paused"})
    assert err.code == "invalid_request"

    out = home.cli("ls", "--state", "active", env=cli_env)
    assert [line.split()[:2] for line in out.stdout.splitlines()[1:]] == [[live[:12], "paused"]]
    out = home.cli("ls", "--state", "history", env=cli_env)
    assert [line.split()[:3] for line in out.stdout.splitlines()[1:]] == \
        [[done[:12], "exited", "0"]]
    session.call("cancel", execution_id=live)


def test_recovery_after_a_daemon_restart_is_in_the_log(home, workspace):
    first = home.start_daemon()
    s = Session(home, workspace)
    try:
        eid = s.run(command="echo up; exec sleep 100")["execution_id"]
        s.read_until(eid, lambda p: p["text"] == "up\r\n")
        events(s, eid)  # a read writes what is queued: the kill below loses none of it
    finally:
        s.close()
    first.kill()
    home.start_daemon()
    s = Session(home, workspace)
    try:
        log = events(s, eid)["events"]
        kinds = [e["kind"] for e in log if e["kind"] != "state"]
        assert kinds == ["started", "guardian_connected", "recovery", "guardian_connected"]
        recovery = next(e for e in log if e["kind"] == "recovery")
        assert (recovery["level"], recovery["message"]) == \
            ("info", "recovery after a daemon restart: re-attaching to the guardian")
        s.call("cancel", execution_id=eid)
    finally:
        s.close()
