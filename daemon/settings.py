"""Every tunable of the daemon, in one place, with the spec's default and its range.

`Settings` extends the wire limits (`vigil.protocol.settings.WireLimits`) with what only the
daemon reads: the guardian's buffers, the store and retention, the screen keeper, the
recognizers, prompts, the persistent shell, Herdr. Read once at start from `$VIGIL_CONFIG`
or `$XDG_CONFIG_HOME/vigil/config.toml` (TOML, unknown keys rejected so a typo fails
loudly). The origin of each default is written next to it: "spec" is ../shared/seeds/000,
"DESIGN" is DESIGN.md, "ours" a figure measured here.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

from typing import Annotated, Literal

import msgspec
from msgspec import Meta

from vigil.protocol.api.trace import RedactionMode, RetentionClass
from vigil.protocol.settings import KiB, MiB, WireLimits
from vigil.protocol.settings import float_setting as _f
from vigil.protocol.settings import int_setting as _r


#: Archive retention in days: from about a second (tests, a scratch workspace) to ten years.
_days = lambda doc: _f(0.00001, 3650, doc)  # noqa: E731


class ArchiveWorkspace(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, frozen=True):
    """The archive policy of one workspace (`[[archive_workspaces]]` in config.toml): the
    longest `root` that is the execution's workspace or one of its parents wins; a field
    left out takes the global `archive_*` setting."""

    root: str
    retention_class: RetentionClass | None = None
    redaction: RedactionMode | None = None
    completed_days: Annotated[float, Meta(ge=0.00001, le=3650)] | None = None
    failed_days: Annotated[float, Meta(ge=0.00001, le=3650)] | None = None


class Settings(WireLimits, kw_only=True, forbid_unknown_fields=True, frozen=True):
    """All tunables: the wire limits plus the daemon's own."""

    # --- the daemon process: its socket, its runtime dir, its memory ----------------------
    accept_capacity_pause_seconds: _f(
        0.001, 10, "pause before retrying an accept that failed for lack of descriptors or "
        "memory (EMFILE, ENFILE, ENOMEM, ENOBUFS; trio's serve_listeners: 0.1 s)"
    ) = 0.1
    runtime_dir_settle_seconds: _f(
        0.001, 10, "after the runtime dir, socket or lock file is deleted, wait this long "
        "without further deletions before recreating them, so an `rm -rf` can finish (ours: 0.1 s)"
    ) = 0.1
    gc_collect_seconds: _f(
        1, 86400, "the cycle collector runs on this timer instead of on allocation counts "
        "(daemon/process/memory.py says why; ours: 5 min)"
    ) = 300.0
    gc_thaw_seconds: _f(
        1, 7 * 86400, "the cycle collector freezes what survives each run; this often a run "
        "thaws everything first, reclaiming cycles among frozen objects (ours: 1 h)"
    ) = 3600.0
    gc_allocations_max: _r(
        10_000, 1 << 40, "...or as soon as this many more objects are alive than after its last "
        "run (a backstop against garbage cycles piling up; ours: 1,000,000)"
    ) = 1_000_000
    runtime_dir_retry_seconds: _f(
        0.1, 3600, "retry interval when the runtime dir cannot be recreated (ours: 5 s)"
    ) = 5.0

    # --- threads (Initialize) ----------------------------------------------------------------
    threads_per_principal_max: _r(
        1, 1_000_000, "threads one principal may hold; a new one past it is refused with "
        "limit_exceeded (ours: 1024)"
    ) = 1024
    thread_idle_expiry_seconds: _f(
        1, 10 * 365 * 86400.0, "a thread no call used for this long is forgotten and answered "
        "like one that never existed (ours: 30 days)"
    ) = 30 * 86400.0

    # --- guardian ---------------------------------------------------------------------------
    guardian_ring_bytes: _r(64 * KiB, 1024 * MiB, "guardian output ring (DESIGN: 4 MiB)") = 4 * MiB
    guardian_start_timeout_seconds: _f(0.1, 60, "time for a new guardian to say hello") = 10.0
    guardian_output_frame_bytes: _r(
        4 * KiB, 4 * MiB, "largest Output chunk a guardian sends (16 PTY reads of ~4 KiB, DESIGN)"
    ) = 64 * KiB
    guardian_send_buffer_bytes: _r(
        16 * KiB, 64 * MiB, "guardian stops pulling from its ring past this much unsent (ours: 256 KiB)"
    ) = 256 * KiB
    guardian_input_buffer_bytes: _r(
        4 * KiB, 64 * MiB, "input queued for a child that is not reading; more is refused (ours: 1 MiB)"
    ) = 1 * MiB
    guardian_drain_grace_seconds: _f(
        0, 60, "after the child exits, wait this long for EIO before a leftover process holding "
        "the PTY is ignored (ours: 2 s)"
    ) = 2.0
    guardian_exit_linger_seconds: _f(
        0, 3600, "an exited guardian waits this long for a (restarting) daemon to connect "
        "before it leaves only its records (ours: 10 s)"
    ) = 10.0
    guardian_ack_interval_seconds: _f(
        0, 60, "acknowledge durable output to a guardian at most this often; what is not yet "
        "acknowledged is what its exit tail holds (ours: 5 s)"
    ) = 5.0
    guardian_command_timeout_seconds: _f(0.01, 300, "how long a command (input, signal, resize) waits for its guardian's answer before it is reported unanswered (ours: 5 s)") = 5.0
    guardian_outbox_bytes: _r(64 * KiB, 1024 * MiB, "commands queued for a guardian that does not read them; more are refused as busy (ours: 4 MiB)") = 4 * MiB
    guardian_exit_wait_seconds: _f(0, 60, "after a guardian's connection ends, how long to wait for it to exit before calling it alive-but-silent") = 2.0
    terminal_rows: _r(2, 1000, "default PTY rows") = 50
    terminal_cols: _r(2, 1000, "default PTY columns") = 200
    terminal_type: str = "xterm-256color"

    # --- store and retention (spec: "Retention and recovery") -------------------------------
    retention_records_per_scope: _r(1, 1_000_000, "records kept per scoped session, not counting the persistent shell and its commands (spec: 128)") = 128
    retention_shell_commands_per_scope: _r(
        1, 1_000_000, "persistent-shell records (the shell and its commands) kept per scoped "
        "session, a pool of their own so they never push runs out (vigil, issue 12: the "
        "spec's 128 again)") = 128
    retention_output_bytes: _r(4 * KiB, 1024 * MiB, "output kept per execution (spec: 1 MiB)") = 1 * MiB
    retention_screen_bytes: _r(1 * KiB, 16 * MiB, "screen text kept per execution (spec: 64 KiB)") = 64 * KiB
    retention_scope_bytes: _r(64 * KiB, 64 * 1024 * MiB, "output+screen per session (spec: 16 MiB)") = 16 * MiB
    retention_terminal_seconds: _f(1, 365 * 86400, "exited/unknown kept from outcome (spec: 24 h)") = 24 * 3600.0
    store_initial_map_bytes: _r(1 * MiB, 1 << 40, "initial LMDB map size; grows on MapFullError") = 256 * MiB
    store_max_map_bytes: _r(1 * MiB, 1 << 44, "LMDB map size it will not grow beyond") = 64 * 1024 * MiB
    ingest_batch_seconds: _f(0, 1, "longest an ingested chunk waits to be committed (DESIGN: 10 ms)") = 0.010
    ingest_batch_bytes: _r(4 * KiB, 64 * MiB, "commit early once this much output is pending") = 1 * MiB
    ingest_retry_initial_seconds: _f(0.001, 60, "first pause before a failed commit is retried (ours: 0.1 s, doubling)") = 0.1
    ingest_retry_max_seconds: _f(0.01, 600, "longest pause between retries of a failing store (ours: 5 s)") = 5.0
    output_arrival_step_seconds: _f(
        0.0001, 10, "output arriving within this long of the last arrival mark shares it: the "
        "resolution of a recording's timings (ours: 10 ms, below a 60 Hz player's 16.7 ms "
        "frame; a mark per 4 KiB read would cost a flood 25,000 a second)") = 0.010
    output_chunk_bytes: _r(4 * KiB, 4 * MiB, "output is stored in chunks of about this size") = 64 * KiB
    change_log_entries: _r(1024, 10_000_000, "catalog change entries kept for wait cursors") = 100_000
    store_gaps_kept: _r(1, 65536, "guardian gaps listed per record; older ones are only counted (vigil)") = 64
    changes_page_entries: _r(1, 1_000_000, "change entries returned by one changes_since call (vigil)") = 1000

    # --- screen (DESIGN: Output path and the screen) ----------------------------------------
    screen_cpu_budget: _f(0.01, 1, "share of one core the screen keeper may use") = 0.25
    screen_quiet_cpu_budget: _f(0.01, 1, "share of one core a screen whose output has been idle for screen_idle_seconds may use to catch up and replay to exact, while it is the only screen with work (issue 17: exact within 1 s of quiet)") = 0.8
    screen_idle_seconds: _f(0.001, 10, "output idle this long: the flood is over or paused, the screen catches up at screen_quiet_cpu_budget (ours: a flood's reads come every few ms)") = 0.02
    screen_quiet_exact_seconds: _f(0.01, 10, "after this much quiet the screen is exact") = 0.2
    # Figures: pyte parses 0.27-0.87 MiB/s (DESIGN.md); the keeper's own parser feeding a pyte
    # screen 1.8-5 MiB/s (tests/bench/bench_screen.py), so 100 ms of CPU is ~200-500 KiB.
    screen_slice_seconds: _f(0.001, 0.1, "longest one screen parse slice holds the trio thread (5 ms)") = 0.005
    screen_backlog_seconds: _f(0.01, 10, "CPU time of unparsed output before the screen fast-forwards") = 0.1
    screen_pending_bytes: _r(64 * KiB, 256 * MiB, "raw output held for the screen; past it the oldest is skipped at once, on the ingest's time (ours: a buffer this size is copied in ~2-3 ms when it grows; the replay needs 1 MiB)") = 4 * MiB
    screen_replay_bytes: _r(0, 64 * MiB, "raw tail kept to re-render exactly after quiet: a flood that redraws its cells within it ends exact; once output is idle, half of it is parsed rather than skipped (ours: a 200x50 TUI redraws every cell in ~0.4 MB, parsed in ~0.2-0.4 s)") = 1 * MiB
    screen_escape_max_bytes: _r(256, 16 * MiB, "longest OSC/DCS string kept whole; longer ones are dropped") = 64 * KiB
    screen_reply_bytes: _r(64, 1 * MiB, "terminal query answers buffered for the child (newer ones dropped, counted)") = 4 * KiB
    screen_scrollback_lines: _r(0, 1_000_000, "rendered scrollback lines kept per execution, in the screen keeper and in the store (issue 17: 10,000)") = 10_000
    screen_scrollback_persist_lines: _r(1, 1_000_000, "scrollback lines handed to the store at once; the rest go with the next handover (ours: rendering one costs up to ~10 us on the trio thread, so 256 stay within ~3 ms)") = 256
    screen_scrollback_persist_seconds: _f(0.001, 60, "while output streams, scrollback lines are handed to the store at most this often (at quiet, on a read and at exit at once); ~2,500 lines/s persist, faster floods leave gaps (ours: 0.1 s keeps the rendering under ~3% of the trio thread)") = 0.1

    # --- recognizers ------------------------------------------------------------------------
    idle_debounce_confirmations: _r(1, 100, "observations before working→idle is reported") = 3
    idle_debounce_interval_seconds: _f(0, 10, "spacing of those observations") = 0.1
    recognize_argv_refresh_seconds: _f(
        0, 600, "the foreground process's argv is read again when its pid, name or start time "
        "changes, or after this long (an exec that keeps the name; ours: 10 s)"
    ) = 10.0
    recognize_reload_seconds: _f(
        0, 600, "live recognition looks for changed user manifests at most this often; explain "
        "and prompts always look (ours: 1 s)"
    ) = 1.0
    recognize_kernel: Annotated[Literal["auto", "daemon", "guardian", "off"], Meta(description=(
        "kernel evidence for recognition (issue 18): `auto` the daemon reads /proc, and asks the "
        "guardian for /proc/PID/syscall where the kernel refuses it (Yama ptrace_scope=1); "
        "`daemon` never asks; `guardian` always asks the guardian for syscalls; `off` screens "
        "only (ours: auto)"))] = "auto"
    recognize_kernel_interval_seconds: _f(
        0.01, 60, "a foreground the kernel is asked about is looked at again this soon after "
        "it changed or the screen did, then at doubling intervals (ours: 0.25 s, so a prompt "
        "is recognized well within 1 s of quiet)"
    ) = 0.25
    recognize_kernel_interval_max_seconds: _f(
        0.01, 600, "...up to this interval while nothing changes: a silent change (work after "
        "a password typed without echo, a SIGSTOP) shows within it (ours: 1 s, issue 18's "
        "bound for recognizing a program that went quiet)"
    ) = 1.0
    recognize_kernel_processes_max: _r(
        1, 100_000, "processes of a session walked per look; past it the evidence is "
        "unavailable (ours: 64)"
    ) = 64
    recognize_kernel_guardian_timeout_seconds: _f(
        0.01, 60, "how long a look waits for the guardian to read /proc/PID/syscall before "
        "that evidence is unavailable (ours: 1 s)"
    ) = 1.0

    # --- prompts and receipts (spec: "Submit a native prompt once") -------------------------
    receipts_per_generation: _r(1, 100000, "receipts per generation (spec: 64)") = 64
    prompt_enter_settle_seconds: _f(0, 5, "pause between text and Enter (Ink drops glued Enter)") = 0.15

    # --- execution logs and lifecycle controls (seeds/002) -----------------------------------
    execution_events_max: _r(
        16, 1_000_000, "entries of one execution's log (`Execution events`) kept with it; the "
        "oldest go first, counted (ours: 1000)"
    ) = 1000
    execution_events_pending_max: _r(
        64, 10_000_000, "log entries waiting to be written while the store is slow or "
        "failing; newer ones are dropped and counted (ours: 100,000)"
    ) = 100_000
    execution_events_page_default: _r(1, 10_000, "log entries one `events` page carries unless "
                                      "asked (ours: 100)") = 100
    execution_events_page_max: _r(1, 100_000, "most log entries one `events` page carries "
                                  "(ours: 1000)") = 1000
    cancel_grace_seconds: _f(
        0, 600, "`cancel` sends SIGTERM to the process group, then SIGKILL if the execution "
        "has not ended after this long (ours: 5 s, as systemd's stop is 90 s and docker's 10 s, "
        "for an interactive tool)"
    ) = 5.0

    # --- persistent shell (BashCommand) -----------------------------------------------------
    canonical_line_max_bytes: _r(64, 65536, "kernel canonical-mode line limit (4,095 chars)") = 4095
    viewer_buffer_bytes: _r(4 * KiB, 256 * MiB, "output queued for one attached viewer before it is dropped") = 4 * MiB
    follow_buffer_bytes: _r(
        64 * KiB, 1024 * MiB, "output queued for one `follow` stream (run --wait, logs -f) whose "
        "reader stalls; past it the oldest bytes become a reported gap (vigil: the guardian "
        "ring's 4 MiB, so a stall costs what the ring would)") = 4 * MiB
    follow_stall_seconds: _f(
        0, 60, "how long a runtime waits for a `follow` reader whose buffer is full (its "
        "guardian holding the child) before the reader counts as stalled and loses its oldest "
        "bytes instead (vigil: 2 s, longer than a loaded machine keeps a process waiting)") = 2.0
    follow_event_bytes: _r(
        4 * KiB, 8 * MiB, "most output bytes in one `follow` event (vigil: 1 MiB, well under "
        "the 16 MiB frame)") = 1 * MiB
    shell_start_wait_seconds: _f(0, 60, "input right after a command waits this long for bash to start it") = 2.0
    bash_output_max_bytes: _r(256, 1 << 20, "command output returned by BashCommand (its tail)") = 64 * KiB

    # --- views (what one record may cost in an answer) ---------------------------------------
    view_list_command_bytes: _r(64, 1 << 20, "command text and argv shown per record in a listing; longer ones are cut and marked (vigil: 2 KiB)") = 2 * KiB
    view_get_command_bytes: _r(1 * KiB, 8 * MiB, "command text and argv shown by get; longer ones are cut and marked (vigil: 64 KiB)") = 64 * KiB
    run_name_max_bytes: _r(1, 64 * KiB, "longest execution name accepted by run (vigil: 256)") = 256

    # --- conversation recovery --------------------------------------------------------------
    recovery_record_max_bytes: _r(256, 1 << 20, "recovery advice record (spec: 16 KiB)") = 16 * KiB

    # --- herdr (spec: "Operator configuration") ---------------------------------------------
    herdr_config_max_bytes: _r(1, 16 * MiB, "Herdr config file limit (spec: 256 KiB)") = 256 * KiB
    herdr_deadline_ms_default: _r(1, 30000, "Herdr deadline default (spec: 5000)") = 5000
    herdr_deadline_ms_max: _r(1, 30000, "largest deadline_ms a Herdr config may set (spec: 30000)") = 30000
    herdr_kill_grace_ms: _r(0, 5000, "Herdr CLI: SIGTERM→SIGKILL grace at the deadline (a CLI client "
                             "needs no cleanup; bounds how far an operation overruns: 200)") = 200
    herdr_wait_margin_ms: _r(0, 5000, "Herdr wait: time left for the CLI to report its own --timeout "
                              "before the operation deadline kills it (vigil: 250)") = 250
    herdr_stdout_max_bytes: _r(1, 16 * MiB, "Herdr stdout cap (spec: 64 KiB)") = 64 * KiB
    herdr_stderr_max_bytes: _r(1, 16 * MiB, "Herdr stderr cap (spec: 16 KiB)") = 16 * KiB
    herdr_list_targets_max: _r(1, 1024, "Herdr listed targets (spec: 32)") = 32
    herdr_list_bytes_max: _r(1, 16 * MiB, "Herdr listing size (spec: 64 KiB)") = 64 * KiB
    herdr_read_lines_default: _r(1, 100000, "Herdr read lines default (spec: 100)") = 100
    herdr_read_lines_max: _r(1, 100000, "Herdr read lines maximum (spec: 1000)") = 1000

    # --- usage telemetry (spec: "Workflow telemetry", "Usage metrics") ----------------------
    usage_log_enabled: Annotated[bool, Meta(description="write the usage log `<state>/usage.jsonl` (vigil: on)")] = True
    usage_log_max_bytes: _r(64 * KiB, 1 << 40, "usage log size before it is rotated (vigil: 16 MiB)") = 16 * MiB
    usage_log_files: _r(0, 100, "rotated usage logs kept beside the current one (vigil: 2)") = 2
    usage_log_flush_seconds: _f(0.01, 60, "longest a usage event waits in memory before it is written (vigil: 0.5 s)") = 0.5
    usage_log_buffer_events: _r(16, 10_000_000, "usage events held in memory while the disk is slow; newer ones are dropped and counted (vigil: 65,536, ~20 MiB at most)") = 65536

    # --- transcripts (seeds/003) ------------------------------------------------------------
    subscriber_buffer_events: _r(1, 1 << 20, "per-subscriber event buffer (seeds/003: 256)") = 256
    transcripts_enabled: bool = True
    transcript_retention_seconds: _f(60, 10 * 365 * 86400, "a transcript file is kept this long after its last write (ours: 14 days)") = 14 * 86400.0
    transcript_total_bytes_max: _r(1 * MiB, 1 << 44, "all transcript files together; past it the oldest are deleted first (ours: 1 GiB)") = 1024 * MiB
    transcript_prune_interval_seconds: _f(0, 86400, "retention runs this often, in a worker thread, for the daemon's life (ours: 60 s)") = 60.0
    transcript_open_files_max: _r(1, 65536, "transcript files kept open at once; the least recently written is closed first (ours: 64)") = 64
    transcript_agent_poll_seconds: _f(0.01, 60, "an agent's session log is looked for and read at least this often while it runs (ours: 0.5 s)") = 0.5
    transcript_discovery_seconds: _f(0, 86400, "how long an agent's session log is looked for after it is recognized (ours: 10 min)") = 600.0
    # Agent session logs (reference/agent-session-logs.md): lines of several MB hold base64
    # images and tool output, Codex `compacted` records reach tens of MB.
    transcript_line_max_bytes: _r(
        1 * KiB, 1024 * MiB, "longest agent session-log line read whole; a longer one is "
        "recorded cut (content not read, `cut_bytes` set) (ours: 4 MiB, above ordinary tool "
        "output, below the image and compaction lines of the reference page)"
    ) = 4 * MiB
    transcript_agent_hold_seconds: _f(
        0, 3600, "an agent reply spread over several log lines is held this long after the "
        "log last grew, to merge it by message id; a later line comes out `continued` "
        "(ours: 5 s; Claude Code writes a reply a block at a time)"
    ) = 5.0
    transcript_follow_read_bytes: _r(
        4 * KiB, 1024 * MiB, "most of an agent log one follow call reads; the caller calls "
        "again while it is behind (ours: 4 MiB, tens of ms of normalizing)"
    ) = 4 * MiB
    transcript_discovery_scan_bytes: _r(
        64 * KiB, 1024 * MiB, "bytes read from the head, and from the tail, of a candidate "
        "agent log to find its cwd and times (ours: 8 MiB, two maximal lines)"
    ) = 8 * MiB
    transcript_log_mtime_slack_seconds: _f(
        0, 60, "a candidate agent log modified this much before the execution started is "
        "still examined (file times come from the kernel's coarse clock; the lines' own "
        "timestamps are then compared exactly) (ours: 2 s)"
    ) = 2.0

    # --- managed temporary helpers (seeds/000; budgets are reported, never enforced) ----------
    temporary_budget_files: _r(0, 1 << 30, "helpers a thread's managed directory may hold before `temporary_over_budget` (ours: 256)") = 256
    temporary_budget_bytes: _r(0, 1 << 50, "bytes of helpers a thread's managed directory may hold before `temporary_over_budget` (ours: 64 MiB)") = 64 * MiB
    temporary_old_seconds: _f(0, 10 * 365 * 86400, "maintenance reports a helper not modified for this long as old, and deletes nothing (ours: 24 h, the spec's record retention)") = 86400.0
    temporary_siblings_reported_max: _r(0, 65536, "other managed directories of the principal that one list reports (ours: 32)") = 32
    temporary_released_remembered: _r(0, 1 << 20, "names a thread released that a retry answers `released` again, per thread, in memory (ours: 1024)") = 1024
    # --- turn archives (seeds/002) ----------------------------------------------------------
    archives_enabled: Annotated[bool, Meta(description="archive every agent turn under `<state>/archives/` (needs transcripts_enabled; vigil: on)")] = True
    archive_retention_class: Annotated[RetentionClass, Meta(description="retention class stamped on a new archive: `ephemeral` (the base TTL capped at archive_ephemeral_cap_seconds), `standard` (the base TTL) or `extended` (the base TTL × archive_extended_factor) (seeds/002: standard)")] = "standard"
    archive_redaction: Annotated[RedactionMode, Meta(description="redaction applied when an archive is written: `strict` (names, statuses, sizes, no payload bytes), `balanced` (payloads cut to archive_balanced_payload_chars, sensitive argument keys and bearer tokens / private keys masked) or `diagnostic` (payloads up to archive_diagnostic_payload_chars, nothing masked) (seeds/002: balanced)")] = "balanced"
    archive_completed_days: _days("base TTL of the archive of a turn that ended at the agent's input, in days from its end (ours: 7)") = 7.0
    archive_failed_days: _days("base TTL of the archive of a failed turn (the agent's process ended, it was interrupted), in days (ours: 30: a failure deserves to outlive a success, seeds/002)") = 30.0
    archive_workspaces: Annotated[list[ArchiveWorkspace], Meta(description="per-workspace archive policy: `[[archive_workspaces]]` tables with `root` and any of `retention_class`, `redaction`, `completed_days`, `failed_days` (the longest matching root wins; vigil: none)")] = []
    archive_ephemeral_cap_seconds: _f(1, 365 * 86400, "the longest an `ephemeral` archive lives, whatever the base TTL (seeds/002: 1 h)") = 3600.0
    archive_extended_factor: _f(1, 1000, "the base TTL multiplier of an `extended` archive (seeds/002: 12)") = 12.0
    archive_balanced_payload_chars: _r(0, 16 * MiB, "longest payload (text, arguments' JSON, result) a `balanced` archive keeps; the rest is cut and marked (ours: 2,048)") = 2048
    archive_diagnostic_payload_chars: _r(0, 64 * MiB, "longest payload a `diagnostic` archive keeps (ours: 64 KiB)") = 64 * KiB
    archive_cleanup_interval_seconds: _f(0.05, 86400, "expired archives (their stamped expiry passed) are removed this often (ours: 60 s)") = 60.0
    archive_commit_wait_seconds: _f(0, 30, "a prompt's answer waits at most this long, once the agent is back at its input, for its turn's archive to be committed, so the answer carries the final summary (ours: 1 s)") = 1.0
    trace_payload_chars: _r(16, 1 << 20, "longest payload one get_trace answer shows, so one large result does not crowd out every other step (ours: 4,000)") = 4000

    # --- UI projection (seeds/002: subscribe, trace_snapshot) --------------------------------
    projection_buffer_events: _r(1, 1 << 20, "per-subscriber buffer of `subscribe`; past it the newest events are dropped for that subscriber and counted (seeds/002 via issue 15: 256)") = 256
    projection_progress_seconds: _f(0.01, 60, "output activity of one execution is pushed at most this often (EXECUTION_PROGRESS; state changes go at once) (ours: 0.25 s, four frames a second for a dashboard)") = 0.25
    projection_snapshot_events: _r(1, 65536, "recent events held per execution for `trace_snapshot` (ours: 128)") = 128
    projection_executions_kept: _r(1, 1 << 20, "ended executions whose projection is held (the least recently changed is forgotten first); running ones are always held (ours: 512)") = 512
    projection_tail_bytes: _r(16, 65536, "output bytes kept per execution to find its last line (ours: 512)") = 512


def config_path() -> Path:
    explicit = os.environ.get("VIGIL_CONFIG")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "vigil" / "config.toml"


class SettingsError(ValueError):
    """The configuration file is unreadable or invalid; the message names file and key."""


def load_settings(path: Path | None = None) -> Settings:
    """Settings from the config file, or the defaults when there is none.

    Raises:
        SettingsError: the file exists but is not valid TOML or has a bad key or value.
    """
    path = path or config_path()
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return Settings()
    except OSError as exc:
        raise SettingsError(f"{path}: cannot read: {exc.strerror}") from None
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise SettingsError(f"{path}: {exc}") from None
    try:
        return msgspec.convert(data, Settings)
    except msgspec.ValidationError as exc:
        raise SettingsError(f"{path}: {exc}") from None


DEFAULTS = Settings()


def settings_markdown() -> str:
    """The table of every setting for docs/settings.md (a test keeps the file in step)."""
    import typing

    lines = ["# Settings", "",
             "Every limit and timeout of vigil, with its default and range. Set them in",
             "`$XDG_CONFIG_HOME/vigil/config.toml` (or the file named by `VIGIL_CONFIG`); unknown",
             "keys are rejected. Generated from `daemon/settings.py`.", "",
             "| setting | default | range | meaning |", "|---|---|---|---|"]
    hints = typing.get_type_hints(Settings, include_extras=True)
    for name in Settings.__struct_fields__:
        default = getattr(DEFAULTS, name)
        hint = hints[name]
        lo = hi = doc = ""
        for meta in getattr(hint, "__metadata__", ()):
            if isinstance(meta, Meta):
                lo = "" if meta.ge is None else meta.ge
                hi = "" if meta.le is None else meta.le
                doc = meta.description or ""
        rng = f"{lo} – {hi}" if lo != "" or hi != "" else ""
        lines.append(f"| `{name}` | `{default}` | {rng} | {doc} |")
    return "\n".join(lines) + "\n"
