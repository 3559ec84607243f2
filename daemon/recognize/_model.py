"""The recognizer's input and output values.

The input is a plain screen model (no pyte object): the screen keeper renders its pyte screen
into a `RecognitionInput` and this package never needs to know how the screen was built. That
keeps recognition pure and synchronous, so it can be tested with a list of strings and
benchmarked without a terminal.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from vigil.protocol.api.execution import KernelEvidence

State = Literal["awaiting_input", "awaiting_approval", "busy", "exited", "unknown"]
STATES: frozenset[str] = frozenset(("awaiting_input", "awaiting_approval", "busy", "exited", "unknown"))
#: The states a transition to is debounced (DESIGN: "Transitions to idle are debounced").
IDLE_STATES: frozenset[str] = frozenset(("awaiting_input", "awaiting_approval"))

Source = Literal["rule", "fallback", "exit_status", "kernel"]


class RecognitionInput(msgspec.Struct, frozen=True, kw_only=True):
    """One observation of a runtime: the complete screen plus process facts.

    `lines` are ALL screen rows, never a page cut for presentation (spec: "Detection uses the
    complete recognition input, independently of presentation line limits"). Rows may carry
    the terminal's space padding; regions strip it, while `cursor_line_regex` sees the row up
    to the cursor unstripped (so a prompt's trailing space is visible there).
    """

    lines: list[str]
    title: str = ""
    #: (row, col), zero-based, as pyte's `screen.cursor.y`, `screen.cursor.x`.
    cursor: tuple[int, int] = (0, 0)
    alt_screen: bool = False
    #: comm or argv[0] of the PTY's foreground process group leader; None when unknown.
    foreground: str | None = None
    #: the foreground process's argv when known. Interpreted TUIs (`node …/claude-code/cli.js`)
    #: show only the interpreter in `foreground`, so `auto` also looks at argv[0:2].
    foreground_argv: tuple[str, ...] = ()
    exited: bool = False
    exit_code: int | None = None
    #: comm of the terminal's session leader (the program the runtime started, e.g. bash).
    #: When the foreground program matches no manifest, `auto` may fall back to the leader's.
    leader: str | None = None
    #: comm of the foreground group's other processes that matter, as kernel evidence found
    #: them: those on the terminal first, then those running, deepest first (`git commit`
    #: leads its group while `vim`, two levels down, reads the terminal). `auto` tries them
    #: before the group leader. Empty when the kernel was not asked.
    foreground_members: tuple[str, ...] = ()
    #: Kernel evidence shows the foreground group's leader (`foreground`) blocked waiting for
    #: a child: it is a parent (`sh -c 'printf ">>> "; sleep 100'`, git running an editor),
    #: not the program at the terminal, so its name claims nothing for `auto`.
    foreground_waits_for_child: bool = False


class Detection(msgspec.Struct, frozen=True, kw_only=True):
    """What a recognizer concluded and why; the payload of `explain`.

    Invariants: `source == "fallback"` implies `state == "unknown"` and `rule` None (no match
    is never a guess); `source == "rule"` implies `rule` is set; `source == "exit_status"`
    implies `state == "exited"`; `source == "kernel"` implies `kernel` is set and
    `screen_state` is what the screen alone said (`rule` then names the screen's rule that
    the kernel outranked or confirmed, if one matched).
    """

    recognizer: str
    state: State
    source: Source
    rule: str | None = None
    priority: int | None = None
    #: why: the rule's name for a match, `no_rule_matched`, or `process_exited`.
    reason: str = ""
    #: rows of the complete input the engine saw (all of them: nothing is cut).
    evaluated_lines: int = 0
    #: UTF-8 size of the region the deciding rule examined (the whole screen for a fallback).
    region_text_bytes: int = 0
    #: the region of the deciding rule (`whole`, `bottom_non_empty_lines(3)`, ...).
    region: str | None = None
    manifest_version: str = ""
    #: how the manifest was chosen: `explicit`, or `auto: ...` with the evidence.
    selected_by: str = "explicit"
    exit_code: int | None = None
    #: What the screen alone said, when the kernel's evidence decided (source `kernel`).
    screen_state: State | None = None
    #: The manifest was chosen for the foreground program itself (its name, or named by the
    #: caller), so its rules above priority 0 are authoritative over kernel evidence.
    claimed: bool = False
    #: The kernel evidence the state was decided with (or that was shown alongside).
    kernel: KernelEvidence | None = None
