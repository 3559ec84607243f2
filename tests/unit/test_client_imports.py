"""What the client loads: never trio, pyte or lmdb (DESIGN.md: the client is a thin
socket client), and the MCP SDK only when `vigil mcp` runs, so every other command stays
fast. Checked in a fresh interpreter, where nothing else has imported them first."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

FORBIDDEN = ("trio", "pyte", "lmdb", "vigil.daemon")


def loaded_after(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys, json\n"
                          "print(json.dumps(sorted(m for m in sys.modules)))"],
                         capture_output=True, text=True, check=True)
    return set(json.loads(out.stdout.splitlines()[-1]))


def roots(modules: set[str]) -> set[str]:
    found = set()
    for m in modules:
        for bad in FORBIDDEN:
            if m == bad or m.startswith(bad + "."):
                found.add(bad)
    return found


@pytest.mark.parametrize("code", [
    "import vigil.client.mcp.server, vigil.client.mcp.http, vigil.client.mcp.stdio",
    "from vigil.client.commands import mcp, report; import vigil.client.report",
])
def test_the_mcp_server_and_report_never_load_the_daemon_side(code):
    assert roots(loaded_after(code)) == set()


def test_other_commands_do_not_load_the_mcp_sdk():
    modules = loaded_after("import vigil.client.cli as c; c.build_parser()")
    assert not {m for m in modules if m == "mcp" or m.startswith(("mcp.", "mcp_types", "pydantic",
                                                                     "anyio", "starlette"))}
    assert roots(modules) == set()
