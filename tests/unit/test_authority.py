"""Authority fails closed: every route declares what it needs, a route without a
declaration cannot be registered, and every registered method × action × mode × profile ×
allowlist matches the spec's table ("Discovery and authority"), written out here on its own.
"""

from __future__ import annotations

import itertools

import msgspec
import pytest

from vigil.daemon.methods import (agent, daemon_info, execution, projection, scope, shell,
                                  temporary, terminal, transcript)
from vigil.daemon.rpc import authority
from vigil.daemon.rpc.dispatch import Dispatcher
from vigil.daemon.rpc.scopes import ThreadRecord
from vigil.protocol.errors import ErrorCode, VigilError
from vigil.protocol.methods import all_methods

SCOPED = {"thread_id": "t", "workspace_root": "/w"}
EID = "0" * 32

#: One sample request per method and action (the action decides the need where it varies).
SAMPLES = {
    ("hello", ""): {"protocol": [1, 1]},
    ("ping", ""): {},
    ("status", ""): {},
    ("Initialize", ""): {"workspace_root": "/w"},
    ("run", ""): {**SCOPED, "argv": ["true"]},
    ("Execution", "list"): {**SCOPED, "action": {"type": "list"}},
    ("Execution", "read"): {**SCOPED, "action": {"type": "read", "execution_id": EID}},
    ("Execution", "events"): {**SCOPED, "action": {"type": "events", "execution_id": EID}},
    ("Execution", "iterations"): {**SCOPED, "action": {"type": "iterations",
                                                       "execution_id": EID}},
    ("signal", ""): {**SCOPED, "execution_id": EID},
    ("cancel", ""): {**SCOPED, "execution_id": EID},
    ("pause", ""): {**SCOPED, "execution_id": EID},
    ("resume", ""): {**SCOPED, "execution_id": EID},
    ("rerun", ""): {**SCOPED, "execution_id": EID},
    ("resolve", ""): {**SCOPED, "prefix": "ab"},
    ("screen", ""): {**SCOPED, "execution_id": EID},
    ("input", ""): {**SCOPED, "execution_id": EID, "text": "x"},
    ("resize", ""): {**SCOPED, "execution_id": EID, "rows": 10, "cols": 10},
    ("attach", ""): {**SCOPED, "execution_id": EID},
    ("recording", ""): {**SCOPED, "execution_id": EID},
    ("follow", ""): {**SCOPED, "execution_id": EID},
    ("BashCommand", "command"): {**SCOPED, "action": {"type": "command", "command": "ls"}},
    ("BashCommand", "status_check"): {**SCOPED, "action": {"type": "status_check"}},
    ("BashCommand", "send_text"): {**SCOPED, "action": {"type": "send_text", "text": "x"}},
    ("BashCommand", "send_specials"): {**SCOPED, "action": {"type": "send_specials", "keys": ["Enter"]}},
    ("BashCommand", "send_ascii"): {**SCOPED, "action": {"type": "send_ascii", "codes": [3]}},
    ("BashCommand", "screen"): {**SCOPED, "action": {"type": "screen"}},
    ("BashCommand", "inspect"): {**SCOPED, "action": {"type": "inspect", "execution_id": EID}},
    ("BashCommand", "wait_for_turn"): {**SCOPED, "action": {"type": "wait_for_turn"}},
    ("BashCommand", "prompt"): {**SCOPED, "action": {"type": "prompt", "text": "go"}},
    ("BashCommand", "rerun"): {**SCOPED, "action": {"type": "rerun", "execution_id": EID}},
    ("Agent", "list"): {**SCOPED, "action": "list"},
    ("Agent", "read"): {**SCOPED, "action": "read", "target": EID},
    ("Agent", "wait"): {**SCOPED, "action": "wait", "target": EID},
    ("Agent", "prompt"): {**SCOPED, "action": "prompt", "target": EID, "prompt_id": "p", "text": "t"},
    ("Agent", "approve"): {**SCOPED, "action": "approve", "target": EID, "approval_id": "a"},
    ("transcript", ""): {**SCOPED, "run_id": EID},
    ("Temporary", "list"): {**SCOPED, "action": {"type": "list"}},
    ("Temporary", "release_temporary"): {**SCOPED, "action": {
        "type": "release_temporary", "names": ["h.py"], "revision": "r"}},
    ("subscribe", ""): {**SCOPED},
    ("trace_snapshot", ""): {**SCOPED, "execution_id": EID},
}

PROFILE_GRANTS = {"full": {"BashCommand", "Execution", "Agent"},
                  "coding": {"BashCommand", "Execution", "Agent"},
                  "terminal": {"BashCommand", "Execution", "Agent"},
                  "read-only": {"Execution", "Agent"}}
MODES = ("wcgw", "architect", "code_writer")
ALLOWLISTS = (None, ["Execution"], ["Agent"], ["Execution", "Agent"], ["BashCommand"],
              ["Agent", "BashCommand"], ["BashCommand", "Execution", "Agent", "ReadFiles"], [])


def spec_table(method: str, action: str, mode: str, profile: str, tools) -> bool:
    """The spec's table, restated: may this thread make this call?"""
    granted = PROFILE_GRANTS[profile] & (set(tools) if tools is not None else PROFILE_GRANTS[profile])
    bash, runs = "BashCommand" in granted, mode != "architect"
    if method in ("hello", "ping", "status", "Initialize"):
        return True
    if method == "Execution":
        return "Execution" in granted
    if method in ("resolve", "screen", "attach", "recording", "follow", "transcript",
                  "subscribe", "trace_snapshot"):
        return bool(granted & {"Execution", "Agent"})
    if method == "Agent":
        if action in ("prompt", "approve"):  # trusted BashCommand authority and wcgw mode
            return "Agent" in granted and bash and mode == "wcgw"
        return "Agent" in granted
    if method == "input" or (method == "BashCommand" and (action.startswith("send_")
                                                          or action == "prompt")):
        return bash and mode == "wcgw"  # raw input: never architect, never code_writer
    if method == "BashCommand" and action in ("screen", "inspect", "wait_for_turn"):
        return bash  # the shell's own views: any mode
    if method == "Temporary":  # the shell's helpers: listed in any mode, released as runs
        return bash and (action == "list" or runs)
    if method in ("run", "signal", "resize", "BashCommand", "cancel", "pause", "resume",
                  "rerun"):
        return bash and runs  # lifecycle controls and reruns act as `run` and `signal` do
    raise AssertionError(f"no row for {method}")


def routed_dispatcher() -> Dispatcher:
    """The daemon's routes, as main.py installs them (the services are never called here)."""
    d = Dispatcher(scopes=None)
    daemon_info.install(d, state=None, ingest=None)
    scope.install(d, scopes=None, shells=None, transcripts=None, helpers=None)
    temporary.install(d, helpers=None)
    transcript.install(d, store=None, scopes=None, transcripts=None, settings=None)
    execution.install(d, store=None, runtimes=None, service=None, outputs=None, settings=None,
                      controls=None, shells=None)
    terminal.install(d, store=None, runtimes=None, settings=None)
    shell.install(d, shells=None, runtimes=None, settings=None, store=None, service=None,
                  prompts=None)
    agent.install(d, service=None, prompts=None, settings=None)
    projection.install(d, hub=None, store=None, settings=None)
    return d


def test_every_method_is_routed_with_a_declared_authority():
    d = routed_dispatcher()
    assert set(d.method_names) == {m.name for m in all_methods()} - {"hello"}
    for name in d.method_names:
        declared = d.get(name).authority
        assert isinstance(declared, authority.Need) or callable(declared), name
    sampled = {name for name, _ in SAMPLES}
    assert sampled == {m.name for m in all_methods()}


def test_a_route_without_a_declaration_cannot_be_registered():
    d = Dispatcher(scopes=None)
    with pytest.raises(TypeError):
        d.route("ping")  # no authority: refused before any handler exists
    with pytest.raises(TypeError, match="authority must be a Need"):
        d.route("ping", authority="everyone")


@pytest.mark.parametrize("mode,profile", list(itertools.product(MODES, PROFILE_GRANTS)))
def test_every_call_matches_the_spec_table(mode, profile):
    d = routed_dispatcher()
    for tools in ALLOWLISTS:
        thread = ThreadRecord(thread_id="t", workspace_root="/w", mode=mode, profile=profile,
                              tools=tools)
        for (name, action), raw in SAMPLES.items():
            if name == "hello":
                continue  # answered by the connection itself, before any thread exists
            route = d.get(name)
            params = msgspec.convert(raw, route.method.params)
            need = authority.need_of(route.authority, params)
            try:
                authority.check(thread, need)
                allowed = True
            except VigilError as exc:
                assert exc.code is ErrorCode.FORBIDDEN
                assert exc.data["missing_authority"] in exc.message
                allowed = False
            assert allowed == spec_table(name, action, mode, profile, tools), (
                name, action, mode, profile, tools)


def test_initialize_reports_the_effective_tools():
    narrowed = ThreadRecord(thread_id="t", workspace_root="/w", profile="read-only",
                            tools=["BashCommand", "Agent", "ReadFiles"])
    assert authority.tools_of(narrowed) == ["Agent"]  # an allowlist never widens
