import pytest

from tests.support.daemon import VigilHome
from tests.support.programs import check_programs


@pytest.fixture
def home():
    h = VigilHome()
    try:
        yield h
    finally:
        h.cleanup()


@pytest.fixture
def daemon(home):
    return home.start_daemon()


def pytest_runtest_setup(item):
    check_programs(item)
