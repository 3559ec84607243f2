"""Operator configuration of the optional Herdr backend (spec: "Operator configuration").

Herdr is disabled unless the operator points ``$VIGIL_HERDR_CONFIG`` (the spec's
``WINX_HERDR_CONFIG``) at a private JSON file naming the executable, the socket and the
bindings ``(principal_key, workspace_root) -> {alias: target id}``. Configuration is the
only source of authority: it never starts Herdr, and a caller can reach only the targets
bound to its own principal and workspace.

Two entry points with different costs, on purpose:

* `herdr_status_hint` answers ``Initialize``'s ``data.agent_backends.herdr`` from the
  environment alone — no file read, no subprocess, no path or target in the answer — so
  it grants nothing and reveals nothing.
* `load_herdr_config` validates everything and raises `HerdrConfigError` with a finite
  ``reason`` for each rejection. Messages name the offending field, never a configured
  path or target, because they may be relayed to an agent as a ``herdr_disabled`` error.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Mapping
from typing import Literal

import msgspec
from msgspec import UNSET, UnsetType

from vigil.daemon.settings import DEFAULTS, Settings

from .herdr_errors import HerdrError

__all__ = [
    "CONFIG_ENV",
    "ConfigReason",
    "HerdrBinding",
    "HerdrConfig",
    "HerdrConfigError",
    "herdr_status_hint",
    "load_herdr_config",
    "load_herdr_config_from_environ",
]

#: The environment variable naming the configuration file (spec: WINX_HERDR_CONFIG).
CONFIG_ENV = "VIGIL_HERDR_CONFIG"

ConfigReason = Literal[
    "configuration_missing",  # the variable is unset or empty
    "config_unreadable",  # open/stat/read failed (missing file, permission, loop…)
    "config_not_regular_file",
    "config_not_private",  # permission bits are not exactly 0600
    "config_wrong_owner",  # not owned by the daemon's effective user
    "config_too_large",  # > Settings.herdr_config_max_bytes (spec: 256 KiB)
    "config_invalid_json",  # not UTF-8 JSON
    "config_unknown_field",
    "config_invalid",  # wrong type or missing field (message carries the JSON path)
    "executable_not_absolute",
    "executable_not_found",
    "executable_not_regular_file",
    "executable_not_executable",
    "socket_path_not_absolute",
    "deadline_out_of_range",  # outside 1..Settings.herdr_deadline_ms_max (spec: 30000)
    "principal_key_invalid",  # neither `local` nor `http:<id>`
    "workspace_root_not_canonical",
    "duplicate_binding",  # the same (principal_key, workspace_root) twice
    "target_alias_invalid",
    "target_id_invalid",
]

# An alias is what an agent types: short and plain, so it never looks like a flag or a path.
_ALIAS = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
# A target id is passed to the CLI as one argv word. herdr ids are a terminal id
# (term_<hex>), a pane id (w<N>:p<M>) or an agent name ([a-z][a-z0-9_-]{0,31}); all fit
# this class. A leading `-` would be parsed as an option, so it is excluded (reference §1,
# §3).
_TARGET_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_:.-]{0,127}")


class HerdrConfigError(HerdrError):
    """The Herdr configuration is absent or invalid: the backend is disabled.

    On the wire this is ``herdr_disabled`` with ``operator_action_required=true``,
    ``input_sent=false`` and ``reason``, one of `ConfigReason`.
    """

    def __init__(self, reason: ConfigReason, message: str):
        super().__init__("herdr_disabled", message, input_sent=False, reason=reason)
        self.reason = reason


class HerdrBinding(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    """Targets one authenticated principal may use from one canonical workspace."""

    principal_key: str
    workspace_root: str
    targets: dict[str, str]


class _RawConfig(msgspec.Struct, forbid_unknown_fields=True):
    executable: str
    socket_path: str
    bindings: list[HerdrBinding]
    deadline_ms: int | UnsetType = UNSET


class HerdrConfig(msgspec.Struct, frozen=True, kw_only=True):
    """A validated configuration. ``executable`` is the resolved real path that was checked."""

    executable: str
    socket_path: str
    deadline_ms: int  # 1..Settings.herdr_deadline_ms_max, checked by load_herdr_config
    bindings: tuple[HerdrBinding, ...]

    def binding(self, principal_key: str, workspace_root: str) -> HerdrBinding | None:
        """The binding for exactly this principal and workspace, or None."""
        for b in self.bindings:
            if b.principal_key == principal_key and b.workspace_root == workspace_root:
                return b
        return None


_DECODER = msgspec.json.Decoder(_RawConfig)


def herdr_status_hint(environ: Mapping[str, str]) -> dict[str, object]:
    """``data.agent_backends.herdr`` for Initialize: environment only, no I/O, no paths."""
    if environ.get(CONFIG_ENV):
        return {
            "configuration_present": True,
            "availability": "unknown",
            "reason": "configuration_not_validated",
        }
    return {
        "configuration_present": False,
        "availability": "disabled",
        "reason": "configuration_missing",
    }


def load_herdr_config_from_environ(environ: Mapping[str, str], settings: Settings = DEFAULTS) -> HerdrConfig:
    """`load_herdr_config` on ``$VIGIL_HERDR_CONFIG``; ``configuration_missing`` if unset."""
    path = environ.get(CONFIG_ENV)
    if not path:
        raise HerdrConfigError("configuration_missing", f"{CONFIG_ENV} is not set")
    return load_herdr_config(path, settings)


def load_herdr_config(path: str | os.PathLike[str], settings: Settings = DEFAULTS) -> HerdrConfig:
    """Read and validate the operator's configuration file.

    The file is opened once and checked through the open descriptor (fstat), so ownership,
    mode, type and size are checked on the very file that is read (no check-then-open race).
    ``O_NONBLOCK`` keeps a FIFO planted at the path from blocking the open.

    Raises:
        HerdrConfigError: with the first failing `ConfigReason`.
    """
    raw = _read_private_file(os.fspath(path), settings)
    try:
        cfg = _DECODER.decode(raw)
    except msgspec.ValidationError as exc:
        text = str(exc)
        if "unknown field" in text:
            raise HerdrConfigError("config_unknown_field", f"configuration: {text}") from None
        raise HerdrConfigError("config_invalid", f"configuration: {text}") from None
    except msgspec.DecodeError as exc:
        raise HerdrConfigError("config_invalid_json", f"configuration is not valid JSON: {exc}") from None

    executable = _check_executable(cfg.executable)
    if not _is_absolute(cfg.socket_path):
        raise HerdrConfigError("socket_path_not_absolute", "`$.socket_path` must be an absolute path")
    deadline = settings.herdr_deadline_ms_default if cfg.deadline_ms is UNSET else cfg.deadline_ms
    if not 1 <= deadline <= settings.herdr_deadline_ms_max:
        raise HerdrConfigError(
            "deadline_out_of_range",
            f"`$.deadline_ms` is {deadline}; it must be between 1 and {settings.herdr_deadline_ms_max}",
        )
    seen: set[tuple[str, str]] = set()
    for i, b in enumerate(cfg.bindings):
        where = f"`$.bindings[{i}]"
        if not (b.principal_key == "local" or (b.principal_key.startswith("http:") and len(b.principal_key) > 5)):
            raise HerdrConfigError(
                "principal_key_invalid", f"{where}.principal_key` must be `local` or `http:<principal-id>`"
            )
        ws = b.workspace_root
        if not _is_absolute(ws) or os.path.realpath(ws) != ws:
            raise HerdrConfigError(
                "workspace_root_not_canonical", f"{where}.workspace_root` must be a canonical absolute path"
            )
        key = (b.principal_key, ws)
        if key in seen:
            raise HerdrConfigError("duplicate_binding", f"{where}` repeats an earlier principal and workspace")
        seen.add(key)
        for alias, target in b.targets.items():
            if _ALIAS.fullmatch(alias) is None:
                raise HerdrConfigError(
                    "target_alias_invalid",
                    f"{where}.targets` has an alias that is not [A-Za-z0-9][A-Za-z0-9_.-]{{0,63}}",
                )
            if _TARGET_ID.fullmatch(target) is None:
                raise HerdrConfigError(
                    "target_id_invalid",
                    f"{where}.targets.{alias}` is not a herdr terminal id, pane id or agent name",
                )
    return HerdrConfig(
        executable=executable,
        socket_path=cfg.socket_path,
        deadline_ms=deadline,
        bindings=tuple(cfg.bindings),
    )


def _is_absolute(p: str) -> bool:
    return p.startswith("/") and "\x00" not in p


def _read_private_file(path: str, settings: Settings) -> bytes:
    limit = settings.herdr_config_max_bytes
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    except (OSError, ValueError) as exc:
        detail = exc.strerror if isinstance(exc, OSError) else "invalid path"
        raise HerdrConfigError("config_unreadable", f"configuration file cannot be opened: {detail}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise HerdrConfigError("config_not_regular_file", "configuration is not a regular file")
        if st.st_uid != os.geteuid():
            raise HerdrConfigError("config_wrong_owner", "configuration file is not owned by the daemon's user")
        mode = stat.S_IMODE(st.st_mode)
        if mode != 0o600:
            raise HerdrConfigError(
                "config_not_private", f"configuration file mode is {mode:04o}; it must be 0600"
            )
        if st.st_size > limit:
            raise HerdrConfigError("config_too_large", f"configuration file exceeds {limit} bytes")
        chunks: list[bytes] = []
        total = 0
        while total <= limit:  # read at most limit+1 bytes: the file may grow after fstat
            chunk = os.read(fd, limit + 1 - total)
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > limit:
            raise HerdrConfigError("config_too_large", f"configuration file exceeds {limit} bytes")
        return b"".join(chunks)
    except OSError as exc:
        raise HerdrConfigError("config_unreadable", f"configuration file cannot be read: {exc.strerror}") from None
    finally:
        os.close(fd)


def _check_executable(path: str) -> str:
    if not _is_absolute(path):
        raise HerdrConfigError("executable_not_absolute", "`$.executable` must be an absolute path")
    real = os.path.realpath(path)
    try:
        st = os.stat(real)
    except OSError:
        raise HerdrConfigError("executable_not_found", "`$.executable` does not exist") from None
    if not stat.S_ISREG(st.st_mode):
        raise HerdrConfigError("executable_not_regular_file", "`$.executable` is not a regular file")
    if not os.access(real, os.X_OK):
        raise HerdrConfigError("executable_not_executable", "`$.executable` is not executable")
    return real
