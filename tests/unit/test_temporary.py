"""The managed-helper service on its own: what cannot be established leaves the files in
place (unresolved ownership, no /proc), unmeasured counts are omitted (never zero), and
what a plain name is. Everything through a real directory; the daemon's runtime view is
the only thing stood in for (`ThreadActivity`), since provoking an unreadable process of
the thread needs another uid."""

from __future__ import annotations

import msgspec
import pytest

from vigil.daemon.rpc.scopes import ThreadRecord
from vigil.daemon.settings import Settings
from vigil.daemon.temporary import activity
from vigil.daemon.temporary.directory import ManagedDirectories, Measurement, measure
from vigil.daemon.temporary.service import TemporaryHelpers, ThreadActivity, bad_name, usage_of

THREAD = ThreadRecord(thread_id="a" * 32, workspace_root="/w")


@pytest.fixture
def helpers(tmp_path):
    tmp_path.chmod(0o700)
    return TemporaryHelpers(ManagedDirectories(tmp_path), None, None, None, None, Settings())


def directory(helpers: TemporaryHelpers):
    from pathlib import Path

    return Path(helpers.prepare(THREAD))


def revision(helpers: TemporaryHelpers) -> str:
    import os

    fd = helpers.directories.open(THREAD.principal, THREAD.thread_id)
    try:
        return measure(fd).revision
    finally:
        os.close(fd)


def test_unresolved_ownership_leaves_every_file_in_place(helpers):
    d = directory(helpers)
    (d / "h.py").write_text("h")
    result = helpers._release(THREAD, ["h.py", "gone"], revision(helpers),
                              ThreadActivity(unresolved="execution x has no live runtime"))
    assert [msgspec.to_builtins(r) for r in result.results] == [
        {"name": "h.py", "status": "refused", "reason": "ownership_unresolved"},
        {"name": "gone", "status": "not_found"}]
    assert (d / "h.py").exists() and result.partial


def test_without_proc_nothing_is_released(helpers, monkeypatch):
    d = directory(helpers)
    (d / "h.py").write_text("h")
    monkeypatch.setattr(activity, "supported", lambda: False)
    result = helpers._release(THREAD, ["h.py"], revision(helpers), ThreadActivity())
    assert [(r.status, r.reason) for r in result.results] == [("refused", "unsupported_platform")]
    assert (d / "h.py").exists()


def test_an_unreadable_process_of_the_thread_leaves_files_in_place(helpers, monkeypatch):
    d = directory(helpers)
    (d / "h.py").write_text("h")

    def unreadable(pids, commands, candidates, callers):
        raise activity.Unresolved("/proc/1/fd: Permission denied")

    monkeypatch.setattr(activity, "holders", unreadable)
    result = helpers._release(THREAD, ["h.py"], revision(helpers), ThreadActivity())
    assert [(r.status, r.reason) for r in result.results] == [("refused", "ownership_unresolved")]
    assert (d / "h.py").exists()


def test_unmeasured_counts_are_omitted_never_zero():
    settings = Settings()
    unknown = usage_of(Measurement(revision="r", entries=[], total_bytes=None, count=None),
                       settings)
    assert msgspec.to_builtins(unknown) == {
        "temporary_usage_schema": 1, "temporary_budget_files": 256,
        "temporary_budget_bytes": 64 << 20}
    over = usage_of(Measurement(revision="r", entries=[], total_bytes=None, count=257), settings)
    assert (over.temporary_file_count, over.temporary_bytes, over.temporary_over_budget) == (
        257, None, True)  # over on what was measured; the bytes stay unknown
    within = usage_of(Measurement(revision="r", entries=[], total_bytes=None, count=3), settings)
    assert within.temporary_over_budget is None


@pytest.mark.parametrize("name,bad", [
    ("h.py", False), (".hidden", False), ("..x", False), ("a b", False), ("é" * 127, False),
    ("", True), (".", True), ("..", True), ("a/b", True), ("/", True), ("a\0b", True),
    ("é" * 128, True), ("n" * 256, True)])
def test_plain_names(name, bad):
    assert bad_name(name) is bad


def test_names_are_matched_as_words_of_running_commands():
    c = activity.Candidate("h.py", "/s/t/h.py", 1, 2)
    named = activity.named_by_commands
    assert named(["python3 h.py"], [c]) and named(["cat ./h.py|wc"], [c])
    assert named(['python3 "$VIGIL_TEMPORARY_DIR/h.py"'], [c]) and named(["x=/s/t/h.py"], [c])
    assert not named(["python3 h.pyc"], [c]) and not named(["echo gh.py"], [c])


def test_an_entry_that_vanishes_while_measured_is_never_counted_as_zero(tmp_path, monkeypatch):
    import os

    (tmp_path / "top.txt").write_text("12345")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "deep.bin").write_text("x")
    real = os.lstat

    def vanishing(name, *, dir_fd=None, **kw):
        if name == vanishes:
            raise FileNotFoundError(2, "No such file or directory", name)
        return real(name, dir_fd=dir_fd, **kw)

    monkeypatch.setattr(os, "lstat", vanishing)
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        vanishes = "deep.bin"  # below the top: the count is known, the bytes are not
        m = measure(fd)
        assert (m.count, m.total_bytes) == (2, None)
        vanishes = "top.txt"  # a helper itself: neither is known
        m = measure(fd)
        assert (m.count, m.total_bytes) == (None, None)
        vanishes = None
        m = measure(fd)
        assert (m.count, m.total_bytes) == (2, 6)
    finally:
        os.close(fd)
