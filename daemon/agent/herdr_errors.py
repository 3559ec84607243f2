"""The finite ``herdr_*`` error codes of the Herdr backend and the exception that carries them.

Every Herdr error states ``input_sent`` (``false``, or ``"unknown"`` when a prompt may have
reached the agent), so a caller never has to guess whether retrying could type twice.
``herdr_disabled`` additionally sets ``operator_action_required=true``: retrying the same
request cannot help until the operator fixes the configuration.
"""

from __future__ import annotations

from typing import Any, Literal

from vigil.protocol.errors import ErrorCode, VigilError

__all__ = ["HerdrCode", "HerdrError", "InputSent"]

HerdrCode = Literal[
    "herdr_disabled",  # no/invalid configuration, or no binding for this principal+workspace
    "herdr_target_not_found",  # alias not bound here, or herdr no longer knows the target
    "herdr_target_mismatch",  # the CLI answered about a different terminal/pane/agent
    "herdr_invalid_request",  # bad lines/until/timeout/text
    "herdr_prompt_id_unsupported",  # Herdr cannot deduplicate, so prompt_id is refused
    "herdr_timeout",  # the operation deadline killed the CLI (not a prompt: see `prompt`)
    "herdr_output_too_large",  # JSON stdout beyond Settings.herdr_stdout_max_bytes
    "herdr_unavailable",  # server not running, protocol mismatch
    "herdr_cli_error",  # any other CLI failure; data.herdr_error_code says which
    "herdr_usage_error",  # exit 2: the CLI rejected our argument vector (version skew)
    "herdr_invalid_response",  # stdout is not the documented JSON shape
    "herdr_exec_failed",  # the executable could not be started
]

InputSent = Literal[False, True, "unknown"]


class HerdrError(VigilError):
    """A Herdr backend failure: ``code`` is a `HerdrCode`; ``data`` always has ``input_sent``."""

    def __init__(self, code: HerdrCode, message: str, *, input_sent: InputSent = False, **data: Any):
        payload: dict[str, Any] = {"input_sent": input_sent, **data}
        if code == "herdr_disabled":
            payload["operator_action_required"] = True
        super().__init__(ErrorCode.HERDR_DISABLED if code == "herdr_disabled" else code, message, payload)
        self.herdr_code: HerdrCode = code
