"""Autograding a graded submission again keeps its hand grades."""

from types import SimpleNamespace

import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell

from course.grading.preprocessors.regrade import KeepManualGrades


class Gradebook:
    """The part of nbgrader's gradebook KeepManualGrades uses: one grade, and commits."""

    def __init__(self, grade):
        self.grade = grade
        self.db = SimpleNamespace(commit=lambda: None)

    def find_grade(self, *ids):
        """The one grade."""
        return self.grade


def graded(cell, points=2):
    """`cell` as a graded cell of nbgrader."""
    cell.metadata["nbgrader"] = {"grade": True, "grade_id": "answer", "points": points,
                                 "solution": cell.cell_type == "markdown"}  # fmt: skip
    return cell


def save(cell, grade):
    """Run KeepManualGrades on one cell; the grade after it."""
    step = KeepManualGrades()
    step.gradebook, step.notebook_id, step.assignment_id, step.student_id = Gradebook(grade), *"nas"
    step._add_score(cell, {})
    return grade


def test_a_hand_graded_written_answer_stays_graded():
    grade = SimpleNamespace(auto_score=None, manual_score=1.5, needs_manual_grade=False)
    answer = graded(new_markdown_cell("Because it overflows."))
    assert save(answer, grade).needs_manual_grade is False


def test_a_written_answer_never_graded_still_needs_grading():
    grade = SimpleNamespace(auto_score=None, manual_score=None, needs_manual_grade=True)
    assert save(graded(new_markdown_cell("Because.")), grade).needs_manual_grade is True


@pytest.mark.parametrize(("auto_before", "review"), [(2.0, False), (0.0, True)])
def test_an_overridden_test_score_asks_for_review_only_when_the_autograder_changed(
    auto_before, review
):
    grade = SimpleNamespace(auto_score=auto_before, manual_score=1.0, needs_manual_grade=False)
    cell = graded(new_code_cell("check(1)", execution_count=1))
    assert save(cell, grade).needs_manual_grade is review
