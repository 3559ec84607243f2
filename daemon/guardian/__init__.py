"""vigil.daemon.guardian — one small process per runtime that holds the PTY and outlives vigild.

Modules (import them directly; this package imports nothing, so that the guardian process,
`python -m vigil.daemon.guardian`, loads only what it needs and never trio):

- `wire`      the guardian's own versioned protocol (msgspec tagged Structs), LaunchSpec
- `ring`      output ring addressed by absolute byte offsets
- `identity`  RuntimeIdentity helpers from /proc: boot id, start ticks, `identity_alive`
- `spawn`     fork + exec the child on a PTY as its controlling terminal
- `server`    the guardian's event loop (selectors, no trio)
- `records`   `<runtime_id>.exit` / `.tail` files: written by the guardian, read by the daemon
- `launch`    daemon side: `launch_guardian` (systemd scope or double fork, readiness pipe)
- `errors`    daemon-side exceptions
"""
