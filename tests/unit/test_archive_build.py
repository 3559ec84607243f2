"""Building and reading turn archives without a daemon: redaction, the policy stamp, pairing,
the builder over a real recorder (and its resumption after a crash), the bounded rendering,
and refs refused before anything is looked up."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest
import trio

from vigil.daemon.archive import policy
from vigil.daemon.archive.builder import ArchiveBuilder, CatalogWriter
from vigil.daemon.archive.files import ArchiveFiles
from vigil.daemon.archive.format import parse
from vigil.daemon.archive.pairing import Shape, blocked_steps
from vigil.daemon.archive.query import render
from vigil.daemon.archive.redact import Redactor
from vigil.daemon.archive.service import TraceService
from vigil.daemon.settings import ArchiveWorkspace, Settings
from vigil.daemon.store import ExecutionRecord, Store, StoreError
from vigil.daemon.transcript.fanout import FanOut
from vigil.daemon.transcript.files import TranscriptFiles
from vigil.daemon.transcript.recorder import Recorder
from vigil.protocol.api.agent import AgentParams
from vigil.protocol.api.trace import parse_archive_ref, parse_trace_key
from vigil.protocol.errors import VigilError
from vigil.protocol.transcript import (
    AGENT_EMITTED,
    MessageAssistantPayload,
    StepCompletedPayload,
    StepStartedPayload,
    TextBlock,
    ToolResultBlock,
    ToolResultPayload,
    ToolUseBlock,
)

EID = "e" * 32
SCOPE = "local\x00t1\x00/w"


# --- redaction ---------------------------------------------------------------------------------


ARGS = {"command": "curl -H 'Authorization: Bearer abcdefgh12345678'", "Api-Key": 7,
        "nested": [{"client_secret": {"a": 1}, "note": "the bearer of news"}],
        "cookie_jar": "c"}


def test_strict_keeps_names_statuses_and_sizes_only():
    r = Redactor("strict", 100)
    assert (r.text("héllo").text, r.text("héllo").bytes) == (None, 6)
    kept = r.arguments(ARGS)
    assert (kept.value, kept.bytes, kept.masked) == (None, len(json.dumps(
        ARGS, separators=(",", ":")).encode()), 0)


def test_balanced_masks_sensitive_keys_and_token_like_values_then_cuts():
    r = Redactor("balanced", 1000)
    kept = r.arguments(ARGS)
    assert kept.value == {
        "command": "curl -H 'Authorization: Bearer [masked]'", "Api-Key": "[masked]",
        "nested": [{"client_secret": "[masked]", "note": "the bearer of news"}],
        "cookie_jar": "[masked]"}
    assert (kept.masked, kept.truncated) == (4, False)
    key = "x -----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn\n-----END OPENSSH PRIVATE KEY----- y"
    assert r.text(key).text == "x [masked private key] y"
    # A key cut by the source (no END line) is masked to the end, never half shown.
    assert r.text("-----BEGIN PRIVATE KEY-----\nMIIE").text == "[masked private key]"
    cut = Redactor("balanced", 10).text("Bearer abcdefgh12345678 and more text")
    assert (cut.text, cut.truncated, cut.masked, cut.bytes) == ("Bearer [ma", True, 1, 37)
    small = Redactor("balanced", 20).arguments(ARGS)
    assert (small.value, small.truncated) == ('{"command":"curl -H ', True)


def test_diagnostic_keeps_payloads_at_the_limit_unmasked():
    r = Redactor("diagnostic", 1000)
    assert r.arguments(ARGS).value == ARGS
    assert r.text("Bearer abcdefgh12345678").text == "Bearer abcdefgh12345678"
    assert Redactor("diagnostic", 3).text("abcdef").text == "abc"


# --- policy ------------------------------------------------------------------------------------


def test_the_stamp_follows_the_longest_matching_workspace_and_the_class():
    s = Settings(archive_completed_days=2, archive_failed_days=4, archive_workspaces=[
        ArchiveWorkspace(root="/w", retention_class="extended", redaction="strict"),
        ArchiveWorkspace(root="/w/deep", retention_class="ephemeral", completed_days=0.01)])
    assert policy.stamp_for(s, "/elsewhere").ttl_completed_seconds == 2 * 86400
    w = policy.stamp_for(s, "/w/sub")
    assert (w.retention_class, w.redaction, w.ttl_completed_seconds, w.ttl_failed_seconds,
            w.payload_chars) == ("extended", "strict", 24 * 86400, 48 * 86400, 0)
    deep = policy.stamp_for(s, "/w/deep")
    # The longest root alone decides; what it leaves out is the global setting's.
    assert (deep.redaction, deep.ttl_completed_seconds, deep.ttl_failed_seconds) == \
        ("balanced", 864.0, 3600.0)  # ephemeral: capped at 1 h
    assert policy.stamp_for(s, "/wx").retention_class == "standard"  # not a parent of /wx
    assert policy.expiry(deep, 1000, "end_turn") == 1000 + 864000
    assert policy.expiry(deep, 1000, "exited") == 1000 + 3600000


# --- pairing -----------------------------------------------------------------------------------


def test_pairing_is_checked_for_every_step():
    shapes = [Shape(1, 1, [("a", "T")], [("a", "ok")]),
              Shape(2, 2, [("a", "T"), ("b", "T")], [("b", "ok"), ("b", "ok")]),
              Shape(3, 3, [("c", "T")], [("z", "ok")]),
              Shape(4, 4, [], [])]
    assert blocked_steps(shapes, [], complete=False) == {
        1: ["duplicate_call_id"], 2: ["duplicate_call_id", "second_result"],
        3: ["result_without_call"]}
    assert blocked_steps(shapes, ["c"], complete=True) == {
        1: ["duplicate_call_id"], 2: ["duplicate_call_id", "second_result"],
        3: ["result_without_call"]}
    assert blocked_steps(shapes, [], complete=True)[3] == \
        ["result_without_call", "call_without_result"]


# --- the builder over a real recorder ----------------------------------------------------------


class Clock:
    now = 1_700_000_000_000

    def __call__(self) -> int:
        return self.now


def record() -> ExecutionRecord:
    return ExecutionRecord(execution_id=EID, scope=SCOPE, thread_id="t1", workspace_root="/w",
                           command="claude", cwd="/w", started_unix_ms=1)


class World:
    """A store, archive files, a builder and a recorder, as the daemon wires them."""

    def __init__(self, root: Path, settings: Settings, store: Store):
        self.root, self.settings, self.store = root, settings, store
        self.files = ArchiveFiles(root / "archives")
        self.writer = CatalogWriter(store, self.files, settings)
        self.builder = ArchiveBuilder(self.files, self.writer, settings, lambda eid: record(),
                                      store.clock)
        self.recorder = Recorder(TranscriptFiles(root / "t", settings), FanOut(16), settings,
                                 archives=self.builder)
        self.service = TraceService(store, self.files, self.builder, self.writer, settings)

    def reply(self, *blocks, message_id=None) -> None:
        self.recorder.emit(EID, "message.assistant", MessageAssistantPayload(
            fidelity=AGENT_EMITTED, blocks=list(blocks), message_id=message_id), path="turn.1")

    def result(self, tool_id: str, content: str, is_error=None) -> None:
        self.recorder.emit(EID, "tool.result", ToolResultPayload(fidelity=AGENT_EMITTED, blocks=[
            ToolResultBlock(tool_id=tool_id, tool_content=content, fidelity=AGENT_EMITTED,
                            is_error=is_error)]), path="turn.1")

    def applied(self) -> None:
        """Apply what the builder queued (what the writer task does in a worker thread)."""
        self.writer._apply(self.writer._queue)
        self.writer._queue.clear()


def use(tool_id: str, args=None) -> ToolUseBlock:
    return ToolUseBlock(tool_name="Bash", tool_id=tool_id, tool_input=args or {"command": "ls"},
                        fidelity=AGENT_EMITTED)


@pytest.fixture
def store(tmp_path):
    with Store.open(tmp_path / "store", Settings(), Clock()) as s:
        yield s


def test_a_turn_left_open_by_a_crash_continues_in_the_same_file(tmp_path, store):
    s = Settings()
    w = World(tmp_path, s, store)
    w.recorder.prompt_delivered(EID, "go")
    ref = w.builder.current(EID).ref
    w.reply(use("t1"), message_id="m1")
    w.result("t1", "one")
    w.applied()
    # The daemon dies: nothing of the builder survives but its file and the catalog.
    w.recorder.close()
    w2 = World(tmp_path, s, store)
    w2.builder.resume(store.uncommitted_archives())
    w2.reply(use("t2"), message_id="m2")
    w2.result("t2", "two", is_error=True)
    w2.recorder.state_reported(EID, "awaiting_input")
    w2.applied()
    path = w2.files.path(ref)
    archive = parse(path.read_bytes())
    assert not Path(f"{path}.open").exists()
    assert [json.loads(x)["line"] for x in path.read_text().splitlines()] == [
        "opened", "prompt", "action", "result", "action", "result", "committed"]
    assert [(st.action.seq, st.action.iteration, [r.status for r in st.results])
            for st in archive.steps] == [(1, 1, ["ok"]), (2, 2, ["error"])]
    entry = store.get_archive(SCOPE, ref)
    assert (entry.summary.steps, entry.summary.tool_errors, entry.summary.status) == \
        (2, 1, "awaiting_input")
    assert entry.expires_at_unix_ms == Clock.now + 7 * 86400 * 1000
    w2.recorder.close()


def test_two_hundred_steps_read_back_bounded_in_every_mode_and_paged_whole(tmp_path, store):
    s = Settings(archive_redaction="diagnostic")
    w = World(tmp_path, s, store)
    w.recorder.prompt_delivered(EID, "go")
    ref = w.builder.current(EID).ref
    for n in range(200):
        w.reply(TextBlock(text=f"step {n} " + "é" * 3000, fidelity=AGENT_EMITTED),
                use(f"t{n}", {"command": "x" * 5000}), message_id=f"m{n}")
        w.result(f"t{n}", "r" * 6000)
    w.recorder.state_reported(EID, "awaiting_input")
    w.applied()
    entry = store.get_archive(SCOPE, ref)
    archive = parse(w.files.path(ref).read_bytes())
    for mode in ("summary", "tool_calls", "detail"):
        seen, from_seq = [], 1
        while True:
            data = render(entry, archive, mode, from_seq, s)
            assert data.rendered_chars == len(msgspec.json.encode(data).decode())
            assert data.rendered_chars <= s.trace_render_chars_max
            seen += [step.seq for step in data.steps]
            if data.next_seq is None:
                break
            assert data.next_seq > from_seq and data.omitted_steps == 200 - len(seen)
            from_seq = data.next_seq
        assert seen == ([] if mode == "summary" else list(range(1, 201)))


def test_refs_are_parsed_strictly():
    ref = "0f1e2d3c4b5a49788796a5b4c3d2e1f0"
    assert parse_archive_ref(ref) == ref
    for bad in ("../x", ref.upper(), ref[:31], ref + "0", "0f1e2d3c-4b5a-4978-8796-a5b4c3d2e1f0",
                "0f1e2d3c4b5a19788796a5b4c3d2e1f0",  # version 1, not 4
                "0f1e2d3c4b5a49780796a5b4c3d2e1f0",  # variant nibble 0
                ref[:30] + "/.", None, 7, ref + "\n"):
        assert parse_archive_ref(bad) is None, bad
    assert parse_trace_key(f"{EID}:12") == (EID, 12)
    for bad in (f"{EID}:0", f"{EID}:01", f"{EID}:", EID, f"{EID.upper()}:1", f"../x:1",
                f"{EID}:1:2", f"{EID}:{'9' * 19}"):
        assert parse_trace_key(bad) is None, bad


class Untouchable:
    """A store or files object any use of which fails the test."""

    def __getattr__(self, name):
        raise AssertionError(f"{name} was reached with a malformed reference")


@pytest.mark.parametrize("params", [
    {"archive_ref": "../x"}, {"archive_ref": "0F1E2D3C4B5A49788796A5B4C3D2E1F0"},
    {"archive_ref": "0f1e2d3c-4b5a-4978-8796-a5b4c3d2e1f0"},
    {"archive_ref": "0f1e2d3c4b5a49788796a5b4c3d2e1f"}, {"trace_key": "../x:1"},
    {"trace_key": f"{EID}:0"}, {}, {"archive_ref": "0f1e2d3c4b5a49788796a5b4c3d2e1f0",
                                     "trace_key": f"{EID}:1"}])
async def test_a_malformed_reference_reaches_neither_store_nor_files(params):
    service = TraceService(Untouchable(), Untouchable(), Untouchable(), Untouchable(), Settings())
    with pytest.raises(VigilError) as raised:
        await service.get_trace(SCOPE, AgentParams(thread_id="t", workspace_root="/w",
                                                   action="get_trace", **params))
    assert raised.value.code == "invalid_request"


async def test_flush_waits_for_the_catalog_and_reports_a_failing_store(tmp_path, store):
    s = Settings(ingest_retry_initial_seconds=0.01)
    w = World(tmp_path, s, store)
    async with trio.open_nursery() as nursery:
        await nursery.start(w.writer.run)
        w.recorder.prompt_delivered(EID, "go")
        ref = w.builder.current(EID).ref
        await w.writer.flush()
        assert store.get_archive(SCOPE, ref) is not None

        def failing(entries):
            raise StoreError("disk full")

        real = store.put_archives
        store.put_archives = failing
        w.recorder.state_reported(EID, "awaiting_input")
        with pytest.raises(VigilError, match="the archive catalog cannot be written: disk full"):
            await w.writer.flush()
        store.put_archives = real
        with trio.fail_after(10):
            while w.writer.failing is not None:  # woken at each retry
                await w.writer._progress.wait()
        await w.writer.flush()  # retried: nothing was lost
        assert store.get_archive(SCOPE, ref).summary.state == "committed"
        nursery.cancel_scope.cancel()
    w.recorder.close()
