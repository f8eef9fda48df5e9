"""What an autograde of a scratch course gave: scores from its gradebook, text of its notebooks."""

from pathlib import Path

from course.coursedir import gradebook_db, notebooks, paths


def autograded_scores(course_root, assignment):
    """Map student -> (autograded score, autograded maximum) from the gradebook."""
    with gradebook_db.open_gradebook(course_root) as gradebook:
        maximum = gradebook.find_assignment(assignment).max_code_score
        return {
            submission.student.id: (submission.code_score, maximum)
            for submission in gradebook.assignment_submissions(assignment)
        }


def cell_scores(course_root, assignment, student):
    """Map grade_id -> score of each graded cell of a student's submission."""
    notebook = Path(paths.lab_filename(assignment)).stem
    with gradebook_db.open_gradebook(course_root) as gradebook:
        submission = gradebook.find_submission_notebook(notebook, assignment, student)
        return {grade.name: grade.score for grade in submission.grades}


def autograded_text(course_root, assignment, student):
    """All text output of a student's autograded notebook, errors included."""
    path = paths.autograded(course_root, student, assignment) / paths.lab_filename(assignment)
    return notebooks.output_text(notebooks.read(path))
