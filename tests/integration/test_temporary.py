"""Managed temporary helpers through a real daemon (issue 16; seeds/000 "Release managed
temporary helpers" and `temporary_usage_schema`): the thread's private directory, the
listing's revision and budget, and every release outcome — released, in_use (open by a
running child, mapped, its executable, named by a running shell command), not_found,
refused (a symlink pointing outside, `..`, `/`, NUL) — a stale revision refused whole, and
maintenance that reports and never deletes."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest

from tests.support.daemon import wait_for
from tests.support.executions import (  # noqa: F401 (fixtures)
    Gate,
    Session,
    cli_env,
    python_child,
    remote_error,
    session,
    workspace,
)
from tests.support.mcp import mcp_stdio, run, usage_events

LIST = {"type": "list"}
EMPTY_USAGE = {"temporary_usage_schema": 1, "temporary_file_count": 0, "temporary_bytes": 0,
               "temporary_budget_files": 256, "temporary_budget_bytes": 64 << 20,
               "temporary_over_budget": False}


def listing(s: Session) -> dict:
    return s.call("Temporary", action=LIST)


def release(s: Session, names: list[str], revision: str | None = None) -> dict:
    if revision is None:
        revision = listing(s)["revision"]
    return s.call("Temporary", action={"type": "release_temporary", "names": names,
                                       "revision": revision})


def temporary_dir(s: Session) -> Path:
    return Path(listing(s)["directory"])


def outcomes(result: dict) -> list[tuple]:
    return [(r["name"], r["status"], r.get("reason")) for r in result["results"]]


def test_initialize_returns_a_private_directory_per_thread_and_principal(home, daemon,
                                                                          workspace):
    a, b = Session(home, workspace, "a"), Session(home, workspace, "b")
    with home.client(principal="http:alice") as alice:
        other = alice.call("Initialize", {"workspace_root": str(workspace), "thread_name": "a"})
    try:
        init = a.client.call("Initialize", {"workspace_root": str(workspace), "thread_name": "a"})
        path = Path(init["temporary_dir"])
        assert path == temporary_dir(a)
        assert path.parent.parent == home.state / "temporary" and path.name == a.thread_id
        for level in (path, path.parent, path.parent.parent):
            st = level.stat()
            assert stat.S_IMODE(st.st_mode) == 0o700 and st.st_uid == os.getuid()
        assert temporary_dir(b) != path and temporary_dir(b).parent == path.parent
        # Another principal's thread of the same name, same workspace: another tree.
        assert Path(other["temporary_dir"]).parent != path.parent
        # Loosened permissions are made private again at the next Initialize.
        path.chmod(0o755)
        a.client.call("Initialize", {"workspace_root": str(workspace), "thread_name": "a"})
        assert stat.S_IMODE(path.stat().st_mode) == 0o700
    finally:
        a.close()
        b.close()


def test_measured_empty_budget_reports_zeros_and_not_over(home, daemon, session):
    result = listing(session)
    assert result["helpers"] == [] and result["helpers_omitted"] == 0
    assert result["usage"] == EMPTY_USAGE
    assert result["maintenance"] == {"old_helpers": [], "old_after_seconds": 86400.0,
                                     "siblings": [], "siblings_omitted": 0}
    # The usage log carries the same measurement, marked with its schema (written within
    # usage_log_flush_seconds).
    calls = wait_for(lambda: [e for e in usage_events(home) if e["event"] == "tool_call"
                              and e["tool"] == "Temporary"], what="the call in the usage log")
    call = calls[-1]
    assert {k: v for k, v in call.items() if k.startswith("temporary_")} == EMPTY_USAGE
    assert call["action"] == "list"


def test_listing_and_a_revision_that_changes_on_every_change(home, daemon, session):
    d = temporary_dir(session)
    seen = [listing(session)["revision"]]

    def changed() -> dict:
        result = listing(session)
        assert result["revision"] not in seen
        seen.append(result["revision"])
        return result

    (d / "h.py").write_text("print(1)\n")
    result = changed()
    assert [(h["name"], h["kind"], h["size_bytes"]) for h in result["helpers"]] == [
        ("h.py", "file", 9)]
    assert result["helpers"][0]["mtime_unix_ms"] == (d / "h.py").stat().st_mtime_ns // 10**6
    assert result["usage"]["temporary_file_count"] == 1 and result["usage"]["temporary_bytes"] == 9
    with open(d / "h.py", "a") as f:
        f.write("x")
    changed()
    (d / "h.py").chmod(0o700)
    changed()
    os.utime(d / "h.py", ns=(0, 10**9))
    changed()
    (d / "sub").mkdir()
    changed()
    (d / "sub" / "deep.bin").write_bytes(b"12345")
    result = changed()
    assert result["usage"]["temporary_bytes"] == 10 + 5
    assert listing(session)["revision"] == seen[-1]  # nothing changed: the same revision


def test_release_then_retry_is_idempotent(home, daemon, session):
    d = temporary_dir(session)
    (d / "a.py").write_text("a")
    (d / "b.txt").write_text("bb")
    first = release(session, ["a.py", "missing"])
    assert outcomes(first) == [("a.py", "released", None), ("missing", "not_found", None)]
    assert first["partial"] is True and not (d / "a.py").exists() and (d / "b.txt").exists()
    assert first["usage"]["temporary_file_count"] == 1
    assert first["revision"] == listing(session)["revision"]
    again = release(session, ["a.py", "b.txt"], first["revision"])
    assert outcomes(again) == [("a.py", "released", "already_released"),
                               ("b.txt", "released", None)]
    assert again["partial"] is False and again["usage"] == EMPTY_USAGE
    assert list(d.iterdir()) == []


def test_a_stale_revision_is_refused_whole(home, daemon, session):
    d = temporary_dir(session)
    (d / "a.py").write_text("a")
    old = listing(session)["revision"]
    (d / "new.txt").write_text("n")  # the directory changed after the caller read it
    err = remote_error(release, session, ["a.py", "new.txt"], old)
    assert err.code == "conflict"
    assert err.message == ("the managed directory changed since that revision was read; list "
                           "it again (Temporary list) and decide on what it holds now")
    assert err.data == {"field": "params.action.revision"}
    assert sorted(p.name for p in d.iterdir()) == ["a.py", "new.txt"]


def test_bad_names_and_a_symlink_outside_are_refused_and_nothing_outside_is_touched(
        home, daemon, session):
    d = temporary_dir(session)
    outside = home.root / "outside.txt"
    outside.write_text("keep me")
    (d / "link").symlink_to(outside)
    (d / "dirlink").symlink_to(home.root)
    (d / "sub").mkdir()
    (d / "sub" / "x").write_text("x")
    names = ["link", "dirlink", "..", ".", "", "a/b", "../outside.txt", "sub/x", "x\0y",
             "sub", "n" * 256]
    result = release(session, names)
    assert outcomes(result) == [
        ("link", "refused", "symlink"), ("dirlink", "refused", "symlink"),
        ("..", "refused", "bad_name"), (".", "refused", "bad_name"), ("", "refused", "bad_name"),
        ("a/b", "refused", "bad_name"), ("../outside.txt", "refused", "bad_name"),
        ("sub/x", "refused", "bad_name"), ("x\0y", "refused", "bad_name"),
        ("sub", "refused", "not_a_file"), ("n" * 256, "refused", "bad_name")]
    assert outside.read_text() == "keep me" and (d / "link").is_symlink()
    assert (d / "sub" / "x").exists() and d.parent.is_dir()


def test_the_request_shape_is_checked_first(home, daemon, session):
    for names in ([], ["h"] * 65):
        err = remote_error(release, session, names, "r")
        assert err.code == "invalid_request"
        assert err.message == ("names must list 1 to 64 helpers "
                               "(temporary_release_names_max)")
        assert err.data == {"field": "params.action.names"}


def test_a_helper_held_open_by_a_running_child_stays_until_it_exits(home, daemon, session):
    d = temporary_dir(session)
    helper = d / "data.txt"
    helper.write_text("data")
    (d / "free.txt").write_text("free")
    gate = Gate(home.root / "gate")
    # The child opens the helper, then holds it open while it waits at the gate. It names
    # the helper only through an environment variable, so `open` is what keeps it.
    source = ("import os\nf = open(os.environ['HELPER'])\nprint('open', flush=True)\n"
              + gate.wait_source())
    eid = session.run(python_child(source), env={"HELPER": str(helper)})["execution_id"]
    session.read_until(eid, lambda page: "open" in page["text"])
    result = release(session, ["data.txt", "free.txt"])
    held = result["results"][0]
    assert (held["name"], held["status"], held["reason"]) == ("data.txt", "in_use", "open")
    assert held["pid"] == session.get(eid)["runtime"]["child_pid"]  # python itself
    assert result["results"][1] == {"name": "free.txt", "status": "released"}
    assert helper.read_text() == "data" and result["partial"] is True
    gate.open()
    session.wait_exit(eid)
    retry = release(session, ["data.txt", "free.txt"], result["revision"])
    assert outcomes(retry) == [("data.txt", "released", None),
                               ("free.txt", "released", "already_released")]
    assert not helper.exists()


def test_mapped_and_executable_helpers_stay(home, daemon, session):
    d = temporary_dir(session)
    (d / "mapped.bin").write_bytes(b"m" * 4096)
    exe = d / "helper-sleep"
    exe.write_bytes(Path("/bin/sleep").read_bytes())
    exe.chmod(0o700)
    gate = Gate(home.root / "gate")
    # Mapped with libc's mmap and the fd closed (Python's mmap module keeps a dup open).
    source = ("import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
              "libc.mmap.restype = ctypes.c_void_p\n"
              "libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, "
              "ctypes.c_int, ctypes.c_int, ctypes.c_long]\n"
              "fd = os.open(os.environ['MAPPED'], os.O_RDONLY)\n"
              "assert libc.mmap(None, 4096, 1, 2, fd, 0) not in (None, ctypes.c_void_p(-1).value)\n"
              "os.close(fd)\nprint('mapped', flush=True)\n" + gate.wait_source())
    mapped = session.run(python_child(source), env={"MAPPED": str(d / "mapped.bin")})
    # The copied binary runs from another directory and is named only through $EXE.
    running = session.run(command='cd / && exec "$EXE" 600', env={"EXE": str(exe)})
    session.read_until(mapped["execution_id"], lambda page: "mapped" in page["text"])
    exe_pid = session.get(running["execution_id"])["runtime"]["child_pid"]
    wait_for(lambda: _readlink(f"/proc/{exe_pid}/exe") == str(exe),
             what="the copied sleep to run")
    result = release(session, ["mapped.bin", "helper-sleep"])
    assert [(r["status"], r["reason"]) for r in result["results"]] == [
        ("in_use", "mapped"), ("in_use", "executable")]
    assert result["results"][1]["pid"] == exe_pid
    gate.open()
    session.call("signal", execution_id=running["execution_id"], signal="TERM")
    session.wait_exit(mapped["execution_id"])
    session.wait_exit(running["execution_id"])
    assert outcomes(release(session, ["mapped.bin", "helper-sleep"])) == [
        ("mapped.bin", "released", None), ("helper-sleep", "released", None)]


def _readlink(path: str) -> str | None:
    try:
        return os.readlink(path)
    except OSError:
        return None


def test_a_helper_named_by_a_running_shell_command_stays(home, daemon, session):
    d = temporary_dir(session)
    gate = Gate(home.root / "gate")
    # Python reads the script and closes it: only the command line still names it.
    (d / "script.py").write_text(gate.wait_source())
    started = session.call("BashCommand", action={
        "type": "command", "command": 'python3 -S "$VIGIL_TEMPORARY_DIR/script.py"'},
        wait_for_seconds=0)
    assert started["status"] == "running"

    def running() -> bool:
        return any("script.py" in (_cmdline(p) or "") for p in os.listdir("/proc")
                   if p.isdigit())

    wait_for(running, what="the shell command to start")
    result = release(session, ["script.py"])
    assert outcomes(result) == [("script.py", "in_use", "named_by_command")]
    gate.open()
    done = session.call("BashCommand", action={"type": "status_check"}, wait_for_seconds=30)
    assert (done["status"], done["exit_code"]) == ("completed", 0)
    assert outcomes(release(session, ["script.py"])) == [("script.py", "released", None)]


def _cmdline(pid: str) -> str | None:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().decode(errors="replace")
    except OSError:
        return None


def test_maintenance_reports_old_and_sibling_helpers_and_deletes_nothing(home, daemon,
                                                                         workspace):
    a, b = Session(home, workspace, "a"), Session(home, workspace, "b")
    try:
        da, db = temporary_dir(a), temporary_dir(b)
        (da / "old.log").write_text("old")
        os.utime(da / "old.log", (1, 1))
        (da / "new.log").write_text("new")
        (db / "sibling.bin").write_bytes(b"12")
        gone = da.parent / ("f" * 32)  # a thread the daemon no longer knows
        gone.mkdir(mode=0o700)
        (gone / "left.txt").write_text("left")
        m = listing(a)["maintenance"]
        assert m["old_helpers"] == ["old.log"]
        siblings = {s["thread_id"]: s for s in m["siblings"]}
        assert siblings[b.thread_id]["thread_known"] is True
        assert siblings[b.thread_id]["temporary_file_count"] == 1
        assert siblings[b.thread_id]["temporary_bytes"] == 2
        assert siblings["f" * 32]["thread_known"] is False
        assert (da / "old.log").exists() and (db / "sibling.bin").exists()
        assert (gone / "left.txt").exists()
    finally:
        a.close()
        b.close()


def test_over_budget_is_reported(home, workspace):
    home.write_config("temporary_budget_files = 1\ntemporary_budget_bytes = 3\n")
    home.start_daemon()
    s = Session(home, workspace)
    try:
        d = temporary_dir(s)
        (d / "a").write_text("ab")
        usage = listing(s)["usage"]
        assert (usage["temporary_file_count"], usage["temporary_over_budget"]) == (1, False)
        (d / "b").write_text("cd")
        usage = listing(s)["usage"]
        assert usage == {"temporary_usage_schema": 1, "temporary_file_count": 2,
                         "temporary_bytes": 4, "temporary_budget_files": 1,
                         "temporary_budget_bytes": 3, "temporary_over_budget": True}
        assert (d / "a").exists() and (d / "b").exists()  # reported, never enforced
    finally:
        s.close()


def test_authority_architect_lists_but_never_releases(home, daemon, workspace):
    with home.client() as c:
        init = c.call("Initialize", {"workspace_root": str(workspace), "mode": "architect"})
        scoped = {"thread_id": init["thread_id"], "workspace_root": init["workspace_root"]}
        listed = c.call("Temporary", {**scoped, "action": LIST})
        err = remote_error(c.call, "Temporary", {**scoped, "action": {
            "type": "release_temporary", "names": ["x"], "revision": listed["revision"]}})
        assert err.code == "forbidden"
        assert err.message.startswith("architect mode never releases temporary helpers")
        ro = c.call("Initialize", {"workspace_root": str(workspace), "profile": "read-only"})
        err = remote_error(c.call, "Temporary", {"thread_id": ro["thread_id"],
                                                 "workspace_root": ro["workspace_root"],
                                                 "action": LIST})
        assert err.code == "forbidden" and err.message.startswith(
            "the BashCommand tool is not granted")


def test_cli_tmp_ls_and_release(home, daemon, workspace, cli_env):
    listed = home.cli("tmp", "ls", "--json", env=cli_env)
    assert listed.returncode == 0, listed.stderr
    d = Path(json.loads(listed.stdout)["directory"])
    (d / "h.sh").write_text("echo hi\n")
    human = home.cli("tmp", "ls", env=cli_env)
    assert human.returncode == 0 and human.stdout.splitlines()[1] == (
        "1 of 256 helpers, 8 of 67108864 bytes")
    assert human.stdout.splitlines()[2].endswith("  h.sh")
    stale = json.loads(listed.stdout)["revision"]
    refused = home.cli("tmp", "release", "h.sh", "--revision", stale, env=cli_env)
    assert refused.returncode == 1 and refused.stderr.startswith("vigil: conflict: ")
    out = home.cli("tmp", "release", "h.sh", "nope", env=cli_env)
    assert out.returncode == 1, out.stderr
    assert out.stdout.splitlines()[:2] == ["released  'h.sh'", "not_found 'nope'"]
    ok = home.cli("tmp", "release", "h.sh", "--json", env=cli_env)
    assert ok.returncode == 0 and json.loads(ok.stdout)["results"] == [
        {"name": "h.sh", "status": "released", "reason": "already_released"}]


def test_mcp_temporary_tool(home, daemon, workspace):
    async def body():
        async with mcp_stdio(home) as m:
            init = await m.initialize(workspace)
            d = Path(init["temporary_dir"])
            (d / "t.py").write_text("t")
            listed = await m.ok("Temporary", action=LIST)
            assert [h["name"] for h in listed["helpers"]] == ["t.py"]
            done = await m.ok("Temporary", action={"type": "release_temporary",
                                                   "names": ["t.py"],
                                                   "revision": listed["revision"]})
            assert done["results"] == [{"name": "t.py", "status": "released"}]
            code, text = await m.error("Temporary", action={
                "type": "release_temporary", "names": ["t.py"], "revision": listed["revision"]})
            assert code == "conflict"
    run(body)


def test_releasing_from_the_threads_own_shell_is_not_a_use(home, daemon, session, cli_env):
    """`vigil tmp release h.py` run in the CLI thread's own shell names h.py in its argv and
    in the shell command's text: the caller asking is not a holder."""
    d = temporary_dir(session)
    (d / "h.py").write_text("h")
    done = session.call("BashCommand", action={
        "type": "command", "command": f"{sys.executable} -m vigil.client.cli tmp release h.py"},
        wait_for_seconds=30)
    assert (done["status"], done["exit_code"]) == ("completed", 0), done["output"]
    assert "released  'h.py'" in done["output"] and not (d / "h.py").exists()
