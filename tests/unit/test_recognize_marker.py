"""marker_resembles: submitted text that could pass for a work or approval marker."""

from __future__ import annotations

import time

import pytest

from vigil.daemon.recognize import load_builtins, marker_resembles, parse_manifest

B = load_builtins()


@pytest.mark.parametrize(
    ("manifest", "text", "expected"),
    [
        ("claude", "Review the current changes and report any correctness defects.", False),
        ("claude", "why does the footer say esc to interrupt?", True),
        ("claude", "Why does it say esc to\ninterrupt when idle?", True),  # rejoined by reflow
        ("claude", "✻ Thinking… (3s)", True),  # a spinner line
        ("claude", "Do you want to proceed?", True),  # half of the dialog: the screen may add the rest
        ("claude", "pick the answer: 1. Yes or 2. No", True),  # reflow may start a row at "1. Yes"
        ("claude", "Select login method", False),  # explicit unknown is not work or approval
        ("claude", "> fix the bug", False),  # input-box marker: not work
        ("codex", "• Working on the parser", True),
        ("codex", "keep working on the parser", False),
        ("codex", "Would you like to run the following command? ls", True),
        ("codex", "Allow command?", True),
        ("shell", "sleep 100", False),  # the catch-all busy rule is no marker
        ("shell", "echo '$ '", False),
        ("generic", "Continue? [y/N]", True),
        ("generic", "rm: remove regular file 'x'?", True),
        ("generic", "", False),
        ("claude", "   \n ", False),
    ],
)
def test_builtin_markers(manifest, text, expected):
    assert marker_resembles(text, B[manifest]) is expected


def test_reflow_to_a_row_end():
    m = parse_manifest('[manifest]\nname = "t"\nversion = "1"\n[[rule]]\nname = "q"\nstate = "busy"\n'
                       "priority = 1\nline_regex = '^Working$'\n", "t")
    assert marker_resembles("I am\nWorking", m) is True
    assert marker_resembles("all the time Working", m) is True  # may wrap to a row of its own
    assert marker_resembles("hardly Working at all", m, cols=7) is True  # a 7-column row "Working"
    assert marker_resembles("hardly Working at all", m, cols=200) is False


def test_title_and_negated_tests_are_no_evidence():
    m = parse_manifest('[manifest]\nname = "t"\nversion = "1"\n'
                       '[[rule]]\nname = "title"\nstate = "busy"\npriority = 2\nregion = "osc_title"\ncontains = "⠋"\n'
                       '[[rule]]\nname = "neg"\nstate = "awaiting_approval"\npriority = 1\nnot = { contains = "$" }\n'
                       '[[rule]]\nname = "idle"\nstate = "awaiting_input"\npriority = 0\ncontains = ">"\n', "t")
    assert marker_resembles("⠋ > anything", m) is False


def test_large_prompt_is_bounded():
    text = ("lorem ipsum dolor sit amet " * 700)[:16 * 1024]
    t0 = time.perf_counter()
    for name in ("claude", "codex", "generic"):
        assert marker_resembles(text, B[name]) is False
    assert time.perf_counter() - t0 < 2.0  # once per prompt; measured ~0.1 s for all three here
