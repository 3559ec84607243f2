"""Start a guardian from a bare interpreter: `python -I -S boot.py DAEMON_DIR PROTOCOL_DIR ARGS`.

An idle guardian's memory is multiplied by the executions running, so it starts from the
floor: `-I` (no environment variables, no user site, no script dir on sys.path) and `-S`
(no `site`: no site-packages scan, no .pth files, no editable-install import hooks). Then
nothing on sys.path knows where vigil is, so the launcher names the two directories the
guardian imports from, `vigil.daemon`'s and `vigil.protocol`'s (wherever vigil is
installed: a checkout, a wheel), and this script registers them as packages. It does not run
their `__init__` modules (vigil.protocol's imports its error enum, which the guardian does
not need). ARGS are the guardian's own (`__main__.py`).

Run as a script, not imported: keep it this small (a script is compiled at every start).
"""

import sys


def _package(name: str, path: str) -> None:
    module = type(sys)(name)
    module.__path__ = [path] if path else []
    module.__package__ = name
    sys.modules[name] = module


def register(daemon_dir: str, protocol_dir: str) -> None:
    """Make `vigil.daemon` and `vigil.protocol` importable from these directories."""
    _package("vigil", "")
    _package("vigil.daemon", daemon_dir)
    _package("vigil.protocol", protocol_dir)


def main() -> int:
    daemon_dir, protocol_dir, *args = sys.argv[1:]
    register(daemon_dir, protocol_dir)
    from vigil.daemon.guardian.__main__ import main as guardian_main

    return guardian_main(args)


if __name__ == "__main__":
    sys.exit(main())
