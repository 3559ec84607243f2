"""`vigil export`: an execution's recording as asciicast v2, through the real daemon, read back
with the asciinema package's own parser (and `asciinema cat`), played through a terminal
emulator (pyte) and compared with `vigil screen`."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pyte
import pytest
from asciinema import asciicast

from tests.support.executions import (  # noqa: F401  (fixtures)
    Gate,
    Session,
    cli_env,
    python_child,
    session,
    workspace,
)
from vigil.client.asciicast import gap_marker

#: Part one: colours, a wide character pair, and a cursor move that overwrites a cell.
PART1 = "plain \\033[1;31mred\\033[0m 日本\\r\\n\\033[1;3HX\\033[3;1H"
#: Part two, after the resize: more lines than the first size had rows, so it scrolls.
PART2 = "".join(f"line {i}\\r\\n" for i in range(14)) + "end"


def screen_lines(text: str) -> list[str]:
    lines = [line.rstrip() for line in text.split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def play(header: dict, events: list) -> list[str]:
    """The screen an asciicast leaves in a terminal emulator (output and resizes)."""
    screen = pyte.Screen(header["width"], header["height"])
    stream = pyte.Stream(screen)
    for _, code, data in events:
        if code == "o":
            stream.feed(data)
        elif code == "r":
            cols, rows = map(int, data.split("x"))
            screen.resize(lines=rows, columns=cols)
    return screen_lines("\n".join(screen.display))


def load(path) -> tuple[dict, list]:
    with asciicast.open_from_url(str(path)) as cast:
        return cast.v2_header, list(cast.events())


def vigil(home, cli_env, *args: str) -> subprocess.CompletedProcess:
    return home.cli(*args, env=cli_env)


def test_bad_input_is_refused_and_writes_nothing(home, session, cli_env, workspace):
    eid = session.run(argv=["true"])["execution_id"]
    session.wait_exit(eid)
    r = vigil(home, cli_env, "export", "0" * 32)
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.startswith("vigil: not_found: no execution '" + "0" * 32 + "' in ")
    r = vigil(home, cli_env, "export", eid, "--format", "gif")
    assert r.returncode == 2 and "argument --format: invalid choice: 'gif'" in r.stderr
    target = workspace / "missing" / "x.cast"
    r = vigil(home, cli_env, "export", eid, "-o", str(target))
    assert r.returncode == 1
    assert r.stderr == f"vigil: cannot write {target}: No such file or directory\n"
    assert not target.parent.exists()
    for params, field, message in (
            ({"offset": -1}, "params.offset", "Expected `int` >= 0"),
            ({"page_bytes": 3}, None, "page_bytes must be between 4 and 65536")):
        with pytest.raises(Exception) as err:
            session.call("recording", execution_id=eid, **params)
        assert err.value.code == "invalid_request" and message in err.value.message
        if field:
            assert err.value.data == {"field": field}
    # The connection stays usable after each refusal.
    assert session.call("recording", execution_id=eid)["has_more"] is False


def test_round_trip_through_asciinema_and_a_terminal_matches_vigil_screen(
        home, session, cli_env, workspace):
    gate = Gate(workspace / "gate")
    eid = session.run(argv=python_child(
        f"import sys\nsys.stdout.write('{PART1}')\nsys.stdout.flush()\n"
        + gate.wait_source() + f"sys.stdout.write('{PART2}')\n"), rows=10, cols=40)["execution_id"]
    session.read_until(eid, lambda p: "日本" in p["text"])
    seen = time.time()  # part one has arrived by now
    session.call("resize", execution_id=eid, rows=12, cols=50)
    opened = time.time()  # part two is written after this
    gate.open()
    assert session.wait_exit(eid)["exit_code"] == 0

    path = workspace / "run.cast"
    r = vigil(home, cli_env, "--json", "export", eid, "-o", str(path))
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == {"execution_id": eid, "format": "asciicast",
                                    "path": str(path), "bytes": path.stat().st_size}
    header, events = load(path)
    assert header["version"] == 2 and (header["width"], header["height"]) == (40, 10)
    assert header["title"] == session.get(eid)["command"]
    times = [e[0] for e in events]
    assert times == sorted(times) and times[0] >= 0
    codes = [e[1] for e in events]
    assert "m" not in codes  # everything retained, everything timed
    resize = codes.index("r")
    assert events[resize][2] == "50x12"
    first = next(e for e in events if e[1] == "o")
    last = next(e for e in reversed(events) if e[1] == "o")
    assert "日本" in first[2] and last[2].endswith("end")
    assert first[0] <= events[resize][0] <= last[0]
    # Real timings: part two arrived after the gate opened, part one before the test saw it.
    assert last[0] - first[0] >= (opened - seen) - 0.001

    screen = vigil(home, cli_env, "screen", eid)
    assert screen.returncode == 0
    assert play(header, events) == screen_lines(screen.stdout)
    assert play(header, events)[-1] == "end"

    # `asciinema cat` (the package's own player, without timing) prints the same output.
    cat = subprocess.run([sys.executable, "-m", "asciinema", "cat", str(path)],
                         capture_output=True, timeout=30)
    assert cat.returncode == 0, cat.stderr
    assert cat.stdout.decode() == "".join(e[2] for e in events if e[1] == "o")
    # Without -o the recording goes to stdout, the same bytes.
    assert vigil(home, cli_env, "export", eid).stdout == path.read_text()


def test_output_not_retained_is_a_marker(home, workspace, cli_env):
    home.write_config("retention_output_bytes = 4096\n")
    home.start_daemon()
    s = Session(home, workspace)
    try:
        eid = s.run(command="seq 1 3000")["execution_id"]
        rec = s.wait_exit(eid)
        start = rec["output"]["retained_start"]
        assert start > 0
        r = vigil(home, cli_env, "export", eid)
        assert r.returncode == 0, r.stderr
        events = [json.loads(line) for line in r.stdout.splitlines()[1:]]
        assert events[0][1:] == ["m", gap_marker(0, start)]
        assert events[1][0] >= events[0][0]
        retained = s.follow(eid).pages
        text = "".join(p["text"] for p in retained)
        assert "".join(e[2] for e in events if e[1] == "o") == text
        assert text.endswith("2999\r\n3000\r\n")
    finally:
        s.close()


def test_a_running_execution_exports_what_it_wrote_so_far(home, session, cli_env, workspace):
    gate = Gate(workspace / "gate")
    eid = session.run(argv=python_child("print('ready', flush=True)\n" + gate.wait_source()),
                      rows=5, cols=20)["execution_id"]
    session.read_until(eid, lambda p: "ready" in p["text"])
    r = vigil(home, cli_env, "export", eid)
    assert r.returncode == 0, r.stderr
    header, *events = [json.loads(line) for line in r.stdout.splitlines()]
    assert (header["width"], header["height"]) == (20, 5)
    # print() writes "ready" and "\n" apart: two events when they arrive 10 ms apart.
    assert {e[1] for e in events} == {"o"} and "".join(e[2] for e in events) == "ready\r\n"
    gate.open()
    assert session.wait_exit(eid)["exit_code"] == 0
