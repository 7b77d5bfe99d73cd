import pytest

from retryrs import testing


@pytest.fixture(autouse=True)
def _real_time_between_tests():
    # The virtual-time switch is process-wide: no test may leak it into the next.
    yield
    testing.disable()


@pytest.fixture
def virtual():
    with testing.virtual_time() as clock:
        yield clock
