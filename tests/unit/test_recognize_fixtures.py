"""Every built-in manifest against the screen fixtures in tests/fixtures/screens/.

A fixture is a plain-text screen of exactly 50 rows, named
`<manifest>__<expected state>__<expected rule or ->__<case>.txt` (`-`: no rule matches, the
fallback). The cursor is where `⌶` stands (the character is removed); without one the cursor
is at (0, 0) (the agent TUIs hide and park their cursor, and their rules ignore it). Rows are
padded to 200 columns, as pyte's `screen.display` pads them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from vigil.daemon.recognize import BUILTIN_ORDER, RecognitionInput, evaluate, load_builtins

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "screens"
CURSOR = "⌶"
ROWS, COLS = 50, 200
BUILTINS = load_builtins()


def load_screen(path: Path) -> RecognitionInput:
    rows = path.read_text(encoding="utf-8").split("\n")
    assert rows[-1] == "", f"{path.name}: must end with a newline"
    rows = rows[:-1]
    assert len(rows) == ROWS, f"{path.name}: {len(rows)} rows, expected {ROWS}"
    cursor = (0, 0)
    for i, row in enumerate(rows):
        if CURSOR in row:
            cursor = (i, row.index(CURSOR))
            rows[i] = row.replace(CURSOR, "")
    return RecognitionInput(lines=[r.ljust(COLS) for r in rows], cursor=cursor)


def _cases():
    for path in sorted(FIXTURES.glob("*.txt")):
        manifest, state, rule, _case = path.stem.split("__")
        yield pytest.param(path, manifest, state, None if rule == "-" else rule, id=path.stem)


CASES = list(_cases())


@pytest.mark.parametrize(("path", "manifest", "state", "rule"), CASES)
def test_fixture(path, manifest, state, rule):
    det = evaluate(BUILTINS[manifest], load_screen(path))
    assert (det.recognizer, det.state, det.rule) == (manifest, state, rule)
    assert det.source == ("rule" if rule else "fallback")
    assert det.evaluated_lines == ROWS
    if rule is None:
        assert det.reason == "no_rule_matched"


def test_every_rule_of_every_builtin_has_a_fixture():
    covered = {(c.values[1], c.values[3]) for c in CASES}
    for name in BUILTIN_ORDER:
        for r in BUILTINS[name].rules:
            if r.name == "running" and name == "shell":
                assert ("shell", "running") in covered
            assert (name, r.name) in covered, f"no fixture for {name}.{r.name}"


@pytest.mark.parametrize("agent", ["claude", "codex"])
def test_each_agent_has_a_fixture_per_state(agent):
    states = {c.values[2] for c in CASES if c.values[1] == agent}
    assert states == {"awaiting_input", "awaiting_approval", "busy", "unknown"}


def test_agent_manifests_do_not_claim_a_shell_prompt():
    inp = load_screen(FIXTURES / "shell__awaiting_input__prompt__bash.txt")
    assert evaluate(BUILTINS["claude"], inp).state == "unknown"
    assert evaluate(BUILTINS["codex"], inp).state == "unknown"
