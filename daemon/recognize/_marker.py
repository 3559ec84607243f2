"""Does submitted prompt text itself look like a work or approval marker?

Spec ("Submit a native prompt once"): "If the submitted text itself resembles a work or
approval marker, that receipt conservatively leaves activity unconfirmed for its lifetime.
This also covers text echoed after Enter or reflowed across lines." The echo of such text
on the screen could be mistaken for real work, so receipts must know in advance.

The text is tried in the shapes the terminal may show it in:
1. as submitted, row by row;
2. all whitespace collapsed into one row (a marker the user split over lines, rejoined by
   the TUI's word wrap);
3. reflowed: every window of `cols` characters of (2) that starts at a word, and every one
   that ends at a word, as its own row (a marker that wrapping moves to the start or the end
   of a row, where anchored patterns such as `^\\s*1\\. Yes` look).
Against each, every `busy` and `awaiting_approval` rule of the manifest is checked for
evidence (`_conditions.marker_evidence`): conservative, so a false "yes" only costs a
confirmation, a false "no" could confirm work that never happened.
"""

from __future__ import annotations

import re

from vigil.daemon.settings import DEFAULTS

from ._conditions import marker_evidence
from ._manifest import Manifest

MARKER_STATES = frozenset(("busy", "awaiting_approval"))
_WORD = re.compile(r"\S+")


def _shapes(text: str, cols: int) -> list[list[str]]:
    collapsed = " ".join(text.split())
    shapes = [text.splitlines() or [""], [collapsed]]
    windows: list[str] = []
    for m in _WORD.finditer(collapsed):
        windows.append(collapsed[m.start() : m.start() + cols])
        windows.append(collapsed[max(0, m.end() - cols) : m.end()])
    shapes.append(windows)
    return shapes


def marker_resembles(text: str, manifest: Manifest, *, cols: int = DEFAULTS.terminal_cols) -> bool:
    """True if `text`, echoed on the screen, could pass for a busy or approval marker of
    `manifest`.

    Args:
        text: the prompt text as submitted (≤ Settings.prompt_text_max_bytes, 16 KiB).
        manifest: the manifest the receipt is recognized with.
        cols: the terminal width, the longest row a reflow can produce.

    Cost: about one regex pass per rule over (2 × words × cols) characters; for a 16 KiB
    prompt that is a few tens of milliseconds, paid once per prompt.
    """
    rules = [r for r in manifest.ordered if r.state in MARKER_STATES]
    if not rules or not text.strip():
        return False
    for rows in _shapes(text, max(cols, 1)):
        for rule in rules:
            if marker_evidence(rule.condition, rows, rule.region):
                return True
    return False
