"""Autograding a submission again (the formgrader's Autograde button) keeps what was hand graded.

`make autograde` never grades a graded submission twice; the formgrader's Autograde button does,
with the same nbgrader_config.py. nbgrader's own steps would then mark every hand-graded answer
as needing grading again, warn that each test cell's checksum "has changed!" when they put its
hidden tests back, and show the instructor every DEBUG line of the run. Here, in their place:

- `QuietCapture`, run first, keeps the log that nbgrader captures for the caller (the
  formgrader's log window, a grading worker's answer) to INFO and above;
- `KeepManualGrades` (nbgrader's SaveAutoGrades) keeps a hand grade's status as the instructor
  left it, unless the autograder's score for that cell changed (then it asks for a review);
- `RestoreTestCells` (nbgrader's OverwriteCells) says which test cells got their hidden tests
  back, as information, and warns only about a cell the student changed.
"""

import io
import logging

from nbgrader.preprocessors import NbGraderPreprocessor, OverwriteCells, SaveAutoGrades

from course.coursedir.notebooks import remove_hidden_tests


class QuietCapture(NbGraderPreprocessor):
    """Keep nbgrader's capture of this run's log to INFO and above, from the start of the run."""

    def preprocess(self, nb, resources):
        """Raise the level of the log's captures; drop the DEBUG lines they already hold."""
        for handler in filter(is_capture, self.log.handlers):
            handler.setLevel(logging.INFO)
            drop_debug_lines(handler.stream)
        return nb, resources


def is_capture(handler):
    """True for a handler that writes a log to a string (nbgrader's `capture_log`)."""
    return isinstance(handler, logging.StreamHandler) and isinstance(handler.stream, io.StringIO)


def drop_debug_lines(stream):
    """Remove the lines nbgrader's capture wrote at DEBUG level ("[DEBUG] ...") from `stream`."""
    kept = [line for line in stream.getvalue().splitlines(keepends=True)
            if not line.startswith("[DEBUG]")]  # fmt: skip
    stream.seek(0)
    stream.truncate()
    stream.writelines(kept)


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


class RestoreTestCells(OverwriteCells):
    """nbgrader's OverwriteCells: hidden tests put back are news, a changed cell a warning."""

    def preprocess_cell(self, cell, resources, index):
        """Restore one cell as the instructor wrote it; remember what the student had in it."""
        self.submitted_source = cell.source
        return super().preprocess_cell(cell, resources, index)

    def report_change(self, name, attr, old, new):
        """Report a locked cell given back its hidden tests as information; any other change."""
        if attr != "checksum":
            super().report_change(name, attr, old, new)
            return
        source = self.gradebook.find_source_cell(name, self.notebook_id, self.assignment_id).source
        if remove_hidden_tests(source).strip() == self.submitted_source.strip():
            self.log.info("Restored the hidden tests of cell %s", name)
        else:
            self.log.warning("Cell %s was changed by the student; restored as released", name)
