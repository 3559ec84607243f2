"""Tests that need an outside program (tmux, vttest, vim…): skipped where it is absent, but
never in CI, where a silent skip would hide that the comparison never ran.

Mark a test or module with `pytest.mark.needs_program("vttest")`; tests/conftest.py checks
the marks before each test. `.ci/run` installs every such program and sets `VIGIL_CI=1`, so
there a missing one fails the test and says so.
"""

from __future__ import annotations

import os
import shutil

import pytest

#: Set by `.ci/run`: every program a test needs is installed, so none may be skipped.
IN_CI = bool(os.environ.get("VIGIL_CI"))


def check_programs(item: pytest.Item) -> None:
    """Skip (or, in CI, fail) `item` when a program one of its `needs_program` marks names
    is not on PATH."""
    for mark in item.iter_markers("needs_program"):
        for program in mark.args:
            if shutil.which(program) is None:
                if IN_CI:
                    pytest.fail(f"{program} is not installed, and CI must run this test "
                                f"(.ci/run installs it)", pytrace=False)
                pytest.skip(f"needs {program} (.ci/run installs it)")
