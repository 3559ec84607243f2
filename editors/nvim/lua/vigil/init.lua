--- vigil in Neovim: list, watch, read, type into and start executions of the vigil daemon.
---
--- Every call goes over the daemon's socket (wire.lua) in the scope the CLI uses: the thread
--- named "cli" of the current workspace ($VIGIL_WORKSPACE, else the nearest directory with
--- a .git, else the current directory — client/scope.py), so `:VigilList` shows what
--- `vigil ls` shows in the same project.
---
--- The live screen (`:VigilScreen`) follows the execution's output stream (`follow`) and
--- re-reads the daemon's screen (`screen`) whenever output arrived; one read at a time,
--- repeated once if more output came meanwhile. `follow` rather than `attach`: an attached
--- viewer counts as a human at the terminal, and the daemon then leaves a program's
--- terminal queries to it, which a buffer cannot answer.

local wire = require("vigil.wire")
local uv = vim.uv or vim.loop

local M = {}

M.config = {
  --- Start the daemon with the CLI (`vigil status` starts it on demand) when nobody listens.
  autostart = true,
  --- The CLI used to autostart the daemon.
  cli = "vigil",
  --- How long one request may take.
  timeout_ms = 10000,
}

function M.setup(opts)
  M.config = vim.tbl_extend("force", M.config, opts or {})
end

local function notify(message, level)
  vim.notify(message, level or vim.log.levels.INFO)
end

local function fail(err)
  notify(wire.describe(err), vim.log.levels.ERROR)
  return nil
end

--- The workspace the CLI would pick from Neovim's current directory.
function M.workspace()
  local explicit = os.getenv("VIGIL_WORKSPACE")
  if explicit and explicit ~= "" then
    return uv.fs_realpath(explicit) or explicit
  end
  local here = uv.fs_realpath(vim.fn.getcwd()) or vim.fn.getcwd()
  local probe = here
  while true do
    if uv.fs_stat(probe .. "/.git") then
      return probe
    end
    local parent = vim.fn.fnamemodify(probe, ":h")
    if parent == probe then
      return here
    end
    probe = parent
  end
end

--- A connection with its scope: `{conn, thread_id, workspace_root}`, or nil (reported).
function M.session(opts)
  opts = opts or {}
  local conn, err = wire.connect({ timeout_ms = M.config.timeout_ms, on_event = opts.on_event,
                                   on_close = opts.on_close })
  if not conn and M.config.autostart and vim.fn.executable(M.config.cli) == 1 then
    vim.fn.system({ M.config.cli, "status" })
    conn, err = wire.connect({ timeout_ms = M.config.timeout_ms, on_event = opts.on_event,
                               on_close = opts.on_close })
  end
  if not conn then
    return fail(err)
  end
  local scope, ierr = conn:request("Initialize", { workspace_root = M.workspace(), thread_name = "cli" })
  if not scope then
    conn:close()
    return fail(ierr)
  end
  return { conn = conn, thread_id = scope.thread_id, workspace_root = scope.workspace_root }
end

local function scoped(session, params)
  params.thread_id = session.thread_id
  params.workspace_root = session.workspace_root
  return params
end

local function call(session, method, params)
  local result, err = session.conn:request(method, scoped(session, params))
  if not result then
    return fail(err)
  end
  return result
end

--- One call in a fresh session, closed after it.
local function once(method, params)
  local session = M.session()
  if not session then
    return nil
  end
  local result = call(session, method, params)
  session.conn:close()
  return result
end

local function resolve(session, prefix)
  local result, err = session.conn:request("resolve", scoped(session, { prefix = prefix }))
  if not result then
    if type(err) == "table" and err.code == "not_found" then
      -- As the CLI says it: which workspace was searched (client/scope.py).
      err = { code = err.code, message = ("no execution '%s' in %s"):format(prefix, session.workspace_root) }
    end
    return fail(err)
  end
  return result.execution_id
end

--- A session and the execution `prefix` names in it, or nil (reported, session closed).
local function open_execution(prefix)
  local session = M.session()
  if not session then
    return nil
  end
  local eid = resolve(session, prefix)
  if not eid then
    session.conn:close()
    return nil
  end
  return session, eid
end

--- A scratch buffer named `name` (reused if it exists), shown in the current window.
local function scratch(name, filetype)
  local buf = vim.fn.bufnr(name)
  if buf == -1 then
    buf = vim.api.nvim_create_buf(true, true)
    vim.api.nvim_buf_set_name(buf, name)
    vim.bo[buf].buftype = "nofile"
    vim.bo[buf].bufhidden = "hide"
    vim.bo[buf].swapfile = false
    vim.bo[buf].filetype = filetype
  end
  vim.api.nvim_set_current_buf(buf)
  return buf
end

local function set_lines(buf, lines)
  if not vim.api.nvim_buf_is_valid(buf) then
    return
  end
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
end

local function is_nil(value)
  return value == nil or value == vim.NIL
end

--- An execution's state as `vigil ls` words it.
function M.state(e)
  if e.status == "exited" then
    if not is_nil(e.signal) then
      return "killed (signal " .. e.signal .. ")"
    end
    return "exited " .. tostring(e.exit_code)
  elseif e.status == "unknown" then
    return "unknown"
  end
  if not is_nil(e.recognized_state) then
    return "running (" .. e.recognized_state .. ")"
  end
  return "running"
end

--- :VigilList — the workspace's executions, newest first, in a buffer
--- (<CR> on a line: its screen; L: its logs).
function M.list()
  local data = once("Execution", { action = { type = "list" } })
  if not data then
    return nil
  end
  local lines = { ("%-12s  %-24s  %s"):format("ID", "STATE", "COMMAND") }
  for _, e in ipairs(data.data.executions) do
    lines[#lines + 1] = ("%-12s  %-24s  %s"):format(e.execution_id:sub(1, 12), M.state(e), e.command)
  end
  local buf = scratch("vigil://list", "vigil")
  set_lines(buf, lines)
  local function id_here()
    return vim.api.nvim_get_current_line():match("^(%x+)")
  end
  vim.keymap.set("n", "<CR>", function()
    local id = id_here()
    if id then M.screen(id) end
  end, { buffer = buf, desc = "vigil: screen of this execution" })
  vim.keymap.set("n", "L", function()
    local id = id_here()
    if id then M.logs(id) end
  end, { buffer = buf, desc = "vigil: logs of this execution" })
  return buf
end

--- Terminal output as plain lines: CSI and OSC sequences and other escapes dropped, CR LF
--- as one line end, a lone CR as a return to the line's start (the last text wins).
function M.plain_lines(text)
  text = text:gsub("\27%][^\7\27]*\7", ""):gsub("\27%][^\27]*\27\\", "")
  text = text:gsub("\27%[[0-?]*[ -/]*[@-~]", ""):gsub("\27[()][0-9A-Za-z]", ""):gsub("\27[=>78cDEHMZ]", "")
  local lines = {}
  for line in (text .. "\n"):gmatch("(.-)\r*\n") do
    line = line:match("([^\r]*)$")
    lines[#lines + 1] = line
  end
  if lines[#lines] == "" then
    lines[#lines] = nil
  end
  return lines
end

--- :VigilLogs ID — the execution's retained output as plain text, in a buffer.
function M.logs(prefix)
  local session, eid = open_execution(prefix)
  if not session then
    return nil
  end
  local parts, cursor = {}, nil
  while true do
    local action = { type = "read", execution_id = eid, source = "output", page_bytes = 65536 }
    if cursor then
      action.cursor = cursor
    end
    local result = call(session, "Execution", { action = action })
    if not result then
      session.conn:close()
      return nil
    end
    local page = result.data.page
    if not is_nil(page.gap) then
      parts[#parts + 1] = ("\n[vigil: %d bytes of output not retained]\n"):format(page.gap.bytes_skipped)
    end
    parts[#parts + 1] = page.text
    cursor = page.next_cursor
    if not page.has_more or (page.text == "" and is_nil(page.gap)) then
      break
    end
  end
  session.conn:close()
  local buf = scratch("vigil://logs/" .. eid:sub(1, 12), "vigil")
  set_lines(buf, M.plain_lines(table.concat(parts)))
  return buf
end

--- :VigilScreen ID — the execution's screen in a buffer, kept current while it runs.
function M.screen(prefix)
  local session, eid = open_execution(prefix)
  if not session then
    return nil
  end
  local buf = scratch("vigil://screen/" .. eid:sub(1, 12), "vigil")
  local state = { reading = false, again = false, ended = false }

  local function show(result)
    local lines = vim.split(result.text, "\n", { plain = true })
    vim.b[buf].vigil_execution_id = eid
    vim.b[buf].vigil_live = result.live and not state.ended
    set_lines(buf, lines)
  end

  local function refresh()
    if state.reading then
      state.again = true
      return
    end
    if session.conn.closed then
      return
    end
    state.reading = true
    session.conn:request_async("screen", scoped(session, { execution_id = eid }), function(result, err)
      state.reading = false
      if result then
        show(result)
      elseif not state.ended then
        fail(err)
      end
      if state.again then
        state.again = false
        refresh()
      elseif state.ended then
        session.conn:close()
      end
    end)
  end

  local first = call(session, "screen", { execution_id = eid })
  if not first then
    session.conn:close()
    return nil
  end
  show(first)
  if not first.live then
    session.conn:close()
    return buf
  end
  local view = call(session, "Execution", { action = { type = "get", execution_id = eid } })
  local from = view and view.data.execution.output.total_bytes or 0
  -- The stream runs on a connection of its own: its events would otherwise queue behind,
  -- and be read between, this buffer's screen reads.
  local stream = M.session({
    on_event = function(event)
      if event.kind == "end" then
        state.ended = true
      end
      refresh()
    end,
  })
  if not stream then
    session.conn:close()
    return buf
  end
  local started = call(stream, "follow", { execution_id = eid, from_offset = from })
  if not started then
    stream.conn:close()
    session.conn:close()
    return buf
  end
  vim.api.nvim_create_autocmd({ "BufWipeout", "BufDelete" }, {
    buffer = buf,
    once = true,
    callback = function()
      stream.conn:close()
      session.conn:close()
    end,
  })
  return buf
end

--- :VigilSend[!] ID TEXT — type TEXT into the execution's terminal (with !: then Enter).
function M.send(prefix, text, enter)
  local session, eid = open_execution(prefix)
  if not session then
    return nil
  end
  local result = call(session, "input", { execution_id = eid, text = text,
                                          keys = enter and { "Enter" } or nil })
  session.conn:close()
  if result then
    notify(("vigil: sent %d bytes to %s"):format(result.bytes_sent, eid:sub(1, 12)))
  end
  return result
end

--- :VigilRun CMD — start CMD (a shell command line) in the current workspace.
function M.run(command)
  local result = once("run", { command = command })
  if not result then
    return nil
  end
  local id = result.execution.execution_id
  notify(("vigil: started %s: %s"):format(id:sub(1, 12), command))
  return id
end

return M
