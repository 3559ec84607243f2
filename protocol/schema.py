"""JSON Schema of every message, for plugin authors (`vigil protocol schema`).

Generated from the same Structs the daemon validates with, via the method registry, so the
published schema cannot drift from what the daemon accepts.
"""

from __future__ import annotations

from typing import Any

import msgspec

from . import envelope
from .methods import all_methods
from .version import PROTOCOL_MAX, PROTOCOL_MIN, VERSION


def export_schema() -> dict[str, Any]:
    methods = all_methods()
    types: list[Any] = [envelope.ErrorBody]
    for method in methods:
        types += [method.params, method.result]
    schemas, components = msgspec.json.schema_components(types, ref_template="#/$defs/{name}")
    it = iter(schemas[1:])
    out_methods = {}
    for method in methods:
        params, result = next(it), next(it)
        out_methods[method.name] = {"summary": method.summary, "params": params, "result": result}
    from .errors import ErrorCode

    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "vigil wire protocol",
        "version": VERSION,
        "protocol": [PROTOCOL_MIN, PROTOCOL_MAX],
        "framing": "u32 big-endian body length, then one msgpack or JSON body",
        "envelopes": {
            "request": {"id": "int|str", "method": "str", "params": "object"},
            "result": {"id": "int|str", "result": "any"},
            "error": {"id": "int|str|null", "error": schemas[0]},
            "event": {"method": "event", "params": "any"},
        },
        "error_codes": [c.value for c in ErrorCode],
        "methods": out_methods,
        "$defs": components,
    }
