"""The work queue's benchmark empties a real queue, each submission claimed once."""

import pytest
from postgres_server import postgres_server

from course.bench import queue as queue_bench

pytestmark = pytest.mark.slow  # a PostgreSQL server


def test_the_graders_of_the_benchmark_claim_every_submission_once():
    with postgres_server() as url:
        milliseconds = queue_bench.overhead_ms(url, "bench", graders=3)
    assert milliseconds > 0  # and overhead_ms checked that the graders claimed 200 in all
