"""Manifest validation: every malformed manifest is a ManifestError with file, line, reason."""

from __future__ import annotations

import pytest

from vigil.daemon.recognize import ManifestError, parse_manifest

HEAD = '[manifest]\nname = "x"\nversion = "1"\n\n'  # lines 1-4
RULE_A = '[[rule]]\nname = "a"\nstate = "busy"\npriority = 1\ncontains = "x"\n'  # lines 5-9


def error_of(text, file="/cfg/x.toml") -> ManifestError:
    with pytest.raises(ManifestError) as info:
        parse_manifest(text, file)
    return info.value


def test_valid_manifest_parses_with_defaults():
    m = parse_manifest(HEAD + RULE_A, "/cfg/x.toml")
    assert (m.name, m.version, m.match_foreground, m.source) == ("x", "1", (), "/cfg/x.toml")
    (r,) = m.rules
    assert (r.name, r.state, r.priority, r.region, r.index, r.line) == ("a", "busy", 1, "whole", 0, 5)


@pytest.mark.parametrize(
    ("text", "line", "reason"),
    [
        pytest.param(HEAD.replace('version = "1"', "version = "), 3,
                     "TOML syntax: Invalid value (at line 3, column 11)", id="bad_toml"),
        pytest.param(HEAD + RULE_A + '\n[[rule]]\nname = "b"\nstate = "busy"\npriority = 1\nlinregex = "y"\n', 15,
                     "rule[1] 'b': unknown key 'linregex' (rule keys: description, name, priority, region, state; "
                     "conditions: all, always, any, contains, cursor_line_regex, line_regex, not, regex)",
                     id="unknown_rule_key"),
        pytest.param(HEAD + '[[rule]]\nname = "a"\nstate = "busy"\npriority = 1\nany = [\n  { regex = "ok" },\n'
                     '  { regex = "(unclosed" },\n]\n', 11,
                     "rule[0] 'a'.any[1].regex: bad regular expression '(unclosed': missing ), unterminated "
                     "subpattern at position 0", id="bad_regex_second_of_two"),
        pytest.param(HEAD + RULE_A.replace('"busy"', '["busy"]'), 7,
                     "rule[0] 'a': state must be one of awaiting_approval, awaiting_input, busy, exited, unknown, "
                     "got ['busy']", id="state_not_a_string"),
        pytest.param(HEAD + RULE_A.replace('"busy"', '"idle"'), 7,
                     "rule[0] 'a': state must be one of awaiting_approval, awaiting_input, busy, exited, unknown, "
                     "got 'idle'", id="bad_state"),
        pytest.param(HEAD + RULE_A + 'region = "bottom(3)"\n', 10,
                     "rule[0] 'a': unknown region 'bottom(3)' (expected whole, bottom_non_empty_lines(n), "
                     "after_last_horizontal_rule or osc_title)", id="bad_region"),
        pytest.param(HEAD + RULE_A + 'region = "bottom_non_empty_lines(0)"\n', 10,
                     "rule[0] 'a': bottom_non_empty_lines(n) needs 1 <= n <= 1000, got 0", id="region_zero"),
        pytest.param(HEAD + RULE_A.replace('contains = "x"', 'not = { contain = "x" }'), 9,
                     "rule[0] 'a'.not: unknown key 'contain' (expected one of all, always, any, contains, "
                     "cursor_line_regex, line_regex, not, regex, region)", id="nested_unknown_key"),
        pytest.param(HEAD.replace('version = "1"\n', 'version = "1"\nmatch = ["a"]\n') + RULE_A, 4,
                     "[manifest]: unknown key 'match' (expected one of approve_keys, defer_to_kernel, "
                     "description, match_foreground, name, version)", id="unknown_manifest_key"),
        pytest.param(HEAD.replace('version = "1"\n', 'version = "1"\napprove_keys = ["Nope"]\n')
                     + RULE_A, 4, "[manifest].approve_keys: unknown key 'Nope'; known: Enter, "
                     "Escape, Tab, BTab, Space, BSpace, Up, Down, Left, Right, Home, End, PPage, "
                     "NPage, IC, DC, F1, F2, F3, F4, F5, F6, F7, F8, F9, F10, F11, F12, with the "
                     "prefixes C-, M-, S- (C-c, M-x), or one character",
                     id="unknown_approve_key"),
        pytest.param(HEAD.replace('version = "1"\n', 'version = "1"\napprove_keys = "y"\n')
                     + RULE_A, 4, "[manifest].approve_keys must be an array of key names",
                     id="approve_keys_not_an_array"),
        pytest.param(HEAD + RULE_A.replace('contains = "x"\n', ""), 5,
                     "rule[0] 'a': no condition (need contains, regex, line_regex, any, all, not or always)",
                     id="no_condition"),
        pytest.param(HEAD + RULE_A.replace("priority = 1", 'priority = "high"'), 8,
                     "rule[0] 'a': priority must be an integer in [-1000000, 1000000], got 'high'", id="bad_priority"),
        pytest.param(HEAD + RULE_A + RULE_A, 11, "rule[1] 'a': duplicate rule name 'a'", id="duplicate_rule"),
        pytest.param(HEAD + RULE_A.replace('contains = "x"\n', '[rule.not]\nregex = "(("\n'), 10,
                     "rule[0] 'a'.not.regex: bad regular expression '((': missing ), unterminated subpattern at "
                     "position 1", id="bad_regex_in_subtable"),
        pytest.param(HEAD + RULE_A.replace('contains = "x"', "always = false"), 9,
                     "rule[0] 'a'.always: must be true", id="always_false"),
        pytest.param(HEAD + RULE_A.replace('contains = "x"', 'regex = ""'), 9,
                     "rule[0] 'a'.regex: must be a non-empty string", id="empty_regex"),
        pytest.param(HEAD.replace('"x"', '"auto"') + RULE_A, 2,
                     "[manifest].name must match [a-z0-9][a-z0-9_-]* and not be 'auto', got 'auto'", id="name_auto"),
        pytest.param(HEAD, None, "no [[rule]] entries", id="no_rules"),
        pytest.param(RULE_A, None, "missing [manifest] table", id="no_manifest"),
        pytest.param(HEAD + RULE_A + '[extra]\nx = 1\n', 10,
                     "unknown top-level key 'extra' (expected [manifest] and [[rule]])", id="unknown_table"),
        pytest.param(b'[manifest]\nname = "x"\nversion = "\xff"\n', 3,
                     "not UTF-8 (invalid start byte at byte 33)", id="not_utf8"),
    ],
)
def test_malformed_manifest(text, line, reason):
    err = error_of(text)
    assert (err.file, err.line, err.reason) == ("/cfg/x.toml", line, reason)
    prefix = f"/cfg/x.toml:{line}: " if line is not None else "/cfg/x.toml: "
    assert str(err) == prefix + reason


def test_regexes_compiled_once_with_multiline_for_regex():
    m = parse_manifest(HEAD + RULE_A.replace('contains = "x"', 'regex = "^b$"\nline_regex = "c"'), "f")
    node = m.rules[0].condition
    assert node.kind == "all"
    rx, lrx = node.children
    assert rx.pattern.pattern == "^b$" and rx.pattern.flags & __import__("re").MULTILINE
    assert not lrx.pattern.flags & __import__("re").MULTILINE
