"""The optional Herdr backend of ``Agent`` (spec: "Optional Herdr backend").

A caller names a *configured alias*; the alias is mapped only through the binding of the
caller's own ``(principal_key, workspace_root)``, so an agent can reach only targets the
operator bound for it and can never select a globally focused terminal. Each action runs
the configured herdr CLI (reference: shared/reference/herdr-cli.md) through
`herdr_process.run_bounded`: literal argv, environment = inherited minus every ``HERDR_*``
variable plus ``HERDR_SOCKET_PATH`` from the configuration, capped output, and one
operation deadline (``deadline_ms``) shared by every subprocess the action needs.

Target ids and identity (reference §3). A configured id is one of

* a terminal id ``term_…`` — the only stable identity, but agent commands reject it, so it
  is resolved with ``pane list`` to its current pane id first;
* a pane id ``w<N>:p<M>`` — used as-is;
* an agent name — used as-is.

Every answer that carries an AgentInfo (get, prompt, wait, list) is checked against the
configured id (``terminal_id``, ``pane_id`` or ``name`` respectively); a difference is
``herdr_target_mismatch``. ``read`` and ``explain`` answers carry no identity: for a
terminal id the ``pane list`` resolution is the check; for pane ids and names the CLI
resolved exactly the configured word. A pane moved between resolution and use makes agent
commands fail (herdr keeps old pane ids out of agent commands), it does not redirect them.

Prompts. Herdr cannot deduplicate, so ``prompt_id`` is refused before anything runs
(``herdr_prompt_id_unsupported``). An outcome that cannot prove the text did not reach the
agent — the deadline killed the CLI, its output overflowed or was unreadable, or herdr
reported a failure after the send could have happened — is returned as
``{"delivery": "uncertain", "input_sent": "unknown"}``, never retried. Errors herdr raises
before sending (target not found, not ready, blocked, …) are `HerdrError` with
``input_sent=false``.

Herdr's own error messages are not relayed (they can contain the socket path); only its
finite error code is, as ``data.herdr_error_code``.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import msgspec
import trio

from vigil.daemon.settings import DEFAULTS, Settings
from vigil.protocol.api.agent import (
    HerdrAgent,
    HerdrExplainData,
    HerdrGetData,
    HerdrListData,
    HerdrPromptData,
    HerdrReadData,
    HerdrTarget,
    HerdrWaitData,
)

from .herdr_config import HerdrBinding, HerdrConfig, load_herdr_config_from_environ
from .herdr_errors import HerdrError, InputSent
from .herdr_process import RunResult, run_bounded

__all__ = ["AGENT_STATES", "HerdrBackend", "HerdrScope", "herdr_backend_from_environ"]

AgentStatus = Literal["idle", "working", "blocked", "done", "unknown"]
#: herdr's lifecycle states (reference §3), the only values `wait(until=…)` accepts.
AGENT_STATES: tuple[str, ...] = ("idle", "working", "blocked", "done", "unknown")
#: herdr's default `--until` set when none is given (reference §1, wait).
_DEFAULT_UNTIL = ("idle", "done", "blocked")

#: Codes herdr returns before a prompt's text is sent (the server checks them first).
_PROMPT_NOT_SENT_CODES = frozenset(
    {
        "server_not_running",
        "protocol_mismatch",
        "pane_not_found",
        "agent_not_found",
        "agent_target_ambiguous",
        "agent_not_ready",
        "agent_blocked",
        "empty_agent_prompt",
    }
)
#: herdr CLI error codes (reference §1, exit 1). Anything else is reported as "unrecognized".
_KNOWN_CLI_CODES = _PROMPT_NOT_SENT_CODES | {
    "agent_prompt_failed",
    "agent_prompt_stalled",
    "timeout",
    "agent_not_running",
    "agent_not_idle",
    "agent_explain_unavailable",
    "internal_error",
}
_NOT_FOUND_CODES = frozenset({"pane_not_found", "agent_not_found", "agent_not_running"})
_UNAVAILABLE_CODES = frozenset({"server_not_running", "protocol_mismatch"})

# Pane ids: w<N>:p<M>, N and M in herdr's bijective base-32 alphabet (reference §3).
_PANE_ID = re.compile(r"w[1-9A-HJKMNP-TV-Z0]+:p[1-9A-HJKMNP-TV-Z0]+")


# --- CLI answer shapes (reference §4); unknown fields are ignored: herdr adds fields ----------


class _AgentInfo(msgspec.Struct):
    terminal_id: str
    agent_status: AgentStatus
    workspace_id: str
    tab_id: str
    pane_id: str
    focused: bool = False
    state_change_seq: int = 0
    name: str | None = None
    agent: str | None = None
    display_agent: str | None = None
    title: str | None = None
    cwd: str | None = None


class _AgentResult(msgspec.Struct):
    type: str
    agent: _AgentInfo


class _AgentListResult(msgspec.Struct):
    type: str
    agents: list[_AgentInfo]


class _PaneInfo(msgspec.Struct):
    pane_id: str
    terminal_id: str


class _PaneListResult(msgspec.Struct):
    type: str
    panes: list[_PaneInfo]


class _Envelope(msgspec.Struct):
    id: str
    result: msgspec.Raw


class _CliError(msgspec.Struct):
    code: str
    message: str = ""


class _CliErrorEnvelope(msgspec.Struct):
    error: _CliError


_ENVELOPE = msgspec.json.Decoder(_Envelope)
_ERROR = msgspec.json.Decoder(_CliErrorEnvelope)
_JSON_ENCODER = msgspec.json.Encoder()


def _view(info: _AgentInfo) -> HerdrAgent:
    """The AgentInfo fields a caller sees: identity, lifecycle and labels."""
    return HerdrAgent(
        agent_status=info.agent_status, agent=info.agent, display_agent=info.display_agent,
        name=info.name, title=info.title, cwd=info.cwd, terminal_id=info.terminal_id,
        pane_id=info.pane_id, tab_id=info.tab_id, workspace_id=info.workspace_id,
        focused=info.focused, state_change_seq=info.state_change_seq)


class _Target(msgspec.Struct, frozen=True):
    alias: str
    target_id: str
    kind: Literal["terminal", "pane", "name"]

    def matches(self, info: _AgentInfo) -> bool:
        if self.kind == "terminal":
            return info.terminal_id == self.target_id
        if self.kind == "pane":
            return info.pane_id == self.target_id
        return info.name == self.target_id


def _target(alias: str, target_id: str) -> _Target:
    if target_id.startswith("term_"):
        return _Target(alias, target_id, "terminal")
    if _PANE_ID.fullmatch(target_id):
        return _Target(alias, target_id, "pane")
    return _Target(alias, target_id, "name")


def herdr_backend_from_environ(
    environ: Mapping[str, str] | None = None, settings: Settings = DEFAULTS
) -> HerdrBackend:
    """Load ``$VIGIL_HERDR_CONFIG`` and build a backend.

    Meant to be called per ``Agent`` request with ``backend=herdr``, so an operator's fix
    takes effect without restarting the daemon (the file is ≤ 256 KiB; the cost is one
    open+read).

    Raises:
        HerdrConfigError: ``herdr_disabled`` with the `ConfigReason`.
    """
    environ = os.environ if environ is None else environ
    return HerdrBackend(load_herdr_config_from_environ(environ, settings), settings, environ=environ)


class HerdrBackend:
    """Herdr actions for a validated configuration.

    ``environ`` is the environment the CLI inherits (default: the daemon's, read per call),
    before ``HERDR_*`` is scrubbed and ``HERDR_SOCKET_PATH`` set.
    """

    def __init__(self, config: HerdrConfig, settings: Settings = DEFAULTS, *, environ: Mapping[str, str] | None = None):
        self.config = config
        self.settings = settings
        self._environ = environ

    def scope(self, principal_key: str, workspace_root: str) -> HerdrScope:
        """Actions for one caller. Raises ``herdr_disabled`` if the caller has no binding."""
        binding = self.config.binding(principal_key, workspace_root)
        if binding is None:
            raise HerdrError(
                "herdr_disabled",
                "no Herdr binding is configured for this principal and workspace",
                reason="binding_missing",
            )
        return HerdrScope(self, binding)

    async def list(self, principal_key: str, workspace_root: str) -> HerdrListData:
        return await self.scope(principal_key, workspace_root).list()

    def child_environment(self) -> dict[str, str]:
        """Inherited environment minus every ``HERDR_*``, plus the configured socket."""
        base = os.environ if self._environ is None else self._environ
        env = {k: v for k, v in base.items() if not k.startswith("HERDR_")}
        env["HERDR_SOCKET_PATH"] = self.config.socket_path
        return env

    def deadline(self) -> float:
        """The trio-clock deadline of an operation starting now."""
        return trio.current_time() + self.config.deadline_ms / 1000

    async def run(self, args: Sequence[str], deadline: float, *, tail: bool = False) -> RunResult:
        """Run ``executable *args``. Raises ``herdr_exec_failed`` if it cannot start."""
        s = self.settings
        try:
            return await run_bounded(
                [self.config.executable, *args],
                env=self.child_environment(),
                deadline=deadline,
                stdout_max=s.herdr_stdout_max_bytes,
                stderr_max=s.herdr_stderr_max_bytes,
                stdout_mode="tail" if tail else "fail",
                kill_grace=s.herdr_kill_grace_ms / 1000,
            )
        except OSError as exc:
            raise HerdrError("herdr_exec_failed", f"the herdr executable could not be started: {exc.strerror}") from None


class HerdrScope:
    """The Herdr actions of one caller: every alias resolves through ``binding`` only."""

    def __init__(self, backend: HerdrBackend, binding: HerdrBinding):
        self._b = backend
        self._binding = binding

    # --- actions ----------------------------------------------------------------------------

    async def list(self) -> HerdrListData:
        """Configured targets of this binding (sorted by alias) with their live state.

        At most ``herdr_list_targets_max`` (spec: 32) targets and ``herdr_list_bytes_max``
        (spec: 64 KiB) of JSON; beyond either, ``truncated=true``. Agents herdr knows but
        this binding does not name are never shown. A target herdr does not list as an
        agent is ``found=false``.
        """
        s = self._b.settings
        aliases = sorted(self._binding.targets)
        truncated = len(aliases) > s.herdr_list_targets_max
        targets = [_target(a, self._binding.targets[a]) for a in aliases[: s.herdr_list_targets_max]]
        infos: list[_AgentInfo] = []
        if targets:
            result = await self._json(["agent", "list"], self._b.deadline(), "agent_list", _AgentListResult)
            infos = result.agents
        header = HerdrListData(targets=[], truncated=True)
        budget = s.herdr_list_bytes_max - len(_JSON_ENCODER.encode(header))
        entries: list[HerdrTarget] = []
        for t in targets:
            matching = [i for i in infos if t.matches(i)]
            if len(matching) > 1:
                raise HerdrError("herdr_invalid_response", f"herdr listed target `{t.alias}` more than once")
            entry = HerdrTarget(target=t.alias, found=bool(matching),
                                agent=_view(matching[0]) if matching else None)
            cost = len(_JSON_ENCODER.encode(entry)) + 1  # +1: the separating comma
            if cost > budget:
                truncated = True
                break
            budget -= cost
            entries.append(entry)
        return HerdrListData(targets=entries, truncated=truncated)

    async def get(self, alias: str) -> HerdrGetData:
        t = self._lookup(alias)
        deadline = self._b.deadline()
        handle = await self._handle(t, deadline)
        result = await self._json(["agent", "get", handle], deadline, "agent_info", _AgentResult)
        self._check_identity(t, result.agent)
        return HerdrGetData(target=alias, agent=_view(result.agent))

    async def read(self, alias: str, lines: int | None = None) -> HerdrReadData:
        """Recent text (herdr's ``recent`` source) of at most ``lines`` rendered rows.

        ``lines`` defaults to ``herdr_read_lines_default`` (spec: 100) and is capped at
        ``herdr_read_lines_max`` (spec: 1000); herdr caps at 1000 itself. Text beyond
        ``herdr_stdout_max_bytes`` keeps its most recent part, starting at a line start,
        with ``truncated=true``. No pagination: that is the native catalog's promise only.
        """
        s = self._b.settings
        if lines is None:
            lines = s.herdr_read_lines_default
        if isinstance(lines, bool) or not isinstance(lines, int) or not 1 <= lines <= s.herdr_read_lines_max:
            raise HerdrError(
                "herdr_invalid_request", f"`lines` must be an integer from 1 to {s.herdr_read_lines_max}"
            )
        t = self._lookup(alias)
        deadline = self._b.deadline()
        handle = await self._handle(t, deadline)
        # `--lines N` as two words: `agent read` rejects `--lines=N` (reference §1).
        run = await self._b.run(["agent", "read", handle, "--lines", str(lines)], deadline, tail=True)
        self._raise_for_failure(run, tail=True)
        data = run.stdout
        if run.stdout_overflow:
            cut = data.find(b"\n")
            data = data[cut + 1 :] if cut >= 0 else data
        return HerdrReadData(target=alias, source="recent", lines=lines,
                             text=data.decode("utf-8", errors="replace"),
                             truncated=run.stdout_overflow)

    async def explain(self, alias: str) -> HerdrExplainData:
        """herdr's recognizer explanation (``agent explain --json``), as herdr shaped it."""
        t = self._lookup(alias)
        deadline = self._b.deadline()
        handle = await self._handle(t, deadline)
        run = await self._b.run(["agent", "explain", handle, "--json"], deadline)
        self._raise_for_failure(run)
        try:
            obj = msgspec.json.decode(run.stdout)
        except msgspec.DecodeError:
            obj = None
        if not isinstance(obj, dict) or not isinstance(obj.get("state"), str):
            raise HerdrError("herdr_invalid_response", "herdr explain did not print a JSON object with `state`")
        return HerdrExplainData(target=alias, explain=obj)

    async def prompt(self, alias: str, text: str, prompt_id: str | None = None) -> HerdrPromptData:
        """Submit ``text`` and Enter once. Never resent, whatever happens.

        Returns ``delivery="submitted", input_sent=true`` with the AgentInfo herdr reported,
        or ``delivery="uncertain", input_sent="unknown"`` with a ``reason``
        (``deadline_exceeded``, ``output_too_large``, ``invalid_response``, ``cli_error``).
        Submission is not completion: observe with get/explain/wait.

        Raises:
            HerdrError: ``input_sent=false`` when nothing was (or could have been) sent;
                ``herdr_target_mismatch`` with ``input_sent=true`` if herdr reports having
                prompted a different target.
        """
        if prompt_id is not None:
            raise HerdrError(
                "herdr_prompt_id_unsupported",
                "Herdr has no prompt deduplication; omit prompt_id for backend=herdr",
            )
        self._check_text(text)
        t = self._lookup(alias)
        deadline = self._b.deadline()
        handle = await self._handle(t, deadline)
        run = await self._b.run(["agent", "prompt", handle, text], deadline)

        def uncertain(reason: str, code: str | None = None) -> HerdrPromptData:
            return HerdrPromptData(target=alias, delivery="uncertain", input_sent="unknown",
                                   reason=reason, herdr_error_code=code)

        if run.timed_out or run.stdout_overflow:
            return uncertain("deadline_exceeded" if run.timed_out else "output_too_large")
        if run.returncode != 0:
            code = _cli_error_code(run)
            if run.returncode == 2 or code in _PROMPT_NOT_SENT_CODES:
                self._raise_for_failure(run)  # definite: herdr refused before sending
            return uncertain("cli_error", code)
        try:
            result = self._decode(run, "agent_prompted", _AgentResult)
        except HerdrError:
            return uncertain("invalid_response")
        self._check_identity(t, result.agent, input_sent=True)
        return HerdrPromptData(target=alias, delivery="submitted", input_sent=True,
                               agent=_view(result.agent))

    async def wait(
        self, alias: str, until: Sequence[str] | None = None, timeout_seconds: float | None = None
    ) -> HerdrWaitData:
        """Wait until the target's status is in ``until`` (herdr default: idle, done, blocked).

        The wait is capped by the operation deadline (a larger ``timeout_seconds`` does not
        extend it; ``capped=true`` says so). Returns ``condition_met`` true with the agent,
        or false with ``reason="timeout"``.
        """
        states = self._check_until(until)
        if timeout_seconds is not None and (
            isinstance(timeout_seconds, bool)
            or not isinstance(timeout_seconds, (int, float))
            or not math.isfinite(timeout_seconds)
            or timeout_seconds < 0
        ):
            raise HerdrError("herdr_invalid_request", "`timeout_seconds` must be a finite number >= 0")
        t = self._lookup(alias)
        deadline = self._b.deadline()
        handle = await self._handle(t, deadline)
        margin = self._b.settings.herdr_wait_margin_ms
        room_ms = max(0, int((deadline - trio.current_time()) * 1000) - margin)
        wanted_ms = room_ms if timeout_seconds is None else int(timeout_seconds * 1000)
        timeout_ms = min(wanted_ms, room_ms)
        args = ["agent", "wait", handle]
        for s in states or ():
            args += ["--until", s]
        args += ["--timeout", str(timeout_ms)]
        run = await self._b.run(args, deadline)
        capped = wanted_ms > room_ms
        if run.returncode == 1 and _cli_error_code(run) == "timeout":
            return HerdrWaitData(target=alias, capped=capped, condition_met=False,
                                 reason="timeout", agent=None)
        self._raise_for_failure(run)
        result = self._decode(run, "agent_info", _AgentResult)
        self._check_identity(t, result.agent)
        if result.agent.agent_status not in (states or _DEFAULT_UNTIL):
            raise HerdrError("herdr_invalid_response", "herdr wait returned a status outside `until`")
        return HerdrWaitData(target=alias, capped=capped, condition_met=True, reason=None,
                             agent=_view(result.agent))

    # --- helpers ----------------------------------------------------------------------------

    def _lookup(self, alias: str) -> _Target:
        target_id = self._binding.targets.get(alias) if isinstance(alias, str) else None
        if target_id is None:
            raise HerdrError(
                "herdr_target_not_found", "no Herdr target with this alias is configured for this principal and workspace"
            )
        return _target(alias, target_id)

    async def _handle(self, t: _Target, deadline: float) -> str:
        """The word agent commands accept for ``t``: a terminal id becomes its pane id."""
        if t.kind != "terminal":
            return t.target_id
        result = await self._json(["pane", "list"], deadline, "pane_list", _PaneListResult)
        panes = [p for p in result.panes if p.terminal_id == t.target_id]
        if not panes:
            raise HerdrError("herdr_target_not_found", f"Herdr target `{t.alias}` is not running")
        if len(panes) > 1:
            raise HerdrError("herdr_invalid_response", "herdr listed one terminal in several panes")
        return panes[0].pane_id

    def _check_identity(self, t: _Target, info: _AgentInfo, *, input_sent: InputSent = False) -> None:
        if not t.matches(info):
            extra = {"delivery": "submitted"} if input_sent is True else {}
            raise HerdrError(
                "herdr_target_mismatch",
                f"herdr answered about a different target than `{t.alias}`",
                input_sent=input_sent,
                **extra,
            )

    @staticmethod
    def _check_until(until: Sequence[str] | None) -> tuple[str, ...] | None:
        if until is None:
            return None
        if isinstance(until, str) or not until or len(set(until)) != len(until) or not all(
            isinstance(s, str) and s in AGENT_STATES for s in until
        ):
            raise HerdrError(
                "herdr_invalid_request",
                "`until` must be a non-empty list of distinct states from idle, working, blocked, done, unknown",
            )
        return tuple(until)

    def _check_text(self, text: str) -> None:
        limit = self._b.settings.prompt_text_max_bytes
        if not isinstance(text, str) or not text:
            raise HerdrError("herdr_invalid_request", "`text` must be a non-empty string")
        try:
            size = len(text.encode("utf-8"))
        except UnicodeEncodeError:
            raise HerdrError("herdr_invalid_request", "`text` is not valid Unicode") from None
        if size > limit:
            raise HerdrError("herdr_invalid_request", f"`text` exceeds {limit} bytes")
        if "\x00" in text:
            raise HerdrError("herdr_invalid_request", "`text` cannot contain NUL")
        # herdr strips these global flags from anywhere in argv and has no `--` escape
        # (reference §1, "Gotcha"), so such a text would be consumed as a flag, not typed.
        if text in ("--session", "--handoff") or text.startswith(("--session=", "--remote")):
            raise HerdrError("herdr_invalid_request", "`text` equal to a herdr global flag cannot be sent")

    async def _json(self, args: list[str], deadline: float, type_: str, shape: type) -> Any:
        run = await self._b.run(args, deadline)
        self._raise_for_failure(run)
        return self._decode(run, type_, shape)

    @staticmethod
    def _decode(run: RunResult, type_: str, shape: type) -> Any:
        try:
            env = _ENVELOPE.decode(run.stdout)
            result = msgspec.json.decode(env.result, type=shape)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise HerdrError("herdr_invalid_response", f"herdr printed an unexpected answer: {exc}") from None
        if result.type != type_:
            raise HerdrError("herdr_invalid_response", f"herdr answered `{result.type}`, expected `{type_}`")
        return result

    @staticmethod
    def _raise_for_failure(run: RunResult, *, tail: bool = False) -> None:
        """Raise the `HerdrError` for a failed run (input_sent=false); return if it succeeded.

        With ``tail`` (read), a stdout overflow is the truncation flag, not a failure.
        """
        if run.timed_out:
            raise HerdrError("herdr_timeout", "the Herdr operation deadline expired")
        if run.stdout_overflow and not tail:
            raise HerdrError("herdr_output_too_large", "herdr printed more than the stdout limit")
        if run.returncode == 0:
            return
        if run.returncode == 2:
            raise HerdrError("herdr_usage_error", "herdr rejected the arguments (is it >= 0.7.5?)")
        code = _cli_error_code(run)
        if code in _NOT_FOUND_CODES:
            raise HerdrError("herdr_target_not_found", "herdr does not know this target", herdr_error_code=code)
        if code in _UNAVAILABLE_CODES:
            raise HerdrError("herdr_unavailable", "the Herdr server is not reachable", herdr_error_code=code)
        raise HerdrError("herdr_cli_error", f"herdr failed ({code})", herdr_error_code=code)


def _cli_error_code(run: RunResult) -> str:
    """herdr's finite error code from a failed run: a known code, ``unrecognized``,
    ``io_error`` (non-JSON stderr, exit 1) or ``abnormal_exit`` (other status/signal)."""
    if run.returncode != 1:
        return "abnormal_exit"
    line = run.stderr.strip().split(b"\n", 1)[0]
    try:
        code = _ERROR.decode(line).error.code
    except (msgspec.DecodeError, msgspec.ValidationError):
        return "io_error"
    return code if code in _KNOWN_CLI_CODES else "unrecognized"
