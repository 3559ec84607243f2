"""Recognizer manifests: TOML files parsed and validated strictly into `Manifest` values.

Format (stdlib `tomllib`)::

    [manifest]
    name = "claude"                 # [a-z0-9][a-z0-9_-]*, not "auto"
    version = "1"                   # a string, reported in `explain`
    match_foreground = ["claude"]   # fnmatch patterns for `auto` (optional)
    approve_keys = ["1"]            # keys `approve` presses at an approval prompt (optional;
                                    # tmux names, vigil.protocol.keys)
    description = "..."             # optional
    defer_to_kernel = false         # optional: kernel evidence outranks these rules

    [[rule]]
    name = "spinner"                # unique in the manifest
    state = "busy"                  # awaiting_input | awaiting_approval | busy | exited | unknown
    priority = 200                  # int; highest wins, ties go to the earlier rule
    region = "bottom_non_empty_lines(12)"   # default "whole"
    description = "..."             # optional
    line_regex = '(?i)esc to interrupt'     # + any condition keys (_conditions.py)

`defer_to_kernel`: normally a manifest that claims the foreground program decides wherever
one of its rules above priority 0 matches, whatever kernel evidence says (an agent TUI's
event loop looks the same working or waiting). An editor's screen shows a mode, not whether
the editor computes or runs `:!make`: with `defer_to_kernel = true`, a definite kernel
verdict (busy, stopped, reading the terminal) outranks the rules, which keep the prompt's
shape (`awaiting_approval`) and speak when the kernel is inconclusive or unavailable.

Validation is strict because a typo in a recognizer silently changes what vigil believes
about a terminal: unknown keys, wrong types, bad regexes, states and regions are errors.
Each error is a `ManifestError` naming the file, the line and the reason. tomllib reports
the line of syntax errors in its message; for semantic errors tomllib keeps no positions,
so `_Locator` finds the rule's `[[rule]]` header and the n-th occurrence of the offending
key inside that rule's block of text (best effort: right for the files we write and test).
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from fnmatch import fnmatchcase

from vigil.protocol.keys import UnknownKey, key_bytes

from ._conditions import CONDITION_KEYS, ConditionError, Node, _KeyCounter, compile_condition
from ._model import STATES

MANIFEST_KEYS = frozenset(("name", "version", "match_foreground", "description",
                           "approve_keys", "defer_to_kernel"))
RULE_KEYS = frozenset(("name", "state", "priority", "region", "description"))
_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}\Z")
#: Priorities are plain ordering keys; the bound only keeps reports readable.
PRIORITY_BOUND = 1_000_000
_TOML_POS = re.compile(r"\(at line (\d+), column (\d+)\)$")


class ManifestError(ValueError):
    """A manifest file is unreadable or invalid.

    Attributes:
        file: the path (or `<builtin:name>`), as given to the loader.
        line: 1-based line of the problem, or None when it is not tied to a line.
        reason: what is wrong, naming the rule and key.
    """

    def __init__(self, file: str, line: int | None, reason: str) -> None:
        self.file = file
        self.line = line
        self.reason = reason
        super().__init__(f"{file}:{line}: {reason}" if line is not None else f"{file}: {reason}")


@dataclass(frozen=True, slots=True)
class Rule:
    """One compiled rule. `index` is its position in the file (ties go to the lower one)."""

    name: str
    state: str
    priority: int
    region: str
    condition: Node
    index: int
    line: int | None = None
    description: str = ""


@dataclass(frozen=True, slots=True)
class Manifest:
    """A validated manifest. `ordered` is the evaluation order: priority descending, then
    file order, so the first rule that matches is the winner (no need to test the rest)."""

    name: str
    version: str
    rules: tuple[Rule, ...]
    match_foreground: tuple[str, ...] = ()
    description: str = ""
    source: str = ""
    ordered: tuple[Rule, ...] = field(default=(), repr=False)
    #: Kernel evidence outranks the rules (see the module doc).
    defer_to_kernel: bool = False
    #: What `approve` presses when this recognizer says `awaiting_approval` (empty: the
    #: program's approvals cannot be answered by vigil).
    approve_keys: tuple[str, ...] = ()

    def matches_foreground(self, names: list[str]) -> str | None:
        """The first `names` entry that one of `match_foreground`'s patterns matches."""
        for candidate in names:
            for pattern in self.match_foreground:
                if fnmatchcase(candidate, pattern):
                    return candidate
        return None


class _Locator:
    """Finds lines in the manifest text for semantic errors (see the module doc)."""

    _RULE_HEADER = re.compile(r"^\s*\[\[\s*rule\s*\]\]")
    _TABLE_HEADER = re.compile(r"^\s*\[\s*manifest\s*\]")

    def __init__(self, text: str) -> None:
        self.lines = text.splitlines()
        self.rule_starts = [i for i, ln in enumerate(self.lines) if self._RULE_HEADER.match(ln)]
        self.manifest_start = next((i for i, ln in enumerate(self.lines) if self._TABLE_HEADER.match(ln)), None)

    def _block(self, start: int) -> int:
        """End (exclusive) of the block that starts at header line `start`."""
        for i in range(start + 1, len(self.lines)):
            if self._RULE_HEADER.match(self.lines[i]) or self._TABLE_HEADER.match(self.lines[i]):
                return i
        return len(self.lines)

    def top_key_line(self, key: str) -> int | None:
        """1-based line of a top-level `[key]`, `[[key]]` or `key =`."""
        pat = re.compile(rf'^\s*(\[\[?\s*"?{re.escape(key)}"?\s*[\].]|"?{re.escape(key)}"?\s*=)')
        for i, ln in enumerate(self.lines):
            if pat.match(ln):
                return i + 1
        return None

    def rule_line(self, index: int) -> int | None:
        return self.rule_starts[index] + 1 if index < len(self.rule_starts) else None

    def key_line(self, start: int | None, key: str, occurrence: int = 1) -> int | None:
        """1-based line of the `occurrence`-th `key =` (or `[rule.key]` header) in a block."""
        if start is None:
            return None
        pat = re.compile(rf'(?:^|[\s{{,.\[])"?{re.escape(key)}"?\s*(?:=|\]\]?)')
        seen = 0
        for i in range(start, self._block(start)):
            ln = self.lines[i]
            if ln.lstrip().startswith("#"):
                continue
            seen += len(pat.findall(ln))
            if seen >= occurrence:
                return i + 1
        return start + 1

    def rule_key_line(self, index: int, key: str, occurrence: int = 1) -> int | None:
        start = self.rule_starts[index] if index < len(self.rule_starts) else None
        return self.key_line(start, key, occurrence)


def parse_manifest(text: str | bytes, file: str) -> Manifest:
    """Parse and validate one manifest.

    Args:
        text: the file's content (bytes are decoded as UTF-8).
        file: the name used in errors and in `Manifest.source`.

    Raises:
        ManifestError: with file, line and reason, for any syntax or semantic error.
    """
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = text.count(b"\n", 0, exc.start) + 1
            raise ManifestError(file, line, f"not UTF-8 ({exc.reason} at byte {exc.start})") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        msg = str(exc)
        m = _TOML_POS.search(msg)
        raise ManifestError(file, int(m.group(1)) if m else None, f"TOML syntax: {msg}") from None
    loc = _Locator(text)

    for key in data:
        if key not in ("manifest", "rule"):
            raise ManifestError(file, loc.top_key_line(key),
                                f"unknown top-level key {key!r} (expected [manifest] and [[rule]])")
    head = data.get("manifest")
    if not isinstance(head, dict):
        raise ManifestError(file, None, "missing [manifest] table")
    ms = loc.manifest_start

    def head_error(key: str, reason: str) -> ManifestError:
        return ManifestError(file, loc.key_line(ms, key) if ms is not None else None, reason)

    for key in head:
        if key not in MANIFEST_KEYS:
            raise head_error(key, f"[manifest]: unknown key {key!r} (expected one of {', '.join(sorted(MANIFEST_KEYS))})")
    name = head.get("name")
    if not isinstance(name, str) or not _NAME.match(name) or name == "auto":
        raise head_error("name", f"[manifest].name must match [a-z0-9][a-z0-9_-]* and not be 'auto', got {name!r}")
    version = head.get("version")
    if not isinstance(version, str) or not version:
        raise head_error("version", f"[manifest].version must be a non-empty string, got {version!r}")
    fg = head.get("match_foreground", [])
    if not isinstance(fg, list) or not all(isinstance(x, str) and x for x in fg):
        raise head_error("match_foreground", "[manifest].match_foreground must be an array of non-empty strings")
    desc = head.get("description", "")
    if not isinstance(desc, str):
        raise head_error("description", "[manifest].description must be a string")
    defer = head.get("defer_to_kernel", False)
    if not isinstance(defer, bool):
        raise head_error("defer_to_kernel",
                         f"[manifest].defer_to_kernel must be true or false, got {defer!r}")
    approve = head.get("approve_keys", [])
    if not isinstance(approve, list) or not all(isinstance(x, str) and x for x in approve):
        raise head_error("approve_keys", "[manifest].approve_keys must be an array of key names")
    for key in approve:
        try:
            key_bytes(key)
        except UnknownKey as exc:
            raise head_error("approve_keys", f"[manifest].approve_keys: {exc}") from None

    raw_rules = data.get("rule")
    if raw_rules is None:
        raise ManifestError(file, None, "no [[rule]] entries")
    if not isinstance(raw_rules, list):
        raise ManifestError(file, loc.top_key_line("rule"), "rule must be an array of tables ([[rule]])")
    rules: list[Rule] = []
    names: set[str] = set()
    for i, raw in enumerate(raw_rules):
        rules.append(_parse_rule(raw, i, file, loc, names))
    ordered = tuple(sorted(rules, key=lambda r: (-r.priority, r.index)))
    return Manifest(name=name, version=version, rules=tuple(rules), match_foreground=tuple(fg),
                    description=desc, source=file, ordered=ordered, defer_to_kernel=defer,
                    approve_keys=tuple(approve))


def _parse_rule(raw: object, i: int, file: str, loc: _Locator, names: set[str]) -> Rule:
    line = loc.rule_line(i)
    if not isinstance(raw, dict):
        raise ManifestError(file, line, f"rule[{i}] must be a table")
    rname = raw.get("name")
    label = f"rule[{i}] {rname!r}" if isinstance(rname, str) else f"rule[{i}]"

    def err(key: str, reason: str, occurrence: int = 1) -> ManifestError:
        return ManifestError(file, loc.rule_key_line(i, key, occurrence) if key else line, f"{label}: {reason}")

    for key in raw:
        if key not in RULE_KEYS and key not in CONDITION_KEYS:
            raise err(key, f"unknown key {key!r} (rule keys: {', '.join(sorted(RULE_KEYS))}; "
                           f"conditions: {', '.join(sorted(CONDITION_KEYS - {'region'}))})")
    if not isinstance(rname, str) or not rname:
        raise err("name" if "name" in raw else "", "name must be a non-empty string")
    if rname in names:
        raise err("name", f"duplicate rule name {rname!r}")
    names.add(rname)
    state = raw.get("state")
    if not isinstance(state, str) or state not in STATES:
        raise err("state" if "state" in raw else "",
                  f"state must be one of {', '.join(sorted(STATES))}, got {state!r}")
    prio = raw.get("priority")
    if type(prio) is not int or not -PRIORITY_BOUND <= prio <= PRIORITY_BOUND:
        raise err("priority" if "priority" in raw else "",
                  f"priority must be an integer in [-{PRIORITY_BOUND}, {PRIORITY_BOUND}], got {prio!r}")
    desc = raw.get("description", "")
    if not isinstance(desc, str):
        raise err("description", "description must be a string")
    # The rule's own `region` is the region modifier of its top-level condition table;
    # compiling them together keeps key counts in text order for `_Locator`.
    cond_table = {k: v for k, v in raw.items() if k in CONDITION_KEYS}
    try:
        cond = compile_condition(cond_table, _KeyCounter(), where=label, parent_key="", parent_occ=1)
    except ConditionError as exc:
        line_no = loc.rule_key_line(i, exc.key, exc.occurrence) if exc.key else line
        raise ManifestError(file, line_no, exc.reason) from None
    region = cond.region or "whole"
    return Rule(name=rname, state=state, priority=prio, region=region, condition=cond, index=i,
                line=line, description=desc)
