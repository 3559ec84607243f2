"""`Execution observe` against a real daemon (seeds/000: "Observe several executions in one
call"): every limit rejects the whole request as `invalid_request` naming the field, before
any history is touched; item failures stay on their item with a `stage`; a nonzero exit is
an observed outcome, not an error.
"""

from __future__ import annotations

import pytest

from tests.support.daemon import VigilHome
from tests.support.executions import Session, python_child, remote_error

#: A well-formed execution id no execution has (32 lowercase hex digits).
MISSING = "0" * 32


def observe(s: Session, items: list[dict], **extra) -> dict:
    return s.execution({"type": "observe", "items": items, **extra})


def status(result: dict) -> str:
    """The answer's status: `ok` is the default and is left out of the frame (the result
    struct omits defaults), `completed_with_issues` is always written."""
    return result.get("status", "ok")


def finished(s: Session, code: int = 0, text: str = "hello") -> str:
    eid = s.run(argv=python_child(f"print({text!r}); raise SystemExit({code})"))["execution_id"]
    s.wait_exit(eid)
    return eid


@pytest.fixture(scope="module")
def session():
    """One daemon for the module: every test here only reads, or adds its own executions
    (starting a daemon per case would cost a second each)."""
    home = VigilHome()
    try:
        home.start_daemon()
        ws = home.root / "ws"
        ws.mkdir()
        s = Session(home, ws)
        yield s
        s.close()
    finally:
        home.cleanup()


@pytest.fixture(scope="module")
def done(session) -> str:
    return finished(session)


def assert_rejected(s: Session, items, field: str, **extra) -> None:
    before = s.list()["catalog_cursor"]
    err = remote_error(observe, s, items, **extra)
    assert err.code.value == "invalid_request", err
    assert err.data == {"field": field}, err.data
    # Nothing was refreshed or read: the catalog did not move.
    assert s.list()["catalog_cursor"] == before


def test_item_count_limits(session, done):
    assert_rejected(session, [], "params.action.items")
    assert_rejected(session, [{"execution_id": done, "source": "output", "cursor": None}] * 33,
                    "params.action.items")


@pytest.mark.parametrize("page_bytes", [3, 65537, 0, -1])
def test_page_bytes_bounds(session, done, page_bytes):
    assert_rejected(session, [{"execution_id": MISSING},
                              {"execution_id": done, "page_bytes": page_bytes}],
                    "params.action.items[1].page_bytes")


def test_page_bytes_extremes_accepted(session, done):
    for size in (4, 65536):
        r = observe(session, [{"execution_id": done, "page_bytes": size}])
        assert status(r) == "ok"
        assert r["data"]["items"][0]["page"]["text"] == "hello\r\n"[:size]


def test_page_sum_limit(session, done):
    # 2 × 40,000 > 65,536 although each page is allowed; a missing execution in the same
    # request still answers invalid_request (validation before any history access).
    assert_rejected(session, [{"execution_id": done, "page_bytes": 40000},
                              {"execution_id": MISSING, "page_bytes": 40000}],
                    "params.action.items")
    r = observe(session, [{"execution_id": done, "page_bytes": 32768},
                          {"execution_id": done, "source": "screen", "page_bytes": 32768}])
    assert status(r) == "ok"


def test_duplicate_pair_rejected(session, done):
    assert_rejected(session, [{"execution_id": done}, {"execution_id": MISSING},
                              {"execution_id": done, "source": "output"}],
                    "params.action.items[2]")
    # The same execution with another source is not a duplicate.
    r = observe(session, [{"execution_id": done}, {"execution_id": done, "source": "screen"}])
    assert status(r) == "ok"
    assert [i["source"] for i in r["data"]["items"]] == ["output", "screen"]


@pytest.mark.parametrize("bad", ["", "xyz", "0" * 31, "A" * 32, "g" * 32, "0" * 33])
def test_malformed_id_rejected(session, done, bad):
    assert_rejected(session, [{"execution_id": MISSING}, {"execution_id": bad}],
                    "params.action.items[1].execution_id")


@pytest.mark.parametrize("timeout", [31, -1, 30.001, float("inf"), float("nan")])
def test_timeout_bounds(session, done, timeout):
    assert_rejected(session, [{"execution_id": MISSING}], "params.action.timeout_seconds",
                    timeout_seconds=timeout)


@pytest.mark.parametrize("timeout", [0, 30])
def test_timeout_extremes_accepted(session, done, timeout):
    r = observe(session, [{"execution_id": done}], timeout_seconds=timeout)
    assert status(r) == "ok"
    assert r["data"]["items"][0]["page"]["text"] == "hello\r\n"


def test_items_keep_request_order_and_errors_stay_on_their_item(session):
    s = session
    a = finished(s, 0, "aaa")
    b = finished(s, 3, "bbb")  # a nonzero exit is an observed outcome
    r = observe(s, [{"execution_id": b}, {"execution_id": MISSING}, {"execution_id": a},
                    {"execution_id": a, "source": "screen"}])
    assert status(r) == "completed_with_issues"
    assert r["code"] == "execution_observation_issues"
    items = r["data"]["items"]
    assert [(i["execution_id"], i["source"]) for i in items] == \
        [(b, "output"), (MISSING, "output"), (a, "output"), (a, "screen")]
    assert [i["status"] for i in items] == ["ok", "error", "ok", "ok"]
    assert items[1]["errors"] and items[1]["errors"][0]["stage"] == "refresh"
    assert items[1]["errors"][0]["code"] == "not_found"
    assert items[1]["page"] is None and items[1]["execution"] is None
    assert items[0]["errors"] == [] and items[0]["page"]["text"] == "bbb\r\n"
    assert (items[0]["execution"]["status"], items[0]["execution"]["exit_code"]) == ("exited", 3)
    assert items[2]["page"]["text"] == "aaa\r\n"
    assert items[3]["page"]["source"] == "screen"
    assert items[3]["page"]["text"].startswith("aaa")
    assert isinstance(r["data"]["catalog_cursor"], str) and r["data"]["catalog_cursor"]


def test_nonzero_exit_alone_is_ok(session):
    b = finished(session, 7, "x")
    r = observe(session, [{"execution_id": b}])
    assert status(r) == "ok" and r.get("code") is None
    assert r["data"]["items"][0]["execution"]["exit_code"] == 7
    assert r["data"]["items"][0]["status"] == "ok"


@pytest.mark.parametrize("forged", ["AAAA", "not-a-cursor", "mQGnY2F0YWxvZ8QQ"])
def test_forged_cursor_is_a_read_error(session, done, forged):
    other = finished(session, 0, "other")
    r = observe(session, [{"execution_id": done, "cursor": forged}, {"execution_id": other}])
    assert status(r) == "completed_with_issues"
    assert r["code"] == "execution_observation_issues"
    bad, good = r["data"]["items"]
    assert [(e["stage"], e["code"]) for e in bad["errors"]] == [("read", "invalid_cursor")]
    assert bad["execution"]["execution_id"] == done  # metadata still observed
    assert good["errors"] == [] and good["page"]["text"] == "other\r\n"


def test_foreign_cursor_is_a_read_error(session, done):
    other = finished(session, 0, "other")
    page = session.read(other, page_bytes=4)
    r = observe(session, [{"execution_id": done, "cursor": page["next_cursor"]}])
    assert status(r) == "completed_with_issues"
    [item] = r["data"]["items"]
    assert [(e["stage"], e["code"]) for e in item["errors"]] == [("read", "invalid_cursor")]


def test_default_page_is_2048_bytes(session):
    eid = session.run(argv=python_child("print('x' * 5000)"))["execution_id"]
    session.wait_exit(eid)
    r = observe(session, [{"execution_id": eid}])
    page = r["data"]["items"][0]["page"]
    assert len(page["text"].encode()) == 2048
    assert page["has_more"] is True
    assert (page["start_offset"], page["end_offset"]) == (0, 2048)
    nxt = observe(session, [{"execution_id": eid, "cursor": page["next_cursor"]}])
    assert nxt["data"]["items"][0]["page"]["start_offset"] == 2048
