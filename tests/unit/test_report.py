"""`vigil report` over hand-written usage logs, with every edge the spec lists: missing
fields (unknown, never zero), auxiliary events skipped before `--last` but counted in
`linesSeen`, truncation markers, zero-millisecond phases with positive counts, explicit
zeros kept, legacy observe records, partial results apart from affected items."""

from __future__ import annotations

import json
import subprocess
import sys

from vigil.client.report import build_report

NOW = 1_700_000_000_000


def lines(*events) -> list[bytes]:
    return [e if isinstance(e, bytes) else json.dumps(e).encode() for e in events]


def call(**fields) -> dict:
    return {"event": "tool_call", "usage_schema": 1, "workflow_schema": 1,
            "usage_call_id": fields.pop("id", "c"), "ts_ms": NOW, "outcome": "ok", **fields}


def aux(kind: str, **fields) -> dict:
    return {"event": kind, "usage_schema": 1, "usage_call_id": "c", "ts_ms": NOW, **fields}


def test_auxiliary_events_are_skipped_before_last_and_counted_as_lines():
    log = lines(aux("tool_started", tool="Execution"),
                call(tool="Execution", action="list", duration_ms=1),
                aux("tool_phase", edge="start", phase="catalog"),
                aux("tool_phase", edge="truncated"),
                aux("tool_phase", edge="finish", phase="catalog", ms=0),
                call(tool="Execution", action="get", duration_ms=2),
                call(tool="Execution", action="get", duration_ms=3),
                b"",
                aux("tool_started", tool="Agent"))
    r = build_report(log, last=2, now_ms=NOW)
    assert r["linesSeen"] == 9
    assert r["window"] == {"calls": 2, "last": 2, "sinceMinutes": 0, "malformedLines": 0,
                           "auxiliaryLines": 5, "unknownEvents": 0, "undatedExcluded": 0}
    # The last two *terminal* calls, not the last two lines.
    assert r["execution"]["durationMs"]["p50"] in (2, 3) and r["execution"]["durationMs"]["known"] == 2


def test_missing_values_are_unknown_never_zero():
    log = lines(call(tool="Execution", action="list"),
                call(tool="Execution", action="list", duration_ms=0, response_bytes=10))
    r = build_report(log, now_ms=NOW)
    d = r["execution"]["durationMs"]
    assert (d["known"], d["unknown"], d["p50"], d["max"]) == (1, 1, 0, 0)
    assert r["execution"]["responseBytes"] == {"known": 1, "unknown": 1, "total": 10}
    empty = build_report([], now_ms=NOW)
    assert empty["execution"]["durationMs"]["p50"] is None  # nothing known: unknown
    assert empty["execution"]["responseBytes"]["total"] is None


def test_zero_millisecond_phases_with_positive_counts_and_truncated_calls():
    log = lines(call(tool="Execution", action="wait", phases={
        "catalog": {"count": 3, "ms": 0}, "wait_sleep": {"count": 20, "ms": 1500}},
        phases_truncated=True),
        call(tool="Execution", action="list", phases={"catalog": {"count": 1, "ms": 0}}),
        call(tool="Execution", action="list", phases={"catalog": "garbage"}))
    r = build_report(log, now_ms=NOW)
    assert r["phases"] == {"truncatedCalls": 1, "inclusiveTotals": {
        "catalog": {"calls": 2, "count": 4, "ms": 0},
        "wait_sleep": {"calls": 1, "count": 20, "ms": 1500}}}


def test_observe_counters_need_observe_schema_and_partials_count_apart():
    log = lines(
        call(tool="Execution", action="observe", batch_items=0),  # legacy: unverifiable
        call(tool="Execution", action="observe", observe_schema=1, batch_items=3,
             observe_requested_items=3, observe_returned_items=3, observe_items_with_issues=2,
             outcome="partial", error_code="execution_observation_issues"),
        call(tool="Execution", action="observe", observe_schema=1, batch_items=1,
             observe_requested_items=1, observe_returned_items=1, observe_items_with_issues=0))
    r = build_report(log, now_ms=NOW)
    o = r["observations"]
    assert (o["calls"], o["measuredCalls"], o["unverifiableCalls"], o["partialResults"]) == (3, 2, 1, 1)
    assert o["requestedItems"] == {"known": 2, "unknown": 0, "total": 4}
    assert o["itemsWithIssues"] == {"known": 2, "unknown": 0, "total": 2}
    assert r["partialResults"] == {"calls": 1, "affectedItems": {"known": 1, "unknown": 0, "total": 2}}
    assert r["execution"]["errorResults"] == 1  # a partial result's code counts as an error result


def test_effective_wait_counts_bash_command_only_and_keeps_explicit_zeros():
    log = lines(
        call(tool="BashCommand", action="command", effective_wait_policy="task",
             effective_wait_ms=0, effective_wait_mode="task", requested_wait_policy="task"),
        call(tool="BashCommand", action="command", effective_wait_policy="synchronous",
             effective_wait_ms=5000, effective_wait_mode="synchronous", requested_wait_ms=5000),
        call(tool="BashCommand", action="screen"),  # not applicable: unknown
        call(tool="Execution", action="wait", effective_wait_ms=7, effective_wait_mode="task"))
    w = build_report(log, now_ms=NOW)["effectiveWait"]
    assert (w["bashCommandCalls"], w["known"], w["unknown"]) == (3, 2, 1)
    assert w["byMode"] == {"synchronous": {"calls": 1, "msTotal": 5000, "msMax": 5000,
                                           "policies": {"synchronous": 1}},
                           "task": {"calls": 1, "msTotal": 0, "msMax": 0, "policies": {"task": 1}}}
    assert w["requestedWaitMs"] == {"known": 1, "unknown": 2, "total": 5000}


def test_workflows_group_by_tool_action_backend():
    log = lines(
        call(tool="Agent", action="prompt", backend="native", receipt_delivery="delivered",
             receipt_activity="confirmed", receipt_condition="awaiting_input", receipt_replayed=False),
        call(tool="Agent", action="wait", backend="native", receipt_delivery="delivered",
             receipt_activity="confirmed", receipt_condition="awaiting_input"),
        call(tool="Agent", action="wait", backend="native", receipt_delivery="delivered",
             receipt_activity="confirmed", receipt_condition="awaiting_input"),
        call(tool="Execution", action="wait", backend="native", catalog_outcome="changed"),
        call(tool="Execution", action="wait", backend="native", catalog_outcome="timeout"),
        call(tool="Execution", action="wait", backend="native"),
        call(tool="Agent", action="prompt", backend="herdr", herdr_delivery="uncertain",
             herdr_input_sent="unknown"),
        call(tool="Agent", action="prompt", backend="herdr", outcome="error",
             error_code="herdr_timeout", herdr_input_sent="false"),
        {**call(tool="Execution", action="list"), "workflow_schema": None})
    w = build_report(log, now_ms=NOW)["workflows"]
    assert set(w) == {"Agent/prompt/native", "Agent/wait/native", "Execution/wait/native",
                      "Agent/prompt/herdr"}
    # A receipt read counts as an observation every time, including a repeated one.
    assert w["Agent/wait/native"]["receipts"]["observations"] == 2
    assert w["Agent/prompt/native"]["receipts"]["replayed"] == {"false": 1}
    assert w["Execution/wait/native"]["catalog"] == {"changed": 1, "timeout": 1, "unknown": 1}
    h = w["Agent/prompt/herdr"]
    assert h["errorResults"] == 1 and h["herdr"]["inputSent"] == {"unknown": 1, "false": 1}
    assert h["herdr"]["delivery"] == {"uncertain": 1, "unknown": 1}


def test_reads_since_minutes_and_malformed_lines():
    log = lines(call(tool="Execution", action="read", backend="native", read_source="output",
                     read_returned_bytes=100, read_has_more=True, ts_ms=NOW - 120_000),
                call(tool="Execution", action="read", backend="native", read_source="screen",
                     read_returned_bytes=0, read_gap=False, ts_ms=NOW - 10_000),
                call(tool="Execution", action="read", backend="native", ts_ms=NOW - 5_000),
                {**call(tool="Execution", action="read"), "ts_ms": None},
                b"{not json", b"[1, 2]", {"event": "something_new"})
    r = build_report(log, since_minutes=1, now_ms=NOW)
    assert r["window"]["undatedExcluded"] == 1 and r["window"]["malformedLines"] == 2
    assert r["window"]["unknownEvents"] == 1
    reads = r["reads"]
    assert (reads["calls"], reads["unknownShape"]) == (2, 1)
    assert set(reads["bySource"]) == {"screen"}
    assert reads["bySource"]["screen"]["returnedBytes"] == {"known": 1, "unknown": 0, "total": 0}


def test_the_cli(tmp_path):
    log = tmp_path / "usage.jsonl"
    log.write_text("\n".join(json.dumps(e) for e in [
        aux("tool_started", tool="Execution"), call(tool="Execution", action="list",
                                                    duration_ms=4)]) + "\n")
    out = subprocess.run([sys.executable, "-m", "vigil.client.cli", "report", "--log", str(log),
                          "--json", "--last", "0"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["execution"]["calls"] == 1
    text = subprocess.run([sys.executable, "-m", "vigil.client.cli", "report", "--log", str(log)],
                          capture_output=True, text=True).stdout
    assert text.startswith("lines seen 2; calls in window 1\nexecution: 1 calls, 0 error results")
    missing = subprocess.run([sys.executable, "-m", "vigil.client.cli", "report", "--log",
                              str(tmp_path / "none")], capture_output=True, text=True)
    assert missing.returncode == 1 and "no usage log at" in missing.stderr
