"""Exchange transcripts (seeds/003): every run's lifecycle, prompts, replies and tool calls
as append-only JSONL. `events` is the vocabulary; `providers` reads agents' own session logs
into agent-emitted events.
"""
