"""Registry: built-ins, user overrides and additions, reload, bad files, `auto` selection."""

from __future__ import annotations

import os

import pytest

from vigil.daemon.recognize import BUILTIN_ORDER, RecognitionInput, Registry, UnknownRecognizer, load_builtins
from vigil.protocol.errors import ErrorCode

BUILTINS = load_builtins()
PROMPT = RecognitionInput(lines=["alice@host:~$ ".ljust(80)], cursor=(0, 14))


def user_manifest(name, state="busy", fg=(), text="alice"):
    fgs = ", ".join(f'"{f}"' for f in fg)
    return (f'[manifest]\nname = "{name}"\nversion = "u1"\nmatch_foreground = [{fgs}]\n\n'
            f'[[rule]]\nname = "mine"\nstate = "{state}"\npriority = 1\ncontains = "{text}"\n')


def write(path, text, mtime_ns):
    path.write_text(text)
    os.utime(path, ns=(mtime_ns, mtime_ns))


@pytest.fixture
def registry(tmp_path):
    return Registry(tmp_path / "recognizers", builtins=BUILTINS)


def test_builtins_load_from_package_data():
    assert list(BUILTINS) == list(BUILTIN_ORDER) == ["claude", "codex", "shell", "pager", "editor", "progress", "generic"]
    assert all(m.source == f"<builtin:{n}.toml>" for n, m in BUILTINS.items())


def test_default_user_dir_follows_xdg_config_home(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert Registry(builtins=BUILTINS).user_dir == tmp_path / "vigil" / "recognizers"


def test_missing_user_dir_is_fine(registry):
    assert registry.errors == [] and registry.names() == ["auto", "claude", "codex", "shell", "pager", "editor", "progress", "generic"]
    assert registry.reload_if_changed() is False


def test_user_manifest_overrides_builtin_and_adds_new(registry):
    d = registry.user_dir
    d.mkdir()
    write(d / "shell.toml", user_manifest("shell", "awaiting_approval"), 1_000_000_000)
    write(d / "mine.toml", user_manifest("mytool", fg=["mytool"]), 1_000_000_000)
    assert registry.reload_if_changed() is True
    assert registry.errors == []
    assert registry.names() == ["auto", "claude", "codex", "shell", "pager", "editor", "progress", "generic", "mytool"]
    det = registry.detect("shell", PROMPT)
    assert (det.state, det.rule, det.manifest_version) == ("awaiting_approval", "mine", "u1")
    assert registry.get("shell").source == str(d / "shell.toml")
    assert registry.detect("mytool", PROMPT).state == "busy"
    assert registry.reload_if_changed() is False  # nothing changed: no re-read
    gen = registry.generation
    (d / "shell.toml").unlink()
    assert registry.reload_if_changed() is True
    assert registry.detect("shell", PROMPT).state == "awaiting_input"  # built-in back
    assert registry.generation == gen + 1


def test_changed_file_is_reloaded(registry):
    d = registry.user_dir
    d.mkdir()
    write(d / "t.toml", user_manifest("tool", "busy"), 1_000_000_000)
    registry.reload_if_changed()
    assert registry.detect("tool", PROMPT).state == "busy"
    write(d / "t.toml", user_manifest("tool", "unknown"), 2_000_000_000)
    assert registry.reload_if_changed() is True
    det = registry.detect("tool", PROMPT)
    assert (det.state, det.source) == ("unknown", "rule")


def test_bad_user_file_keeps_builtin_and_reports_error(registry):
    d = registry.user_dir
    d.mkdir()
    bad = user_manifest("shell").replace('contains = "alice"', "regex = '(['")
    write(d / "shell.toml", bad, 1_000_000_000)
    write(d / "zz.toml", "[manifest\n", 1_000_000_000)
    assert registry.reload_if_changed() is True
    assert [(e.file, e.line, e.reason) for e in registry.errors] == [
        (str(d / "shell.toml"), 10,
         "rule[0] 'mine'.regex: bad regular expression '([': unterminated character set at position 1"),
        (str(d / "zz.toml"), 1, "TOML syntax: Expected ']' at the end of a table declaration (at line 1, column 10)"),
    ]
    assert registry.detect("shell", PROMPT).rule == "prompt"  # the built-in stayed
    write(d / "shell.toml", user_manifest("shell", "busy"), 2_000_000_000)
    (d / "zz.toml").unlink()
    registry.reload_if_changed()
    assert registry.errors == [] and registry.detect("shell", PROMPT).rule == "mine"


def test_two_user_files_with_one_name(registry):
    d = registry.user_dir
    d.mkdir()
    write(d / "a.toml", user_manifest("tool", "busy"), 1_000_000_000)
    write(d / "b.toml", user_manifest("tool", "unknown"), 1_000_000_000)
    registry.reload_if_changed()
    assert [(e.file, e.line, e.reason) for e in registry.errors] == [
        (str(d / "b.toml"), None, f"manifest 'tool' is already defined by {d / 'a.toml'}")]
    assert registry.detect("tool", PROMPT).state == "busy"


def test_unknown_recognizer(registry):
    with pytest.raises(UnknownRecognizer) as info:
        registry.detect("vim", PROMPT)
    assert info.value.code is ErrorCode.INVALID_REQUEST
    assert info.value.message == "unknown recognizer 'vim' (available: auto, claude, codex, shell, pager, editor, progress, generic)"


@pytest.mark.parametrize(
    ("foreground", "argv", "manifest", "why"),
    [
        ("claude", (), "claude", "auto: foreground 'claude' matches manifest 'claude'"),
        ("node", ("node", "/usr/lib/node_modules/@anthropic-ai/claude-code/cli.js"), "claude",
         "auto: foreground '/usr/lib/node_modules/@anthropic-ai/claude-code/cli.js' matches manifest 'claude'"),
        ("codex", (), "codex", "auto: foreground 'codex' matches manifest 'codex'"),
        ("codex-x86_64-unknown-linux-musl", (), "codex",
         "auto: foreground 'codex-x86_64-unknown-linux-musl' matches manifest 'codex'"),
        ("bash", (), "shell", "auto: foreground 'bash' matches manifest 'shell'"),
        ("-bash", (), "shell", "auto: foreground 'bash' matches manifest 'shell'"),
        ("/bin/sh", (), "shell", "auto: foreground 'sh' matches manifest 'shell'"),
        ("zsh", (), "shell", "auto: foreground 'zsh' matches manifest 'shell'"),
        ("python3", ("python3", "-i"), "generic", "auto: no manifest matches foreground 'python3'; fallback 'generic'"),
        (None, (), "generic", "auto: foreground unknown; fallback 'generic'"),
    ],
)
def test_auto_selection(registry, foreground, argv, manifest, why):
    inp = RecognitionInput(lines=["x"], foreground=foreground, foreground_argv=argv)
    det = registry.detect("auto", inp)
    assert (det.recognizer, det.selected_by) == (manifest, why)


def test_auto_prefers_user_manifests(registry):
    d = registry.user_dir
    d.mkdir()
    write(d / "n.toml", user_manifest("nodeapp", fg=["node"]), 1_000_000_000)
    registry.reload_if_changed()
    det = registry.detect("auto", RecognitionInput(lines=["alice"], foreground="node"))
    assert (det.recognizer, det.state, det.selected_by) == (
        "nodeapp", "busy", "auto: foreground 'node' matches manifest 'nodeapp'")


def test_explicit_selection_is_reported(registry):
    assert registry.detect("generic", PROMPT).selected_by == "explicit"
