"""Test cells put back from the gradebook: hidden tests restored are news, a change a warning."""

import logging
from types import SimpleNamespace

from course.grading.preprocessors.restore_tests import RestoreTestCells

HIDDEN = "check(1)\n### BEGIN HIDDEN TESTS\ncheck(2)\n### END HIDDEN TESTS\n"


class Gradebook:
    """The part of nbgrader's gradebook RestoreTestCells uses: one source cell."""

    def __init__(self, source):
        self.source = source

    def find_source_cell(self, *ids):
        """The one source cell, as the instructor wrote it."""
        return SimpleNamespace(source=self.source)


def restore(submitted):
    """Run RestoreTestCells' report of a changed checksum; the log records it made."""
    step = RestoreTestCells()
    step.gradebook, step.notebook_id, step.assignment_id = Gradebook(HIDDEN), "n", "a"
    step.submitted_source = submitted
    records = []
    step.log.addHandler(handler := logging.Handler())
    handler.emit = records.append
    step.log.setLevel(logging.DEBUG)
    try:
        step.report_change("test_answer", "checksum", "old", "new")
    finally:
        step.log.removeHandler(handler)
    return [(record.levelname, record.getMessage()) for record in records]


def test_putting_hidden_tests_back_is_information():
    assert restore("check(1)\n") == [("INFO", "Restored the hidden tests of cell test_answer")]


def test_a_test_cell_the_student_changed_is_a_warning():
    assert restore("pass\n") == [
        ("WARNING", "Cell test_answer was changed by the student; restored as released")
    ]
