"""The MCP tools — `Initialize`, `BashCommand`, `Execution`, `Agent` as the spec shapes them
(seeds/000), and `Temporary`, the thread's managed helpers (the spec's `release_temporary`
requests, on a tool of their own since vigil serves no `EditFiles`) — with schemas generated from the protocol's typed Structs
(`vigil.protocol.methods`): the daemon validates and answers with the same types, so the
advertised schemas cannot drift from what is accepted and returned.

Every schema is made self-contained for strict clients: the root is the Struct's own object
schema (`type: object`, never a bare `$ref`) and every `$ref` is inlined, so nothing is left
to resolve (the MCP SDK's client resolves refs against the schema alone; others resolve
none). msgspec's `discriminator` (an OpenAPI keyword, not JSON Schema) and `title` are
dropped, nullable scalars become type lists. A tool whose answer differs by action
advertises `type: object` with an `anyOf` of the action results. The SDK's client validates
every result against the output schema: these shapes halve what that costs per call.

No MCP SDK import here: this module is the contract, the server maps it onto the SDK.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec

from vigil.protocol.api.scope import PROFILE_TOOLS
from vigil.protocol.methods import lookup

REF_PREFIX = "#/$defs/"
#: msgspec writes 2020-12 (tuples are `prefixItems`); MCP's default dialect is the same.
SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


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
        "for its turn), rerun (an execution again as a new one: a run with its argv, cwd, env "
        "and size; a shell command in the shell as its next generation). wait_for_seconds "
        "bounds the inline wait; a command still running is reported, never killed.",
        read_only=False, destructive=True, open_world=False),
    "Execution": ToolSpec(
        "Execution", "Execution",
        "Read the history of accepted commands: action.type list, get, read (bounded pages of "
        "output, screen, detection or scrollback — the lines that scrolled off the screen; "
        "continue with next_cursor), observe (1-32 executions in one call), wait (changes "
        "after a catalog cursor, at most 30 s), explain (turn recognition), events (the "
        "execution's log: what vigil did and saw, by level, paged by offset), iterations (a "
        "persistent shell's commands). list takes state active or history. Read-only.",
        read_only=True, destructive=False, open_world=False),
    "Agent": ToolSpec(
        "Agent", "Agent",
        "Observe agent executions (list, get, read, explain, wait) and prompt one once per "
        "prompt_id, with a receipt (delivered/refused/uncertain; never resend an uncertain "
        "one); approve one recognized as awaiting approval, once per approval_id (its "
        "recognizer's approve keys). get and prompt carry the turn's summary; get_trace reads "
        "a turn's archive by archive_ref or trace_key (mode summary, tool_calls — which tools "
        "ran — or detail). backend herdr reaches operator-configured Herdr targets.",
        read_only=False, destructive=True, open_world=True),
    "Temporary": ToolSpec(
        "Temporary", "Temporary",
        "The thread's managed directory for throwaway helper scripts and data files (its path "
        "is Initialize's temporary_dir, $VIGIL_TEMPORARY_DIR in the shell). action.type: list "
        "(helpers with size and mtime, the directory's revision, the budget measured now), "
        "release_temporary (delete the named helpers: plain names and the revision last "
        "read; a stale revision refuses all; a helper still open, mapped, running or named by "
        "a running command stays in_use; each name answers released, in_use, not_found or "
        "refused). Retry with the revision the answer gives.",
        read_only=False, destructive=True, open_world=False),
}

#: Tools by the order they are listed in; Initialize is always served.
TOOL_ORDER = ("Initialize", "BashCommand", "Execution", "Agent", "Temporary")


def served_tools(profile: str, allowlist: list[str] | None) -> list[str]:
    """The tools a `vigil mcp --profile P --tools A,B` server advertises and serves:
    Initialize, and the profile's tools narrowed by the allowlist (never widened).
    Temporary goes with BashCommand (its helpers are what the shell's commands wrote, and
    the daemon grants it on BashCommand authority); an allowlist must name both."""
    granted = set(PROFILE_TOOLS[profile])
    if "BashCommand" in granted:
        granted.add("Temporary")
    if allowlist is not None:
        granted &= set(allowlist)
    if "BashCommand" not in granted:
        granted.discard("Temporary")
    return [name for name in TOOL_ORDER if name == "Initialize" or name in granted]


#: Annotation keywords of msgspec's output that a validator never needs: `title` is the
#: Struct's class name, `discriminator` an OpenAPI keyword (each variant pins its tag with a
#: `const`/`enum` already).
_DROPPED = frozenset({"title", "discriminator"})
#: Keywords a nullable scalar may carry and still fold into a type list.
_SCALAR = frozenset({"type", "enum", "minimum", "maximum", "exclusiveMinimum",
                     "exclusiveMaximum", "minLength", "maxLength", "pattern", "description"})


def _inline(node: Any, components: dict[str, Any], path: tuple[str, ...] = ()) -> Any:
    """`node` with every `$ref` replaced by its definition (the protocol's types do not
    recurse; one that did would fail here, loudly)."""
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str):
            name = ref[len(REF_PREFIX):]
            if not ref.startswith(REF_PREFIX) or name in path:
                raise ValueError(f"cannot inline {ref!r} (recursive or foreign)")
            return _inline({**components[name], **{k: v for k, v in node.items() if k != "$ref"}},
                           components, path + (name,))
        out = {}
        for key, value in node.items():
            if key == "properties":  # names of fields, not keywords: keep every one
                out[key] = {name: _inline(v, components, path) for name, v in value.items()}
            elif key not in _DROPPED:
                out[key] = _inline(value, components, path)
        return out
    if isinstance(node, list):
        return [_inline(v, components, path) for v in node]
    return node


def _nullable(node: Any) -> Any:
    """`anyOf: [{type: T, …}, {type: null}]` as `type: [T, "null"]`: the same set of values,
    one keyword instead of two subschemas to try (a third of the validation time of a
    listing in the SDK's client)."""
    if isinstance(node, list):
        return [_nullable(v) for v in node]
    if not isinstance(node, dict):
        return node
    node = {k: _nullable(v) for k, v in node.items()}
    alternatives = node.get("anyOf")
    if isinstance(alternatives, list) and len(alternatives) == 2 and {"type": "null"} in alternatives:
        other = next(a for a in alternatives if a != {"type": "null"})
        if isinstance(other.get("type"), str) and set(other) <= _SCALAR:
            folded = {**{k: v for k, v in node.items() if k != "anyOf"}, **other,
                      "type": [other["type"], "null"]}
            if "enum" in folded:
                folded["enum"] = [*folded["enum"], None]
            return folded
    return node


def self_contained(roots: list[Any], components: dict[str, Any]) -> dict[str, Any]:
    """One object schema for `roots` (the schemas msgspec made for the types): every
    `$ref` inlined, so nothing is left to resolve."""
    inlined = [_nullable(_inline(root, components)) for root in roots]
    doc = inlined[0] if len(inlined) == 1 else {"type": "object", "anyOf": inlined}
    return {"$schema": SCHEMA_DIALECT, **doc}


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
