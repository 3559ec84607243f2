"""JSON Schema of every message, for plugin authors (`vigil protocol schema`) and MCP tools.

Generated from the same Structs the daemon validates with and answers with, via the method
registry, so the published schema cannot drift from what the daemon accepts or sends. Every
`$ref` points into the one `$defs` table of the document.
"""

from __future__ import annotations

from typing import Any

import msgspec

from . import envelope
from .errors import ErrorCode
from .methods import all_methods, events
from .version import PROTOCOL_MAX, PROTOCOL_MIN, VERSION

REF_TEMPLATE = "#/$defs/{name}"


def export_schema() -> dict[str, Any]:
    methods = all_methods()
    EVENTS = events()
    types: list[Any] = [envelope.ErrorBody]
    for method in methods:
        types.append(method.params)
        types += method.all_results()
    event_methods = sorted(EVENTS)
    types += [EVENTS[name] for name in event_methods]
    schemas, components = msgspec.json.schema_components(types, ref_template=REF_TEMPLATE)
    it = iter(schemas[1:])
    out_methods: dict[str, Any] = {}
    for method in methods:
        entry: dict[str, Any] = {"summary": method.summary, "params": next(it)}
        if method.results is None:
            entry["result"] = next(it)
        else:
            by_action = {action: next(it) for action in method.results}
            entry["result"] = {"anyOf": list(by_action.values())}
            entry["results_by_action"] = by_action
        out_methods[method.name] = entry
    for name in event_methods:
        out_methods[name]["events"] = next(it)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "vigil wire protocol",
        "version": VERSION,
        "protocol": [PROTOCOL_MIN, PROTOCOL_MAX],
        "framing": "u32 big-endian body length, then one msgpack or JSON body",
        "envelopes": {
            "request": {"id": "int|str", "method": "str", "params": "object"},
            "result": {"id": "int|str", "result": "the method's result"},
            "error": {"id": "int|str|null", "error": schemas[0]},
            "event": {"method": "event", "params": "the streaming method's events"},
        },
        "error_codes": [c.value for c in ErrorCode],
        "methods": out_methods,
        "$defs": components,
    }
