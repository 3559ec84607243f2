"""`vigil mcp`: the MCP server, a client of the daemon's socket (anyio, the official `mcp`
SDK; never trio, pyte or lmdb). `tools` (schemas from the protocol's Structs), `daemon`
(async connections to vigild), `server` (the SDK's low-level server), `render` (text
beside structured content), `http` (streamable HTTP behind bearer tokens), `tokens`."""
