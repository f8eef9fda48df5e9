"""Autograding a submission again (the formgrader's Autograde button) keeps what was hand graded.

`make autograde` never grades a graded submission twice; the formgrader's Autograde button does,
with the same nbgrader_config.py, and nbgrader's own SaveAutoGrades would then mark every
hand-graded answer as needing grading again. `KeepManualGrades` keeps a hand grade's status as
the instructor left it, unless the autograder's score for that cell changed (then it asks for a
review).
"""

from nbgrader.preprocessors import SaveAutoGrades


class KeepManualGrades(SaveAutoGrades):
    """Save the autograder's scores; a hand grade keeps its status while the autograder agrees."""

    def _add_score(self, cell, resources):
        """Save one cell's autograder score, keeping a hand grade's status if that score holds."""
        grade = self.gradebook.find_grade(
            cell.metadata["nbgrader"]["grade_id"], self.notebook_id, self.assignment_id,
            self.student_id,
        )  # fmt: skip
        before = grade.auto_score, grade.needs_manual_grade
        super()._add_score(cell, resources)
        if grade.manual_score is not None and grade.auto_score == before[0]:
            grade.needs_manual_grade = before[1]
            self.gradebook.db.commit()
