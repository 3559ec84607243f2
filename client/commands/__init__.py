"""CLI commands, one module per command family; each has `add_parsers(sub)`."""
