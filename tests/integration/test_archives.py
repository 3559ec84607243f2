"""Turn archives through a real daemon (seeds/002; issue 15 part A's "Done when"): the fake
agent writes a Claude-format session log that the test scripts line by line, a native prompt
opens the turn, and the archive the daemon builds from the turn's transcript events is read
back with `get_trace` in every mode, under each redaction mode, and on disk."""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from tests.integration.test_agent_prompt import FAKE_AGENT
from tests.support.daemon import DaemonProcess, wait_for
from tests.support.executions import Session, remote_error, workspace  # noqa: F401 (fixture)
from vigil.protocol.errors import RemoteError

DAY_MS = 86400 * 1000
REDACTIONS = ("strict", "balanced", "diagnostic")
PAYLOAD_CHARS = {"strict": 0, "balanced": 2048, "diagnostic": 65536}


# --- a scripted turn of the fake agent ---------------------------------------------------------


def assistant(mid: str, *blocks: dict, stop: str = "tool_use") -> dict:
    return {"type": "assistant", "message": {"id": mid, "role": "assistant", "model": "claude-fake",
                                             "content": list(blocks), "stop_reason": stop}}


def results(*blocks: dict) -> dict:
    return {"type": "user", "message": {"role": "user", "content": list(blocks)}}


def thinking(text: str) -> dict:
    return {"type": "thinking", "thinking": text, "signature": "sig"}


def text(value: str) -> dict:
    return {"type": "text", "text": value}


def tool_use(tool_id: str, name: str, args) -> dict:
    return {"type": "tool_use", "id": tool_id, "name": name, "input": args}


def tool_result(tool_id: str, content: str, is_error: bool | None = None) -> dict:
    block = {"type": "tool_result", "tool_use_id": tool_id, "content": content}
    if is_error is not None:
        block["is_error"] = is_error
    return block


def size(value) -> int:
    """UTF-8 bytes of a text, or of a value's compact JSON (what `bytes` fields count)."""
    if not isinstance(value, str):
        value = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return len(value.encode())


SECRET_ARGS = {"command": "curl -H 'Authorization: Bearer sk_live_0123456789abcdef' "
                          "https://api.example.com",
               "password": "hunter2", "env": {"API_KEY": "k-123", "HOME": "/home/u"}}
PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----\n"
THOUGHT = "Use the Bearer sk_live_0123456789abcdef token."
SECRETS = ("hunter2", "sk_live_0123456789abcdef", "MIIEowIBAAKCAQEA", "k-123")
DEPLOY = {
    "begin": [
        assistant("msg_1", thinking(THOUGHT), text("Calling the API."),
                  tool_use("toolu_1", "Bash", SECRET_ARGS)),
        results(tool_result("toolu_1", PEM + "200 OK")),
        assistant("msg_2", tool_use("toolu_2", "Read", {"file_path": "/etc/missing"})),
        results(tool_result("toolu_2", "File does not exist.", is_error=True)),
    ],
    "end": [assistant("msg_3", text("Deployed."), stop="end_turn")],
}


class Agent:
    """A fake agent execution whose session log follows `script`, and its first turn."""

    def __init__(self, session: Session, root: Path, name: str, script: dict):
        self.s = session
        path = root / f"{name}.script.json"
        path.write_text(json.dumps(script))
        self.eid = session.run(argv=[FAKE_AGENT], env={"FAKE_AGENT_SCRIPT": str(path)})[
            "execution_id"]
        wait_for(lambda: session.get(self.eid)["recognized_state"] == "awaiting_input",
                 timeout=20, what="the fake agent's prompt box")

    def prompt(self, text: str, prompt_id: str = "p1") -> dict:
        return self.s.call("Agent", action="prompt", target=self.eid, prompt_id=prompt_id,
                           text=text, recognizer="claude", timeout_seconds=20)["data"]

    def committed(self) -> dict:
        """The latest turn's summary once it is committed (Agent get carries it)."""
        return wait_for(lambda: (t := self.s.call("Agent", action="get", target=self.eid)[
            "data"]["turn"]) and t["state"] == "committed" and t, timeout=20,
            what="the turn's archive to be committed")


def trace(s: Session, **params) -> dict:
    return s.call("Agent", action="get_trace", **params)["data"]


def untimed(value):
    """`value` without its `timestamp` fields (the only figures a test cannot know)."""
    if isinstance(value, dict):
        return {k: untimed(v) for k, v in value.items() if k != "timestamp"}
    if isinstance(value, list):
        return [untimed(v) for v in value]
    return value


def archive_file(home, ref: str) -> Path:
    return home.state / "archives" / ref[:2] / ref[2:4] / ref


# --- what the scripted turn must become, per redaction mode ------------------------------------


def expected_detail(mode: str) -> tuple[list, list]:
    """(prompts, steps) of the DEPLOY turn in `detail` mode under `mode` redaction."""
    strict, balanced = mode == "strict", mode == "balanced"

    def kept(original: str, shown: str | None = None, masked: int = 0) -> dict:
        out = {"bytes": size(original)}
        if not strict:
            out["text"] = shown if balanced and shown is not None else original
        if balanced and masked:
            out["masked"] = masked
        return out

    def args(original, shown=None, masked: int = 0) -> dict:
        out = {"input_bytes": size(original)}
        if not strict:
            out["input"] = shown if balanced and shown is not None else original
        if balanced and masked:
            out["masked"] = masked
        return out

    def result(tool_id: str, content: str, status: str = "ok", shown: str | None = None,
               masked: int = 0, **extra) -> dict:
        out = {"tool_id": tool_id, "status": status, "bytes": size(content), **extra}
        if not strict:
            out["content"] = shown if balanced and shown is not None else content
        if balanced and masked:
            out["masked"] = masked
        return out

    masked_args = {"command": "curl -H 'Authorization: Bearer [masked]' https://api.example.com",
                   "password": "[masked]", "env": {"API_KEY": "[masked]", "HOME": "/home/u"}}
    prompts = [{"fidelity": f, **kept("deploy it")} for f in ("router", "agent_emitted")]
    steps = [
        {"seq": 1, "iteration": 1, "message_id": "msg_1", "model": "claude-fake",
         "stop_reason": "tool_use",
         "action": [{"type": "thinking", **kept(THOUGHT, "Use the Bearer [masked] token.", 1)},
                    {"type": "text", **kept("Calling the API.")},
                    {"type": "tool_use", "tool_id": "toolu_1", "name": "Bash",
                     **args(SECRET_ARGS, masked_args, 3)}],
         "results": [result("toolu_1", PEM + "200 OK", shown="[masked private key]\n200 OK",
                            masked=1)]},
        {"seq": 2, "iteration": 2, "message_id": "msg_2", "model": "claude-fake",
         "stop_reason": "tool_use",
         "action": [{"type": "tool_use", "tool_id": "toolu_2", "name": "Read",
                     **args({"file_path": "/etc/missing"})}],
         "results": [result("toolu_2", "File does not exist.", "error", is_error=True)]},
        {"seq": 3, "iteration": 3, "message_id": "msg_3", "model": "claude-fake",
         "stop_reason": "end_turn", "action": [{"type": "text", **kept("Deployed.")}]},
    ]
    return prompts, steps


def as_tool_calls(steps: list) -> list:
    """`detail` steps at the `tool_calls` width: calls only, results without payloads."""
    out = []
    for step in steps:
        slim = {"seq": step["seq"], "iteration": step["iteration"]}
        calls = [b for b in step["action"] if b["type"] == "tool_use"]
        if calls:
            slim["action"] = calls
        if step.get("results"):
            slim["results"] = [{k: v for k, v in r.items() if k not in ("content", "masked")}
                               for r in step["results"]]
        out.append(slim)
    return out


@pytest.fixture
def policies(home):
    """A daemon whose three workspaces each archive under one redaction mode."""
    roots = {}
    config = []
    for mode in REDACTIONS:
        root = home.root / f"ws-{mode}"
        root.mkdir()
        roots[mode] = root
        config.append(f'[[archive_workspaces]]\nroot = "{os.path.realpath(root)}"\n'
                      f'redaction = "{mode}"\n')
    home.write_config("\n".join(config))
    home.start_daemon(extra_env={"CLAUDE_CONFIG_DIR": str(home.root / "claude")})
    return roots


@pytest.mark.parametrize("mode", REDACTIONS)
def test_a_prompted_turn_is_archived_redacted_and_read_in_every_mode(home, policies, mode):
    s = Session(home, policies[mode])
    try:
        agent = Agent(s, home.root, mode, DEPLOY)
        answer = agent.prompt("deploy it")
        receipt = answer["receipt"]
        ref = receipt["archive_ref"]
        assert receipt["trace_key"] == f"{agent.eid}:1"
        summary = {
            "archive_ref": ref, "trace_key": f"{agent.eid}:1", "turn": 1, "state": "committed",
            "status": "end_turn", "failed": False, "steps": 3, "iterations": 3, "tool_calls": 2,
            "tool_errors": 1, "results_missing": 0, "replay_blocked_steps": 0,
            "tools": [{"name": "Bash", "calls": 1, "errors": 0},
                      {"name": "Read", "calls": 1, "errors": 1}]}
        # The model-context projection rides on the prompt's answer and on Agent get.
        assert answer["turn"] == summary
        assert agent.committed() == summary
        stamp = {"retention_class": "standard", "redaction": mode, "policy_version": 1,
                 "ttl_completed_seconds": 7 * 86400.0, "ttl_failed_seconds": 30 * 86400.0,
                 "payload_chars": PAYLOAD_CHARS[mode]}
        prompts, steps = expected_detail(mode)
        widths = {"summary": ([], []), "tool_calls": ([], as_tool_calls(steps)),
                  "detail": (prompts, steps)}
        for width, (want_prompts, want_steps) in widths.items():
            got = trace(s, archive_ref=ref, mode=width)
            assert got["mode"] == width and not got["mode_fallback"]
            assert (got["stamp"], got["summary"], got["state"]) == (stamp, summary, "committed")
            assert untimed(got["prompts"]) == want_prompts, width
            assert untimed(got["steps"]) == want_steps, width
            assert (got["next_seq"], got["omitted_steps"], got["from_seq"]) == (None, 0, 1)
            assert got["expires_at_unix_ms"] - got["committed_at_unix_ms"] == 7 * DAY_MS
            assert got["rendered_chars"] == len(json.dumps(got, separators=(",", ":"),
                                                           ensure_ascii=False))
        # The trace key reads the same archive; an unknown mode is summary, never wider.
        by_key = trace(s, trace_key=f"{agent.eid}:1", mode="detail")
        assert (by_key["archive_ref"], untimed(by_key["steps"])) == (ref, steps)
        fallback = trace(s, archive_ref=ref, mode="everything")
        assert (fallback["mode"], fallback["mode_fallback"], fallback["steps"]) == \
            ("summary", True, [])
        # On disk: committed (no .open left), private, and already redacted.
        path = archive_file(home, ref)
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        assert not path.with_name(ref + ".open").exists()
        data = path.read_text()
        present = [secret for secret in SECRETS if secret in data]
        assert present == (list(SECRETS) if mode == "diagnostic" else [])
        assert [json.loads(line)["line"] for line in data.splitlines()] == \
            ["opened", "prompt", "prompt", "action", "result", "action", "result", "action",
             "committed"]
    finally:
        s.close()


DUPLICATES = {
    "begin": [
        assistant("msg_1", tool_use("toolu_x", "Bash", {"command": "a"})),
        results(tool_result("toolu_x", "one")),
        assistant("msg_2", tool_use("toolu_x", "Bash", {"command": "b"})),
        results(tool_result("toolu_x", "two")),
        assistant("msg_3", tool_use("toolu_y", "Bash", {"command": "c"})),
        results(tool_result("toolu_y", "three")),
        results(tool_result("toolu_y", "three again")),
    ],
    "end": [assistant("msg_4", text("done"), stop="end_turn")],
}


def test_ambiguous_capture_is_archived_and_replay_blocked_and_other_scopes_see_nothing(
        home, workspace):
    home.start_daemon(extra_env={"CLAUDE_CONFIG_DIR": str(home.root / "claude")})
    s = Session(home, workspace)
    other_ws = home.root / "other"
    other_ws.mkdir()
    other = Session(home, other_ws)
    try:
        agent = Agent(s, home.root, "dup", DUPLICATES)
        ref = agent.prompt("go")["receipt"]["archive_ref"]
        summary = agent.committed()
        assert (summary["tool_calls"], summary["replay_blocked_steps"],
                summary["results_missing"]) == (3, 3, 0)
        got = trace(s, archive_ref=ref, mode="tool_calls")
        assert [(st["seq"], st.get("replay_blocked", False), st.get("blocked_reasons", []),
                 [r["tool_id"] for r in st.get("results", [])]) for st in got["steps"]] == [
            (1, True, ["duplicate_call_id", "second_result"], ["toolu_x"]),
            (2, True, ["duplicate_call_id", "second_result"], ["toolu_x"]),
            (3, True, ["second_result"], ["toolu_y", "toolu_y"]),
            (4, False, [], []),
        ]

        # Another scope's ref and trace key read exactly as ones that never existed.
        def refusal(**params):
            err = remote_error(other.call, "Agent", action="get_trace", **params)
            return err.code, err.message, err.data

        absent = refusal(archive_ref=uuid.uuid4().hex)
        assert absent == ("not_found", "no such archive in this scope",
                          {"field": "params.archive_ref"})
        assert refusal(archive_ref=ref) == absent
        assert refusal(trace_key=f"{agent.eid}:1") == \
            ("not_found", "no such archive in this scope", {"field": "params.trace_key"})
        assert refusal(trace_key=f"{agent.eid}:1") == refusal(trace_key=f"{agent.eid}:2")
        # Both references, or neither: invalid_request before anything else.
        for params in ({"archive_ref": ref, "trace_key": f"{agent.eid}:1"}, {}):
            err = remote_error(s.call, "Agent", action="get_trace", **params)
            assert (err.code, err.message, err.data) == (
                "invalid_request", "give exactly one of archive_ref or trace_key",
                {"field": "params.archive_ref"})
    finally:
        s.close()
        other.close()


def test_a_one_megabyte_tool_result_renders_within_the_cap(home, workspace):
    home.write_config('archive_redaction = "diagnostic"\ntrace_payload_chars = 1048576\n')
    home.start_daemon(extra_env={"CLAUDE_CONFIG_DIR": str(home.root / "claude")})
    big = "x" * (1 << 20)
    script = {"begin": [assistant("msg_1", tool_use("toolu_big", "Bash", {"command": "cat big"})),
                        results(tool_result("toolu_big", big))],
              "end": [assistant("msg_2", text("It is big."), stop="end_turn")]}
    s = Session(home, workspace)
    try:
        agent = Agent(s, home.root, "big", script)
        ref = agent.prompt("cat it")["receipt"]["archive_ref"]
        agent.committed()
        for width in ("summary", "tool_calls", "detail"):
            got = trace(s, archive_ref=ref, mode=width)
            rendered = len(json.dumps(got, separators=(",", ":"), ensure_ascii=False))
            assert rendered == got["rendered_chars"] and rendered <= 24000, (width, rendered)
        detail = trace(s, archive_ref=ref, mode="detail")
        (step,) = detail["steps"]
        (result,) = step["results"]
        # Stored at the diagnostic limit, shown cut further to fit the answer; the rest of
        # the turn is one `from_seq` away.
        assert (result["bytes"], result["truncated"]) == (1 << 20, True)
        assert 20000 < len(result["content"]) < 24000 and set(result["content"]) == {"x"}
        assert (detail["next_seq"], detail["omitted_steps"], detail["truncated"]) == (2, 1, True)
        rest = trace(s, archive_ref=ref, mode="detail", from_seq=2)
        assert [(st["seq"], st["action"]) for st in rest["steps"]] == \
            [(2, [{"type": "text", "text": "It is big.", "bytes": 10}])]
        assert rest["next_seq"] is None
        stored = json.loads(archive_file(home, ref).read_text().splitlines()[4])
        assert (stored["line"], len(stored["result"]["content"])) == ("result", 65536)
    finally:
        s.close()


MALFORMED = ("../x", uuid.uuid4().hex.upper(), str(uuid.uuid4()), uuid.uuid4().hex[:31],
             "../../store/data.mdb", uuid.uuid4().hex + "/")


def _can_strace() -> bool:
    """strace is installed (.ci/run installs it) and may trace here (a container may forbid
    ptrace)."""
    return shutil.which("strace") is not None and subprocess.run(
        ["strace", "-f", "-qq", "-e", "trace=%file", "-o", os.devnull, "true"],
        capture_output=True).returncode == 0


@pytest.mark.skipif(not _can_strace(), reason="strace cannot run or trace here")
def test_a_malformed_ref_is_refused_with_no_filesystem_access(home, workspace):
    log = home.root / "daemon.strace"
    # Every syscall that names a path, in every thread of the daemon, recorded by strace.
    d = DaemonProcess(home, prefix=["strace", "-f", "-qq", "-e", "trace=%file", "-o", str(log)])
    home.daemons.append(d)
    d.start(timeout=60)
    s = Session(home, workspace)
    try:
        daemon_pid = s.client.call("status", {})["pid"]
        for bad in MALFORMED:
            err = remote_error(s.call, "Agent", action="get_trace", archive_ref=bad)
            assert (err.code, err.message, err.data) == (
                "invalid_request", "archive_ref must be 32 lowercase hexadecimal characters "
                "(a UUIDv4 without hyphens)", {"field": "params.archive_ref"}), bad
            err = remote_error(s.call, "Agent", action="get_trace", trace_key=f"{bad}:1")
            assert (err.code, err.data) == ("invalid_request", {"field": "params.trace_key"})
    finally:
        s.close()
    os.kill(daemon_pid, signal.SIGTERM)
    assert d.proc.wait(30) == 0  # strace exits with the daemon, its log complete
    paths = [line for line in log.read_text().splitlines() if '"' in line]
    assert paths, "strace recorded no path at all: the check would prove nothing"
    archives = str(home.state / "archives")
    assert not [line for line in paths if archives in line or
                any(bad in line for bad in MALFORMED)]


def test_lowering_the_base_ttl_leaves_written_expiries_unchanged(home, workspace):
    env = {"CLAUDE_CONFIG_DIR": str(home.root / "claude")}
    home.write_config("archive_completed_days = 10\narchive_cleanup_interval_seconds = 0.1\n")
    first = home.start_daemon(extra_env=env)
    s = Session(home, workspace)
    try:
        agent = Agent(s, home.root, "a", DEPLOY)
        old_ref = agent.prompt("deploy it")["receipt"]["archive_ref"]
        agent.committed()
        before = trace(s, archive_ref=old_ref)
        assert before["expires_at_unix_ms"] - before["committed_at_unix_ms"] == 10 * DAY_MS
    finally:
        s.close()
    first.stop()

    # A base TTL of 2^-15 days (2.63671875 s, exact in binary) now: new archives get it,
    # the old one keeps what it was given.
    home.write_config("archive_completed_days = 0.000030517578125\n"
                      "archive_cleanup_interval_seconds = 0.1\n")
    home.start_daemon(extra_env=env)
    new_ws = home.root / "ws2"
    new_ws.mkdir()
    s = Session(home, workspace)
    s2 = Session(home, new_ws)
    try:
        after = trace(s, archive_ref=old_ref)
        assert (after["stamp"], after["expires_at_unix_ms"]) == \
            (before["stamp"], before["expires_at_unix_ms"])
        agent = Agent(s2, home.root, "b", DEPLOY)
        new_ref = agent.prompt("deploy it")["receipt"]["archive_ref"]
        agent.committed()
        new = trace(s2, archive_ref=new_ref)
        assert new["stamp"]["ttl_completed_seconds"] == 2.63671875
        assert new["expires_at_unix_ms"] - new["committed_at_unix_ms"] == 2636
        # The cleanup removes the new one at its expiry...
        wait_for(lambda: not _exists(s2, new_ref), timeout=20,
                 what="the cleanup to remove the short-lived archive")
        assert not archive_file(home, new_ref).exists()
        # ...and leaves the old one, though today's TTL would have ended it long ago.
        assert time.time() * 1000 > before["committed_at_unix_ms"] + 2636
        assert trace(s, archive_ref=old_ref)["expires_at_unix_ms"] == before["expires_at_unix_ms"]
        assert archive_file(home, old_ref).exists()
    finally:
        s.close()
        s2.close()


def _exists(s: Session, ref: str) -> bool:
    try:
        trace(s, archive_ref=ref)
    except RemoteError as exc:
        assert exc.code == "not_found", exc
        return False
    return True


def test_vigil_trace_renders_a_turn(home, workspace):
    home.start_daemon(extra_env={"CLAUDE_CONFIG_DIR": str(home.root / "claude")})
    s = Session(home, workspace)
    try:
        agent = Agent(s, home.root, "cli", DEPLOY)
        ref = agent.prompt("deploy it")["receipt"]["archive_ref"]
        agent.committed()
        args = ("--workspace", str(workspace), "trace")
        out = home.cli(*args, ref)
        assert out.returncode == 0, out.stderr
        lines = out.stdout.splitlines()
        assert lines[0] == f"archive {ref} (turn 1 of {agent.eid}), committed, end_turn"
        assert lines[2] == ("3 steps, 3 iterations, 2 tool calls (1 errors, 0 without result), "
                            "0 replay-blocked: Bash×1, Read×1")
        calls = home.cli(*args, f"{agent.eid[:10]}:1", "--mode", "tool_calls").stdout
        assert "       Read toolu_2 {\"file_path\": \"/etc/missing\"}" in calls
        assert "       → error toolu_2" in calls
        latest = home.cli(*args, agent.eid, "--mode", "detail", "--json")
        data = json.loads(latest.stdout)
        assert (data["archive_ref"], data["mode"], len(data["steps"])) == (ref, "detail", 3)
        missing = home.cli(*args, uuid.uuid4().hex)
        assert missing.returncode == 1
        assert missing.stderr.startswith("vigil: not_found: ")
    finally:
        s.close()
