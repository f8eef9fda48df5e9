"""Findings about each student cell, for the instructor: listed beside the grade, never scored.

Every cell a student wrote runs, as written; its points come only from what the tests compute
(`judge`, outside the kernel). Before it runs, the grader reads each code cell that is not the
instructor's (`utils.review.student_cells`, against the gradebook) with `utils.review.findings`,
under the lab's policy from the instructor's source notebook (`course.lab_policy` in its
metadata): imports outside the lab's modules, calls the lab or the exercise forbids, reaches
into files, processes or the interpreter, and code run from a string or a pickle (`eval`,
`typing.get_type_hints`, `pickle.loads`, ...), whose string literals are read as code too. The
student's lab shows the same findings, in the same words, as each cell runs
(`utils.review.show_findings`) and in Validate.

The findings go to the notebook's metadata; `make autograde` prints them and the formgrader and
feedback pages show them above the submission (`pages.ShowFindings`). They are
best effort: code can hide a call from a reading of its text, and the sandbox, not this
review, is what holds a submission.
"""

import json

from nbgrader.coursedir import CourseDirectory
from nbgrader.preprocessors import NbGraderPreprocessor

from course.coursedir.gradebook_db import locked_cells
from course.coursedir.notebooks import nbgrader_meta, remove_hidden_tests
from utils.bindings import imported_names
from utils.review import LabPolicy, student_findings

FINDINGS_KEY = "course_findings"


def lab_policy(coursedir, assignment, notebook):
    """The policy in the instructor's source notebook of a lab (the default one if it has none)."""
    path = coursedir.format_path(coursedir.source_directory, ".", assignment)
    try:
        with open(f"{path}/{notebook}.ipynb", encoding="utf-8") as source:
            metadata = json.load(source).get("metadata", {})
    except FileNotFoundError:
        metadata = {}
    return LabPolicy.from_metadata(metadata)


def submission_findings(nb, instructor, policy):
    """["<grade_id or cell N>, line L: it ...", ...] for every code cell the student wrote.

    `instructor` maps grade_id -> source of the lab's locked code cells in the gradebook, hidden
    tests included. The student's copy has them without: both are the instructor's, and the
    names the lab's cells import are those the student's kernel runs.
    """
    seen = [remove_hidden_tests(source) for source in instructor.values()]
    locked = [*instructor.values(), *seen]
    listed = []
    for index, _, found in student_findings(nb.cells, locked, policy, imported_names(seen)):
        where = nbgrader_meta(nb.cells[index]).get("grade_id") or f"cell {index + 1}"
        listed.extend(f"{where}, {finding}" for finding in found)
    return listed


class ListFindings(NbGraderPreprocessor):
    """Record the findings about each student cell in the notebook's metadata; change no cell."""

    def preprocess(self, nb, resources):
        """List the findings of every code cell that is not the instructor's."""
        info = resources["nbgrader"]
        coursedir = CourseDirectory(config=self.config)
        policy = lab_policy(coursedir, info["assignment"], info["notebook"])
        nb.metadata[FINDINGS_KEY] = submission_findings(nb, locked_cells(resources), policy)
        for finding in nb.metadata[FINDINGS_KEY]:
            self.log.info("Finding: %s", finding)
        return nb, resources
