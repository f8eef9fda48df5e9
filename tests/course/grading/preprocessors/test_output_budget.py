"""The grader's memory under floods of output of every kind (tests/attacks/floods.py).

Each flood runs in the course's executor with a sandboxed kernel, as a cell or while a test calls
the student's function, in a process of its own (output_memory.py) that measures its peak
resident memory; an honest cell is the baseline.
"""

import json
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
import zmq
from attacks.floods import FLOODS
from output_memory import DURING_A_TEST

from course.coursedir.nbgrader_run import nbgrader_environment
from course.coursedir.paths import ROOT
from course.grading.preprocessors.judge import JudgeExecute
from course.grading.preprocessors.output_budget import MAX_OUTPUT_MESSAGE_BYTES
from course.grading.remote.client import QUEUED_MESSAGES

RISE_LIMIT_MIB = 256  # the most a flood may add to the grader's peak memory
CELL_CHARACTERS = 2_000_000  # what a cell keeps (c.LimitOutputSize.max_cell_characters)
NOTE_SLACK = 1_000
# Floods sent while a test calls the student's function: the grader's link drops them unread.
DURING_TESTS = [f"{name}{DURING_A_TEST}" for name in ("stdout", "display_data", "prints_60_mb")]


@pytest.fixture(scope="module")
def peaks():
    """name -> (peak growth in MiB, characters kept, the end of the cell's text) of each run."""
    script = Path(__file__).with_name("output_memory.py")
    names = ["honest", "honest", *(flood.name for flood in FLOODS), *DURING_TESTS]  # 1st: warm-up
    environment = nbgrader_environment()
    environment["PYTHONPATH"] = f"{ROOT}:{ROOT / 'tests'}"
    result = subprocess.run(
        [sys.executable, str(script), *names],
        capture_output=True,
        text=True,
        timeout=900,
        env=environment,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    return {name: (growth, kept, last) for name, growth, kept, last in rows}


@pytest.mark.slow
@pytest.mark.parametrize("flood", FLOODS, ids=lambda flood: flood.name)
def test_a_flood_of_output_adds_little_to_the_graders_peak_memory(peaks, flood):
    honest, _, _ = peaks["honest"]
    growth, kept, last = peaks[flood.name]
    print(f"{flood.name}: peak growth {growth:.0f} MiB ({honest:.0f} MiB honest)")
    assert growth < honest + RISE_LIMIT_MIB, (flood.name, growth, honest)
    assert kept < CELL_CHARACTERS + NOTE_SLACK
    assert "output cut:" in last or "The autograder dropped outputs of this cell" in last, last


@pytest.mark.slow
@pytest.mark.parametrize("name", DURING_TESTS)
def test_a_flood_of_output_during_a_test_adds_little_to_the_graders_peak_memory(peaks, name):
    honest, _, _ = peaks["honest"]
    growth, _, failure = peaks[name]
    print(f"{name}: peak growth {growth:.0f} MiB ({honest:.0f} MiB honest)")
    assert growth < honest + RISE_LIMIT_MIB, (name, growth, honest)
    assert failure == ""  # the test passed: the flood cost nothing but its time


def test_the_executor_reads_a_few_outputs_at_a_time_and_none_over_16_mib():
    execute = JudgeExecute()
    execute.nb = nbformat.v4.new_notebook()
    context = execute.create_kernel_manager().client().context
    assert context.getsockopt(zmq.MAXMSGSIZE) == MAX_OUTPUT_MESSAGE_BYTES == 16 * 2**20
    assert context.getsockopt(zmq.RCVHWM) == QUEUED_MESSAGES
