"""Turn archives (seeds/002, "The durable execution archive"): one per agent turn, built from
the turn's transcript events, redacted when written, immutable once committed.

- `builder`: the recorder's events of a turn → `<state>/archives/ab/cd/<ref>.open`, committed
  on the turn's end; `CatalogWriter` puts the catalog entries (store/archives.py) in order.
- `policy`: retention classes and the stamp; `redact`: the three redaction modes.
- `format`: the file's lines; `files`: paths from the ref alone, create/append/commit/read.
- `pairing`: replay validation (`replay_blocked`) and the turn summary.
- `query`: the modes `summary`, `tool_calls`, `detail`, bounded; `service`: `get_trace`.
- `cleanup`: removes archives whose stamped expiry passed.
"""
