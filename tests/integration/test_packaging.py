"""A built wheel carries all three packages (and their data) and imports on its own."""

import subprocess
import sys
import sysconfig
import zipfile

from tests.support.daemon import REPO


def test_wheel_contents_and_import(tmp_path):
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps",
                            "--no-build-isolation", "-w", str(tmp_path), str(REPO)],
                           check=True, capture_output=True, text=True)
    # setuptools says nothing is deprecated in how vigil is declared (the licence, packages).
    said = (built.stdout + built.stderr).lower()
    assert "deprecat" not in said and "is absent from the `packages`" not in said, said
    (wheel,) = tmp_path.glob("vigil-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for required in ("vigil/protocol/connection.py", "vigil/client/cli.py", "vigil/daemon/main.py",
                     "vigil/daemon/guardian/__init__.py", "vigil/systemd/vigil.service",
                     "vigil/systemd/vigil.socket", "vigil/client/commands/run.py",
                     "vigil/daemon/recognize/manifests/shell.toml"):
        assert required in names, required
    # The licence file the MIT declaration points at ships with the metadata.
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names), sorted(names)[-8:]
    metadata = [n for n in names if n.endswith(".dist-info/METADATA")][0]
    assert "License-Expression: MIT" in zipfile.ZipFile(wheel).read(metadata).decode()
    assert not any(n.startswith(("protocol/", "client/", "daemon/", "tests/")) for n in names)
    entry = [n for n in names if n.endswith("entry_points.txt")][0]
    text = zipfile.ZipFile(wheel).read(entry).decode()
    assert "vigil = vigil.client.cli:main" in text and "vigild = vigil.daemon.main:main" in text
    # Import from the unpacked wheel (what installing it amounts to), with -S so the editable install's finder (a
    # .pth hook) is not active; the dependencies come from site-packages, after the wheel.
    probe = ("import sys; sys.path[:0] = [sys.argv[1], sys.argv[2]];"
             "import vigil.protocol, vigil.client.cli, vigil.daemon.main;"
             "vigil.client.cli.build_parser();"
             "from vigil.client import service;"
             "assert vigil.client.cli.__file__.startswith(sys.argv[1]), vigil.client.cli.__file__;"
             "assert 'ExecStart=@VIGILD@' in __import__('importlib.resources').resources"
             ".files('vigil.systemd').joinpath('vigil.service').read_text();print('ok')")
    purelib = sysconfig.get_paths()["purelib"]
    unpacked = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(unpacked)
    out = subprocess.run([sys.executable, "-S", "-c", probe, str(unpacked), purelib],
                         capture_output=True, text=True)
    assert out.stdout == "ok\n", out.stderr
