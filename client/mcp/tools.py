"""The four MCP tools — `Initialize`, `BashCommand`, `Execution`, `Agent` — as the spec
shapes them (seeds/000), with schemas generated from the protocol's typed Structs
(`vigil.protocol.methods`): the daemon validates and answers with the same types, so the
advertised schemas cannot drift from what is accepted and returned.

Every schema is made self-contained for strict clients: the root is the Struct's own object
schema (`type: object`, never a bare `$ref`), and the `$defs` it needs — only those — travel
with it, so every `$ref` resolves inside the one document (the MCP SDK's client resolves
refs against the schema alone). msgspec's `discriminator` (an OpenAPI keyword, not JSON
Schema) is dropped: each variant already pins its tag with a `const`/`enum`. A tool whose
answer differs by action advertises `type: object` with an `anyOf` of the action results.

No MCP SDK import here: this module is the contract, the server maps it onto the SDK.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec

from vigil.protocol.api.scope import PROFILE_TOOLS
from vigil.protocol.methods import lookup

REF_PREFIX = "#/$defs/"


@dataclass(frozen=True)
class ToolSpec:
    name: str
    #: The RPC method the tool calls (the same name: the spec's tools are vigil's methods).
    method: str
    description: str
    #: MCP annotations (spec: Execution read-only and closed-world; Agent destructive and
    #: open-world; BashCommand destructive).
    read_only: bool
    destructive: bool
    open_world: bool


SPECS = {
    "Initialize": ToolSpec(
        "Initialize", "Initialize",
        "Open or resume a thread for a workspace (absolute path). Call it first: every other "
        "tool needs the exact thread_id and workspace_root it returns. mode (wcgw, architect, "
        "code_writer), profile and an optional tools allowlist only narrow what this server "
        "grants.",
        read_only=False, destructive=False, open_world=False),
    "BashCommand": ToolSpec(
        "BashCommand", "BashCommand",
        "The thread's persistent shell. action.type: command (runs in the shell, cd persists; "
        "wait_policy adaptive/task runs it as a background Task observed through Execution), "
        "status_check, send_text, send_specials, send_ascii (input to the running command), "
        "screen, inspect, wait_for_turn, prompt (type a line into the shell's program and wait "
        "for its turn). wait_for_seconds bounds the inline wait; a command still running is "
        "reported, never killed.",
        read_only=False, destructive=True, open_world=False),
    "Execution": ToolSpec(
        "Execution", "Execution",
        "Read the history of accepted commands: action.type list, get, read (bounded pages of "
        "output, screen or detection; continue with next_cursor), observe (1-32 executions in "
        "one call), wait (changes after a catalog cursor, at most 30 s), explain (turn "
        "recognition). Read-only.",
        read_only=True, destructive=False, open_world=False),
    "Agent": ToolSpec(
        "Agent", "Agent",
        "Observe agent executions (list, get, read, explain, wait) and prompt one once per "
        "prompt_id, with a receipt (delivered/refused/uncertain; never resend an uncertain "
        "one). backend herdr reaches operator-configured Herdr targets.",
        read_only=False, destructive=True, open_world=True),
}

#: Tools by the order they are listed in; Initialize is always served.
TOOL_ORDER = ("Initialize", "BashCommand", "Execution", "Agent")


def served_tools(profile: str, allowlist: list[str] | None) -> list[str]:
    """The tools a `vigil mcp --profile P --tools A,B` server advertises and serves:
    Initialize, and the profile's tools narrowed by the allowlist (never widened)."""
    granted = set(PROFILE_TOOLS[profile])
    if allowlist is not None:
        granted &= set(allowlist)
    return [name for name in TOOL_ORDER if name == "Initialize" or name in granted]


def _refs(node: Any, out: set[str]) -> None:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith(REF_PREFIX):
            out.add(ref[len(REF_PREFIX):])
        for value in node.values():
            _refs(value, out)
    elif isinstance(node, list):
        for value in node:
            _refs(value, out)


def _clean(node: Any) -> Any:
    """A copy without OpenAPI's `discriminator` keyword."""
    if isinstance(node, dict):
        return {k: _clean(v) for k, v in node.items() if k != "discriminator"}
    if isinstance(node, list):
        return [_clean(v) for v in node]
    return node


def self_contained(roots: list[Any], components: dict[str, Any]) -> dict[str, Any]:
    """One object schema for `roots` (the schemas msgspec made for the types), with the
    `$defs` their refs reach and nothing else."""
    if len(roots) == 1:
        ref = roots[0].get("$ref", "")
        doc = dict(components[ref[len(REF_PREFIX):]]) if ref.startswith(REF_PREFIX) else dict(roots[0])
    else:
        doc = {"type": "object", "anyOf": roots}
    needed: set[str] = set()
    _refs(doc, needed)
    pending = list(needed)
    while pending:
        found: set[str] = set()
        _refs(components[pending.pop()], found)
        pending += list(found - needed)
        needed |= found
    if needed:
        doc["$defs"] = {name: components[name] for name in sorted(needed)}
    return _clean(doc)


def tool_schemas(name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(inputSchema, outputSchema) of tool `name`, from its method's params and results."""
    method = lookup(SPECS[name].method)
    results = method.all_results()
    schemas, components = msgspec.json.schema_components([method.params, *results],
                                                         ref_template=REF_PREFIX + "{name}")
    # Results of different actions may share a type (BashCommand's input actions).
    unique: list[Any] = []
    for schema in schemas[1:]:
        if schema not in unique:
            unique.append(schema)
    return self_contained([schemas[0]], components), self_contained(unique, components)
