"""Herdr operator configuration: the Initialize hint and every rejection of the loader."""

from __future__ import annotations

import json
import os

import pytest

from vigil.daemon.agent.herdr_config import (
    CONFIG_ENV,
    HerdrBinding,
    HerdrConfigError,
    herdr_status_hint,
    load_herdr_config,
    load_herdr_config_from_environ,
)
from vigil.protocol.errors import ErrorCode
from vigil.daemon.settings import Settings

# --- the Initialize hint --------------------------------------------------------------------


def test_hint_without_variable():
    assert herdr_status_hint({}) == {
        "configuration_present": False,
        "availability": "disabled",
        "reason": "configuration_missing",
    }
    assert herdr_status_hint({CONFIG_ENV: ""}) == herdr_status_hint({})


def test_hint_with_variable_reads_nothing_and_reveals_no_path():
    # The path does not exist: the hint must not look at it, nor repeat it.
    hint = herdr_status_hint({CONFIG_ENV: "/nonexistent/secret/herdr.json"})
    assert hint == {
        "configuration_present": True,
        "availability": "unknown",
        "reason": "configuration_not_validated",
    }
    assert "secret" not in json.dumps(hint)


# --- the loader -----------------------------------------------------------------------------


@pytest.fixture
def exe(tmp_path):
    p = tmp_path / "bin" / "herdr"
    p.parent.mkdir()
    p.write_text("#!/bin/sh\nexit 0\n")
    p.chmod(0o755)
    return str(p)


@pytest.fixture
def ws(tmp_path):
    p = tmp_path / "ws"
    p.mkdir()
    return os.path.realpath(p)


def good(exe, ws, **over):
    cfg = {
        "executable": exe,
        "socket_path": "/run/user/1000/herdr.sock",
        "deadline_ms": 5000,
        "bindings": [{"principal_key": "local", "workspace_root": ws, "targets": {"writer": "term_1a2b"}}],
    }
    cfg.update(over)
    return cfg


def write(tmp_path, obj, mode=0o600, name="herdr.json"):
    p = tmp_path / name
    p.write_bytes(obj if isinstance(obj, bytes) else json.dumps(obj).encode())
    p.chmod(mode)
    return str(p)


def reject(path, reason, settings=Settings()):
    with pytest.raises(HerdrConfigError) as info:
        load_herdr_config(path, settings)
    err = info.value
    assert err.reason == reason
    assert err.code is ErrorCode.HERDR_DISABLED
    assert err.data == {"reason": reason, "operator_action_required": True, "input_sent": False}
    return err


def test_valid_config(tmp_path, exe, ws):
    cfg = load_herdr_config(write(tmp_path, good(exe, ws)))
    assert cfg.executable == exe
    assert cfg.socket_path == "/run/user/1000/herdr.sock"
    assert cfg.deadline_ms == 5000
    assert cfg.bindings == (HerdrBinding("local", ws, {"writer": "term_1a2b"}),)
    assert cfg.binding("local", ws) is cfg.bindings[0]
    assert cfg.binding("http:alice", ws) is None
    assert cfg.binding("local", ws + "/sub") is None


def test_deadline_defaults_to_settings(tmp_path, exe, ws):
    raw = good(exe, ws)
    del raw["deadline_ms"]
    assert load_herdr_config(write(tmp_path, raw)).deadline_ms == 5000
    assert load_herdr_config(write(tmp_path, raw), Settings(herdr_deadline_ms_default=1234)).deadline_ms == 1234


def test_executable_symlink_is_resolved(tmp_path, exe, ws):
    link = tmp_path / "herdr-link"
    link.symlink_to(exe)
    assert load_herdr_config(write(tmp_path, good(str(link), ws))).executable == exe


def test_from_environ(tmp_path, exe, ws):
    path = write(tmp_path, good(exe, ws))
    assert load_herdr_config_from_environ({CONFIG_ENV: path}).executable == exe
    err = pytest.raises(HerdrConfigError, load_herdr_config_from_environ, {}).value
    assert err.reason == "configuration_missing"


def test_missing_file(tmp_path):
    reject(str(tmp_path / "nope.json"), "config_unreadable")


def test_directory_is_not_a_regular_file(tmp_path):
    d = tmp_path / "dir"
    d.mkdir(mode=0o600)
    reject(str(d), "config_not_regular_file")


def test_fifo_is_not_a_regular_file(tmp_path):
    p = tmp_path / "fifo"
    os.mkfifo(p, 0o600)
    reject(str(p), "config_not_regular_file")


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o660, 0o400, 0o700, 0o4600])
def test_mode_must_be_exactly_0600(tmp_path, exe, ws, mode):
    err = reject(write(tmp_path, good(exe, ws), mode=mode), "config_not_private")
    assert f"{mode:04o}" in err.message


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")
def test_wrong_owner(tmp_path, exe, ws):
    path = write(tmp_path, good(exe, ws))
    os.chown(path, 65534, 65534)
    reject(path, "config_wrong_owner")


def test_too_large(tmp_path, exe, ws):
    raw = json.dumps(good(exe, ws)).encode()
    small = Settings(herdr_config_max_bytes=len(raw))
    load_herdr_config(write(tmp_path, raw), small)  # exactly at the limit is fine
    reject(write(tmp_path, raw + b" "), "config_too_large", small)
    reject(write(tmp_path, b" " * (256 * 1024 + 1)), "config_too_large")


@pytest.mark.parametrize("data", [b"{", b"not json", b"\xff\xfe", b""])
def test_invalid_json(tmp_path, data):
    reject(write(tmp_path, data), "config_invalid_json")


def test_unknown_field_top_level(tmp_path, exe, ws):
    err = reject(write(tmp_path, good(exe, ws, extra=1)), "config_unknown_field")
    assert "`extra`" in err.message


def test_unknown_field_in_binding(tmp_path, exe, ws):
    raw = good(exe, ws)
    raw["bindings"][0]["mode"] = "full"
    err = reject(write(tmp_path, raw), "config_unknown_field")
    assert "$.bindings[0]" in err.message


@pytest.mark.parametrize(
    "change",
    [
        {"deadline_ms": "5000"},
        {"executable": 3},
        {"bindings": {}},
        {"deadline_ms": None},
    ],
)
def test_wrong_types(tmp_path, exe, ws, change):
    reject(write(tmp_path, good(exe, ws, **change)), "config_invalid")


def test_missing_required_field(tmp_path, exe, ws):
    raw = good(exe, ws)
    del raw["socket_path"]
    err = reject(write(tmp_path, raw), "config_invalid")
    assert "socket_path" in err.message


def test_top_level_not_object(tmp_path):
    reject(write(tmp_path, [1, 2]), "config_invalid")


def test_executable_not_absolute(tmp_path, ws):
    reject(write(tmp_path, good("herdr", ws)), "executable_not_absolute")


def test_executable_missing(tmp_path, ws):
    reject(write(tmp_path, good(str(tmp_path / "nope"), ws)), "executable_not_found")


def test_executable_dangling_symlink(tmp_path, ws):
    link = tmp_path / "dangling"
    link.symlink_to(tmp_path / "gone")
    reject(write(tmp_path, good(str(link), ws)), "executable_not_found")


def test_executable_directory(tmp_path, ws):
    reject(write(tmp_path, good(str(tmp_path), ws)), "executable_not_regular_file")


def test_executable_without_x_bit(tmp_path, ws):
    p = tmp_path / "plain"
    p.write_text("x")
    p.chmod(0o644)
    reject(write(tmp_path, good(str(p), ws)), "executable_not_executable")


@pytest.mark.parametrize("sock", ["herdr.sock", "./herdr.sock", "", "/a\u0000b"])
def test_socket_path_must_be_absolute(tmp_path, exe, ws, sock):
    reject(write(tmp_path, good(exe, ws, socket_path=sock)), "socket_path_not_absolute")


@pytest.mark.parametrize("deadline", [0, -1, 30001, 10**9])
def test_deadline_range(tmp_path, exe, ws, deadline):
    reject(write(tmp_path, good(exe, ws, deadline_ms=deadline)), "deadline_out_of_range")


@pytest.mark.parametrize("deadline", [1, 30000])
def test_deadline_bounds_accepted(tmp_path, exe, ws, deadline):
    assert load_herdr_config(write(tmp_path, good(exe, ws, deadline_ms=deadline))).deadline_ms == deadline


@pytest.mark.parametrize("key", ["", "remote", "http:", "LOCAL", "http"])
def test_principal_key(tmp_path, exe, ws, key):
    raw = good(exe, ws)
    raw["bindings"][0]["principal_key"] = key
    reject(write(tmp_path, raw), "principal_key_invalid")


def test_http_principal_accepted(tmp_path, exe, ws):
    raw = good(exe, ws)
    raw["bindings"][0]["principal_key"] = "http:alice"
    assert load_herdr_config(write(tmp_path, raw)).binding("http:alice", ws) is not None


def test_workspace_must_be_canonical(tmp_path, exe, ws):
    link = tmp_path / "ws-link"
    link.symlink_to(ws)
    for bad in ["relative/ws", ws + "/", ws + "/.", ws + "/../ws", str(link), "//" + ws.lstrip("/")]:
        raw = good(exe, ws)
        raw["bindings"][0]["workspace_root"] = bad
        reject(write(tmp_path, raw), "workspace_root_not_canonical")


def test_duplicate_binding(tmp_path, exe, ws):
    raw = good(exe, ws)
    raw["bindings"].append({"principal_key": "local", "workspace_root": ws, "targets": {}})
    err = reject(write(tmp_path, raw), "duplicate_binding")
    assert "$.bindings[1]" in err.message


@pytest.mark.parametrize("alias", ["", "-w", "a b", "a/b", "x" * 65, "é"])
def test_alias_invalid(tmp_path, exe, ws, alias):
    raw = good(exe, ws)
    raw["bindings"][0]["targets"] = {alias: "term_1"}
    reject(write(tmp_path, raw), "target_alias_invalid")


@pytest.mark.parametrize("target", ["", "--session", "-x", "a b", "term_1\n", "x" * 129])
def test_target_id_invalid(tmp_path, exe, ws, target):
    raw = good(exe, ws)
    raw["bindings"][0]["targets"] = {"w": target}
    err = reject(write(tmp_path, raw), "target_id_invalid")
    assert target not in err.message or not target


def test_messages_never_contain_configured_paths(tmp_path, exe, ws):
    # Errors may reach an agent as herdr_disabled; they name fields, not paths.
    err = reject(write(tmp_path, good(str(tmp_path / "nope"), ws)), "executable_not_found")
    assert str(tmp_path) not in err.message
