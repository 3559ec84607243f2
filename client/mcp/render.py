"""A short readable rendering of each tool answer, for the text content beside the
structured one (clients that show only text still see what matters: ids, states, cursors,
the page or output itself — but not the whole JSON twice).

Plain data in (the daemon's answer as dicts), text out; anything without a rendering of its
own falls back to compact JSON.
"""

from __future__ import annotations

import json
from typing import Any, Callable


def _cmd(e: dict) -> str:
    return (e.get("command") or " ".join(e.get("argv") or []))[:120]


def _status(e: dict) -> str:
    status = e.get("status")
    if status == "exited":
        if e.get("signal") is not None:
            return f"killed by signal {e['signal']}"
        return f"exited {e.get('exit_code')}"
    state = e.get("recognized_state")
    return f"{status} ({state})" if status == "running" and state else str(status)


def _page(p: dict) -> str:
    tail = [f"next_cursor={p['next_cursor']}", f"has_more={str(p['has_more']).lower()}"]
    if p.get("gap"):
        tail.append(f"gap of {p['gap']['bytes_skipped']} bytes")
    if p.get("resync_required"):
        tail.append("resync_required")
    return f"{p['text']}\n[{p['source']} {p['start_offset']}..{p['end_offset']}; {', '.join(tail)}]"


def _initialize(r: dict) -> str:
    return (f"thread_id={r['thread_id']} workspace_root={r['workspace_root']} "
            f"mode={r['mode']} profile={r['profile']} tools={','.join(r['tools'])}"
            + (" (resumed)" if r.get("resumed") else "")
            + (f" temporary_dir={r['temporary_dir']}" if r.get("temporary_dir") else ""))


def _turn(t: dict | None) -> str:
    """The model-context projection of an agent turn, one line (detail: get_trace)."""
    if not t:
        return ""
    tools = ", ".join(f"{x['name']}×{x['calls']}" for x in t["tools"])
    return (f"\nturn {t['turn']} ({t['state']}{', ' + t['status'] if t.get('status') else ''}): "
            f"{t['steps']} steps, {t['tool_calls']} tool calls, {t['tool_errors']} errors"
            + (f" [{tools}]" if tools else "")
            + (f", {t['replay_blocked_steps']} replay-blocked" if t["replay_blocked_steps"] else "")
            + f"; archive_ref={t['archive_ref']}")


def _execution_like(action: str | None, data: dict) -> str:
    if "executions" in data and "total" in data:
        lines = [f"{len(data['executions'])} of {data['total']} executions; "
                 f"catalog_cursor={data['catalog_cursor']}"]
        lines += [f"{e['execution_id']} {_status(e)} {_cmd(e)}" for e in data["executions"]]
        return "\n".join(lines)
    if "page" in data:
        return _page(data["page"])
    if "items" in data:
        lines = [f"catalog_cursor={data['catalog_cursor']}"]
        for item in data["items"]:
            head = f"{item['execution_id']} {item['source']}"
            if item.get("execution"):
                head += f" {_status(item['execution'])}"
            for err in item["errors"]:
                head += f" [{err['stage']} error {err['code']}: {err['message']}]"
            lines.append(head)
            if item.get("page"):
                lines.append(_page(item["page"]))
        return "\n".join(lines)
    if "outcome" in data:
        changes = ", ".join(f"{c['execution_id']} {c['what']}" for c in data["changes"])
        return (f"{data['outcome']} after at most {data['effective_timeout_seconds']:g} s; "
                f"catalog_cursor={data['catalog_cursor']}" + (f"; {changes}" if changes else ""))
    if "execution" in data:
        e = data["execution"]
        out = e["output"]
        text = (f"{e['execution_id']} {_status(e)} in {e['cwd']}: {_cmd(e)}\n"
                f"output: {out['total_bytes']} bytes, {out['retained_bytes']} retained"
                + (", pending" if out["pending"] else ""))
        if data.get("recovery"):
            text += f"\nrecovery: {data['recovery']['advice']}"
            if data["recovery"].get("recommendation"):
                text += f" ({data['recovery']['recommendation']})"
        return text + _turn(data.get("turn"))
    if "recognizer" in data and "state" in data and "reason" in data:
        return (f"{data['execution_id']}: {data['recognizer']} says {data['state']} "
                f"({data['source']}, rule {data.get('rule')}): {data['reason']}")
    if "receipt" in data:
        r = data["receipt"]
        return (f"receipt {r['prompt_id']}: delivery {r['delivery']}, activity {r['activity']} "
                f"({r['activity_reason']}), condition {r['condition']}"
                + (" (replayed: nothing sent)" if data.get("replayed") else "")
                + _turn(data.get("turn")))
    return json.dumps(data, separators=(",", ":"))


def _bash(r: dict) -> str:
    if "output" in r and "shell_execution_id" in r:
        head = f"{r['status']}"
        if r.get("exit_code") is not None:
            head += f" exit {r['exit_code']}"
        head += f" (execution {r.get('execution_id')}, generation {r['generation']}, cwd {r['cwd']})"
        if r.get("effective_wait_mode"):
            head += f"; waited inline up to {r['effective_wait_ms']} ms ({r['effective_wait_mode']})"
        if r.get("promoted"):
            head += "; promoted to a background Task: observe it with Execution"
        return head + ("\n" + r["output"] if r["output"] else "") + (
            "\n[output truncated to its tail]" if r.get("output_truncated") else "")
    if "text" in r and "rows" in r:
        return f"{r['text']}\n[screen of {r['execution_id']}, {r['rows']}x{r['cols']}, {r['fidelity']}]"
    if "explanation" in r:
        x = r["explanation"]
        return (f"{r['target']} {r['execution_id']} generation {r['generation']}"
                f"{' running' if r['running'] else ''}: {x['recognizer']} says {x['state']}: {x['reason']}")
    if "condition" in r and "delivery" not in r:
        return (f"{r['condition']} (state {r['state']}) after at most "
                f"{r['effective_timeout_seconds']:g} s")
    if "delivery" in r:
        return (f"delivery {r['delivery']}, activity {r['activity']} ({r['activity_reason']}), "
                f"condition {r['condition']}")
    return json.dumps(r, separators=(",", ":"))


def _temporary(r: dict) -> str:
    u = r["usage"]
    budget = (f"{u.get('temporary_file_count', '?')} of {u.get('temporary_budget_files')} "
              f"helpers, {u.get('temporary_bytes', '?')} of {u.get('temporary_budget_bytes')} "
              f"bytes, over_budget={str(u.get('temporary_over_budget', '?')).lower()}")
    if "results" in r:
        lines = [f"{i['name']}: {i['status']}" + (f" ({i['reason']})" if i.get("reason") else "")
                 for i in r["results"]]
    else:
        lines = [f"{h['name']} {h['kind']} {h['size_bytes']} bytes" for h in r["helpers"]]
    return "\n".join([f"{r['directory']} revision={r['revision']}; {budget}", *lines])


def _envelope(result: dict) -> str:
    data = result.get("data") or {}
    text = _execution_like(data.get("action"), data)
    if result.get("status") == "completed_with_issues":
        text = f"completed_with_issues ({result.get('code')})\n" + text
    return text


RENDERERS: dict[str, Callable[[dict], str]] = {
    "Initialize": _initialize,
    "BashCommand": _bash,
    "Execution": _envelope,
    "Agent": _envelope,
    "Temporary": _temporary,
}


def render(tool: str, result: Any) -> str:
    try:
        return RENDERERS[tool](result)
    except (KeyError, TypeError, AttributeError):
        return json.dumps(result, separators=(",", ":"), default=str)


def render_error(code: str, message: str, data: dict) -> str:
    text = f"{code}: {message}"
    if data:
        text += "\n" + json.dumps(data, separators=(",", ":"), default=str)
    return text
