"""vigil.daemon.history — the `Execution` service over the store: list, get, read, observe,
wait and explain (seeds/000, "Execution history"), shared by the `Execution` and the native
`Agent` methods."""
