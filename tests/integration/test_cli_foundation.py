"""The CLI as a user runs it: exit codes, one-line errors, JSON, and a lean import path."""

import json
import subprocess
import sys


def test_status_autostarts_and_reports(home):
    proc = home.cli("status")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("vigild 0.1.0 (protocol 1), pid ")
    assert f"socket     {home.socket}" in proc.stdout
    proc = home.cli("status", "--json")
    data = json.loads(proc.stdout)
    assert data["socket"] == str(home.socket) and data["version"] == "0.1.0"
    home.daemons.append(_Adopted(data["pid"]))


def test_unreachable_exits_3_with_one_line(home):
    proc = home.cli("--no-autostart", "status")
    assert proc.returncode == 3
    assert proc.stderr == f"vigil: vigild is not running (no one listens on {home.socket})\n"
    assert proc.stdout == ""


def test_bad_usage_exits_2(home):
    proc = home.cli("status", "--bogus")
    assert proc.returncode == 2
    assert "unrecognized arguments: --bogus" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_version(home):
    proc = home.cli("--version")
    assert proc.returncode == 0 and proc.stdout == "vigil 0.1.0\n"


def test_protocol_schema_is_json(home):
    proc = home.cli("protocol", "schema")
    schema = json.loads(proc.stdout)
    assert {"hello", "ping", "status"} <= set(schema["methods"])


def test_client_path_imports_no_trio_pyte_or_lmdb(home):
    home.start_daemon()
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "vigil.client.cli",
                           "status"], capture_output=True, text=True, env=home.env)
    assert proc.returncode == 0
    modules = {line.split("|")[-1].strip() for line in proc.stderr.splitlines() if "|" in line}
    assert {"vigil.client.connection", "vigil.client.autostart", "msgspec"} <= modules
    for forbidden in ("trio", "pyte", "lmdb", "vigil.daemon"):
        assert not any(m == forbidden or m.startswith(forbidden + ".") for m in modules), forbidden


def test_ls_and_status_import_only_what_they_need(home):
    """The CLI stays fast (issue 12): what only other commands use is not imported."""
    home.start_daemon()
    for command in ("ls", "status"):
        proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "vigil.client.cli",
                               command], capture_output=True, text=True, env=home.env)
        assert proc.returncode == 0, proc.stderr
        modules = {line.split("|")[-1].strip() for line in proc.stderr.splitlines() if "|" in line}
        for unneeded in ("shtab", "json", "subprocess", "shutil", "vigil.client.follow",
                         "vigil.client.plaintext", "vigil.client.attach",
                         "vigil.protocol.schema", "vigil.protocol.api.agent",
                         "vigil.protocol.api.shell", "vigil.protocol.api.terminal"):
            assert unneeded not in modules, (command, unneeded)


class _Adopted:
    """A daemon the CLI autostarted, stopped at cleanup like the ones the tests start."""

    def __init__(self, pid):
        self.pid = pid

    def stop(self):
        import os
        import signal

        try:
            os.kill(self.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
