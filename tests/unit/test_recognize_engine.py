"""The engine: priority and ties, explicit unknown, fallback, exit status, regions, conditions."""

from __future__ import annotations

import msgspec
import pytest

from vigil.daemon.recognize import RecognitionInput, evaluate, is_horizontal_rule, parse_manifest


def manifest(*rules: str, name: str = "t"):
    head = f'[manifest]\nname = "{name}"\nversion = "7"\n'
    return parse_manifest(head + "".join(f"\n[[rule]]\n{r}\n" for r in rules), "<test>")


def rule(name, state, priority, cond, region=None):
    reg = f'region = "{region}"\n' if region else ""
    return f'name = "{name}"\nstate = "{state}"\npriority = {priority}\n{reg}{cond}'


def screen(*lines, **kw):
    return RecognitionInput(lines=list(lines), **kw)


def test_highest_priority_wins_regardless_of_order():
    m = manifest(rule("low", "busy", 1, 'contains = "x"'), rule("high", "awaiting_input", 5, 'contains = "x"'))
    det = evaluate(m, screen("x"))
    assert (det.state, det.source, det.rule, det.priority, det.reason) == (
        "awaiting_input", "rule", "high", 5, "rule 'high' matched")


def test_tie_goes_to_the_earlier_rule():
    m = manifest(rule("first", "busy", 3, 'contains = "x"'), rule("second", "awaiting_input", 3, 'contains = "x"'))
    assert evaluate(m, screen("x")).rule == "first"
    m2 = manifest(rule("second", "awaiting_input", 3, 'contains = "x"'), rule("first", "busy", 3, 'contains = "x"'))
    assert evaluate(m2, screen("x")).rule == "second"


def test_explicit_unknown_is_authoritative():
    m = manifest(rule("idle", "awaiting_input", 1, 'contains = "$"'), rule("login", "unknown", 9, 'contains = "Login"'))
    det = evaluate(m, screen("Login", "$"))
    assert (det.state, det.source, det.rule, det.priority, det.reason) == (
        "unknown", "rule", "login", 9, "rule 'login' matched")
    # The lower rule still decides when the explicit unknown does not match.
    assert evaluate(m, screen("$")).rule == "idle"


def test_no_match_is_unknown_fallback_never_a_guess():
    m = manifest(rule("idle", "awaiting_input", 1, 'contains = "$"'))
    det = evaluate(m, screen("héllo", "world"))
    assert det == msgspec.structs.replace(det, state="unknown", source="fallback", rule=None, priority=None,
                                          reason="no_rule_matched", region="whole")
    assert det.region_text_bytes == len("héllo\nworld".encode())
    assert (det.recognizer, det.manifest_version, det.selected_by, det.evaluated_lines) == ("t", "7", "explicit", 2)


def test_exit_status_overrides_every_rule():
    m = manifest(rule("idle", "awaiting_input", 1, "always = true"))
    det = evaluate(m, screen("$ ", exited=True, exit_code=3))
    assert (det.state, det.source, det.rule, det.reason, det.exit_code) == (
        "exited", "exit_status", None, "process_exited", 3)


def test_detection_covers_the_complete_input_beyond_any_page():
    # 5,000 rows of 200 columns (1 MB): the marker on the last row still decides.
    lines = [f"row {i}".ljust(200) for i in range(5000)] + ["Do you want to proceed? [y/N]"]
    m = manifest(rule("ask", "awaiting_approval", 1, r"regex = '\[y/N\]'"))
    det = evaluate(m, screen(*lines))
    assert (det.state, det.evaluated_lines) == ("awaiting_approval", 5001)
    assert det.region_text_bytes == len("\n".join(l.rstrip() for l in lines).encode())


def test_detection_is_msgspec_encodable():
    m = manifest(rule("a", "busy", 1, 'contains = "x"'))
    raw = msgspec.json.encode(evaluate(m, screen("x")))
    assert msgspec.json.decode(raw)["rule"] == "a"


# --- regions -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("region", "lines", "expected"),
    [
        ("whole", ["a  ", "", "b"], True),
        ("bottom_non_empty_lines(1)", ["MARK", "", "last", "", ""], False),
        ("bottom_non_empty_lines(2)", ["MARK", "", "last", "", ""], True),
        ("after_last_horizontal_rule", ["MARK", "─" * 20, "below"], False),
        ("after_last_horizontal_rule", ["─" * 20, "MARK", "╰" + "─" * 20 + "╯", "below"], False),
        ("after_last_horizontal_rule", ["─" * 20, "MARK"], True),
        ("after_last_horizontal_rule", ["MARK"], False),  # no rule: empty region
    ],
)
def test_regions(region, lines, expected):
    cond = 'contains = "MARK"' if "MARK" in "".join(lines) else 'contains = "a"'
    m = manifest(rule("r", "busy", 1, cond, region))
    assert (evaluate(m, screen(*lines)).state == "busy") is expected


def test_bottom_region_text_and_size_are_reported():
    m = manifest(rule("r", "busy", 1, 'regex = "\\\\Ab\\nc\\\\Z"', "bottom_non_empty_lines(2)"))
    det = evaluate(m, screen("a", "b   ", "", "c   ", "   "))
    assert (det.state, det.region, det.region_text_bytes) == ("busy", "bottom_non_empty_lines(2)", 3)


def test_osc_title_region():
    m = manifest(rule("spin", "busy", 1, r"regex = '^[⠋⠙⠹] '", "osc_title"))
    assert evaluate(m, screen("", title="⠙ Working")).state == "busy"
    assert evaluate(m, screen("⠙ Working", title="idle")).state == "unknown"


@pytest.mark.parametrize(
    ("line", "is_rule"),
    [("─" * 8, True), ("─" * 7, False), ("  ━━━━━━━━━━  ", True), ("╭" + "─" * 10 + "╮", True),
     ("├" + "═" * 9 + "┤", True), ("-" * 20, False), ("──── title ────", False), ("", False)],
)
def test_horizontal_rule(line, is_rule):
    assert is_horizontal_rule(line) is is_rule


# --- conditions --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cond", "lines", "expected"),
    [
        ('contains = "b c"', ["a b c d"], True),
        ('contains = "B"', ["abc"], False),
        ("regex = '^two$'", ["one", "two", "three"], True),  # MULTILINE
        ("regex = 'one\\ntwo'", ["one", "two"], True),
        ("line_regex = '^t\\w+$'", ["one", "three"], True),
        ("line_regex = 'one.*two'", ["one", "two"], False),  # rows one by one
        ('any = [ { contains = "x" }, { contains = "b" } ]', ["abc"], True),
        ("any = []", ["abc"], False),
        ('all = [ { contains = "a" }, { contains = "x" } ]', ["abc"], False),
        ("all = []", ["abc"], True),
        ('not = { contains = "x" }', ["abc"], True),
        ('contains = "a"\nline_regex = "z"', ["abc"], False),  # several keys are ANDed
        ('not = { any = [ { contains = "q" }, { all = [ { contains = "a" }, { contains = "c" } ] } ] }', ["abc"], False),
    ],
)
def test_conditions(cond, lines, expected):
    m = manifest(rule("r", "busy", 1, cond))
    assert (evaluate(m, screen(*lines)).state == "busy") is expected


def test_cursor_line_regex_sees_the_unstripped_row_left_of_the_cursor():
    m = manifest(rule("p", "awaiting_input", 1, "cursor_line_regex = '\\$ $'"))
    row = "user@host:~$ ".ljust(80)
    assert evaluate(m, screen(row, cursor=(0, 13))).state == "awaiting_input"
    assert evaluate(m, screen(row, "", cursor=(1, 0))).state == "unknown"  # cursor moved on
    assert evaluate(m, screen(row, cursor=(5, 0))).state == "unknown"  # out of range: empty text


def test_region_override_inside_a_condition():
    cond = 'all = [ { contains = "TOP" }, { region = "bottom_non_empty_lines(1)", contains = "LAST" } ]'
    m = manifest(rule("r", "busy", 1, cond, "whole"))
    assert evaluate(m, screen("TOP", "LAST")).state == "busy"
    assert evaluate(m, screen("TOP LAST", "other")).state == "unknown"


# --- robustness ----------------------------------------------------------------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from vigil.daemon.recognize import STATES, load_builtins  # noqa: E402

_BUILTINS = list(load_builtins().values())
_ROW = st.text(alphabet=st.sampled_from(list("ab $#>:.│╭╰─❯›▌•✻…()[]/yYnN?10 \t")), max_size=40)


@settings(max_examples=200, deadline=None)
@given(lines=st.lists(_ROW, max_size=60), row=st.integers(-3, 70), col=st.integers(-3, 90),
       title=st.text(max_size=10), exited=st.booleans())
def test_builtins_never_raise_on_any_screen(lines, row, col, title, exited):
    inp = RecognitionInput(lines=lines, cursor=(row, col), title=title, exited=exited)
    for m in _BUILTINS:
        det = evaluate(m, inp)
        assert det.state in STATES and det.evaluated_lines == len(lines)
        assert (det.source == "rule") == (det.rule is not None)
        assert det.source != "fallback" or det.state == "unknown"
