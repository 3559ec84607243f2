"""Condition trees: parsed once from a manifest, evaluated against a `ScreenView`.

A condition is a TOML table with one or more of these keys (several keys are ANDed):

| key | value | true when |
|---|---|---|
| `contains` | string | the region text contains it (case-sensitive) |
| `regex` | string | `re.search` finds it in the region text (`re.MULTILINE`: `^`/`$` are rows) |
| `line_regex` | string | it matches (`re.search`) some row of the region |
| `cursor_line_regex` | string | it matches the cursor's row left of the cursor, unstripped |
| `any` | array of conditions | one of them is true (an empty array is false) |
| `all` | array of conditions | all of them are true (an empty array is true) |
| `not` | condition | it is false |
| `always` | `true` | always (a manifest's catch-all rule) |
| `region` | region name | (modifier) the other keys of this table, and the tables under them, look at this region instead of the enclosing one |

`cursor_line_regex` is vigil's addition to the DESIGN list: a shell prompt's trailing space is
padding on a rendered screen, and only the cursor position tells "`$ ` waiting here" from
"output that happens to end in `$`". It ignores `region`.

Regexes are compiled once, when the manifest is loaded. Python's `re` has no timeout, so a
manifest author can write a catastrophically backtracking pattern; user manifests are the
user's own code, built-ins are benchmarked (tests/bench/bench_recognize.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ._regions import RegionError, ScreenView, parse_region

CONDITION_KEYS = frozenset(
    ("contains", "regex", "line_regex", "cursor_line_regex", "any", "all", "not", "always", "region")
)


class ConditionError(ValueError):
    """A condition is malformed. `key` is the offending key, `occurrence` its 1-based count
    among the keys of that name met so far in the rule (used to find its line)."""

    def __init__(self, reason: str, key: str, occurrence: int) -> None:
        super().__init__(reason)
        self.reason = reason
        self.key = key
        self.occurrence = occurrence


@dataclass(frozen=True, slots=True)
class Node:
    """A compiled condition. `kind` selects the test; only the fields it needs are set."""

    kind: str  # contains | regex | line_regex | cursor_line_regex | any | all | not | always
    text: str = ""
    pattern: re.Pattern[str] | None = None
    children: tuple["Node", ...] = ()
    #: region override for this node and its children (None: the enclosing region).
    region: str | None = None


class _KeyCounter:
    """Counts keys in traversal order, so an error can name the n-th `regex =` of a rule."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}

    def see(self, key: str) -> int:
        self.counts[key] = self.counts.get(key, 0) + 1
        return self.counts[key]


def compile_condition(table: dict, counter: _KeyCounter, *, where: str, parent_key: str, parent_occ: int) -> Node:
    """Compile one condition table (the rule itself, or an element of `any`/`all`, or `not`).

    Args:
        table: the TOML table; for a rule, the caller removed the rule's own keys first.
        counter: key counts of the enclosing rule, advanced in traversal (= text) order.
        where: a human path for messages, e.g. `rule "spinner".any[1]`.
        parent_key, parent_occ: the key that holds this table, for errors about the table
            as a whole (empty, wrong type).

    Raises:
        ConditionError: unknown key, wrong type, bad regex, bad region, empty condition.
    """
    if not isinstance(table, dict):
        raise ConditionError(f"{where}: a condition must be a table, not {type(table).__name__}", parent_key, parent_occ)
    region: str | None = None
    parts: list[Node] = []
    for key, value in table.items():
        occ = counter.see(key)
        if key not in CONDITION_KEYS:
            raise ConditionError(
                f"{where}: unknown key {key!r} (expected one of {', '.join(sorted(CONDITION_KEYS))})", key, occ
            )
        if key == "region":
            try:
                region = parse_region(value)
            except RegionError as exc:
                raise ConditionError(f"{where}: {exc}", key, occ) from None
        elif key in ("contains", "regex", "line_regex", "cursor_line_regex"):
            if not isinstance(value, str) or value == "":
                raise ConditionError(f"{where}.{key}: must be a non-empty string", key, occ)
            if key == "contains":
                parts.append(Node("contains", text=value))
            else:
                try:
                    pattern = re.compile(value, re.MULTILINE if key == "regex" else 0)
                except re.error as exc:
                    raise ConditionError(f"{where}.{key}: bad regular expression {value!r}: {exc}", key, occ) from None
                parts.append(Node(key, text=value, pattern=pattern))
        elif key in ("any", "all"):
            if not isinstance(value, list):
                raise ConditionError(f"{where}.{key}: must be an array of condition tables", key, occ)
            children = tuple(
                compile_condition(c, counter, where=f"{where}.{key}[{i}]", parent_key=key, parent_occ=occ)
                for i, c in enumerate(value)
            )
            parts.append(Node(key, children=children))
        elif key == "not":
            child = compile_condition(value, counter, where=f"{where}.not", parent_key=key, parent_occ=occ)
            parts.append(Node("not", children=(child,)))
        else:  # always
            if value is not True:
                raise ConditionError(f"{where}.always: must be true", key, occ)
            parts.append(Node("always"))
    if not parts:
        raise ConditionError(f"{where}: no condition (need contains, regex, line_regex, any, all, not or always)",
                             parent_key, parent_occ)
    if len(parts) == 1:
        only = parts[0]
        return Node(only.kind, only.text, only.pattern, only.children, region)
    return Node("all", children=tuple(parts), region=region)


def evaluate(node: Node, view: ScreenView, region: str) -> bool:
    """Is the condition true on this screen? `region` is the enclosing region's name."""
    if node.region is not None:
        region = node.region
    kind = node.kind
    if kind == "contains":
        return node.text in view.region(region)[0]
    if kind == "regex":
        return node.pattern.search(view.region(region)[0]) is not None
    if kind == "line_regex":
        search = node.pattern.search
        return any(search(row) is not None for row in view.region(region)[1])
    if kind == "cursor_line_regex":
        return node.pattern.search(view.cursor_text()) is not None
    if kind == "any":
        return any(evaluate(c, view, region) for c in node.children)
    if kind == "all":
        return all(evaluate(c, view, region) for c in node.children)
    if kind == "not":
        return not evaluate(node.children[0], view, region)
    return True  # always


def marker_evidence(node: Node, rows: list[str], region: str) -> bool:
    """Could text the user submitted, shown as `rows`, supply this condition's evidence?

    Used by `marker_resembles`, which must err towards "yes" (spec: such a receipt
    "conservatively leaves activity unconfirmed"). So a positive test (`contains`, a regex)
    anywhere in the tree counts if it matches `rows`, even under `all`, because the rest of
    the screen may supply the other parts. Tests on the title (typed text cannot set it) and
    everything under `not` are no evidence; nor is `always`: a catch-all rule is not a
    marker that text could imitate. Every other region is taken to be `rows`, and the cursor
    may sit after any row.
    """
    if node.region is not None:
        region = node.region
    kind = node.kind
    if kind in ("contains", "regex", "line_regex") and region == "osc_title":
        return False
    if kind == "contains":
        return any(node.text in r for r in rows) or node.text in "\n".join(rows)
    if kind == "regex":
        return node.pattern.search("\n".join(rows)) is not None
    if kind in ("line_regex", "cursor_line_regex"):
        search = node.pattern.search
        return any(search(r) is not None for r in rows)
    if kind in ("any", "all"):
        return any(marker_evidence(c, rows, region) for c in node.children)
    return False  # not, always
