"""A submission's state, decided once for every command and every LMS: graded, to grade, score.

A submission is *graded* when its autograded notebook was executed to the end (a folder that a
stopped autograde left half-written does not count). Its written answers still *to grade* are
the cells nbgrader marks as needing a manual grade; while there are any, its score is
*provisional* (they count as 0). Its *score* is nbgrader's total less any late penalty, which
nbgrader's gradebook keeps apart.
"""

from dataclasses import dataclass
from pathlib import Path

from nbgrader.api import MissingEntry

from course.coursedir import gradebook_db, notebooks, paths


@dataclass(frozen=True)
class SubmissionState:
    """What every command reports of one student's submission of one lab."""

    student: str
    graded: bool
    score: float  # after the late penalty; 0 when not graded
    max_score: float
    late_penalty: float
    to_grade: tuple  # names of the written answers still to grade by hand

    @property
    def provisional(self):
        """True while written answers are still to grade: the score counts them as 0."""
        return bool(self.to_grade)


def autograded_notebook(root, student, assignment):
    """Where a student's autograded notebook of a lab is (when it was autograded)."""
    return paths.autograded(root, student, assignment) / paths.lab_filename(assignment)


def is_graded(root, student, assignment):
    """True when the student's notebook of the lab was autograded to the end."""
    return notebooks.executed(autograded_notebook(root, student, assignment))


def state_of(submission, root=paths.ROOT):
    """The SubmissionState of nbgrader's SubmittedAssignment `submission`."""
    student, assignment = submission.student.id, submission.assignment.name
    graded = is_graded(root, student, assignment)
    to_grade = tuple(
        grade.name
        for notebook in submission.notebooks
        for grade in notebook.grades
        if grade.needs_manual_grade
    )
    return SubmissionState(
        student=student,
        graded=graded,
        score=gradebook_db.score_after_penalty(submission) if graded else 0.0,
        max_score=submission.max_score,
        late_penalty=submission.late_submission_penalty or 0,
        to_grade=to_grade if graded else (),
    )


def find_state(book, assignment, student, root=paths.ROOT):
    """The SubmissionState of a student's submission in the open gradebook `book`, or None."""
    try:
        return state_of(book.find_submission(assignment, student), root)
    except MissingEntry:
        return None


def lab_states(book, assignment, root=paths.ROOT):
    """Every submission of a lab in the open gradebook `book`, as SubmissionStates by student."""
    try:
        submissions = book.assignment_submissions(assignment)
    except MissingEntry:
        return []
    return sorted((state_of(s, root) for s in submissions), key=lambda state: state.student)


def student_label(book, student):
    """A student as commands name them: the id, and the name where the gradebook has one."""
    try:
        record = book.find_student(student)
    except MissingEntry:
        return student
    name = ", ".join(part for part in (record.last_name, record.first_name) if part)
    return f"{student} ({name})" if name else student



def cell_comments(book, assignment, student):
    """The grader's comment on each cell of a submission (cell id -> text), answers included."""
    notebook = Path(paths.lab_filename(assignment)).stem
    try:
        found = book.find_submission_notebook(notebook, assignment, student)
    except MissingEntry:
        return {}
    return {comment.name: comment.comment for comment in found.comments if comment.comment}


def comments_text(comments):
    """The comments of a submission as one text, each under the name of the cell it is about."""
    return "\n\n".join(f"{name}: {text}" for name, text in comments.items())
