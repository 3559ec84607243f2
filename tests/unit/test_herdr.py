"""The Herdr backend against tests/fixtures/fake_herdr: real subprocesses, real deadlines."""

from __future__ import annotations

import json
import os
import select
import sys
from pathlib import Path

import msgspec
import pytest
import trio

from vigil.daemon.agent.herdr import HerdrBackend, herdr_backend_from_environ
from vigil.daemon.agent.herdr_config import CONFIG_ENV, HerdrConfigError, load_herdr_config
from vigil.daemon.agent.herdr_errors import HerdrError
from vigil.protocol.errors import ErrorCode
from vigil.daemon.settings import Settings

FAKE = Path(__file__).resolve().parents[1] / "fixtures" / "fake_herdr"
SOCKET = "/run/fake-herdr/herdr.sock"


def agent(term, pane, name, status, text="", agent_kind="claude"):
    return {
        "terminal_id": term,
        "pane_id": pane,
        "workspace_id": pane.split(":")[0],
        "tab_id": pane.split(":")[0] + ":t1",
        "agent_status": status,
        "focused": False,
        "state_change_seq": 7,
        "revision": 0,
        "name": name,
        "agent": agent_kind,
        "text": text,
    }


class Fake:
    """One fake herdr installation: state file, invocation log, config file, environment."""

    def __init__(self, tmp_path: Path):
        self.tmp = tmp_path
        self.ws = os.path.realpath(tmp_path)
        self.state_path = tmp_path / "state.json"
        self.log_path = tmp_path / "log.jsonl"
        self.exe = tmp_path / "herdr"
        # A wrapper so the fixture's own exec bit and shebang don't matter; `exec` keeps
        # the pid, so the process the adapter kills is the fake itself.
        self.exe.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE}" "$@"\n')
        self.exe.chmod(0o755)
        self.state = {
            "socket_path": SOCKET,
            "agents": [
                agent("term_a1", "w1:p1", "writer", "idle", "\n".join(f"line {i}" for i in range(1, 301))),
                agent("term_b2", "w1:p2", "reviewer", "working"),
                agent("term_c3", "w2:p1", "secret", "idle", "private text"),
            ],
            "modes": {},
        }
        self.targets = {"writer": "term_a1", "rev": "reviewer", "pane": "w1:p2", "gone": "term_dead"}
        self.environ = {
            **os.environ,
            "FAKE_HERDR_STATE": str(self.state_path),
            "FAKE_HERDR_LOG": str(self.log_path),
            "HERDR_SESSION": "evil",
            "HERDR_SOCKET_PATH": "/inherited/wrong.sock",
            "HERDR_CONFIG_PATH": "/inherited/config",
            "HERDR_PANE_ID": "w2:p1",
        }

    def mode(self, command: str, mode: str) -> None:
        self.state["modes"][command] = mode

    def config_path(self, deadline_ms: int = 5000, socket_path: str = SOCKET) -> str:
        cfg = {
            "executable": str(self.exe),
            "socket_path": socket_path,
            "deadline_ms": deadline_ms,
            "bindings": [
                {"principal_key": "local", "workspace_root": self.ws, "targets": self.targets},
                {"principal_key": "http:bob", "workspace_root": self.ws, "targets": {"bobs": "term_c3"}},
            ],
        }
        p = self.tmp / "herdr.json"
        p.write_text(json.dumps(cfg))
        p.chmod(0o600)
        return str(p)

    def backend(self, settings: Settings = Settings(), **kw) -> HerdrBackend:
        self.state_path.write_text(json.dumps(self.state))
        return HerdrBackend(load_herdr_config(self.config_path(**kw), settings), settings, environ=self.environ)

    def scope(self, settings: Settings = Settings(), **kw):
        return self.backend(settings, **kw).scope("local", self.ws)

    def log(self) -> list[dict]:
        if not self.log_path.exists():
            return []
        return [json.loads(line) for line in self.log_path.read_text().splitlines()]

    def calls(self) -> list[list[str]]:
        return [e["argv"] for e in self.log() if "argv" in e]


@pytest.fixture
def fake(tmp_path):
    return Fake(tmp_path)


def process_gone(pid: int, timeout: float = 5.0) -> bool:
    """True once ``pid`` has exited (zombie or reaped), waiting on a pidfd up to ``timeout``."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        ready, _, _ = select.select([fd], [], [], timeout)
        return bool(ready)
    finally:
        os.close(fd)


def herdr_error(excinfo, code, input_sent=False):
    err = excinfo.value
    assert isinstance(err, HerdrError)
    assert err.herdr_code == code
    assert err.data["input_sent"] == input_sent
    return err


# --- scope and binding --------------------------------------------------------------------


async def test_no_binding_for_principal_is_disabled(fake):
    backend = fake.backend()
    for principal, ws in [("http:alice", fake.ws), ("local", fake.ws + "/sub"), ("local", "/")]:
        with pytest.raises(HerdrError) as info:
            backend.scope(principal, ws)
        err = herdr_error(info, "herdr_disabled")
        assert err.code is ErrorCode.HERDR_DISABLED
        assert err.data == {"input_sent": False, "operator_action_required": True, "reason": "binding_missing"}
    assert fake.calls() == []


async def test_alias_of_another_principal_reads_as_not_found(fake):
    scope = fake.scope()
    for action in (scope.get, scope.read, scope.explain):
        with pytest.raises(HerdrError) as info:
            await action("bobs")
        herdr_error(info, "herdr_target_not_found")
    with pytest.raises(HerdrError) as info:
        await scope.prompt("bobs", "hi")
    herdr_error(info, "herdr_target_not_found")
    with pytest.raises(HerdrError) as info:
        await scope.wait("nobody")
    herdr_error(info, "herdr_target_not_found")
    assert fake.calls() == []  # nothing ran for an unbound alias


async def test_from_environ(fake):
    fake.state_path.write_text(json.dumps(fake.state))
    env = {**fake.environ, CONFIG_ENV: fake.config_path()}
    backend = herdr_backend_from_environ(env)
    assert (await backend.scope("local", fake.ws).get("writer")).agent.terminal_id == "term_a1"
    with pytest.raises(HerdrConfigError) as info:
        herdr_backend_from_environ({})
    assert info.value.reason == "configuration_missing"


# --- environment and argv -----------------------------------------------------------------


async def test_environment_scrubbed_and_socket_set(fake):
    await fake.scope().get("rev")
    (entry,) = fake.log()
    env = entry["env"]
    assert {k: v for k, v in env.items() if k.startswith("HERDR_")} == {"HERDR_SOCKET_PATH": SOCKET}
    assert env["FAKE_HERDR_STATE"] == str(fake.state_path)
    assert env["PATH"] == os.environ["PATH"]


async def test_get_by_terminal_id_resolves_pane_first(fake):
    result = msgspec.to_builtins(await fake.scope().get("writer"))
    assert fake.calls() == [["pane", "list"], ["agent", "get", "w1:p1"]]
    assert result == {
        "backend": "herdr",
        "action": "get",
        "target": "writer",
        "agent": {
            "agent_status": "idle",
            "agent": "claude",
            "display_agent": None,
            "name": "writer",
            "title": None,
            "cwd": None,
            "terminal_id": "term_a1",
            "pane_id": "w1:p1",
            "tab_id": "w1:t1",
            "workspace_id": "w1",
            "focused": False,
            "state_change_seq": 7,
        },
    }
    msgspec.json.encode(result)  # JSON-able


async def test_get_by_name_and_by_pane(fake):
    scope = fake.scope()
    assert (await scope.get("rev")).agent.pane_id == "w1:p2"
    assert (await scope.get("pane")).agent.name == "reviewer"
    assert fake.calls() == [["agent", "get", "reviewer"], ["agent", "get", "w1:p2"]]


async def test_terminal_not_running_is_not_found(fake):
    with pytest.raises(HerdrError) as info:
        await fake.scope().get("gone")
    herdr_error(info, "herdr_target_not_found")
    assert fake.calls() == [["pane", "list"]]


async def test_cli_not_found_maps_to_target_not_found(fake):
    fake.state["agents"] = [a for a in fake.state["agents"] if a["name"] != "reviewer"]
    with pytest.raises(HerdrError) as info:
        await fake.scope().get("rev")
    err = herdr_error(info, "herdr_target_not_found")
    assert err.data["herdr_error_code"] == "agent_not_found"


# --- identity -----------------------------------------------------------------------------


@pytest.mark.parametrize("alias", ["writer", "rev", "pane"])
async def test_mismatched_identity_is_rejected(fake, alias):
    fake.mode("agent get", "mismatch")
    with pytest.raises(HerdrError) as info:
        await fake.scope().get(alias)
    herdr_error(info, "herdr_target_mismatch")


async def test_prompt_answered_about_another_target_says_input_was_sent(fake):
    fake.mode("agent prompt", "mismatch")
    with pytest.raises(HerdrError) as info:
        await fake.scope().prompt("writer", "hello")
    err = herdr_error(info, "herdr_target_mismatch", input_sent=True)
    assert err.data["delivery"] == "submitted"


# --- list ---------------------------------------------------------------------------------


async def test_list_shows_only_configured_targets(fake):
    result = msgspec.to_builtins(await fake.backend().list("local", fake.ws))
    assert fake.calls() == [["agent", "list"]]
    assert result["truncated"] is False
    assert [(t["target"], t["found"]) for t in result["targets"]] == [
        ("gone", False),
        ("pane", True),
        ("rev", True),
        ("writer", True),
    ]
    assert result["targets"][0]["agent"] is None
    assert result["targets"][3]["agent"]["terminal_id"] == "term_a1"
    text = msgspec.json.encode(result).decode()
    assert "secret" not in text and "term_c3" not in text


async def test_list_target_cap(fake):
    result = msgspec.to_builtins(await fake.scope(Settings(herdr_list_targets_max=2)).list())
    assert [t["target"] for t in result["targets"]] == ["gone", "pane"]
    assert result["truncated"] is True


async def test_list_byte_cap(fake):
    settings = Settings(herdr_list_bytes_max=700)
    result = msgspec.to_builtins(await fake.scope(settings).list())
    assert result["truncated"] is True
    assert 0 < len(result["targets"]) < 4
    assert len(msgspec.json.encode(result)) <= 700


async def test_list_of_empty_binding_runs_nothing(fake):
    fake.targets = {}
    assert msgspec.to_builtins(await fake.scope().list()) == {
        "backend": "herdr", "action": "list", "targets": [], "truncated": False}
    assert fake.calls() == []


# --- read and explain ---------------------------------------------------------------------


async def test_read_defaults_to_100_lines(fake):
    result = msgspec.to_builtins(await fake.scope().read("writer"))
    assert fake.calls()[-1] == ["agent", "read", "w1:p1", "--lines", "100"]
    assert result["text"] == "\n".join(f"line {i}" for i in range(201, 301))
    assert (result["lines"], result["source"], result["truncated"]) == (100, "recent", False)


async def test_read_lines_argument(fake):
    result = msgspec.to_builtins(await fake.scope().read("writer", lines=1000))
    assert fake.calls()[-1] == ["agent", "read", "w1:p1", "--lines", "1000"]
    assert result["text"].count("\n") == 299


@pytest.mark.parametrize("lines", [0, -1, 1001, True, "5", 2.0])
async def test_read_lines_invalid(fake, lines):
    with pytest.raises(HerdrError) as info:
        await fake.scope().read("writer", lines=lines)
    herdr_error(info, "herdr_invalid_request")
    assert fake.calls() == []


async def test_read_over_stdout_cap_keeps_recent_tail(fake):
    fake.state["agents"][1]["text"] = fake.state["agents"][0]["text"]
    result = msgspec.to_builtins(await fake.scope(Settings(herdr_stdout_max_bytes=100)).read("rev", lines=300))
    assert result["truncated"] is True
    assert result["text"].endswith("line 300")
    assert result["text"].startswith("line ")  # cut at a line start
    assert len(result["text"].encode()) <= 100


async def test_explain(fake):
    result = msgspec.to_builtins(await fake.scope().explain("rev"))
    assert fake.calls() == [["agent", "explain", "reviewer", "--json"]]
    assert result["explain"] == {"agent": "claude", "state": "working", "matched_rule": None, "manifest_source": "bundled"}


# --- prompt -------------------------------------------------------------------------------


async def test_prompt_submits_once_with_literal_text(fake):
    text = "-v; $(rm -rf /) && `x` | y > z"
    result = msgspec.to_builtins(await fake.scope().prompt("writer", text))
    assert fake.calls() == [["pane", "list"], ["agent", "prompt", "w1:p1", text]]
    assert (result["delivery"], result["input_sent"]) == ("submitted", True)
    assert result["agent"]["terminal_id"] == "term_a1"


async def test_prompt_id_is_rejected(fake):
    with pytest.raises(HerdrError) as info:
        await fake.scope().prompt("writer", "hello", prompt_id="review-1")
    err = herdr_error(info, "herdr_prompt_id_unsupported")
    assert err.code == "herdr_prompt_id_unsupported"
    assert fake.calls() == []


@pytest.mark.parametrize("text", ["", "--session", "--session=x", "--handoff", "--remote", "--remote-host", "a\x00b", "x" * (16 * 1024 + 1), "\ud800"])
async def test_prompt_text_rejected(fake, text):
    with pytest.raises(HerdrError) as info:
        await fake.scope().prompt("writer", text)
    herdr_error(info, "herdr_invalid_request")
    assert fake.calls() == []


async def test_prompt_timeout_is_uncertain_and_never_resent(fake):
    fake.mode("agent prompt", "hang")
    scope = fake.scope(deadline_ms=600)
    start = trio.current_time()
    result = msgspec.to_builtins(await scope.prompt("rev", "do it"))
    elapsed = trio.current_time() - start
    assert result == {
        "backend": "herdr",
        "action": "prompt",
        "target": "rev",
        "delivery": "uncertain",
        "input_sent": "unknown",
        "reason": "deadline_exceeded",
        "herdr_error_code": None,
        "agent": None,
    }
    assert 0.6 <= elapsed < 0.6 + 0.2 + 1.0  # deadline + kill grace + slack
    (entry,) = fake.log()
    assert entry["argv"] == ["agent", "prompt", "reviewer", "do it"]
    assert process_gone(entry["pid"], timeout=0)


@pytest.mark.parametrize("code", ["agent_not_ready", "agent_blocked", "agent_not_found", "server_not_running"])
async def test_prompt_refused_before_send(fake, code):
    fake.mode("agent prompt", f"error:{code}")
    with pytest.raises(HerdrError) as info:
        await fake.scope().prompt("rev", "hello")
    expected = {"agent_not_found": "herdr_target_not_found", "server_not_running": "herdr_unavailable"}
    err = herdr_error(info, expected.get(code, "herdr_cli_error"))
    assert err.data["herdr_error_code"] == code
    assert "/secret/socket/path" not in err.message


@pytest.mark.parametrize(
    ("mode", "reason", "herdr_code"),
    [
        ("error:agent_prompt_failed", "cli_error", "agent_prompt_failed"),
        ("error:internal_error", "cli_error", "internal_error"),
        ("error:brand_new_code", "cli_error", "unrecognized"),
        ("ioerror", "cli_error", "io_error"),
        ("garbage", "invalid_response", None),
        ("flood_stdout", "output_too_large", None),
    ],
)
async def test_prompt_possibly_sent_is_uncertain(fake, mode, reason, herdr_code):
    fake.mode("agent prompt", mode)
    result = msgspec.to_builtins(await fake.scope().prompt("rev", "hello"))
    assert (result["delivery"], result["input_sent"], result["reason"]) == ("uncertain", "unknown", reason)
    assert result.get("herdr_error_code") == herdr_code
    assert len(fake.calls()) == 1


async def test_prompt_usage_error_is_not_sent(fake):
    fake.mode("agent prompt", "exit2")
    with pytest.raises(HerdrError) as info:
        await fake.scope().prompt("rev", "hello")
    herdr_error(info, "herdr_usage_error")


# --- wait ---------------------------------------------------------------------------------


async def test_wait_condition_met(fake):
    result = msgspec.to_builtins(await fake.scope().wait("writer", until=["idle", "done"], timeout_seconds=1))
    assert fake.calls()[-1] == ["agent", "wait", "w1:p1", "--until", "idle", "--until", "done", "--timeout", "1000"]
    assert (result["condition_met"], result["capped"], result["agent"]["agent_status"]) == (True, False, "idle")


async def test_wait_timeout_is_not_an_error(fake):
    result = msgspec.to_builtins(await fake.scope().wait("writer", until=["working"], timeout_seconds=0.05))
    assert fake.calls()[-1][-2:] == ["--timeout", "50"]
    assert result == {
        "backend": "herdr",
        "action": "wait",
        "target": "writer",
        "capped": False,
        "condition_met": False,
        "reason": "timeout",
        "agent": None,
    }


async def test_wait_is_capped_by_deadline(fake):
    # The margin leaves the CLI 800 ms to start and report its own timeout.
    settings = Settings(herdr_wait_margin_ms=800)
    result = msgspec.to_builtins(await fake.scope(settings, deadline_ms=1200).wait("rev", until=["idle"], timeout_seconds=60))
    argv = fake.calls()[-1]
    assert argv[:5] == ["agent", "wait", "reviewer", "--until", "idle"]
    assert argv[5] == "--timeout" and 0 < int(argv[6]) <= 1200 - 800
    assert (result["condition_met"], result["capped"], result["reason"]) == (False, True, "timeout")


async def test_wait_default_until(fake):
    result = msgspec.to_builtins(await fake.scope().wait("writer"))
    argv = fake.calls()[-1]
    assert argv[:4] == ["agent", "wait", "w1:p1", "--timeout"]
    assert result["condition_met"] is True


@pytest.mark.parametrize("until", [[], ["sleeping"], ["idle", "idle"], "idle", [None]])
async def test_wait_until_invalid(fake, until):
    with pytest.raises(HerdrError) as info:
        await fake.scope().wait("writer", until=until)
    herdr_error(info, "herdr_invalid_request")


@pytest.mark.parametrize("timeout", [-1, float("nan"), float("inf"), True, "5"])
async def test_wait_timeout_invalid(fake, timeout):
    with pytest.raises(HerdrError) as info:
        await fake.scope().wait("writer", timeout_seconds=timeout)
    herdr_error(info, "herdr_invalid_request")
    assert fake.calls() == []


# --- deadlines, caps and CLI failures -----------------------------------------------------


@pytest.mark.parametrize("mode", ["hang", "ignore_term"])
async def test_deadline_kills_the_cli(fake, mode):
    fake.mode("agent get", mode)
    start = trio.current_time()
    with pytest.raises(HerdrError) as info:
        await fake.scope(deadline_ms=400).get("rev")
    elapsed = trio.current_time() - start
    herdr_error(info, "herdr_timeout")
    (entry,) = fake.log()
    assert process_gone(entry["pid"], timeout=0)
    assert 0.4 <= elapsed < 0.4 + 0.2 + 1.0


async def test_deadline_kills_helpers_holding_the_pipe(fake):
    fake.mode("agent get", "hang_with_child")
    with pytest.raises(HerdrError) as info:
        await fake.scope(deadline_ms=600).get("rev")
    herdr_error(info, "herdr_timeout")
    (child,) = [e["child_pid"] for e in fake.log() if "child_pid" in e]
    assert process_gone(child)


async def test_deadline_is_shared_by_resolution_and_action(fake):
    fake.mode("agent get", "hang")
    with pytest.raises(HerdrError) as info:
        await fake.scope(deadline_ms=1000).get("writer")  # pane list, then agent get
    herdr_error(info, "herdr_timeout")
    assert fake.calls() == [["pane", "list"], ["agent", "get", "w1:p1"]]


async def test_stdout_overflow_on_json_is_an_error(fake):
    fake.mode("agent get", "flood_stdout")
    fake.state["flood_bytes"] = 200_000
    with pytest.raises(HerdrError) as info:
        await fake.scope().get("rev")
    herdr_error(info, "herdr_output_too_large")
    (entry,) = fake.log()
    assert process_gone(entry["pid"], timeout=0)


async def test_stdout_exactly_at_cap_is_fine(fake):
    fake.state["agents"][1]["text"] = "y" * 64
    result = msgspec.to_builtins(await fake.scope(Settings(herdr_stdout_max_bytes=64)).read("rev"))
    assert (result["text"], result["truncated"]) == ("y" * 64, False)


async def test_stderr_flood_is_truncated_not_fatal(fake):
    fake.mode("agent get", "flood_stderr")
    result = msgspec.to_builtins(await fake.scope().get("rev"))
    assert result["agent"]["name"] == "reviewer"


async def test_stderr_flood_on_read_is_drained(fake):
    fake.mode("agent read", "flood_stderr")
    fake.state["flood_bytes"] = 100_000
    # 100 kB of stderr, then a normal answer: stderr is drained past its cap, stdout kept.
    result = msgspec.to_builtins(await fake.scope().read("rev"))
    assert result["text"] == ""


@pytest.mark.parametrize(
    ("mode", "code", "herdr_code"),
    [
        ("garbage", "herdr_invalid_response", None),
        ("exit2", "herdr_usage_error", None),
        ("ioerror", "herdr_cli_error", "io_error"),
        ("error:agent_explain_unavailable", "herdr_cli_error", "agent_explain_unavailable"),
        ("error:protocol_mismatch", "herdr_unavailable", "protocol_mismatch"),
        ("error:agent_not_running", "herdr_target_not_found", "agent_not_running"),
    ],
)
async def test_cli_failures(fake, mode, code, herdr_code):
    fake.mode("agent explain", mode)
    with pytest.raises(HerdrError) as info:
        await fake.scope().explain("rev")
    err = herdr_error(info, code)
    assert err.data.get("herdr_error_code") == herdr_code
    assert "/secret/socket/path" not in err.message


async def test_wrong_socket_is_unavailable(fake):
    with pytest.raises(HerdrError) as info:
        await fake.scope(socket_path="/run/other.sock").get("rev")
    err = herdr_error(info, "herdr_unavailable")
    assert err.data["herdr_error_code"] == "server_not_running"


async def test_executable_removed_after_load(fake):
    scope = fake.scope()
    fake.exe.unlink()
    with pytest.raises(HerdrError) as info:
        await scope.get("rev")
    herdr_error(info, "herdr_exec_failed")


async def test_cancellation_stops_the_cli(fake):
    fake.mode("agent get", "hang")
    scope = fake.scope()
    with trio.move_on_after(0.3):
        await scope.get("rev")
    (entry,) = fake.log()
    assert process_gone(entry["pid"], timeout=0)
