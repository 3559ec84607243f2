"""The set of manifests the daemon recognizes with: built-ins plus the user's own.

Built-ins ship as package data (`vigil/daemon/recognize/manifests/*.toml`). User manifests
live in `$XDG_CONFIG_HOME/vigil/recognizers/*.toml` (default `~/.config/...`); a user
manifest whose `[manifest] name` is a built-in's replaces it, any other name adds one.

`reload_if_changed()` compares the directory's `(file name, mtime_ns, size, inode)` list with
the last one it saw and re-reads only when that differs. Its cost is one `scandir` plus one
`stat` per file (tens of microseconds for a handful of files), so the daemon may call it
before each `explain`/evaluation, or on a timer; it never raises for a bad file. A bad user
file is skipped, with a `ManifestError` (file, line, reason) in `errors`; built-ins stay in
force, including one that the bad file meant to override.

`auto` (spec: `"recognizer": "auto"`) picks by the foreground process: the first manifest,
user-only manifests (by name) then built-ins in `BUILTIN_ORDER`, whose `match_foreground`
fnmatch patterns match the foreground's basename, argv[0]'s basename, or argv[1] (whole
path or basename: `node …/claude-code/cli.js`). A login shell's leading `-` is dropped.
No match, or no foreground, falls back to `generic`. The choice and its evidence are in
`Detection.selected_by`.
"""

from __future__ import annotations

import importlib.resources
import os
import time
from pathlib import Path

from vigil.protocol.errors import ErrorCode, VigilError

from ._engine import evaluate
from ._manifest import Manifest, ManifestError, parse_manifest
from ._model import Detection, RecognitionInput

#: Built-in manifests in `auto`'s order. `generic` matches no foreground: it is the fallback.
BUILTIN_ORDER = ("claude", "codex", "shell", "pager", "generic")
FALLBACK = "generic"
AUTO = "auto"


class UnknownRecognizer(VigilError):
    """A request named a recognizer that is not loaded (`invalid_request`)."""

    def __init__(self, name: str, available: list[str]) -> None:
        super().__init__(
            ErrorCode.INVALID_REQUEST,
            f"unknown recognizer {name!r} (available: {', '.join(available)})",
            {"recognizer": name, "available": available},
        )


def user_manifest_dir() -> Path:
    """`$XDG_CONFIG_HOME/vigil/recognizers`, `~/.config/vigil/recognizers` by default."""
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "vigil" / "recognizers"


def load_builtins() -> dict[str, Manifest]:
    """The packaged manifests. A bad built-in is a bug in vigil: ManifestError propagates."""
    out: dict[str, Manifest] = {}
    root = importlib.resources.files("vigil.daemon.recognize") / "manifests"
    for name in BUILTIN_ORDER:
        entry = root / f"{name}.toml"
        m = parse_manifest(entry.read_bytes(), f"<builtin:{name}.toml>")
        if m.name != name:
            raise ManifestError(f"<builtin:{name}.toml>", None, f"declares name {m.name!r}, expected {name!r}")
        out[name] = m
    return out


def foreground_candidates(inp: RecognitionInput) -> list[str]:
    """Names `match_foreground` patterns are tried against, most specific first."""
    out: list[str] = []

    def add(s: str | None, login_dash: bool = False) -> None:
        if s:
            s = s.lstrip("-") if login_dash else s
            if s and s not in out:
                out.append(s)

    if inp.foreground:
        add(os.path.basename(inp.foreground), True)
    argv = inp.foreground_argv
    if argv:
        add(os.path.basename(argv[0]), True)
    if len(argv) > 1:
        add(os.path.basename(argv[1]))
        add(argv[1])
    return out


class Registry:
    """Built-in and user manifests, reloadable. Not thread-safe: the daemon's trio thread owns it.

    Attributes:
        errors: the problems of the last (re)load, one ManifestError per bad user file.
        generation: advances each time the effective set of manifests changes.
    """

    def __init__(self, user_dir: Path | None = None, *, builtins: dict[str, Manifest] | None = None) -> None:
        self.user_dir = user_dir if user_dir is not None else user_manifest_dir()
        self.builtins = builtins if builtins is not None else load_builtins()
        self.errors: list[ManifestError] = []
        self.generation = 0
        self._manifests: dict[str, Manifest] = dict(self.builtins)
        self._user_names: list[str] = []
        self._signature: tuple | None = None
        self._scanned_at = 0.0
        self.reload_if_changed()

    # --- loading ------------------------------------------------------------------------------

    def _scan(self) -> tuple:
        try:
            with os.scandir(self.user_dir) as it:
                entries = []
                for e in it:
                    if e.name.endswith(".toml") and not e.name.startswith("."):
                        try:
                            st = e.stat()
                        except OSError:
                            continue
                        entries.append((e.name, st.st_mtime_ns, st.st_size, st.st_ino))
        except (FileNotFoundError, NotADirectoryError):
            return ()
        except OSError as exc:
            return (("<error>", str(exc)),)
        return tuple(sorted(entries))

    def reload_if_stale(self, max_age: float) -> bool:
        """`reload_if_changed`, unless the directory was looked at less than `max_age` seconds
        ago: for live recognition, which evaluates hundreds of times a second with many
        executions running (one directory scan each was 5% of the daemon's time)."""
        if time.monotonic() - self._scanned_at < max_age:
            return False
        return self.reload_if_changed()

    def reload_if_changed(self) -> bool:
        """Re-read the user directory if its files changed since the last look.

        Returns:
            True when the files were re-read (then `errors` describes the new state).
        """
        self._scanned_at = time.monotonic()
        sig = self._scan()
        if sig == self._signature:
            return False
        self._signature = sig
        manifests = dict(self.builtins)
        errors: list[ManifestError] = []
        defined_by: dict[str, str] = {}
        user_names: list[str] = []
        if sig and sig[0][0] == "<error>":
            errors.append(ManifestError(str(self.user_dir), None, f"cannot list directory: {sig[0][1]}"))
            sig = ()
        for fname, *_ in sig:
            path = self.user_dir / fname
            try:
                raw = path.read_bytes()
            except OSError as exc:
                errors.append(ManifestError(str(path), None, f"cannot read: {exc.strerror or exc}"))
                continue
            try:
                m = parse_manifest(raw, str(path))
            except ManifestError as exc:
                errors.append(exc)
                continue
            if m.name in defined_by:
                errors.append(ManifestError(str(path), None,
                                            f"manifest {m.name!r} is already defined by {defined_by[m.name]}"))
                continue
            defined_by[m.name] = str(path)
            manifests[m.name] = m
            if m.name not in self.builtins:
                user_names.append(m.name)
        self.errors = errors
        if manifests != self._manifests:
            self.generation += 1
        self._manifests = manifests
        self._user_names = sorted(user_names)
        return True

    # --- lookup -------------------------------------------------------------------------------

    def names(self) -> list[str]:
        """Every name a request may use: `auto`, the built-ins, then user-only manifests."""
        return [AUTO, *BUILTIN_ORDER, *self._user_names]

    def get(self, name: str) -> Manifest:
        """The effective manifest of that name. Raises UnknownRecognizer (also for `auto`)."""
        m = self._manifests.get(name)
        if m is None:
            raise UnknownRecognizer(name, self.names())
        return m

    def select(self, inp: RecognitionInput) -> tuple[Manifest, str]:
        """`auto`: the manifest for this input and the evidence for choosing it."""
        cands = foreground_candidates(inp)
        if cands:
            for name in (*self._user_names, *BUILTIN_ORDER):
                m = self._manifests[name]
                hit = m.matches_foreground(cands)
                if hit is not None:
                    return m, f"auto: foreground {hit!r} matches manifest {name!r}"
            return self._manifests[FALLBACK], f"auto: no manifest matches foreground {cands[0]!r}; fallback {FALLBACK!r}"
        return self._manifests[FALLBACK], f"auto: foreground unknown; fallback {FALLBACK!r}"

    def detect(self, recognizer: str, inp: RecognitionInput) -> Detection:
        """Recognize `inp` with the named manifest, or `auto`.

        Raises:
            UnknownRecognizer: no manifest of that name.
        """
        if recognizer == AUTO:
            return self._auto(inp)
        return evaluate(self.get(recognizer), inp)

    def _auto(self, inp: RecognitionInput) -> Detection:
        """`auto`: the foreground's manifest, with two refinements.

        - A catch-all answer (a priority ≤ 0 rule such as the shell's 'running', or no rule)
          yields to a real match of `generic`: `bash -c 'read -s -p Password:'` has bash in
          the foreground, but the screen shows a password prompt.
        - A foreground that no manifest knows (`sleep` started from a shell) is judged by
          `generic`; if that knows nothing either, by the session leader's manifest (the
          shell: not at its prompt, so busy).
        """
        manifest, why = self.select(inp)
        det = evaluate(manifest, inp, selected_by=why)
        generic = self._manifests[FALLBACK]
        if manifest is not generic and det.state != "exited" and (
                det.source == "fallback" or (det.priority is not None and det.priority <= 0)):
            alt = evaluate(generic, inp, selected_by=why + f"; a {FALLBACK!r} rule outranks "
                                                          f"the catch-all of {manifest.name!r}")
            if alt.source == "rule" and alt.state != "unknown":
                return alt
        if manifest is generic and det.state == "unknown" and inp.leader:
            for name in (*self._user_names, *BUILTIN_ORDER):
                m = self._manifests[name]
                hit = m.matches_foreground([os.path.basename(inp.leader).lstrip("-")])
                if hit is not None and m is not generic:
                    return evaluate(m, inp, selected_by=why + f"; no {FALLBACK!r} rule matched; "
                                                            f"session leader {hit!r} matches {name!r}")
        return det
