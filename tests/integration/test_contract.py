"""The typed contract, end to end: a real daemon's answer to every method and every action
(and every pushed event kind) validates against `vigil protocol schema`, the document
plugin authors and MCP tools are generated from, checked with the `jsonschema` package.

Answers are recorded over a JSON connection (what a plugin in another language sees); the
test fails if a registered method or action was not exercised, so a new one cannot ship
without a schema-checked answer.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from tests.integration.test_agent_prompt import FAKE_AGENT
from tests.integration.test_agent_recovery_herdr import herdr_world
from tests.support.daemon import wait_for
from tests.support.executions import Session, workspace  # noqa: F401 (fixture)
from vigil.protocol.methods import all_methods
from vigil.protocol.schema import export_schema

SCHEMA = export_schema()


def validator(schema: dict) -> jsonschema.Draft202012Validator:
    """A validator for one answer schema, resolving `$ref`s in the document's `$defs`."""
    return jsonschema.Draft202012Validator({**schema, "$defs": SCHEMA["$defs"]})


def test_the_exported_document_is_valid_json_schema():
    jsonschema.Draft202012Validator.check_schema({"$defs": SCHEMA["$defs"]})
    for name, entry in SCHEMA["methods"].items():
        for key in ("params", "result", "events"):
            if key in entry:
                jsonschema.Draft202012Validator.check_schema({**entry[key], "$defs": SCHEMA["$defs"]})
    # The CLI prints the same document.
    out = subprocess.run([sys.executable, "-m", "vigil.client.cli", "protocol", "schema"],
                         capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == json.loads(json.dumps(SCHEMA))


class Recorder:
    """Calls over a JSON connection and validates each answer against its action's schema."""

    def __init__(self, session: Session):
        self.s = session
        self.seen: set[tuple[str, str]] = set()

    def check(self, method: str, key: str | None, answer) -> None:
        entry = SCHEMA["methods"][method]
        schema = entry["results_by_action"][key] if key else entry["result"]
        errors = sorted(validator(schema).iter_errors(answer), key=str)
        assert not errors, f"{method} {key}: {errors[0].message} at {list(errors[0].path)}"
        self.seen.add((method, key or ""))

    def call(self, method: str, key: str | None = None, /, **params):
        """Call `method`; check the answer against the schema of action `key` (if any)."""
        answer = self.s.call(method, **params)
        self.check(method, key, answer)
        return answer

    def execution(self, action: dict):
        return self.call("Execution", action["type"], action=action)

    def agent(self, key: str, **params):
        return self.call("Agent", key, **params)


@pytest.fixture
def recorder(home, workspace):
    home.start_daemon(extra_env={**herdr_world(home, workspace),
                                 "CLAUDE_CONFIG_DIR": str(home.root / "claude")})
    rec = Recorder(json_session(home, workspace))
    s = rec.s
    try:
        yield rec
    finally:
        s.close()


def expected_answers() -> set[tuple[str, str]]:
    out = set()
    for method in all_methods():
        if method.results is None:
            out.add((method.name, ""))
        else:
            out |= {(method.name, action) for action in method.results}
    return out


def test_every_answer_validates_against_the_schema(recorder, home, workspace):
    r = recorder
    s = r.s
    client = s.client
    welcome = client.welcome
    r.check("hello", None, json.loads(json.dumps({
        "protocol": welcome.protocol, "daemon_version": welcome.daemon_version,
        "daemon_epoch": welcome.daemon_epoch, "capabilities": welcome.capabilities,
        "max_frame_bytes": welcome.max_frame_bytes})))
    r.check("ping", None, client.call("ping", {}))
    r.check("status", None, client.call("status", {}))
    r.check("Initialize", None, client.call("Initialize", {"workspace_root": str(workspace)}))
    # The UI projection of everything below, checked at the end.
    watcher = json_session(home, workspace)
    r.check("subscribe", None, watcher.call("subscribe"))

    # An execution that waits for input, and one that ended.
    cat = r.call("run", argv=["cat"])["execution"]["execution_id"]
    done = r.call("run", command="printf 'one\\ntwo\\n'; exit 3")["execution"]["execution_id"]
    s.wait_exit(done)
    r.call("resolve", prefix=cat[:8])
    r.execution({"type": "list"})
    r.execution({"type": "get", "execution_id": done})
    for source in ("output", "screen", "detection", "scrollback"):
        r.execution({"type": "read", "execution_id": done, "source": source})
    r.execution({"type": "observe", "items": [{"execution_id": done}, {"execution_id": "0" * 32}]})
    r.execution({"type": "wait", "execution_ids": [done], "timeout_seconds": 0})
    r.execution({"type": "explain", "execution_id": done})
    r.call("screen", execution_id=cat, ansi=True)
    r.call("input", execution_id=cat, text="hello", keys=["Enter"])
    r.call("resize", execution_id=cat, rows=30, cols=90)
    r.call("pause", execution_id=cat)
    r.call("resume", execution_id=cat)
    again = r.call("rerun", execution_id=cat)["execution"]["execution_id"]
    r.call("cancel", execution_id=again)
    r.execution({"type": "events", "execution_id": cat})
    r.call("signal", execution_id=cat, signal="TERM")
    page = r.call("recording", execution_id=done)
    assert [e["kind"] for e in page["events"]] == ["output"] and page["has_more"] is False

    # The persistent shell, every action (the prompt one goes to the fake agent below).
    hi = r.call("BashCommand", "command", action={"type": "command", "command": "echo hi"})
    r.execution({"type": "iterations", "execution_id": hi["execution_id"]})
    r.call("BashCommand", "rerun", action={"type": "rerun", "execution_id": hi["execution_id"]})
    r.call("BashCommand", "command", action={"type": "command", "command": "exit 4"},
           wait_policy="adaptive")
    r.call("BashCommand", "command", action={"type": "command", "command": "sleep 30"},
           wait_policy="task")
    r.call("BashCommand", "status_check", action={"type": "status_check"}, wait_for_seconds=0)
    r.call("BashCommand", "send_text", action={"type": "send_text", "text": ""},
           wait_for_seconds=0)
    r.call("BashCommand", "send_specials", action={"type": "send_specials", "keys": ["Enter"]},
           wait_for_seconds=0)
    r.call("BashCommand", "send_ascii", action={"type": "send_ascii", "codes": [13]},
           wait_for_seconds=0)
    r.call("BashCommand", "screen", action={"type": "screen"})
    r.call("BashCommand", "screen", action={"type": "screen", "execution_id": done})
    r.call("BashCommand", "inspect", action={"type": "inspect"})
    r.call("BashCommand", "wait_for_turn", action={"type": "wait_for_turn", "timeout_seconds": 10})

    # attach: the answer and every event kind it pushes (output, then exited).
    attach_one(r, home, workspace)
    # follow, and run with follow: the answer, then output events and the end.
    follow_one(r, home, workspace)

    # Agent, native: observation, a prompt to the fake agent, its receipt.
    agent = r.call("run", argv=[FAKE_AGENT])["execution"]["execution_id"]
    wait_for(lambda: s.get(agent)["recognized_state"] == "awaiting_input", timeout=20,
             what="the fake agent's prompt box")
    for action, extra in (("list", {}), ("get", {}), ("read", {}), ("explain", {}),
                          ("wait", {"timeout_seconds": 0})):
        r.agent(f"native/{action}", action=action, target=agent, **extra)
    r.agent("native/prompt", action="prompt", target=agent, prompt_id="p1", text="hello",
            recognizer="claude", timeout_seconds=1)
    receipt = r.agent("native/wait_receipt", action="wait", target=agent, prompt_id="p1",
                      timeout_seconds=0)["data"]["receipt"]
    wait_for(lambda: s.call("Agent", action="get", target=agent)["data"]["turn"]["state"]
             == "committed", timeout=20, what="the turn's archive")
    for mode in ("summary", "tool_calls", "detail", "unknown-mode"):
        r.agent("native/get_trace", action="get_trace", archive_ref=receipt["archive_ref"],
                mode=mode)
    r.agent("native/get_trace", action="get_trace", trace_key=receipt["trace_key"])
    wait_for(lambda: s.get(agent)["recognized_state"] == "awaiting_input", timeout=20,
             what="the fake agent's prompt box again")
    r.call("BashCommand", "prompt", action={"type": "prompt", "text": "again",
                                            "execution_id": agent, "recognizer": "claude",
                                            "timeout_seconds": 1})
    wait_for(lambda: s.get(agent)["recognized_state"] == "awaiting_input", timeout=20,
             what="the fake agent's prompt box once more")
    s.call("Agent", action="prompt", target=agent, prompt_id="p2", text="approve this",
           recognizer="claude", timeout_seconds=20)
    r.agent("native/approve", action="approve", target=agent, approval_id="a1",
            recognizer="claude", timeout_seconds=1)

    # Agent, Herdr (the fake herdr of tests/fixtures).
    for action, extra in (("list", {}), ("get", {}), ("read", {"lines": 5}), ("explain", {}),
                          ("wait", {"until": ["idle"], "timeout_seconds": 1}),
                          ("prompt", {"text": "hi"})):
        r.agent(f"herdr/{action}", backend="herdr", action=action,
                **({} if action == "list" else {"target": "writer"}), **extra)

    # transcript: a page of the thread's events, then a follow's pushed events.
    page = r.call("transcript", run_id=s.thread_id)
    assert page["events"] and page["events"][0]["type"] == "run.started"
    transcript_one(r, home, workspace, done)

    # Temporary: a listing with a helper, and a release of it.
    listed = r.call("Temporary", "list", action={"type": "list"})
    (Path(listed["directory"]) / "h.py").write_text("h")
    listed = r.call("Temporary", "list", action={"type": "list"})
    r.call("Temporary", "release_temporary", action={
        "type": "release_temporary", "names": ["h.py", "gone"], "revision": listed["revision"]})

    r.call("trace_snapshot", execution_id=done)
    projection_seen(r, watcher)
    assert expected_answers() - r.seen == set()


def projection_seen(r: Recorder, watcher: Session) -> None:
    """Every event the subscription pushed during the test validates; it saw executions
    start, progress, steps end, and executions end in each way (an agent's tool events are
    checked against the schema in test_projection)."""
    last = r.call("run", argv=["true"])["execution"]["execution_id"]
    schema = SCHEMA["methods"]["subscribe"]["events"]
    kinds: set[str] = set()
    try:
        while True:
            event = watcher.client.next_event()
            errors = list(validator(schema).iter_errors(json.loads(json.dumps(event))))
            assert not errors, errors[0].message
            kinds.add(event["kind"])
            if event["kind"] == "EXECUTION_COMPLETE" and event["execution_id"] == last:
                break
    finally:
        watcher.close()
    assert {"EXECUTION_START", "EXECUTION_PROGRESS", "NODE_COMPLETE", "EXECUTION_COMPLETE",
            "EXECUTION_FAILED", "EXECUTION_CANCELLED"} <= kinds, kinds


def json_session(home, workspace) -> Session:
    """A session over a JSON connection (what a plugin in another language reads)."""
    s = Session(home, workspace)
    s.client.close()
    s.client = home.client(encoding="json")
    return s


def transcript_one(r: Recorder, home, workspace, run_id: str) -> None:
    """A follow of a completed run: its answer, then its end event."""
    s = json_session(home, workspace)
    events = SCHEMA["methods"]["transcript"]["events"]
    try:
        r.check("transcript", None, s.call("transcript", run_id=run_id, follow=True))
        event = s.client.next_event()
        errors = list(validator(events).iter_errors(json.loads(json.dumps(event))))
        assert not errors, errors[0].message
        assert event["kind"] == "end" and event["run_id"] == run_id
    finally:
        s.close()


def attach_one(r: Recorder, home, workspace) -> None:
    s = json_session(home, workspace)
    try:
        eid = r.call("run", command="read x; echo got-$x")["execution"]["execution_id"]
        answer = s.call("attach", execution_id=eid)
        r.check("attach", None, answer)
        s.call("input", execution_id=eid, text="it", keys=["Enter"])
        kinds = events_until(s, "attach", "exited")
        assert kinds[0] == "output" and kinds[-1] == "exited"
    finally:
        s.close()


def events_until(s: Session, method: str, last: str) -> list[str]:
    """The kinds of the events `method`'s call pushes, each checked against the schema,
    up to the one of kind `last`."""
    schema = SCHEMA["methods"][method]["events"]
    kinds: list[str] = []
    while last not in kinds:
        event = s.client.next_event()
        errors = list(validator(schema).iter_errors(json.loads(json.dumps(event))))
        assert not errors, errors[0].message
        kinds.append(event["kind"])
    return kinds


def follow_one(r: Recorder, home, workspace) -> None:
    s = json_session(home, workspace)
    try:
        eid = r.call("run", command="echo one; echo two")["execution"]["execution_id"]
        r.check("follow", None, s.call("follow", execution_id=eid))
        assert events_until(s, "follow", "end")[-1] == "end"
        r.check("run", None, s.call("run", argv=["echo", "three"], follow=True))
        kinds = events_until(s, "run", "end")
        assert kinds[0] == "output" and kinds[-1] == "end"
    finally:
        s.close()


def test_typed_decoding_in_the_client(home, daemon, workspace):
    """The client decodes answers as the registry's Structs (what the CLI reads)."""
    from vigil.protocol.api.execution import ExecutionResult, ListData

    s = Session(home, workspace)
    try:
        s.run(argv=["true"])
        got = s.client.call_typed("Execution", s.scoped(action={"type": "list"}))
        assert isinstance(got, ExecutionResult) and isinstance(got.data, ListData)
        assert got.data.total == 1 and got.data.executions[0].argv == ["true"]
    finally:
        s.close()


def test_schema_names_every_result_by_action():
    for method in all_methods():
        entry = SCHEMA["methods"][method.name]
        if method.results is not None:
            assert set(entry["results_by_action"]) == set(method.results)
            assert entry["result"] == {"anyOf": list(entry["results_by_action"].values())}


def test_the_schema_file_is_not_a_stub():
    # `data: object` was the whole contract once: every data field is now a typed $ref.
    text = json.dumps(SCHEMA)
    assert '"data": {}' not in text
    for name in ("ListData", "GetData", "ReadData", "ObserveData", "WaitData", "ExplainData",
                 "PromptData", "ReceiptData", "HerdrListData", "Page", "Gap", "Receipt"):
        assert name in SCHEMA["$defs"], name


def test_repository_has_no_stale_copy(tmp_path):
    # docs/ does not carry a copy of the schema that could go stale: the CLI prints it.
    assert not list(Path(__file__).resolve().parents[2].joinpath("docs").glob("*schema*.json"))
