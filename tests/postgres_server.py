"""A real PostgreSQL server for the checks (`course.coursedir.scratch_postgres`), or a skip."""

import contextlib

import pytest

from course.coursedir.scratch_postgres import postgres_binaries, scratch_postgres


@contextlib.contextmanager
def postgres_server():
    """Run a throwaway PostgreSQL server; yield its URL. Skip the test where none is installed."""
    if postgres_binaries() is None:
        pytest.skip("PostgreSQL is not installed (apt-get install postgresql; .ci/run does it)")
    with scratch_postgres() as url:
        yield url
