"""Replay validation (seeds/002, "Steps"): the one-to-one pairing of tool calls and results,
checked in full for every step of a turn — never sampled.

A step whose capture was ambiguous is still archived (it is real history an auditor must
see) but marked `replay_blocked` with its reasons, because "which result belongs to which
call" has no truthful answer for it:

- `duplicate_call_id`: a call id used by more than one call of the turn (every step holding
  one of them);
- `second_result`: more than one result for one call id (the steps of its calls and
  results);
- `result_without_call`: a result whose id no call of the turn has;
- `call_without_result`: a call that got no result by the end of the turn (only once the
  turn is committed: while it runs, the result may still come).

Pure functions over `Shape`s (ids, names and statuses only), which the builder keeps while
the turn runs and the reader derives from a file, so both judge alike.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from vigil.protocol.api.trace import ToolCount, TraceToolUse, TurnSummary

from .format import Step

REASONS = ("duplicate_call_id", "second_result", "result_without_call", "call_without_result")


@dataclass(slots=True)
class Shape:
    """What pairing needs of a step: its calls (id, tool name) and results (id, status)."""

    seq: int
    iteration: int
    calls: list[tuple[str, str]] = field(default_factory=list)
    results: list[tuple[str, str]] = field(default_factory=list)

    @classmethod
    def of(cls, step: Step) -> "Shape":
        return cls(step.action.seq, step.action.iteration,
                   [(b.tool_id, b.name) for b in step.action.action if isinstance(b, TraceToolUse)],
                   [(r.tool_id, r.status) for r in step.results])


def blocked_steps(shapes: list[Shape], early_results: list[str], *, complete: bool
                  ) -> dict[int, list[str]]:
    """seq → reasons (in `REASONS` order) of every step that may not be replayed.

    Args:
        early_results: ids of results that came before any step.
        complete: the turn ended (a call without a result is then final).
    """
    calls = Counter(tool_id for s in shapes for tool_id, _ in s.calls)
    results = Counter(tool_id for s in shapes for tool_id, _ in s.results)
    results.update(early_results)
    found: dict[int, set[str]] = {}
    for s in shapes:
        why = set()
        for tool_id, _ in s.calls:
            if calls[tool_id] > 1:
                why.add("duplicate_call_id")
            if results[tool_id] > 1:
                why.add("second_result")
            if complete and results[tool_id] == 0:
                why.add("call_without_result")
        for tool_id, _ in s.results:
            if calls[tool_id] == 0:
                why.add("result_without_call")
            elif results[tool_id] > 1:
                why.add("second_result")
        if why:
            found[s.seq] = why
    return {seq: [r for r in REASONS if r in why] for seq, why in found.items()}


def summarize(*, archive_ref: str, execution_id: str, turn: int, shapes: list[Shape],
              early_results: list[str], blocked: dict[int, list[str]], state: str,
              status: str | None, failed: bool) -> TurnSummary:
    """The model-context projection of a turn: counts, tool names, statuses, its end."""
    answered = Counter(tool_id for s in shapes for tool_id, _ in s.results)
    answered.update(early_results)
    errors = Counter(tool_id for s in shapes for tool_id, st in s.results if st == "error")
    tools: dict[str, list[int]] = {}
    missing = 0
    for s in shapes:
        for tool_id, name in s.calls:
            count = tools.setdefault(name, [0, 0])
            count[0] += 1
            count[1] += errors[tool_id] > 0
            missing += answered[tool_id] == 0
    return TurnSummary(
        archive_ref=archive_ref, trace_key=f"{execution_id}:{turn}", turn=turn, state=state,
        status=status, failed=failed, steps=len(shapes),
        iterations=len({s.iteration for s in shapes}),
        tool_calls=sum(len(s.calls) for s in shapes),
        tool_errors=sum(errors.values()), results_missing=missing,
        replay_blocked_steps=len(blocked),
        tools=[ToolCount(name=name, calls=c, errors=e) for name, (c, e) in tools.items()])
