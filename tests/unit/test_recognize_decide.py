"""Which of the screen and the kernel decides a state (daemon/recognize/_decide.py), through
`Registry.detect(…, kernel)` with the built-in manifests and one user manifest."""

from __future__ import annotations

import pytest

from vigil.daemon.recognize import RecognitionInput, Registry, load_builtins
from vigil.protocol.api.execution import KernelEvidence

BUILTINS = load_builtins()


def screen(text: str, foreground: str | None = None, **kw) -> RecognitionInput:
    lines = [text.ljust(80)] + [" " * 80] * 5
    return RecognitionInput(lines=lines, cursor=(0, len(text)), foreground=foreground, **kw)


def kernel(verdict: str) -> KernelEvidence:
    return KernelEvidence(verdict=verdict, text=f"foreground 4121 prog: {verdict}")


@pytest.fixture
def registry(tmp_path):
    d = tmp_path / "recognizers"
    d.mkdir()
    (d / "mytool.toml").write_text(
        '[manifest]\nname = "mytool"\nversion = "u1"\nmatch_foreground = ["mytool"]\n\n'
        '[[rule]]\nname = "loading"\nstate = "unknown"\npriority = 10\ncontains = "loading"\n')
    return Registry(d, builtins=BUILTINS)


@pytest.mark.parametrize("inp, verdict, want", [
    # Nothing claims python: the kernel decides where the screen knows nothing or disagrees.
    (screen("~~ ", "python3"), "awaiting_input", ("awaiting_input", "kernel", "unknown")),
    (screen("Password: ", "python3"), "busy", ("busy", "kernel", "awaiting_input")),
    (screen("Password: ", "python3"), "stopped", ("unknown", "kernel", "awaiting_input")),
    # ... and where it agrees, the screen's rule keeps the prompt's shape.
    (screen("Overwrite it? [y/N] ", "python3"), "awaiting_input", ("awaiting_approval", "rule", None)),
    (screen("Password: ", "python3"), "awaiting_input", ("awaiting_input", "rule", None)),
    # Inconclusive or unavailable evidence: the screen's answer.
    (screen("Password: ", "python3"), "inconclusive", ("awaiting_input", "rule", None)),
    (screen("~~ ", "python3"), "unavailable", ("unknown", "fallback", None)),
    # A claimed program's rule wins: bash at its prompt, even if the kernel says busy.
    (screen("alice@host:~$ ", "bash"), "busy", ("awaiting_input", "rule", None)),
    # ... unless its claimant only waits for a child (sh -c running a script).
    (screen("alice@host:~$ ", "sh", foreground_waits_for_child=True), "busy", ("busy", "kernel", "awaiting_input")),
    # An explicit Unknown stays authoritative.
    (screen("loading", "mytool"), "awaiting_input", ("unknown", "rule", None)),
    # Editors defer to the kernel: a definite verdict wins, inconclusive leaves the screen.
    (screen("~", "vim"), "busy", ("busy", "kernel", "awaiting_input")),
    (screen("~", "vim"), "inconclusive", ("awaiting_input", "rule", None)),
    (screen("Save modified buffer?", "nano", foreground_members=("nano",)), "awaiting_input",
     ("awaiting_input", "rule", None)),
], ids=["odd_prompt", "password_then_sleep", "stopped", "question_keeps_shape", "agrees",
        "inconclusive", "unavailable", "shell_claims", "shell_waits_child", "explicit_unknown",
        "editor_busy", "editor_inconclusive", "editor_member"])
def test_who_decides(registry, inp, verdict, want):
    det = registry.detect("auto", inp, kernel(verdict))
    assert (det.state, det.source, det.screen_state) == want, det
    assert det.kernel == kernel(verdict)
    if det.source == "kernel":
        assert det.reason.startswith("kernel: "), det.reason


def test_an_exit_is_never_overruled(registry):
    inp = RecognitionInput(lines=["done".ljust(80)], cursor=(0, 4), foreground="python3", exited=True, exit_code=0)
    det = registry.detect("auto", inp, kernel("awaiting_input"))
    assert (det.state, det.source) == ("exited", "exit_status"), det


def test_without_evidence_the_screen_alone(registry):
    det = registry.detect("auto", screen("~~ ", "python3"))
    assert (det.state, det.source, det.kernel) == ("unknown", "fallback", None)
