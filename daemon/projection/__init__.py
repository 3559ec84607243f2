"""The UI projection (seeds/002): a transient, bounded live view of executions for
dashboards — `hub` folds lifecycle and transcript events into per-execution views and
events, `subscriber` is one `subscribe` call's bounded queue."""
