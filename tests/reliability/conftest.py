"""The long-run switch: `VIGIL_LONG_FUZZ=1` turns on the long runs (100k fuzz examples per
property in tests/unit/test_fuzz_*.py, 2,000 load requests per client here); CI runs the
short ones. The modules read the variable themselves (so a unit module does not depend on
this conftest); any test carrying the `fuzz` marker — one that only makes sense long — is
skipped unless it is set."""

import os

import pytest

LONG = os.environ.get("VIGIL_LONG_FUZZ") == "1"


def pytest_collection_modifyitems(config, items):
    if LONG:
        return
    skip = pytest.mark.skip(reason="long run: set VIGIL_LONG_FUZZ=1")
    for item in items:
        if "fuzz" in item.keywords:
            item.add_marker(skip)
