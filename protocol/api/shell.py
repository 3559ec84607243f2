"""`BashCommand`: a persistent shell per thread (the spec's BashCommand semantics).

Actions: `command` (run text in the thread's shell; a new generation), `status_check`,
`send_text`, `send_specials` (named keys), `send_ascii` (byte codes). Input actions go to the
current generation only: pass `generation` to have a stale one refused.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from .scope import Scoped


class CommandAction(msgspec.Struct, tag_field="type", tag="command", kw_only=True):
    command: str
    is_background: bool = False


class StatusCheckAction(msgspec.Struct, tag_field="type", tag="status_check", kw_only=True):
    pass


class SendTextAction(msgspec.Struct, tag_field="type", tag="send_text", kw_only=True):
    text: str


class SendSpecialsAction(msgspec.Struct, tag_field="type", tag="send_specials", kw_only=True):
    keys: list[str]


class SendAsciiAction(msgspec.Struct, tag_field="type", tag="send_ascii", kw_only=True):
    codes: list[int]


BashAction = CommandAction | StatusCheckAction | SendTextAction | SendSpecialsAction | SendAsciiAction


class BashCommandParams(Scoped, kw_only=True):
    action: BashAction
    #: How long to wait for the command to complete before answering `running` (seconds).
    wait_for_seconds: float | None = None
    #: The generation the caller believes is current; input for a stale one is refused.
    generation: int | None = None


class BashCommandResult(msgspec.Struct, kw_only=True):
    """`completed` (with exit code), `running` (still going: what it printed so far), or
    `idle` (no command has run in this generation yet). `output` is the command's output,
    its tail when longer than the limit (`output_truncated`)."""

    status: Literal["completed", "running", "idle", "background"]
    generation: int
    execution_id: str | None
    shell_execution_id: str
    exit_code: int | None = None
    cwd: str = ""
    output: str = ""
    output_truncated: bool = False
    #: The command ended the shell itself (`exit 3`): the next command starts a new shell,
    #: in the workspace root, with none of this one's variables.
    shell_exited: bool = False
