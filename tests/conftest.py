import pytest

from tests.support.daemon import VigilHome


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
