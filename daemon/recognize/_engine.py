"""The engine: one manifest, one complete screen, one `Detection`.

Order of evidence:
1. The process exited (`inp.exited`): state `exited`, source `exit_status`. The exit is
   observed, not recognized, so no screen rule can override it.
2. The rules, highest priority first, ties to the earlier rule in the file; the first rule
   whose condition holds decides, whatever its state. An explicit rule with state `unknown`
   is therefore authoritative (spec: "An explicit manifest `Unknown` remains
   authoritative"): it is reported as source `rule`, and no lower rule is consulted.
3. No rule matched: state `unknown`, source `fallback`, reason `no_rule_matched`; never a
   guess (DESIGN: "no match is `unknown`, never a guess").

The engine always sees every row of the input; presentation limits (read pages, observe
budgets) are applied by callers to what they show, never to what is recognized.
"""

from __future__ import annotations

from ._conditions import evaluate as _eval_condition
from ._manifest import Manifest
from ._model import Detection, RecognitionInput
from ._regions import ScreenView

NO_RULE_MATCHED = "no_rule_matched"
PROCESS_EXITED = "process_exited"


def evaluate(manifest: Manifest, inp: RecognitionInput, *, selected_by: str = "explicit") -> Detection:
    """Recognize the state of one screen with one manifest. Pure and synchronous.

    Args:
        manifest: a validated manifest.
        inp: the complete recognition input.
        selected_by: how the caller chose the manifest, copied to the Detection
            (`Registry.detect` passes the `auto` evidence).

    Returns:
        The Detection (see `_model.Detection` for its invariants).
    """
    common = dict(
        recognizer=manifest.name,
        manifest_version=manifest.version,
        selected_by=selected_by,
        evaluated_lines=len(inp.lines),
        exit_code=inp.exit_code,
    )
    if inp.exited:
        return Detection(state="exited", source="exit_status", reason=PROCESS_EXITED, **common)
    view = ScreenView(inp)
    for rule in manifest.ordered:
        if _eval_condition(rule.condition, view, rule.region):
            return Detection(
                state=rule.state,
                source="rule",
                rule=rule.name,
                priority=rule.priority,
                reason=f"rule {rule.name!r} matched",
                region=rule.region,
                region_text_bytes=len(view.region(rule.region)[0].encode("utf-8")),
                **common,
            )
    return Detection(
        state="unknown",
        source="fallback",
        reason=NO_RULE_MATCHED,
        region="whole",
        region_text_bytes=len(view.region("whole")[0].encode("utf-8")),
        **common,
    )
