import pytest

from retryrs import testing


@pytest.fixture(autouse=True)
def _real_time_between_tests():
    # No test may leak virtual time into the next: neither this context's switch nor the
    # process-wide one.
    yield
    testing.disable()
    testing.disable(scope="process")


@pytest.fixture
def virtual():
    with testing.virtual_time() as clock:
        yield clock
