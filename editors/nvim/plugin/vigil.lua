-- vigil's commands (lua/vigil/init.lua does the work; this file only declares them).
if vim.g.loaded_vigil then
  return
end
vim.g.loaded_vigil = true

local function vigil()
  return require("vigil")
end

local command = vim.api.nvim_create_user_command

command("VigilList", function() vigil().list() end,
  { nargs = 0, desc = "vigil: executions of this workspace and their states" })

command("VigilScreen", function(opts) vigil().screen(opts.args) end,
  { nargs = 1, desc = "vigil: an execution's live screen (ID or unique prefix)" })

command("VigilLogs", function(opts) vigil().logs(opts.args) end,
  { nargs = 1, desc = "vigil: an execution's retained output as text" })

command("VigilSend", function(opts)
  local id, text = opts.args:match("^(%S+)%s(.*)$")
  if not id then
    vim.notify("vigil: usage: :VigilSend[!] ID TEXT (with !: press Enter after TEXT)",
      vim.log.levels.ERROR)
    return
  end
  vigil().send(id, text, opts.bang)
end, { nargs = "+", bang = true, desc = "vigil: type TEXT into an execution (!: then Enter)" })

command("VigilRun", function(opts) vigil().run(opts.args) end,
  { nargs = "+", complete = "shellcmd", desc = "vigil: run a command in this workspace" })
