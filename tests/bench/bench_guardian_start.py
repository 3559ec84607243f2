"""How long a guardian takes to start, next to a bare Python start measured in the same run.

    .venv/bin/python tests/bench/bench_guardian_start.py [--runs 20]

"guardian" is `launch_guardian()` from call to return: spawning the interpreter, imports,
the detaching fork, binding the socket, fork+exec of the child (`true`) and the readiness
message. "python -I -c pass" is `subprocess.run` of the same interpreter doing nothing. Each
guardian is started with exit_linger 0 and waited for (pidfd) before the next start, so no
run overlaps another. Whether bytecode caches exist matters (~15 ms): it is printed.
"""

from __future__ import annotations

import argparse
import os
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import msgspec

from vigil.daemon.guardian import launch as launch_mod
from vigil.daemon.guardian.launch import launch_guardian, make_launch_spec
from vigil.daemon.settings import DEFAULTS


def _wait_gone(pid: int, timeout: float = 10.0) -> None:
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        select.select([fd], [], [], timeout)
    finally:
        os.close(fd)


def bench_python(runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-I", "-c", "pass"], check=True)
        times.append(time.perf_counter() - t0)
    return times


def bench_guardian(runs: int) -> list[float]:
    root = tempfile.mkdtemp(prefix="vgb-", dir="/tmp")
    os.chmod(root, 0o700)
    times = []
    try:
        for i in range(runs):
            spec = make_launch_spec(
                runtime_id=f"bench{i}",
                argv=["true"],
                cwd="/",
                env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
                socket_path=os.path.join(root, f"b{i}.sock"),
                records_dir=root,
                settings=DEFAULTS,
            )
            spec = msgspec.structs.replace(spec, exit_linger_seconds=0.0)
            t0 = time.perf_counter()
            identity = launch_guardian(spec, DEFAULTS)
            times.append(time.perf_counter() - t0)
            _wait_gone(identity.guardian_pid)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    cache = os.path.join(os.path.dirname(launch_mod.__file__), "__pycache__")
    print(f"python: {sys.executable} {sys.version.split()[0]}")
    print(f"bytecode cache for vigil.daemon.guardian: {'present' if os.path.isdir(cache) else 'absent'}"
          f" (PYTHONDONTWRITEBYTECODE={os.environ.get('PYTHONDONTWRITEBYTECODE', '')!r})")
    bench_guardian(2)  # warm the page cache
    py = bench_python(args.runs)
    g = bench_guardian(args.runs)
    for name, times in (("python -I -c pass", py), ("guardian start (launch_guardian)", g)):
        print(f"{name:34s} median {statistics.median(times) * 1000:6.1f} ms   "
              f"min {min(times) * 1000:6.1f} ms   max {max(times) * 1000:6.1f} ms   (n={len(times)})")
    print(f"guardian overhead over a bare interpreter: {(statistics.median(g) - statistics.median(py)) * 1000:.1f} ms")


if __name__ == "__main__":
    main()
