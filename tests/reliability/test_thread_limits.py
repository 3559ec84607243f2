"""Threads are bounded (issue 10, Degraded): 300 `Initialize` calls with a 1 MB
`thread_name` took the daemon from 32 to 336 MB (659 MB after a restart) and the store to
303 MB. Names and tool lists are bounded (wire limits a client can check), the threads of
one principal are counted against a setting, and a thread nobody used for
`thread_idle_expiry_seconds` is gone — answered exactly like a thread that never existed."""

import os
import time

import pytest

from tests.support.executions import (  # noqa: F401  (fixtures)
    Session,
    remote_error,
    workspace,
)
from tests.reliability.test_load import rss_kb
from vigil.protocol.settings import WIRE_DEFAULTS


def initialize(client, workspace, **params):
    return client.call("Initialize", dict(workspace_root=str(workspace), **params))


def shape(err):
    return err.code.value, err.message, dict(err.data)


def test_long_thread_names_are_refused_and_cost_nothing(home, daemon, workspace):
    limit = WIRE_DEFAULTS.thread_name_max_bytes
    with home.client() as c:
        ok = initialize(c, workspace, thread_name="é" * (limit // 2))  # 2 bytes each: at the limit
        assert ok["resumed"] is False
        err = remote_error(initialize, c, workspace, thread_name="x" * (limit + 1))
        assert shape(err) == ("invalid_request",
                              f"thread_name is {limit + 1} bytes; at most {limit} are accepted "
                              f"(thread_name_max_bytes)", {"field": "params.thread_name"})
        store_before = os.path.getsize(home.state / "store" / "data.mdb")
        rss_before = rss_kb(daemon.pid)
        name = "n" * (1 << 20)
        for i in range(300):  # the attack: each one used to become a stored thread
            err = remote_error(initialize, c, workspace, thread_name=f"{i}{name}")
            assert err.code.value == "invalid_request"
        assert c.call("ping") == {"pong": True, "payload": ""}
    assert os.path.getsize(home.state / "store" / "data.mdb") == store_before
    # Receiving 300 frames of 1 MB costs buffers, not 300 MB kept.
    assert rss_kb(daemon.pid) - rss_before < 32 * 1024


def test_tool_lists_are_bounded(home, daemon, workspace):
    most = WIRE_DEFAULTS.thread_tools_max
    longest = WIRE_DEFAULTS.tool_name_max_bytes
    with home.client() as c:
        err = remote_error(initialize, c, workspace, thread_name="t", tools=["Execution"] * (most + 1))
        assert shape(err) == ("invalid_request",
                              f"tools lists {most + 1} tools; at most {most} are accepted "
                              f"(thread_tools_max)", {"field": "params.tools"})
        err = remote_error(initialize, c, workspace, thread_name="t",
                           tools=["Execution", "A" * (longest + 1)])
        assert shape(err) == ("invalid_request",
                              f"a tool name of {longest + 1} bytes; at most {longest} are accepted "
                              f"(tool_name_max_bytes)", {"field": "params.tools[1]"})
        ok = initialize(c, workspace, thread_name="t", tools=["Execution"] * most)  # at the limit
        assert ok["resumed"] is False and ok["tools"] == ["Execution"]  # accepted, deduplicated


def test_threads_per_principal_are_counted(home, workspace):
    home.write_config("threads_per_principal_max = 3\n")
    home.start_daemon()
    with home.client() as c:
        ids = [initialize(c, workspace, thread_name=f"t{i}")["thread_id"] for i in range(3)]
        err = remote_error(initialize, c, workspace, thread_name="t3")
        assert shape(err) == ("limit_exceeded",
                              "this principal already has 3 threads, the most allowed "
                              "(threads_per_principal_max); resume one by thread_id or "
                              "thread_name, or let idle ones expire (thread_idle_expiry_seconds)",
                              {"field": "params.thread_name", "limit": "threads_per_principal_max",
                               "threads": 3})
        # Resuming is no new thread: by name and by id, at the limit.
        assert initialize(c, workspace, thread_name="t1")["thread_id"] == ids[1]
        assert initialize(c, workspace, thread_id=ids[2])["resumed"] is True
        assert c.call("ping") == {"pong": True, "payload": ""}


def test_idle_threads_expire_like_unknown_ones(home, workspace):
    home.write_config("thread_idle_expiry_seconds = 1\nthreads_per_principal_max = 2\n")
    daemon = home.start_daemon()
    with home.client() as c:
        idle = initialize(c, workspace, thread_name="idle")["thread_id"]
        unknown = "0" * 32
        scoped = {"workspace_root": str(workspace)}

        def probe(thread_id):
            return shape(remote_error(c.call, "Execution", dict(
                scoped, thread_id=thread_id, action={"type": "list"})))

        # Idleness is this test's input, not a synchronisation: any call, a probe included,
        # would be a use. So the thread is left alone for longer than its expiry, once.
        time.sleep(1.5)
        assert probe(idle) == probe(unknown)
        assert probe(idle)[0] == "not_found"
        assert shape(remote_error(initialize, c, workspace, thread_id=idle)) == \
            shape(remote_error(initialize, c, workspace, thread_id=unknown))
        # Its slot is free again; and a name reopens as a new thread, not the old one.
        fresh = initialize(c, workspace, thread_name="idle")
        assert fresh["resumed"] is False and fresh["thread_id"] != idle
        other = initialize(c, workspace, thread_name="other")["thread_id"]
    # Gone from the store too: a restart does not bring it back.
    daemon.stop()
    home.start_daemon()
    with home.client() as c:
        assert shape(remote_error(initialize, c, workspace, thread_id=idle))[0] == "not_found"
        del other


def test_a_thread_in_use_does_not_expire(home, workspace):
    home.write_config("thread_idle_expiry_seconds = 2\n")
    home.start_daemon()
    s = Session(home, workspace, thread_name="busy")
    until = time.monotonic() + 5  # two and a half expiry periods
    while time.monotonic() < until:
        assert s.list()["executions"] == []  # each call is a use
        time.sleep(0.2)  # a client's pace between calls, not a synchronisation
    s.close()


def test_thread_limits_are_settings(home):
    home.write_config("thread_idle_expiry_seconds = 0\n")
    with pytest.raises(AssertionError) as info:
        home.start_daemon()
    assert "thread_idle_expiry_seconds" in str(info.value)
