"""run_bounded: exact caps, tail mode, deadline and the process group stop, on real processes."""

from __future__ import annotations

import os
import sys

import pytest
import trio

from vigil.daemon.agent.herdr_process import run_bounded


def py(code: str) -> list[str]:
    return [sys.executable, "-c", code]


async def run(code: str, *, deadline_s: float = 10.0, **kw):
    kw.setdefault("stdout_max", 100)
    kw.setdefault("stderr_max", 10)
    return await run_bounded(py(code), env=dict(os.environ), deadline=trio.current_time() + deadline_s, **kw)


async def test_normal_exit():
    r = await run("import sys; sys.stdout.write('out'); sys.stderr.write('err'); sys.exit(3)")
    assert (r.returncode, r.stdout, r.stderr) == (3, b"out", b"err")
    assert (r.timed_out, r.stdout_overflow, r.stderr_truncated) == (False, False, False)


async def test_stdout_exactly_at_cap():
    r = await run("import sys; sys.stdout.write('a' * 100)")
    assert (r.returncode, r.stdout, r.stdout_overflow) == (0, b"a" * 100, False)


async def test_stdout_over_cap_fails_and_stops_the_process():
    # The child would write forever: only the cap ends it.
    r = await run("import sys\nwhile True: sys.stdout.write('b' * 4096); sys.stdout.flush()")
    assert r.returncode is None
    assert r.stdout == b"b" * 100
    assert (r.stdout_overflow, r.timed_out) == (True, False)


async def test_tail_mode_keeps_the_last_bytes():
    r = await run(
        "import sys; sys.stdout.write(''.join(f'{i:05d}' for i in range(10000)))",
        stdout_mode="tail",
    )
    assert r.returncode == 0
    assert r.stdout == "".join(f"{i:05d}" for i in range(9980, 10000)).encode()
    assert r.stdout_overflow is True


async def test_stderr_is_truncated_and_drained():
    r = await run("import sys; sys.stderr.write('e' * 200000); sys.stdout.write('ok')")
    assert (r.returncode, r.stdout, r.stderr, r.stderr_truncated) == (0, b"ok", b"e" * 10, True)


async def test_deadline_terminates_then_reports():
    r = await run("import time; time.sleep(60)", deadline_s=0.3)
    assert (r.returncode, r.timed_out) == (None, True)


async def test_missing_executable_raises_oserror():
    with pytest.raises(OSError):
        await run_bounded(
            ["/nonexistent/herdr"], env={}, deadline=trio.current_time() + 1, stdout_max=1, stderr_max=1
        )


async def test_environment_is_exactly_the_given_one():
    r = await run_bounded(
        py("import os, json; print(json.dumps(sorted(k for k in os.environ if k.startswith('ONLY_'))))"),
        env={"ONLY_THIS": "1", "PATH": os.environ["PATH"]},
        deadline=trio.current_time() + 10,
        stdout_max=1000,
        stderr_max=1000,
    )
    assert r.stdout.strip() == b'["ONLY_THIS"]'
