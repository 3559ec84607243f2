--- The daemon's wire, in Lua: a Unix socket connection speaking vigil.protocol.
---
--- Exactly what protocol/frames.py, codec.py and envelope.py define, nothing of our own:
---   * a frame is a u32 big-endian body length, then the body; a body longer than the
---     agreed maximum (16 MiB, `max_frame_bytes` in the hello answer) ends the connection;
---   * bodies are msgpack (`vim.mpack`); the first frame is `hello` with the protocol range
---     this plugin speaks and `encoding = "msgpack"`;
---   * requests are `{id, method, params}`, answered by `{id, result}` or
---     `{id, error = {code, message, data}}`; the daemon pushes `{method = "event", params}`
---     on a connection whose call streams (`follow`, `attach`).
--- msgpack nil decodes as `vim.NIL`; `bin` (bytes) decodes as a Lua string.
---
--- Reads run in libuv callbacks (no editor API there): answers and events are handed to the
--- main loop with `vim.schedule`. `request` waits with `vim.wait`, so call it from the main
--- loop (a command), never from a callback.

local uv = vim.uv or vim.loop -- vim.uv from Neovim 0.10; vim.loop before
local mpack = vim.mpack

local M = {}

--- The wire-protocol range this plugin speaks (protocol/version.py: PROTOCOL_MIN..MAX).
M.PROTOCOL = { 1, 1 }
--- Largest body accepted until the hello answer says otherwise (frames.py).
M.DEFAULT_MAX_FRAME_BYTES = 16 * 1024 * 1024

--- The daemon's socket, as protocol/paths.py finds it: $VIGIL_SOCKET, else
--- $XDG_RUNTIME_DIR/vigil/vigil.sock, else /tmp/vigil-$UID/vigil.sock.
function M.socket_path()
  local explicit = os.getenv("VIGIL_SOCKET")
  if explicit and explicit ~= "" then
    return vim.fn.fnamemodify(explicit, ":p")
  end
  local xdg = os.getenv("XDG_RUNTIME_DIR")
  if xdg and xdg ~= "" and vim.fn.isdirectory(xdg) == 1 then
    return xdg .. "/vigil/vigil.sock"
  end
  return "/tmp/vigil-" .. uv.getuid() .. "/vigil.sock"
end

local function u32be(n)
  return string.char(
    math.floor(n / 16777216) % 256,
    math.floor(n / 65536) % 256,
    math.floor(n / 256) % 256,
    n % 256
  )
end

local function read_u32be(s, at)
  local a, b, c, d = s:byte(at, at + 3)
  return ((a * 256 + b) * 256 + c) * 256 + d
end

local Conn = {}
Conn.__index = Conn

--- Open a connection and complete the hello. Returns the connection, or nil and a message.
---@param opts table|nil {path = socket, timeout_ms = 10000, on_event = fn(params), on_close = fn(reason)}
function M.connect(opts)
  opts = opts or {}
  local path = opts.path or M.socket_path()
  local pipe = uv.new_pipe(false)
  local done, failure = false, nil
  pipe:connect(path, function(err)
    failure = err
    done = true
  end)
  local timeout = opts.timeout_ms or 10000
  if not vim.wait(timeout, function() return done end, 5) then
    pipe:close()
    return nil, "vigil: no answer from " .. path
  end
  if failure then
    pipe:close()
    return nil, "vigil: cannot connect to " .. path .. ": " .. failure
  end
  local conn = setmetatable({
    pipe = pipe,
    buf = "",
    next_id = 1,
    waiting = {},
    answers = {},
    callbacks = {},
    on_event = opts.on_event,
    on_close = opts.on_close,
    closed = nil,
    timeout_ms = timeout,
    max_frame_bytes = M.DEFAULT_MAX_FRAME_BYTES,
  }, Conn)
  pipe:read_start(function(err, chunk)
    if err then
      conn:_close("read failed: " .. err)
    elseif chunk == nil then
      conn:_close("the daemon closed the connection")
    else
      conn:_receive(chunk)
    end
  end)
  local welcome, err = conn:request("hello", {
    protocol = M.PROTOCOL,
    encoding = "msgpack",
    client = "vigil.nvim",
  })
  if not welcome then
    conn:close()
    return nil, err
  end
  conn.welcome = welcome
  conn.max_frame_bytes = welcome.max_frame_bytes or conn.max_frame_bytes
  return conn
end

function Conn:_close(reason)
  if self.closed then
    return
  end
  self.closed = reason
  if not self.pipe:is_closing() then
    self.pipe:close()
  end
  local callbacks = self.callbacks
  self.callbacks = {}
  for _, callback in pairs(callbacks) do
    vim.schedule(function() callback(nil, { code = "unavailable", message = reason }) end)
  end
  if self.on_close then
    vim.schedule(function() self.on_close(reason) end)
  end
end

function Conn:close()
  self:_close("closed")
end

function Conn:_receive(chunk)
  self.buf = self.buf .. chunk
  while #self.buf >= 4 do
    local length = read_u32be(self.buf, 1)
    if length > self.max_frame_bytes then
      self:_close(("frame of %d bytes exceeds the maximum of %d bytes"):format(length, self.max_frame_bytes))
      return
    end
    if #self.buf < 4 + length then
      return
    end
    local body = self.buf:sub(5, 4 + length)
    self.buf = self.buf:sub(5 + length)
    local ok, msg = pcall(mpack.decode, body)
    if not ok or type(msg) ~= "table" then
      self:_close("undecodable msgpack body from the daemon")
      return
    end
    self:_dispatch(msg)
  end
end

function Conn:_dispatch(msg)
  if msg.method == "event" then
    if self.on_event then
      local params = msg.params
      vim.schedule(function() self.on_event(params) end)
    end
    return
  end
  local id = msg.id
  local err = msg.error
  if err == vim.NIL then
    err = nil
  end
  local callback = self.callbacks[id]
  if callback then
    self.callbacks[id] = nil
    vim.schedule(function() callback(err == nil and msg.result or nil, err) end)
  elseif self.waiting[id] then
    self.answers[id] = { result = msg.result, error = err }
  end
end

function Conn:_send(method, params)
  if self.closed then
    return nil, "vigil: connection closed: " .. self.closed
  end
  local id = self.next_id
  self.next_id = id + 1
  -- An empty Lua table encodes as a msgpack array: params are always a map.
  if next(params) == nil then
    params = vim.empty_dict()
  end
  local body = mpack.encode({ id = id, method = method, params = params })
  if #body > self.max_frame_bytes then
    return nil, ("vigil: request of %d bytes exceeds the maximum of %d bytes"):format(#body, self.max_frame_bytes)
  end
  self.pipe:write(u32be(#body) .. body)
  return id
end

--- Send a request and return (result) or (nil, error) once answered; errors are
--- `{code, message}` tables from the daemon, or a message string for a local failure.
function Conn:request(method, params, timeout_ms)
  local id, failure = self:_send(method, params or {})
  if not id then
    return nil, failure
  end
  self.waiting[id] = true
  local answered = vim.wait(timeout_ms or self.timeout_ms, function()
    return self.answers[id] ~= nil or self.closed ~= nil
  end, 5)
  self.waiting[id] = nil
  local answer = self.answers[id]
  self.answers[id] = nil
  if answer == nil then
    if not answered then
      return nil, "vigil: no answer to " .. method
    end
    return nil, "vigil: connection closed: " .. self.closed
  end
  if answer.error then
    return nil, answer.error
  end
  return answer.result
end

--- Send a request and call `callback(result, err)` on the main loop when answered.
function Conn:request_async(method, params, callback)
  local id, failure = self:_send(method, params or {})
  if not id then
    vim.schedule(function() callback(nil, failure) end)
    return
  end
  self.callbacks[id] = callback
end

--- An error (a daemon error table or a message) as one line.
function M.describe(err)
  if type(err) == "table" then
    return ("vigil: %s: %s"):format(err.code or "error", err.message or "?")
  end
  return tostring(err)
end

return M
