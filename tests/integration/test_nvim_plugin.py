"""The Neovim plugin (editors/nvim) in a headless `nvim` against a real daemon: every command,
bad input first. nvim is installed by .ci/run; under CI a missing nvim fails the test
rather than skipping it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.executions import Session, workspace  # noqa: F401  (fixture)

PLUGIN = Path(__file__).resolve().parents[2] / "editors" / "nvim"

#: Runs in nvim: the commands as a user types them, what they left in buffers and
#: notifications written to $VIGIL_TEST_OUT as JSON; any Lua error is written there too.
SCRIPT = r"""
local out, notes = {}, {}
vim.notify = function(msg, level) notes[#notes + 1] = { msg = msg, level = level } end
local function lines(buf) return vim.api.nvim_buf_get_lines(buf or 0, 0, -1, false) end
local ok, err = pcall(function()
  local ids = vim.fn.json_decode(os.getenv("VIGIL_TEST_IDS"))
  -- Bad input first: an id that names nothing, a send without text.
  vim.cmd("VigilScreen 0000000000000000")
  vim.cmd("VigilSend " .. ids.cat)
  out.bad_notes = notes
  notes = {}

  vim.cmd("VigilList")
  out.list_name = vim.api.nvim_buf_get_name(0)
  out.list = lines()

  vim.cmd("VigilLogs " .. ids.done:sub(1, 8))
  out.logs_name = vim.api.nvim_buf_get_name(0)
  out.logs = lines()

  vim.cmd("VigilScreen " .. ids.cat)
  local screen = vim.api.nvim_get_current_buf()
  out.screen_name = vim.api.nvim_buf_get_name(screen)
  out.screen_before = lines(screen)
  vim.cmd("VigilSend! " .. ids.cat .. " hello from nvim")
  -- cat echoes the typed line and prints it again: two copies once the screen is live.
  out.live = vim.wait(20000, function()
    local _, n = table.concat(lines(screen), "\n"):gsub("hello from nvim", "")
    return n >= 2
  end, 20)
  out.screen = lines(screen)
  out.live_flag = vim.b[screen].vigil_live

  vim.cmd("VigilRun echo ran-from-nvim")
  out.notes = notes
end)
if not ok then out.error = tostring(err) end
vim.fn.writefile({ vim.fn.json_encode(out) }, os.getenv("VIGIL_TEST_OUT"))
vim.cmd("qa!")
"""


def nvim() -> str:
    path = shutil.which("nvim")
    if path is None:
        if os.environ.get("CI"):
            pytest.fail("nvim is not installed: .ci/run installs it (apt-get install neovim)")
        pytest.skip("nvim is not installed (.ci/run installs it)")
    return path


def test_every_command_in_headless_nvim(home, daemon, workspace):
    exe = nvim()
    (workspace / ".git").mkdir()  # the plugin finds the workspace as the CLI does
    sub = workspace / "src"
    sub.mkdir()
    s = Session(home, workspace)
    try:
        done = s.run(command="printf 'first line\\n\\033[32mgreen\\033[0m line\\n'")["execution_id"]
        s.wait_exit(done)
        cat = s.run(argv=["cat"])["execution_id"]
        script = home.root / "commands.lua"
        script.write_text(SCRIPT)
        result = home.root / "result.json"
        env = dict(home.env, VIGIL_TEST_OUT=str(result),
                   VIGIL_TEST_IDS=json.dumps({"done": done, "cat": cat}))
        proc = subprocess.run(
            [exe, "--headless", "--clean", "-i", "NONE", "--cmd", f"set rtp^={PLUGIN}",
             "-c", f"luafile {script}"],
            cwd=sub, env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
        assert result.exists(), f"nvim wrote no result (exit {proc.returncode}): {proc.stderr}"
        out = json.loads(result.read_text())
        assert "error" not in out, out["error"]

        assert [n["msg"] for n in out["bad_notes"]] == [
            f"vigil: not_found: no execution '0000000000000000' in {workspace}",
            "vigil: usage: :VigilSend[!] ID TEXT (with !: press Enter after TEXT)",
        ]
        assert all(n["level"] == 4 for n in out["bad_notes"])  # vim.log.levels.ERROR

        assert out["list_name"] == "vigil://list"
        assert out["list"][0].split() == ["ID", "STATE", "COMMAND"]
        rows = {line[:12]: line for line in out["list"][1:]}
        assert set(rows) == {done[:12], cat[:12]}
        assert rows[done[:12]].split()[1:3] == ["exited", "0"]
        assert rows[cat[:12]].split()[1].startswith("running")
        assert rows[cat[:12]].endswith("  cat")

        assert out["logs_name"] == f"vigil://logs/{done[:12]}"
        assert out["logs"] == ["first line", "green line"]

        assert out["screen_name"] == f"vigil://screen/{cat[:12]}"
        assert out["live"] is True and out["live_flag"] is True
        assert out["screen"][:2] == ["hello from nvim", "hello from nvim"]

        started = out["notes"][-1]["msg"]
        assert started.startswith("vigil: started ") and started.endswith(": echo ran-from-nvim")
        listed = {e["command"]: e for e in s.list()["executions"]}
        ran = listed["echo ran-from-nvim"]
        assert started == f"vigil: started {ran['execution_id'][:12]}: echo ran-from-nvim"
        assert ran["cwd"] == str(workspace)
        assert s.follow(ran["execution_id"]).record["exit_code"] == 0
        text = "".join(p["text"] for p in s.follow(ran["execution_id"]).pages)
        assert text == "ran-from-nvim\r\n"
        sent = [n["msg"] for n in out["notes"] if n["msg"].startswith("vigil: sent")]
        assert sent == [f"vigil: sent 16 bytes to {cat[:12]}"]
    finally:
        s.close()
