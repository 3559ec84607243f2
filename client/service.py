"""`vigil service install`: write the user units with the real path of vigild."""

from __future__ import annotations

import os
import shutil
import sys
from importlib import resources
from pathlib import Path

UNITS = ("vigil.service", "vigil.socket")


def vigild_path() -> str:
    """The vigild beside this interpreter (venv or system), else the one on PATH."""
    beside = Path(sys.executable).with_name("vigild")
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which("vigild")
    if found:
        return os.path.realpath(found)
    return f"{sys.executable} -m vigil.daemon"


def render(name: str, vigild: str | None = None) -> str:
    text = resources.files("vigil.systemd").joinpath(name).read_text()
    return text.replace("@VIGILD@", vigild or vigild_path())


def unit_dir() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "systemd" / "user"


def install(target: Path | None = None) -> list[str]:
    target = target or unit_dir()
    target.mkdir(parents=True, exist_ok=True)
    written = []
    for name in UNITS:
        path = target / name
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(render(name))
        os.replace(tmp, path)
        written.append(str(path))
    return written
