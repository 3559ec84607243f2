"""The CLI's commands, one module per family. Each module exposes `add_parsers(sub)`, which
registers its commands on the top-level subparsers (cli.py lists the modules and groups the
commands in `vigil --help`). A command's handler is `args.handler(args) -> exit code`.

Modules import only what building their parsers needs (argparse, the protocol's small
tables); everything a command needs to *run* is imported inside its handler, so that
`vigil ls` pays for nothing but listing (README: the CLI stays fast).
"""

#: The command modules, in the order their commands are registered.
MODULES = ("run", "history", "terminal", "control", "export", "shell", "agent", "transcript",
           "trace", "top", "tmp", "mcp", "report", "daemon")
