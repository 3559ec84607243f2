"""The limits of the wire contract: what a client must know to form a valid request.

Both sides read these: the daemon enforces them, a client (the CLI, the MCP server, a
plugin) can check a request before sending it and repeat a bounded call (a wait of 30 s at
most) instead of sending one the daemon will refuse. The daemon's own tunables (store,
guardian, screen, recognizers, Herdr) and the loading of `config.toml` live in
`vigil.daemon.settings`, whose `Settings` extends `WireLimits`, so one file configures both.

The origin of each default is written next to it: "spec" is ../shared/seeds/000 (execution
history), "DESIGN" is DESIGN.md. stdlib + msgspec only.
"""

from __future__ import annotations

from typing import Annotated

import msgspec
from msgspec import Meta

KiB = 1024
MiB = 1024 * KiB

#: Terminal rows and columns any request may ask for (the guardian's winsize is a u16, but
#: a screen larger than this costs the keeper more than it is worth).
TERMINAL_SIZE_MIN = 2
TERMINAL_SIZE_MAX = 1000


def int_setting(lo, hi, doc: str):
    """An int setting bounded to [lo, hi], with its meaning."""
    return Annotated[int, Meta(ge=lo, le=hi, description=doc)]


def float_setting(lo, hi, doc: str):
    """A float setting bounded to [lo, hi], with its meaning."""
    return Annotated[float, Meta(ge=lo, le=hi, description=doc)]


_r, _f = int_setting, float_setting


class WireLimits(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, frozen=True):
    """The limits a request is checked against. Field docs state the unit; the defaults
    are the spec's."""

    # --- wire -------------------------------------------------------------------------------
    max_frame_bytes: _r(4 * KiB, 256 * MiB, "largest frame body accepted (DESIGN: 16 MiB)") = 16 * MiB
    connection_requests_in_flight: _r(1, 65536, "unanswered requests one connection may have; past it the daemon stops reading that connection") = 64
    client_start_timeout_seconds: _f(0.1, 60, "how long a CLI waits for an autostarted daemon") = 10.0

    # --- reads (spec: "Read bounded output pages") ------------------------------------------
    read_page_bytes_default: _r(4, 65536, "read page size default (spec: 16 KiB)") = 16 * KiB
    read_page_bytes_max: _r(4, 65536, "read page size maximum (spec: 64 KiB)") = 64 * KiB
    list_limit_default: _r(1, 10000, "records per list call by default") = 20
    list_limit_max: _r(1, 100000, "largest list limit accepted") = 1000

    # --- observe and wait (spec: "Observe several executions", "Wait for changes") -----------
    observe_items_max: _r(1, 1024, "items per observe (spec: 32)") = 32
    observe_page_bytes_default: _r(4, 65536, "observe page default (spec: 2,048)") = 2048
    observe_page_bytes_min: _r(1, 65536, "observe page minimum (spec: 4)") = 4
    observe_page_bytes_max: _r(4, 65536, "observe page maximum (spec: 65,536)") = 65536
    observe_total_bytes_max: _r(4, 1 << 20, "sum of observe pages (spec: 65,536)") = 65536
    observe_deadline_default: _f(0, 30, "observe deadline default (spec: 5 s)") = 5.0
    observe_deadline_max: _f(0, 300, "observe deadline maximum (spec: 30 s)") = 30.0
    zero_deadline_budget_seconds: _f(0.001, 5, "budget granted to a zero deadline (spec: 250 ms)") = 0.25
    wait_ids_max: _r(1, 1024, "execution ids per wait (spec: 32)") = 32
    wait_timeout_max: _f(0, 300, "wait timeout maximum (spec: 30 s)") = 30.0
    wait_timeout_default: _f(0, 300, "wait timeout when omitted (spec: 5 s locally and for Claude HTTP)") = 5.0
    wait_timeout_default_long: _f(0, 300, "omitted waits of ChatGPT/Codex HTTP clients (spec: 50 s), capped at each action's maximum") = 50.0

    # --- transcripts (seeds/003) ------------------------------------------------------------
    transcript_page_bytes_default: _r(1024, 64 * MiB, "transcript events per page, in bytes of their JSON lines (vigil: 256 KiB)") = 256 * KiB
    transcript_page_bytes_max: _r(1024, 64 * MiB, "largest transcript page a caller may ask for (vigil: 4 MiB)") = 4 * MiB

    # --- managed temporary helpers (seeds/000, "Release managed temporary helpers") ----------
    temporary_release_names_max: _r(1, 4096, "helper names one release_temporary request may carry (vigil: 64)") = 64
    temporary_list_entries_max: _r(1, 1 << 20, "helpers one Temporary list shows by name; the usage still counts all (vigil: 1000)") = 1000
    # --- turn archives (seeds/002) ----------------------------------------------------------
    trace_render_chars_max: _r(
        1000, 1 << 20, "characters of a get_trace answer's compact JSON, whatever the mode "
        "(seeds/002: 24,000: a caller chooses a mode, never a response size)"
    ) = 24000

    # --- threads (Initialize) ----------------------------------------------------------------
    thread_name_max_bytes: _r(
        1, 64 * KiB, "longest thread_name accepted, in UTF-8 bytes (ours: 256; 300 threads "
        "named with 1 MB each once cost the daemon 300 MB)"
    ) = 256
    thread_tools_max: _r(1, 1024, "tools one thread's allowlist may name (ours: 16; the spec has 3)") = 16
    tool_name_max_bytes: _r(1, 4096, "longest tool name in an allowlist, in UTF-8 bytes (ours: 64)") = 64

    # --- request limits a client can check before sending ---------------------------------
    prompt_text_max_bytes: _r(1, 1 << 20, "prompt text limit (spec: 16 KiB)") = 16 * KiB
    prompt_wait_max_seconds: _f(0, 300, "inline prompt wait limit (spec: 30 s)") = 30.0
    bash_wait_default_seconds: _f(0, 300, "wait_for_seconds when omitted") = 5.0
    bash_wait_max_seconds: _f(0, 3600, "largest wait_for_seconds accepted") = 300.0
    bash_text_max_bytes: _r(1, 1 << 20, "text accepted by one send_text/command") = 64 * KiB
    screen_history_lines_max: _r(0, 1_000_000, "scrollback lines one `screen` call may ask for (issue 17: the 10,000 kept by default)") = 10_000


#: Wait profiles whose omitted waits take `wait_timeout_default_long` (spec: "50 for
#: ChatGPT/Codex HTTP"); the others (`local`, `claude`) take each action's own default.
LONG_WAIT_PROFILES = frozenset({"chatgpt", "codex"})


def omitted_wait(limits: "WireLimits", profile: str, default: float, maximum: float) -> float:
    """The timeout an omitted wait gets for a caller of `profile`: the action's `default`,
    or the long profiles' default — never above the action's `maximum`. (An explicit
    timeout is never raised: this is only for omitted ones.)"""
    if profile in LONG_WAIT_PROFILES:
        default = limits.wait_timeout_default_long
    return min(default, maximum)


#: The defaults, for clients (which never read config.toml).
WIRE_DEFAULTS = WireLimits()
