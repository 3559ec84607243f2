"""`BashCommand`: a persistent shell per thread (the spec's BashCommand semantics).

Actions that consume an inline wait: `command` (run text in the thread's shell; a new
generation), `status_check`, `send_text`, `send_specials` (named keys), `send_ascii` (byte
codes). Input actions go to the current generation only: pass `generation` to have a stale
one refused.

Actions with their own observation/timeout semantics (no inline wait; seeds/000, "Usage
metrics"): `screen` (the shell's screen or a named execution's), `inspect` (how turn
recognition sees it), `wait_for_turn` (until it waits for the user — the generic turn wait
kept beside native prompts) and `prompt` (type a line into it and wait for its turn,
without a receipt: `Agent prompt` is the once-per-id version).

The inline-wait policy of a command (`wait_policy`; seeds/000, "Usage metrics"):

| policy | where it runs | inline allowance | `effective_wait_mode` |
|---|---|---|---|
| `synchronous` (default) | the thread's shell (`cd` persists) | `wait_for_seconds`, else the default | `synchronous` |
| `adaptive` | a background execution of its own | the same, then promoted to a Task | `task_inline` |
| `task` (or `is_background`) | a background execution of its own | none: a Task at once | `task` |

A Task is an execution that keeps running after the answer and is observed through
`Execution` (its `execution_id` is in the answer). The answer reports the client's request
(`requested_wait_policy`, `requested_wait_ms`: null when omitted) and the server's
selection after defaults and caps (`effective_wait_*`): configuration, not elapsed time.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from .agent import PromptOutcome
from .execution import ExplainData
from .scope import Scoped
from .terminal import ScreenResult

WaitPolicy = Literal["synchronous", "adaptive", "task"]
WaitMode = Literal["synchronous", "task_inline", "task"]
#: States that end a turn wait: the program hands the turn back (or ended).
TurnState = Literal["awaiting_input", "awaiting_approval", "exited"]


class CommandAction(msgspec.Struct, tag_field="type", tag="command", kw_only=True):
    command: str
    #: wcgw's spelling of `wait_policy: "task"`.
    is_background: bool = False


class StatusCheckAction(msgspec.Struct, tag_field="type", tag="status_check", kw_only=True):
    pass


class SendTextAction(msgspec.Struct, tag_field="type", tag="send_text", kw_only=True):
    text: str


class SendSpecialsAction(msgspec.Struct, tag_field="type", tag="send_specials", kw_only=True):
    keys: list[str]


class SendAsciiAction(msgspec.Struct, tag_field="type", tag="send_ascii", kw_only=True):
    codes: list[int]


class ScreenAction(msgspec.Struct, tag_field="type", tag="screen", kw_only=True):
    """The screen of the thread's shell, or of `execution_id` (an execution of this scope)."""

    execution_id: str | None = None


class InspectAction(msgspec.Struct, tag_field="type", tag="inspect", kw_only=True):
    """How turn recognition sees the shell (or `execution_id`) now, and the shell's state."""

    execution_id: str | None = None
    recognizer: str = "auto"


class WaitForTurnAction(msgspec.Struct, tag_field="type", tag="wait_for_turn", kw_only=True):
    """Until the shell's foreground program (or `execution_id`) reaches one of `wait_for`
    (default: any), or `timeout_seconds` pass. Answers at once when it already waits: it
    needs no activity first (that is `prompt`'s stricter wait)."""

    execution_id: str | None = None
    timeout_seconds: float | None = None
    wait_for: list[TurnState] | None = None
    recognizer: str = "auto"


class PromptAction(msgspec.Struct, tag_field="type", tag="prompt", kw_only=True):
    """Type `text` and Enter into the shell's foreground program (or `execution_id`) when
    it waits for input, then wait for its turn: work observed after the Enter, then one of
    `wait_for` — or `timeout_seconds`. No receipt and no deduplication: use `Agent prompt`
    with a `prompt_id` for exactly-once."""

    text: str
    execution_id: str | None = None
    timeout_seconds: float | None = None
    wait_for: list[TurnState] | None = None
    recognizer: str = "auto"


BashAction = (CommandAction | StatusCheckAction | SendTextAction | SendSpecialsAction
              | SendAsciiAction | ScreenAction | InspectAction | WaitForTurnAction | PromptAction)


class BashCommandParams(Scoped, kw_only=True):
    action: BashAction
    #: The inline allowance of wait-consuming actions (seconds); omitted: the default of the
    #: caller's wait profile (5 s; 50 s for ChatGPT/Codex HTTP).
    wait_for_seconds: float | None = None
    #: Where a command runs and how long it is waited for inline (see the module doc).
    wait_policy: WaitPolicy | None = None
    #: The generation the caller believes is current; input for a stale one is refused.
    generation: int | None = None


class BashCommandResult(msgspec.Struct, kw_only=True):
    """`completed` (with exit code), `running` (still going: what it printed so far), `idle`
    (no command has run in this generation yet), or `background` (a Task: an execution of
    its own, observed through `Execution`; `promoted` when it first ran inline for its
    allowance). `output` is the command's output, its tail when longer than the limit
    (`output_truncated`)."""

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
    promoted: bool = False
    requested_wait_policy: WaitPolicy | None = None
    requested_wait_ms: int | None = None
    effective_wait_policy: WaitPolicy | None = None
    effective_wait_ms: int | None = None
    effective_wait_mode: WaitMode | None = None


class InspectResult(msgspec.Struct, kw_only=True):
    """`target` `shell` (the thread's shell: `running` tells whether a command occupies it)
    or `execution`; `explanation` is `Execution explain`'s."""

    target: Literal["shell", "execution"]
    execution_id: str
    generation: int
    running: bool
    cwd: str | None
    explanation: ExplainData


class TurnResult(msgspec.Struct, kw_only=True):
    """`condition`: the `wait_for` state reached, `exited` (an exit ends every turn wait),
    `generation_changed` (another command took the shell), or `timed_out` (not evidence of
    anything finishing). `state` is the recognizer's state at the end."""

    execution_id: str
    generation: int
    condition: Literal["awaiting_input", "awaiting_approval", "exited", "generation_changed",
                       "timed_out"]
    state: str
    recognizer: str
    #: The timeout applied (the default of the wait profile when omitted), in seconds.
    effective_timeout_seconds: float
    wait_for: list[TurnState]


class PromptResult(PromptOutcome, kw_only=True):
    """What happened to one generic prompt, as a native prompt's receipt says it
    (delivery, strict activity, the wait's condition) — but nothing is stored: an
    `uncertain` delivery is never resent by vigil, and a second call types the text again."""

    effective_timeout_seconds: float


#: The result type of each `BashCommand` action, by its `type` tag.
RESULTS = {
    "command": BashCommandResult,
    "status_check": BashCommandResult,
    "send_text": BashCommandResult,
    "send_specials": BashCommandResult,
    "send_ascii": BashCommandResult,
    "screen": ScreenResult,
    "inspect": InspectResult,
    "wait_for_turn": TurnResult,
    "prompt": PromptResult,
}
