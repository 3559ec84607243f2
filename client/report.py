"""`vigil report`: what the usage log says (seeds/000, "Workflow telemetry", "Usage metrics").

The log's format is `vigil.protocol.usage`. The report lives in the client because reading a
file and printing a summary is a client's job and needs no daemon code (no trio, no store):
it works on a copied log, on a machine without a daemon, and starts as fast as any CLI
command. It is stdlib + msgspec.

Rules, each from the spec:
- auxiliary events (`tool_started`, `tool_phase`) are skipped *before* `--last` applies, so
  the window is the last N terminal calls; they still count in `linesSeen`;
- a value a call did not record is unknown — counted as unknown, never as a zero sample;
  an explicit zero is kept; a phase of 0 ms with a positive count is a real observation;
- observe counters are trusted only with `observe_schema=1` (older zeros are
  unverifiable); effective-wait figures count BashCommand calls only;
- partial results (`completed_with_issues`) are counted apart from the items they affected,
  and also as error results (their code is set);
- receipt reads count as observations, every time; none of these counters estimate unique
  prompts delivered or tasks completed.
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, Iterable

import msgspec

from vigil.protocol.usage import AUXILIARY_EVENTS

_decode = msgspec.json.Decoder().decode


def log_files(path: Path, include_rotated: bool) -> list[Path]:
    """The log and, oldest first before it, its rotated predecessors (`.1`, `.2`, …)."""
    files = [path]
    if include_rotated:
        n = 1
        while (older := path.with_name(f"{path.name}.{n}")).exists():
            files.insert(0, older)
            n += 1
    return files


def read_lines(files: Iterable[Path]) -> Iterable[bytes]:
    for f in files:
        try:
            data = f.read_bytes()
        except FileNotFoundError:
            continue
        yield from data.splitlines()


def _percentile(sorted_values: list[int], p: float) -> int | None:
    if not sorted_values:
        return None
    k = min(len(sorted_values) - 1, max(0, round(p / 100 * (len(sorted_values) - 1))))
    return sorted_values[k]


class _Known:
    """Counts and sums of one optional number: how many calls had it, how many did not."""

    __slots__ = ("known", "unknown", "total", "values")

    def __init__(self) -> None:
        self.known = self.unknown = self.total = 0
        self.values: list[int] = []

    def add(self, value: Any, keep: bool = False) -> None:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            self.known += 1
            self.total += value
            if keep:
                self.values.append(value)
        else:
            self.unknown += 1

    def summary(self, percentiles: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {"known": self.known, "unknown": self.unknown,
                               "total": self.total if self.known else None}
        if percentiles:
            values = sorted(self.values)
            out.update(p50=_percentile(values, 50), p95=_percentile(values, 95),
                       max=values[-1] if values else None)
        return out


def build_report(lines: Iterable[bytes], *, last: int | None = None,
                 since_minutes: float = 0, now_ms: int | None = None) -> dict[str, Any]:
    """The report of a log's lines (see the module doc for its rules)."""
    now_ms = time.time_ns() // 1_000_000 if now_ms is None else now_ms
    lines_seen = malformed = auxiliary = unknown_events = undated = 0
    calls: list[dict[str, Any]] = []
    since_ms = now_ms - since_minutes * 60_000 if since_minutes > 0 else None
    for line in lines:
        lines_seen += 1
        if not line.strip():
            continue
        try:
            event = _decode(line)
        except msgspec.DecodeError:
            malformed += 1
            continue
        if not isinstance(event, dict):
            malformed += 1
            continue
        kind = event.get("event")
        if kind in AUXILIARY_EVENTS:
            auxiliary += 1
            continue
        if kind != "tool_call":
            unknown_events += 1
            continue
        if since_ms is not None:
            ts = event.get("ts_ms")
            if not isinstance(ts, (int, float)):
                undated += 1
                continue
            if ts < since_ms:
                continue
        calls.append(event)
    if last is not None and last > 0:
        calls = calls[-last:]
    report = {
        "linesSeen": lines_seen,
        "window": {"calls": len(calls), "last": last, "sinceMinutes": since_minutes,
                   "malformedLines": malformed, "auxiliaryLines": auxiliary,
                   "unknownEvents": unknown_events, "undatedExcluded": undated},
        "execution": _execution(calls),
        "workflows": _workflows(calls),
        "reads": _reads(calls),
        "observations": _observations(calls),
        "effectiveWait": _effective_wait(calls),
        "partialResults": _partial(calls),
        "phases": _phases(calls),
    }
    return report


def _str(value: Any) -> str:
    return value if isinstance(value, str) else "unknown"


def _execution(calls: list[dict]) -> dict[str, Any]:
    duration, response = _Known(), _Known()
    outcomes: Counter = Counter()
    by_tool: dict[str, Counter] = defaultdict(Counter)
    by_client: Counter = Counter()
    errors = 0
    for c in calls:
        duration.add(c.get("duration_ms"), keep=True)
        response.add(c.get("response_bytes"))
        outcome = _str(c.get("outcome"))
        outcomes[outcome] += 1
        tool = by_tool[_str(c.get("tool"))]
        tool["calls"] += 1
        code = c.get("error_code")
        if isinstance(code, str) and code:
            errors += 1
            tool["errorResults"] += 1
        by_client[_str(c.get("client"))] += 1
    return {"calls": len(calls), "outcomes": dict(outcomes), "errorResults": errors,
            "durationMs": duration.summary(percentiles=True),
            "responseBytes": response.summary(),
            "byTool": {k: dict(v) for k, v in sorted(by_tool.items())},
            "byClient": dict(by_client)}


def _workflows(calls: list[dict]) -> dict[str, Any]:
    groups: dict[str, dict[str, Any]] = {}
    for c in calls:
        if c.get("workflow_schema") != 1 or c.get("tool") not in ("Execution", "Agent"):
            continue
        key = f"{_str(c.get('tool'))}/{_str(c.get('action'))}/{_str(c.get('backend'))}"
        g = groups.setdefault(key, {"calls": 0, "errorResults": 0, "partialResults": 0})
        g["calls"] += 1
        if isinstance(c.get("error_code"), str) and c["error_code"]:
            g["errorResults"] += 1
        if c.get("outcome") == "partial":
            g["partialResults"] += 1
        if c.get("action") == "wait" and "receipt_delivery" not in c:
            catalog = g.setdefault("catalog", Counter())
            catalog[_str(c.get("catalog_outcome"))] += 1
        if "receipt_delivery" in c or (c.get("action") in ("prompt",) and c.get("backend") == "native"):
            r = g.setdefault("receipts", {"observations": 0, "delivery": Counter(),
                                          "activity": Counter(), "condition": Counter(),
                                          "replayed": Counter()})
            if "receipt_delivery" in c:
                r["observations"] += 1
            r["delivery"][_str(c.get("receipt_delivery"))] += 1
            r["activity"][_str(c.get("receipt_activity"))] += 1
            r["condition"][_str(c.get("receipt_condition"))] += 1
            if c.get("action") == "prompt":
                replayed = c.get("receipt_replayed")
                r["replayed"][str(replayed).lower() if isinstance(replayed, bool) else "unknown"] += 1
        if c.get("backend") == "herdr" and c.get("action") == "prompt":
            h = g.setdefault("herdr", {"delivery": Counter(), "inputSent": Counter(),
                                       "errorCodes": Counter()})
            h["delivery"][_str(c.get("herdr_delivery"))] += 1
            h["inputSent"][_str(c.get("herdr_input_sent"))] += 1
            if isinstance(c.get("herdr_error_code"), str):
                h["errorCodes"][c["herdr_error_code"]] += 1
    return {k: _plain(v) for k, v in sorted(groups.items())}


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _reads(calls: list[dict]) -> dict[str, Any]:
    by_source: dict[str, dict[str, Any]] = {}
    unknown = 0
    for c in calls:
        if c.get("action") != "read" or c.get("backend") == "herdr":
            continue
        source = c.get("read_source")
        if not isinstance(source, str):
            unknown += 1
            continue
        s = by_source.setdefault(source, {"calls": 0, "returnedBytes": _Known(),
                                          "requestedBytes": _Known(), "hasMore": 0, "gaps": 0,
                                          "resync": 0})
        s["calls"] += 1
        s["returnedBytes"].add(c.get("read_returned_bytes"))
        s["requestedBytes"].add(c.get("read_requested_bytes"))
        s["hasMore"] += c.get("read_has_more") is True
        s["gaps"] += c.get("read_gap") is True
        s["resync"] += c.get("read_resync") is True
    return {"calls": sum(s["calls"] for s in by_source.values()) + unknown,
            "unknownShape": unknown,
            "bySource": {k: {**v, "returnedBytes": v["returnedBytes"].summary(),
                             "requestedBytes": v["requestedBytes"].summary()}
                         for k, v in sorted(by_source.items())}}


def _observations(calls: list[dict]) -> dict[str, Any]:
    observe = [c for c in calls if c.get("tool") == "Execution" and c.get("action") == "observe"]
    measured = [c for c in observe if c.get("observe_schema") == 1]
    requested, returned, issues = _Known(), _Known(), _Known()
    for c in measured:
        requested.add(c.get("observe_requested_items"))
        returned.add(c.get("observe_returned_items"))
        issues.add(c.get("observe_items_with_issues"))
    return {"calls": len(observe), "measuredCalls": len(measured),
            "unverifiableCalls": len(observe) - len(measured),
            "requestedItems": requested.summary(), "returnedItems": returned.summary(),
            "itemsWithIssues": issues.summary(),
            "partialResults": sum(1 for c in observe if c.get("outcome") == "partial")}


def _effective_wait(calls: list[dict]) -> dict[str, Any]:
    bash = [c for c in calls if c.get("tool") == "BashCommand"]
    by_mode: dict[str, dict[str, Any]] = {}
    known = 0
    requested = _Known()
    for c in bash:
        requested.add(c.get("requested_wait_ms"))
        mode, ms = c.get("effective_wait_mode"), c.get("effective_wait_ms")
        if not isinstance(mode, str) or not isinstance(ms, int) or isinstance(ms, bool):
            continue
        known += 1
        m = by_mode.setdefault(mode, {"calls": 0, "msTotal": 0, "msMax": 0, "policies": Counter()})
        m["calls"] += 1
        m["msTotal"] += ms
        m["msMax"] = max(m["msMax"], ms)
        m["policies"][_str(c.get("effective_wait_policy"))] += 1
    return {"bashCommandCalls": len(bash), "known": known, "unknown": len(bash) - known,
            "byMode": {k: {**v, "policies": dict(v["policies"])} for k, v in sorted(by_mode.items())},
            "requestedWaitMs": requested.summary()}


def _partial(calls: list[dict]) -> dict[str, Any]:
    partial = [c for c in calls if c.get("outcome") == "partial"]
    affected = _Known()
    for c in partial:
        affected.add(c.get("observe_items_with_issues"))
    return {"calls": len(partial), "affectedItems": affected.summary()}


def _phases(calls: list[dict]) -> dict[str, Any]:
    totals: dict[str, dict[str, int]] = {}
    truncated = 0
    for c in calls:
        truncated += c.get("phases_truncated") is True
        phases = c.get("phases")
        if not isinstance(phases, dict):
            continue
        for name, value in phases.items():
            if not isinstance(value, dict):
                continue
            count, ms = value.get("count"), value.get("ms")
            if not isinstance(count, int) or not isinstance(ms, int):
                continue
            t = totals.setdefault(name, {"calls": 0, "count": 0, "ms": 0})
            t["calls"] += 1
            t["count"] += count
            t["ms"] += ms
    return {"truncatedCalls": truncated, "inclusiveTotals": dict(sorted(totals.items()))}


def render_text(report: dict[str, Any]) -> str:
    """A few readable lines per section (`--json` has everything)."""
    ex = report["execution"]
    d = ex["durationMs"]
    lines = [f"lines seen {report['linesSeen']}; calls in window {report['window']['calls']}",
             f"execution: {ex['calls']} calls, {ex['errorResults']} error results, outcomes "
             f"{ex['outcomes']}; duration p50 {_u(d['p50'])} ms p95 {_u(d['p95'])} ms max "
             f"{_u(d['max'])} ms ({d['unknown']} unknown)"]
    for tool, counts in ex["byTool"].items():
        lines.append(f"  {tool}: {counts.get('calls', 0)} calls, {counts.get('errorResults', 0)} errors")
    if report["workflows"]:
        lines.append("workflows:")
        for key, g in report["workflows"].items():
            extra = ""
            if "catalog" in g:
                extra += f" catalog {g['catalog']}"
            if "receipts" in g:
                extra += f" receipts observed {g['receipts']['observations']}"
            if "herdr" in g:
                extra += f" herdr {g['herdr']['delivery']}"
            lines.append(f"  {key}: {g['calls']} calls, {g['errorResults']} errors{extra}")
    r = report["reads"]
    lines.append(f"reads: {r['calls']} calls ({r['unknownShape']} of unknown shape)")
    o = report["observations"]
    lines.append(f"observations: {o['calls']} observe calls ({o['unverifiableCalls']} "
                 f"unverifiable), items requested {_u(o['requestedItems']['total'])}, with "
                 f"issues {_u(o['itemsWithIssues']['total'])}, partial results {o['partialResults']}")
    w = report["effectiveWait"]
    lines.append(f"effectiveWait: {w['bashCommandCalls']} BashCommand calls, {w['known']} known, "
                 f"{w['unknown']} unknown; by mode "
                 + ", ".join(f"{m} {v['calls']}" for m, v in w["byMode"].items()))
    p = report["partialResults"]
    lines.append(f"partialResults: {p['calls']} calls, affected items "
                 f"{_u(p['affectedItems']['total'])}")
    return "\n".join(lines)


def _u(value: Any) -> str:
    return "unknown" if value is None else str(value)
