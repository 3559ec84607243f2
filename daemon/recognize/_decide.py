"""The screen and the kernel together: which one decides a state (issue 18).

Manifests know what screens look like; kernel evidence (kernel.py) knows what the terminal's
foreground processes are doing. `decide(screen, kernel)`, in order:

1. The process exited: the exit status (nothing overrides an observed exit).
2. A manifest claimed the program — it was chosen for the foreground program's own name,
   or named by the caller — and one of its rules above priority 0 matched: that rule
   (Claude, Codex, a shell at its prompt, a pager know their screens best). Unless the
   manifest defers to the kernel (`defer_to_kernel`, the editors'): then as in 5.
3. A rule with state `unknown` matched, in any manifest: unknown (spec: "An explicit
   manifest `Unknown` remains authoritative").
4. A claiming manifest matched nothing: unknown. Its program is known, and a TUI's event
   loop looks the same to the kernel whether it works or waits: not guessed (again unless
   it defers to the kernel).
5. Otherwise — the screen was judged by the fallbacks (`progress`, `generic`) because no
   manifest claims the program, or by a claiming manifest's catch-all (priority 0 or
   less, such as the shell's `running`) — the kernel's verdict, when it has one:
   - `awaiting_input`: `awaiting_approval` if the screen's rule says so (the prompt's
     shape), else `awaiting_input`;
   - `busy`: busy, whatever the screen looks like (a `[y/N]` printed before a `sleep`);
   - `stopped`: unknown — a stopped foreground is neither waiting nor working;
   - `inconclusive`, `unavailable`: the screen's answer.

The kernel evidence is attached to every answer it was given for, so explain can show it.
"""

from __future__ import annotations

import msgspec

from vigil.protocol.api.execution import KernelEvidence

from ._model import IDLE_STATES, Detection


def screen_decides(screen: Detection, defers: bool = False) -> bool:
    """Rules 1-4: the screen's answer stands whatever the kernel says. `defers`: the
    deciding manifest defers to the kernel."""
    if screen.state == "exited":
        return True
    if screen.source == "rule" and screen.state == "unknown":
        return True
    if screen.claimed and not defers:
        return screen.source == "fallback" or (screen.priority is not None and screen.priority > 0)
    return False


def decide(screen: Detection, kernel: KernelEvidence | None, defers: bool = False) -> Detection:
    """The state of a terminal from its screen detection and its kernel evidence (if any).
    `defers`: the manifest that produced `screen` has `defer_to_kernel`."""
    if kernel is None:
        return screen
    if screen_decides(screen, defers):
        return msgspec.structs.replace(screen, kernel=kernel)
    verdict = kernel.verdict
    if verdict == "awaiting_input":
        if screen.source == "rule" and screen.state in IDLE_STATES:
            return msgspec.structs.replace(
                screen, kernel=kernel, reason=f"{screen.reason}; the kernel agrees: {kernel.text}")
        return _by_kernel(screen, kernel, "awaiting_input", f"kernel: {kernel.text}")
    if verdict == "busy":
        if screen.state == "busy":
            return msgspec.structs.replace(
                screen, kernel=kernel, reason=f"{screen.reason}; the kernel agrees: {kernel.text}")
        return _by_kernel(screen, kernel, "busy", f"kernel: {kernel.text}")
    if verdict == "stopped":
        return _by_kernel(screen, kernel, "unknown",
                          f"kernel: the foreground is stopped, neither waiting nor working: {kernel.text}")
    return msgspec.structs.replace(screen, kernel=kernel)


def _by_kernel(screen: Detection, kernel: KernelEvidence, state: str, reason: str) -> Detection:
    return msgspec.structs.replace(screen, state=state, source="kernel", screen_state=screen.state,
                                   reason=reason, kernel=kernel)
